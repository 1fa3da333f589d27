/* A growing byte buffer for building JSON output without stdio (stdio would
 * make the module import WASI preview 1, which a husk C guest does without). */
#ifndef HUSK_EXAMPLE_BUF_H
#define HUSK_EXAMPLE_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t *ptr;
  size_t len;
  size_t cap;
} buf_t;

static inline void buf_bytes(buf_t *b, const void *bytes, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 16;
    b->ptr = realloc(b->ptr, b->cap);
    if (b->ptr == NULL) __builtin_trap();
  }
  memcpy(b->ptr + b->len, bytes, n);
  b->len += n;
}

static inline void buf_str(buf_t *b, const char *s) { buf_bytes(b, s, strlen(s)); }

/* Appends `s` as the inside of a JSON string: quotes, backslashes and
 * control characters escaped. */
static inline void buf_escaped(buf_t *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20) {
      char u[7] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15], 0};
      buf_bytes(b, u, 6);
      continue;
    }
    if (c == '"' || c == '\\') buf_bytes(b, "\\", 1);
    buf_bytes(b, s, 1);
  }
}

static inline void buf_int(buf_t *b, long long v) {
  char digits[24];
  int n = 0;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do { digits[n++] = (char)('0' + u % 10); u /= 10; } while (u);
  if (v < 0) buf_bytes(b, "-", 1);
  while (n) buf_bytes(b, &digits[--n], 1);
}

#endif
