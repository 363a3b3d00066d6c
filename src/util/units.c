/* units: see units.h. */
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* Splits "12.5 GiB/s" into the number and the multiplier of its prefix; *rest
 * points at what follows the prefix ("B/s"). Returns -1 if no number. */
static int split_number(const char *s, double *value, double *mult, const char **rest) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(v)) return -1;
  while (*end == ' ') end++;
  double m = 1;
  char c = *end;
  int binary = end[0] && (end[1] == 'i' || end[1] == 'I');
  switch (c) {
    case 'k': case 'K': m = binary ? 1024.0 : 1e3; break;
    case 'M': m = binary ? 1048576.0 : 1e6; break;
    case 'G': case 'g': m = binary ? 1073741824.0 : 1e9; break;
    case 'T': case 't': m = binary ? 1099511627776.0 : 1e12; break;
    case 'P': case 'p': m = binary ? 1125899906842624.0 : 1e15; break;
    default: c = 0;
  }
  if (c) end += binary ? 2 : 1;
  *value = v;
  *mult = m;
  *rest = end;
  return 0;
}

static int unit_is(const char *rest, const char *const *words) {
  for (; *words; words++)
    if (strcasecmp(rest, *words) == 0) return 1;
  return 0;
}

static int parse_with(const char *s, const char *const *words, const char *forms, double *out,
                      struct tm_err *err) {
  double v, m;
  const char *rest;
  if (!s || split_number(s, &v, &m, &rest) != 0)
    return tm_errf(err, "'%s' is not a number; expected e.g. %s", s ? s : "", forms);
  while (*rest == ' ') rest++;
  if (!unit_is(rest, words)) {
    /* The letter taken as a prefix may start the unit itself ("75 tok/s"):
     * read again without a prefix. */
    char *end;
    const char *plain = s;
    strtod(plain, &end);
    while (*end == ' ') end++;
    if (!unit_is(end, words))
      return tm_errf(err, "'%s': unknown unit '%s'; expected e.g. %s", s, rest, forms);
    m = 1;
  }
  if (v < 0) return tm_errf(err, "'%s' is negative", s);
  if (!isfinite(v * m)) return tm_errf(err, "'%s' is too large", s); /* 1e308PB */
  *out = v * m;
  return 0;
}

int tm_parse_bytes(const char *s, double *bytes, struct tm_err *err) {
  static const char *const w[] = {"", "B", "byte", "bytes", NULL};
  return parse_with(s, w, "15GB, 15GiB, 358MiB", bytes, err);
}

int tm_parse_bandwidth(const char *s, double *bytes_per_s, struct tm_err *err) {
  static const char *const w[] = {"", "B/s", "Bps", "B", NULL};
  return parse_with(s, w, "273GB/s, 68GiB/s", bytes_per_s, err);
}

int tm_parse_ops_rate(const char *s, double *ops_per_s, struct tm_err *err) {
  static const char *const w[] = {"", "FLOPS", "FLOP/s", "OPS", "OP/s", "FLOPs", NULL};
  return parse_with(s, w, "14TFLOPS, 900GOPS", ops_per_s, err);
}

int tm_parse_tokens(const char *s, double *tokens, struct tm_err *err) {
  static const char *const w[] = {"", "tok", "tokens", "tok/s", "t/s", "tokens/s", NULL};
  return parse_with(s, w, "1M, 250k tok/s, 75 tok/s", tokens, err);
}

int tm_parse_u32(const char *s, const char *what, uint32_t *out, struct tm_err *err) {
  char *end;
  errno = 0;
  if (!s || !*s || *s == '-' || *s == '+')
    return tm_errf(err, "%s: '%s' is not a positive integer", what, s ? s : "");
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno == ERANGE || v == 0 || v > 0xffffffffull)
    return tm_errf(err, "%s: '%s' is not a positive integer", what, s);
  *out = (uint32_t)v;
  return 0;
}

int tm_list_check(const char *s, const char *what, struct tm_err *err) {
  if (!s || !*s) return tm_errf(err, "%s: empty list", what);
  for (const char *p = s;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    bool blank = true;
    for (size_t i = 0; i < len; i++) blank &= p[i] == ' ';
    if (blank) return tm_errf(err, "%s: '%s' has an empty element", what, s);
    if (!comma) return 0;
    p = comma + 1;
  }
}

int tm_parse_u32_list(const char *s, const char *what, uint32_t *out, size_t max, size_t *n,
                      struct tm_err *err) {
  char buf[512];
  if (tm_list_check(s, what, err) != 0) return -1;
  if (strlen(s) >= sizeof buf) return tm_errf(err, "%s: list too long", what);
  strcpy(buf, s);
  size_t k = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (k == max) return tm_errf(err, "%s: at most %zu values", what, max);
    if (tm_parse_u32(tok, what, &out[k], err) != 0) return -1;
    k++;
  }
  if (k == 0) return tm_errf(err, "%s: empty list", what);
  *n = k;
  return 0;
}

int tm_parse_count(const char *s, const char *what, bool allow_zero, double max, double *out,
                   struct tm_err *err) {
  double v;
  if (tm_parse_tokens(s, &v, err) != 0 || v != floor(v) || (!allow_zero && v < 1))
    return tm_errf(err, "%s: '%s' is not a %s whole number", what, s ? s : "",
                   allow_zero ? "non-negative" : "positive");
  if (!(v <= max)) {
    char mx[32];
    return tm_errf(err, "%s: '%s' is above the limit of %s", what, s,
                   tm_fmt_count(max, mx, sizeof mx));
  }
  *out = v;
  return 0;
}

/* A limit as --help writes it: "1e12", "1e-9" (not printf's "1e+12" /
 * "1e-09"), else %g ("36525"). */
static const char *fmt_limit(double v, char *buf, size_t n) {
  int e = (int)floor(log10(v));
  if ((v >= 1e6 || v < 1e-3) && v == pow(10, e)) snprintf(buf, n, "1e%d", e);
  else snprintf(buf, n, "%g", v);
  return buf;
}

/* strtod over all of s, to a finite value: 0, or -1 (no message). */
static int read_plain(const char *s, double *v) {
  char *end;
  if (!s) return -1;
  *v = strtod(s, &end);
  return end != s && !*end && isfinite(*v) ? 0 : -1;
}

int tm_parse_number(const char *s, const char *what, bool whole, double min, double max,
                    double *out, struct tm_err *err) {
  double v;
  char lim[32];
  if (read_plain(s, &v) != 0 || (whole && v != floor(v)) || v < min)
    return tm_errf(err, "%s: '%s' is not a %snumber >= %g", what, s ? s : "",
                   whole ? "whole " : "", min);
  if (v > max)
    return tm_errf(err, "%s: '%s' is above the limit of %s", what, s,
                   fmt_limit(max, lim, sizeof lim));
  *out = v;
  return 0;
}

int tm_parse_above_zero(const char *s, const char *what, double lowest, double max, double *out,
                        struct tm_err *err) {
  double v;
  char lim[32];
  if (read_plain(s, &v) != 0 || !(v > 0))
    return tm_errf(err, "%s: '%s' is not a number above 0", what, s ? s : "");
  if (v < lowest)
    return tm_errf(err, "%s: '%s' is below the limit of %s", what, s,
                   fmt_limit(lowest, lim, sizeof lim));
  if (v > max)
    return tm_errf(err, "%s: '%s' is above the limit of %s", what, s,
                   fmt_limit(max, lim, sizeof lim));
  *out = v;
  return 0;
}

int tm_parse_positive_in(const char *s, const char *what, double min, double max,
                         const char *range, double *out, struct tm_err *err) {
  double v;
  errno = 0;
  if (read_plain(s, &v) != 0 || errno || !(v > 0))
    return tm_errf(err, "%s: '%s' is not a positive number", what, s ? s : "");
  if (v < min || v > max) return tm_errf(err, "%s: '%s' is outside %s", what, s, range);
  *out = v;
  return 0;
}

static char *fmt_scaled(double v, const char *const *units, double step, const char *suffix,
                        char *buf, size_t n) {
  int i = 0;
  while (fabs(v) >= step && units[i + 1]) {
    v /= step;
    i++;
  }
  int decimals = fabs(v) >= 100 ? 0 : fabs(v) >= 10 ? 1 : 2;
  if (v == floor(v)) decimals = 0;
  snprintf(buf, n, "%.*f %s%s", decimals, v, units[i], suffix);
  return buf;
}

char *tm_fmt_bytes(double bytes, char *buf, size_t n) {
  static const char *const u[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", NULL};
  return fmt_scaled(bytes, u, 1024, "B", buf, n);
}

char *tm_fmt_bytes_si(double bytes, char *buf, size_t n) {
  static const char *const u[] = {"", "k", "M", "G", "T", "P", NULL};
  return fmt_scaled(bytes, u, 1000, "B", buf, n);
}

char *tm_fmt_bandwidth(double bytes_per_s, char *buf, size_t n) {
  static const char *const u[] = {"", "k", "M", "G", "T", "P", NULL};
  return fmt_scaled(bytes_per_s, u, 1000, "B/s", buf, n);
}

char *tm_fmt_ops(double ops_per_s, const char *unit, char *buf, size_t n) {
  static const char *const u[] = {"", "k", "M", "G", "T", "P", NULL};
  return fmt_scaled(ops_per_s, u, 1000, unit, buf, n);
}

char *tm_fmt_count(double count, char *buf, size_t n) {
  static const char *const u[] = {"", "k", "M", "B", "T", NULL};
  fmt_scaled(count, u, 1000, "", buf, n);
  /* "596 M" -> "596M": counts read better without the space. */
  char *sp = strchr(buf, ' ');
  if (sp) memmove(sp, sp + 1, strlen(sp));
  return buf;
}

char *tm_fmt_rate(double tok_s, char *buf, size_t n) {
  if (tok_s > 0 && tok_s < 0.01) { /* 2.17e-05 tok/s is not "0.00" */
    snprintf(buf, n, "%.3g", tok_s);
    return buf;
  }
  int decimals = tok_s >= 100 ? 0 : tok_s >= 10 ? 1 : 2;
  snprintf(buf, n, "%.*f", decimals, tok_s);
  return buf;
}

char *tm_fmt_ms_fit(double ms, char *buf, size_t n) {
  double a = fabs(ms);
  int decimals = 1;
  if (isfinite(a) && a > 0 && a < 1) {
    decimals = 2 - (int)floor(log10(a)); /* 0.0612 -> 4 */
    if (decimals > 12) decimals = 12;
    /* rounding may carry to the next power of ten (0.09996 -> "0.100") */
    if (fabs(ms) * pow(10, decimals) >= 999.5 && decimals > 1) decimals--;
  }
  snprintf(buf, n, "%.*f", decimals, ms);
  return buf;
}

/* Three significant digits: 350, 60.8, 9.50. */
static void fmt_sig3(double v, const char *unit, char *buf, size_t n) {
  int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  snprintf(buf, n, "%.*f %s", decimals, v, unit);
}

char *tm_fmt_duration(double seconds, char *buf, size_t n) {
  if (n == 0) return buf;
  buf[0] = 0;
  if (!isfinite(seconds) || seconds < 0) return buf;
  double s = seconds;
  if (s == 0) {
    snprintf(buf, n, "0 s");
  } else if (s < 999.5e-9) {
    fmt_sig3(s * 1e9, "ns", buf, n);
  } else if (s < 999.5e-6) {
    fmt_sig3(s * 1e6, "\xc2\xb5s", buf, n);
  } else if (s < 0.9995) {
    fmt_sig3(s * 1e3, "ms", buf, n);
  } else if (s < 99.95) {
    fmt_sig3(s, "s", buf, n);
  } else if (s < 3599.5) {
    long long t = llround(s); /* whole seconds */
    snprintf(buf, n, "%lldm %llds", t / 60, t % 60);
  } else if (s < 86400.0 - 30.0) {
    long long t = llround(s / 60); /* whole minutes */
    snprintf(buf, n, "%lldh %lldm", t / 60, t % 60);
  } else if (s < 1000.0 * 86400.0) {
    long long t = llround(s / 3600); /* whole hours */
    snprintf(buf, n, "%lldd %lldh", t / 24, t % 24);
  } else {
    fmt_sig3(s / (365.25 * 86400.0), "years", buf, n);
    /* beyond 999 years three digits are still whole years */
  }
  return buf;
}

int tm_check_distinct(const uint32_t *v, size_t n, const char *what, struct tm_err *err) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (v[i] == v[j]) return tm_errf(err, "%s: %u is listed twice", what, v[i]);
  return 0;
}

int tm_parse_u32_set0(const char *s, const char *what, uint32_t max_value, uint32_t *out,
                      size_t cap, size_t *n, struct tm_err *err) {
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    if (*p < '0' || *p > '9')
      return tm_errf(err, "%s: '%s' is not a list of numbers, e.g. 128,512", what, s);
    unsigned long v = strtoul(p, &end, 10);
    if (v > max_value) return tm_errf(err, "%s: %lu is too large (at most %u)", what, v, max_value);
    if (*n == cap) return tm_errf(err, "%s: at most %zu values", what, cap);
    out[(*n)++] = (uint32_t)v;
    if (*end == 0) return tm_check_distinct(out, *n, what, err);
    if (*end != ',') return tm_errf(err, "%s: '%s' is not a list of numbers, e.g. 128,512", what, s);
    p = end + 1;
  }
}

int tm_parse_u64_list(const char *s, const char *what, uint64_t max_value, uint64_t *out,
                      size_t cap, size_t *n, struct tm_err *err) {
  *n = 0;
  if (tm_list_check(s, what, err) != 0) return -1;
  for (const char *p = s; *p;) {
    char *end;
    if (*n == cap || *p < '0' || *p > '9') return tm_errf(err, "%s: '%s' is not a list", what, s);
    unsigned long long v = strtoull(p, &end, 10);
    if ((*end && *end != ',') || v > max_value)
      return tm_errf(err, "%s: '%s' is not a list of 0..%llu", what, s,
                     (unsigned long long)max_value);
    out[(*n)++] = v;
    p = *end ? end + 1 : end;
  }
  return *n ? 0 : tm_errf(err, "%s: empty list", what);
}
