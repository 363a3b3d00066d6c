/* load_json: a level as its record (docs/records.md "load"), the --json
 * contract. */
#include <jansson.h>
#include <math.h>

#include "bench/load_internal.h"
#include "record/record.h"

static json_t *dist_json(const struct load_dist *d) {
  if (!d->n) return json_null();
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "min", record_json_num(d->min),
                   "p50", record_json_num(d->p50), "p90", record_json_num(d->p90), "p95",
                   record_json_num(d->p95), "p99", record_json_num(d->p99), "max",
                   record_json_num(d->max), "mean", record_json_num(d->mean), "n",
                   (json_int_t)d->n);
}

/* The level record (docs/records.md "load"): the --json contract. */
json_t *load_level_json(const struct load_state *s, const struct load_level *lv) {
  json_t *failed = json_object();
  for (int k = 1; k < RUN_ERR_COUNT; k++)
    if (lv->failed_by_kind[k])
      json_object_set_new(failed, run_error_name((enum run_error)k),
                          json_integer(lv->failed_by_kind[k]));
  json_t *o = json_object();
  json_object_set_new(o, "record", json_string("load"));
  json_object_set_new(o, "schema", json_integer(1));
  json_object_set_new(o, "identity", json_string(s->session.identity));
  json_object_set_new(o, "concurrency", lv->concurrency ? json_integer(lv->concurrency)
                                                        : json_null());
  json_object_set_new(o, "request_rate", record_json_num(lv->request_rate));
  json_object_set_new(o, "arrivals", lv->concurrency ? json_null()
                                                     : json_string(load_arrivals_name(s->o->arrivals)));
  json_object_set_new(o, "window_s", record_json_num(lv->window_s));
  json_object_set_new(o, "window_start_unix", record_json_num(lv->window_start_unix));
  json_object_set_new(o, "window_end_unix", record_json_num(lv->window_end_unix));
  json_object_set_new(o, "requests_ok", json_integer(lv->requests_ok));
  json_object_set_new(o, "requests_failed", json_integer(lv->requests_failed));
  json_object_set_new(o, "failed", failed);
  json_object_set_new(o, "requests_per_s", record_json_num(lv->requests_per_s));
  json_object_set_new(o, "aggregate_output_tok_s", record_json_num(lv->aggregate_output_tok_s));
  json_object_set_new(o, "aggregate_prompt_tok_s", record_json_num(lv->aggregate_prompt_tok_s));
  json_object_set_new(o, "output_tokens_in_window", record_json_num(lv->output_tokens_in_window));
  json_object_set_new(o, "prompt_tokens_in_window", record_json_num(lv->prompt_tokens_in_window));
  json_object_set_new(o, "per_stream_decode_tok_s", dist_json(&lv->per_stream_decode_tok_s));
  json_object_set_new(o, "ttft_ms", dist_json(&lv->ttft_ms));
  json_object_set_new(o, "ttft_sched_ms", lv->concurrency ? json_null()
                                                          : dist_json(&lv->ttft_sched_ms));
  json_object_set_new(o, "ttfat_ms", dist_json(&lv->ttfat_ms));
  json_object_set_new(o, "itl_ms", dist_json(&lv->itl_ms));
  json_object_set_new(o, "tpot_ms", dist_json(&lv->tpot_ms));
  json_object_set_new(o, "e2e_ms", dist_json(&lv->e2e_ms));
  json_object_set_new(o, "queue_ms", dist_json(&lv->queue_ms));
  json_object_set_new(o, "cache_hits", json_integer(lv->cache_hits));
  json_object_set_new(o, "buffered", json_integer(lv->buffered));
  json_object_set_new(o, "short_decode", json_integer(lv->short_decode));
  json_object_set_new(o, "implausible", json_integer(lv->implausible));
  json_object_set_new(o, "client_chunks", json_integer((json_int_t)lv->client_chunks));
  json_object_set_new(o, "server_tokens", json_integer((json_int_t)lv->server_tokens));
  json_object_set_new(o, "late_sends", json_integer(lv->late_sends));
  json_object_set_new(o, "max_send_lag_ms", record_json_num(lv->max_send_lag_ms));
  json_object_set_new(o, "behind_schedule", json_boolean(lv->behind_schedule));
  json_object_set_new(o, "client_cpu_share", record_json_num(lv->client_cpu_share));
  json_object_set_new(o, "client_saturated", json_boolean(lv->client_saturated));
  json_object_set_new(o, "aggregate_decode_ceiling_tok_s",
                      record_json_num(lv->aggregate_decode_ceiling_tok_s));
  json_object_set_new(o, "ceiling_batch", record_json_num(lv->ceiling_batch));
  json_object_set_new(o, "ceiling_depth", record_json_num(lv->ceiling_depth));
  json_object_set_new(o, "ceiling_bound", lv->ceiling_bound ? json_string(lv->ceiling_bound)
                                                            : json_null());
  json_object_set_new(o, "percent_of_ceiling", record_json_num(lv->percent_of_ceiling));
  json_object_set_new(
      o, "server_counters",
      lv->counters_source[0]
          ? json_pack("{s:s, s:o, s:o, s:o, s:o, s:b}", "source", lv->counters_source,
                      "server_prompt_tokens", record_json_num(lv->server_prompt_tokens),
                      "server_generated_tokens", record_json_num(lv->server_generated_tokens),
                      "client_prompt_tokens", record_json_num(lv->client_prompt_tokens),
                      "client_generated_tokens", record_json_num(lv->client_generated_tokens),
                      "disagree", lv->counters_disagree)
          : json_null());
  json_object_set_new(o, "slo_met_share", record_json_num(lv->slo_met_share));
  json_object_set_new(o, "goodput_req_s", record_json_num(lv->goodput_req_s));
  json_object_set_new(o, "goodput_tok_s", record_json_num(lv->goodput_tok_s));
  json_object_set_new(o, "slo_met", load_slo_any(&s->o->slo) ? json_boolean(lv->slo_met) : json_null());
  return o;
}

