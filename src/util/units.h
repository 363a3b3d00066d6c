/* units: reading and printing quantities with units, as users type and read them.
 * Parsing accepts an optional space between number and unit, SI prefixes
 * (k, M, G, T, P = powers of 1000) and binary ones (Ki, Mi, Gi, Ti = powers of
 * 1024), case-insensitive for the unit word. A bare number is taken in the base
 * unit (bytes, B/s, op/s, tokens) by every parser alike: "100" as a bandwidth
 * is 100 B/s. A value that overflows a double ("1e308PB") and everything else
 * is an error naming the text and the accepted forms. */
#ifndef TM_UNITS_H
#define TM_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* "15GB", "15 GiB", "358MiB", "1e9" -> bytes. */
int tm_parse_bytes(const char *s, double *bytes, struct tm_err *err);
/* "273GB/s", "273 GB/s", "68.2GiB/s", "3e10" -> bytes per second. */
int tm_parse_bandwidth(const char *s, double *bytes_per_s, struct tm_err *err);
/* "14TFLOPS", "14 TFLOP/s", "900GOPS", "0.9 TOPS", "1.4e13" -> operations per
 * second. */
int tm_parse_ops_rate(const char *s, double *ops_per_s, struct tm_err *err);
/* "1M", "1M tok/s", "250k", "75 tok/s" -> tokens (per second). */
int tm_parse_tokens(const char *s, double *tokens, struct tm_err *err);
/* A positive integer that fits in 32 bits; err names `what`. */
int tm_parse_u32(const char *s, const char *what, uint32_t *out, struct tm_err *err);
/* 0 when s is a comma-separated list without an empty element; -1 with err
 * ("what: '1,,2' has an empty element") for "", ",1", "1,", "1,,2" or
 * "1, ,2" (an element of spaces only). */
int tm_list_check(const char *s, const char *what, struct tm_err *err);
/* "1,2,4" -> up to max values, each a positive integer (tm_list_check first). */
int tm_parse_u32_list(const char *s, const char *what, uint32_t *out, size_t max, size_t *n,
                      struct tm_err *err);

/* Flag values in a range. Each reads all of s, sets *out only on success and
 * fails with a message that starts "what: 's' ", the way a command names the
 * flag in its usage error. */

/* A whole count in tm_parse_tokens' forms ("250k", "1M"), from 0 (allow_zero)
 * or 1 up to max: "what: '1.5' is not a positive whole number" (or
 * "non-negative"), "what: '2T' is above the limit of 1T" (max as
 * tm_fmt_count prints it). */
int tm_parse_count(const char *s, const char *what, bool allow_zero, double max, double *out,
                   struct tm_err *err);
/* A plain number (strtod's forms, no unit), finite, whole if asked, in
 * [min, max]: "what: 'x' is not a whole number >= 1" ("whole " only when
 * whole; min as %g), "what: '2e12' is above the limit of 1e12" (a limit that
 * is a power of ten from 1e6 up or below 0.001 as "1e12" / "1e-9", any other
 * as %g: "36525"). */
int tm_parse_number(const char *s, const char *what, bool whole, double min, double max,
                    double *out, struct tm_err *err);
/* A plain number above 0, where lowest (e.g. 1e-9) only guards the arithmetic:
 * "what: '0' is not a number above 0", "what: '1e-12' is below the limit of
 * 1e-9", "what: '1e13' is above the limit of 1e12" (limits printed as by
 * tm_parse_number). */
int tm_parse_above_zero(const char *s, const char *what, double lowest, double max, double *out,
                        struct tm_err *err);
/* A plain number above 0 in [min, max] (strtod's forms; an underflow such as
 * 1e-400 is refused too): "what: 'x' is not a positive number", "what: '0.5'
 * is outside RANGE", range being how --help states it ("1 to 1e12"). */
int tm_parse_positive_in(const char *s, const char *what, double min, double max,
                         const char *range, double *out, struct tm_err *err);

/* Printing. Each writes into buf (n bytes) and returns buf. */
char *tm_fmt_bytes(double bytes, char *buf, size_t n);          /* "358.4 MiB" */
char *tm_fmt_bytes_si(double bytes, char *buf, size_t n);       /* "375.6 MB" */
char *tm_fmt_bandwidth(double bytes_per_s, char *buf, size_t n); /* "28.6 GB/s" */
char *tm_fmt_ops(double ops_per_s, const char *unit, char *buf, size_t n); /* "1.2 TFLOPS" */
char *tm_fmt_count(double count, char *buf, size_t n);          /* "596.0M", "3.05B" */
/* tok/s: "241", "45.0", "0.52"; below 0.01 three significant digits ("2.17e-05"),
 * never a "0.00" for a rate that is not 0. */
char *tm_fmt_rate(double tok_s, char *buf, size_t n);
/* ms in a fit (either sign): one decimal from 1 ms up ("190.5", "-3.2"), below
 * that three significant digits ("0.0612", "-0.00340"), never a "0.0" or
 * "-0.0" for a value that is not 0; "0.0" for 0, "nan"/"inf" as printf. */
char *tm_fmt_ms_fit(double ms, char *buf, size_t n);

/* A duration the way people read it: "350 ms", "60.8 s", "2m 5s", "2h 14m",
 * "3d 4h", "12.3 years"; below a millisecond "1.00 µs" / "250 ns" (UTF-8 µ).
 * Three significant digits below 100 s; above, two whole units, rounded at the
 * smaller one (so 3599.6 s is "1h 0m", never "59m 60s"). A non-finite or
 * negative duration gives "" (a blank: unknown is never printed as a number). */
char *tm_fmt_duration(double seconds, char *buf, size_t n);

/* "0,128,512": a list of distinct integers 0..max_value (0 allowed: -p 0
 * skips a test), at most cap of them, into out[0..*n). 0, or -1 with err
 * ("WHAT: 'x' is not a list of numbers, e.g. 128,512", "WHAT: 9 is too large
 * (at most M)", "WHAT: at most N values", "WHAT: 5 is listed twice"). */
int tm_parse_u32_set0(const char *s, const char *what, uint32_t max_value, uint32_t *out,
                      size_t cap, size_t *n, struct tm_err *err);
/* 0 when v[0..n) holds no value twice; else -1 with err "WHAT: 5 is listed
 * twice" (a value listed twice would be measured twice, shown as one). */
int tm_check_distinct(const uint32_t *v, size_t n, const char *what, struct tm_err *err);

/* "0,4096,32768": a non-empty list of integers 0..max_value, at most cap,
 * into out[0..*n) (repeats allowed); 0, or -1 with err (err may be NULL). */
int tm_parse_u64_list(const char *s, const char *what, uint64_t max_value, uint64_t *out,
                      size_t cap, size_t *n, struct tm_err *err);

#endif
