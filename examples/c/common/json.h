/* A tiny reader of flat JSON objects, enough for the examples' inputs and
 * fault bodies: top-level string, number and boolean fields. Nested values
 * are skipped. Not a general JSON library. */
#ifndef HUSK_EXAMPLE_JSON_H
#define HUSK_EXAMPLE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p;
  const char *end;
} json_cursor;

static inline void json_ws(json_cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Skips a string starting at its opening quote; returns false if unterminated. */
static inline bool json_skip_string(json_cursor *c) {
  if (c->p >= c->end || *c->p != '"') return false;
  for (c->p++; c->p < c->end; c->p++) {
    if (*c->p == '\\') { c->p++; continue; }
    if (*c->p == '"') { c->p++; return true; }
  }
  return false;
}

/* Skips any value; returns false on malformed input. */
static inline bool json_skip_value(json_cursor *c) {
  json_ws(c);
  if (c->p >= c->end) return false;
  if (*c->p == '"') return json_skip_string(c);
  if (*c->p == '{' || *c->p == '[') {
    int depth = 0;
    while (c->p < c->end) {
      if (*c->p == '"') { if (!json_skip_string(c)) return false; continue; }
      if (*c->p == '{' || *c->p == '[') depth++;
      if (*c->p == '}' || *c->p == ']') depth--;
      c->p++;
      if (depth == 0) return true;
    }
    return false;
  }
  const char *start = c->p;
  while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']' && *c->p != ' ' && *c->p != '\n') c->p++;
  return c->p > start;
}

/* Finds the top-level field `key` of the object in [json, json+len); on
 * success points *value at the start of its value. */
static inline bool json_field(const char *json, size_t len, const char *key, json_cursor *value) {
  json_cursor c = {json, json + len};
  size_t key_len = strlen(key);
  json_ws(&c);
  if (c.p >= c.end || *c.p != '{') return false;
  c.p++;
  for (;;) {
    json_ws(&c);
    if (c.p < c.end && *c.p == '}') return false;
    const char *name = c.p + 1;
    if (!json_skip_string(&c)) return false;
    size_t name_len = (size_t)(c.p - 1 - name);
    json_ws(&c);
    if (c.p >= c.end || *c.p != ':') return false;
    c.p++;
    json_ws(&c);
    if (name_len == key_len && memcmp(name, key, key_len) == 0) {
      *value = c;
      return true;
    }
    if (!json_skip_value(&c)) return false;
    json_ws(&c);
    if (c.p < c.end && *c.p == ',') { c.p++; continue; }
    return false;
  }
}

/* The string field `key` (escapes other than \" and \\ kept as written),
 * copied into a new NUL-terminated buffer the caller frees; NULL if absent
 * or not a string. */
static inline char *json_string(const char *json, size_t len, const char *key) {
  json_cursor v;
  if (!json_field(json, len, key, &v) || v.p >= v.end || *v.p != '"') return NULL;
  const char *start = v.p + 1;
  if (!json_skip_string(&v)) return NULL;
  size_t n = (size_t)(v.p - 1 - start);
  char *out = malloc(n + 1), *o = out;
  for (size_t i = 0; i < n; i++) {
    if (start[i] == '\\' && i + 1 < n && (start[i + 1] == '"' || start[i + 1] == '\\')) i++;
    *o++ = start[i];
  }
  *o = 0;
  return out;
}

/* The number field `key`; false if absent or not a number. */
static inline bool json_number(const char *json, size_t len, const char *key, double *out) {
  json_cursor v;
  if (!json_field(json, len, key, &v)) return false;
  char buf[64];
  size_t n = 0;
  while (v.p < v.end && n < sizeof buf - 1 && strchr("+-0123456789.eE", *v.p)) buf[n++] = *v.p++;
  if (n == 0) return false;
  buf[n] = 0;
  char *end;
  *out = strtod(buf, &end);
  return end == buf + n;
}

#endif
