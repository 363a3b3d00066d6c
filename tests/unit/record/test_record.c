/* Tests of the JSON Lines writer, ids, times, redaction and the identity
 * record (src/record/record.h). */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "record/record.h"
#include "tm_test.h"

/* Reads a whole file; NULL when unreadable. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (!buf) {
    fclose(f);
    return NULL;
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

/* Parses every line of a JSON Lines file into out (up to max); returns the
 * count of lines, -1 when a line does not parse. */
static int parse_lines(const char *path, json_t **out, int max) {
  char *text = slurp(path);
  if (!text) return -1;
  int n = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    if (!j) {
      free(text);
      return -1;
    }
    if (n < max) out[n] = j;
    else json_decref(j);
    n++;
  }
  free(text);
  return n;
}

static json_t *small(int v) {
  json_t *o = json_object();
  json_object_set_new(o, "record", json_string("test"));
  json_object_set_new(o, "v", json_integer(v));
  return o;
}

static void test_append_across_opens(void) {
  const char *path = tm_tmpfile("append.jsonl");
  struct tm_err err = {{0}};
  struct record_file *f = record_open(path, &err);
  CHECK(f != NULL);
  CHECK_EQ_INT(record_write(f, small(1), &err), 0);
  CHECK_EQ_INT(record_write(f, small(2), &err), 0);
  CHECK_EQ_U64(record_lines_written(f), 2);
  record_close(f);

  f = record_open(path, &err);
  CHECK(f != NULL);
  CHECK_EQ_INT(record_write(f, small(3), &err), 0);
  record_close(f);

  json_t *lines[8] = {0};
  int n = parse_lines(path, lines, 8);
  CHECK_EQ_INT(n, 3);
  for (int i = 0; i < n && i < 3; i++) {
    CHECK_EQ_INT(json_integer_value(json_object_get(lines[i], "v")), i + 1);
    json_decref(lines[i]);
  }
  /* Exactly one newline per record, the file ends with one. */
  char *text = slurp(path);
  CHECK(text != NULL);
  if (text) {
    size_t nl = 0, len = strlen(text);
    for (size_t i = 0; i < len; i++) nl += text[i] == '\n';
    CHECK_EQ_INT(nl, 3);
    CHECK(len > 0 && text[len - 1] == '\n');
    CHECK_STR(strtok(text, "\n"), "{\"record\":\"test\",\"v\":1}");
    free(text);
  }
}

/* Each record reaches the file when record_write returns, with no close: a
 * process that dies next (no end record, no close) leaves whole lines. We
 * read the file while the handle is still open, as a crash would leave it. */
static void test_lines_survive_without_close(void) {
  const char *path = tm_tmpfile("crash.jsonl");
  struct tm_err err = {{0}};
  struct record_file *f = record_open(path, &err);
  CHECK(f != NULL);
  CHECK_EQ_INT(record_write(f, small(10), &err), 0);
  CHECK_EQ_INT(record_write(f, small(11), &err), 0);
  json_t *lines[4] = {0};
  CHECK_EQ_INT(parse_lines(path, lines, 4), 2);
  CHECK_EQ_INT(json_integer_value(json_object_get(lines[1], "v")), 11);
  json_decref(lines[0]);
  json_decref(lines[1]);

  /* A later invocation appends after the "crashed" one: earlier lines intact. */
  struct record_file *g = record_open(path, &err);
  CHECK_EQ_INT(record_write(g, small(12), &err), 0);
  record_close(g);
  CHECK_EQ_INT(parse_lines(path, lines, 4), 3);
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(json_integer_value(json_object_get(lines[i], "v")), 10 + i);
    json_decref(lines[i]);
  }
  record_close(f);
}

static void test_open_and_write_errors(void) {
  struct tm_err err = {{0}};
  struct record_file *f = record_open("/nonexistent-dir-tokmeter/x.jsonl", &err);
  CHECK(f == NULL);
  CHECK_CONTAINS(err.msg, "/nonexistent-dir-tokmeter/x.jsonl");
  f = record_open(tm_tmpfile("null.jsonl"), &err);
  CHECK(f != NULL);
  err.msg[0] = 0;
  CHECK_EQ_INT(record_write(f, NULL, &err), -1); /* a builder out of memory */
  CHECK_CONTAINS(err.msg, "out of memory");
  CHECK_EQ_U64(record_lines_written(f), 0);
  record_close(f);
  record_close(NULL);
}

static void test_nan_is_null(void) {
  json_t *o = json_object();
  CHECK_EQ_INT(record_json_set(o, "a", record_json_num(NAN)), 0);
  CHECK_EQ_INT(record_json_set(o, "b", record_json_num(INFINITY)), 0);
  CHECK_EQ_INT(record_json_set(o, "c", record_json_num(29.5)), 0);
  CHECK_EQ_INT(record_json_set(o, "d", record_json_count(-1)), 0);
  CHECK_EQ_INT(record_json_set(o, "e", record_json_count(54)), 0);
  CHECK_EQ_INT(record_json_set(o, "f", record_json_str("")), 0);
  CHECK_EQ_INT(record_json_set(o, "g", NULL), 1); /* a failed allocation is reported */
  char *s = record_dump(o);
  CHECK_STR(s, "{\"a\":null,\"b\":null,\"c\":29.5,\"d\":null,\"e\":54,\"f\":null}");
  free(s);
  json_decref(o);
}

/* The head every record opens with, and one figure's summary: an empty
 * sample is all null but n, one value has no sd. */
static void test_head_and_stats(void) {
  json_t *h = record_head_json("run", "ab12", "2026-12-01T00:00:00Z");
  char *s = record_dump(h);
  CHECK_STR(s, "{\"record\":\"run\",\"schema\":1,\"identity\":\"ab12\","
               "\"time\":\"2026-12-01T00:00:00Z\"}");
  free(s);
  json_decref(h);
  h = record_head_json("summary", NULL, NULL); /* no identity: null; no time: now */
  CHECK(json_is_null(json_object_get(h, "identity")));
  const char *t = json_string_value(json_object_get(h, "time"));
  CHECK(t && strlen(t) == 20 && t[19] == 'Z');
  json_decref(h);

  const double x[] = {3, NAN, 1, 2};
  struct stats_summary st;
  stats_describe(x, 4, &st);
  json_t *o = record_stats_json(&st);
  s = record_dump(o);
  CHECK_STR(s, "{\"n\":3,\"median\":2.0,\"mean\":2.0,\"sd\":1.0,\"min\":1.0,\"max\":3.0}");
  free(s);
  json_decref(o);
  stats_describe(x, 1, &st);
  o = record_stats_json(&st);
  s = record_dump(o);
  CHECK_STR(s, "{\"n\":1,\"median\":3.0,\"mean\":3.0,\"sd\":null,\"min\":3.0,\"max\":3.0}");
  free(s);
  json_decref(o);
  stats_describe(x + 1, 1, &st);
  o = record_stats_json(&st);
  s = record_dump(o);
  CHECK_STR(s, "{\"n\":0,\"median\":null,\"mean\":null,\"sd\":null,\"min\":null,"
               "\"max\":null}");
  free(s);
  json_decref(o);
}

static bool is_hex_id(const char *s) {
  if (strlen(s) != RECORD_ID_LEN) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

static void test_ids_and_time(void) {
  char a[RECORD_ID_LEN + 1], b[RECORD_ID_LEN + 1];
  struct tm_err err = {{0}};
  CHECK_EQ_INT(record_new_id(a, &err), 0);
  CHECK_EQ_INT(record_new_id(b, &err), 0);
  CHECK(is_hex_id(a));
  CHECK(is_hex_id(b));
  CHECK(strcmp(a, b) != 0);

  char t[32];
  record_time_utc(t);
  /* 2026-11-29T07:00:00Z */
  CHECK_EQ_INT(strlen(t), 20);
  CHECK(t[4] == '-' && t[7] == '-' && t[10] == 'T' && t[13] == ':' && t[16] == ':' &&
        t[19] == 'Z');
  CHECK(t[0] == '2'); /* this century */
}

static void test_redact_url(void) {
  char out[256];
  record_redact_url("http://127.0.0.1:8080", out, sizeof out);
  CHECK_STR(out, "http://127.0.0.1:8080");
  record_redact_url("https://user:sk-secret@api.example.com/openai/v1?api-key=XYZ#f", out,
                    sizeof out);
  CHECK_STR(out, "https://api.example.com/openai/v1");
  record_redact_url("localhost:11434/", out, sizeof out);
  CHECK_STR(out, "localhost:11434/");
  record_redact_url(NULL, out, sizeof out);
  CHECK_STR(out, "");
  char tiny[8];
  record_redact_url("http://a.very.long.host", tiny, sizeof tiny);
  CHECK_STR(tiny, "http://");
}

static void test_redact_secrets(void) {
  char m[256];
  snprintf(m, sizeof m, "HTTP 401: Incorrect API key provided: sk-proj-abc123XYZ. See docs");
  record_redact_secrets(m, sizeof m);
  CHECK(strstr(m, "abc123XYZ") == NULL);
  CHECK_STR(m, "HTTP 401: Incorrect API key provided: [redacted]. See docs");
  snprintf(m, sizeof m, "sent Authorization: Bearer tok_9f8e7d, got 403");
  record_redact_secrets(m, sizeof m);
  CHECK_STR(m, "sent Authorization: Bearer [redacted], got 403");
  snprintf(m, sizeof m, "GET /v1/models?key=AIzaSyQQQ&x=1 failed");
  record_redact_secrets(m, sizeof m);
  CHECK_STR(m, "GET /v1/models?key=[redacted]&x=1 failed");
  snprintf(m, sizeof m, "context overflow: 5000 tokens > 4096 (task-sk-ok stays)");
  record_redact_secrets(m, sizeof m);
  CHECK_STR(m, "context overflow: 5000 tokens > 4096 (task-sk-ok stays)");
}

static void test_identity(void) {
  struct machine_info mi;
  memset(&mi, 0, sizeof mi);
  snprintf(mi.cpu_model, sizeof mi.cpu_model, "AMD EPYC 7B13");
  snprintf(mi.arch, sizeof mi.arch, "x86_64");
  mi.cpus = 2;
  mi.memory_bytes = 24000000000ull;
  mi.memory_available_bytes = 20000000000ull;
  mi.llc_bytes = 0;
  snprintf(mi.os, sizeof mi.os, "Linux 6.1.0 (Debian GNU/Linux 12)");
  mi.n_flags = 2;
  snprintf(mi.flags[0], sizeof mi.flags[0], "avx2");
  snprintf(mi.flags[1], sizeof mi.flags[1], "avx512_vnni");
  struct machine_thermal th;
  memset(&th, 0, sizeof th);
  th.readable = true;
  th.n_temps = 1;
  snprintf(th.temps[0].name, sizeof th.temps[0].name, "x86_pkg_temp");
  th.temps[0].celsius = 48.5;
  th.n_freqs = 2;
  th.freq_mhz[0] = 2450.0;
  th.freq_mhz[1] = NAN;
  struct server_info si;
  memset(&si, 0, sizeof si);
  snprintf(si.kind, sizeof si.kind, "llama.cpp");
  snprintf(si.build, sizeof si.build, "b1-80fb11a");
  si.n_ctx = 4096;
  si.has_tokenize = true;
  struct record_model model = {.name = "m", .file = "q3-0.6b-Q4_0.gguf", .arch = "qwen3",
                               .type = "Q4_0", .bytes_per_token = 375614464.0};
  json_t *settings = json_pack("{s:i, s:b}", "reps", 3, "nonce", 1);
  struct record_identity_in in = {
      .tokmeter_version = "0.1.0", .settings = settings, .machine = &mi,
      .thermal_before = &th, .server = &si, .model = &model, .backend = "openai",
      .target = "http://user:pw@127.0.0.1:8080/?key=sk-zzz",
      .command = "tokmeter bench --url http://127.0.0.1:8080 -r 3"};

  char id1[RECORD_ID_LEN + 1] = "", id2[RECORD_ID_LEN + 1] = "";
  struct tm_err err = {{0}};
  json_t *a = record_identity_build(&in, id1, &err);
  json_t *b = record_identity_build(&in, id2, &err);
  CHECK(a != NULL && b != NULL);
  CHECK(is_hex_id(id1));
  CHECK(strcmp(id1, id2) != 0);
  /* settings were deep-copied: changing the caller's object changes nothing. */
  json_object_set_new(settings, "reps", json_integer(99));

  /* Round trip through the exact line written. */
  char *line = record_dump(a);
  CHECK(line != NULL && strchr(line, '\n') == NULL);
  CHECK(strstr(line, "sk-zzz") == NULL && strstr(line, "pw@") == NULL);
  json_error_t je;
  json_t *j = json_loads(line, 0, &je);
  CHECK(j != NULL);
  CHECK_STR(json_string_value(json_object_get(j, "record")), "identity");
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "schema")), RECORD_SCHEMA);
  CHECK_STR(json_string_value(json_object_get(j, "id")), id1);
  CHECK_STR(json_string_value(json_object_get(j, "tokmeter")), "0.1.0");
  CHECK_STR(json_string_value(json_object_get(j, "backend")), "openai");
  CHECK_STR(json_string_value(json_object_get(j, "target")), "http://127.0.0.1:8080/");
  CHECK_STR(json_string_value(json_object_get(j, "command")),
            "tokmeter bench --url http://127.0.0.1:8080 -r 3");
  CHECK_EQ_INT(strlen(json_string_value(json_object_get(j, "time"))), 20);
  json_t *mj = json_object_get(j, "model");
  CHECK_STR(json_string_value(json_object_get(mj, "arch")), "qwen3");
  CHECK_STR(json_string_value(json_object_get(mj, "type")), "Q4_0");
  CHECK_EQ_INT(json_integer_value(json_object_get(mj, "bytes_per_token")), 375614464);
  json_t *sj = json_object_get(j, "server");
  CHECK_STR(json_string_value(json_object_get(sj, "build")), "b1-80fb11a");
  CHECK(json_is_null(json_object_get(sj, "model")));
  CHECK(json_is_null(json_object_get(sj, "system_info")));
  CHECK_EQ_INT(json_integer_value(json_object_get(sj, "n_ctx")), 4096);
  CHECK(json_is_true(json_object_get(sj, "has_tokenize")));
  CHECK(json_is_null(json_object_get(sj, "tokenize_error"))); /* "" when it answered */
  json_t *mach = json_object_get(j, "machine");
  CHECK_STR(json_string_value(json_object_get(mach, "cpu")), "AMD EPYC 7B13");
  CHECK_EQ_INT(json_integer_value(json_object_get(mach, "cores")), 2);
  CHECK_EQ_U64(json_integer_value(json_object_get(mach, "memory_bytes")), 24000000000ull);
  CHECK(json_is_null(json_object_get(mach, "llc_bytes")));
  CHECK_EQ_INT(json_array_size(json_object_get(mach, "flags")), 2);
  CHECK_STR(json_string_value(json_array_get(json_object_get(mach, "flags"), 1)), "avx512_vnni");
  json_t *tj = json_object_get(j, "thermal_before");
  CHECK(json_is_true(json_object_get(tj, "readable")));
  CHECK_NEAR(json_real_value(json_object_get(json_array_get(json_object_get(tj, "temps"), 0),
                                             "celsius")), 48.5, 0);
  CHECK_NEAR(json_real_value(json_array_get(json_object_get(tj, "freqs_mhz"), 0)), 2450.0, 0);
  CHECK(json_is_null(json_array_get(json_object_get(tj, "freqs_mhz"), 1)));
  json_t *st = json_object_get(j, "settings");
  CHECK_EQ_INT(json_integer_value(json_object_get(st, "reps")), 3);
  CHECK(json_is_true(json_object_get(st, "nonce")));
  free(line);
  json_decref(j);
  json_decref(a);
  json_decref(b);
  json_decref(settings);
}

/* In-process runs (no server, no model file, no thermal): nulls, not junk. */
static void test_identity_minimal(void) {
  struct record_identity_in in = {.tokmeter_version = "0.1.0", .backend = "engine",
                                  .target = "in-process"};
  char id[RECORD_ID_LEN + 1];
  struct tm_err err = {{0}};
  json_t *j = record_identity_build(&in, id, &err);
  CHECK(j != NULL);
  CHECK(json_is_null(json_object_get(j, "server")));
  CHECK(json_is_null(json_object_get(j, "model")));
  CHECK(json_is_null(json_object_get(j, "machine")));
  CHECK(json_is_null(json_object_get(j, "thermal_before")));
  CHECK(json_is_null(json_object_get(j, "command")));
  CHECK(json_is_object(json_object_get(j, "settings")));
  CHECK_EQ_INT(json_object_size(json_object_get(j, "settings")), 0);
  CHECK_STR(json_string_value(json_object_get(j, "target")), "in-process");
  json_decref(j);

  /* A thermal snapshot of a VM: readable false, empty lists. */
  struct machine_thermal th;
  memset(&th, 0, sizeof th);
  json_t *tj = record_thermal_json(&th);
  char *s = record_dump(tj);
  CHECK_STR(s, "{\"readable\":false,\"temps\":[],\"freqs_mhz\":[]}");
  free(s);
  json_decref(tj);
}

static void test_ceiling_json(void) {
  struct record_ceiling c = {.decode_ceiling_tok_s = 87.6, .prefill_ceiling_tok_s = NAN,
                             .read_bandwidth_bytes_s = 32.9e9};
  json_t *j = record_ceiling_json(&c);
  char *s = record_dump(j);
  CHECK_STR(s, "{\"decode_ceiling_tok_s\":87.6,\"prefill_ceiling_tok_s\":null,"
               "\"read_bandwidth_bytes_s\":32900000000.0,\"bytes_per_token\":null,"
               "\"flops_per_token\":null,\"compute_ops_s\":null,\"compute_path\":null}");
  free(s);
  json_decref(j);
  /* every part, and the unknowns of record_ceiling_none */
  struct record_ceiling all = record_ceiling_none();
  all.prefill_ceiling_tok_s = 1500.0;
  all.bytes_per_token = 3.75e8;
  all.flops_per_token = 1.2e9;
  all.compute_ops_s = 1.8e12;
  all.compute_path = "int8";
  j = record_ceiling_json(&all);
  s = record_dump(j);
  CHECK_STR(s, "{\"decode_ceiling_tok_s\":null,\"prefill_ceiling_tok_s\":1500.0,"
               "\"read_bandwidth_bytes_s\":null,\"bytes_per_token\":375000000.0,"
               "\"flops_per_token\":1200000000.0,\"compute_ops_s\":1.8e12,"
               "\"compute_path\":\"int8\"}");
  free(s);
  json_decref(j);
  CHECK_NEAR(record_percent_of(29.5, 87.6), 33.67579908675799, 1e-12);
  CHECK(isnan(record_percent_of(NAN, 87.6)));
  CHECK(isnan(record_percent_of(29.5, NAN)));
  CHECK(isnan(record_percent_of(29.5, 0)));
}

/* A line that cannot be written whole (file size limit, as `ulimit -f`) is
 * rolled back: the file keeps only whole lines, the write says -1, and a
 * later line does not glue onto a torn one. */
static void test_short_write_rolled_back(void) {
  const char *path = tm_tmpfile("short.jsonl");
  struct tm_err err;
  struct record_file *f = record_open(path, &err);
  CHECK(f != NULL);
  if (!f) return;
  CHECK_EQ_INT(record_write(f, json_pack("{s:s}", "record", "first"), &err), 0);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 64; /* bytes: the first line fits, a long one does not */
  void (*old_h)(int) = signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &lim);
  char big[200];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  int rc = record_write(f, json_pack("{s:s}", "record", big), &err);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_h);
  CHECK_EQ_INT(rc, -1);
  CHECK(strstr(err.msg, path) != NULL);
  CHECK_EQ_INT((int)record_write_failures(f), 1);
  CHECK_EQ_INT(record_write(f, json_pack("{s:s}", "record", "after"), &err), 0);
  CHECK_EQ_INT((int)record_lines_written(f), 2);
  record_close(f);
  FILE *in = fopen(path, "r");
  char buf[512] = "";
  size_t n = in ? fread(buf, 1, sizeof buf - 1, in) : 0;
  if (in) fclose(in);
  buf[n] = 0;
  CHECK_STR(buf, "{\"record\":\"first\"}\n{\"record\":\"after\"}\n");
}

void tm_run_tests(void) {
  TM_RUN(test_short_write_rolled_back);
  TM_RUN(test_append_across_opens);
  TM_RUN(test_lines_survive_without_close);
  TM_RUN(test_open_and_write_errors);
  TM_RUN(test_nan_is_null);
  TM_RUN(test_head_and_stats);
  TM_RUN(test_ids_and_time);
  TM_RUN(test_redact_url);
  TM_RUN(test_redact_secrets);
  TM_RUN(test_identity);
  TM_RUN(test_identity_minimal);
  TM_RUN(test_ceiling_json);
}
