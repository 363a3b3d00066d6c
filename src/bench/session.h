/* session: the records lifecycle every bench path shares (the in-process
 * engine and the server; the load generator and the batched engine next):
 *
 *   bench_session_open   the results file and its identity line
 *   bench_session_write  each run line as it ends, each summary
 *   bench_session_end    the end line (thermal after, runs, failures by kind,
 *                        steal, the invocation's findings), then close
 *
 * Every line is one write(2) (record.h), so what was measured is on disk
 * before the next request or repetition. A line that cannot be written is
 * counted (write_failures, last_error) and the session goes on: the caller
 * says so and exits 1. Library code: nothing printed. */
#ifndef TM_BENCH_SESSION_H
#define TM_BENCH_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/findings.h"
#include "machine/probe.h"
#include "record/record.h"
#include "util/err.h"

/* What a bench path's run function returns (the CLI's exit code, as named
 * in docs/design.md): everything done; a runtime failure or failed runs;
 * bad input (a file, a value) found before anything ran. */
enum bench_status { BENCH_OK = 0, BENCH_RUNTIME = 1, BENCH_BAD_INPUT = 2 };

struct bench_session {
  struct record_file *file;
  char identity[RECORD_ID_LEN + 1];
  char path[1024];
  uint64_t write_failures;
  char last_error[512];
  uint64_t lines; /* lines written (the identity's and the end's included) */
};

/* Opens path (NULL: RECORD_DEFAULT_FILE) and writes the identity built from
 * in; 0, -1 with err when the file cannot be opened (or is no results file),
 * -2 with err when the identity cannot be built or written (the file is
 * closed again either way). */
int bench_session_open(struct bench_session *s, const char *path,
                       const struct record_identity_in *in, struct tm_err *err);
/* Writes one record (a json_t *, reference stolen; NULL counts as a failure
 * to build it); 0, or -1 counted in write_failures. */
int bench_session_write(struct bench_session *s, void *record);
/* The end record (thermal read now, runs, failures by kind (RUN_ERR_COUNT
 * entries or NULL), interrupted, steal 0..1 or NAN, findings NULL or the
 * invocation's), then closes the file. Safe on a session never opened. */
void bench_session_end(struct bench_session *s, uint32_t runs, const uint32_t *failed_by_kind,
                       bool interrupted, double cpu_steal_share,
                       const struct bench_findings *findings);

#endif
