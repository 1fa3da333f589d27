/* `{{name}}`: a husk operation. Input {"name": "Ada"}, output
 * {"greeting": "hello, Ada"}; input without a "name" is the fault
 * `invalid-input`. No stdio: it would import WASI preview 1, which a husk
 * C guest does without. */
#include <stdlib.h>
#include <string.h>

#include "operation.h"

static void append(operation_list_u8_t *out, const void *bytes, size_t n) {
  out->ptr = realloc(out->ptr, out->len + n);
  if (out->ptr == NULL) __builtin_trap();
  memcpy(out->ptr + out->len, bytes, n);
  out->len += n;
}

/* The string value of the field "name" in a flat JSON object, without
 * escapes (a name with a backslash is refused), or NULL. */
static const char *find_name(const char *json, size_t len, size_t *name_len) {
  const char *key = "\"name\"";
  for (size_t i = 0; i + 6 <= len; i++) {
    if (memcmp(json + i, key, 6) != 0) continue;
    size_t j = i + 6;
    while (j < len && json[j] == ' ') j++;
    if (j >= len || json[j] != ':') continue; /* "name" was a value, not a key */
    j++;
    while (j < len && json[j] == ' ') j++;
    if (j >= len || json[j] != '"') return NULL;
    const char *start = json + j + 1;
    const char *end = memchr(start, '"', len - (size_t)(start - json));
    if (end == NULL || memchr(start, '\\', (size_t)(end - start)) != NULL) return NULL;
    *name_len = (size_t)(end - start);
    return start;
  }
  return NULL;
}

bool exports_operation_execute(operation_job_t *job, operation_list_u8_t *ret, operation_fault_t *err) {
  size_t name_len = 0;
  const char *name = find_name((const char *)job->input.ptr, job->input.len, &name_len);
  operation_list_u8_t out = {0};
  if (name == NULL) {
    operation_job_free(job);
    operation_string_dup(&err->code, "invalid-input");
    const char *body = "{\"error\":\"missing field `name`\"}";
    append(&out, body, strlen(body));
    err->body = out;
    return false;
  }
  append(&out, "{\"greeting\":\"hello, ", 20);
  append(&out, name, name_len);
  append(&out, "\"}", 2);
  operation_string_t message = {(uint8_t *)"greeting", 8};
  husk_worker_log_log(HUSK_WORKER_LOG_LEVEL_INFO, &message);
  operation_job_free(job);
  *ret = out;
  return true;
}
