/* records_engine: in-process run / summary records. Contracts in
 * records_engine.h; every key in docs/records.md ("In-process runs"). */
#include "record/keys.h"
#include "bench/records_engine.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#define put record_json_set
#define num record_json_num
#define str record_json_str

/* ms rounded to the microsecond (the clock's ns carry no meaning here). */
static double ms_round(double ms) { return isfinite(ms) ? round(ms * 1e3) / 1e3 : NAN; }

static json_t *head(const char *kind, const struct record_engine_in *in,
                    const struct engine_bench_config *cfg, int threads) {
  char test[32];
  json_t *o = record_head_json(kind, in->identity, NULL);
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_BACKEND), json_string("engine"));
  bad |= put(o, record_key_leaf(RK_TARGET), json_string("in-process"));
  json_t *m = json_object();
  bad |= !m;
  bad |= put(m, record_key_leaf(RK_MODEL_NAME), str(in->model_label));
  bad |= put(m, record_key_leaf(RK_MODEL_FILE), str(in->model_file));
  bad |= put(m, record_key_leaf(RK_MODEL_ARCH), str(in->arch));
  bad |= put(m, record_key_leaf(RK_MODEL_TYPE), str(in->type));
  bad |= put(m, record_key_leaf(RK_MODEL_LOAD_MS), num(ms_round(in->load_ms)));
  bad |= put(m, "weights", str(in->weights));
  bad |= put(o, record_key_leaf(RK_MODEL), m);
  bad |= put(o, record_key_leaf(RK_TEST), json_string(engine_bench_test_name(cfg, test, sizeof test)));
  if (cfg->workload) bad |= put(o, record_key_leaf(RK_WORKLOAD), json_string(cfg->workload));
  bad |= put(o, record_key_leaf(RK_PHASE), json_string(cfg->kind == ENGINE_BENCH_PP ? "prefill" : "decode"));
  bad |= put(o, record_key_leaf(RK_THREADS), json_integer(threads));
  bad |= put(o, record_key_leaf(RK_DEPTH), json_integer(cfg->depth));
  bad |= put(o, "kernel_path", str(in->kernel_path));
  bad |= put(o, "decode_chunk_bytes", in->decode_chunk_bytes
                                          ? json_integer((json_int_t)in->decode_chunk_bytes)
                                          : json_null());
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* {ceiling_tok_s, basis: bandwidth or compute, divisor}. */
static json_t *ceiling_json(const struct record_engine_in *in,
                            const struct engine_bench_config *cfg) {
  if (!isfinite(in->ceiling_tok_s) || !(in->ceiling_tok_s > 0)) return json_null();
  json_t *c = json_object();
  if (!c) return NULL;
  int bad = put(c, record_key_leaf(RK_CEILING_TOK_S), num(in->ceiling_tok_s));
  if (cfg->kind == ENGINE_BENCH_TG) {
    bad |= put(c, record_key_leaf(RK_CEILING_READ_BANDWIDTH), num(in->read_bandwidth_bytes_s));
    bad |= put(c, record_key_leaf(RK_CEILING_BYTES_PER_TOKEN), num(round(in->bytes_per_token)));
    bad |= put(c, "weights_fit_in_caches", in->weights_fit_in_caches
                                               ? json_boolean(in->weights_fit_in_caches > 0)
                                               : json_null());
  } else {
    bad |= put(c, record_key_leaf(RK_CEILING_COMPUTE_OPS), num(in->compute_ops_s));
    bad |= put(c, "compute_path", str(in->compute_path));
    bad |= put(c, record_key_leaf(RK_CEILING_FLOPS_PER_TOKEN), num(round(in->flops_per_token)));
  }
  if (bad) {
    json_decref(c);
    return NULL;
  }
  return c;
}

/* n readings as an array (NAN -> null); null when there are none. */
static json_t *readings_json(const double *v, size_t n) {
  if (!v) return json_null();
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, num(v[i]))) {
      json_decref(a);
      a = NULL;
    }
  return a;
}

static json_t *segments_json(const struct engine_bench_segment *seg, size_t n,
                             enum engine_bench_kind kind) {
  if (kind != ENGINE_BENCH_TG) return json_null();
  json_t *a = json_array();
  if (!a) return NULL;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_object();
    int bad = !e;
    bad |= put(e, record_key_leaf(RK_SEGMENT_FROM), json_integer(seg[i].from));
    bad |= put(e, record_key_leaf(RK_SEGMENT_TO), json_integer(seg[i].to));
    bad |= put(e, record_key_leaf(RK_MS), num(ms_round(seg[i].ms)));
    bad |= put(e, record_key_leaf(RK_SEGMENT_TOK_S), num(seg[i].tok_s));
    if (bad || json_array_append_new(a, e)) {
      if (bad) json_decref(e);
      json_decref(a);
      return NULL;
    }
  }
  return a;
}


void *record_engine_run_build(const struct record_engine_in *in,
                              const struct engine_bench_config *cfg, int threads, int index,
                              const struct engine_bench_rep *rep) {
  json_t *o = head("run", in, cfg, threads);
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_INDEX), index >= 0 ? json_integer(index) : json_null());
  bad |= put(o, record_key_leaf(RK_WARMUP), json_boolean(rep->warmup));
  bad |= put(o, record_key_leaf(RK_OK), json_true());
  bad |= put(o, record_key_leaf(RK_TOKENS), json_integer(rep->tokens));
  bad |= put(o, record_key_leaf(RK_MS), num(ms_round(rep->ms)));
  bad |= put(o, record_key_leaf(RK_RATE_TOK_S), num(rep->tok_s));
  bad |= put(o, record_key_leaf(RK_CEILING), ceiling_json(in, cfg));
  bad |= put(o, record_key_leaf(RK_PERCENT_OF_CEILING), num(record_percent_of(rep->tok_s, in->ceiling_tok_s)));
  bad |= put(o, record_key_leaf(RK_DECODE_BY_SEGMENT), segments_json(rep->seg, rep->n_segments, cfg->kind));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_engine_summary_build(const struct record_engine_in *in,
                                  const struct engine_bench_result *r) {
  json_t *o = head("summary", in, &r->cfg, r->n_threads);
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "n", json_integer((json_int_t)r->n_reps));
  bad |= put(o, "warmups", json_integer(r->cfg.warmups ? r->cfg.warmups : 1));
  bad |= put(o, record_key_leaf(RK_TOKENS), json_integer(r->cfg.tokens));
  bad |= put(o, "mean_depth", num(r->mean_depth));
  bad |= put(o, record_key_leaf(RK_RATE_TOK_S), record_stats_json(&r->tok_s));
  bad |= put(o, record_key_leaf(RK_MS), record_stats_json(&r->ms));
  bad |= put(o, record_key_leaf(RK_CEILING), ceiling_json(in, &r->cfg));
  bad |= put(o, record_key_leaf(RK_PERCENT_OF_CEILING),
             num(record_percent_of(r->tok_s.n ? r->tok_s.mean : NAN, in->ceiling_tok_s)));
  /* the table's figure: the median rate (docs/design.md rule 1), the key above kept
   * as documented (the mean) */
  bad |= put(o, "percent_of_ceiling_median",
             num(record_percent_of(r->tok_s.n ? r->tok_s.median : NAN, in->ceiling_tok_s)));
  bad |= put(o, record_key_leaf(RK_DECODE_BY_SEGMENT), segments_json(r->seg, r->n_segments, r->cfg.kind));
  /* rule 11: the rates in run order, slower at the end beyond the noise? */
  bad |= put(o, "drift", record_drift_json(&r->drift, r->drift_tested));
  bad |= put(o, "cpu_steal_share", num(in->cpu_steal_share));
  bad |= put(o, "other_cpus_busy", num(in->other_cpus_busy));
  if (r->cfg.kind == ENGINE_BENCH_TG) {
    bad |= put(o, "read_bandwidth_after_bytes_s", num(in->read_bandwidth_after_bytes_s));
    bad |= put(o, "read_bandwidth_readings_bytes_s",
               readings_json(in->bw_readings, in->n_bw_readings));
    bad |= put(o, "buffer_read_bandwidth_readings_bytes_s",
               readings_json(in->buffer_bw_readings, in->n_bw_readings));
    bad |= put(o, "weights_read_bandwidth_readings_bytes_s",
               readings_json(in->weights_bw_readings, in->n_bw_readings));
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}
