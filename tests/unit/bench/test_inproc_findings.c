/* Tests for src/bench/inproc_findings.c and findings.c: the in-process
 * bench's findings drawn from a state made by hand (two models, rows at 1
 * and 2 threads), so each threshold is checked on both of its sides without
 * an engine, a probe or a CPU of a kind: the practical range (75%), the
 * bandwidth spread (5% said, 20% a warning), steal (1%), other processes,
 * a rate above its ceiling, the bytes comparison, rule 5's blank decode;
 * and the findings' order, JSON and brief length. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/inproc.h"
#include "tm_test.h"

/* A state of two models (Q4_0 and Q8_0) run at 1 and 2 threads, pp512 and
 * tg128 at depth 0, every decode at `pct2` % of its ceiling at 2 threads
 * and 85% at 1; readings between repetitions lo..hi GB/s. */
struct fixture {
  struct eb_opts o;
  struct eb_state s;
  struct machine_probe probe;
  struct eb_row rows[8];
};

static void add_row(struct fixture *f, size_t model, uint32_t t, enum engine_bench_kind kind,
                    uint32_t tokens, double rate, double ceiling) {
  struct eb_row *r = &f->rows[f->s.n_rows++];
  memset(r, 0, sizeof *r);
  r->model = model;
  r->threads = t;
  r->cfg.kind = kind;
  r->cfg.tokens = tokens;
  r->cfg.reps = 3;
  r->tok_s.n = 3;
  r->tok_s.median = rate;
  r->tok_s.sd = 1;
  r->ceiling_tok_s = ceiling;
  r->percent = 100 * rate / ceiling;
  r->steal_share = 0;
  r->other_cpus = 0;
  r->bw = r->bw_lo = r->bw_hi = r->bw_first = r->bw_last = NAN;
  if (kind == ENGINE_BENCH_TG) r->bw = r->bw_lo = r->bw_hi = 40e9 * t;
}

static void fixture_make(struct fixture *f, double pct2, uint32_t gen_tokens) {
  memset(f, 0, sizeof *f);
  f->o.threads[0] = 1;
  f->o.threads[1] = 2;
  f->o.n_threads = 2;
  f->o.prompt_tokens[0] = 512;
  f->o.n_prompt_tokens = 1;
  f->o.max_tokens[0] = gen_tokens;
  f->o.n_max_tokens = 1;
  f->o.n_depth = 1;
  eb_state_init(&f->s, &f->o, NULL);
  f->s.probe = &f->probe;
  f->probe.max_threads = 2;
  f->probe.read_bw_bytes_s[1] = 40e9;
  f->probe.read_bw_bytes_s[2] = 80e9;
  f->s.conclusions = json_array();
  f->s.rows = f->rows;
  f->s.n_models = 2;
  const char *names[2] = {"Q4_0", "Q8_0"};
  const double bytes[2] = {376e6, 633e6};
  for (size_t m = 0; m < 2; m++) {
    struct eb_model *em = &f->s.models[m];
    snprintf(em->short_label, sizeof em->short_label, "%s", names[m]);
    snprintf(em->kernel_path, sizeof em->kernel_path, "avx2");
    snprintf(em->best_path, sizeof em->best_path, "avx2");
    em->cost.weight_bytes_per_token = bytes[m];
    const double c1 = 40e9 / bytes[m], c2 = 80e9 / bytes[m];
    add_row(f, m, 1, ENGINE_BENCH_PP, 512, 300, 1000);
    add_row(f, m, 1, ENGINE_BENCH_TG, gen_tokens, 0.85 * c1, c1);
    add_row(f, m, 2, ENGINE_BENCH_PP, 512, 590, 2000);
    add_row(f, m, 2, ENGINE_BENCH_TG, gen_tokens, pct2 / 100 * c2, c2);
  }
}

static void fixture_free(struct fixture *f) {
  f->s.probe = NULL; /* not malloc'd here */
  f->s.rows = NULL;
  eb_state_free(&f->s);
}

static size_t count_code(const struct bench_findings *l, const char *code) {
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) n += strcmp(l->v[i].code, code) == 0;
  return n;
}

static void test_practical_range_threshold(void) {
  struct fixture f;
  /* 74% at 2 threads: below the 75-85% practical range, a warning */
  fixture_make(&f, 74, 128);
  eb_conclude(&f.s);
  const struct bench_finding *b = bench_findings_find(&f.s.findings, "decode_below_practical", "Q4_0");
  CHECK(b != NULL);
  if (b) {
    CHECK_EQ_INT(b->severity, BENCH_WARNING);
    CHECK_NEAR(bench_finding_get(b, "decode_percent_of_ceiling"), 74, 1e-9);
    CHECK_EQ_INT(b->config.threads, 2);
    CHECK_STR(b->config.test, "tg128");
  }
  CHECK(bench_findings_find(&f.s.findings, "decode_near_ceiling", NULL) == NULL);
  fixture_free(&f);
  /* 76%: within it, information only */
  fixture_make(&f, 76, 128);
  eb_conclude(&f.s);
  CHECK(bench_findings_find(&f.s.findings, "decode_below_practical", NULL) == NULL);
  const struct bench_finding *n = bench_findings_find(&f.s.findings, "decode_near_ceiling", "Q8_0");
  CHECK(n != NULL);
  if (n) CHECK_EQ_INT(n->severity, BENCH_INFO);
  /* scaling from 1 to 2 threads: figures as measured */
  const struct bench_finding *sc = bench_findings_find(&f.s.findings, "thread_scaling", "Q4_0");
  CHECK(sc != NULL);
  if (sc) {
    CHECK_NEAR(bench_finding_get(sc, "prefill_speedup"), 590.0 / 300.0, 1e-9);
    CHECK_NEAR(bench_finding_get(sc, "decode_speedup"), 2 * 0.76 / 0.85, 1e-9);
    CHECK_NEAR(bench_finding_get(sc, "read_bandwidth_speedup"), 2, 1e-9);
  }
  /* the pair: Q4_0 reads 41% fewer bytes; decode's change is the rates' */
  const struct bench_finding *fb = bench_findings_find(&f.s.findings, "fewer_bytes", NULL);
  CHECK(fb != NULL);
  if (fb) {
    CHECK_NEAR(bench_finding_get(fb, "bytes_fewer_fraction"), 1 - 376.0 / 633.0, 1e-9);
    CHECK_NEAR(bench_finding_get(fb, "decode_change_fraction"), 633.0 / 376.0 - 1, 1e-9);
  }
  /* one sentence per finding, in --json's conclusions too */
  CHECK_EQ_INT(json_array_size(f.s.conclusions), f.s.findings.n);
  for (size_t i = 0; i < f.s.findings.n; i++) {
    CHECK(f.s.findings.v[i].text[0] != 0);
    CHECK(f.s.findings.v[i].brief[0] != 0);
    CHECK(strlen(f.s.findings.v[i].brief) <= BENCH_FINDING_BRIEF_MAX);
  }
  fixture_free(&f);
}

static void test_bandwidth_spread_thresholds(void) {
  struct fixture f;
  fixture_make(&f, 80, 128);
  /* 4% apart: noise, not said; 10%: said (info); 25%: a warning */
  f.rows[1].bw_lo = 40e9, f.rows[1].bw_hi = 41.6e9;
  f.rows[3].bw_lo = 80e9, f.rows[3].bw_hi = 88e9;
  f.rows[7].bw_lo = 80e9, f.rows[7].bw_hi = 100e9;
  eb_conclude(&f.s);
  CHECK_EQ_INT(count_code(&f.s.findings, "bandwidth_moved"), 2);
  size_t info = 0, warn = 0;
  for (size_t i = 0; i < f.s.findings.n; i++) {
    const struct bench_finding *x = &f.s.findings.v[i];
    if (strcmp(x->code, "bandwidth_moved")) continue;
    info += x->severity == BENCH_INFO;
    warn += x->severity == BENCH_WARNING;
    if (x->severity == BENCH_WARNING) {
      CHECK_STR(x->config.model, "Q8_0");
      CHECK_NEAR(bench_finding_get(x, "read_bandwidth_highest_bytes_s"), 100e9, 1);
    }
  }
  CHECK_EQ_INT(info, 1);
  CHECK_EQ_INT(warn, 1);
  fixture_free(&f);
}

static void test_steal_other_processes_above_ceiling(void) {
  struct fixture f;
  fixture_make(&f, 80, 128);
  f.rows[2].steal_share = 0.005; /* 0.5%: not said */
  f.rows[3].steal_share = 0.03;  /* 3% at 2 threads: said */
  f.rows[4].other_cpus = 1.5;    /* other work on 1.5 CPUs at 1 thread */
  f.rows[7].tok_s.median = 1.10 * f.rows[7].ceiling_tok_s; /* 110% */
  f.rows[7].percent = 110;
  eb_conclude(&f.s);
  const struct bench_finding *st = bench_findings_find(&f.s.findings, "steal", NULL);
  CHECK(st != NULL);
  CHECK_EQ_INT(count_code(&f.s.findings, "steal"), 1);
  if (st) {
    CHECK_EQ_INT(st->config.threads, 2);
    CHECK_NEAR(bench_finding_get(st, "cpu_steal_share"), 0.03, 1e-12);
  }
  const struct bench_finding *op = bench_findings_find(&f.s.findings, "other_processes", NULL);
  CHECK(op != NULL);
  if (op) CHECK_EQ_INT(op->severity, BENCH_PROBLEM);
  const struct bench_finding *ab = bench_findings_find(&f.s.findings, "above_ceiling", "Q8_0");
  CHECK(ab != NULL);
  if (ab) CHECK_NEAR(bench_finding_get(ab, "percent_of_ceiling"), 110, 1e-9);
  /* the order on a short screen: the problem first, then the warnings */
  size_t order[64];
  CHECK(f.s.findings.n <= 64);
  bench_findings_order(&f.s.findings, order);
  CHECK_STR(f.s.findings.v[order[0]].code, "other_processes");
  for (size_t i = 1; i < f.s.findings.n; i++)
    CHECK(f.s.findings.v[order[i - 1]].severity >= f.s.findings.v[order[i]].severity);
  fixture_free(&f);
}

static void test_blank_decode_uses_no_rate(void) {
  struct fixture f;
  /* tg8: no decode rate (rule 5); rows keep a ceiling, the rate is NAN */
  fixture_make(&f, 80, 8);
  for (size_t i = 0; i < f.s.n_rows; i++)
    if (f.rows[i].cfg.kind == ENGINE_BENCH_TG) f.rows[i].tok_s.median = f.rows[i].percent = NAN;
  eb_conclude(&f.s);
  CHECK(bench_findings_find(&f.s.findings, "decode_below_practical", NULL) == NULL);
  CHECK(bench_findings_find(&f.s.findings, "decode_near_ceiling", NULL) == NULL);
  CHECK(bench_findings_find(&f.s.findings, "prefill_share", "Q4_0") != NULL);
  const struct bench_finding *fb = bench_findings_find(&f.s.findings, "fewer_bytes", NULL);
  CHECK(fb != NULL);
  if (fb) CHECK(isnan(bench_finding_get(fb, "decode_change_fraction")));
  for (size_t i = 0; i < f.s.findings.n; i++)
    CHECK_MSG(!strstr(f.s.findings.v[i].text, "nan"), "a blank rate used: %s",
              f.s.findings.v[i].text);
  fixture_free(&f);
}

static void test_kernels_narrower(void) {
  struct fixture f;
  fixture_make(&f, 80, 128);
  snprintf(f.s.models[0].best_path, sizeof f.s.models[0].best_path, "avx512_vnni");
  snprintf(f.s.models[1].best_path, sizeof f.s.models[1].best_path, "avx512_vnni");
  eb_conclude(&f.s);
  /* once for the pair: the second model ran the same kernels */
  CHECK_EQ_INT(count_code(&f.s.findings, "kernels_narrower"), 1);
  fixture_free(&f);
}

static void test_findings_json_and_brief(void) {
  struct bench_findings l = {0};
  struct bench_finding *f = bench_findings_add(&l, "steal", BENCH_WARNING);
  CHECK(f != NULL);
  if (!f) return;
  f->config.threads = 2;
  bench_finding_figure(f, "cpu_steal_share", 0.03);
  bench_finding_figure(f, "unknown_bytes_s", NAN);
  /* a brief past the limit is cut, on a character boundary */
  char longer[300];
  memset(longer, 'x', sizeof longer);
  longer[BENCH_FINDING_BRIEF_MAX - 1] = '\0';
  bench_finding_brief(f, "%s\xc3\xa9tail", longer);
  CHECK_EQ_INT(strlen(f->brief), BENCH_FINDING_BRIEF_MAX - 1);
  bench_finding_text(f, "the whole sentence");
  json_t *j = bench_findings_json(&l);
  CHECK(j && json_array_size(j) == 1);
  json_t *o = json_array_get(j, 0);
  CHECK_STR(json_string_value(json_object_get(o, "code")), "steal");
  CHECK_STR(json_string_value(json_object_get(o, "severity")), "warning");
  json_t *cfg = json_object_get(o, "config");
  CHECK(json_is_object(cfg));
  CHECK_EQ_INT(json_integer_value(json_object_get(cfg, "threads")), 2);
  CHECK(json_is_null(json_object_get(cfg, "model")));
  CHECK(json_is_null(json_object_get(cfg, "depth")));
  json_t *figs = json_object_get(o, "figures");
  CHECK_NEAR(json_real_value(json_object_get(figs, "cpu_steal_share")), 0.03, 1e-15);
  CHECK(json_is_null(json_object_get(figs, "unknown_bytes_s")));
  CHECK_STR(json_string_value(json_object_get(o, "text")), "the whole sentence");
  json_decref(j);
  /* a finding about nothing in particular has a null config */
  bench_findings_add(&l, "fewer_bytes", BENCH_INFO);
  j = bench_findings_json(&l);
  CHECK(json_is_null(json_object_get(json_array_get(j, 1), "config")));
  json_decref(j);
  bench_findings_free(&l);
}

void tm_run_tests(void) {
  TM_RUN(test_practical_range_threshold);
  TM_RUN(test_bandwidth_spread_thresholds);
  TM_RUN(test_steal_other_processes_above_ceiling);
  TM_RUN(test_blank_decode_uses_no_rate);
  TM_RUN(test_kernels_narrower);
  TM_RUN(test_findings_json_and_brief);
}
