/* ceiling_report: see ceiling_report.h. */
#include "analysis/ceiling_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "machine/probe.h"

int ceiling_machine_from_probe(const struct machine_probe *p, uint32_t threads,
                               double quantized_fraction, uint32_t prompt_tokens,
                               struct ceiling_machine *m, struct tm_err *err) {
  if (threads && (threads > p->max_threads || threads > PROBE_MAX_THREADS)) {
    tm_errf(err, "-t %u: the probe measured 1..%u threads", threads, p->max_threads);
    return -2;
  }
  m->probed = true;
  m->quick = p->quick;
  if (threads) {
    m->bandwidth = p->read_bw_bytes_s[threads];
    m->bw_threads = threads;
  } else {
    m->bandwidth = probe_best_read_bw(p, &m->bw_threads);
  }
  if (!(m->compute > 0)) {
    uint32_t ti = threads, tf = threads;
    const double i8 = threads ? p->int8_ops[threads] : probe_best_int8(p, &ti);
    const double f32 = threads ? p->f32_flops[threads] : probe_best_f32(p, &tf);
    m->rates.int8_ops = i8;
    m->rates.f32_flops = f32;
    const char *path = ceiling_compute_path(quantized_fraction, &m->rates, prompt_tokens);
    if (path && !strcmp(path, "int8")) {
      m->compute = i8;
      m->compute_threads = ti;
      snprintf(m->compute_path, sizeof m->compute_path, "int8 (%s)", p->int8_path);
      m->tile_compute = threads ? p->int8_tile_ops[threads] : probe_best_int8_tile(p, NULL);
      snprintf(m->tile_path, sizeof m->tile_path, "%s", p->int8_tile_path);
    } else if (path) {
      m->compute = f32;
      m->compute_threads = tf;
      snprintf(m->compute_path, sizeof m->compute_path, "f32 (%s)", p->f32_path);
    }
  }
  m->rates.read_bw_bytes_s = m->bandwidth;
  if (!(m->memory_bytes > 0)) m->memory_bytes = (double)p->info.memory_bytes;
  if (!(m->bandwidth > 0)) return tm_errf(err, "the probe has no bandwidth");
  return 0;
}

int ceiling_report_make(const struct ceiling_query *q, const struct ceiling_machine *m,
                        struct ceiling_report *r, struct tm_err *err) {
  memset(r, 0, sizeof *r);
  const struct model_cost *cost = q->cost;
  const bool napkin = r->napkin = cost == NULL;
  r->bytes_total = napkin ? q->size_bytes : (double)cost->bytes_total;
  r->bpt0 = napkin ? q->size_bytes * q->active_fraction : model_decode_bytes_at_depth(cost, 0);
  /* The model's ceilings come from the one function every command uses
   * (model/ceiling.h); the napkin's from its own size. */
  struct ceiling_result at0 = {0}, pre = {0}, pre_tiles = {0};
  if (!napkin) {
    ceiling_of_workload(cost, &m->rates, &(struct ceiling_workload){.gen_tokens = 1}, &at0);
    ceiling_of_workload(cost, &m->rates,
                        &(struct ceiling_workload){.prompt_tokens = q->prompt_tokens}, &pre);
    struct ceiling_rates tiles = m->rates;
    tiles.tiles = true;
    tiles.int8_tile_ops = m->tile_compute;
    ceiling_of_workload(cost, &tiles,
                        &(struct ceiling_workload){.prompt_tokens = q->prompt_tokens}, &pre_tiles);
  }
  r->decode0 = napkin ? ceiling_tok_s(m->bandwidth, r->bpt0)
                      : (isfinite(at0.decode_tok_s) ? at0.decode_tok_s : 0);
  r->dense = ceiling_tok_s(m->bandwidth, r->bytes_total);
  r->has_compute = m->compute > 0 && !napkin;
  /* A model whose head count is unknown (cost->kv_unknown): its KV cache and
   * attention FLOPs are unknown, so is every figure made of them (decode past
   * depth 0, the context that fits, the prefill ceiling): said "unknown",
   * null in JSON, never computed from a KV of 0. Depth 0 reads no KV. */
  r->kv_known = napkin || !cost->kv_unknown;
  r->prefill_flops = napkin ? 0 : pre.flops_per_token;
  r->prefill = r->has_compute && isfinite(pre.prefill_tok_s) ? pre.prefill_tok_s : 0;
  /* without attention: a bound the real ceiling stays under */
  if (!r->kv_known) r->prefill_bound = r->prefill, r->prefill = 0;
  /* the same on the int8 tiles, where the probe measured them */
  r->prefill_tiles = r->prefill > 0 && pre_tiles.compute_path &&
                             !strcmp(pre_tiles.compute_path, "int8_tile")
                         ? pre_tiles.prefill_tok_s
                         : 0;
  r->fits_known = !napkin && m->memory_bytes > 0 && r->kv_known;
  r->fits = r->fits_known ? model_context_fits(cost, m->memory_bytes, q->overhead_bytes,
                                               &r->fits_capped)
                          : 0;
  r->moe_like = napkin ? q->active_fraction < 1 : cost->weight_bytes_per_token < 0.9 * r->bytes_total;
  r->n_by_depth = napkin ? 1 : q->n_depths;
  for (size_t i = 0; i < r->n_by_depth; i++) {
    struct ceiling_depth_row *d = &r->by_depth[i];
    d->depth = napkin ? 0 : q->depths[i];
    struct ceiling_result at = {.decode_tok_s = ceiling_tok_s(m->bandwidth, r->bpt0),
                                .bytes_per_token = r->bpt0};
    if (!napkin)
      ceiling_of_workload(cost, &m->rates,
                          &(struct ceiling_workload){.depth = d->depth, .gen_tokens = 1}, &at);
    d->bytes_per_token = at.bytes_per_token;
    d->tok_s = at.decode_tok_s;
    d->kv_bytes = napkin ? 0 : model_kv_bytes_at_depth(cost, d->depth);
    d->known = r->kv_known || d->depth == 0;
  }

  r->n_by_batch = napkin ? 0 : q->n_batches;
  const double batch_depth = q->n_depths ? (double)q->depths[0] : 0;
  for (size_t i = 0; i < r->n_by_batch; i++)
    ceiling_batch(cost, &m->rates, q->batches[i], batch_depth, &r->by_batch[i]);
  r->batch_turn = r->n_by_batch ? ceiling_batch_turn(cost, &m->rates, batch_depth, 65536) : 0;

  /* Results must be finite numbers. Inputs far outside any real model or
   * machine (1 B at --active-fraction 1e-300 read at 1 TB/s) overflow to inf
   * or leave 0 bytes per token: refused, naming them, never printed. */
  if (!(r->bpt0 > 0) || !isfinite(r->decode0) || !isfinite(r->dense))
    return tm_errf(err,
                   "the decode ceiling is not a finite number: %g B/s (--bandwidth) over %g "
                   "bytes read per token%s; give values a real model and machine have",
                   m->bandwidth, r->bpt0, napkin ? " (--size x --active-fraction)" : "");
  if (!isfinite(r->prefill))
    return tm_errf(err,
                   "the prefill ceiling is not a finite number: %g op/s (--compute) over %g "
                   "FLOPs per prompt token", m->compute, r->prefill_flops);

  if (q->measured_decode >= 0 &&
      ceiling_verdict_make("decode", q->measured_decode, r->decode0,
                           &r->verdicts[r->n_verdicts]) == 0)
    r->n_verdicts++;
  if (q->measured_prefill >= 0) {
    if (ceiling_verdict_make("prefill", q->measured_prefill, r->prefill,
                             &r->verdicts[r->n_verdicts]) == 0)
      r->n_verdicts++;
    else if (!r->kv_known && r->has_compute)
      snprintf(r->prefill_verdict_missing, sizeof r->prefill_verdict_missing,
               "the attention FLOPs are unknown: the file has no head count");
    else
      snprintf(r->prefill_verdict_missing, sizeof r->prefill_verdict_missing,
               "no compute rate known; give --compute");
  }
  return 0;
}

/* Integral values as JSON integers, the rest as reals; NaN/inf/unknown as null. */
static json_t *jnum(double v) {
  if (!isfinite(v)) return json_null();
  if (v == floor(v) && fabs(v) < 9.0e15) return json_integer((json_int_t)v);
  return json_real(v);
}
static json_t *jnum_or_null(double v, bool known) { return known ? jnum(v) : json_null(); }

/* A JSON string that always exists: jansson refuses text that is not UTF-8 (a
 * file name given as raw bytes), and json_object_set_new then drops the key.
 * Such text is kept with each byte >= 0x80 shown as '?'. */
static json_t *jstr(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  char *copy = strdup(s);
  if (!copy) return json_null();
  for (char *p = copy; *p; p++)
    if ((unsigned char)*p >= 0x80) *p = '?';
  j = json_string(copy);
  free(copy);
  return j ? j : json_null();
}

json_t *ceiling_report_json(const struct ceiling_query *q, const struct ceiling_machine *m,
                            const struct ceiling_report *r) {
  static const struct model_cost none;
  const struct model_cost *cost = q->cost ? q->cost : &none;
  const bool napkin = r->napkin;
  json_t *j = json_object();
  if (!j) return NULL;
  json_object_set_new(j, "source", json_string(napkin ? "size" : q->file ? "file" : "preset"));
  json_object_set_new(j, "file", q->file ? jstr(q->file) : json_null());
  json_object_set_new(j, "preset", q->preset ? json_string(q->preset) : json_null());
  json_object_set_new(j, "type", q->type_name && q->type_name[0] ? json_string(q->type_name)
                                                                  : json_null());
  json_object_set_new(j, "arch", napkin ? json_null() : jstr(cost->arch));
  json_object_set_new(j, "bytes_total", jnum(r->bytes_total));
  json_object_set_new(j, "params_total", jnum_or_null((double)cost->params_total, !napkin));
  json_object_set_new(j, "params_active", jnum_or_null(cost->params_active, !napkin));
  json_object_set_new(j, "bytes_per_token", jnum(r->bpt0));
  json_object_set_new(j, "weight_bytes_per_token",
                      jnum(napkin ? r->bpt0 : cost->weight_bytes_per_token));
  json_object_set_new(j, "state_bytes", jnum_or_null(cost->state_bytes, !napkin));
  const struct ggml_type_info *kvt = ggml_type_get(q->kv_type);
  json_object_set_new(j, "kv_type", json_string(kvt ? kvt->name : "?"));
  const bool kv = !napkin && r->kv_known;
  json_object_set_new(j, "kv_bytes_per_token", jnum_or_null(cost->kv_bytes_per_token, kv));
  json_object_set_new(j, "kv_bytes_per_token_full",
                      jnum_or_null(cost->kv_bytes_per_token_full, kv));
  json_object_set_new(j, "kv_bytes_per_token_swa", jnum_or_null(cost->kv_bytes_per_token_swa, kv));
  json_object_set_new(j, "sliding_window", jnum_or_null(cost->sliding_window, !napkin));
  json_object_set_new(j, "context_length",
                      jnum_or_null((double)cost->context_length, !napkin && cost->context_length));
  json_object_set_new(j, "flops_per_token",
                      jnum_or_null(napkin ? 0 : model_decode_flops_at_depth(cost, 0), !napkin));
  json_object_set_new(j, "prefill_flops_per_token", jnum_or_null(r->prefill_flops, kv));
  json_object_set_new(j, "prompt_tokens", json_integer(q->prompt_tokens));
  json_object_set_new(j, "decode_ceiling_tok_s", jnum(r->decode0));
  json_t *by = json_array();
  for (size_t i = 0; i < r->n_by_depth; i++) {
    const struct ceiling_depth_row *d = &r->by_depth[i];
    json_t *e = json_object();
    json_object_set_new(e, "depth", json_integer((json_int_t)d->depth));
    json_object_set_new(e, "bytes_per_token", jnum_or_null(d->bytes_per_token, d->known));
    json_object_set_new(e, "kv_bytes", jnum_or_null(d->kv_bytes, d->known));
    json_object_set_new(e, "tok_s", jnum_or_null(d->tok_s, d->known));
    json_array_append_new(by, e);
  }
  json_object_set_new(j, "decode_ceiling_by_depth", by);
  if (q->n_batches) {
    json_t *ba = json_array();
    for (size_t i = 0; i < r->n_by_batch; i++) {
      const struct ceiling_batch_point *b = &r->by_batch[i];
      json_t *e = json_object();
      json_object_set_new(e, "batch", json_integer(b->batch));
      json_object_set_new(e, "depth", json_integer((json_int_t)b->depth));
      json_object_set_new(e, "bytes_per_step", jnum(b->bytes_per_step));
      json_object_set_new(e, "flops_per_step", jnum(b->flops_per_step));
      json_object_set_new(e, "aggregate_decode_ceiling_tok_s", jnum(b->aggregate_decode_tok_s));
      json_object_set_new(e, "bound", json_string(b->bound));
      json_object_set_new(e, "compute_known", json_boolean(isfinite(b->compute_s)));
      json_array_append_new(ba, e);
    }
    json_object_set_new(j, "batch", ba);
    json_object_set_new(j, "batch_turn", r->batch_turn ? json_integer(r->batch_turn) : json_null());
  }
  json_object_set_new(j, "dense_ceiling_tok_s", jnum(r->dense));
  json_t *pr2 = json_object();
  json_object_set_new(pr2, "low", jnum(r->decode0 * CEILING_PRACTICAL_LO));
  json_object_set_new(pr2, "high", jnum(r->decode0 * CEILING_PRACTICAL_HI));
  json_object_set_new(j, "practical_decode_tok_s", pr2);
  json_object_set_new(j, "prefill_ceiling_tok_s", jnum_or_null(r->prefill, r->prefill > 0));
  json_object_set_new(j, "prefill_ceiling_int8_tile_tok_s",
                      jnum_or_null(r->prefill_tiles, r->prefill_tiles > 0));
  json_object_set_new(j, "compute_int8_tile_ops_s",
                      jnum_or_null(m->tile_compute, m->tile_compute > 0));
  json_object_set_new(j, "read_bandwidth_bytes_s", jnum(m->bandwidth));
  json_object_set_new(j, "bandwidth_source", json_string(m->probed ? "probe" : "given"));
  json_object_set_new(j, "probe_quick", json_boolean(m->quick));
  json_object_set_new(j, "bandwidth_threads", jnum_or_null(m->bw_threads, m->bw_threads > 0));
  json_object_set_new(j, "compute_ops_s", jnum_or_null(m->compute, m->compute > 0));
  json_object_set_new(j, "compute_path",
                      m->compute_path[0] ? json_string(m->compute_path) : json_null());
  json_object_set_new(j, "compute_threads",
                      jnum_or_null(m->compute_threads, m->compute_threads > 0));
  json_object_set_new(j, "memory_bytes", jnum_or_null(m->memory_bytes, m->memory_bytes > 0));
  json_object_set_new(j, "overhead_bytes", jnum(q->overhead_bytes));
  json_object_set_new(j, "context_fits_tokens",
                      jnum_or_null((double)r->fits, r->fits_known && r->fits != UINT64_MAX));
  json_object_set_new(j, "context_fits_capped", json_boolean(r->fits_capped));
  json_t *types = json_array();
  for (size_t i = 0; !napkin && i < cost->n_types; i++) {
    const struct ggml_type_info *ti = ggml_type_get(cost->types[i].type);
    json_t *e = json_object();
    json_object_set_new(e, "type", json_string(ti ? ti->name : "?"));
    json_object_set_new(e, "count", json_integer(cost->types[i].count));
    json_object_set_new(e, "bytes", json_integer((json_int_t)cost->types[i].bytes));
    json_array_append_new(types, e);
  }
  json_object_set_new(j, "types", types);
  json_t *layers = json_object();
  json_object_set_new(layers, "attention", json_integer(cost->n_attn_layers));
  json_object_set_new(layers, "sliding_window", json_integer(cost->n_swa_layers));
  json_object_set_new(layers, "recurrent", json_integer(cost->n_recurrent_layers));
  json_object_set_new(layers, "none", json_integer(cost->n_none_layers));
  json_object_set_new(layers, "mtp", json_integer(cost->n_mtp_layers));
  json_object_set_new(j, "layers", layers);
  json_t *as = json_array();
  for (size_t i = 0; i < cost->n_assumptions; i++)
    json_array_append_new(as, jstr(cost->assumptions[i]));
  if (m->quick)
    json_array_append_new(as, json_string("quick probe (TOKMETER_PROBE_QUICK): figures are not "
                                          "memory bandwidth"));
  json_object_set_new(j, "assumptions", as);
  json_t *vs = json_array();
  for (size_t i = 0; i < r->n_verdicts; i++) {
    const struct ceiling_verdict *v = &r->verdicts[i];
    json_t *e = json_object();
    json_object_set_new(e, "phase", json_string(v->phase));
    json_object_set_new(e, "measured_tok_s", jnum(v->measured_tok_s));
    json_object_set_new(e, "ceiling_tok_s", jnum(v->ceiling_tok_s));
    json_object_set_new(e, "percent", jnum(v->percent));
    json_object_set_new(e, "verdict", json_string(v->code));
    json_object_set_new(e, "message", json_string(v->message));
    json_array_append_new(vs, e);
  }
  json_object_set_new(j, "verdicts", vs);
  return j;
}
