/* record: the JSON Lines results file and the run identity (docs/design.md,
 * "Records"; every key and unit is documented in docs/records.md).
 *
 * A results file is opened in append mode (O_APPEND, created 0644 when
 * missing) and every record is written as ONE line with ONE write(2) call, no
 * stdio buffer in between: a record is on disk (in the kernel's page cache,
 * which survives the process) as soon as record_write returns, so runs
 * already measured are kept even if the process dies next. No fsync: a power
 * cut may lose the tail, a crash of tokmeter does not. An invocation that dies
 * leaves no "end" line; readers treat the lines before as valid.
 *
 * This module knows only generic pieces: the writer, the identity record, ids,
 * times, the machine and thermal objects and a few JSON helpers. The builders
 * of run / summary / end records take bench and backend structs and live in
 * src/bench/records_bench.h (tm_record must not link tm_backend or tm_bench).
 *
 * JSON values cross this header as void * (jansson json_t *) so callers that
 * do not build JSON need not include jansson.h.
 *
 * Secrets: no function here takes an API key, and none is ever an input of a
 * record. Target URLs are recorded without user:password@ and without a
 * query string (record_redact_url), and error messages pass through
 * record_redact_secrets, so a key that leaked into either is not written. */
#ifndef TM_RECORD_H
#define TM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h" /* struct server_info (header-only use) */
#include "machine/probe.h"
#include "stats/significance.h" /* struct stats_drift */
#include "stats/stats.h"
#include "util/err.h"

/* Version of the record format; bumped when a key changes meaning or goes. */
#define RECORD_SCHEMA 1
#define RECORD_ID_LEN 32 /* hex characters of an identity id (128 bits) */
#define RECORD_DEFAULT_FILE "tokmeter-results.jsonl"

/* ----------------------------------------------------------- the file --- */

struct record_file;

/* Opens (creating when missing) path for appending. NULL with err on failure. */
struct record_file *record_open(const char *path, struct tm_err *err);
/* --repair: when path's last line is cut (no newline at its end: a full
 * disk, a killed writer), truncates the file back to just after its last
 * newline, so every whole record stays and the next one starts a line.
 * *dropped = the bytes removed (0: nothing to repair, or no such file). 0,
 * or -1 with err. */
int record_repair_torn(const char *path, uint64_t *dropped, struct tm_err *err);
/* Whether records may be appended to path, without creating anything: an
 * existing path must be a regular file (or a character device such as
 * /dev/stdout, never read) this process may write, and, when it is not
 * empty, a tokmeter results file: its first non-blank line (read up to
 * 1 MiB) a JSON object with a "record" string and its last byte a newline
 * (so a GGUF, a text file or a file whose last line was cut is refused: the
 * next record would be appended to something that is not, or glue onto a
 * cut line); a new one needs a writable directory. Every writer of results
 * files (bench, bench --url, import) calls it up front, before any probe,
 * load or request, and exits 2 with the message. 0, or -1 with err naming
 * the path and the reason ("records: PATH: not a tokmeter results file
 * (...): refusing to append; ..."). */
int record_check_writable(const char *path, struct tm_err *err);
/* Writes json (a json_t *, STOLEN: freed here whatever happens) as one line.
 * json NULL (a builder ran out of memory) is an error. 0 / -1 with err.
 * A line is written whole or not at all: when write(2) fails or comes back
 * short (disk full, file size limit, I/O error), the file is cut back to its
 * size before the line (ftruncate), so it stays valid JSON Lines and the next
 * line does not glue onto a torn one. Callers must treat -1 as a runtime
 * failure (exit 1): results were not safely kept. */
int record_write(struct record_file *f, void *json, struct tm_err *err);
/* Records that could not be written through this handle (record_write -1). */
uint64_t record_write_failures(const struct record_file *f);
/* Lines written through this handle so far. */
uint64_t record_lines_written(const struct record_file *f);
void record_close(struct record_file *f); /* NULL is fine */

/* The exact line record_write writes for json (without the newline), malloc'd;
 * NULL when out of memory. Borrowed json. For tests and --json printing. */
char *record_dump(const void *json);

/* ------------------------------------------------------------- pieces --- */

/* 128 random bits from /dev/urandom as 32 lowercase hex digits + NUL. */
int record_new_id(char out[RECORD_ID_LEN + 1], struct tm_err *err);
/* Now, UTC, ISO 8601 to the second: "2026-11-29T07:00:00Z". */
void record_time_utc(char out[32]);
/* Copies url into out without "user:password@" and without "?query" /
 * "#fragment" (where hosted APIs may carry keys). Always NUL-terminates. */
void record_redact_url(const char *url, char *out, size_t n);
/* In place: tm_redact (util/redact.h) without a key: "user:password@" of
 * URLs goes, the word after "Bearer ", words starting with "sk-" and "key="
 * values become "[redacted]", bytes that are not UTF-8 '?'. A last line of
 * defence for messages. */
void record_redact_secrets(char *msg, size_t cap);

/* JSON helpers (json_t * as void *). A number: NULL-safe; NAN / inf -> null.
 * record_json_count: an integer, negative (= not reported) -> null. */
void *record_json_num(double v);
void *record_json_count(int64_t v);
/* A string; NULL or "" -> null. */
void *record_json_str(const char *s);
/* json_object_set_new(obj, key, value) that returns 1 on failure (value NULL
 * from an allocation that failed, or no memory), 0 on success, so a builder
 * ORs the results and checks once. value is stolen either way. */
int record_json_set(void *obj, const char *key, void *value);
/* The keys every record opens with: {"record": kind, "schema":
 * RECORD_SCHEMA, "identity": identity (NULL -> null), "time": time, or now
 * (record_time_utc) when time is NULL}; NULL when out of memory. */
void *record_head_json(const char *kind, const char *identity, const char *time);
/* One figure over a configuration's runs: {"n", "median", "mean", "sd",
 * "min", "max"} of a stats_describe summary (NAN -> null: all but n when
 * n is 0, sd when n < 2); NULL when out of memory. */
void *record_stats_json(const struct stats_summary *s);
/* A drift test over one series (rule 11, stats_drift): {"n", "slower",
 * "change", "t", "t_crit"} (NAN -> null), or JSON null when no test was
 * possible (tested false: fewer than 3 values); NULL when out of memory. */
void *record_drift_json(const struct stats_drift *d, bool tested);
/* machine_info -> {cpu, arch, cores, memory_bytes, memory_available_bytes,
 * llc_bytes, os, flags[]}. */
void *record_machine_json(const struct machine_info *m);
/* machine_thermal -> {readable, temps[{name, celsius}], freqs_mhz[]};
 * t NULL -> null (not taken). */
void *record_thermal_json(const struct machine_thermal *t);

/* --------------------------------------------------------- the ceiling --- */

/* What the model + machine allow, when the model file is known. NAN = absent. */
struct record_ceiling {
  double decode_ceiling_tok_s;
  double prefill_ceiling_tok_s;
  double read_bandwidth_bytes_s;
  /* What the two ceilings are made of: decode = read_bandwidth_bytes_s /
   * bytes_per_token (the mean over the depths the tokens were generated at),
   * prefill = compute_ops_s / flops_per_token (on the compute_path, "int8",
   * "int8_tile" (AMX, for a server whose build uses it) or "f32"); NAN / NULL
   * where unknown. */
  double bytes_per_token;
  double flops_per_token;
  double compute_ops_s;
  const char *compute_path;
};
/* All figures unknown (NAN, NULL). */
struct record_ceiling record_ceiling_none(void);
/* {decode_ceiling_tok_s, prefill_ceiling_tok_s, read_bandwidth_bytes_s,
 * bytes_per_token, flops_per_token, compute_ops_s, compute_path}: null where
 * unknown (NAN, not above 0, NULL); c NULL -> null. */
void *record_ceiling_json(const struct record_ceiling *c);
/* 100 * rate / ceiling; NAN when either is absent. */
double record_percent_of(double rate, double ceiling);

/* --------------------------------------------------------- identity --- */

/* The served (or in-process) model. Strings may be NULL or "" (-> null). */
struct record_model {
  const char *name;      /* served model name */
  const char *file;      /* the GGUF file given with --gguf */
  const char *arch;      /* general.architecture */
  const char *type;      /* quantization, e.g. "Q4_0" */
  double bytes_per_token;/* bytes read per generated token (ceiling), NAN absent */
};

struct record_identity_in {
  const char *tokmeter_version;         /* TOKMETER_VERSION */
  const void *settings;                 /* json object of every setting (borrowed,
                                           deep-copied); NULL -> {} */
  const struct machine_info *machine;   /* NULL -> null */
  const struct machine_thermal *thermal_before; /* NULL -> null */
  const struct server_info *server;     /* NULL (in-process) -> null */
  const struct record_model *model;     /* NULL -> null */
  const char *backend;                  /* "openai", "ollama", "llamacpp", "engine" */
  const char *target;                   /* base URL (redacted here) or "in-process" */
  const char *command;                  /* the command line, e.g. "tokmeter bench
                                           --url ..." (the caller leaves secrets
                                           out; redacted again); NULL -> null */
};

/* Builds the "identity" record with a fresh id (copied to id_out) and the
 * current time. Returns a json_t * (as void *) or NULL with err (no random
 * source, out of memory). */
void *record_identity_build(const struct record_identity_in *in,
                            char id_out[RECORD_ID_LEN + 1], struct tm_err *err);

#endif
