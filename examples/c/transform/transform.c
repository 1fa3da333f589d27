/* `transform`: input {"name": "Ada", "amount": 12.5}, output
 * {"greeting": "hello, Ada", "amount_cents": 1250}. */
#include <math.h>

#include "buf.h"
#include "fault.h"
#include "json.h"
#include "operation.h"

bool exports_operation_execute(operation_job_t *job, operation_list_u8_t *ret, operation_fault_t *err) {
  const char *input = (const char *)job->input.ptr;
  size_t len = job->input.len;
  char *name = json_string(input, len, "name");
  double amount = 0;
  json_number(input, len, "amount", &amount);
  operation_job_free(job);
  buf_t out = {0};
  if (name == NULL) {
    buf_str(&out, "{\"error\":\"missing field `name`\"}");
    return fault(err, "invalid-input", out);
  }
  buf_str(&out, "{\"greeting\":\"hello, ");
  buf_escaped(&out, name);
  buf_str(&out, "\",\"amount_cents\":");
  buf_int(&out, llround(amount * 100)); /* half away from zero */
  buf_str(&out, "}");
  free(name);
  *ret = (operation_list_u8_t){out.ptr, out.len};
  return true;
}
