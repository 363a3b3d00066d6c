/* redact: see redact.h. */
#include "util/redact.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct obuf {
  char *p;
  size_t len, cap;
  bool oom;
};

static void put(struct obuf *o, const char *s, size_t n) {
  if (o->oom) return;
  if (o->len + n + 1 > o->cap) {
    size_t c = o->cap ? o->cap : 64;
    while (c < o->len + n + 1) c *= 2;
    char *np = realloc(o->p, c);
    if (!np) {
      o->oom = true;
      return;
    }
    o->p = np;
    o->cap = c;
  }
  memcpy(o->p + o->len, s, n);
  o->len += n;
  o->p[o->len] = 0;
}

static void mark(struct obuf *o) { put(o, TM_REDACT_MARK, sizeof TM_REDACT_MARK - 1); }

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) need = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) need = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) need = 4, min = 0x10000;
  else return 0;
  if (n < need) return 0;
  uint32_t cp = c & (0xFF >> (need + 1));
  for (size_t k = 1; k < need; k++) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return need;
}

bool tm_utf8_valid(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t k = utf8_seq(u + i, len - i);
    if (!k) return false;
    i += k;
  }
  return true;
}

/* Pass 1: the key, its fragments, and bytes that are not UTF-8. */
static void pass_key(struct obuf *o, const char *t, size_t len, const char *key) {
  size_t kl = key ? strlen(key) : 0;
  for (size_t i = 0; i < len;) {
    if (kl) {
      /* The longest run starting at t[i] that is also a run of the key. */
      size_t best = 0, best_j = 0;
      for (size_t j = 0; j < kl; j++) {
        if (key[j] != t[i]) continue;
        size_t l = 0;
        while (i + l < len && j + l < kl && t[i + l] == key[j + l]) l++;
        if (l > best || (l == best && j == 0)) best = l, best_j = j;
      }
      bool whole = best == kl;
      bool fragment = kl >= TM_REDACT_FRAGMENT_MIN && best >= TM_REDACT_FRAGMENT_MIN;
      bool cut = best_j == 0 && best >= TM_REDACT_CUT_MIN && i + best == len;
      if (best && (whole || fragment || cut)) {
        mark(o);
        i += best;
        continue;
      }
    }
    size_t k = utf8_seq((const unsigned char *)t + i, len - i);
    if (k) put(o, t + i, k), i += k;
    else put(o, "?", 1), i++;
  }
}

/* Pass 2: "scheme://user:password@host" -> "scheme://host". */
static void pass_userinfo(struct obuf *o, const char *t, size_t len) {
  for (size_t i = 0; i < len;) {
    if (i + 3 <= len && memcmp(t + i, "://", 3) == 0) {
      put(o, "://", 3);
      i += 3;
      size_t e = i;
      size_t at = SIZE_MAX;
      while (e < len && !strchr("/?# \t\"'<>", t[e])) {
        if (t[e] == '@') at = e;
        e++;
      }
      if (at != SIZE_MAX) i = at + 1;
      continue;
    }
    put(o, t + i, 1);
    i++;
  }
}

/* Length of the secret-looking word at s: key characters (letters, digits,
 * "-_.~+/="), without a trailing '.' (the end of a sentence, not of a key). */
static size_t word_len(const char *s, size_t n) {
  size_t w = 0;
  while (w < n && (isalnum((unsigned char)s[w]) || strchr("-_.~+/=", s[w]))) w++;
  while (w && s[w - 1] == '.') w--;
  return w;
}

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '-' || c == '_'; }

/* Pass 3: Bearer <x>, sk-<long>, key=<x>. */
static void pass_generic(struct obuf *o, const char *t, size_t len) {
  for (size_t i = 0; i < len;) {
    size_t keep = 0;
    bool secret = false;
    bool at_word_start = i == 0 || !is_word_char(t[i - 1]);
    if (len - i >= 7 && strncasecmp(t + i, "bearer ", 7) == 0) {
      keep = 7;
      secret = true;
    } else if (at_word_start && len - i >= 3 && strncmp(t + i, "sk-", 3) == 0 &&
               word_len(t + i, len - i) >= 12) {
      secret = true; /* OpenAI-style keys are long; "sk-ok" in a message is not one */
    } else if (len - i >= 4 && strncasecmp(t + i, "key=", 4) == 0) {
      keep = 4;
      secret = true;
    }
    size_t w = secret ? word_len(t + i + keep, len - i - keep) : 0;
    if (w > 0) {
      put(o, t + i, keep);
      mark(o);
      i += keep + w;
      continue;
    }
    put(o, t + i, 1);
    i++;
  }
}

char *tm_redact_dup(const char *text, size_t len, const char *key, size_t *out_len) {
  if (!text) text = "", len = 0;
  struct obuf a = {0}, b = {0}, c = {0};
  put(&a, "", 0);
  pass_key(&a, text, len, key && *key ? key : NULL);
  if (!a.oom) {
    put(&b, "", 0);
    pass_userinfo(&b, a.p, a.len);
  }
  if (!a.oom && !b.oom) {
    put(&c, "", 0);
    pass_generic(&c, b.p, b.len);
  }
  bool oom = a.oom || b.oom || c.oom;
  free(a.p);
  free(b.p);
  if (oom) {
    free(c.p);
    return NULL;
  }
  if (out_len) *out_len = c.len;
  return c.p;
}

void tm_redact(char *msg, size_t cap, const char *key) {
  if (!msg || !cap) return;
  size_t n = 0;
  char *s = tm_redact_dup(msg, strnlen(msg, cap), key, &n);
  if (!s) {
    msg[0] = 0;
    return;
  }
  if (n >= cap) {
    n = cap - 1;
    /* do not leave half of a UTF-8 sequence at the cut */
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  }
  memcpy(msg, s, n);
  msg[n] = 0;
  free(s);
}

void tm_clean_control(char *s) {
  for (; s && *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f) *s = '?';
}
