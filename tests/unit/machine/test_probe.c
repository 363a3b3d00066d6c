/* test_probe: a quick probe's figures are sane; reading a given buffer
 * (machine_read_bw_of) gives sane figures per thread count, refuses what it
 * cannot read, and does not write; the JSON round trip is exact;
 * the cache saves and loads in the temp cache dir; corrupt cache files and
 * malformed JSON fail cleanly (and probe_get re-probes past them); the read
 * loop the probe times reads every word exactly once. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "machine/kernels.h"
#include "machine/probe.h"
#include "tm_test.h"

/* One quick probe shared by the tests (each probe takes a moment). */
static struct machine_probe quick_probe;
static bool have_quick;

static const struct machine_probe *get_quick(void) {
  if (!have_quick) {
    struct probe_options o = {0, true};
    struct tm_err err = {{0}};
    int rc = probe_run_opts(&quick_probe, &o, NULL, NULL, &err);
    CHECK_MSG(rc == 0, "probe_run_opts: %s", err.msg);
    have_quick = rc == 0;
  }
  return &quick_probe;
}

static bool sane_bw(double v) { return isfinite(v) && v > 100e6 && v < 10e12; }

/* The read loop sums every 64-bit word of its buffer once: a loop that
 * skipped or repeated lines (its streams, their tail) would time bytes it
 * did not read. Sizes below, at and above the size where it starts four
 * streams, with and without a tail after them. */
static void test_read_loop_reads_every_word(void) {
  struct kernels k;
  kernels_select(&k);
  const size_t line = 64, four = 4 * 1544 * line;
  const size_t sizes[] = {256, 4096, four - 256, four, four + 256, 3 * four + 4096 + 768,
                          (size_t)8 << 20, ((size_t)8 << 20) + 1024 * line + 256};
  const size_t max = ((size_t)8 << 20) + 1024 * line + 256;
  uint64_t *buf = aligned_alloc(64, max);
  CHECK(buf != NULL);
  if (!buf) return;
  for (size_t i = 0; i < max / 8; i++) buf[i] = i * 0x9E3779B97F4A7C15ull + 12345;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    uint64_t want = 0;
    for (size_t i = 0; i < sizes[si] / 8; i++) want += buf[i];
    for (int v = 0; v < KERN_READ_PF_N; v++) {
      uint64_t got = k.read(buf, sizes[si], kern_read_pf_bytes[v]);
      CHECK_MSG(got == want, "%s read loop (prefetch %zu bytes ahead) over %zu bytes: sum %llx, "
                "want %llx", k.mem_path, kern_read_pf_bytes[v], sizes[si],
                (unsigned long long)got, (unsigned long long)want);
    }
  }
  free(buf);
}

static void test_quick_probe_figures(void) {
  const struct machine_probe *p = get_quick();
  if (!have_quick) return;
  CHECK(p->quick);
  CHECK(p->max_threads >= 1);
  CHECK(p->buffer_bytes >= (16u << 20));
  CHECK_EQ_INT(strlen(p->measured_at), 20); /* 2025-01-01T00:00:00Z */
  for (uint32_t t = 1; t <= p->max_threads; t++) {
    CHECK_MSG(sane_bw(p->read_bw_bytes_s[t]), "read bw at %u threads: %g", t, p->read_bw_bytes_s[t]);
    CHECK_MSG(sane_bw(p->copy_bw_bytes_s[t]), "copy bw at %u threads: %g", t, p->copy_bw_bytes_s[t]);
    CHECK_MSG(isfinite(p->f32_flops[t]) && p->f32_flops[t] > 1e6, "f32 at %u: %g", t,
              p->f32_flops[t]);
  }
  uint32_t at = 0;
  CHECK(probe_best_read_bw(p, &at) > 0);
  CHECK(at >= 1 && at <= p->max_threads);
  CHECK(p->f32_path[0] != 0);

  /* int8 present iff the CPU flags say the instructions exist. */
  const struct machine_info *m = &p->info;
  bool expect_int8 = (machine_has_flag(m, "avx512_vnni") && machine_has_flag(m, "avx512f")) ||
                     (machine_has_flag(m, "avx_vnni") && machine_has_flag(m, "avx2")) ||
                     machine_has_flag(m, "asimddp");
  CHECK_EQ_INT(expect_int8, p->int8_path[0] != 0);
  CHECK_EQ_INT(expect_int8, probe_best_int8(p, NULL) > 0);
  for (uint32_t t = 1; t <= p->max_threads; t++)
    CHECK(expect_int8 ? (isfinite(p->int8_ops[t]) && p->int8_ops[t] > 1e6) : p->int8_ops[t] == 0);
#if defined(__x86_64__)
  if (machine_has_flag(m, "avx512f")) CHECK_STR(p->f32_path, "avx512f");
  else if (machine_has_flag(m, "avx2") && machine_has_flag(m, "fma")) CHECK_STR(p->f32_path, "avx2+fma");
#endif
}

static void test_read_bw_of(void) {
  size_t n = 8u << 20;
  unsigned char *buf = malloc(n + 300);
  CHECK(buf != NULL);
  if (!buf) return;
  for (size_t i = 0; i < n + 300; i++) buf[i] = (unsigned char)(i * 131u >> 3);
  double bw[4] = {0, 0, 0, 0};
  struct tm_err err = {{0}};
  /* an unaligned start on purpose: the reader aligns inside the buffer */
  int rc = machine_read_bw_of(buf + 3, n + 200, 3, 2, bw, &err);
  CHECK_MSG(rc == 0, "machine_read_bw_of: %s", err.msg);
  for (int t = 1; t <= 3; t++) CHECK_MSG(sane_bw(bw[t]), "%d threads: %g B/s", t, bw[t]);
  bool same = true;
  for (size_t i = 0; i < n + 300; i++) same &= buf[i] == (unsigned char)(i * 131u >> 3);
  CHECK_MSG(same, "the buffer was written");
  CHECK(machine_read_bw_of(NULL, n, 1, 1, bw, &err) == -1);
  CHECK(machine_read_bw_of(buf, 100, 1, 1, bw, &err) == -1);
  CHECK(machine_read_bw_of(buf, n, 0, 1, bw, &err) == -1);
  CHECK(machine_read_bw_of(buf, n, PROBE_MAX_THREADS + 1, 1, bw, &err) == -1);
  free(buf);
}

/* A held buffer read at one thread count at a time, several times: rounded
 * down to 2 MiB, first touched (every byte written), sane figures; what it
 * refuses; closing an empty one is harmless. */
static void test_bw_buffer(void) {
  struct machine_bw_buffer b;
  struct tm_err err = {{0}};
  CHECK_MSG(machine_bw_buffer_open(&b, (16u << 20) + 12345, 2, &err) == 0, "%s", err.msg);
  CHECK(b.base != NULL && b.bytes == 16u << 20);
  if (b.base) {
    bool touched = true;
    for (uint64_t i = 0; i < b.bytes; i += 4096) touched &= b.base[i] != 0;
    CHECK_MSG(touched, "every page first-touched");
    for (int rep = 0; rep < 2; rep++)
      for (uint32_t t = 1; t <= 2; t++) {
        double bw = -1;
        CHECK_MSG(machine_read_bw_of_at(b.base, b.bytes, t, 2, &bw, &err) == 0, "%s", err.msg);
        CHECK_MSG(sane_bw(bw), "%u threads: %g B/s", t, bw);
      }
    double bw = -1;
    CHECK(machine_read_bw_of_at(b.base, b.bytes, 0, 1, &bw, &err) == -1 && bw == -1);
    CHECK(machine_read_bw_of_at(b.base, b.bytes, PROBE_MAX_THREADS + 1, 1, &bw, &err) == -1);
    CHECK(machine_read_bw_of_at(NULL, b.bytes, 1, 1, &bw, &err) == -1);
  }
  machine_bw_buffer_close(&b);
  CHECK(b.base == NULL && b.bytes == 0);
  machine_bw_buffer_close(&b); /* empty: nothing to unmap */
  CHECK(machine_bw_buffer_open(&b, 1u << 20, 1, &err) == -1 && b.base == NULL);
  CHECK_CONTAINS(err.msg, "2 MiB");
  CHECK(machine_bw_buffer_open(&b, 16u << 20, 0, &err) == -1 && b.base == NULL);
}

/* The probe's measurement again on a fresh buffer: sane per thread count,
 * and what it refuses. */
static void test_read_bw_fresh(void) {
  double bw[4] = {0, 0, 0, 0};
  struct tm_err err = {{0}};
  int rc = machine_read_bw_fresh((16u << 20) + 12345, 3, 2, bw, &err);
  CHECK_MSG(rc == 0, "machine_read_bw_fresh: %s", err.msg);
  for (int t = 1; t <= 3; t++) CHECK_MSG(sane_bw(bw[t]), "%d threads: %g B/s", t, bw[t]);
  CHECK(machine_read_bw_fresh(1u << 20, 1, 1, bw, &err) == -1); /* under 2 MiB */
  CHECK_CONTAINS(err.msg, "2 MiB");
  CHECK(machine_read_bw_fresh(16u << 20, 0, 1, bw, &err) == -1);
  CHECK(machine_read_bw_fresh(16u << 20, PROBE_MAX_THREADS + 1, 1, bw, &err) == -1);
  CHECK_CONTAINS(err.msg, "threads");
}

static void test_threads_option(void) {
  struct machine_probe p;
  struct probe_options o = {1, true};
  struct tm_err err = {{0}};
  CHECK_EQ_INT(probe_run_opts(&p, &o, NULL, NULL, &err), 0);
  CHECK_EQ_INT(p.max_threads, 1);
  CHECK(p.read_bw_bytes_s[1] > 0);
  CHECK(p.read_bw_bytes_s[2] == 0);
  o.max_threads = PROBE_MAX_THREADS + 1;
  CHECK_EQ_INT(probe_run_opts(&p, &o, NULL, NULL, &err), -1);
  CHECK_CONTAINS(err.msg, "threads");
}

static void check_equal(const struct machine_probe *a, const struct machine_probe *b) {
  CHECK_STR(a->info.cpu_model, b->info.cpu_model);
  CHECK_STR(a->info.arch, b->info.arch);
  CHECK_STR(a->info.os, b->info.os);
  CHECK_EQ_INT(a->info.cpus, b->info.cpus);
  CHECK_EQ_U64(a->info.memory_bytes, b->info.memory_bytes);
  CHECK_EQ_U64(a->info.memory_available_bytes, b->info.memory_available_bytes);
  CHECK_EQ_U64(a->info.llc_bytes, b->info.llc_bytes);
  CHECK_EQ_INT(a->info.n_flags, b->info.n_flags);
  for (uint32_t i = 0; i < a->info.n_flags && i < b->info.n_flags; i++)
    CHECK_STR(a->info.flags[i], b->info.flags[i]);
  CHECK_EQ_INT(a->quick, b->quick);
  CHECK_STR(a->measured_at, b->measured_at);
  CHECK_EQ_INT(a->max_threads, b->max_threads);
  CHECK_EQ_U64(a->buffer_bytes, b->buffer_bytes);
  CHECK_STR(a->mem_path, b->mem_path);
  CHECK_STR(a->read_loop, b->read_loop);
  CHECK_STR(a->f32_path, b->f32_path);
  CHECK_STR(a->int8_path, b->int8_path);
  CHECK_STR(a->int8_tile_path, b->int8_tile_path);
  CHECK_EQ_INT(a->tiles_probed, b->tiles_probed);
  for (uint32_t t = 0; t <= PROBE_MAX_THREADS; t++) {
    CHECK_MSG(a->int8_tile_ops[t] == b->int8_tile_ops[t], "int8 tile[%u]", t);
    CHECK_MSG(a->read_bw_bytes_s[t] == b->read_bw_bytes_s[t], "read[%u]", t);
    CHECK_MSG(a->copy_bw_bytes_s[t] == b->copy_bw_bytes_s[t], "copy[%u]", t);
    CHECK_MSG(a->f32_flops[t] == b->f32_flops[t], "f32[%u]", t);
    CHECK_MSG(a->int8_ops[t] == b->int8_ops[t], "int8[%u]", t);
  }
  CHECK_EQ_INT(a->thermal.readable, b->thermal.readable);
  CHECK_EQ_INT(a->thermal.n_temps, b->thermal.n_temps);
  for (uint32_t i = 0; i < a->thermal.n_temps && i < b->thermal.n_temps; i++) {
    CHECK_STR(a->thermal.temps[i].name, b->thermal.temps[i].name);
    CHECK(a->thermal.temps[i].celsius == b->thermal.temps[i].celsius);
  }
  CHECK_EQ_INT(a->thermal.n_freqs, b->thermal.n_freqs);
  for (uint32_t i = 0; i < a->thermal.n_freqs && i < b->thermal.n_freqs; i++)
    CHECK(a->thermal.freq_mhz[i] == b->thermal.freq_mhz[i]);
}

/* A synthetic probe with awkward values (thermal readings, no int8 path),
 * built in zeroed memory so that memcmp equality is meaningful too. */
static void make_synthetic(struct machine_probe *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->info.cpu_model, sizeof p->info.cpu_model, "Test \"CPU\" \\ 9000");
  snprintf(p->info.arch, sizeof p->info.arch, "aarch64");
  snprintf(p->info.os, sizeof p->info.os, "Linux 6.1 (Test OS)");
  p->info.cpus = 3;
  p->info.memory_bytes = 17179869184ull;
  p->info.memory_available_bytes = 1234567890123ull % 17179869184ull;
  p->info.llc_bytes = 0;
  p->info.n_flags = 2;
  snprintf(p->info.flags[0], sizeof p->info.flags[0], "neon");
  snprintf(p->info.flags[1], sizeof p->info.flags[1], "sve");
  p->thermal.readable = true;
  p->thermal.n_temps = 1;
  snprintf(p->thermal.temps[0].name, sizeof p->thermal.temps[0].name, "soc");
  p->thermal.temps[0].celsius = 47.123;
  p->thermal.n_freqs = 3;
  p->thermal.freq_mhz[0] = 1800, p->thermal.freq_mhz[1] = 2400.5, p->thermal.freq_mhz[2] = 0.1;
  p->quick = false;
  snprintf(p->measured_at, sizeof p->measured_at, "2025-06-01T12:34:56Z");
  p->max_threads = 3;
  p->buffer_bytes = 1ull << 30;
  snprintf(p->mem_path, sizeof p->mem_path, "neon");
  snprintf(p->f32_path, sizeof p->f32_path, "neon");
  for (uint32_t t = 1; t <= 3; t++) {
    p->read_bw_bytes_s[t] = 1e10 * t / 3.0;
    p->copy_bw_bytes_s[t] = 7.77e9 + t;
    p->f32_flops[t] = 1.0 / 3.0 * 1e11 * t;
  }
  p->tiles_probed = true; /* a probe of this version: tiles measured, none found */
}

static void test_json_round_trip(void) {
  struct machine_probe a, b;
  make_synthetic(&a);
  struct tm_err err = {{0}};
  json_t *j = probe_to_json(&a);
  CHECK(j != NULL);
  if (!j) return;
  CHECK(json_is_null(json_object_get(j, "compute_int8_ops")));
  CHECK(json_is_null(json_object_get(j, "int8_path")));
  CHECK_EQ_INT(json_array_size(json_object_get(j, "compute_int8_by_threads")), 0);
  CHECK_EQ_INT(json_array_size(json_object_get(j, "read_bandwidth_by_threads")), 3);
  CHECK_NEAR(json_real_value(json_object_get(j, "read_bandwidth_bytes_s")), 1e10, 1e-3);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "read_bandwidth_threads")), 3);
  CHECK(json_is_real(json_object_get(j, "copy_bandwidth_read_plus_write_bytes_s")));
  json_t *m = json_object_get(j, "machine");
  CHECK_EQ_INT(json_integer_value(json_object_get(m, "cores")), 3);
  /* an unknown LLC is null, as the identity record has it (was 0) */
  CHECK(json_is_null(json_object_get(m, "llc_bytes")));
  CHECK(json_is_true(json_object_get(json_object_get(j, "thermal"), "readable")));

  /* In memory, and through text (as the cache stores it). */
  CHECK_EQ_INT(probe_from_json(&b, j, &err), 0);
  check_equal(&a, &b);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  char *text = json_dumps(j, JSON_INDENT(2));
  json_decref(j);
  json_error_t jerr;
  json_t *j2 = json_loads(text, 0, &jerr);
  free(text);
  CHECK(j2 != NULL);
  CHECK_EQ_INT(probe_from_json(&b, j2, &err), 0);
  json_decref(j2);
  check_equal(&a, &b);
  CHECK(memcmp(&a, &b, sizeof a) == 0);

  /* The real probe too (int8 present on most machines). */
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  j = probe_to_json(q);
  CHECK_EQ_INT(probe_from_json(&b, j, &err), 0);
  CHECK(json_is_true(json_object_get(j, "quick")));
  json_decref(j);
  check_equal(q, &b);
}

/* The int8 tile figures go through JSON; a file from before they were
 * measured reads as tiles_probed = false, and on a CPU with AMX the cache
 * is not reused (its compute lacks what the CPU offers). */
static void test_json_tiles(void) {
  struct machine_probe a, b;
  make_synthetic(&a);
  snprintf(a.int8_tile_path, sizeof a.int8_tile_path, "amx_int8");
  for (uint32_t t = 1; t <= 3; t++) a.int8_tile_ops[t] = 6.5e12 * t + 0.25;
  struct tm_err err = {{0}};
  json_t *j = probe_to_json(&a);
  CHECK(j != NULL);
  if (!j) return;
  CHECK_STR(json_string_value(json_object_get(j, "int8_tile_path")), "amx_int8");
  CHECK_NEAR(json_real_value(json_object_get(j, "compute_int8_tile_ops")), 3 * 6.5e12 + 0.25, 1e-3);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "compute_int8_tile_threads")), 3);
  CHECK_EQ_INT(probe_from_json(&b, j, &err), 0);
  check_equal(&a, &b);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  CHECK_NEAR(probe_best_int8_tile(&b, NULL), 3 * 6.5e12 + 0.25, 1e-3);
  /* a bad figure is named */
  json_t *bad = json_deep_copy(j);
  json_object_set_new(json_array_get(json_object_get(bad, "compute_int8_tile_by_threads"), 1),
                      "ops_s", json_string("fast"));
  CHECK_EQ_INT(probe_from_json(&b, bad, &err), -1);
  CHECK_CONTAINS(err.msg, "compute_int8_tile_by_threads[1].ops_s");
  json_decref(bad);
  /* written before the key existed */
  json_object_del(j, "compute_int8_tile_by_threads");
  json_object_del(j, "compute_int8_tile_ops");
  json_object_del(j, "compute_int8_tile_threads");
  json_object_del(j, "int8_tile_path");
  CHECK_EQ_INT(probe_from_json(&b, j, &err), 0);
  CHECK(!b.tiles_probed);
  CHECK_STR(b.int8_tile_path, "");
  CHECK(probe_best_int8_tile(&b, NULL) == 0);
  json_decref(j);

  /* The real quick probe, written as an older file: reused unless this CPU
   * has AMX int8. */
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  CHECK(q->tiles_probed);
  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  j = probe_to_json(q);
  CHECK(j != NULL);
  if (!j) return;
  json_object_del(j, "compute_int8_tile_by_threads");
  CHECK_EQ_INT(json_dump_file(j, path, 0), 0);
  json_decref(j);
  memset(&err, 0, sizeof err);
  int r = probe_load_cached(&b, &err);
  if (machine_has_flag(&q->info, "amx_int8")) {
    CHECK_EQ_INT(r, -1);
    CHECK_CONTAINS(err.msg, "predates the int8 tile");
  } else {
    CHECK_EQ_INT(r, 1);
  }
  remove(path);
}

/* The tile loop does the arithmetic it is timed for (it runs only where the
 * CPU and OS give this process AMX): each of its 4 products per iteration
 * adds, to each of 256 elements, the seed times the sum of a 64-weight row
 * of +1 and -1 that sums to 2. */
static void test_tile_loop_arithmetic(void) {
  struct kernels k;
  kernels_select(&k);
  CHECK(k.int8_tile_path != NULL);
  if (!k.tile_dot) {
    CHECK_STR(k.int8_tile_path, "");
    return;
  }
  CHECK_STR(k.int8_tile_path, "amx_int8");
  for (int seed = -3; seed <= 5; seed += 4)
    for (uint64_t iters = 1; iters <= 1001; iters += 500)
      CHECK_MSG(k.tile_dot(iters, (int8_t)seed) == (int64_t)4 * 256 * 2 * seed * (int64_t)iters,
                "tile loop, %llu iterations, seed %d: %lld", (unsigned long long)iters, seed,
                (long long)k.tile_dot(iters, (int8_t)seed));
}

/* Each malformed document fails with a message naming the bad field. */
static void test_json_malformed(void) {
  struct machine_probe a, b;
  make_synthetic(&a);
  struct {
    const char *key;
    json_t *value; /* NULL = delete the key */
    const char *expect;
  } cases[] = {
      {"max_threads", json_string("2"), "max_threads"},
      {"max_threads", json_integer(0), "max_threads"},
      {"max_threads", json_integer(PROBE_MAX_THREADS + 1), "max_threads"},
      {"measured_at", NULL, "measured_at"},
      {"f32_path", json_integer(3), "f32_path"},
      {"read_bandwidth_by_threads", json_object(), "read_bandwidth_by_threads"},
      {"read_bandwidth_by_threads", json_array(), "read_bandwidth_by_threads"},
      {"machine", json_string("x"), "machine"},
      {"thermal", json_array(), "thermal"},
      {"quick", json_integer(1), "quick"},
      {"schema", json_string("tokmeter.probe/99"), "schema"},
      {"schema", json_integer(1), "schema"},
      {"read_loop", json_integer(2048), "read_loop"},
      {"read_loop", json_string("quarters, prefetch 1024/2048/none by pass, and a tail far "
                                "longer than the field"), "read_loop"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *j = probe_to_json(&a);
    if (cases[i].value)
      json_object_set_new(j, cases[i].key, cases[i].value);
    else
      json_object_del(j, cases[i].key);
    struct tm_err err = {{0}};
    CHECK_MSG(probe_from_json(&b, j, &err) == -1, "case %zu (%s) accepted", i, cases[i].key);
    CHECK_CONTAINS(err.msg, cases[i].expect);
    json_decref(j);
  }
  /* Nested: a thread count past max_threads, a negative rate, a long string. */
  json_t *j = probe_to_json(&a);
  json_t *e = json_array_get(json_object_get(j, "compute_f32_by_threads"), 0);
  json_object_set_new(e, "threads", json_integer(4));
  struct tm_err err = {{0}};
  CHECK_EQ_INT(probe_from_json(&b, j, &err), -1);
  CHECK_CONTAINS(err.msg, "compute_f32_by_threads[0].threads");
  json_object_set_new(e, "threads", json_integer(1));
  json_object_set_new(e, "flops", json_real(-1));
  CHECK_EQ_INT(probe_from_json(&b, j, &err), -1);
  CHECK_CONTAINS(err.msg, "compute_f32_by_threads[0].flops");
  json_object_set_new(e, "flops", json_real(1));
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  json_object_set_new(json_object_get(j, "machine"), "cpu", json_string(big));
  CHECK_EQ_INT(probe_from_json(&b, j, &err), -1);
  CHECK_CONTAINS(err.msg, "machine.cpu");
  json_decref(j);
  CHECK_EQ_INT(probe_from_json(&b, NULL, &err), -1);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void test_cache_save_load(void) {
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  struct tm_err err = {{0}};
  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  CHECK_CONTAINS(path, getenv("TOKMETER_CACHE_DIR"));
  CHECK_CONTAINS(path, "/probe-");
  remove(path);

  struct machine_probe b;
  CHECK_EQ_INT(probe_load_cached(&b, &err), 0); /* nothing cached yet */
  CHECK_EQ_INT(probe_save_cached(q, &err), 0);
  CHECK_EQ_INT(probe_load_cached(&b, &err), 1);
  check_equal(q, &b);

  /* probe_get with the quick environment returns the cached result as is. */
  setenv("TOKMETER_PROBE_QUICK", "1", 1);
  CHECK_EQ_INT(probe_get(&b, false, NULL, NULL, &err), 0);
  CHECK_STR(err.msg, "");
  CHECK_STR(b.measured_at, q->measured_at);
  CHECK(b.read_bw_bytes_s[1] == q->read_bw_bytes_s[1]);
  unsetenv("TOKMETER_PROBE_QUICK");
  remove(path);
}

static void test_cache_corrupt(void) {
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  struct tm_err err = {{0}};
  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  struct machine_probe b;
  const char *bad[] = {"", "{", "\x01\x02garbage", "[1,2,3]", "{\"max_threads\": 2}",
                       "{\"schema\":\"tokmeter.probe/1\",\"max_threads\":\"two\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_text(path, bad[i]);
    memset(&err, 0, sizeof err);
    CHECK_MSG(probe_load_cached(&b, &err) == -1, "corrupt case %zu loaded", i);
    CHECK_CONTAINS(err.msg, "corrupt probe cache");
    CHECK_CONTAINS(err.msg, path);
  }
  /* probe_get measures again past a corrupt file, says so, and repairs it. */
  setenv("TOKMETER_PROBE_QUICK", "1", 1);
  CHECK_EQ_INT(probe_get(&b, false, NULL, NULL, &err), 0);
  CHECK_CONTAINS(err.msg, "ignored corrupt probe cache");
  CHECK(b.quick);
  CHECK(b.read_bw_bytes_s[1] > 0);
  CHECK_EQ_INT(probe_load_cached(&b, &err), 1);
  unsetenv("TOKMETER_PROBE_QUICK");
  remove(path);
}

/* A cache measured with another read loop (or before the loop was recorded)
 * is not reused: its bandwidth is not comparable. probe_get measures again,
 * says why, and replaces it. */
static void test_cache_other_read_loop(void) {
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  CHECK_STR(q->read_loop, PROBE_READ_LOOP);
  struct tm_err err = {{0}};
  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  struct machine_probe b;
  const char *loops[] = {NULL, "quarters, prefetch 2048 only"}; /* NULL: key absent */
  for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++) {
    json_t *j = probe_to_json(q);
    CHECK(j != NULL);
    if (!j) return;
    if (loops[i])
      json_object_set_new(j, "read_loop", json_string(loops[i]));
    else
      json_object_del(j, "read_loop");
    CHECK_EQ_INT(json_dump_file(j, path, 0), 0);
    json_decref(j);
    memset(&err, 0, sizeof err);
    CHECK_MSG(probe_load_cached(&b, &err) == -1, "read loop case %zu reused", i);
    CHECK_CONTAINS(err.msg, "older read loop");
    CHECK_CONTAINS(err.msg, path);
  }
  setenv("TOKMETER_PROBE_QUICK", "1", 1);
  CHECK_EQ_INT(probe_get(&b, false, NULL, NULL, &err), 0);
  CHECK_CONTAINS(err.msg, "ignored probe cache");
  CHECK_CONTAINS(err.msg, "older read loop");
  CHECK_STR(b.read_loop, PROBE_READ_LOOP);
  CHECK_EQ_INT(probe_load_cached(&b, &err), 1);
  unsetenv("TOKMETER_PROBE_QUICK");
  remove(path);
}

/* probe_get's message holds both of its reasons, the ignored cache file and
 * the failed save, even in a long cache directory: the note was built in 600
 * bytes and copied into err.msg's 512 (gcc: -Wformat-truncation), so a first
 * reason near 512 bytes pushed the second one out. Here the cache file is a
 * directory holding a file: it can be neither read nor replaced. */
static void test_cache_note_long_path(void) {
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  char old[1024], dir[2048], path[4200], inside[4300];
  snprintf(old, sizeof old, "%s", getenv("TOKMETER_CACHE_DIR"));
  char part[201];
  memset(part, 'd', 200);
  part[200] = 0;
  snprintf(dir, sizeof dir, "%s/%s/%s", old, part, part);
  setenv("TOKMETER_CACHE_DIR", dir, 1);
  struct tm_err err = {{0}};
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0); /* makes dir */
  CHECK_EQ_INT(mkdir(path, 0755), 0);
  snprintf(inside, sizeof inside, "%s/x", path);
  write_text(inside, "x");
  setenv("TOKMETER_PROBE_QUICK", "1", 1);
  struct machine_probe b;
  CHECK_EQ_INT(probe_get(&b, false, NULL, NULL, &err), 0);
  CHECK_CONTAINS(err.msg, "ignored corrupt probe cache");
  CHECK_CONTAINS(err.msg, "; not saved: ");
  unsetenv("TOKMETER_PROBE_QUICK");
  setenv("TOKMETER_CACHE_DIR", old, 1);
  remove(inside);
  rmdir(path);
}

/* A narrower probe does not replace a fuller cache (`probe -t 1` or --quick
 * after a full probe once did, and the next `ceiling` probed again). */
static void test_replaces_cached(void) {
  struct machine_probe *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  CHECK(a && b);
  if (!a || !b) return;
  a->max_threads = 1, b->max_threads = 2; /* a new, b cached; both full */
  CHECK(!probe_replaces_cached(a, b));
  CHECK(probe_replaces_cached(b, a));
  b->max_threads = 1;
  CHECK(probe_replaces_cached(a, b)); /* the same thread counts: the newer wins */
  a->quick = true;                    /* quick never replaces full ... */
  a->max_threads = 4;
  CHECK(!probe_replaces_cached(a, b));
  CHECK(probe_replaces_cached(b, a)); /* ... full replaces quick, even with fewer threads */
  b->quick = true;
  CHECK(probe_replaces_cached(a, b));
  CHECK(!probe_replaces_cached(b, a));
  free(a);
  free(b);
}

/* A cache measured at more threads than the machine has CPUs (`probe -t 64`
 * on 2 CPUs was once accepted) is not reused: probe_get measures again. */
static void test_cache_more_threads_than_cpus(void) {
  const struct machine_probe *q = get_quick();
  if (!have_quick) return;
  struct tm_err err = {{0}};
  char path[4200];
  CHECK_EQ_INT(probe_cache_path(&q->info, path, sizeof path, &err), 0);
  struct machine_probe *p = malloc(sizeof *p);
  CHECK(p != NULL);
  if (!p) return;
  *p = *q;
  uint32_t n = q->info.cpus + 1;
  if (n > PROBE_MAX_THREADS) n = PROBE_MAX_THREADS;
  for (uint32_t t = q->max_threads + 1; t <= n; t++) {
    p->read_bw_bytes_s[t] = p->copy_bw_bytes_s[t] = p->f32_flops[t] = 1e9;
    p->int8_ops[t] = q->int8_path[0] ? 1e9 : 0;
  }
  p->max_threads = n;
  CHECK_EQ_INT(probe_save_cached(p, &err), 0);
  CHECK_EQ_INT(probe_load_cached(p, &err), -1);
  CHECK_CONTAINS(err.msg, "more than this machine's");
  setenv("TOKMETER_PROBE_QUICK", "1", 1);
  CHECK_EQ_INT(probe_get(p, false, NULL, NULL, &err), 0);
  CHECK_CONTAINS(err.msg, "ignored probe cache");
  CHECK(p->max_threads <= q->info.cpus);
  unsetenv("TOKMETER_PROBE_QUICK");
  free(p);
  remove(path);
}

void tm_run_tests(void) {
  TM_RUN(test_read_loop_reads_every_word);
  TM_RUN(test_quick_probe_figures);
  TM_RUN(test_threads_option);
  TM_RUN(test_read_bw_of);
  TM_RUN(test_read_bw_fresh);
  TM_RUN(test_bw_buffer);
  TM_RUN(test_json_round_trip);
  TM_RUN(test_json_tiles);
  TM_RUN(test_tile_loop_arithmetic);
  TM_RUN(test_json_malformed);
  TM_RUN(test_cache_save_load);
  TM_RUN(test_cache_corrupt);
  TM_RUN(test_cache_other_read_loop);
  TM_RUN(test_cache_note_long_path);
  TM_RUN(test_replaces_cached);
  TM_RUN(test_cache_more_threads_than_cpus);
}
