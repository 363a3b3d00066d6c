/* import_llamabench_records: building tokmeter records from checked
 * llama-bench entries (import_llamabench_internal.h says how the importer is
 * split): the identity, one run line per sample, one summary per test, the
 * end line, and the ceiling on each run (the given bandwidth / compute or
 * the probe's). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/keys.h"
#include "import/import_llamabench.h"
#include "import/import_llamabench_internal.h"
#include "model/ceiling.h"
#include "record/record.h"
#include "stats/stats.h"

#define put record_json_set
#define num record_json_num
#define str record_json_str

#ifndef TOKMETER_VERSION
#define TOKMETER_VERSION "0"
#endif

/* ----------------------------------------------------------- building --- */

static void test_name(const struct lb_entry *e, char *buf, size_t n) {
  if (e->n_prompt > 0) snprintf(buf, n, "pp%lld", e->n_prompt);
  else snprintf(buf, n, "tg%lld", e->n_gen);
}

struct ceil_fig {
  double ceiling_tok_s, bandwidth, bytes_per_token, compute, flops_per_token;
  const char *compute_path;
};

static bool cpu_backend(const struct lb_entry *e) {
  return !e->backends || !*e->backends || !strcmp(e->backends, "CPU");
}

/* The same CPU name, spaces aside ("Intel(R) Xeon(R)  Processor" as one). */
static bool same_cpu(const char *a, const char *b) {
  for (;;) {
    while (*a == ' ' || *a == '\t') a++;
    while (*b == ' ' || *b == '\t') b++;
    if (!*a || !*b) return !*a && !*b;
    if (*a++ != *b++) return false;
  }
}

static double probe_at(const double *by_threads, const struct machine_probe *p, long long t) {
  if (!p || t < 1 || t > (long long)p->max_threads) return NAN;
  return by_threads[t] > 0 ? by_threads[t] : NAN;
}

/* The ceiling every command computes (model/ceiling.h ceiling_of_workload),
 * from the given rates or this machine's probe at the run's thread count.
 * A llama-bench record does not say whether its build ran the int8 tiles:
 * none are assumed (a prefill above the vector ceiling is then said). */
static void ceiling_for(const struct import_opts *o, const struct lb_entry *e,
                        struct import_out *out, struct ceil_fig *c) {
  c->ceiling_tok_s = c->bandwidth = c->bytes_per_token = c->compute = NAN;
  c->flops_per_token = NAN;
  c->compute_path = NULL;
  const struct model_cost *m = o->cost;
  if (!m) return;
  const struct machine_probe *p = o->probe;
  if (p && !cpu_backend(e)) {
    import_lb_warn(out, "runs on backend %s: this machine's CPU probe is not its ceiling "
                        "(give --bandwidth / --compute)", e->backends);
    p = NULL;
  }
  if (p && !o->this_machine && e->cpu_info && *e->cpu_info && p->info.cpu_model[0] &&
      !same_cpu(e->cpu_info, p->info.cpu_model)) {
    import_lb_warn(out, "runs made on '%s', and this machine is '%s': its probe is not their "
                        "ceiling (--this-machine if they ran here; or give --bandwidth / "
                        "--compute)", e->cpu_info, p->info.cpu_model);
    p = NULL;
  }
  const long long t = e->n_threads;
  const struct ceiling_rates rates = {
      .read_bw_bytes_s = isfinite(o->bandwidth_bytes_s) ? o->bandwidth_bytes_s
                                                        : (p ? probe_at(p->read_bw_bytes_s, p, t) : NAN),
      .f32_flops = p ? probe_at(p->f32_flops, p, t) : NAN,
      .int8_ops = p ? probe_at(p->int8_ops, p, t) : NAN,
      .given_compute_ops_s = o->compute_ops_s};
  const bool decode = e->n_prompt == 0;
  const struct ceiling_workload w = {.prompt_tokens = decode ? 0 : (uint64_t)e->n_prompt,
                                     .depth = (uint64_t)e->n_depth,
                                     .gen_tokens = decode ? (uint64_t)e->n_gen : 0};
  struct ceiling_result r;
  ceiling_of_workload(m, &rates, &w, &r);
  if (decode) {
    c->bytes_per_token = r.bytes_per_token;
    c->bandwidth = r.read_bw_bytes_s;
    if (p && !isfinite(o->bandwidth_bytes_s) && !isfinite(c->bandwidth))
      import_lb_warn(out, "the probe has no bandwidth at %lld threads: decode ceiling blank",
                     e->n_threads);
    c->ceiling_tok_s = r.decode_tok_s;
  } else {
    c->flops_per_token = r.flops_per_token;
    c->compute = r.compute_ops_s;
    c->compute_path = r.compute_path;
    if (p && !isfinite(o->compute_ops_s) && !isfinite(c->compute))
      import_lb_warn(out,
                     "the probe has no compute figure at %lld threads: prefill ceiling blank",
                     e->n_threads);
    c->ceiling_tok_s = r.prefill_tok_s;
  }
  if (!(c->ceiling_tok_s > 0)) {
    c->ceiling_tok_s = NAN;
    return;
  }
  if (e->n_prompt == 0 && isfinite(o->bandwidth_bytes_s)) out->decode_given = true;
  else if (e->n_prompt == 0) out->decode_probe = true;
  else if (isfinite(o->compute_ops_s)) out->prefill_given = true;
  else out->prefill_probe = true;
}

static json_t *ceiling_json(const struct lb_entry *e, const struct ceil_fig *c) {
  if (!isfinite(c->ceiling_tok_s)) return json_null();
  json_t *j = json_object();
  if (!j) return NULL;
  int bad = put(j, record_key_leaf(RK_CEILING_TOK_S), num(c->ceiling_tok_s));
  if (e->n_prompt == 0) {
    bad |= put(j, record_key_leaf(RK_CEILING_READ_BANDWIDTH), num(c->bandwidth));
    bad |= put(j, record_key_leaf(RK_CEILING_BYTES_PER_TOKEN), num(round(c->bytes_per_token)));
  } else {
    bad |= put(j, record_key_leaf(RK_CEILING_COMPUTE_OPS), num(c->compute));
    bad |= put(j, "compute_path", str(c->compute_path));
    bad |= put(j, record_key_leaf(RK_CEILING_FLOPS_PER_TOKEN), num(round(c->flops_per_token)));
  }
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* llama-bench's settings of one entry that change speed: kept on each line so
 * two entries that differ only there can be told apart. */
static json_t *entry_settings(json_t *o) {
  static const char *const keys[] = {"n_batch", "n_ubatch", "type_k", "type_v", "flash_attn",
                                     "n_gpu_layers", "split_mode", "no_kv_offload", "cpu_mask",
                                     "cpu_strict", "poll", "n_cpu_moe", "use_mmap", "embeddings"};
  json_t *s = json_object();
  if (!s) return NULL;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    json_t *v = json_object_get(o, keys[i]);
    if (v && json_object_set(s, keys[i], v)) {
      json_decref(s);
      return NULL;
    }
  }
  return s;
}

static json_t *head(const char *kind, const char *id, const struct lb_entry *e,
                    const struct ceil_fig *c) {
  char arch[64], type[32], test[48];
  import_parse_model_type(e->model_type, arch, sizeof arch, type, sizeof type);
  test_name(e, test, sizeof test);
  /* the time the test ran (llama-bench's), not the import's */
  json_t *o = record_head_json(kind, id, e->test_time);
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_BACKEND), json_string("llama-bench"));
  bad |= put(o, record_key_leaf(RK_TARGET), json_string("in-process"));
  json_t *m = json_object();
  bad |= !m;
  bad |= put(m, record_key_leaf(RK_MODEL_NAME), str(e->model_type));
  bad |= put(m, record_key_leaf(RK_MODEL_FILE), str(e->model_filename));
  bad |= put(m, record_key_leaf(RK_MODEL_ARCH), str(arch));
  bad |= put(m, record_key_leaf(RK_MODEL_TYPE), str(type));
  bad |= put(m, record_key_leaf(RK_MODEL_LOAD_MS), json_null());
  bad |= put(o, record_key_leaf(RK_MODEL), m);
  bad |= put(o, record_key_leaf(RK_TEST), json_string(test));
  bad |= put(o, record_key_leaf(RK_PHASE), json_string(e->n_prompt > 0 ? "prefill" : "decode"));
  bad |= put(o, record_key_leaf(RK_THREADS), json_integer(e->n_threads));
  bad |= put(o, record_key_leaf(RK_DEPTH), json_integer(e->n_depth));
  bad |= put(o, "kernel_path", json_null());
  bad |= put(o, record_key_leaf(RK_SETTINGS), entry_settings(e->obj));
  bad |= put(o, record_key_leaf(RK_CEILING), ceiling_json(e, c));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *figure(const double *x, size_t n) {
  struct stats_summary s;
  stats_describe(x, n, &s);
  return record_stats_json(&s);
}


/* The run lines and the summary of one entry. */
int import_lb_build_entry(const struct import_opts *o, const char *id, const struct lb_entry *e,
                          struct import_out *out, json_t **summary) {
  struct ceil_fig c;
  ceiling_for(o, e, out, &c);
  long long tokens = e->n_prompt > 0 ? e->n_prompt : e->n_gen;
  double *ms = malloc(e->n_samples * sizeof *ms), *rate = malloc(e->n_samples * sizeof *rate);
  if (!ms || !rate) {
    free(ms);
    free(rate);
    return -1;
  }
  int bad = 0;
  for (size_t i = 0; i < e->n_samples && !bad; i++) {
    ms[i] = e->ns[i] / 1e6;
    rate[i] = (double)tokens / (e->ns[i] / 1e9);
    json_t *r = head("run", id, e, &c);
    bad |= !r;
    if (r) {
      bad |= put(r, record_key_leaf(RK_INDEX), json_integer((json_int_t)i));
      bad |= put(r, record_key_leaf(RK_WARMUP), json_false());
      bad |= put(r, record_key_leaf(RK_OK), json_true());
      bad |= put(r, record_key_leaf(RK_TOKENS), json_integer(tokens));
      bad |= put(r, record_key_leaf(RK_MS), num(round(ms[i] * 1e3) / 1e3));
      bad |= put(r, record_key_leaf(RK_RATE_TOK_S), num(rate[i]));
      bad |= put(r, record_key_leaf(RK_PERCENT_OF_CEILING), num(record_percent_of(rate[i], c.ceiling_tok_s)));
      bad |= put(r, record_key_leaf(RK_DECODE_BY_SEGMENT), json_null());
      if (bad) json_decref(r);
      else bad |= import_lb_push(out, r);
    }
    out->n_runs++;
  }
  json_t *s = bad ? NULL : head("summary", id, e, &c);
  if (s) {
    struct stats_summary rs;
    stats_describe(rate, e->n_samples, &rs);
    bad |= put(s, "n", json_integer((json_int_t)e->n_samples));
    bad |= put(s, "warmups", json_null()); /* llama-bench's own, not recorded in its output */
    bad |= put(s, record_key_leaf(RK_TOKENS), json_integer(tokens));
    bad |= put(s, "mean_depth", num((double)e->n_depth + (e->n_prompt > 0 ? (double)tokens / 2
                                                                           : (double)(tokens - 1) / 2)));
    bad |= put(s, record_key_leaf(RK_RATE_TOK_S), figure(rate, e->n_samples));
    bad |= put(s, record_key_leaf(RK_MS), figure(ms, e->n_samples));
    bad |= put(s, record_key_leaf(RK_PERCENT_OF_CEILING), num(record_percent_of(rs.mean, c.ceiling_tok_s)));
    bad |= put(s, record_key_leaf(RK_DECODE_BY_SEGMENT), json_null());
    json_t *rep = json_object();
    bad |= !rep;
    static const char *const keys[] = {"avg_ts", "stddev_ts", "avg_ns", "stddev_ns"};
    for (size_t k = 0; rep && k < 4; k++) {
      json_t *v = json_object_get(e->obj, keys[k]);
      bad |= put(rep, keys[k], v && json_is_number(v) ? json_incref(v) : json_null());
    }
    bad |= put(s, "reported", rep);
  }
  free(ms);
  free(rate);
  if (bad || !s) {
    if (s) json_decref(s);
    return -1;
  }
  *summary = s;
  return 0;
}

/* Distinct integers into a JSON array (settings lists). */
static int add_distinct(json_t *arr, long long v) {
  for (size_t i = 0; i < json_array_size(arr); i++)
    if (json_integer_value(json_array_get(arr, i)) == v) return 0;
  return json_array_append_new(arr, json_integer(v));
}

json_t *import_lb_identity_build(const struct import_opts *o, const struct lb_entry *es,
                                 size_t n, const char *format, char id[RECORD_ID_LEN + 1],
                                 struct tm_err *err) {
  if (record_new_id(id, err) != 0) return NULL;
  char when[32];
  record_time_utc(when);
  const struct lb_entry *e0 = &es[0];
  bool one_model = true;
  for (size_t i = 1; i < n; i++)
    if (strcmp(es[i].model_type, e0->model_type) ||
        strcmp(es[i].model_filename ? es[i].model_filename : "",
               e0->model_filename ? e0->model_filename : ""))
      one_model = false;
  json_t *j = json_object();
  if (!j) goto oom;
  int bad = 0;
  bad |= put(j, record_key_leaf(RK_RECORD), json_string("identity"));
  bad |= put(j, record_key_leaf(RK_SCHEMA), json_integer(RECORD_SCHEMA));
  bad |= put(j, "id", json_string(id));
  bad |= put(j, record_key_leaf(RK_TIME), json_string(when));
  bad |= put(j, "tokmeter", json_string(TOKMETER_VERSION));
  bad |= put(j, record_key_leaf(RK_COMMAND), str(o->command));
  bad |= put(j, record_key_leaf(RK_BACKEND), json_string("llama-bench"));
  bad |= put(j, record_key_leaf(RK_TARGET), json_string("in-process"));
  if (one_model) {
    char arch[64], type[32];
    import_parse_model_type(e0->model_type, arch, sizeof arch, type, sizeof type);
    json_t *m = json_object();
    bad |= !m;
    bad |= put(m, record_key_leaf(RK_MODEL_NAME), str(e0->model_type));
    bad |= put(m, record_key_leaf(RK_MODEL_FILE), str(e0->model_filename));
    bad |= put(m, record_key_leaf(RK_MODEL_ARCH), str(arch));
    bad |= put(m, record_key_leaf(RK_MODEL_TYPE), str(type));
    bad |= put(m, record_key_leaf(RK_MODEL_BYTES_PER_TOKEN),
               o->cost ? json_integer((json_int_t)llround(o->cost->weight_bytes_per_token +
                                                          o->cost->state_bytes))
                       : json_null()); /* integer bytes, as engine records write it */
    bad |= put(j, record_key_leaf(RK_MODEL), m);
  } else {
    bad |= put(j, record_key_leaf(RK_MODEL), json_null());
  }
  bad |= put(j, record_key_leaf(RK_SERVER), json_null());
  /* The machine the runs were made on, as llama-bench describes it; what it
   * does not say is null, never this machine's figures. */
  json_t *mach = json_object();
  bad |= !mach;
  bad |= put(mach, record_key_leaf(RK_MACHINE_CPU), str(e0->cpu_info));
  bad |= put(mach, record_key_leaf(RK_MACHINE_GPU), str(e0->gpu_info));
  bad |= put(mach, "backends", str(e0->backends));
  bad |= put(mach, "arch", json_null());
  bad |= put(mach, record_key_leaf(RK_MACHINE_CORES), json_null());
  bad |= put(mach, "memory_bytes", json_null());
  bad |= put(mach, "flags", json_null());
  bad |= put(j, record_key_leaf(RK_MACHINE), mach);
  bad |= put(j, record_key_leaf(RK_THERMAL_BEFORE), json_null());
  json_t *rt = json_object();
  bad |= !rt;
  bad |= put(rt, "name", json_string("llama-bench"));
  json_t *bc = json_object_get(e0->obj, "build_commit"), *bn = json_object_get(e0->obj, "build_number");
  bad |= put(rt, "build_commit", bc && json_is_string(bc) ? json_incref(bc) : json_null());
  bad |= put(rt, "build_number", bn && json_is_integer(bn) ? json_incref(bn) : json_null());
  bad |= put(j, "runtime", rt);
  json_t *set = json_object(), *th = json_array(), *pp = json_array(), *tg = json_array(),
         *dp = json_array();
  bad |= !set || !th || !pp || !tg || !dp;
  for (size_t i = 0; i < n && !bad; i++) {
    bad |= add_distinct(th, es[i].n_threads);
    if (es[i].n_prompt > 0) bad |= add_distinct(pp, es[i].n_prompt);
    else bad |= add_distinct(tg, es[i].n_gen);
    bad |= add_distinct(dp, es[i].n_depth);
  }
  bad |= put(set, record_key_leaf(RK_THREADS), th);
  bad |= put(set, record_key_leaf(RK_SETTINGS_PROMPT_TOKENS), pp);
  bad |= put(set, "gen_tokens", tg);
  bad |= put(set, record_key_leaf(RK_DEPTH), dp);
  bad |= put(set, "reps", json_integer((json_int_t)e0->n_samples));
  json_t *imp = json_object();
  bad |= !imp;
  bad |= put(imp, "file", str(o->source));
  bad |= put(imp, "format", json_string(format));
  bad |= put(imp, "gguf", str(o->cost ? o->model_file : NULL));
  bad |= put(set, "imported", imp);
  bad |= put(j, record_key_leaf(RK_SETTINGS), set);
  if (bad) {
    json_decref(j);
    goto oom;
  }
  return j;
oom:
  tm_errf(err, "out of memory");
  return NULL;
}

json_t *import_lb_end_build(const char *id, size_t runs) {
  char when[32];
  record_time_utc(when);
  json_t *j = json_object();
  if (!j) return NULL;
  int bad = 0;
  bad |= put(j, record_key_leaf(RK_RECORD), json_string("end"));
  bad |= put(j, record_key_leaf(RK_SCHEMA), json_integer(RECORD_SCHEMA));
  bad |= put(j, record_key_leaf(RK_IDENTITY), json_string(id));
  bad |= put(j, record_key_leaf(RK_TIME), json_string(when));
  bad |= put(j, record_key_leaf(RK_THERMAL_AFTER), json_null());
  bad |= put(j, record_key_leaf(RK_RUNS), json_integer((json_int_t)runs));
  bad |= put(j, record_key_leaf(RK_N_FAILED), json_integer(0));
  bad |= put(j, "failed", json_object());
  bad |= put(j, "interrupted", json_false());
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

