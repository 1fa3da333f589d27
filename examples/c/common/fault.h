/* Returning a fault from an operation's `execute`. */
#ifndef HUSK_EXAMPLE_FAULT_H
#define HUSK_EXAMPLE_FAULT_H

#include <stdbool.h>

#include "buf.h"
#include "operation.h"

/* Sets `err` to the fault `code` with the JSON `body` (taken over) and
 * returns false, the `err` side of `execute`'s result. */
static inline bool fault(operation_fault_t *err, const char *code, buf_t body) {
  operation_string_dup(&err->code, code);
  err->body = (operation_list_u8_t){body.ptr, body.len};
  return false;
}

#endif
