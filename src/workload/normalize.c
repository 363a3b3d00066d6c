/* normalize: see normalize.h. */
#include "workload/normalize.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static bool is_space(utf8proc_int32_t c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return true;
  const utf8proc_category_t k = utf8proc_category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

static bool is_punct_or_symbol(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
  case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
  case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
  case UTF8PROC_CATEGORY_PO: case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC:
  case UTF8PROC_CATEGORY_SK: case UTF8PROC_CATEGORY_SO:
    return true;
  default:
    return false;
  }
}

/* Every run of whitespace in s (valid UTF-8) becomes one space; leading and
 * trailing whitespace, and with strip_punct leading and trailing punctuation
 * and symbols, removed. In place. */
static void collapse(char *s, bool strip_punct) {
  const utf8proc_uint8_t *in = (const utf8proc_uint8_t *)s;
  size_t n = strlen(s), r = 0, w = 0;
  bool pending_space = false;
  while (r < n) {
    utf8proc_int32_t c;
    utf8proc_ssize_t len = utf8proc_iterate(in + r, (utf8proc_ssize_t)(n - r), &c);
    if (len <= 0) break; /* cannot happen: s came out of utf8proc */
    if (is_space(c)) {
      pending_space = w > 0;
    } else {
      if (pending_space) s[w++] = ' ';
      pending_space = false;
      memmove(s + w, s + r, (size_t)len);
      w += (size_t)len;
    }
    r += (size_t)len;
  }
  s[w] = '\0';
  if (!strip_punct) return;
  /* leading: skip punctuation, symbols and the spaces between them */
  size_t start = 0;
  for (;;) {
    utf8proc_int32_t c;
    utf8proc_ssize_t len = utf8proc_iterate((const utf8proc_uint8_t *)s + start,
                                            (utf8proc_ssize_t)(w - start), &c);
    if (len <= 0 || !(is_punct_or_symbol(c) || c == ' ')) break;
    start += (size_t)len;
  }
  /* trailing: the last run of punctuation, symbols and spaces */
  size_t end = start, pos = start;
  while (pos < w) {
    utf8proc_int32_t c;
    utf8proc_ssize_t len = utf8proc_iterate((const utf8proc_uint8_t *)s + pos,
                                            (utf8proc_ssize_t)(w - pos), &c);
    if (len <= 0) break;
    pos += (size_t)len;
    if (!(is_punct_or_symbol(c) || c == ' ')) end = pos;
  }
  memmove(s, s + start, end - start);
  s[end - start] = '\0';
}

static char *map(const char *s, utf8proc_option_t opt) {
  if (!s) return NULL;
  utf8proc_uint8_t *out = NULL;
  utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, 0, &out, opt | UTF8PROC_NULLTERM);
  if (n < 0) return NULL;
  return (char *)out;
}

static char *normalize(const char *s, bool strip_punct) {
  char *d = map(s, UTF8PROC_STABLE | UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE | UTF8PROC_CASEFOLD |
                       UTF8PROC_STRIPMARK | UTF8PROC_IGNORE | UTF8PROC_STRIPCC | UTF8PROC_LUMP);
  if (!d) return NULL;
  collapse(d, strip_punct);
  char *c = map(d, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  free(d);
  return c;
}

char *answer_normalize(const char *s) { return normalize(s, false); }
char *answer_normalize_word(const char *s) { return normalize(s, true); }
char *answer_nfc(const char *s) { return map(s, UTF8PROC_STABLE | UTF8PROC_COMPOSE); }
