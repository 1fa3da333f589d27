/* `flaky`: a technical fault until a given attempt, then success.
 *
 * Input {"succeed_on_attempt": 3}: attempts 1 and 2 fail with
 * `flaky.unavailable`, attempt 3 and later return {"attempt": N}. */
#include "buf.h"
#include "fault.h"
#include "json.h"
#include "operation.h"

bool exports_operation_execute(operation_job_t *job, operation_list_u8_t *ret, operation_fault_t *err) {
  double succeed_on = 0;
  bool valid = json_number((const char *)job->input.ptr, job->input.len, "succeed_on_attempt", &succeed_on) &&
               succeed_on >= 0 && succeed_on <= 4294967295.0 && succeed_on == (double)(uint32_t)succeed_on;
  uint32_t attempt = job->attempt;
  buf_t out = {0};
  if (!valid) {
    operation_job_free(job);
    buf_str(&out, "{\"error\":\"succeed_on_attempt must be a whole number\"}");
    return fault(err, "invalid-input", out);
  }
  if (attempt < (uint32_t)succeed_on) {
    buf_str(&out, "attempt ");
    buf_int(&out, attempt);
    buf_str(&out, " of job ");
    buf_bytes(&out, job->id.ptr, job->id.len);
    buf_str(&out, ": dependency unavailable");
    operation_string_t message = {out.ptr, out.len};
    husk_worker_log_log(HUSK_WORKER_LOG_LEVEL_WARN, &message);
    out.len = 0;
    buf_str(&out, "{\"attempt\":");
    buf_int(&out, attempt);
    buf_str(&out, ",\"succeed_on_attempt\":");
    buf_int(&out, (long long)succeed_on);
    buf_str(&out, "}");
    operation_job_free(job);
    return fault(err, "flaky.unavailable", out);
  }
  operation_job_free(job);
  buf_str(&out, "{\"attempt\":");
  buf_int(&out, attempt);
  buf_str(&out, "}");
  *ret = (operation_list_u8_t){out.ptr, out.len};
  return true;
}
