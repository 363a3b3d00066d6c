/* server_findings: see server_findings.h. */
#include "bench/server_findings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/drift.h"
#include "machine/probe.h"
#include "model/ceiling.h"
#include "util/redact.h"

static struct bench_finding *add(struct bench_findings *out, const char *code,
                                 enum bench_severity sev, const struct bench_summary *s) {
  struct bench_finding *f = bench_findings_add(out, code, sev);
  if (f) snprintf(f->config.workload, sizeof f->config.workload, "%s", s->workload);
  return f;
}

static void set_test(struct bench_finding *f, const char *phase) {
  if (f) snprintf(f->config.test, sizeof f->config.test, "%s", phase);
}

static double med(const struct stats_summary *x) { return x->n ? x->median : NAN; }

void bench_server_findings(const struct bench_summary *s, const struct record_ceiling *c,
                           double steal_share, struct bench_findings *out) {
  const char *w = s->workload[0] ? s->workload : "?";
  struct bench_finding *f;
  if (s->n_failed) {
    f = add(out, "runs_failed", BENCH_PROBLEM, s);
    bench_finding_figure(f, "failed_runs", s->n_failed);
    bench_finding_figure(f, "runs", s->n_runs);
    bench_finding_brief(f, "%s: %u of %u timed runs failed (kinds in the records)", w,
                        s->n_failed, s->n_runs);
    bench_finding_text(f, "%s: %u of %u timed runs failed; the others are measured and "
                          "summarised.", w, s->n_failed, s->n_runs);
  }
  if (s->n_buffered) {
    f = add(out, "stream_buffered", BENCH_PROBLEM, s);
    bench_finding_figure(f, "buffered_runs", s->n_buffered);
    bench_finding_figure(f, "ok_runs", s->n_ok);
    bench_finding_brief(f, "%s: buffered stream in %u of %u runs: inter-token figures withheld",
                        w, s->n_buffered, s->n_ok);
    bench_finding_text(f, "%s: the stream arrived buffered (not token by token) in %u of %u "
                          "runs: the inter-token figures are withheld.", w, s->n_buffered,
                       s->n_ok);
  }
  if (s->n_cache_hits) {
    f = add(out, "cache_hit", BENCH_WARNING, s);
    bench_finding_figure(f, "cache_hit_runs", s->n_cache_hits);
    bench_finding_figure(f, "ok_runs", s->n_ok);
    bench_finding_brief(f, "%s: prompt cache hit in %u of %u runs: %s", w, s->n_cache_hits,
                        s->n_ok, s->allow_cache ? "KEPT (--allow-cache)" : "left out of prefill");
    bench_finding_text(f, "%s: the prompt cache reached past the nonce in %u of %u runs: %s.", w,
                       s->n_cache_hits, s->n_ok,
                       s->allow_cache ? "kept in the prefill figures (--allow-cache), which "
                                        "are then not a prefill measurement"
                                      : "left out of the prefill and TTFT figures");
  }
  if (s->n_count_mismatch) {
    f = add(out, "count_mismatch", BENCH_INFO, s);
    bench_finding_figure(f, "mismatch_runs", s->n_count_mismatch);
    bench_finding_brief(f, "%s: server token count differs from the chunks in %u runs", w,
                        s->n_count_mismatch);
    bench_finding_text(f, "%s: the server's token count differs from the chunks received in %u "
                          "of %u runs (the server's count is used).", w, s->n_count_mismatch,
                       s->n_ok);
  }
  if (s->n_reasoning_ate_budget) {
    f = add(out, "reasoning_ate_budget", BENCH_WARNING, s);
    bench_finding_figure(f, "runs", s->n_reasoning_ate_budget);
    bench_finding_figure(f, "reasoning_tokens", med(&s->reasoning_tokens));
    bench_finding_brief(f, "%s: reasoning ate the output budget in %u of %u runs", w,
                        s->n_reasoning_ate_budget, s->n_ok);
    bench_finding_text(f, "%s: reasoning ate the output budget in %u of %u runs.", w,
                       s->n_reasoning_ate_budget, s->n_ok);
  }
  for (int ph = 0; ph < 2; ph++) {
    const struct stats_drift *dr = ph ? &s->decode_drift : &s->prefill_drift;
    char note[320];
    if (!(ph ? s->decode_drift_tested : s->prefill_drift_tested) ||
        !*bench_drift_note(dr, "run", note, sizeof note))
      continue;
    f = add(out, "drift", BENCH_WARNING, s);
    set_test(f, ph ? "decode" : "prefill");
    bench_finding_figure(f, "change_fraction", dr->change);
    bench_finding_brief(f, "%s: %s's later runs %.0f%% slower than the first (drift)", w,
                        ph ? "decode" : "prefill", -100.0 * dr->change);
    bench_finding_text(f, "%s: %s %s; %s.", w, ph ? "decode" : "prefill", note,
                       BENCH_DRIFT_ADVICE);
  }
  char note[600];
  if (machine_steal_warning(0, steal_share, note, sizeof note)) {
    f = add(out, "steal", BENCH_WARNING, s);
    bench_finding_figure(f, "cpu_steal_share", steal_share);
    bench_finding_brief(f, "%s: steal: the host took %.1f%% of the CPU time of its runs", w,
                        100 * steal_share);
    bench_finding_text(f, "%s (its timed runs): %s", w, note);
  }
  if (!c) return;
  const double pd = record_percent_of(med(&s->decode_headline), c->decode_ceiling_tok_s);
  const double pp = record_percent_of(med(&s->prefill_headline), c->prefill_ceiling_tok_s);
  if (pd > 100) {
    f = add(out, "above_ceiling", BENCH_WARNING, s);
    set_test(f, "decode");
    bench_finding_figure(f, "percent_of_ceiling", pd);
    bench_finding_brief(f, "%s: decode at %.0f%% of its ceiling: not a measurement to share", w,
                        pd);
    bench_finding_text(f, "%s: decode at %.0f%% of its ceiling: a mixture-of-experts model read "
                          "as dense, speculative decoding or a buffered stream, not a "
                          "measurement to share.", w, pd);
  } else if (pd < 100 * CEILING_PRACTICAL_LO) {
    f = add(out, "decode_below_practical", BENCH_WARNING, s);
    set_test(f, "decode");
    bench_finding_figure(f, "decode_percent_of_ceiling", pd);
    bench_finding_figure(f, "decode_tok_s", med(&s->decode_headline));
    bench_finding_figure(f, "decode_ceiling_tok_s", c->decode_ceiling_tok_s);
    bench_finding_brief(f, "%s: decode at %.0f%% of its ceiling, below the 75-85%% practical", w,
                        pd);
    bench_finding_text(f, "%s: decode at %.0f%% of its ceiling, below the 75-85%% well-tuned "
                          "runtimes reach: check the threads and the build's SIMD flags.", w, pd);
  }
  if (pp > 100) {
    f = add(out, "above_ceiling", BENCH_WARNING, s);
    set_test(f, "prefill");
    bench_finding_figure(f, "percent_of_ceiling", pp);
    bench_finding_brief(f, "%s: prefill at %.0f%% of its ceiling: not a measurement to share", w,
                        pp);
    bench_finding_text(f, "%s: prefill at %.0f%% of its ceiling: a cached prompt or a wrong "
                          "compute figure, not a measurement to share.", w, pp);
  }
}

void bench_implausible_findings(const char *workload, const uint32_t *n,
                                const char (*first)[160], uint32_t requests,
                                struct bench_findings *out) {
  for (int k = RUN_CHECK_NONE + 1; k < RUN_CHECK_COUNT; k++) {
    if (!n[k]) continue;
    struct bench_finding *f = bench_findings_add(out, run_check_name((enum run_check)k),
                                                 BENCH_PROBLEM);
    if (f) snprintf(f->config.workload, sizeof f->config.workload, "%s", workload);
    bench_finding_figure(f, "requests", n[k]);
    bench_finding_figure(f, "of_requests", requests);
    bench_finding_brief(f, "%s: %u of %u requests broke the %s check (the server's figures)",
                        workload, n[k], requests, run_check_name((enum run_check)k));
    bench_finding_text(f, "%s: %u of %u requests failed the %s check, the server's figures "
                          "being impossible or contradicting what the client saw; the first: %s.",
                       workload, n[k], requests, run_check_name((enum run_check)k), first[k]);
    if (f) tm_clean_control(f->text), tm_clean_control(f->brief);
  }
}

void bench_server_steal_finding(double steal_share, struct bench_findings *out) {
  if (bench_findings_find(out, "steal", NULL)) return;
  char note[600];
  if (!machine_steal_warning(0, steal_share, note, sizeof note)) return;
  struct bench_finding *f = bench_findings_add(out, "steal", BENCH_WARNING);
  bench_finding_figure(f, "cpu_steal_share", steal_share);
  bench_finding_brief(f, "steal: the host took %.1f%% of this machine's CPU time during the runs",
                      100 * steal_share);
  bench_finding_text(f, "%s", note);
}
