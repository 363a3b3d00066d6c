/* cli: what every subcommand shares: exit codes, error lines, progress on a TTY.
 * Each subcommand lives in cmd_<name>.c and is called with argv[0] = its name;
 * it parses its own flags (getopt_long), prints results on stdout and everything
 * else (progress, warnings, errors) on stderr, and returns the exit code. */
#ifndef TM_CLI_H
#define TM_CLI_H

#include <stdbool.h>

enum {
  TM_EXIT_OK = 0,      /* everything asked for was done */
  TM_EXIT_RUNTIME = 1, /* a runtime failure (a measurement failed, I/O) */
  TM_EXIT_USAGE = 2,   /* bad usage or bad input (a flag, a corrupt file) */
};

/* "tokmeter CMD: <msg>" and "Try 'tokmeter CMD --help'." on stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "tokmeter CMD: <msg>" on stderr; returns code. */
int cli_fail(const char *cmd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "tokmeter CMD: warning: <msg>" on stderr. */
void cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "tokmeter CMD: note: ..." on stderr: a fact the reader needs to read the
 * figures right, not a problem. */
void cli_note(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct option;
/* The usage error for an option getopt_long refused ('?'), arg =
 * argv[optind - 1]: an abbreviation of several long options is "ambiguous"
 * and lists them ("--m": --memory, --measured-decode, ...), "--json=x" for a
 * flag without a value says so, anything else is "unknown". Returns 2. */
int cli_bad_option(const char *cmd, const char *arg, const struct option *longopts);

/* The range a command accepts for a rate in tok/s. */
#define CLI_MIN_RATE 1e-3
#define CLI_MAX_RATE 1e12
/* A rate flag ("75", "1.5k", "1M" tok/s) within [CLI_MIN_RATE, CLI_MAX_RATE]:
 * 0 and *out set, or a usage error naming the flag (returns 2). */
int cli_parse_rate(const char *cmd, const char *s, const char *flag, double *out);
/* v (read from s for flag) within [CLI_MIN_RATE, CLI_MAX_RATE]: 0, or a
 * usage error (returns 2). */
int cli_check_rate(const char *cmd, double v, const char *flag, const char *s);

/* After a bench: the line that says how to look at its records, e.g.
 * "report: tokmeter report tokmeter-results.jsonl --html report.html (a table,
 * and a page of plots)", the path single-quoted for a shell when it needs it. */
void cli_print_report_hint(const char *records_path);

/* True when stderr is a terminal and progress is not turned off. */
bool cli_progress_enabled(void);
/* A progress callback (ctx = command name): on a TTY, rewrites one status line
 * on stderr; when piped, silent. cli_progress_done() clears the line. */
void cli_progress(const char *message, void *ctx);
void cli_progress_done(void);
/* One line per step of a long run (a configuration, a workload): on a TTY
 * the status line above, otherwise a line of its own on stderr; neither
 * with --no-progress. */
void cli_progress_step(const char *message, void *ctx);
/* --progress (1) / --no-progress (0): a status line only on a TTY either
 * way, but step lines always (1) or never (0). */
void cli_progress_force(int on);

/* Prints a --json document (a json_t *, reference stolen) on stdout, indented,
 * reals to 10 significant digits (JSON_REAL_PRECISION), keys in insertion
 * order; NULL (a builder out of memory) fails. Returns the exit code. */
int cli_print_json(const char *cmd, void *doc);

/* tm_parse_number / tm_parse_above_zero (util/units.h) for flag: 0 and *out
 * set, or their message as a usage error (returns 2). */
int cli_parse_number(const char *cmd, const char *s, const char *flag, bool whole, double min,
                     double max, double *out);
int cli_parse_above_zero(const char *cmd, const char *s, const char *flag, double lowest,
                         double max, double *out);

int cmd_bench(int argc, char **argv);
int cmd_ceiling(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_decide(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_load(int argc, char **argv);

#endif
