/* load_findings: the findings of a load run's levels (failures, cache
 * hits, buffered streams, a client that could not drive the level) and the
 * knee across them. */
#include <math.h>
#include <stdio.h>

#include "bench/load_internal.h"

/* "c=4" or "rate=2/s": a level's name in findings and tables. */
void load_level_name(const struct load_level *lv, char *buf, size_t n) {
  if (lv->concurrency) snprintf(buf, n, "c=%u", lv->concurrency);
  else snprintf(buf, n, "rate=%g/s", lv->request_rate);
}

/* A finding of one level (config.test names it). */
struct bench_finding *load_level_finding(struct load_state *s, const char *code,
                                           enum bench_severity sev, const char *where) {
  struct bench_finding *f = bench_findings_add(&s->findings, code, sev);
  if (f) snprintf(f->config.test, sizeof f->config.test, "%s", where);
  return f;
}

void load_level_findings(struct load_state *s, const struct load_level *lv) {
  char where[32];
  load_level_name(lv, where, sizeof where);
  struct bench_finding *f;
  if (lv->f.requests_failed) {
    f = load_level_finding(s, "requests_failed", BENCH_PROBLEM, where);
    bench_finding_figure(f, "failed", lv->f.requests_failed);
    bench_finding_figure(f, "requests", lv->f.requests_ok + lv->f.requests_failed);
    bench_finding_brief(f, "%s: %u of %u requests failed (kinds in the records)", where,
                        lv->f.requests_failed, lv->f.requests_ok + lv->f.requests_failed);
    bench_finding_text(f, "%s: %u of %u requests sent in the window failed; the others are "
                          "measured.", where, lv->f.requests_failed,
                       lv->f.requests_ok + lv->f.requests_failed);
  }
  if (lv->f.cache_hits) {
    f = load_level_finding(s, "cache_hit", BENCH_WARNING, where);
    bench_finding_figure(f, "cache_hit_requests", lv->f.cache_hits);
    bench_finding_brief(f, "%s: prompt cache hit in %u requests: left out of prefill and TTFT",
                        where, lv->f.cache_hits);
    bench_finding_text(f, "%s: the prompt cache reached past the nonce in %u requests: they are "
                          "left out of the TTFT and prompt figures.", where, lv->f.cache_hits);
  }
  if (lv->f.buffered) {
    f = load_level_finding(s, "stream_buffered", BENCH_PROBLEM, where);
    bench_finding_figure(f, "buffered_requests", lv->f.buffered);
    bench_finding_brief(f, "%s: buffered stream in %u requests: their gaps are left out", where,
                        lv->f.buffered);
    bench_finding_text(f, "%s: %u requests arrived buffered (not token by token): their "
                          "inter-token gaps are left out.", where, lv->f.buffered);
  }
  if (lv->client_saturated) {
    f = load_level_finding(s, "client_saturated", BENCH_PROBLEM, where);
    bench_finding_figure(f, "client_cpu_share", lv->client_cpu_share);
    bench_finding_brief(f, "%s: the client used %.0f%% of a CPU: the level may be its limit",
                        where, 100 * lv->client_cpu_share);
    bench_finding_text(f, "%s: tokmeter's own loop used %.0f%% of a CPU over the level: its "
                          "figures may be the client's limit, not the server's (fewer streams, "
                          "or shards on other machines).", where, 100 * lv->client_cpu_share);
  }
  if (lv->f.behind_schedule) {
    f = load_level_finding(s, "behind_schedule", BENCH_PROBLEM, where);
    bench_finding_figure(f, "late_sends", lv->f.late_sends);
    bench_finding_figure(f, "max_send_lag_ms", lv->f.max_send_lag_ms);
    bench_finding_figure(f, "send_lag_share", lv->f.send_lag_share);
    bench_finding_brief(f, "%s: %u sends behind schedule (up to %.0f ms): the client capped it",
                        where, lv->f.late_sends, lv->f.max_send_lag_ms);
    bench_finding_text(f, "%s: %u sends left later than scheduled (up to %.1f ms; their lags "
                          "add up to %.1f%% of the window): the client could not drive this "
                          "rate, so the level is not the server's.",
                       where, lv->f.late_sends, lv->f.max_send_lag_ms,
                       100 * lv->f.send_lag_share);
  }
  /* llama.cpp's /slots: another client on the server, and queueing by design */
  if (lv->slots_total && lv->slots_busy_before > 0 && s->o->shard_count <= 1) {
    f = load_level_finding(s, "server_busy", BENCH_WARNING, where);
    bench_finding_figure(f, "busy_slots", lv->slots_busy_before);
    bench_finding_figure(f, "slots", lv->slots_total);
    bench_finding_brief(f, "%s: %d of the server's %d slots were busy before it began", where,
                        lv->slots_busy_before, lv->slots_total);
    bench_finding_text(f, "Before %s began, %d of the server's %d slots were processing requests "
                          "that were not this run's (its previous level had drained): another "
                          "client shares the server, and the level's figures are not its load "
                          "alone.", where, lv->slots_busy_before, lv->slots_total);
  }
  const uint32_t streams = lv->concurrency;
  if (lv->slots_total && streams > (uint32_t)lv->slots_total && !s->above_slots_said) {
    s->above_slots_said = true;
    f = load_level_finding(s, "above_slots", BENCH_INFO, where);
    bench_finding_figure(f, "slots", lv->slots_total);
    bench_finding_figure(f, "concurrency", streams);
    bench_finding_brief(f, "%s is above the server's %d slots: the rest queue", where,
                        lv->slots_total);
    bench_finding_text(f, "From %s on, more requests are in flight than the server has slots "
                          "(%d): the rest wait in its queue, which TTFT includes (queue_ms "
                          "splits it out where the server reports its prompt time).", where,
                       lv->slots_total);
  }
}

/* The knee: the lowest level whose next raises aggregate output by less than
 * 10% while raising p99 TTFT by more than 50%. In process (no TTFT: the
 * prompts are not timed) the latency that grows is the step's, p99 of the
 * inter-token gap. */
void load_knee_finding(struct load_state *s) {
  double agg[LOAD_MAX_LEVELS], p99[LOAD_MAX_LEVELS];
  const bool steps = !s->o->url;
  for (size_t i = 0; i < s->n_levels; i++)
    agg[i] = s->levels[i].f.aggregate_output_tok_s,
    p99[i] = steps ? s->levels[i].f.itl_ms.p99 : s->levels[i].f.ttft_ms.p99;
  const long k = load_knee_index(agg, p99, s->n_levels);
  if (k < 0) return;
  const struct load_level *a = &s->levels[k];
  const double gain = agg[k + 1] / agg[k] - 1, lat = p99[k + 1] / p99[k] - 1;
  const char *what = steps ? "p99 step time" : "p99 TTFT";
  char where[32];
  load_level_name(a, where, sizeof where);
  struct bench_finding *f = load_level_finding(s, "knee", BENCH_INFO, where);
  bench_finding_figure(f, "aggregate_output_tok_s", a->f.aggregate_output_tok_s);
  bench_finding_figure(f, "next_gain_fraction", gain);
  bench_finding_figure(f, steps ? "next_itl_p99_growth_fraction" : "next_ttft_p99_growth_fraction",
                       lat);
  bench_finding_brief(f, "knee at %s: the next level adds %.0f%% output, %.0f%% %s", where,
                      100 * gain, 100 * lat, what);
  bench_finding_text(f, "The knee is at %s (%.1f tok/s aggregate): the next level raises the "
                        "aggregate output by %.0f%% and %s by %.0f%%.",
                     where, a->f.aggregate_output_tok_s, 100 * gain, what, 100 * lat);
}
