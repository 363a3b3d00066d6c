/* test_import: llama-bench JSON / JSONL (the real fixtures and hand-written
 * entries) -> records that results_load reads and series / ttft group like
 * in-process engine records; ceilings from a given bandwidth and from a
 * probe at the run's thread count; bad input refused with the entry and
 * field named; empty input is "no tests", not an error. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_llamabench.h"
#include "analysis/results.h"
#include "analysis/series.h"
#include "analysis/ttft.h"
#include "model/analysis.h"
#include "model/plan.h"
#include "model/shape.h"
#include "record/record.h"
#include "tm_test.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

/* Writes the records to a temp file and loads them back. */
static int reload(const struct import_out *out, const char *name, struct results *r) {
  const char *path = tm_tmpfile(name);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  for (size_t i = 0; i < out->n_lines; i++) {
    char *line = record_dump(out->lines[i]);
    if (line) fprintf(f, "%s\n", line);
    free(line);
  }
  fclose(f);
  struct tm_err err = {{0}};
  int rc = results_load(&path, 1, r, &err);
  if (rc) fprintf(stderr, "results_load: %s\n", err.msg);
  return rc;
}

static int import_text(const char *text, const struct import_opts *o, struct import_out *out,
                       struct tm_err *err) {
  return import_llamabench(text, strlen(text), o, out, err);
}

static const struct import_opts NO_CEILING = {.bandwidth_bytes_s = NAN, .compute_ops_s = NAN};

static void test_fixture_json(void) {
  size_t len = 0;
  char *text = slurp(tm_fixture("llama-bench/llama-bench-output.json"), &len);
  CHECK(text != NULL);
  if (!text) return;
  struct import_opts o = NO_CEILING;
  o.source = "llama-bench-output.json";
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_llamabench(text, len, &o, &out, &err), 0);
  free(text);
  CHECK_STR(out.format, "json");
  CHECK_EQ_INT(out.n_tests, 2);
  CHECK_EQ_INT(out.n_runs, 4);
  CHECK_EQ_INT(out.n_lines, 1 + 4 + 2 + 1);
  struct results r;
  CHECK_EQ_INT(reload(&out, "json.jsonl", &r), 0);
  CHECK_EQ_INT(r.n_inv, 1);
  if (r.n_inv == 1) {
    struct results_invocation *inv = &r.inv[0];
    CHECK(inv->identity != NULL);
    CHECK(inv->end != NULL);
    CHECK_EQ_INT(inv->n_runs, 4);
    CHECK_EQ_INT(inv->n_summaries, 2);
    CHECK_STR(json_path_str(inv->identity, "backend"), "llama-bench");
    CHECK_STR(json_path_str(inv->identity, "machine.cpu"), "AMD EPYC");
    CHECK(json_is_null(json_path(inv->identity, "machine.cores")));
    CHECK_STR(json_path_str(inv->identity, "runtime.build_commit"), "80fb11a");
    CHECK_STR(json_path_str(inv->identity, "model.type"), "Q4_0");
    CHECK_STR(json_path_str(inv->identity, "settings.imported.format"), "json");
    json_t *run0 = inv->runs[0], *run2 = inv->runs[2];
    CHECK_STR(json_path_str(run0, "backend"), "llama-bench");
    CHECK_STR(json_path_str(run0, "target"), "in-process");
    CHECK_STR(json_path_str(run0, "test"), "pp64");
    CHECK_STR(json_path_str(run0, "phase"), "prefill");
    CHECK_STR(json_path_str(run0, "model.arch"), "qwen3");
    CHECK_STR(json_path_str(run0, "time"), "2026-11-29T07:20:47Z");
    CHECK_EQ_INT(json_path_int(run0, "threads", -1), 2);
    CHECK_EQ_INT(json_path_int(run0, "depth", -1), 0);
    CHECK_EQ_INT(json_path_int(run0, "tokens", -1), 64);
    CHECK_EQ_INT(json_path_int(run0, "index", -1), 0);
    CHECK(json_is_false(json_path(run0, "warmup")));
    CHECK_NEAR(json_path_num(run0, "ms"), 232.091, 1e-9);
    /* 64 tokens / 0.232091214 s; llama-bench printed 275.754 */
    CHECK_NEAR(json_path_num(run0, "rate_tok_s"), 64 / 0.232091214, 1e-6);
    CHECK_NEAR(json_path_num(run0, "rate_tok_s"), 275.754, 1e-3);
    CHECK(json_is_null(json_path(run0, "ceiling")));
    CHECK_EQ_INT(json_path_int(run0, "settings.n_ubatch", -1), 512);
    CHECK_STR(json_path_str(run2, "test"), "tg32");
    CHECK_STR(json_path_str(run2, "phase"), "decode");
    CHECK_NEAR(json_path_num(run2, "rate_tok_s"), 32 / 0.448506887, 1e-6);
    json_t *s1 = inv->summaries[1];
    CHECK_EQ_INT(json_path_int(s1, "n", -1), 2);
    CHECK_NEAR(json_path_num(s1, "rate_tok_s.mean"),
               (32 / 0.448506887 + 32 / 0.458832896) / 2, 1e-6);
    CHECK_NEAR(json_path_num(s1, "reported.avg_ts"), 70.545006, 1e-9);
    CHECK_NEAR(json_path_num(s1, "mean_depth"), 15.5, 1e-12);
    CHECK_EQ_INT(json_path_int(inv->end, "runs", -1), 4);

    /* series: the same keys as engine records would have */
    struct series_set set;
    CHECK_EQ_INT(series_extract(&r, &set, &err), 0);
    const struct series *pp =
        series_find(&set, "llama-bench | qwen3 0.6B Q4_0 | pp64 | t2 | d0", METRIC_PREFILL_TOK_S);
    const struct series *tg =
        series_find(&set, "llama-bench | qwen3 0.6B Q4_0 | tg32 | t2 | d0", METRIC_DECODE_TOK_S);
    CHECK(pp != NULL);
    CHECK(tg != NULL);
    if (pp) {
      CHECK_EQ_INT(pp->n, 2);
      CHECK_NEAR(pp->values[1], 64 / 0.237256201, 1e-6);
      CHECK_STR(pp->quantity, "PF");
    }
    if (tg) CHECK_EQ_INT(tg->n, 2);
    series_set_free(&set);

    /* ttft: one length only (pp64): points, but no fit */
    struct ttft_groups g;
    CHECK_EQ_INT(ttft_points_from_results(&r, &g, &err), 0);
    CHECK_EQ_INT(g.n, 1);
    if (g.n == 1) {
      CHECK_STR(g.g[0].key, "llama-bench | qwen3 0.6B Q4_0 | t2 | d0");
      CHECK_EQ_INT(g.g[0].n, 2);
      CHECK_NEAR(g.g[0].ttft_ms[0], 232.091, 1e-9);
    }
    ttft_groups_free(&g);
  }
  results_free(&r);
  import_out_free(&out);
}

static void test_fixture_jsonl(void) {
  size_t len = 0;
  char *text = slurp(tm_fixture("llama-bench/llama-bench-output.jsonl"), &len);
  CHECK(text != NULL);
  if (!text) return;
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_llamabench(text, len, &NO_CEILING, &out, &err), 0);
  free(text);
  CHECK_STR(out.format, "jsonl");
  CHECK_EQ_INT(out.n_tests, 2);
  CHECK_EQ_INT(out.n_runs, 4);
  struct results r;
  CHECK_EQ_INT(reload(&out, "jsonl.jsonl", &r), 0);
  CHECK_EQ_INT(r.n_inv, 1);
  if (r.n_inv == 1) {
    CHECK_NEAR(json_path_num(r.inv[0].runs[3], "ms"), 454.481, 1e-9);
    CHECK_NEAR(json_path_num(r.inv[0].runs[3], "rate_tok_s"), 70.41, 1e-3);
  }
  results_free(&r);
  import_out_free(&out);
}

/* The Qwen3-0.6B shape in Q4_0, analysed from its plan (no file needed). */
static int qwen_cost(struct model_cost *c) {
  const struct model_preset *p = model_preset_find("qwen3-0.6b");
  if (!p) return -1;
  struct model_plan plan;
  struct model_desc d;
  struct tm_err err;
  if (model_plan_make(&p->shape, MODEL_FTYPE_Q4_0, &plan, &err)) return -1;
  int rc = model_desc_from_plan(&plan, &d, &err);
  model_plan_free(&plan);
  if (rc) return -1;
  struct model_analyze_options ao = {.kv_type = 1};
  rc = model_analyze(&d, &ao, c, &err);
  model_desc_free(&d);
  return rc;
}

static void test_ceiling_given_bandwidth(void) {
  static struct model_cost cost;
  CHECK_EQ_INT(qwen_cost(&cost), 0);
  size_t len = 0;
  char *text = slurp(tm_fixture("llama-bench/llama-bench-output.json"), &len);
  if (!text) return;
  struct import_opts o = NO_CEILING;
  o.cost = &cost;
  o.model_file = "q.gguf";
  o.bandwidth_bytes_s = 28.6e9;
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_llamabench(text, len, &o, &out, &err), 0);
  free(text);
  if (out.n_lines != 8) {
    CHECK_EQ_INT(out.n_lines, 8);
    import_out_free(&out);
    return;
  }
  /* tg32 at depth 0: mean bytes over depths 0..31 */
  double sum = 0;
  for (int i = 0; i < 32; i++) sum += model_decode_bytes_at_depth(&cost, (uint64_t)i);
  double want = 28.6e9 / (sum / 32);
  json_t *tg = out.lines[3];
  CHECK_NEAR(json_path_num(tg, "ceiling.ceiling_tok_s"), want, want * 1e-12);
  CHECK_NEAR(json_path_num(tg, "ceiling.read_bandwidth_bytes_s"), 28.6e9, 0);
  CHECK_NEAR(json_path_num(tg, "percent_of_ceiling"),
             100 * json_path_num(tg, "rate_tok_s") / want, 1e-9);
  /* about 72 tok/s for 375.6 MB per token: the fixture's 70 tok/s is ~93% */
  CHECK(want > 60 && want < 90);
  /* no compute given, no probe: the prefill ceiling is blank, never 0 */
  CHECK(json_is_null(json_path(out.lines[1], "ceiling")));
  CHECK(json_is_null(json_path(out.lines[1], "percent_of_ceiling")));
  /* the plan holds exactly llama-bench's model_size: no mismatch warning */
  CHECK_EQ_U64(cost.bytes_total, 375614464ull);
  CHECK_EQ_INT(out.n_warnings, 0);
  CHECK(json_path_num(out.lines[0], "model.bytes_per_token") > 3.7e8);
  import_out_free(&out);
}

static void test_ceiling_from_probe(void) {
  static struct model_cost cost;
  CHECK_EQ_INT(qwen_cost(&cost), 0);
  static struct machine_probe p;
  memset(&p, 0, sizeof p);
  p.max_threads = 2;
  p.read_bw_bytes_s[1] = 28.6e9;
  p.read_bw_bytes_s[2] = 32.9e9;
  p.f32_flops[1] = 50e9;
  p.f32_flops[2] = 100e9;
  p.int8_ops[1] = 200e9;
  p.int8_ops[2] = 400e9;
  struct import_opts o = NO_CEILING;
  o.cost = &cost;
  o.probe = &p;
  const char *text =
      "{\"model_type\":\"qwen3 0.6B Q4_0\",\"n_prompt\":0,\"n_gen\":16,\"n_threads\":2,"
      "\"backends\":\"CPU\",\"samples_ns\":[400000000]}\n"
      "{\"model_type\":\"qwen3 0.6B Q4_0\",\"n_prompt\":128,\"n_gen\":0,\"n_threads\":1,"
      "\"n_depth\":64,\"samples_ns\":[500000000]}\n"
      "{\"model_type\":\"qwen3 0.6B Q4_0\",\"n_prompt\":0,\"n_gen\":16,\"n_threads\":4,"
      "\"samples_ns\":[400000000]}\n";
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_text(text, &o, &out, &err), 0);
  CHECK_EQ_INT(out.n_lines, 1 + 3 + 3 + 1);
  if (out.n_lines == 8) {
    double sum = 0;
    for (int i = 0; i < 16; i++) sum += model_decode_bytes_at_depth(&cost, (uint64_t)i);
    CHECK_NEAR(json_path_num(out.lines[1], "ceiling.ceiling_tok_s"), 32.9e9 / (sum / 16), 1e-6);
    /* pp128 at depth 64, 1 thread, quantized model with an int8 path */
    CHECK_STR(json_path_str(out.lines[2], "ceiling.compute_path"), "int8");
    CHECK_NEAR(json_path_num(out.lines[2], "ceiling.compute_ops_s"), 200e9, 0);
    double fl = model_prefill_flops_per_token(&cost, 128) + cost.attn_flops_per_depth_full * 64 +
                cost.attn_flops_per_depth_swa * 64;
    CHECK_NEAR(json_path_num(out.lines[2], "ceiling.flops_per_token"), round(fl), 0.5);
    CHECK_NEAR(json_path_num(out.lines[2], "ceiling.ceiling_tok_s"), 200e9 / fl, 1e-6);
    CHECK_EQ_INT(json_path_int(out.lines[2], "depth", -1), 64);
    /* 4 threads: the probe has no figure: blank, with a warning */
    CHECK(json_is_null(json_path(out.lines[3], "ceiling")));
  }
  CHECK_EQ_INT(out.n_warnings, 1);
  CHECK_CONTAINS(out.warnings[0], "4 threads");
  import_out_free(&out);

  /* a GPU run: the CPU probe is not its ceiling */
  const char *gpu =
      "[{\"model_type\":\"qwen3 0.6B Q4_0\",\"n_prompt\":0,\"n_gen\":16,\"n_threads\":2,"
      "\"backends\":\"CUDA\",\"samples_ns\":[100000000,110000000]}]";
  CHECK_EQ_INT(import_text(gpu, &o, &out, &err), 0);
  CHECK(out.n_lines > 1 && json_is_null(json_path(out.lines[1], "ceiling")));
  CHECK_EQ_INT(out.n_warnings, 1);
  CHECK_CONTAINS(out.warnings[0], "CUDA");
  import_out_free(&out);
  /* ... unless the bandwidth is given */
  o.bandwidth_bytes_s = 900e9;
  CHECK_EQ_INT(import_text(gpu, &o, &out, &err), 0);
  CHECK(out.n_lines > 1 && json_path_num(out.lines[1], "ceiling.read_bandwidth_bytes_s") == 900e9);
  CHECK(out.decode_given && !out.decode_probe && !out.prefill_given && !out.prefill_probe);
  import_out_free(&out);
  /* --bandwidth without --compute: decode from the figure given, prefill from
   * the probe, each said (the table claimed the probe for both) */
  o.bandwidth_bytes_s = 32.9e9;
  CHECK_EQ_INT(import_text(text, &o, &out, &err), 0);
  CHECK(out.decode_given && !out.decode_probe);
  CHECK(out.prefill_probe && !out.prefill_given);
  import_out_free(&out);
  o.bandwidth_bytes_s = NAN;
  o.compute_ops_s = 1e12;
  CHECK_EQ_INT(import_text(text, &o, &out, &err), 0);
  CHECK(out.decode_probe && !out.decode_given && out.prefill_given && !out.prefill_probe);
  import_out_free(&out);
}

static void test_combined_skipped_and_depth(void) {
  const char *text =
      "[{\"model_type\":\"llama 8B Q4_K - Medium\",\"n_prompt\":512,\"n_gen\":128,"
      "\"n_threads\":4,\"samples_ns\":[1000000000]},"
      " {\"model_type\":\"llama 8B Q4_K - Medium\",\"n_prompt\":512,\"n_gen\":0,\"n_depth\":1024,"
      "\"n_threads\":4,\"samples_ns\":[1000000000, 2000000000, 1500000000]}]";
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_text(text, &NO_CEILING, &out, &err), 0);
  CHECK_EQ_INT(out.n_skipped_combined, 1);
  CHECK_EQ_INT(out.n_tests, 1);
  CHECK_EQ_INT(out.n_runs, 3);
  CHECK_EQ_INT(out.n_warnings, 1);
  CHECK_CONTAINS(out.warnings[0], "blends prefill and decode");
  if (out.n_lines == 6) {
    CHECK_STR(json_path_str(out.lines[1], "model.type"), "Q4_K_M");
    CHECK_STR(json_path_str(out.lines[1], "test"), "pp512");
    CHECK_NEAR(json_path_num(out.lines[2], "rate_tok_s"), 256, 1e-9);
    CHECK_NEAR(json_path_num(out.lines[4], "rate_tok_s.median"), 512 / 1.5, 1e-9);
    CHECK_NEAR(json_path_num(out.lines[4], "mean_depth"), 1024 + 256, 0);
    CHECK(json_is_null(json_path(out.lines[4], "reported.avg_ts")));
  }
  import_out_free(&out);
}

static void test_model_type(void) {
  char a[32], t[32];
  import_parse_model_type("qwen3 0.6B Q4_K - Medium", a, sizeof a, t, sizeof t);
  CHECK_STR(a, "qwen3");
  CHECK_STR(t, "Q4_K_M");
  import_parse_model_type("llama 7B all F32", a, sizeof a, t, sizeof t);
  CHECK_STR(t, "F32");
  import_parse_model_type("llama 8B IQ4_XS - 4.25 bpw", a, sizeof a, t, sizeof t);
  CHECK_STR(t, "IQ4_XS");
  import_parse_model_type("qwen3moe 30B.A3B Q5_K - Small", a, sizeof a, t, sizeof t);
  CHECK_STR(a, "qwen3moe");
  CHECK_STR(t, "Q5_K_S");
  import_parse_model_type("gemma3", a, sizeof a, t, sizeof t);
  CHECK_STR(a, "gemma3");
  CHECK_STR(t, "");
}

static void test_empty(void) {
  const char *empties[] = {"", "  \n\n", "[]", "[ ]\n"};
  for (size_t i = 0; i < 4; i++) {
    struct import_out out;
    struct tm_err err = {{0}};
    CHECK_EQ_INT(import_text(empties[i], &NO_CEILING, &out, &err), 0);
    CHECK_EQ_INT(out.n_tests, 0);
    CHECK_EQ_INT(out.n_lines, 0);
    import_out_free(&out);
  }
}

static void test_bad_input(void) {
  struct {
    const char *text, *msg;
  } bad[] = {
      {"[{\"model_type\":\"m\",\"n_prompt\":1", "byte"},
      {"| model | size |", "expected '['"},
      {"[1, 2]", "entry 0: not a JSON object"},
      {"[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"samples_ns\":[1000]}]",
       "entry 0: field \"n_threads\" missing"},
      {"[{\"model_type\":\"m\",\"n_prompt\":\"64\",\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[1000]}]",
       "\"n_prompt\" is not an integer"},
      {"[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[1000,-5]}]",
       "samples_ns[1] is not a positive number"},
      /* under a microsecond: the records would keep it as 0 ms (fuzz_records
       * found an import whose records the results reader then refused) */
      {"[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,"
       "\"samples_ns\":[469197202, 45.4]}]",
       "samples_ns[1] is 45.4 ns: under a microsecond"},
      {"[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[]}]",
       "samples_ns"},
      {"[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1}]", "samples_ns\" missing"},
      {"[{\"model_type\":\"m\",\"n_prompt\":0,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}]",
       "both 0"},
      {"[{\"model_type\":\"m\",\"n_prompt\":-3,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}]",
       "\"n_prompt\" is -3"},
      {"[{\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}]", "\"model_type\" missing"},
      {"{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}\n"
       "{\"model_type\":\"m\", oops}\n",
       "line 2"},
      {"\"just a string\"", "expected '['"},
      /* llama-bench's own figures must agree with the samples (tokens / time) */
#define LB(more) "[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1," more "}]"
      {LB("\"samples_ns\":[1000,2000,3000],\"samples_ts\":[1.0]"),
       "entry 0: field \"samples_ts\" has 1 value, samples_ns 3"},
      {LB("\"samples_ns\":[1000000000],\"samples_ts\":[-64]"), "samples_ts[0] -64 is not a positive rate"},
      {LB("\"samples_ns\":[1000000000],\"samples_ts\":[\"64\"]"), "samples_ts[0] a string is not"},
      {LB("\"samples_ns\":[1000000000],\"samples_ts\":[70]"),
       "samples_ts[0] 70 tok/s disagrees with samples_ns[0] 1000000000 ns"},
      {LB("\"samples_ns\":[1000000000],\"samples_ts\":5"), "\"samples_ts\" is not an array"},
      {LB("\"samples_ns\":[1000000000],\"avg_ns\":0"), "field \"avg_ns\" 0 is not a positive number"},
      {LB("\"samples_ns\":[1000000000],\"avg_ts\":-1.5"), "field \"avg_ts\" -1.5 is not a positive"},
      {LB("\"samples_ns\":[1000000000],\"stddev_ts\":-1"), "\"stddev_ts\" -1 is not a non-negative"},
      {LB("\"samples_ns\":[1000000000],\"stddev_ns\":\"x\""), "\"stddev_ns\" a string is not"},
      {LB("\"samples_ns\":[1000000000],\"n_depth\":2000000000"), "\"n_depth\" is 2000000000 (at most"},
      {"[{\"record\":\"identity\",\"schema\":1,\"id\":\"x\"}]", "a tokmeter record, not llama-bench"},
      /* an empty name printed "(null)" and recorded model.name null; a time
       * that is not ISO 8601 went into the run's time as it was */
      {"[{\"model_type\":\"\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}]",
       "entry 0: field \"model_type\" is empty"},
      {LB("\"samples_ns\":[1000000000],\"test_time\":\"garbage\""),
       "entry 0: field \"test_time\" \"garbage\" is not an ISO 8601 UTC time"},
      {LB("\"samples_ns\":[1000000000],\"test_time\":\"2026-13-29T07:20:47Z\""),
       "\"test_time\" \"2026-13-29T07:20:47Z\" is not"},
      {LB("\"samples_ns\":[1000000000],\"test_time\":\"2026-11-29 07:20:47\""), "\"test_time\""},
      /* JSONL: the line number, blank lines counted */
      {"\n{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000]}\n\n"
       "{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,\"samples_ns\":[5000],"
       "\"avg_ns\":0}\n",
       "line 4 (entry 1): field \"avg_ns\" 0"},
#undef LB
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct import_out out;
    struct tm_err err = {{0}};
    int rc = import_text(bad[i].text, &NO_CEILING, &out, &err);
    CHECK_MSG(rc == -1, "case %zu accepted", i);
    CHECK_CONTAINS(err.msg, bad[i].msg);
    CHECK_EQ_INT(out.n_lines, 0);
    import_out_free(&out);
  }
}

/* avg_ns only (older llama-bench): one run at the mean. */
static void test_avg_only(void) {
  const char *text = "[{\"model_type\":\"m X\",\"n_prompt\":0,\"n_gen\":64,\"n_threads\":8,"
                     "\"avg_ns\":2000000000}]";
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(import_text(text, &NO_CEILING, &out, &err), 0);
  CHECK_EQ_INT(out.n_runs, 1);
  if (out.n_lines == 4) CHECK_NEAR(json_path_num(out.lines[1], "rate_tok_s"), 32, 1e-12);
  import_out_free(&out);
}

/* samples_ts within 1% of tokens / time, and the reported figures, pass;
 * stddev 0 and null averages too. */
static void test_reported_consistent(void) {
  const char *text =
      "[{\"model_type\":\"m\",\"n_prompt\":64,\"n_gen\":0,\"n_threads\":1,"
      "\"samples_ns\":[1000000000,500000000],\"samples_ts\":[64.0001,128.5],"
      "\"avg_ns\":750000000,\"stddev_ns\":0,\"avg_ts\":96.2,\"stddev_ts\":null}]";
  struct import_out out;
  struct tm_err err = {{0}};
  CHECK_MSG(import_text(text, &NO_CEILING, &out, &err) == 0, "%s", err.msg);
  CHECK_EQ_INT(out.n_runs, 2);
  import_out_free(&out);
}

void tm_run_tests(void) {
  TM_RUN(test_reported_consistent);
  TM_RUN(test_fixture_json);
  TM_RUN(test_fixture_jsonl);
  TM_RUN(test_ceiling_given_bandwidth);
  TM_RUN(test_ceiling_from_probe);
  TM_RUN(test_combined_skipped_and_depth);
  TM_RUN(test_model_type);
  TM_RUN(test_empty);
  TM_RUN(test_bad_input);
  TM_RUN(test_avg_only);
}
