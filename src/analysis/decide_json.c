/* decide_json: the --json document of `tokmeter decide` (keys:
 * docs/decide.md), built from decide_eval's inputs and result. Nothing is
 * computed or printed here: the caller dumps the object (JSON_INDENT(2) |
 * JSON_REAL_PRECISION(10)). Every figure is a real; unknown (NAN) is null
 * (record_json_num); a winner is "device", "api", "tie" or null (unknown). */
#include <jansson.h>

#include "analysis/decide.h"
#include "record/record.h"

static json_t *winner_json(enum decide_winner w) {
  switch (w) {
    case DECIDE_DEVICE: return json_string("device");
    case DECIDE_API: return json_string("api");
    case DECIDE_TIE: return json_string("tie");
    default: return json_null();
  }
}

/* Sets key on obj; 1 when the value or the set failed (value stolen). */
static int put(json_t *obj, const char *key, json_t *value) {
  return record_json_set(obj, key, value);
}

static json_t *side_json(const struct decide_side *s) {
  json_t *o = json_object();
  int bad = !o;
  bad |= put(o, "first_s", record_json_num(s->first_s));
  bad |= put(o, "complete_s", record_json_num(s->complete_s));
  bad |= put(o, "money_per_request", record_json_num(s->money_per_request));
  bad |= put(o, "money_per_day", record_json_num(s->money_per_day));
  bad |= put(o, "money_per_month", record_json_num(s->money_per_month));
  bad |= put(o, "capacity_per_day", record_json_num(s->capacity_per_day));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *inputs_json(const struct decide_inputs *in, const char *prefill_from,
                           const char *decode_from) {
  json_t *j = json_object();
  int bad = !j;
  bad |= put(j, "prompt_tokens", json_real(in->prompt_tokens));
  bad |= put(j, "output_tokens", json_real(in->output_tokens));
  bad |= put(j, "requests_per_day", json_real(in->requests_per_day));
  bad |= put(j, "device_prefill_tok_s", record_json_num(in->dev_prefill_tok_s));
  bad |= put(j, "device_decode_tok_s", record_json_num(in->dev_decode_tok_s));
  bad |= put(j, "device_prefill_from", record_json_str(prefill_from));
  bad |= put(j, "device_decode_from", record_json_str(decode_from));
  bad |= put(j, "device_overhead_s", record_json_num(in->dev_overhead_s));
  bad |= put(j, "device_load_s", record_json_num(in->dev_load_s));
  bad |= put(j, "device_stays_warm", json_boolean(in->dev_stays_warm));
  bad |= put(j, "device_watts", record_json_num(in->dev_watts));
  bad |= put(j, "kwh_price", record_json_num(in->kwh_price));
  bad |= put(j, "device_price", record_json_num(in->dev_hw_price));
  bad |= put(j, "device_lifetime_days", record_json_num(in->dev_lifetime_days));
  bad |= put(j, "api_rtt_s", record_json_num(in->api_rtt_s));
  bad |= put(j, "api_ttft_s", record_json_num(in->api_ttft_s));
  bad |= put(j, "api_prefill_tok_s", record_json_num(in->api_prefill_tok_s));
  bad |= put(j, "api_decode_tok_s", record_json_num(in->api_decode_tok_s));
  bad |= put(j, "price_in_per_million", record_json_num(in->price_in_per_m));
  bad |= put(j, "price_out_per_million", record_json_num(in->price_out_per_m));
  if (bad) {
    json_decref(j);
    return NULL;
  }
  return j;
}

json_t *decide_json(const struct decide_inputs *in, const char *prefill_from,
                    const char *decode_from, const struct decide_result *r) {
  json_t *root = json_object();
  int bad = !root;
  bad |= put(root, "inputs", inputs_json(in, prefill_from, decode_from));
  bad |= put(root, "device_warm", side_json(&r->warm));
  bad |= put(root, "device_reload", side_json(&r->reload));
  bad |= put(root, "api", side_json(&r->api));
  bad |= put(root, "device_energy_per_request", record_json_num(r->dev_energy_per_request));
  bad |= put(root, "device_hardware_per_day", record_json_num(r->dev_hw_per_day));
  bad |= put(root, "breakeven_requests_per_day", record_json_num(r->breakeven_per_day));
  bad |= put(root, "cheaper_below_breakeven", winner_json(r->breakeven_below));
  bad |= put(root, "breakeven_requests_per_day_reload",
             record_json_num(r->breakeven_reload_per_day));
  bad |= put(root, "cheaper_below_breakeven_reload", winner_json(r->breakeven_reload_below));
  bad |= put(root, "winner",
             json_pack("{s:o,s:o,s:o,s:o,s:o}", "first_token", winner_json(r->first_winner),
                       "complete", winner_json(r->complete_winner), "cost",
                       winner_json(r->cost_winner), "first_token_reload",
                       winner_json(r->reload_first_winner), "complete_reload",
                       winner_json(r->reload_complete_winner)));
  if (bad) {
    json_decref(root);
    return NULL;
  }
  return root;
}
