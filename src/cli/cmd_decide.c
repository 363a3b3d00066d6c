/* cmd_decide: `tokmeter decide` - device or API for one job
 * (src/analysis/decide.h): seconds until the user has the first token and
 * the whole answer on each side, money per request / day / month, the
 * break-even volume, and what reloading the model for every request changes.
 * Device rates come from a results file (decide_rates_from_results: the
 * median of the timed runs of one configuration) or are given. This file
 * parses the flags and prints; the --json document is decide_json's.
 *
 * Output: a table and plain statements on stdout, or one JSON object with
 * --json (keys: docs/decide.md). Exit codes: 0 ok; 2 bad flag or value,
 * unreadable / corrupt / empty results file, ambiguous configuration.
 *
 * Bounds: every number is checked against the range --help states (DECIDE_MAX_*
 * below), so token counts stay exact, sums stay finite and no cell prints a
 * figure nobody could mean (an answer of 10^20 tokens, a 10^17-year TTFT). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/decide.h"
#include "analysis/whatif.h"
#include "cli/cli.h"
#include "util/units.h"

static const char *const CMD = "decide";

/* Ranges, stated in --help. Counts (tokens, requests a day): up to a trillion
 * (exact in a double, far above any real request or service). Rates: 0.001 to
 * 1T tok/s (CLI_MIN_RATE, CLI_MAX_RATE). Durations: up to 100 years. Money and power: generous ceilings
 * that hold in any currency, so products stay finite. */
#define DECIDE_MAX_COUNT 1e12
#define DECIDE_MAX_DURATION_S (100 * 365.25 * 86400)
#define DECIDE_MAX_LIFETIME_DAYS (100 * 365.25)
#define DECIDE_MAX_WATTS 1e6
#define DECIDE_MAX_PRICE 1e12
/* Flags within their ranges can still combine into an answer no one waits
 * for (1e12 tokens at 0.001 tok/s): above a million years it is refused as a
 * mistake in the inputs rather than printed. */
#define DECIDE_MAX_RESULT_S (1e6 * 365.25 * 86400)

/* A reference of at most 45 lines; the formulas, the rules for --results and
 * an example are in docs/decide.md. */
static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter decide -p N -n N --api-ttft T --api-decode RATE [options]\n"
          "         (--results FILE.jsonl | --device-prefill RATE --device-decode RATE)\n"
          "Device or API for one job: time to the first token and to the whole answer,\n"
          "money per request, day and month, the break-even volume, the reload case.\n"
          "T: 600, 1.5s, 350ms, 10m, 2h, up to 100 years. RATE: tok/s, 0.001 to 1T.\n"
          "Job:\n"
          "  -p, --prompt-tokens N      prompt tokens per request, 0 to 1e12 (required)\n"
          "  -n, --output-tokens N      output tokens per request, 1 to 1e12 (required)\n"
          "  -q, --requests-per-day N   requests per day, above 0 (at least 1e-9), up to\n"
          "                             1e12 (default 1000)\n"
          "Device:\n"
          "  --results FILE.jsonl       the rates not given, from tokmeter records\n"
          "                             (default: none)\n"
          "  --match TEXT               the configuration whose label holds TEXT; with\n"
          "                             --results (default: all)\n"
          "  --device-prefill RATE      prefill rate (default: from --results)\n"
          "  --device-decode RATE       decode rate (default: from --results)\n"
          "  --device-overhead T        fixed cost per request (default 0)\n"
          "  --device-load T            model load / warm-up (default: unknown)\n"
          "  --device-warm yes|no       the model stays loaded; no needs --device-load\n"
          "                             (default yes)\n"
          "  --device-watts W           power while answering, 0 to 1e6 (default: unknown)\n"
          "  --kwh-price X              money per kWh, 0 to 1e12 (default: unknown)\n"
          "  --device-price X           hardware price, 0 to 1e12 (default: not counted)\n"
          "  --device-lifetime-days N   days it is written off over, above 0 (at least\n"
          "                             1e-9), up to 36525 (default 1095)\n"
          "API:\n"
          "  --api-ttft T               time to first token (required)\n"
          "  --api-rtt T                round trip added to it (default 0)\n"
          "  --api-prefill RATE         prefill rate; --api-ttft is then the fixed part\n"
          "                             (default: not used)\n"
          "  --api-decode RATE          decode rate (required)\n"
          "  --price-in X               money per million input tokens, 0 to 1e12\n"
          "                             (default: unknown)\n"
          "  --price-out X              money per million output tokens, 0 to 1e12\n"
          "                             (default: unknown)\n"
          "Output:\n"
          "  --currency SYM             printed before money (default $)\n"
          "  --json                     one JSON object on stdout (default: a table)\n"
          "  -h, --help                 this help\n"
          "Exit codes: 0 ok; 2 bad usage or value, or an unusable results file.\n"
          "Details: docs/decide.md\n");
}

static const char *cur = "$";

/* Money with 3 significant digits below 1 (0.00180), cents from 1 up. */
static char *fmt_money(double v, char *buf, size_t n) {
  if (!isfinite(v)) {
    if (n) buf[0] = 0;
    return buf;
  }
  int decimals = 2;
  if (v > 0 && v < 1) decimals = 2 - (int)floor(log10(v));
  if (v >= 1000) decimals = 0;
  snprintf(buf, n, "%s%.*f", cur, decimals, v);
  return buf;
}

static char *fmt_rate(double v, char *buf, size_t n) {
  if (!isfinite(v)) {
    if (n) buf[0] = 0;
    return buf;
  }
  if (v >= 10000) return tm_fmt_count(v, buf, n);
  if (v < 1) { /* 0.001 tok/s is not "0.00" */
    snprintf(buf, n, "%.3g", v);
    return buf;
  }
  return tm_fmt_rate(v, buf, n);
}

static void put_row(const char *label, const char *a, const char *b, const char *c) {
  /* Columns counted in characters, so "µs" lines up; no trailing blanks. */
  const char *cells[4] = {label, a, b, c};
  const int w[4] = {26, 17, 19, 0};
  char line[256];
  size_t len = 0;
  for (int k = 0; k < 4; k++) {
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)cells[k]; *p && len + 1 < sizeof line; p++) {
      if ((*p & 0xc0) != 0x80) cols++;
      line[len++] = (char)*p;
    }
    for (; cols < w[k] && len + 1 < sizeof line; cols++) line[len++] = ' ';
  }
  while (len > 0 && line[len - 1] == ' ') len--;
  line[len] = 0;
  puts(line);
}

/* "sooner by 1.50 s (2.67x)" style comparison sentence for latency. */
static void say_latency(const char *what, enum decide_winner w, double dev, double api) {
  char a[32], b[32];
  tm_fmt_duration(dev, a, sizeof a);
  tm_fmt_duration(api, b, sizeof b);
  switch (w) {
    case DECIDE_DEVICE:
      printf("  %s: the device is sooner (%s vs %s on the API, %.2fx).\n", what, a, b, api / dev);
      break;
    case DECIDE_API:
      printf("  %s: the API is sooner (%s vs %s on the device, %.2fx).\n", what, b, a, dev / api);
      break;
    case DECIDE_TIE: printf("  %s: the same within 1%% (device %s, API %s).\n", what, a, b); break;
    default: printf("  %s: unknown (a figure is missing).\n", what);
  }
}

struct decide_cli {
  struct decide_inputs in;
  const char *results, *match;
  bool have_p, have_n, have_ttft, have_api_decode;
  bool json;
  char which_prefill[320], which_decode[320];
};

static int parse_dur(const char *s, const char *flag, double *out) {
  struct tm_err err;
  double v;
  if (whatif_parse_seconds(s, &v, &err) != 0) return cli_usage_error(CMD, "%s: %s", flag, err.msg);
  if (!(v <= DECIDE_MAX_DURATION_S))
    return cli_usage_error(CMD, "%s: '%s' is longer than 100 years", flag, s);
  *out = v;
  return 0;
}

static void print_table(const struct decide_cli *o, const struct decide_result *r) {
  const struct decide_inputs *in = &o->in;
  char a[48], b[48], c[48], d[48];
  printf("job: %.0f prompt + %.0f output tokens per request, %.0f requests a day\n",
         in->prompt_tokens, in->output_tokens, in->requests_per_day);
  printf("device: prefill %s tok/s (PF), decode %s tok/s (DC)", fmt_rate(in->dev_prefill_tok_s, a, sizeof a),
         fmt_rate(in->dev_decode_tok_s, b, sizeof b));
  if (isfinite(in->dev_load_s)) printf(", load %s (FX)", tm_fmt_duration(in->dev_load_s, c, sizeof c));
  printf(", %s\n", in->dev_stays_warm ? "stays warm" : "reloaded for every request");
  if (o->which_prefill[0]) printf("  prefill from %s: [%s]\n", o->results, o->which_prefill);
  if (o->which_decode[0]) printf("  decode from %s: [%s]\n", o->results, o->which_decode);
  printf("API: round trip %s + TTFT %s", tm_fmt_duration(in->api_rtt_s, a, sizeof a),
         tm_fmt_duration(in->api_ttft_s, b, sizeof b));
  if (isfinite(in->api_prefill_tok_s))
    printf(" + prompt / %s tok/s", fmt_rate(in->api_prefill_tok_s, c, sizeof c));
  printf(", decode %s tok/s (DC)\n\n", fmt_rate(in->api_decode_tok_s, d, sizeof d));

  put_row("", "device (warm)", "device (reload)", "API");
  put_row("first token", tm_fmt_duration(r->warm.first_s, a, sizeof a),
          tm_fmt_duration(r->reload.first_s, b, sizeof b), tm_fmt_duration(r->api.first_s, c, sizeof c));
  put_row("complete answer", tm_fmt_duration(r->warm.complete_s, a, sizeof a),
          tm_fmt_duration(r->reload.complete_s, b, sizeof b),
          tm_fmt_duration(r->api.complete_s, c, sizeof c));
  put_row("money per request", fmt_money(r->warm.money_per_request, a, sizeof a),
          fmt_money(r->reload.money_per_request, b, sizeof b),
          fmt_money(r->api.money_per_request, c, sizeof c));
  put_row("money per day", fmt_money(r->warm.money_per_day, a, sizeof a),
          fmt_money(r->reload.money_per_day, b, sizeof b), fmt_money(r->api.money_per_day, c, sizeof c));
  put_row("money per month (30 days)", fmt_money(r->warm.money_per_month, a, sizeof a),
          fmt_money(r->reload.money_per_month, b, sizeof b),
          fmt_money(r->api.money_per_month, c, sizeof c));
  snprintf(a, sizeof a, "%.0f a day", r->warm.capacity_per_day);
  snprintf(b, sizeof b, "%.0f a day", r->reload.capacity_per_day);
  put_row("capacity, one at a time", a, isfinite(r->reload.capacity_per_day) ? b : "", "");

  const struct decide_side *dv = r->device;
  printf("\nlatency (%s device):\n", in->dev_stays_warm ? "warm" : "reloaded");
  say_latency("first token", r->first_winner, dv->first_s, r->api.first_s);
  say_latency("complete answer", r->complete_winner, dv->complete_s, r->api.complete_s);

  printf("cost:\n");
  if (!isfinite(dv->money_per_day))
    printf("  device: not known (give --device-watts and --kwh-price; --device-price for the "
           "hardware).\n");
  if (!isfinite(r->api.money_per_day))
    printf("  API: not known (give --price-in and --price-out).\n");
  if (r->cost_winner == DECIDE_DEVICE || r->cost_winner == DECIDE_API) {
    bool dev = r->cost_winner == DECIDE_DEVICE;
    printf("  at %.0f requests a day the %s is cheaper: %s vs %s a day.\n", in->requests_per_day,
           dev ? "device" : "API", fmt_money(dev ? dv->money_per_day : r->api.money_per_day, a, sizeof a),
           fmt_money(dev ? r->api.money_per_day : dv->money_per_day, b, sizeof b));
  } else if (r->cost_winner == DECIDE_TIE) {
    printf("  at %.0f requests a day both cost the same within 1%% (%s a day).\n",
           in->requests_per_day, fmt_money(dv->money_per_day, a, sizeof a));
  }
  if (isfinite(r->breakeven_device_per_day))
    printf("  break-even: %.0f requests a day; below it the API is cheaper (the hardware is not "
           "paid off), above it the device.\n", r->breakeven_device_per_day);
  else if (r->breakeven_device_below == DECIDE_DEVICE)
    printf("  no break-even: with no hardware price the device is cheaper at any volume.\n");
  else if (r->breakeven_device_below == DECIDE_API)
    printf("  no break-even: the API costs less per request than the device's energy, at any "
           "volume.\n");
  if (in->requests_per_day > dv->capacity_per_day)
    printf("  the device cannot keep up: %.0f requests a day need %s of work a day, one at a "
           "time.\n", in->requests_per_day,
           tm_fmt_duration(in->requests_per_day * dv->busy_s, a, sizeof a));

  printf("reloaded for every request:\n");
  if (!isfinite(in->dev_load_s)) {
    printf("  not known: give --device-load (model load / session warm-up time).\n");
    return;
  }
  printf("  each answer waits %s more (first token %s, complete %s)",
         tm_fmt_duration(in->dev_load_s, a, sizeof a), tm_fmt_duration(r->reload.first_s, b, sizeof b),
         tm_fmt_duration(r->reload.complete_s, c, sizeof c));
  if (r->reload_first_winner == DECIDE_API && r->reload_complete_winner == DECIDE_API)
    printf(": the API is sooner on both");
  else if (r->reload_first_winner == DECIDE_DEVICE && r->reload_complete_winner == DECIDE_DEVICE)
    printf(": the device is still sooner on both");
  printf(".\n");
  if (in->requests_per_day > r->reload.capacity_per_day)
    printf("  capacity falls to %.0f requests a day: below the %.0f asked for.\n",
           r->reload.capacity_per_day, in->requests_per_day);
  if (isfinite(r->breakeven_reload_per_day) && isfinite(r->breakeven_per_day))
    printf("  break-even moves from %.0f (warm) to %.0f requests a day.\n",
           r->breakeven_per_day, r->breakeven_reload_per_day);
  else if (isfinite(r->breakeven_reload_per_day))
    printf("  break-even: %.0f requests a day.\n", r->breakeven_reload_per_day);
}

int cmd_decide(int argc, char **argv) {
  enum { O_RESULTS = 256, O_MATCH, O_DPRE, O_DDEC, O_DOVER, O_DLOAD, O_DWARM, O_WATTS, O_KWH,
         O_DPRICE, O_DLIFE, O_ATTFT, O_ARTT, O_APRE, O_ADEC, O_PIN, O_POUT, O_CUR, O_JSON };
  static const struct option longopts[] = {
      {"prompt-tokens", required_argument, 0, 'p'}, {"output-tokens", required_argument, 0, 'n'},
      {"requests-per-day", required_argument, 0, 'q'}, {"results", required_argument, 0, O_RESULTS},
      {"match", required_argument, 0, O_MATCH}, {"device-prefill", required_argument, 0, O_DPRE},
      {"device-decode", required_argument, 0, O_DDEC},
      {"device-overhead", required_argument, 0, O_DOVER},
      {"device-load", required_argument, 0, O_DLOAD}, {"device-warm", required_argument, 0, O_DWARM},
      {"device-watts", required_argument, 0, O_WATTS}, {"kwh-price", required_argument, 0, O_KWH},
      {"device-price", required_argument, 0, O_DPRICE},
      {"device-lifetime-days", required_argument, 0, O_DLIFE},
      {"api-ttft", required_argument, 0, O_ATTFT}, {"api-rtt", required_argument, 0, O_ARTT},
      {"api-prefill", required_argument, 0, O_APRE}, {"api-decode", required_argument, 0, O_ADEC},
      {"price-in", required_argument, 0, O_PIN}, {"price-out", required_argument, 0, O_POUT},
      {"currency", required_argument, 0, O_CUR}, {"json", no_argument, 0, O_JSON},
      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  struct decide_cli o;
  memset(&o, 0, sizeof o);
  struct decide_inputs *in = &o.in;
  in->requests_per_day = 1000;
  in->dev_prefill_tok_s = in->dev_decode_tok_s = NAN;
  in->dev_load_s = NAN;
  in->dev_stays_warm = true;
  in->dev_watts = in->kwh_price = in->dev_hw_price = NAN;
  in->dev_lifetime_days = 1095;
  in->api_prefill_tok_s = NAN;
  in->price_in_per_m = in->price_out_per_m = NAN;
  cur = "$";
  optind = 1;
  opterr = 0;
  int c, bad = 0;
  while (!bad && (c = getopt_long(argc, argv, ":p:n:q:h", longopts, NULL)) != -1) {
    switch (c) {
      case 'p':
        bad = cli_parse_number(CMD, optarg, "--prompt-tokens", true, 0, DECIDE_MAX_COUNT,
                               &in->prompt_tokens);
        o.have_p = true;
        break;
      case 'n':
        bad = cli_parse_number(CMD, optarg, "--output-tokens", true, 1, DECIDE_MAX_COUNT,
                               &in->output_tokens);
        o.have_n = true;
        break;
      case 'q':
        bad = cli_parse_above_zero(CMD, optarg, "--requests-per-day", 1e-9, DECIDE_MAX_COUNT,
                                   &in->requests_per_day);
        break;
      case O_RESULTS: o.results = optarg; break;
      case O_MATCH: o.match = optarg; break;
      case O_DPRE: bad = cli_parse_rate(CMD, optarg, "--device-prefill", &in->dev_prefill_tok_s); break;
      case O_DDEC: bad = cli_parse_rate(CMD, optarg, "--device-decode", &in->dev_decode_tok_s); break;
      case O_DOVER: bad = parse_dur(optarg, "--device-overhead", &in->dev_overhead_s); break;
      case O_DLOAD: bad = parse_dur(optarg, "--device-load", &in->dev_load_s); break;
      case O_DWARM:
        if (strcmp(optarg, "yes") == 0) in->dev_stays_warm = true;
        else if (strcmp(optarg, "no") == 0) in->dev_stays_warm = false;
        else bad = cli_usage_error(CMD, "--device-warm: '%s' is neither yes nor no", optarg);
        break;
      case O_WATTS:
        bad = cli_parse_number(CMD, optarg, "--device-watts", false, 0, DECIDE_MAX_WATTS,
                               &in->dev_watts);
        break;
      case O_KWH:
        bad = cli_parse_number(CMD, optarg, "--kwh-price", false, 0, DECIDE_MAX_PRICE,
                               &in->kwh_price);
        break;
      case O_DPRICE:
        bad = cli_parse_number(CMD, optarg, "--device-price", false, 0, DECIDE_MAX_PRICE,
                               &in->dev_hw_price);
        break;
      case O_DLIFE:
        bad = cli_parse_above_zero(CMD, optarg, "--device-lifetime-days", 1e-9,
                                   DECIDE_MAX_LIFETIME_DAYS, &in->dev_lifetime_days);
        break;
      case O_ATTFT: bad = parse_dur(optarg, "--api-ttft", &in->api_ttft_s); o.have_ttft = true; break;
      case O_ARTT: bad = parse_dur(optarg, "--api-rtt", &in->api_rtt_s); break;
      case O_APRE: bad = cli_parse_rate(CMD, optarg, "--api-prefill", &in->api_prefill_tok_s); break;
      case O_ADEC: bad = cli_parse_rate(CMD, optarg, "--api-decode", &in->api_decode_tok_s); o.have_api_decode = true; break;
      case O_PIN:
        bad = cli_parse_number(CMD, optarg, "--price-in", false, 0, DECIDE_MAX_PRICE,
                               &in->price_in_per_m);
        break;
      case O_POUT:
        bad = cli_parse_number(CMD, optarg, "--price-out", false, 0, DECIDE_MAX_PRICE,
                               &in->price_out_per_m);
        break;
      case O_CUR: cur = optarg; break;
      case O_JSON: o.json = true; break;
      case 'h': usage(stdout); return TM_EXIT_OK;
      case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
      default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
  }
  if (bad) return TM_EXIT_USAGE;
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  if (!o.have_p || !o.have_n)
    return cli_usage_error(CMD, "give --prompt-tokens and --output-tokens (per request)");
  if (!o.have_ttft || !o.have_api_decode)
    return cli_usage_error(CMD, "give --api-ttft and --api-decode (the API's time to first token "
                                "and decode rate)");
  if (o.match && !o.results)
    return cli_usage_error(CMD, "--match chooses a configuration of --results: give --results "
                                "FILE.jsonl");
  if (o.results && (!(in->dev_decode_tok_s > 0) ||
                    (in->prompt_tokens > 0 && !(in->dev_prefill_tok_s > 0)))) {
    enum decide_results_fault fault;
    struct tm_err ferr;
    char torn[600];
    if (decide_rates_from_results(o.results, o.match, in, o.which_prefill, o.which_decode,
                                  sizeof o.which_prefill, torn, sizeof torn, &fault,
                                  &ferr) != 0) {
      if (fault == DECIDE_FAULT_RUNS)
        return cli_fail(CMD, TM_EXIT_USAGE, "%s: %s", o.results, ferr.msg);
      return cli_fail(CMD, fault == DECIDE_FAULT_MEMORY ? TM_EXIT_RUNTIME : TM_EXIT_USAGE, "%s",
                      ferr.msg);
    }
    if (torn[0]) cli_warn(CMD, "%s", torn);
  }
  if (!(in->dev_decode_tok_s > 0) || (in->prompt_tokens > 0 && !(in->dev_prefill_tok_s > 0)))
    return cli_usage_error(CMD, "device rates unknown: give --results FILE.jsonl or "
                                "--device-prefill and --device-decode");
  struct decide_result r;
  struct tm_err err;
  if (decide_eval(in, &r, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  const struct { const char *side; double s; } waits[] = {
      {"on the device", r.warm.complete_s}, {"on the device, reloaded", r.reload.complete_s},
      {"on the API", r.api.complete_s}};
  for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
    if (waits[i].s > DECIDE_MAX_RESULT_S) /* NAN (unknown) passes */
      return cli_usage_error(CMD, "the complete answer %s would take more than a million years: "
                                  "check the token counts, rates and durations", waits[i].side);
  if (o.json) return cli_print_json(CMD, decide_json(in, o.which_prefill, o.which_decode, &r));
  print_table(&o, &r);
  return TM_EXIT_OK;
}
