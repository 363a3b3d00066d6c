/* decide: device or API for one job; see decide.h for the model and contracts. */
#include "analysis/decide.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analysis/series_file.h"
#include "stats/stats.h"

static int positive(double v) { return v > 0 && isfinite(v); }
static int non_negative(double v) { return v >= 0 && isfinite(v); }
static int known(double v) { return isfinite(v); }

int decide_check(const struct decide_inputs *in, struct tm_err *err) {
  if (!(in->prompt_tokens >= 0) || !isfinite(in->prompt_tokens))
    return tm_errf(err, "prompt tokens must be >= 0");
  if (!(in->output_tokens >= 1) || !isfinite(in->output_tokens))
    return tm_errf(err, "output tokens must be at least 1");
  if (!positive(in->requests_per_day)) return tm_errf(err, "requests per day must be above 0");
  if (!positive(in->dev_prefill_tok_s) && in->prompt_tokens > 0)
    return tm_errf(err, "device prefill rate unknown: give --device-prefill or --results");
  if (!positive(in->dev_decode_tok_s))
    return tm_errf(err, "device decode rate unknown: give --device-decode or --results");
  if (!positive(in->api_decode_tok_s)) return tm_errf(err, "API decode rate must be above 0");
  if (!non_negative(in->api_ttft_s)) return tm_errf(err, "API TTFT must be >= 0");
  if (!non_negative(in->api_rtt_s)) return tm_errf(err, "API round trip must be >= 0");
  if (!non_negative(in->dev_overhead_s)) return tm_errf(err, "device overhead must be >= 0");
  if (known(in->api_prefill_tok_s) && !positive(in->api_prefill_tok_s))
    return tm_errf(err, "API prefill rate must be above 0");
  if (known(in->dev_load_s) && in->dev_load_s < 0) return tm_errf(err, "load time must be >= 0");
  if (!in->dev_stays_warm && !known(in->dev_load_s))
    return tm_errf(err, "--device-warm no needs --device-load: the model is loaded for every "
                        "request, so every answer waits for it");
  if (known(in->dev_watts) && in->dev_watts < 0) return tm_errf(err, "watts must be >= 0");
  if (known(in->kwh_price) && in->kwh_price < 0) return tm_errf(err, "price per kWh must be >= 0");
  if (known(in->price_in_per_m) && in->price_in_per_m < 0)
    return tm_errf(err, "input price must be >= 0");
  if (known(in->price_out_per_m) && in->price_out_per_m < 0)
    return tm_errf(err, "output price must be >= 0");
  if (known(in->dev_hw_price) && (in->dev_hw_price < 0 || !positive(in->dev_lifetime_days)))
    return tm_errf(err, "hardware price must be >= 0 with a lifetime above 0 days");
  return 0;
}

enum decide_winner decide_compare(double device, double api) {
  if (!isfinite(device) || !isfinite(api)) return DECIDE_UNKNOWN;
  double big = fabs(device) > fabs(api) ? fabs(device) : fabs(api);
  if (fabs(device - api) <= DECIDE_TIE_FRACTION * big) return DECIDE_TIE;
  return device < api ? DECIDE_DEVICE : DECIDE_API;
}

/* Fills money per day / month from per-request money and a fixed daily part. */
static void money_totals(struct decide_side *s, double per_request_variable, double per_day_fixed,
                         double q) {
  if (!known(per_request_variable)) {
    s->money_per_request = s->money_per_day = s->money_per_month = NAN;
    return;
  }
  double fixed = known(per_day_fixed) ? per_day_fixed : 0;
  s->money_per_day = per_request_variable * q + fixed;
  s->money_per_request = s->money_per_day / q;
  s->money_per_month = s->money_per_day * DECIDE_DAYS_PER_MONTH;
}

/* Break-even volume: hw_per_day + q * dev_var = q * api_req. NAN when there
 * is none; *below: who is cheaper below it (or at any volume). */
static void breakeven(double api_req, double dev_var, double hw_per_day, double *per_day,
                      enum decide_winner *below) {
  *per_day = NAN;
  *below = DECIDE_UNKNOWN;
  if (!known(api_req) || !known(dev_var)) return;
  double hw = known(hw_per_day) ? hw_per_day : 0;
  if (api_req > dev_var && hw > 0) {
    *per_day = hw / (api_req - dev_var);
    *below = DECIDE_API; /* few requests: the hardware is not paid off */
  } else if (api_req > dev_var) {
    *below = DECIDE_DEVICE; /* no fixed cost: the device is cheaper at any volume */
  } else if (api_req < dev_var) {
    *below = DECIDE_API;    /* the API is cheaper per request: at any volume */
  } else {
    *below = hw > 0 ? DECIDE_API : DECIDE_TIE;
  }
}

int decide_eval(const struct decide_inputs *in, struct decide_result *out, struct tm_err *err) {
  if (decide_check(in, err) != 0) return -1;
  memset(out, 0, sizeof *out);
  double P = in->prompt_tokens, O = in->output_tokens, Q = in->requests_per_day;

  /* Latency. */
  double read_s = P > 0 ? P / in->dev_prefill_tok_s : 0;
  out->warm.first_s = in->dev_overhead_s + read_s;
  out->warm.complete_s = out->warm.first_s + (O - 1) / in->dev_decode_tok_s;
  out->warm.busy_s = out->warm.complete_s;
  out->reload.first_s = known(in->dev_load_s) ? out->warm.first_s + in->dev_load_s : NAN;
  out->reload.complete_s = known(in->dev_load_s) ? out->warm.complete_s + in->dev_load_s : NAN;
  out->reload.busy_s = out->reload.complete_s;
  double api_ttft = in->api_ttft_s + (known(in->api_prefill_tok_s) ? P / in->api_prefill_tok_s : 0);
  out->api.first_s = in->api_rtt_s + api_ttft;
  out->api.complete_s = out->api.first_s + (O - 1) / in->api_decode_tok_s;
  out->api.busy_s = out->api.complete_s;
  out->warm.capacity_per_day = 86400.0 / out->warm.busy_s;
  out->reload.capacity_per_day = known(out->reload.busy_s) ? 86400.0 / out->reload.busy_s : NAN;
  out->api.capacity_per_day = NAN;

  /* Money. */
  double joules_per_kwh = 3.6e6;
  double energy_price = (known(in->dev_watts) && known(in->kwh_price))
                            ? in->dev_watts / joules_per_kwh * in->kwh_price : NAN; /* per second busy */
  out->dev_energy_per_request = energy_price * out->warm.busy_s;
  out->dev_hw_per_day = known(in->dev_hw_price) ? in->dev_hw_price / in->dev_lifetime_days : NAN;
  money_totals(&out->warm, out->dev_energy_per_request, out->dev_hw_per_day, Q);
  money_totals(&out->reload, energy_price * out->reload.busy_s, out->dev_hw_per_day, Q);
  double api_req = (known(in->price_in_per_m) && known(in->price_out_per_m))
                       ? P * in->price_in_per_m / 1e6 + O * in->price_out_per_m / 1e6 : NAN;
  money_totals(&out->api, api_req, NAN, Q);

  out->device = in->dev_stays_warm ? &out->warm : &out->reload;
  const struct decide_side *d = out->device;

  /* Break-even volumes, warm and reloaded, each from its own energy per
   * request (computed apart: one must never stand for the other). */
  breakeven(api_req, out->dev_energy_per_request, out->dev_hw_per_day, &out->breakeven_per_day,
            &out->breakeven_below);
  breakeven(api_req, energy_price * out->reload.busy_s, out->dev_hw_per_day,
            &out->breakeven_reload_per_day, &out->breakeven_reload_below);
  out->breakeven_device_per_day =
      in->dev_stays_warm ? out->breakeven_per_day : out->breakeven_reload_per_day;
  out->breakeven_device_below =
      in->dev_stays_warm ? out->breakeven_below : out->breakeven_reload_below;

  out->first_winner = decide_compare(d->first_s, out->api.first_s);
  out->complete_winner = decide_compare(d->complete_s, out->api.complete_s);
  out->cost_winner = decide_compare(d->money_per_day, out->api.money_per_day);
  out->reload_first_winner = decide_compare(out->reload.first_s, out->api.first_s);
  out->reload_complete_winner = decide_compare(out->reload.complete_s, out->api.complete_s);
  return 0;
}

/* ------------------------------------------------------- rates from records */

/* The configuration as listed to the user and matched by --match: backend,
 * target, model, type, threads, depth. The type is always there when known,
 * even when the model label already holds it (a file name such as
 * "...-Q4_0-s1.gguf"), so "Q4_0 | t2 |" selects the same configuration
 * whatever the model is called. */
static void group_key(const struct series *s, char *buf, size_t n) {
  snprintf(buf, n, "%s | %s | %s%s%s | t%d | d%d", s->backend, s->target, s->model,
           s->type[0] ? " | " : "", s->type, s->threads, s->depth);
}

static double median_of(const struct series *s) { return stats_percentile(s->values, s->n, 50); }

/* The series of `metric` in group `g` whose length (prompt or gen) is closest to
 * want; NULL when none has a finite median. */
static const struct series *closest(const struct series_set *set,
                                    const char *g, enum record_metric metric, int use_prompt,
                                    double want) {
  const struct series *best = NULL;
  double best_d = INFINITY;
  char k[400];
  for (size_t i = 0; i < set->n; i++) {
    const struct series *s = &set->s[i];
    if (s->metric != metric) continue;
    group_key(s, k, sizeof k);
    if (strcmp(k, g) != 0 || !isfinite(median_of(s))) continue;
    int len = use_prompt ? s->prompt_tokens : s->gen_tokens;
    /* An unknown length ranks after every known one. */
    double d = len >= 0 ? fabs(log((len > 0 ? len : 1) / (want > 0 ? want : 1))) : 1e300;
    if (!best || d < best_d) {
      best = s;
      best_d = d;
    }
  }
  return best;
}

/* Whether configuration g holds a finite series of every wanted metric. */
static bool group_has(const struct series_set *set, const char *g, bool want_prefill,
                      bool want_decode) {
  return (!want_prefill || closest(set, g, METRIC_PREFILL_TOK_S, 1, 1)) &&
         (!want_decode || closest(set, g, METRIC_DECODE_TOK_S, 0, 1));
}

int decide_rates_from_series(const struct series_set *set, const char *match,
                             double prompt_tokens, double output_tokens, bool want_prefill,
                             bool want_decode, double *prefill_tok_s, double *decode_tok_s,
                             char *which_prefill, char *which_decode, size_t which_n,
                             struct tm_err *err) {
  *prefill_tok_s = *decode_tok_s = NAN;
  if (which_prefill && which_n) which_prefill[0] = 0;
  if (which_decode && which_n) which_decode[0] = 0;
  if (!want_prefill && !want_decode) return 0;
  /* Configurations (key without the test) that hold every wanted kind of run;
   * whether any matching run of each kind exists, for the error. */
  char groups[8][400];
  size_t ng = 0;
  int more = 0;
  bool any_prefill = false, any_decode = false;
  for (size_t i = 0; i < set->n; i++) {
    const struct series *s = &set->s[i];
    bool is_pf = s->metric == METRIC_PREFILL_TOK_S;
    bool is_dc = s->metric == METRIC_DECODE_TOK_S;
    if ((!is_pf && !is_dc) || !isfinite(median_of(s))) continue;
    /* --match applies to the configuration as listed to the user (the key
     * without the test), so any text of a listed configuration selects it. */
    char k[400];
    group_key(s, k, sizeof k);
    if (match && !strstr(k, match)) continue;
    any_prefill |= is_pf;
    any_decode |= is_dc;
    if ((is_pf && !want_prefill) || (is_dc && !want_decode)) continue;
    size_t j = 0;
    while (j < ng && strcmp(groups[j], k) != 0) j++;
    if (j < ng || !group_has(set, k, want_prefill, want_decode)) continue;
    if (ng == 8) {
      more = 1;
      continue;
    }
    snprintf(groups[ng++], sizeof groups[0], "%s", k);
  }
  const char *m1 = match ? " matching '" : "", *m2 = match ? match : "", *m3 = match ? "'" : "";
  if (ng == 0 && want_decode && !any_decode)
    return tm_errf(err, "no decode runs%s%s%s in the results (or give --device-decode)", m1, m2,
                   m3);
  if (ng == 0 && want_prefill && !any_prefill)
    return tm_errf(err, "no prefill runs%s%s%s in the results (or give --device-prefill)", m1,
                   m2, m3);
  if (ng == 0)
    return tm_errf(err, "no configuration%s%s%s in the results holds both prefill and decode "
                   "runs (give --device-prefill or --device-decode)", m1, m2, m3);
  if (ng > 1) {
    char list[400];
    size_t off = 0;
    for (size_t j = 0; j < ng && off < sizeof list; j++)
      off += (size_t)snprintf(list + off, sizeof list - off, "%s[%s]", j ? ", " : "", groups[j]);
    return tm_errf(err, "%zu%s configurations in the results (%s); choose one with --match TEXT",
                   ng, more ? "+" : "", list);
  }
  if (want_decode) {
    const struct series *dec = closest(set, groups[0], METRIC_DECODE_TOK_S, 0, output_tokens);
    *decode_tok_s = median_of(dec);
    if (which_decode) snprintf(which_decode, which_n, "%s", dec->key);
  }
  if (want_prefill) {
    const struct series *pre = closest(set, groups[0], METRIC_PREFILL_TOK_S, 1, prompt_tokens);
    *prefill_tok_s = median_of(pre);
    if (which_prefill) snprintf(which_prefill, which_n, "%s", pre->key);
  }
  return 0;
}

int decide_rates_from_results(const char *path, const char *match, struct decide_inputs *in,
                              char *which_prefill, char *which_decode, size_t which_n,
                              char *torn_note, size_t torn_n, enum decide_results_fault *fault,
                              struct tm_err *err) {
  struct results r;
  struct series_set set;
  bool oom;
  if (torn_n) torn_note[0] = 0;
  if (series_file_load(path, &r, &set, &oom, err) != 0) {
    *fault = oom ? DECIDE_FAULT_MEMORY : DECIDE_FAULT_FILE;
    return -1;
  }
  if (torn_n) snprintf(torn_note, torn_n, "%s", r.torn_note);
  /* Only the rates not given come from the file (a given one wins). */
  bool want_pf = !(in->dev_prefill_tok_s > 0) && in->prompt_tokens > 0;
  bool want_dc = !(in->dev_decode_tok_s > 0);
  double pf, dc;
  int rc = decide_rates_from_series(&set, match, in->prompt_tokens, in->output_tokens, want_pf,
                                    want_dc, &pf, &dc, which_prefill, which_decode, which_n, err);
  if (rc != 0) {
    *fault = DECIDE_FAULT_RUNS;
  } else {
    if (want_pf) in->dev_prefill_tok_s = pf;
    if (want_dc) in->dev_decode_tok_s = dc;
  }
  series_set_free(&set);
  results_free(&r);
  return rc;
}
