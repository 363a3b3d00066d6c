/* cmd_compare: `tokmeter compare A.jsonl B.jsonl`: per configuration and
 * metric, A's and B's medians, the ratio B/A with its confidence interval,
 * and a verdict that ranks only when the interval excludes 1 (docs/design.md rule
 * 12); the ratio the ceilings predict when the sides differ in something the
 * ceiling models; drift inside a series (rule 11). The judging is in
 * src/analysis/compare.c, the --json document in compare_json.c, the files
 * are read (and refused when they leave nothing to compare) by
 * compare_files.c; this file parses flags and prints.
 * Exit: 0 compared; 2 bad flags, unreadable / corrupt / empty files, or no
 * configuration measured on both sides.
 * Flags: every value within the range --help states; --resamples and --seed
 * only with --method bootstrap (Welch's interval uses neither, and a flag
 * that changes nothing must not look as if it had). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "analysis/answers.h"
#include "analysis/compare_files.h"
#include "analysis/compare_load.h"
#include "cli/cli.h"
#include "util/units.h"

#define CMD "compare"

/* A reference; the pairing, the interval, the predictions and drift are
 * explained in docs/compare.md. */
static void usage(FILE *f) {
  fprintf(f,
          "Usage: tokmeter compare [options] A.jsonl B.jsonl\n"
          "Per configuration and metric: A's and B's medians, the ratio B/A with its\n"
          "confidence interval, and a verdict that ranks only when the interval\n"
          "excludes 1. Times (ms) are faster below 1, rates (tok/s) above 1.\n"
          "Two files of `tokmeter load` records: level against the level of the same\n"
          "load (aggregate output, one stream's decode, TTFT, end to end); the shards\n"
          "of one run (cat their files into one) are merged first.\n"
          "\n"
          "  --confidence C     confidence of the interval, 0 < C < 1 or a percentage\n"
          "                     from 50 to 99.9 (default 0.95)\n"
          "  --method M         welch | bootstrap (default welch: Welch's t on log values)\n"
          "  --resamples N      bootstrap resamples, 100 to 10000000; with --method\n"
          "                     bootstrap only (default %d)\n"
          "  --seed N           bootstrap seed, 0 to 9223372036854775807; with --method\n"
          "                     bootstrap only (default %llu)\n"
          "  --json             one JSON document on stdout (default: a table)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit codes: 0 compared; 2 bad usage, an unusable file, or nothing in common.\n"
          "Details: docs/compare.md\n",
          STATS_BOOTSTRAP_RESAMPLES, (unsigned long long)STATS_BOOTSTRAP_SEED);
}

/* ---- number formatting: blank when unknown, units always ----------------- */

static const char *fmt_value(double v, const char *unit, char *buf, size_t n) {
  if (!isfinite(v)) {
    snprintf(buf, n, "-");
  } else if (!strcmp(unit, "ms")) {
    tm_fmt_duration(v / 1000.0, buf, n);
  } else {
    char r[32];
    snprintf(buf, n, "%s %s", tm_fmt_rate(v, r, sizeof r), unit);
  }
  return buf;
}

static const char *fmt_ratio(double r, char *buf, size_t n) {
  if (!isfinite(r)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.3f", r);
  return buf;
}

/* "+37.8%" / "-4.6%": how people say a ratio. */
static const char *fmt_change(double r, char *buf, size_t n) {
  if (!isfinite(r)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%+.1f%%", 100 * (r - 1));
  return buf;
}

/* Prints s left-aligned in width columns, counting UTF-8 characters (not
 * bytes: "µs" is one column per letter), then a space. */
static void cell(const char *s, int width) {
  int cols = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xc0) != 0x80) cols++;
  fputs(s, stdout);
  for (; cols < width; cols++) putchar(' ');
  putchar(' ');
}

static void print_drift(const char *side, const struct compare_row *row,
                        const struct stats_drift *d, bool ok) {
  if (!ok || !d->slower) return;
  printf("    drift: %s %s gets slower over its %zu runs (fitted %+.1f%% from first to last,"
         " beyond the noise): thermal throttling or background load; compare after a"
         " cool-down\n",
         side, record_metric_name(row->a->metric), d->n, 100 * d->change);
}

/* The checked answers of a pair of configurations, A and B (NULL: none on
 * that side): counts, and the Fisher exact test of the correct ones. */
struct answers_pair {
  const struct answer_tally *a, *b;
  double p;
};
static struct answers_pair answers_of(const struct answer_tallies *ta,
                                      const struct answer_tallies *tb, const char *key_a,
                                      const char *key_b) {
  struct answers_pair ap = {answer_tally_find(ta, key_a), answer_tally_find(tb, key_b), NAN};
  if (ap.a && ap.b)
    ap.p = answers_fisher_p(ap.a->correct, ap.a->correct + ap.a->wrong + ap.a->no_answer,
                            ap.b->correct, ap.b->correct + ap.b->wrong + ap.b->no_answer);
  return ap;
}

static void print_side(const char *side, const struct answer_tally *t) {
  if (!t) {
    printf("%s no checked answers", side);
    return;
  }
  printf("%s %u/%u correct", side, t->correct, t->correct + t->wrong + t->no_answer);
  if (t->no_answer) printf(" (%u no answer)", t->no_answer);
}

/* Under a configuration's rows: its answers on both sides, when any. */
static void print_answers(const struct answer_tallies *ta, const struct answer_tallies *tb,
                          const struct compare_row *row) {
  const struct answers_pair ap = answers_of(ta, tb, row->a->key, row->b->key);
  if (!ap.a && !ap.b) return;
  printf("  answers: ");
  print_side("A", ap.a);
  printf(", ");
  print_side("B", ap.b);
  if (isfinite(ap.p)) {
    const double sa = (double)ap.a->correct / (ap.a->correct + ap.a->wrong + ap.a->no_answer);
    const double sb = (double)ap.b->correct / (ap.b->correct + ap.b->wrong + ap.b->no_answer);
    if (ap.p < 0.05)
      printf(": B %s accurate (Fisher exact p = %.2g)", sb > sa ? "more" : "less", ap.p);
    else
      printf(": not distinguishable with these counts (Fisher exact p = %.2g)", ap.p);
  }
  printf("\n");
}

static void print_table(const struct compare_result *cr, const char *path_a, const char *path_b,
                        const struct compare_opts *o, const struct answer_tallies *ta,
                        const struct answer_tallies *tb) {
  printf("A = %s\nB = %s\n", path_a, path_b);
  printf("B/A with its %g%% interval (%s); ranked only when the interval excludes 1\n",
         100 * o->confidence,
         o->method == STATS_CI_WELCH ? "Welch's t on log values" : "bootstrap");
  for (size_t i = 0; i < cr->n; i++) {
    const struct compare_row *row = &cr->rows[i];
    const struct compare_row *prev = i ? &cr->rows[i - 1] : NULL;
    if (!prev || strcmp(prev->a->key, row->a->key) || strcmp(prev->b->key, row->b->key)) {
      if (row->differs[0])
        printf("\nA: %s\nB: %s   (differs: %s)\n", row->a->key, row->b->key, row->differs);
      else
        printf("\n%s\n", row->a->key);
      printf("  %-20s %-3s %-18s %-18s %-7s %-17s %-20s %s\n", "metric", "q", "A median (n)",
             "B median (n)", "B/A", "interval", "verdict", "ceilings predict");
    }
    char va[40], vb[40], ca[64], cb[64], r[24], lo[24], hi[24], iv[64], pr[24], pc[24], pd[128];
    snprintf(ca, sizeof ca, "%s (%zu)", fmt_value(row->sa.median, row->a->unit, va, sizeof va),
             row->sa.n);
    snprintf(cb, sizeof cb, "%s (%zu)", fmt_value(row->sb.median, row->b->unit, vb, sizeof vb),
             row->sb.n);
    if (row->ci_ok)
      snprintf(iv, sizeof iv, "[%s, %s]", fmt_ratio(row->ci.lo, lo, sizeof lo),
               fmt_ratio(row->ci.hi, hi, sizeof hi));
    else
      snprintf(iv, sizeof iv, "-");
    if (isfinite(row->predicted_ratio))
      snprintf(pd, sizeof pd, "%s (%s) from %s", fmt_ratio(row->predicted_ratio, pr, sizeof pr),
               fmt_change(row->predicted_ratio, pc, sizeof pc), row->predicted_from);
    else
      pd[0] = '\0';
    printf("  ");
    cell(record_metric_name(row->a->metric), 20);
    cell(row->a->quantity, 3);
    cell(ca, 18);
    cell(cb, 18);
    cell(fmt_ratio(row->ci.ratio, r, sizeof r), 7);
    cell(iv, 17);
    if (pd[0]) {
      cell(compare_verdict_name(row->verdict), 20);
      printf("%s\n", pd);
    } else {
      printf("%s\n", compare_verdict_name(row->verdict));
    }
    print_drift("A", row, &row->drift_a, row->drift_a_ok);
    print_drift("B", row, &row->drift_b, row->drift_b_ok);
    const struct compare_row *next = i + 1 < cr->n ? &cr->rows[i + 1] : NULL;
    const bool last_of_pair =
        !next || strcmp(next->a->key, row->a->key) || strcmp(next->b->key, row->b->key);
    if (pd[0]) { /* a prediction from ceilings that moved within a side */
      char note[256];
      if (series_ceiling_note(row->a, note, sizeof note))
        printf("    ceilings: A: %s (the prediction is uncertain by as much)\n", note);
      if (series_ceiling_note(row->b, note, sizeof note))
        printf("    ceilings: B: %s (the prediction is uncertain by as much)\n", note);
    }
    if (last_of_pair) print_answers(ta, tb, row);
  }
  size_t n_rank = 0, n_nd = 0, n_few = 0, n_zero = 0;
  for (size_t i = 0; i < cr->n; i++) {
    enum compare_verdict v = cr->rows[i].verdict;
    if (v == COMPARE_FASTER || v == COMPARE_SLOWER) n_rank++;
    else if (v == COMPARE_TOO_FEW) n_few++;
    else if (v == COMPARE_ZERO) n_zero++;
    else n_nd++;
  }
  printf("\n%zu compared: %zu ranked, %zu not distinguishable, %zu with too few runs (< 2)",
         cr->n, n_rank, n_nd, n_few);
  if (n_zero) printf(", %zu with a value of 0 (no ratio of it)", n_zero);
  if (cr->only_a || cr->only_b)
    printf("; %zu series only in A, %zu only in B (not compared)", cr->only_a, cr->only_b);
  printf(".\n");
}

/* --json: one entry per compared pair of configurations with answers on
 * either side: key_a, key_b, a and b ({correct, wrong, no_answer} or null),
 * fisher_p (null unless both sides have some). */
static json_t *tally_json(const struct answer_tally *t) {
  return t ? json_pack("{s:i, s:i, s:i}", "correct", (int)t->correct, "wrong", (int)t->wrong,
                       "no_answer", (int)t->no_answer)
           : json_null();
}
static json_t *answers_json(const struct compare_result *cr, const struct answer_tallies *ta,
                            const struct answer_tallies *tb) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < cr->n; i++) {
    const struct compare_row *row = &cr->rows[i];
    if (i && !strcmp(cr->rows[i - 1].a->key, row->a->key) &&
        !strcmp(cr->rows[i - 1].b->key, row->b->key))
      continue; /* one entry per pair */
    const struct answers_pair ap = answers_of(ta, tb, row->a->key, row->b->key);
    if (!ap.a && !ap.b) continue;
    json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:o, s:o}", "key_a", row->a->key, "key_b",
                                         row->b->key, "a", tally_json(ap.a), "b", tally_json(ap.b),
                                         "fisher_p", isfinite(ap.p) ? json_real(ap.p) : json_null()));
  }
  return arr ? arr : json_null();
}

/* ---- main ---------------------------------------------------------------- */

enum { O_CONF = 256, O_METHOD, O_RESAMPLES, O_SEED, O_JSON };

/* 1 when both files hold load records (the load comparison), 0 when not,
 * -1 when one does not read (err: its FILE:LINE and why). */
static int both_load(const char *a, const char *b, struct tm_err *err) {
  const char *paths[2] = {a, b};
  int both = 1;
  for (int k = 0; k < 2; k++) {
    if (!strcmp(paths[k], "-")) return 0; /* stdin reads once: the series path */
    struct results r;
    if (results_load(&paths[k], 1, &r, err) != 0) return -1;
    if (!compare_load_has_loads(&r)) both = 0;
    results_free(&r);
  }
  return both;
}

static void print_load_table(const struct compare_load *c, const struct compare_opts *o) {
  printf("A: %s\nB: %s\n", c->a->title, c->b->title);
  printf("%-10s %-24s %12s %12s %8s %21s  %s\n", "level", "metric", "A", "B", "B/A",
         "interval", "verdict");
  for (size_t i = 0; i < c->n; i++) {
    const struct compare_load_row *r = &c->rows[i];
    char ratio[16] = "-", ci[32] = "-";
    if (r->ci_ok) {
      snprintf(ratio, sizeof ratio, "%.3f", r->ci.ratio);
      snprintf(ci, sizeof ci, "%.3f..%.3f", r->ci.lo, r->ci.hi);
    }
    printf("%-10s %-24s %12.2f %12.2f %8s %21s  %s\n", r->level, r->metric, r->a, r->b, ratio, ci,
           compare_verdict_name(r->verdict));
  }
  const bool in_process =
      json_is_array(json_object_get(c->a->levels[0].record, "reps_aggregate_tok_s"));
  if (in_process)
    printf("(%.0f%% intervals on B/A over the timed passes of each level: in process a pass's "
           "streams step together, one sample; A and B: the level's median pass)\n",
           100 * o->confidence);
  else
    printf("(%.0f%% intervals on B/A; the aggregate from %d slices of each window, the rest per "
           "request; A and B: the level's aggregate, the median of the rest)\n",
           100 * o->confidence, COMPARE_LOAD_SLICES);
  if (c->only_a || c->only_b)
    printf("levels with no partner: %zu in A, %zu in B\n", c->only_a, c->only_b);
}

int cmd_compare(int argc, char **argv) {
  static const struct option longopts[] = {
      {"confidence", required_argument, 0, O_CONF}, {"method", required_argument, 0, O_METHOD},
      {"resamples", required_argument, 0, O_RESAMPLES}, {"seed", required_argument, 0, O_SEED},
      {"json", no_argument, 0, O_JSON}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  struct compare_opts o;
  compare_opts_default(&o);
  bool json = false, have_resamples = false, have_seed = false;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
    case 'h': usage(stdout); return TM_EXIT_OK;
    case O_CONF: {
      double v = strtod(optarg, &end);
      if (end == optarg || *end) return cli_usage_error(CMD, "--confidence: '%s' is not a number", optarg);
      /* 95 means 95%; 1.5 is a typo, not 1.5%. A percentage stops at 99.9 as
       * --help says: beyond, the tails hold too few resamples to mean much. */
      if (v >= 50 && v < 100) v = v <= 99.9 ? v / 100 : NAN;
      if (!(v > 0 && v < 1))
        return cli_usage_error(CMD, "--confidence: '%s' must be between 0 and 1 (e.g. 0.95)"
                               " or a percentage from 50 to 99.9", optarg);
      o.confidence = v;
      break;
    }
    case O_METHOD:
      if (!strcmp(optarg, "welch")) o.method = STATS_CI_WELCH;
      else if (!strcmp(optarg, "bootstrap")) o.method = STATS_CI_BOOTSTRAP;
      else return cli_usage_error(CMD, "--method: '%s' is not welch or bootstrap", optarg);
      break;
    case O_RESAMPLES: {
      unsigned long v = strtoul(optarg, &end, 10);
      if (end == optarg || *end || optarg[0] == '-' || v < 100 || v > 10000000UL)
        return cli_usage_error(CMD, "--resamples: '%s' must be an integer from 100 to 10000000", optarg);
      o.resamples = (unsigned)v;
      have_resamples = true;
      break;
    }
    case O_SEED: {
      /* Decimal digits only, at most INT64_MAX: --json stores the seed as a
       * JSON integer (signed 64-bit), and a seed that cannot be shown exactly
       * cannot be given again to reproduce the interval. */
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (optarg[0] < '0' || optarg[0] > '9' || *end)
        return cli_usage_error(CMD, "--seed: '%s' is not a non-negative integer", optarg);
      if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
        return cli_usage_error(CMD, "--seed: '%s' is above the largest seed, %lld", optarg,
                               (long long)INT64_MAX);
      o.seed = v;
      have_seed = true;
      break;
    }
    case O_JSON: json = true; break;
    case ':': return cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
    default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
  }
  if (o.method != STATS_CI_BOOTSTRAP && (have_resamples || have_seed))
    return cli_usage_error(CMD, "%s applies to --method bootstrap (welch, the default, draws "
                                "no resamples)", have_resamples ? "--resamples" : "--seed");
  if (argc - optind != 2)
    return cli_usage_error(CMD, "give exactly two results files (A then B), got %d", argc - optind);
  const char *path_a = argv[optind], *path_b = argv[optind + 1];
  struct tm_err err = {{0}};
  bool oom;
  const int loads = both_load(path_a, path_b, &err);
  if (loads < 0) return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
  if (loads) {
    struct compare_load cl;
    if (compare_load_files(path_a, path_b, &o, &cl, &oom, &err) != 0)
      return cli_fail(CMD, oom ? TM_EXIT_RUNTIME : TM_EXIT_USAGE, "%s", err.msg);
    int rc = TM_EXIT_OK;
    if (json) rc = cli_print_json(CMD, compare_load_json(&cl, path_a, path_b, &o));
    else print_load_table(&cl, &o);
    compare_load_free(&cl);
    return rc;
  }
  struct compare_files cf;
  if (compare_files_load(path_a, path_b, &o, &cf, &oom, &err) != 0)
    return cli_fail(CMD, oom ? TM_EXIT_RUNTIME : TM_EXIT_USAGE, "%s", err.msg);
  if (cf.ra.torn_note[0]) cli_warn(CMD, "%s", cf.ra.torn_note);
  if (cf.rb.torn_note[0]) cli_warn(CMD, "%s", cf.rb.torn_note);
  struct answer_tallies ta, tb;
  if (answer_tallies_of(&cf.ra, &ta) != 0 || answer_tallies_of(&cf.rb, &tb) != 0) {
    compare_files_free(&cf);
    return cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
  }
  int rc = TM_EXIT_OK;
  if (json) {
    json_t *doc = compare_json(&cf.cr, path_a, path_b, &o);
    if (doc) json_object_set_new(doc, "answers", answers_json(&cf.cr, &ta, &tb));
    rc = cli_print_json(CMD, doc);
  } else {
    print_table(&cf.cr, path_a, path_b, &o, &ta, &tb);
  }
  answer_tallies_free(&ta);
  answer_tallies_free(&tb);
  compare_files_free(&cf);
  return rc;
}
