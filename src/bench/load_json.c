/* load_json: a level as its record (docs/records.md "load"), the --json
 * contract. */
#include <jansson.h>
#include <math.h>

#include "bench/load_internal.h"
#include "record/load_record.h"
#include "record/record.h"

/* The level record (docs/records.md "load"): the --json contract. */
json_t *load_level_json(const struct load_state *s, const struct load_level *lv) {
  const char *names[LOAD_ERROR_KINDS] = {0};
  for (int k = 1; k < RUN_ERR_COUNT && k < LOAD_ERROR_KINDS; k++)
    names[k] = run_error_name((enum run_error)k);
  const bool sharded = s->o->shard_count > 1;
  json_t *o = json_object();
  json_object_set_new(o, "record", json_string("load"));
  json_object_set_new(o, "schema", json_integer(1));
  json_object_set_new(o, "identity", json_string(s->session.identity));
  json_object_set_new(o, "concurrency", lv->concurrency ? json_integer(lv->concurrency)
                                                        : json_null());
  json_object_set_new(o, "request_rate", record_json_num(lv->request_rate));
  json_object_set_new(o, "arrivals", lv->concurrency ? json_null()
                                                     : json_string(load_arrivals_name(s->o->arrivals)));
  json_object_set_new(o, "window_start_unix", record_json_num(lv->window_start_unix));
  json_object_set_new(o, "window_end_unix", record_json_num(lv->window_end_unix));
  record_load_figures_put(o, &lv->f, !lv->concurrency, load_slo_any(&s->o->slo), names);
  json_object_set_new(o, "client_cpu_share", record_json_num(lv->client_cpu_share));
  json_object_set_new(o, "client_saturated", json_boolean(lv->client_saturated));
  json_object_set_new(o, "run", s->run_id[0] ? json_string(s->run_id) : json_null());
  json_object_set_new(o, "schedule_lag_s", isfinite(s->o->start_at_unix)
                                               ? record_json_num(lv->schedule_lag_s)
                                               : json_null());
  json_object_set_new(
      o, "shard",
      sharded ? json_pack("{s:i, s:i, s:o, s:o}", "index", (int)s->o->shard_index, "count",
                          (int)s->o->shard_count, "concurrency",
                          lv->concurrency ? json_integer(lv->shard_concurrency) : json_null(),
                          "request_rate", record_json_num(lv->shard_rate))
              : json_null());
  json_object_set_new(o, "aggregate_decode_ceiling_tok_s",
                      record_json_num(lv->aggregate_decode_ceiling_tok_s));
  json_object_set_new(o, "ceiling_batch", record_json_num(lv->ceiling_batch));
  json_object_set_new(o, "ceiling_depth", record_json_num(lv->ceiling_depth));
  json_object_set_new(o, "ceiling_bound", lv->ceiling_bound ? json_string(lv->ceiling_bound)
                                                            : json_null());
  json_object_set_new(o, "percent_of_ceiling", record_json_num(lv->percent_of_ceiling));
  json_t *counters = json_null();
  if (lv->counters_source[0])
    counters = json_pack(
        "{s:s, s:o, s:o, s:o, s:o, s:o, s:i, s:{s:o, s:o}, s:{s:o, s:o}}", "source",
        lv->counters_source, "server_prompt_tokens", record_json_num(lv->server_prompt_tokens),
        "server_generated_tokens", record_json_num(lv->server_generated_tokens),
        "client_prompt_tokens", record_json_num(lv->client_prompt_tokens),
        "client_generated_tokens", record_json_num(lv->client_generated_tokens), "disagree",
        sharded ? json_null() : json_boolean(lv->counters_disagree), "requests",
        (int)lv->counters_requests, "before", "prompt_tokens",
        record_json_num(lv->counters_before[0]), "generated_tokens",
        record_json_num(lv->counters_before[1]), "after", "prompt_tokens",
        record_json_num(lv->counters_after[0]), "generated_tokens",
        record_json_num(lv->counters_after[1]));
  json_object_set_new(o, "server_counters", counters);
  json_object_set_new(o, "server_slots",
                      lv->slots_total ? json_pack("{s:i, s:i, s:i}", "total", lv->slots_total,
                                                  "busy_before", lv->slots_busy_before,
                                                  "busy_after", lv->slots_busy_after)
                                      : json_null());
  return o;
}
