/* load_record: see load_record.h. */
#include "record/load_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record.h"

json_t *record_load_dist_json(const struct load_dist *d) {
  if (!d->n) return json_null();
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "min", record_json_num(d->min),
                   "p50", record_json_num(d->p50), "p90", record_json_num(d->p90), "p95",
                   record_json_num(d->p95), "p99", record_json_num(d->p99), "max",
                   record_json_num(d->max), "mean", record_json_num(d->mean), "n",
                   (json_int_t)d->n);
}

json_t *record_load_sample_json(const struct load_sample *x, double unix_offset, int level,
                                int shard, const char *error_name) {
  json_t *chunks = json_array();
  for (uint32_t k = 0; chunks && k < x->n_chunks; k++)
    json_array_append_new(chunks, json_integer((json_int_t)llround((x->chunk_t[k] - x->t_send) * 1e6)));
  json_t *o = json_object();
  if (!o || !chunks) {
    json_decref(o);
    json_decref(chunks);
    return NULL;
  }
  int bad = 0;
  bad |= record_json_set(o, "level", json_integer(level));
  bad |= record_json_set(o, "shard", shard >= 0 ? json_integer(shard) : json_null());
  bad |= record_json_set(o, "sched_unix", record_json_num(x->t_sched + unix_offset));
  bad |= record_json_set(o, "send_unix", record_json_num(x->t_send + unix_offset));
  bad |= record_json_set(o, "end_unix", record_json_num(x->t_end + unix_offset));
  bad |= record_json_set(o, "ok", json_boolean(x->ok));
  bad |= record_json_set(o, "error", record_json_str(x->ok ? NULL : error_name));
  bad |= record_json_set(o, "cache_hit", json_boolean(x->cache_hit));
  bad |= record_json_set(o, "buffered", json_boolean(x->buffered));
  bad |= record_json_set(o, "token_by_token", json_boolean(x->token_by_token));
  bad |= record_json_set(o, "short_decode", json_boolean(x->short_decode));
  bad |= record_json_set(o, "implausible", json_boolean(x->implausible));
  bad |= record_json_set(o, "ttft_ms", record_json_num(x->ttft_ms));
  bad |= record_json_set(o, "ttfat_ms", record_json_num(x->ttfat_ms));
  bad |= record_json_set(o, "decode_tok_s", record_json_num(x->decode_tok_s));
  bad |= record_json_set(o, "tpot_ms", record_json_num(x->tpot_ms));
  bad |= record_json_set(o, "e2e_ms", record_json_num(x->e2e_ms));
  bad |= record_json_set(o, "queue_ms", record_json_num(x->queue_ms));
  bad |= record_json_set(o, "prompt_processed", record_json_num(x->prompt_processed));
  bad |= record_json_set(o, "prompt_reported", record_json_num(x->prompt_reported));
  bad |= record_json_set(o, "tokens", record_json_num(x->tokens));
  bad |= record_json_set(o, "chunk_us", chunks);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* A number or null (NAN); false when neither. */
static bool num_or_null(json_t *o, const char *k, double *v) {
  json_t *x = json_object_get(o, k);
  if (json_is_null(x)) {
    *v = NAN;
    return true;
  }
  if (!json_is_number(x)) return false;
  *v = json_number_value(x);
  return isfinite(*v);
}

static bool flag(json_t *o, const char *k, bool *v) {
  json_t *x = json_object_get(o, k);
  if (!json_is_boolean(x)) return false;
  *v = json_is_true(x);
  return true;
}

int record_load_sample_parse(json_t *o, struct load_sample *x, double **chunks,
                             const char **error_name, int *level, char *why, size_t why_len) {
  memset(x, 0, sizeof *x);
  *chunks = NULL;
  *error_name = NULL;
#define NEED(cond, key)                                                                   \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      snprintf(why, why_len, "request record: load.%s is missing or not of its type", key); \
      return -1;                                                                          \
    }                                                                                     \
  } while (0)
  NEED(json_is_object(o), "(the object)");
  json_t *lvl = json_object_get(o, "level");
  NEED(json_is_integer(lvl) && json_integer_value(lvl) >= 0 && json_integer_value(lvl) < 1000000,
       "level");
  *level = (int)json_integer_value(lvl);
  NEED(num_or_null(o, "sched_unix", &x->t_sched) && isfinite(x->t_sched), "sched_unix");
  NEED(num_or_null(o, "send_unix", &x->t_send) && isfinite(x->t_send), "send_unix");
  NEED(num_or_null(o, "end_unix", &x->t_end) && isfinite(x->t_end), "end_unix");
  NEED(flag(o, "ok", &x->ok), "ok");
  json_t *e = json_object_get(o, "error");
  NEED(json_is_null(e) || json_is_string(e), "error");
  *error_name = json_string_value(e);
  NEED(x->ok || *error_name, "error");
  NEED(flag(o, "cache_hit", &x->cache_hit), "cache_hit");
  NEED(flag(o, "buffered", &x->buffered), "buffered");
  NEED(flag(o, "token_by_token", &x->token_by_token), "token_by_token");
  NEED(flag(o, "short_decode", &x->short_decode), "short_decode");
  NEED(flag(o, "implausible", &x->implausible), "implausible");
  NEED(num_or_null(o, "ttft_ms", &x->ttft_ms), "ttft_ms");
  NEED(num_or_null(o, "ttfat_ms", &x->ttfat_ms), "ttfat_ms");
  NEED(num_or_null(o, "decode_tok_s", &x->decode_tok_s), "decode_tok_s");
  NEED(num_or_null(o, "tpot_ms", &x->tpot_ms), "tpot_ms");
  NEED(num_or_null(o, "e2e_ms", &x->e2e_ms), "e2e_ms");
  NEED(num_or_null(o, "queue_ms", &x->queue_ms), "queue_ms");
  NEED(num_or_null(o, "prompt_processed", &x->prompt_processed), "prompt_processed");
  NEED(num_or_null(o, "prompt_reported", &x->prompt_reported), "prompt_reported");
  NEED(num_or_null(o, "tokens", &x->tokens) && isfinite(x->tokens) && x->tokens >= 0 &&
           x->tokens <= 1e9,
       "tokens");
  json_t *c = json_object_get(o, "chunk_us");
  NEED(json_is_array(c) && json_array_size(c) <= 100000000u, "chunk_us");
  const size_t n = json_array_size(c);
  if (n) {
    *chunks = malloc(n * sizeof **chunks);
    if (!*chunks) {
      snprintf(why, why_len, "out of memory");
      return -1;
    }
  }
  for (size_t k = 0; k < n; k++) {
    json_t *v = json_array_get(c, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
      free(*chunks);
      *chunks = NULL;
      NEED(false, "chunk_us");
    }
    (*chunks)[k] = x->t_send + (double)json_integer_value(v) / 1e6;
  }
#undef NEED
  x->n_chunks = (uint32_t)n;
  x->chunk_t = *chunks;
  return 0;
}

void record_load_figures_put(json_t *o, const struct load_figures *f, bool open_loop,
                             bool slo_set, const char *const names[LOAD_ERROR_KINDS]) {
  json_t *failed = json_object();
  for (int k = 1; k < LOAD_ERROR_KINDS; k++)
    if (f->failed_by_kind[k] && names[k])
      json_object_set_new(failed, names[k], json_integer(f->failed_by_kind[k]));
  json_object_set_new(o, "window_s", record_json_num(f->window_s));
  json_object_set_new(o, "requests_ok", json_integer(f->requests_ok));
  json_object_set_new(o, "requests_failed", json_integer(f->requests_failed));
  json_object_set_new(o, "failed", failed);
  json_object_set_new(o, "requests_per_s", record_json_num(f->requests_per_s));
  json_object_set_new(o, "aggregate_output_tok_s", record_json_num(f->aggregate_output_tok_s));
  json_object_set_new(o, "aggregate_prompt_tok_s", record_json_num(f->aggregate_prompt_tok_s));
  json_object_set_new(o, "output_tokens_in_window", record_json_num(f->output_tokens_in_window));
  json_object_set_new(o, "prompt_tokens_in_window", record_json_num(f->prompt_tokens_in_window));
  json_object_set_new(o, "per_stream_decode_tok_s", record_load_dist_json(&f->per_stream_decode_tok_s));
  json_object_set_new(o, "ttft_ms", record_load_dist_json(&f->ttft_ms));
  json_object_set_new(o, "ttft_sched_ms", open_loop ? record_load_dist_json(&f->ttft_sched_ms)
                                                    : json_null());
  json_object_set_new(o, "ttfat_ms", record_load_dist_json(&f->ttfat_ms));
  json_object_set_new(o, "itl_ms", record_load_dist_json(&f->itl_ms));
  json_object_set_new(o, "tpot_ms", record_load_dist_json(&f->tpot_ms));
  json_object_set_new(o, "e2e_ms", record_load_dist_json(&f->e2e_ms));
  json_object_set_new(o, "queue_ms", record_load_dist_json(&f->queue_ms));
  json_object_set_new(o, "cache_hits", json_integer(f->cache_hits));
  json_object_set_new(o, "buffered", json_integer(f->buffered));
  json_object_set_new(o, "short_decode", json_integer(f->short_decode));
  json_object_set_new(o, "implausible", json_integer(f->implausible));
  json_object_set_new(o, "client_chunks", json_integer((json_int_t)f->client_chunks));
  json_object_set_new(o, "server_tokens", json_integer((json_int_t)f->server_tokens));
  json_object_set_new(o, "late_sends", json_integer(f->late_sends));
  json_object_set_new(o, "max_send_lag_ms", record_json_num(f->max_send_lag_ms));
  json_object_set_new(o, "send_lag_share", open_loop ? record_json_num(f->send_lag_share) : json_null());
  json_object_set_new(o, "behind_schedule", json_boolean(f->behind_schedule));
  json_object_set_new(o, "slo_met_share", record_json_num(f->slo_met_share));
  json_object_set_new(o, "goodput_req_s", record_json_num(f->goodput_req_s));
  json_object_set_new(o, "goodput_tok_s", record_json_num(f->goodput_tok_s));
  json_object_set_new(o, "slo_met", slo_set ? json_boolean(f->slo_met) : json_null());
}
