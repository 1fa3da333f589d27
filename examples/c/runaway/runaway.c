/* `runaway`: loops forever. The host's deadline kills it (`husk.timeout`). */
#include "operation.h"

bool exports_operation_execute(operation_job_t *job, operation_list_u8_t *ret, operation_fault_t *err) {
  (void)ret;
  (void)err;
  operation_job_free(job);
  volatile uint64_t n = 0;
  for (;;) n++;
}
