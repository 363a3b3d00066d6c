/* err: the error value every fallible library function fills.
 * Contract: functions return 0 on success and -1 on failure, with err->msg set
 * to one line (no trailing newline) that names the problem, and for untrusted
 * input the field and byte offset. err may be NULL when the caller does not care.
 * Library code never prints or exits; main() decides. */
#ifndef TM_ERR_H
#define TM_ERR_H

struct tm_err {
  char msg[512];
};

/* Sets err->msg from the format; always returns -1 so callers can
 * `return tm_errf(err, ...)`. */
int tm_errf(struct tm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message: "<prefix>: <old msg>"; returns -1. */
int tm_err_prefix(struct tm_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
