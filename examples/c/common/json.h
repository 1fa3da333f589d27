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
    if (*c->p == '\\') {
      if (c->p + 1 >= c->end) return false;
      c->p++;
      continue;
    }
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

/* Appends code point `cp` to `o` as UTF-8; returns the new end. */
static inline char *json_utf8(char *o, unsigned cp) {
  if (cp < 0x80) { *o++ = (char)cp; }
  else if (cp < 0x800) { *o++ = (char)(0xC0 | cp >> 6); *o++ = (char)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) {
    *o++ = (char)(0xE0 | cp >> 12); *o++ = (char)(0x80 | (cp >> 6 & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *o++ = (char)(0xF0 | cp >> 18); *o++ = (char)(0x80 | (cp >> 12 & 0x3F));
    *o++ = (char)(0x80 | (cp >> 6 & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
  }
  return o;
}

/* Four hex digits at `s` (at least 4 bytes left), or -1. */
static inline long json_hex4(const char *s) {
  long v = 0;
  for (int i = 0; i < 4; i++) {
    char h = s[i];
    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The string field `key`, unescaped (\uXXXX as UTF-8, surrogate pairs
 * joined), in a new NUL-terminated buffer the caller frees; NULL if absent,
 * not a string, or badly escaped. */
static inline char *json_string(const char *json, size_t len, const char *key) {
  json_cursor v;
  if (!json_field(json, len, key, &v) || v.p >= v.end || *v.p != '"') return NULL;
  const char *start = v.p + 1;
  if (!json_skip_string(&v)) return NULL;
  size_t n = (size_t)(v.p - 1 - start);
  char *out = malloc(n + 1), *o = out;
  if (out == NULL) __builtin_trap();
  for (size_t i = 0; i < n; i++) {
    if (start[i] != '\\') { *o++ = start[i]; continue; }
    char e = start[++i];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e != 0 && simple != NULL) {
      *o++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      continue;
    }
    long cp = e == 'u' && i + 4 < n ? json_hex4(start + i + 1) : -1;
    if (cp < 0) { free(out); return NULL; }
    i += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < n && start[i + 1] == '\\' && start[i + 2] == 'u') {
      long low = json_hex4(start + i + 3);
      if (low >= 0xDC00 && low < 0xE000) { cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00); i += 6; }
    }
    o = json_utf8(o, (unsigned)cp);
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
