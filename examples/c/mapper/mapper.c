/* `mapper`: classifies faults by code and by a JSON body field.
 *
 * - `payment.declined`: business error named by the body's "reason";
 * - a body with a string "status": business status;
 * - codes starting with `validation.`: technical, not retryable;
 * - anything else (the host's `husk.*` codes too): technical. */
#include "buf.h"
#include "error_mapper.h"
#include "json.h"

static error_mapper_string_t text(const char *prefix, const uint8_t *rest, size_t rest_len) {
  buf_t b = {0};
  buf_str(&b, prefix);
  buf_bytes(&b, rest, rest_len);
  return (error_mapper_string_t){b.ptr, b.len};
}

static bool code_is(const error_mapper_string_t *code, const char *s) {
  return code->len == strlen(s) && memcmp(code->ptr, s, code->len) == 0;
}

void exports_error_mapper_classify(error_mapper_fault_t *fault, error_mapper_classification_t *ret) {
  const char *body = (const char *)fault->body.ptr;
  size_t body_len = fault->body.len;
  const error_mapper_string_t *code = &fault->code;
  char *status;
  if (code_is(code, "payment.declined")) {
    char *reason = json_string(body, body_len, "reason");
    ret->tag = HUSK_WORKER_TYPES_CLASSIFICATION_BUSINESS_ERROR;
    error_mapper_string_dup(&ret->val.business_error.code, reason ? reason : "declined");
    error_mapper_string_dup(&ret->val.business_error.message, "the payment was declined");
    free(reason);
  } else if ((status = json_string(body, body_len, "status")) != NULL) {
    ret->tag = HUSK_WORKER_TYPES_CLASSIFICATION_BUSINESS_STATUS;
    error_mapper_string_dup(&ret->val.business_status, status);
    free(status);
  } else if (code->len >= 11 && memcmp(code->ptr, "validation.", 11) == 0) {
    ret->tag = HUSK_WORKER_TYPES_CLASSIFICATION_TECHNICAL_NON_RETRYABLE;
    ret->val.technical_non_retryable = text("invalid request: ", code->ptr, code->len);
  } else {
    ret->tag = HUSK_WORKER_TYPES_CLASSIFICATION_TECHNICAL;
    ret->val.technical = text("technical fault ", code->ptr, code->len);
  }
  error_mapper_fault_free(fault);
}
