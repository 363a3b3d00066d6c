/* cmd_bench_ttft: `tokmeter bench --ttft-sweep`, the lengths to measure and
 * the fit printed at the end (src/analysis/ttft.h): TTFT = fixed cost +
 * L / prefill rate, by least squares over the sweep's timed runs.
 *
 * In-process, the "TTFT" of a pp<L> run is its batched prefill of L tokens
 * (the time to the first token's logits, no network, no sampling); over a
 * server it is the client's TTFT of each custom-workload request (network,
 * queueing and the first decode step included), from tokens.processed.
 *
 * The fit reads the results file back (the invocation just written is the
 * file's last), so it sees exactly the runs the records hold. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/results.h"
#include "analysis/ttft.h"
#include "cli/bench_cli.h"
#include "cli/cli.h"
#include "record/record.h"
#include "util/units.h"

static const char *const CMD = "bench";
#define SWEEP_SERVER_MAX 8 /* the runner's workload limit */
#define SWEEP_SERVER_GEN 16

int bench_ttft_prepare(struct bench_opts *o) {
  if (o->n_prompt_tokens == 0) {
    for (uint32_t l = 32; l <= 1024; l *= 2) o->prompt_tokens[o->n_prompt_tokens++] = l;
  }
  size_t distinct = 0;
  for (size_t i = 0; i < o->n_prompt_tokens; i++) {
    if (o->prompt_tokens[i] == 0)
      return cli_usage_error(CMD, "--ttft-sweep: prompt length 0 in -p");
    bool seen = false;
    for (size_t j = 0; j < i; j++) seen |= o->prompt_tokens[j] == o->prompt_tokens[i];
    distinct += !seen;
  }
  if (distinct < 2)
    return cli_usage_error(CMD, "--ttft-sweep needs at least 2 distinct prompt lengths in -p "
                                "(default 32,64,128,256,512,1024)");
  /* The fit needs 3 timed points (2 leave no standard error): refuse
   * before running what cannot be fitted (the default -r is 3 or more). */
  if (o->reps && (uint64_t)o->reps * distinct < 3)
    return cli_usage_error(CMD, "--ttft-sweep: %zu prompt lengths x %u repetition%s give %llu "
                                "timed runs; the fit needs at least 3 (more -p lengths or -r)",
                           distinct, o->reps, o->reps == 1 ? "" : "s",
                           (unsigned long long)o->reps * distinct);
  if (o->url) {
    if (o->n_prompt_tokens > SWEEP_SERVER_MAX)
      return cli_usage_error(CMD, "--ttft-sweep with --url: at most %d prompt lengths",
                             SWEEP_SERVER_MAX);
    if (o->workloads || o->prompt_file)
      return cli_usage_error(CMD, "--ttft-sweep with --url runs its own workloads: drop "
                                  "--workload / --prompt-file");
    if (o->n_max_tokens == 0) o->max_tokens[o->n_max_tokens++] = SWEEP_SERVER_GEN;
  } else if (o->n_max_tokens == 0) {
    o->max_tokens[o->n_max_tokens++] = 0; /* pp only */
  }
  return 0;
}

static void print_fit(FILE *out, const char *key, const struct ttft_fit *f) {
  /* ms below 1 with three significant digits: a tiny model's fit is
   * 0.06 ms, not "0.0" */
  char a[32], b[32];
  fprintf(out, "%s\n", key);
  fprintf(out, "  TTFT = %s +- %s ms (FX, fixed) + L / (%.0f +- %.0f tok/s) (PF, prefill rate)\n",
          tm_fmt_ms_fit(f->fixed_ms, a, sizeof a), tm_fmt_ms_fit(f->se_fixed_ms, b, sizeof b),
          f->prefill_tok_s, f->se_prefill_tok_s);
  fprintf(out, "  fitted over %zu runs at %zu lengths (%.0f..%.0f tokens), r^2 %.4f\n",
          f->n_points, f->n_lengths, f->min_len, f->max_len, f->r2);
  if (f->fixed_ms < 0)
    fprintf(out, "  the fixed cost fits below zero: TTFT grows faster than a line over this "
                 "range (attention over long prompts) or noise; fit a narrower range with -p\n");
  double lens[3] = {f->min_len, 512, 4096};
  for (int i = 0; i < 3; i++) {
    if (i > 0 && lens[i] <= lens[0]) continue;
    double se = NAN, t = ttft_predict_ms(f, lens[i], &se);
    double share = ttft_fixed_share(f, lens[i]);
    if (!(t > 0)) {
      fprintf(out, "  at %5.0f tokens: the line predicts no positive TTFT here\n", lens[i]);
      continue;
    }
    char sh[48];
    snprintf(sh, sizeof sh, "%s", f->fixed_ms < 0 ? "no fixed share (it fits below zero)"
                                                  : "fixed share unknown");
    if (isfinite(share)) snprintf(sh, sizeof sh, "%.0f%% of it fixed cost", 100 * share);
    fprintf(out, "  at %5.0f tokens: TTFT %s +- %s ms, %s%s\n", lens[i],
            tm_fmt_ms_fit(t, a, sizeof a), tm_fmt_ms_fit(se, b, sizeof b), sh,
            lens[i] > f->max_len ? " (extrapolated)" : "");
  }
}

int bench_ttft_report(const struct bench_opts *o) {
  const char *path = o->out ? o->out : RECORD_DEFAULT_FILE;
  struct results r;
  struct tm_err err = {{0}};
  if (results_load(&path, 1, &r, &err) != 0)
    return cli_fail(CMD, TM_EXIT_RUNTIME, "--ttft-sweep: cannot read the records back: %s",
                    err.msg);
  FILE *out = o->json ? stderr : stdout;
  int rc = TM_EXIT_OK;
  if (r.n_inv == 0) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "--ttft-sweep: no records in %s", path);
  } else {
    /* Only the invocation just written: the last group of the file. */
    struct results last = {.inv = &r.inv[r.n_inv - 1], .n_inv = 1};
    struct ttft_groups g;
    if (ttft_points_from_results(&last, &g, &err) != 0) {
      rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
    } else {
      fprintf(out, "\nTime to first token, fitted (TTFT = fixed cost + prompt tokens / "
                   "prefill rate, least squares, +- one standard error):\n");
      if (g.n == 0) fprintf(out, "  no usable runs (every run failed or was excluded)\n");
      for (size_t i = 0; i < g.n; i++) {
        struct ttft_fit f;
        if (ttft_fit_points(g.g[i].len, g.g[i].ttft_ms, g.g[i].n, &f, &err) == 0)
          print_fit(out, g.g[i].key, &f);
        else
          fprintf(out, "%s\n  no fit: %s\n", g.g[i].key, err.msg);
      }
      ttft_groups_free(&g);
    }
  }
  results_free(&r);
  return rc;
}
