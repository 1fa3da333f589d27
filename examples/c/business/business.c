/* `business`: failures that are business outcomes, for the mapper to name.
 *
 * Input {"account": "acme", "amount": 120, "balance": 100}:
 * - amount > balance: fault `payment.declined`, body {"reason": "insufficient-funds", ...};
 * - account "frozen": fault `account.frozen`, body {"status": "frozen"};
 * - otherwise {"charged": amount, "balance": balance - amount}. */
#include "buf.h"
#include "fault.h"
#include "json.h"
#include "operation.h"

bool exports_operation_execute(operation_job_t *job, operation_list_u8_t *ret, operation_fault_t *err) {
  const char *input = (const char *)job->input.ptr;
  size_t len = job->input.len;
  char *account = json_string(input, len, "account");
  double amount = 0, balance = 0;
  bool valid = account != NULL && json_number(input, len, "amount", &amount) &&
               json_number(input, len, "balance", &balance);
  bool frozen = account != NULL && strcmp(account, "frozen") == 0;
  free(account);
  operation_job_free(job);
  buf_t out = {0};
  if (!valid) {
    buf_str(&out, "{\"error\":\"expected account, amount and balance\"}");
    return fault(err, "invalid-input", out);
  }
  if (frozen) {
    buf_str(&out, "{\"status\":\"frozen\"}");
    return fault(err, "account.frozen", out);
  }
  if (amount > balance) {
    buf_str(&out, "{\"reason\":\"insufficient-funds\",\"amount\":");
    buf_int(&out, (long long)amount);
    buf_str(&out, ",\"balance\":");
    buf_int(&out, (long long)balance);
    buf_str(&out, "}");
    return fault(err, "payment.declined", out);
  }
  buf_str(&out, "{\"charged\":");
  buf_int(&out, (long long)amount);
  buf_str(&out, ",\"balance\":");
  buf_int(&out, (long long)(balance - amount));
  buf_str(&out, "}");
  *ret = (operation_list_u8_t){out.ptr, out.len};
  return true;
}
