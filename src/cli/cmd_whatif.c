/* cmd_whatif: `tokmeter whatif` - Amdahl for token jobs (src/analysis/whatif.h):
 * what a faster generator would really change in a job that also reads
 * prompts and waits on fixed serial steps; and `--claim FIGURE`: one
 * published number read as each of docs/design.md's quantities.
 *
 * This file parses the flags and prints; the arithmetic is whatif.c's, the
 * --json documents whatif_json.c's and the --html page report/whatif_html.c's.
 * Output: a table on stdout (durations via tm_fmt_duration), or one JSON object
 * with --json (keys: docs/whatif.md); --html FILE also writes a page with the
 * plot. Exit codes: 0 ok; 2 bad flag or value; 1 the HTML file could not be
 * written.
 *
 * Bounds: every value is checked against the ranges --help states (WHATIF_MAX_*
 * below) so the arithmetic stays exact (counts below 2^53) and finite, and no
 * table cell is a number nobody can read; a flag the chosen mode does not use
 * (a --claim flag in a sweep, or the reverse) is an error, never ignored. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/whatif.h"
#include "cli/cli.h"
#include "report/whatif_html.h"
#include "util/units.h"

static const char *const CMD = "whatif";

/* Upper bounds, stated in --help. Token counts and items: a trillion (1T),
 * far above any real job and exact in a double. Streams: a million. Rates:
 * 0.001 to 1T tok/s (below, a job of 1T tokens would not end in the age of the
 * universe; above, no hardware comes close). Fixed steps: 100 years. */
#define WHATIF_MAX_COUNT 1e12
#define WHATIF_MAX_STREAMS 1e6
#define WHATIF_MAX_RATIO 1e6
#define WHATIF_MAX_STEP_S (100 * 365.25 * 86400)
#define WHATIF_MAX_BYTES_PER_TOKEN 1e15
/* Each flag within its range can still combine into a wait no table can show
 * sensibly (1T items x 1T tokens at 0.001 tok/s): a result above a million
 * years is refused as a mistake in the inputs rather than printed. */
#define WHATIF_MAX_RESULT_S (1e6 * 365.25 * 86400)

/* A reference of at most 45 lines; the method, the formulas and the
 * examples are in docs/whatif.md. */
static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter whatif --gen-tokens N --rate RATES [job options]\n"
          "       tokmeter whatif --claim FIGURE [claim options]\n"
          "Amdahl for token jobs: per generation rate, the time of each phase, the\n"
          "speedup against a baseline and the share of the wait in fixed steps.\n"
          "Job:\n"
          "  -g, --gen-tokens N       tokens written per item, 0 to 1T (required)\n"
          "  --read-tokens N          prompt tokens read per item, 0 to 1T (default 0)\n"
          "  --items N                items in the job, 1 to 1T (default 1)\n"
          "  -c, --concurrency N      items side by side, one stream each, 1 to 1M\n"
          "                           (default 1)\n"
          "  --step NAME=DURATION[/item|/job]\n"
          "                           a fixed serial step, repeatable (at most %d), each\n"
          "                           up to 100 years: review=600, test=30s/item\n"
          "                           (default: none)\n"
          "Rates (each 0.001 to 1T tok/s):\n"
          "  -r, --rate RATES         one stream's decode rate: 75, a list 100,1k,10k,\n"
          "                           a sweep A..B or A..B:N; at most %d (required)\n"
          "  --prefill-rate RATE      prompt reading rate, fixed across the sweep\n"
          "                           (default: none; needed when --read-tokens > 0)\n"
          "  --prefill-ratio X        prefill = X x the rate, 0.001 to 1M (default: off)\n"
          "  --baseline RATE          the rate speedups are against (default: the lowest)\n"
          "Claim:\n"
          "  --claim FIGURE           one figure read four ways, e.g. '1M tok/s'\n"
          "  --claim-prompt N         prompt for the consequences, 1 to 1T\n"
          "                           (default 100000)\n"
          "  --claim-answer N         answer for the consequences, 1 to 1T (default 1000)\n"
          "  --streams LIST           stream counts, each 1 to 1M, at most %d\n"
          "                           (default 1,100,10000)\n"
          "  --bytes-per-token BYTES  bytes read per token, up to 1PB, e.g. 4GB\n"
          "                           (default: bandwidth not shown)\n"
          "  --prefill-rate RATE      also: the time to fill the context (default: none)\n"
          "Output:\n"
          "  --json                   one JSON object on stdout (default: a table)\n"
          "  --html FILE              also write an HTML page with the plot (default: none)\n"
          "  -h, --help               this help\n"
          "Counts take k, M, G, T. Job flags and claim flags do not mix.\n"
          "Exit codes: 0 ok, 1 the HTML file could not be written, 2 bad usage or value.\n"
          "Details: docs/whatif.md\n",
          WHATIF_MAX_STEPS, WHATIF_MAX_RATES, WHATIF_MAX_RATES);
}

/* Prints s left-aligned in `width` columns, counting UTF-8 characters (so
 * "µs" is two columns, not three). */
static void put_cell(const char *s, int width) {
  int cols = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xc0) != 0x80) cols++;
  fputs(s, stdout);
  if (cols >= width) putchar(' '); /* a wide cell still ends in a blank */
  for (; cols < width; cols++) putchar(' ');
}

/* "1M", "250k", "75.0": rates read at a glance. */
static char *fmt_tok_s(double v, char *buf, size_t n) {
  if (v >= 10000) return tm_fmt_count(v, buf, n);
  if (v < 1) { /* 0.001 tok/s is not "0.00" */
    snprintf(buf, n, "%.3g", v);
    return buf;
  }
  return tm_fmt_rate(v, buf, n);
}

/* Refuses a result beyond WHATIF_MAX_RESULT_S (see there); what names it. */
static int check_result(double seconds, const char *what, double rate) {
  if (seconds <= WHATIF_MAX_RESULT_S) return 0;
  char r[32];
  return cli_usage_error(CMD, "%s at %s tok/s would take more than a million years: check the "
                              "counts and rates", what, fmt_tok_s(rate, r, sizeof r));
}

struct whatif_opts {
  struct whatif_job job;
  struct whatif_step steps[WHATIF_MAX_STEPS];
  double rates[WHATIF_MAX_RATES];
  size_t n_rates;
  double baseline;
  bool have_gen;
  const char *claim, *html;
  double claim_prompt, claim_answer, bytes_per_token;
  double streams[WHATIF_MAX_RATES];
  size_t n_streams;
  bool json;
};

/* A comma list with an empty element ("1,,2", ",1", "1,") is a typo, not a
 * shorter list: refused, naming the flag. */
static int check_list(const char *s, const char *flag) {
  struct tm_err err;
  if (tm_list_check(s, flag, &err) != 0)
    return cli_usage_error(CMD, "%s (write e.g. 1,100,10000)", err.msg);
  return 0;
}

static int parse_streams(const char *s, struct whatif_opts *o) {
  char buf[256];
  struct tm_err err;
  if (strlen(s) >= sizeof buf) return cli_usage_error(CMD, "--streams: too long");
  if (check_list(s, "--streams") != 0) return TM_EXIT_USAGE;
  strcpy(buf, s);
  o->n_streams = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->n_streams == WHATIF_MAX_RATES)
      return cli_usage_error(CMD, "--streams: at most %d values", WHATIF_MAX_RATES);
    if (tm_parse_count(t, "--streams", false, WHATIF_MAX_STREAMS, &o->streams[o->n_streams], &err))
      return cli_usage_error(CMD, "%s", err.msg);
    o->n_streams++;
  }
  if (o->n_streams == 0) return cli_usage_error(CMD, "--streams: empty list");
  return 0;
}

/* ------------------------------------------------------------------ claim */

static int run_claim(const struct whatif_opts *o) {
  struct tm_err err;
  struct whatif_claim_in in = {.prompt_tokens = o->claim_prompt,
                               .answer_tokens = o->claim_answer,
                               .prefill_tok_s = o->job.prefill_tok_s,
                               .bytes_per_token = o->bytes_per_token,
                               .streams = o->streams,
                               .n_streams = o->n_streams};
  if (tm_parse_tokens(o->claim, &in.value, &err) != 0)
    return cli_usage_error(CMD, "--claim: %s", err.msg);
  if (cli_check_rate(CMD, in.value, "--claim", o->claim) != 0) return TM_EXIT_USAGE;
  struct whatif_claim_out c;
  if (whatif_claim(&in, &c, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  if (check_result(c.prefill_prompt_s, "the prompt", in.value) ||
      check_result(c.decode_answer_s, "the answer", in.value) ||
      (isfinite(c.context_fill_s) && check_result(c.context_fill_s, "the context", in.prefill_tok_s)))
    return TM_EXIT_USAGE;
  for (size_t i = 0; i < c.n_at; i++)
    if (check_result(c.at[i].answer_s, "the answer", c.at[i].per_stream_tok_s))
      return TM_EXIT_USAGE;
  char v[32], a[32], b[32], d[32];
  fmt_tok_s(in.value, v, sizeof v);
  if (o->json) return cli_print_json(CMD, whatif_claim_json(o->claim, &in, &c));
  char pt[32], at_[32];
  fmt_tok_s(in.prompt_tokens, pt, sizeof pt);
  fmt_tok_s(in.answer_tokens, at_, sizeof at_);
  /* docs/design.md's fifth quantity, fixed costs, is a time: a token figure
   * cannot be read as one, so four readings follow. */
  printf("\"%s\" read as each of the four token quantities (docs/design.md's fifth, fixed costs, "
         "is a time): they are not one number.\n\n", o->claim);
  printf("context capacity (CC): a request can hold %s tokens.\n", v);
  printf("  a size, not a speed: it holds %.3g prompts of %s tokens", c.context_prompts, pt);
  if (isfinite(c.context_fill_s))
    printf("; reading all of it at %s tok/s takes %s.\n", fmt_tok_s(in.prefill_tok_s, a, sizeof a),
           tm_fmt_duration(c.context_fill_s, b, sizeof b));
  else
    printf(".\n  (give --prefill-rate to see how long reading a full context takes)\n");
  printf("\nprefill rate (PF): prompts are read at %s tok/s.\n", v);
  printf("  a %s-token prompt is read in %s: time to first token is at least that plus the\n"
         "  fixed costs (round trip, queueing).\n", pt,
         tm_fmt_duration(c.prefill_prompt_s, a, sizeof a));
  printf("\nsingle-stream decode rate (DC): one answer is written at %s tok/s.\n", v);
  printf("  a %s-token answer takes %s, %s per token.\n", at_,
         tm_fmt_duration(c.decode_answer_s, a, sizeof a),
         tm_fmt_duration(c.decode_token_s, b, sizeof b));
  if (isfinite(c.decode_bandwidth_bytes_s))
    printf("  a model reading %s per token would need %s of memory bandwidth: decode reads\n"
           "  every active weight per token (compare `tokmeter ceiling`).\n",
           tm_fmt_bytes_si(in.bytes_per_token, a, sizeof a),
           tm_fmt_bandwidth(c.decode_bandwidth_bytes_s, d, sizeof d));
  else
    printf("  (give --bytes-per-token to see the memory bandwidth one stream would need)\n");
  printf("\naggregate throughput (AT): %s tok/s summed over concurrent streams.\n", v);
  printf("  %-12s %-18s %s\n", "streams", "per stream (DC)", "one answer");
  for (size_t i = 0; i < c.n_at; i++) {
    char s1[32], s2[48];
    tm_fmt_count(c.at[i].streams, s1, sizeof s1);
    snprintf(s2, sizeof s2, "%s tok/s", fmt_tok_s(c.at[i].per_stream_tok_s, a, sizeof a));
    printf("  %-12s %-18s %s\n", s1, s2, tm_fmt_duration(c.at[i].answer_s, b, sizeof b));
  }
  printf("  what one user waits for depends on the per-stream rate, not the sum.\n");
  return TM_EXIT_OK;
}

/* -------------------------------------------------------------- the sweep */

/* o->n_rates >= 1: cmd_whatif runs the sweep only after a --rate that parsed, and
 * whatif_parse_rates refuses an empty list (rows[0] is the first rate's). */
static int run_sweep(struct whatif_opts *o) {
  struct tm_err err;
  struct whatif_row rows[WHATIF_MAX_RATES], base;
  if (whatif_check(&o->job, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  double b = o->baseline > 0 ? o->baseline : o->rates[0];
  if (whatif_eval(&o->job, b, NAN, &base, &err) != 0) return cli_usage_error(CMD, "%s", err.msg);
  if (check_result(base.total_s, "the job", b)) return TM_EXIT_USAGE;
  for (size_t i = 0; i < o->n_rates; i++) {
    if (whatif_eval(&o->job, o->rates[i], base.total_s, &rows[i], &err) != 0)
      return cli_usage_error(CMD, "%s", err.msg);
    if (check_result(rows[i].total_s, "the job", o->rates[i])) return TM_EXIT_USAGE;
  }
  if (o->html && whatif_html_write(o->html, &o->job, rows, o->n_rates, &err) != 0)
    return cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
  if (o->json) return cli_print_json(CMD, whatif_sweep_json(&o->job, &base, rows, o->n_rates));
  double limit = whatif_limit_s(&o->job), max_speedup = whatif_max_speedup(&o->job, base.total_s);
  char a[32], c[32], d[32];
  printf("job: %.0f item%s, each reads %.0f and writes %.0f tokens; %.0f stream%s side by side "
         "(%.0f wave%s)\n",
         o->job.items, o->job.items == 1 ? "" : "s", o->job.read_tokens, o->job.gen_tokens,
         o->job.concurrency, o->job.concurrency == 1 ? "" : "s", rows[0].waves,
         rows[0].waves == 1 ? "" : "s");
  if (o->job.read_tokens > 0) {
    if (o->job.prefill_ratio > 0)
      printf("prefill (PF): %.3g x the generation rate\n", o->job.prefill_ratio);
    else
      printf("prefill (PF): %s tok/s, the same at every generation rate\n",
             fmt_tok_s(o->job.prefill_tok_s, a, sizeof a));
  }
  for (size_t i = 0; i < o->job.n_steps; i++)
    printf("fixed step (FX): %s %s per %s\n", o->steps[i].name,
           tm_fmt_duration(o->steps[i].seconds, a, sizeof a), o->steps[i].per_item ? "item" : "job");
  printf("\n");
  static const char *const head[] = {"rate (DC)", "aggregate (AT)", "read", "generate",
                                     "fixed steps", "end-to-end", "speedup", "fixed share"};
  static const int w[] = {12, 16, 10, 10, 12, 12, 9, 11};
  for (int k = 0; k < 7; k++) put_cell(head[k], w[k]);
  printf("%s\n", head[7]); /* last column: no padding */
  for (size_t i = 0; i < o->n_rates; i++) {
    const struct whatif_row *r = &rows[i];
    char cell[48];
    snprintf(cell, sizeof cell, "%s tok/s", fmt_tok_s(r->rate_tok_s, a, sizeof a));
    put_cell(cell, w[0]);
    snprintf(cell, sizeof cell, "%s tok/s", fmt_tok_s(r->aggregate_tok_s, a, sizeof a));
    put_cell(cell, w[1]);
    put_cell(o->job.read_tokens > 0 ? tm_fmt_duration(r->read_s, a, sizeof a) : "-", w[2]);
    put_cell(tm_fmt_duration(r->generate_s, a, sizeof a), w[3]);
    put_cell(tm_fmt_duration(r->item_steps_s + r->job_steps_s, a, sizeof a), w[4]);
    put_cell(tm_fmt_duration(r->total_s, a, sizeof a), w[5]);
    snprintf(cell, sizeof cell, "%.*fx", r->speedup < 10 ? 2 : r->speedup < 100 ? 1 : 0,
             r->speedup);
    put_cell(isfinite(r->speedup) ? cell : "", w[6]);
    snprintf(cell, sizeof cell, "%.1f%%", 100 * r->fixed_share);
    fputs(isfinite(r->fixed_share) ? cell : "", stdout); /* last column: no padding */
    printf("\n");
  }
  printf("\nbaseline: %s tok/s, %s end to end.\n", fmt_tok_s(b, a, sizeof a),
         tm_fmt_duration(base.total_s, c, sizeof c));
  if (limit > 0)
    printf("floor (infinitely fast generation): %s; no generation rate makes this job more "
           "than %.3gx faster than the baseline.\n",
           tm_fmt_duration(limit, a, sizeof a), max_speedup);
  else
    printf("floor (infinitely fast generation): 0 s; nothing else bounds the speedup.\n");
  const struct whatif_row *last = &rows[o->n_rates - 1];
  if (last->total_s > 0)
    printf("at %s tok/s, generation is %s%.1f%% of the wait; the fixed steps are %.1f%%%s.\n",
           fmt_tok_s(last->rate_tok_s, d, sizeof d),
           last->generate_share < 0.001 ? "under " : "",
           last->generate_share < 0.001 ? 0.1 : 100 * last->generate_share,
           100 * last->fixed_share,
           last->generate_share < 0.1 ? ": a faster generator no longer changes the job" : "");
  return TM_EXIT_OK;
}

int cmd_whatif(int argc, char **argv) {
  enum { O_READ = 256, O_ITEMS, O_STEP, O_PREFILL, O_RATIO, O_BASE, O_CLAIM, O_CPROMPT,
         O_CANSWER, O_STREAMS, O_BPT, O_JSON, O_HTML };
  static const struct option longopts[] = {
      {"gen-tokens", required_argument, 0, 'g'}, {"read-tokens", required_argument, 0, O_READ},
      {"items", required_argument, 0, O_ITEMS},  {"concurrency", required_argument, 0, 'c'},
      {"step", required_argument, 0, O_STEP},    {"rate", required_argument, 0, 'r'},
      {"prefill-rate", required_argument, 0, O_PREFILL},
      {"prefill-ratio", required_argument, 0, O_RATIO},
      {"baseline", required_argument, 0, O_BASE}, {"claim", required_argument, 0, O_CLAIM},
      {"claim-prompt", required_argument, 0, O_CPROMPT},
      {"claim-answer", required_argument, 0, O_CANSWER},
      {"streams", required_argument, 0, O_STREAMS},
      {"bytes-per-token", required_argument, 0, O_BPT}, {"json", no_argument, 0, O_JSON},
      {"html", required_argument, 0, O_HTML},    {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  struct whatif_opts o;
  memset(&o, 0, sizeof o);
  o.job.items = 1;
  o.job.concurrency = 1;
  o.job.prefill_tok_s = NAN;
  o.job.steps = o.steps;
  o.claim_prompt = 100000;
  o.claim_answer = 1000;
  o.bytes_per_token = NAN;
  o.streams[0] = 1, o.streams[1] = 100, o.streams[2] = 10000;
  o.n_streams = 3;
  struct tm_err err;
  bool have_rate = false, have_prefill_rate = false;
  /* The first flag seen that only the sweep uses, and the first only --claim
   * uses: mixing them means one of them would be silently ignored. */
  const char *job_flag = NULL, *claim_flag = NULL;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":g:c:r:h", longopts, NULL)) != -1) {
    int bad = 0; /* -1: a count refused, err says why */
    switch (c) {
      case 'g':
        bad = tm_parse_count(optarg, "--gen-tokens", true, WHATIF_MAX_COUNT, &o.job.gen_tokens,
                             &err);
        o.have_gen = true;
        break;
      case O_READ:
        bad = tm_parse_count(optarg, "--read-tokens", true, WHATIF_MAX_COUNT, &o.job.read_tokens,
                             &err);
        if (!job_flag) job_flag = "--read-tokens";
        break;
      case O_ITEMS:
        bad = tm_parse_count(optarg, "--items", false, WHATIF_MAX_COUNT, &o.job.items, &err);
        if (!job_flag) job_flag = "--items";
        break;
      case 'c':
        bad = tm_parse_count(optarg, "--concurrency", false, WHATIF_MAX_STREAMS, &o.job.concurrency,
                             &err);
        if (!job_flag) job_flag = "--concurrency";
        break;
      case O_STEP: {
        if (o.job.n_steps == WHATIF_MAX_STEPS)
          return cli_usage_error(CMD, "--step: at most %d steps", WHATIF_MAX_STEPS);
        struct whatif_step *st = &o.steps[o.job.n_steps];
        if (whatif_parse_step(optarg, st, &err) != 0)
          return cli_usage_error(CMD, "--step: %s", err.msg);
        if (!(st->seconds <= WHATIF_MAX_STEP_S))
          return cli_usage_error(CMD, "--step: '%s' is longer than 100 years", optarg);
        o.job.n_steps++;
        if (!job_flag) job_flag = "--step";
        break;
      }
      case 'r':
        /* whatif_parse_rates skips empty list elements; a typo must not
         * shorten the sweep, so they are refused here first. */
        if (!strstr(optarg, "..") && check_list(optarg, "--rate") != 0) return TM_EXIT_USAGE;
        if (whatif_parse_rates(optarg, o.rates, WHATIF_MAX_RATES, &o.n_rates, &err) != 0)
          return cli_usage_error(CMD, "--rate: %s", err.msg);
        for (size_t i = 0; i < o.n_rates; i++)
          if (cli_check_rate(CMD, o.rates[i], "--rate", optarg) != 0) return TM_EXIT_USAGE;
        have_rate = true;
        break;
      case O_PREFILL:
        if (cli_parse_rate(CMD, optarg, "--prefill-rate", &o.job.prefill_tok_s)) return TM_EXIT_USAGE;
        have_prefill_rate = true;
        break;
      case O_RATIO: {
        char *end;
        o.job.prefill_ratio = strtod(optarg, &end);
        if (end == optarg || *end || !(o.job.prefill_ratio > 0) || !isfinite(o.job.prefill_ratio))
          return cli_usage_error(CMD, "--prefill-ratio: '%s' is not a number above 0", optarg);
        if (!(o.job.prefill_ratio >= 1e-3 && o.job.prefill_ratio <= WHATIF_MAX_RATIO))
          return cli_usage_error(CMD, "--prefill-ratio: '%s' is outside 0.001 to 1000000", optarg);
        if (!job_flag) job_flag = "--prefill-ratio";
        break;
      }
      case O_BASE:
        if (cli_parse_rate(CMD, optarg, "--baseline", &o.baseline)) return TM_EXIT_USAGE;
        if (!job_flag) job_flag = "--baseline";
        break;
      case O_CLAIM: o.claim = optarg; break;
      case O_CPROMPT:
        bad = tm_parse_count(optarg, "--claim-prompt", false, WHATIF_MAX_COUNT, &o.claim_prompt,
                             &err);
        if (!claim_flag) claim_flag = "--claim-prompt";
        break;
      case O_CANSWER:
        bad = tm_parse_count(optarg, "--claim-answer", false, WHATIF_MAX_COUNT, &o.claim_answer,
                             &err);
        if (!claim_flag) claim_flag = "--claim-answer";
        break;
      case O_STREAMS:
        if (parse_streams(optarg, &o)) return TM_EXIT_USAGE;
        if (!claim_flag) claim_flag = "--streams";
        break;
      case O_BPT:
        if (tm_parse_bytes(optarg, &o.bytes_per_token, &err) != 0 || !(o.bytes_per_token > 0))
          return cli_usage_error(CMD, "--bytes-per-token: '%s' is not a size above 0 "
                                      "(e.g. 4GB)", optarg);
        if (!(o.bytes_per_token <= WHATIF_MAX_BYTES_PER_TOKEN))
          return cli_usage_error(CMD, "--bytes-per-token: '%s' is above the limit of 1PB",
                                 optarg);
        if (!claim_flag) claim_flag = "--bytes-per-token";
        break;
      case O_JSON: o.json = true; break;
      case O_HTML: o.html = optarg; break;
      case 'h': usage(stdout); return TM_EXIT_OK;
      case ':': return cli_usage_error(CMD, "%s needs a value", argv[optind - 1]);
      default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
    if (bad) return cli_usage_error(CMD, "%s", err.msg);
  }
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  if (have_prefill_rate && o.job.prefill_ratio > 0)
    return cli_usage_error(CMD, "--prefill-rate and --prefill-ratio both set the prefill rate; "
                                "give one");
  if (o.claim) {
    if (have_rate || o.have_gen)
      return cli_usage_error(CMD, "--claim reads one figure; leave out --rate and --gen-tokens");
    if (o.html) return cli_usage_error(CMD, "--html draws the sweep; it has no plot for --claim");
    if (job_flag)
      return cli_usage_error(CMD, "%s describes a job; --claim does not use it", job_flag);
    return run_claim(&o);
  }
  if (claim_flag)
    return cli_usage_error(CMD, "%s applies to --claim only", claim_flag);
  if (!o.have_gen) return cli_usage_error(CMD, "give --gen-tokens (tokens written per item)");
  if (!have_rate) return cli_usage_error(CMD, "give --rate (e.g. 50, or a sweep 100..1M)");
  return run_sweep(&o);
}
