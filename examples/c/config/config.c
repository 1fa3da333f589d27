/* `config`: input {"key": "endpoint"}, output {"key": "endpoint", "value":
 * "..."} (null when the topic has no such key), read through
 * wasi:config/store (the world `config-operation` of examples/wit). */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config_operation.h"
#include "json.h"

static bool fail(config_operation_fault_t *err, const char *code, const char *message) {
  buf_t body = {0};
  buf_str(&body, "{\"error\":\"");
  buf_escaped(&body, message);
  buf_str(&body, "\"}");
  config_operation_string_dup(&err->code, code);
  err->body = (config_operation_list_u8_t){body.ptr, body.len};
  return false;
}

bool exports_config_operation_execute(config_operation_job_t *job, config_operation_list_u8_t *ret,
                                      config_operation_fault_t *err) {
  char *key = json_string((const char *)job->input.ptr, job->input.len, "key");
  config_operation_job_free(job);
  if (key == NULL) {
    return fail(err, "invalid-input", "key must be a string");
  }
  config_operation_string_t wit_key;
  config_operation_string_dup(&wit_key, key);
  config_operation_option_string_t value;
  wasi_config_store_error_t store_error;
  bool ok = wasi_config_store_get(&wit_key, &value, &store_error);
  config_operation_string_free(&wit_key);
  if (!ok) {
    wasi_config_store_error_free(&store_error);
    free(key);
    return fail(err, "config.unavailable", "the config store failed");
  }
  buf_t out = {0};
  buf_str(&out, "{\"key\":\"");
  buf_escaped(&out, key);
  buf_str(&out, "\",\"value\":");
  if (value.is_some) {
    char *text = malloc(value.val.len + 1);
    if (text == NULL) __builtin_trap();
    memcpy(text, value.val.ptr, value.val.len);
    text[value.val.len] = '\0';
    buf_str(&out, "\"");
    buf_escaped(&out, text);
    buf_str(&out, "\"");
    free(text);
    config_operation_option_string_free(&value);
  } else {
    buf_str(&out, "null");
  }
  buf_str(&out, "}");
  free(key);
  *ret = (config_operation_list_u8_t){out.ptr, out.len};
  return true;
}
