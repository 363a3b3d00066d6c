/* session: see session.h. */
#include "bench/session.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bench/records_bench.h"

static void count_failure(struct bench_session *s, const char *msg) {
  s->write_failures++;
  snprintf(s->last_error, sizeof s->last_error, "%s", msg);
}

int bench_session_open(struct bench_session *s, const char *path,
                       const struct record_identity_in *in, struct tm_err *err) {
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", path ? path : RECORD_DEFAULT_FILE);
  s->file = record_open(s->path, err);
  if (!s->file) return -1;
  void *id = record_identity_build(in, s->identity, err);
  if (!id || record_write(s->file, id, err) != 0) {
    if (!id) tm_err_prefix(err, "cannot build the identity record");
    record_close(s->file);
    s->file = NULL;
    if (!strstr(err->msg, s->path)) tm_err_prefix(err, "%s", s->path);
    return -2;
  }
  s->lines = 1;
  return 0;
}

int bench_session_write(struct bench_session *s, void *record) {
  struct tm_err err = {{0}};
  if (!s->file) {
    json_decref(record);
    return -1;
  }
  if (!record) {
    count_failure(s, "a record could not be built (out of memory)");
    return -1;
  }
  if (record_write(s->file, record, &err) != 0) {
    count_failure(s, err.msg);
    return -1;
  }
  s->lines++;
  return 0;
}

void bench_session_end(struct bench_session *s, uint32_t runs, const uint32_t *failed_by_kind,
                       bool interrupted, double cpu_steal_share,
                       const struct bench_findings *findings) {
  if (!s->file) return;
  struct machine_thermal th;
  machine_thermal_read(&th);
  json_t *end = record_end_build(s->identity, &th, runs, failed_by_kind, interrupted,
                                 cpu_steal_share);
  if (end && findings) json_object_set_new(end, "findings", bench_findings_json(findings));
  bench_session_write(s, end);
  record_close(s->file);
  s->file = NULL;
}
