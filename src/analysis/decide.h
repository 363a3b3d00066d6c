/* decide: device or API for one job (issue 5, part 5). Pure arithmetic on the
 * inputs; docs/decide.md has every formula. In brief, for P prompt tokens and O
 * output tokens per request, Q requests per day, a 30-day month:
 *
 *   device, warm:   first = overhead + P / dev_prefill
 *                   complete = first + (O - 1) / dev_decode
 *   device, reload: both + load_s (the model is loaded for every request)
 *   API:            first = rtt + api_ttft (+ P / api_prefill when given: then
 *                   api_ttft is the fixed part only)
 *                   complete = first + (O - 1) / api_decode
 * (decode rates count the tokens after the first, as docs/design.md defines them.)
 *
 * Money: API per request = P * price_in / 1e6 + O * price_out / 1e6. Device per
 * request = energy (watts x busy seconds / 3.6e6 kWh x price per kWh), busy =
 * complete (+ load when reloading); hardware, when its price is given, adds
 * price / lifetime_days per day, spread over the day's requests. A warm model
 * is loaded once and stays resident: its load is counted in neither latency
 * nor money. Unknown stays NAN (printed blank), never 0.
 *
 * Break-even volume (requests per day at which device and API cost the same
 * per day): hw_per_day / (api_per_request - dev_energy_per_request), when the
 * API costs more per request than the device's energy; otherwise none. The
 * device's capacity (one request at a time) is 86400 / busy seconds. */
#ifndef TM_DECIDE_H
#define TM_DECIDE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "analysis/series.h"
#include "util/err.h"

#define DECIDE_DAYS_PER_MONTH 30.0

struct decide_inputs {
  double prompt_tokens, output_tokens, requests_per_day;
  /* device */
  double dev_prefill_tok_s, dev_decode_tok_s; /* PF, DC */
  double dev_overhead_s;     /* FX per request (default 0) */
  double dev_load_s;         /* FX model load / session warm-up; NAN unknown */
  bool dev_stays_warm;       /* the scenario the verdicts speak for */
  double dev_watts;          /* power while busy; NAN unknown */
  double kwh_price;          /* money per kWh; NAN unknown */
  double dev_hw_price;       /* hardware price; NAN not counted */
  double dev_lifetime_days;  /* hardware written off over this many days */
  /* API */
  double api_rtt_s;          /* FX network round trip (0 when api_ttft was measured by a client) */
  double api_ttft_s;         /* FX the API's time to first token */
  double api_prefill_tok_s;  /* PF; NAN: api_ttft already covers this prompt */
  double api_decode_tok_s;   /* DC */
  double price_in_per_m, price_out_per_m; /* money per million tokens; NAN unknown */
};

struct decide_side {
  double first_s, complete_s;   /* seconds until the user has the first token / the answer */
  double busy_s;                /* device: time it works per request; API: complete_s */
  double money_per_request, money_per_day, money_per_month; /* NAN unknown */
  double capacity_per_day;      /* device: requests/day it can serve one at a time; API: NAN */
};

enum decide_winner { DECIDE_UNKNOWN = 0, DECIDE_DEVICE, DECIDE_API, DECIDE_TIE };

struct decide_result {
  struct decide_side warm, reload, api;
  const struct decide_side *device;   /* warm or reload, per dev_stays_warm */
  double dev_energy_per_request;      /* money; NAN unknown */
  double dev_hw_per_day;              /* money; NAN not counted */
  /* requests/day where device and API cost the same, for the model kept warm
   * and reloaded for every request (each whatever dev_stays_warm says); NAN
   * when there is none (then *_below says who is cheaper at any volume) */
  double breakeven_per_day, breakeven_reload_per_day;
  enum decide_winner breakeven_below;        /* who is cheaper below the break-even */
  enum decide_winner breakeven_reload_below;
  /* the device's scenario (dev_stays_warm): one of the two above */
  double breakeven_device_per_day;
  enum decide_winner breakeven_device_below;
  enum decide_winner first_winner, complete_winner, cost_winner;
  enum decide_winner reload_first_winner, reload_complete_winner;
};

/* Relative difference below which two figures are called the same: |a - b| <=
 * this x the larger of |a| and |b|. */
#define DECIDE_TIE_FRACTION 0.01

/* The inputs' ranges; also that a device reloaded for every request
 * (dev_stays_warm false) has a load time: every answer waits for it. */
int decide_check(const struct decide_inputs *in, struct tm_err *err);
int decide_eval(const struct decide_inputs *in, struct decide_result *out, struct tm_err *err);
/* Who wins a "smaller is better" comparison (device a vs API b). */
enum decide_winner decide_compare(double device, double api);

/* Device rates from results, only those wanted (the ones the user did not
 * give: a given rate wins over the file's, and a file need not hold the kind
 * of runs it is not asked for). Among the configurations (key without the
 * test, type always included) whose label contains `match` (NULL: all) and
 * that hold a series of every wanted metric there must be exactly one; its
 * prefill from the prefill_tok_s series whose prompt length is closest to
 * prompt_tokens, its decode from the decode_tok_s series whose output length
 * is closest to output_tokens; the median of their runs. A rate not wanted
 * is NAN and its key "". -1 with err when no configuration holds the wanted
 * runs (err names the kind missing) or several do (err lists them: choose
 * with --match). which_prefill / which_decode receive the keys used. */
int decide_rates_from_series(const struct series_set *set, const char *match,
                             double prompt_tokens, double output_tokens, bool want_prefill,
                             bool want_decode, double *prefill_tok_s, double *decode_tok_s,
                             char *which_prefill, char *which_decode, size_t which_n,
                             struct tm_err *err);

/* What a failed decide_rates_from_results was about: the file (err names
 * it: unreadable, corrupt, no records), its runs (err says what they lack or
 * lists the configurations to choose from, without the path: the list may
 * fill err, so the caller names the file), or memory. */
enum decide_results_fault { DECIDE_FAULT_FILE = 1, DECIDE_FAULT_RUNS, DECIDE_FAULT_MEMORY };

/* --results: reads path (series_file_load) and takes from it the device
 * rates `in` does not give: decode unless in->dev_decode_tok_s > 0, prefill
 * unless in->dev_prefill_tok_s > 0 or in->prompt_tokens is 0, chosen by
 * decide_rates_from_series with `match`; those taken are written to in.
 * which_prefill / which_decode (which_n bytes each) receive the series keys
 * used ("" for a rate not taken); torn_note (torn_n bytes) what the file's
 * cut last line was (results.h), "" when none. 0, or -1 with err and
 * *fault. */
int decide_rates_from_results(const char *path, const char *match, struct decide_inputs *in,
                              char *which_prefill, char *which_decode, size_t which_n,
                              char *torn_note, size_t torn_n, enum decide_results_fault *fault,
                              struct tm_err *err);

/* The --json document (decide_json.c; keys: docs/decide.md): {"inputs" (every
 * input, with device_prefill_from / device_decode_from: the series keys the
 * rates came from, NULL or "" -> null), "device_warm", "device_reload", "api",
 * the energy, hardware and break-even figures, "winner"}. Unknown figures
 * (NAN) are null. A new object for the caller to dump and free, or NULL when
 * out of memory. */
json_t *decide_json(const struct decide_inputs *in, const char *prefill_from,
                    const char *decode_from, const struct decide_result *r);

#endif
