/* cli: shared helpers; see cli.h. */
#include "cli/cli.h"

#include "util/err.h"
#include "util/redact.h"
#include "util/units.h"

#include <jansson.h>
#include <stdlib.h>
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Every line on stderr is formatted here and cleaned of control bytes
 * (tm_clean_control): messages carry text from servers, files and the JSON
 * library, none of which may move the cursor or ring the terminal. */
__attribute__((format(printf, 1, 0))) static void print_clean(const char *fmt, va_list ap) {
  char msg[4096];
  vsnprintf(msg, sizeof msg, fmt, ap);
  tm_clean_control(msg);
  fputs(msg, stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tokmeter %s: ", cmd);
  print_clean(fmt, ap);
  fprintf(stderr, "\nTry 'tokmeter %s --help'.\n", cmd);
  va_end(ap);
  return TM_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, const char *arg, const struct option *longopts) {
  if (strncmp(arg, "--", 2) != 0 || !arg[2] || !longopts)
    return cli_usage_error(cmd, "unknown option '%s'", arg);
  const char *name = arg + 2;
  size_t len = strcspn(name, "=");
  char list[512] = "";
  size_t n = 0, off = 0;
  const struct option *exact = NULL;
  for (const struct option *o = longopts; o->name; o++) {
    if (strncmp(o->name, name, len) != 0) continue;
    if (strlen(o->name) == len) exact = o;
    n++;
    if (off < sizeof list)
      off += (size_t)snprintf(list + off, sizeof list - off, "%s--%s", n > 1 ? ", " : "",
                              o->name);
  }
  if (exact && exact->has_arg == no_argument && name[len] == '=')
    return cli_usage_error(cmd, "option '--%s' takes no value", exact->name);
  if (!exact && n > 1)
    return cli_usage_error(cmd, "option '%.*s' is ambiguous: it abbreviates %s", (int)len + 2,
                           arg, list);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_fail(const char *cmd, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tokmeter %s: ", cmd);
  print_clean(fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

/* "tokmeter CMD: KIND: <msg>" on stderr. */
__attribute__((format(printf, 3, 0))) static void print_kind(const char *cmd, const char *kind,
                                                            const char *fmt, va_list ap) {
  fprintf(stderr, "tokmeter %s: %s: ", cmd, kind);
  print_clean(fmt, ap);
  fputc('\n', stderr);
}

void cli_warn(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print_kind(cmd, "warning", fmt, ap);
  va_end(ap);
}

void cli_note(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  print_kind(cmd, "note", fmt, ap);
  va_end(ap);
}

static int progress_shown;

static int progress_mode = -1; /* -1 auto, 0 never, 1 always */

void cli_progress_force(int on) { progress_mode = on ? 1 : 0; }

bool cli_progress_enabled(void) { return progress_mode != 0 && isatty(STDERR_FILENO) == 1; }

void cli_progress_step(const char *message, void *ctx) {
  if (progress_mode == 0) return;
  if (isatty(STDERR_FILENO) == 1) {
    cli_progress(message, ctx);
    return;
  }
  const char *cmd = ctx ? (const char *)ctx : "";
  fprintf(stderr, "%s%s%s\n", cmd, *cmd ? ": " : "", message);
  fflush(stderr);
}

void cli_progress(const char *message, void *ctx) {
  if (!cli_progress_enabled()) return;
  const char *cmd = ctx ? (const char *)ctx : "";
  fprintf(stderr, "\r\033[K%s%s%s", cmd, *cmd ? ": " : "", message);
  fflush(stderr);
  progress_shown = 1;
}

void cli_progress_done(void) {
  if (progress_shown && cli_progress_enabled()) fprintf(stderr, "\r\033[K");
  progress_shown = 0;
}

int cli_check_rate(const char *cmd, double v, const char *flag, const char *s) {
  if (!(v >= CLI_MIN_RATE && v <= CLI_MAX_RATE))
    return cli_usage_error(cmd, "%s: '%s' is outside 0.001 to 1T tok/s", flag, s);
  return 0;
}

int cli_parse_rate(const char *cmd, const char *s, const char *flag, double *out) {
  struct tm_err err;
  double v;
  if (tm_parse_tokens(s, &v, &err) != 0 || !(v > 0))
    return cli_usage_error(cmd, "%s: '%s' is not a rate above 0 tok/s", flag, s);
  if (cli_check_rate(cmd, v, flag, s) != 0) return TM_EXIT_USAGE;
  *out = v;
  return 0;
}

void cli_print_report_hint(const char *path) {
  bool plain = *path != 0;
  for (const char *c = path; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("._/-+,:=@%", *c))) plain = false;
  fputs("report: tokmeter report ", stdout);
  if (*path == '-') fputs("./", stdout); /* not an option to report */
  if (plain) {
    fputs(path, stdout);
  } else { /* 'it'\''s': each ' closes the quote, adds an escaped one, reopens */
    putchar('\'');
    for (const char *c = path; *c; c++)
      if (*c == '\'') fputs("'\\''", stdout);
      else putchar(*c);
    putchar('\'');
  }
  fputs(" --html report.html (a table, and a page of plots)\n", stdout);
}

int cli_print_json(const char *cmd, void *doc) {
  char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
                : NULL;
  json_decref(doc);
  if (!s) return cli_fail(cmd, TM_EXIT_RUNTIME, "out of memory");
  printf("%s\n", s);
  free(s);
  return TM_EXIT_OK;
}

int cli_parse_number(const char *cmd, const char *s, const char *flag, bool whole, double min,
                     double max, double *out) {
  struct tm_err err;
  if (tm_parse_number(s, flag, whole, min, max, out, &err) != 0)
    return cli_usage_error(cmd, "%s", err.msg);
  return 0;
}

int cli_parse_above_zero(const char *cmd, const char *s, const char *flag, double lowest,
                         double max, double *out) {
  struct tm_err err;
  if (tm_parse_above_zero(s, flag, lowest, max, out, &err) != 0)
    return cli_usage_error(cmd, "%s", err.msg);
  return 0;
}
