/* load_engine: `tokmeter load` without --url: B streams decoding together on
 * tokmeter's own engine (engine_decode_batch), level by level, on the load
 * method (load.h): the same level figures, records, findings and ceiling
 * as a server load's.
 *
 * The streams' prompts (prompt_tokens random ids each, a draw per stream)
 * are prefilled once, not timed. A level of concurrency B runs passes of
 * streams 0..B-1: each takes them back to their prompt's end (the cache of
 * the prompt is as prefilled: engine_seq_truncate), then runs max_tokens
 * decode steps of all B together, each stream's next token its greedy pick. warmup passes are not counted;
 * of the reps timed ones, the level's figures are the median pass by
 * aggregate (every pass's aggregate goes in the record). A pass is a window
 * of the load method: from the first step's start to the last step's end;
 * each stream is one request sent at the window's start whose tokens arrive
 * at the ends of the steps (token by token), so aggregate output = B x steps
 * / window and one stream's decode = steps / window, with the rule that no
 * decode rate comes from fewer than 24 tokens. TTFT, first answer, queue and
 * the prompt rate have no meaning here (the prompts are not timed): null. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench/load_internal.h"
#include "bench/metrics.h"
#include "engine/engine.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "record/load_record.h"
#include "record/record.h"
#include "util/clock.h"
#include "util/rng.h"
#include "util/textfile.h"


/* load_fail, and whether the message is a usage error (exit 2, one line). */
#define efail(s, status, usage, ...) ((s)->err_is_usage = (usage), load_fail((s), (status), __VA_ARGS__))

static void progress(struct load_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(struct load_state *s, const char *fmt, ...) {
  if (!s->hooks.progress) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  s->hooks.progress(line, s->hooks.ctx);
}

static double secs(uint64_t ns) { return (double)ns / 1e9; }

static int open_session(struct load_state *s, const struct engine_info *ei) {
  const struct load_opts *o = s->o;
  json_t *levels = json_array();
  for (size_t i = 0; i < o->n_concurrency; i++)
    json_array_append_new(levels, json_integer(o->concurrency[i]));
  json_t *settings = json_pack(
      "{s:s, s:s, s:o, s:i, s:i, s:i, s:i, s:i, s:s, s:i}", "backend", "engine", "gguf", o->gguf,
      "concurrency", levels, "prompt_tokens", (int)o->prompt_tokens, "max_tokens",
      (int)o->max_tokens, "reps", (int)o->reps, "warmup", (int)o->warmup, "threads",
      ei->n_threads, "kernels", ei->kernel_path, "seed", (int)o->seed);
  json_object_set_new(settings, "url", json_null());
  json_object_set_new(settings, "shard", json_null());
  json_object_set_new(settings, "slo", json_null());
  return load_session_open(s, settings, NULL, NULL, "engine", "in-process");
}

/* Prefills the prompts of streams [0, n) (prompt_tokens random ids each)
 * and keeps each one's greedy next token, its first decode input. */
static int prefill_streams(struct load_state *s, struct engine *e, uint32_t n, struct tm_rng *rng,
                           uint32_t n_vocab, int32_t *first, struct tm_err *err) {
  const struct load_opts *o = s->o;
  int32_t *prompt = malloc(sizeof(int32_t) * o->prompt_tokens);
  float *logits = malloc(sizeof(float) * n_vocab);
  int rc = 0;
  if (!prompt || !logits) rc = tm_errf(err, "out of memory for the prompts");
  for (uint32_t b = 0; b < n && rc == 0; b++) {
    if (backend_interrupted()) {
      rc = tm_errf(err, "interrupted");
      break;
    }
    if (b % 8 == 0) progress(s, "load: prefilling %u prompts of %u tokens (not timed): %u", n,
                             o->prompt_tokens, b);
    engine_seq_reset(e, b);
    for (uint32_t i = 0; i < o->prompt_tokens; i++)
      prompt[i] = (int32_t)(tm_rng_next(rng) % n_vocab);
    if (engine_seq_prefill(e, b, prompt, o->prompt_tokens, logits, err) != 0) rc = -1;
    else first[b] = engine_argmax(logits, n_vocab);
  }
  free(prompt);
  free(logits);
  return rc;
}

/* One pass: the B streams back at their prompt's end (engine_seq_truncate:
 * the prompt's cache is as prefilled), then max_tokens batched decode steps,
 * timed; step_end[k] (seconds) is when step k's tokens were out. */
static int one_pass(struct engine *e, uint32_t B, const struct load_opts *o, const int32_t *first,
                    uint32_t n_vocab, float *logits, int32_t *tok, uint32_t *seq, double *t0,
                    double *step_end, struct tm_err *err) {
  (void)n_vocab;
  for (uint32_t b = 0; b < B; b++) {
    engine_seq_truncate(e, b, o->prompt_tokens);
    tok[b] = first[b];
    seq[b] = b;
  }
  *t0 = secs(tm_now_ns());
  for (uint32_t k = 0; k < o->max_tokens; k++) {
    if (backend_interrupted()) return tm_errf(err, "interrupted");
    if (engine_decode_batch(e, seq, tok, B, logits, tok, err) != 0) return -1;
    step_end[k] = secs(tm_now_ns());
  }
  return 0;
}

/* The streams of one pass as the load method's samples. */
static void pass_samples(uint32_t B, const struct load_opts *o, double t0, const double *step_end,
                         struct load_sample *x) {
  const double t1 = step_end[o->max_tokens - 1];
  const bool short_decode = o->max_tokens < METRICS_MIN_DECODE_TOKENS;
  for (uint32_t b = 0; b < B; b++) {
    const double rate = short_decode ? NAN : (double)o->max_tokens / (t1 - t0);
    x[b] = (struct load_sample){.t_sched = t0, .t_send = t0, .t_end = t1, .ok = true,
                                .token_by_token = true, .short_decode = short_decode,
                                .ttft_ms = NAN, .ttfat_ms = NAN, .decode_tok_s = rate,
                                .tpot_ms = isfinite(rate) ? 1e3 / rate : NAN,
                                .e2e_ms = (t1 - t0) * 1e3, .queue_ms = NAN,
                                .prompt_processed = NAN, .prompt_reported = NAN,
                                .tokens = o->max_tokens, .n_chunks = o->max_tokens,
                                .chunk_t = step_end};
  }
}

static int cmp_pair(const void *a, const void *b) {
  const double x = ((const double *)a)[0], y = ((const double *)b)[0];
  return (x > y) - (x < y);
}

/* One level: warmup + reps passes, the median timed pass's figures; its
 * streams' request records and the level record written. */
static int one_level(struct load_state *s, struct engine *e, uint32_t B, const int32_t *first,
                     uint32_t n_vocab, struct tm_err *err) {
  const struct load_opts *o = s->o;
  struct load_level *lv = &s->levels[s->n_levels];
  memset(lv, 0, sizeof *lv);
  lv->concurrency = B;
  lv->request_rate = NAN;
  lv->client_cpu_share = NAN;
  lv->schedule_lag_s = NAN;
  lv->shard_concurrency = B;
  lv->shard_rate = NAN;
  const uint32_t passes = o->warmup + o->reps, steps = o->max_tokens;
  float *logits = malloc(sizeof(float) * n_vocab * B);
  int32_t *tok = malloc(sizeof(int32_t) * B);
  uint32_t *seq = malloc(sizeof(uint32_t) * B);
  double *ends = malloc(sizeof(double) * steps * o->reps); /* every timed pass's step ends */
  double *t0 = malloc(sizeof(double) * o->reps);
  struct load_sample *x = malloc(sizeof *x * B);
  double (*agg)[2] = malloc(sizeof *agg * o->reps); /* aggregate, pass */
  int rc = -1;
  if (!logits || !tok || !seq || !ends || !t0 || !x || !agg) {
    tm_errf(err, "out of memory for a level of %u streams", B);
    goto out;
  }
  for (uint32_t p = 0; p < passes; p++) {
    const bool timed = p >= o->warmup;
    const uint32_t r = timed ? p - o->warmup : 0;
    progress(s, "load c=%u: %s %u of %u (%u streams x %u tokens at depth %u)", B,
             timed ? "pass" : "warm-up", timed ? r + 1 : p + 1, timed ? o->reps : o->warmup, B,
             steps, o->prompt_tokens);
    double t_start = 0;
    if (one_pass(e, B, o, first, n_vocab, logits, tok, seq, &t_start, ends + (size_t)r * steps,
                 err) != 0)
      goto out;
    if (!timed) continue;
    t0[r] = t_start;
    const double w = ends[(size_t)r * steps + steps - 1] - t_start;
    agg[r][0] = w > 0 ? (double)B * steps / w : NAN;
    agg[r][1] = r;
    s->reps_aggregate[s->n_levels][r < 16 ? r : 15] = agg[r][0];
  }
  s->n_reps[s->n_levels] = o->reps < 16 ? o->reps : 16;
  qsort(agg, o->reps, sizeof *agg, cmp_pair);
  const uint32_t m = (uint32_t)agg[(o->reps - 1) / 2][1]; /* the median pass (the lower one) */
  const double *me = ends + (size_t)m * steps;
  pass_samples(B, o, t0[m], me, x);
  if (load_window_figures(x, B, t0[m], me[steps - 1], false, NULL, &lv->f) != 0) {
    s->oom = true;
    tm_errf(err, "out of memory computing the level's figures");
    goto out;
  }
  /* the prompts are not timed: no prompt rate (0 would read as measured) */
  lv->f.aggregate_prompt_tok_s = lv->f.prompt_tokens_in_window = NAN;
  lv->window_start_unix = t0[m] + s->unix_offset;
  lv->window_end_unix = me[steps - 1] + s->unix_offset;
  load_level_ceiling(s, lv);
  s->n_levels++;
  /* the streams of the median pass: request records as a server load's,
   * their sample ("load") what report and compare read */
  for (uint32_t b = 0; b < B; b++) {
    json_t *rec = json_pack("{s:s, s:i, s:s, s:i, s:i, s:b, s:s}", "record", "request", "schema",
                            1, "identity", s->session.identity, "index", (int)b, "level",
                            (int)(s->n_levels - 1), "ok", 1, "backend", "engine");
    json_t *lo = record_load_sample_json(&x[b], s->unix_offset, (int)(s->n_levels - 1), -1, NULL);
    if (rec && lo) json_object_set_new(rec, "load", lo);
    else json_decref(lo);
    bench_session_write(&s->session, rec);
  }
  json_t *rec = load_level_json(s, lv);
  if (rec) {
    json_t *reps = json_array();
    for (uint32_t r = 0; r < s->n_reps[s->n_levels - 1]; r++)
      json_array_append_new(reps, record_json_num(s->reps_aggregate[s->n_levels - 1][r]));
    json_object_set_new(rec, "backend", json_string("engine"));
    json_object_set_new(rec, "reps_aggregate_tok_s", reps);
    json_object_set_new(rec, "depth", json_integer(o->prompt_tokens));
    json_object_set_new(rec, "steps", json_integer(o->max_tokens));
    json_object_set_new(rec, "threads", json_integer(s->engine_threads));
  }
  if (rec && s->hooks.level) s->hooks.level(lv, rec, s->hooks.ctx);
  load_level_findings(s, lv);
  bench_session_write(&s->session, rec);
  rc = 0;
out:
  free(logits);
  free(tok);
  free(seq);
  free(ends);
  free(t0);
  free(x);
  free(agg);
  return rc;
}

int load_engine_run(struct load_state *s) {
  const struct load_opts *o = s->o;
  struct tm_err err = {{0}};
  if (!o->gguf) return efail(s, BENCH_BAD_INPUT, true, "an in-process load needs a model (-m FILE)");
  if (!o->n_concurrency || o->n_rate)
    return efail(s, BENCH_BAD_INPUT, true, "an in-process load takes -c LIST (streams decoding together)");
  if (!o->max_tokens || !o->prompt_tokens || !o->reps)
    return efail(s, BENCH_BAD_INPUT, true, "-n, -d and -r must be at least 1 in process");
  load_read_unix_offset(s);
  const int mrc = load_model_ceiling_setup(s, &err);
  if (mrc == -1) return efail(s, BENCH_RUNTIME, false, "out of memory");
  if (mrc == -2) return efail(s, BENCH_BAD_INPUT, true, "%s", err.msg);
  uint32_t max_b = 0;
  for (size_t i = 0; i < o->n_concurrency; i++)
    if (o->concurrency[i] > max_b) max_b = o->concurrency[i];
  if (max_b > ENGINE_MAX_SEQ)
    return efail(s, BENCH_BAD_INPUT, true, "-c %u: the engine decodes at most %u streams together",
                 max_b, ENGINE_MAX_SEQ);
  struct engine_options eo;
  engine_options_init(&eo);
  eo.n_threads = o->n_threads;
  eo.n_seq = max_b;
  eo.n_ctx = o->prompt_tokens + o->max_tokens + 1;
  eo.max_batch = max_b > 512 ? max_b : 512;
  progress(s, "load: loading %s for %u streams", o->gguf, max_b);
  struct engine *e = engine_load(o->gguf, &eo, &err);
  if (!e) return efail(s, BENCH_BAD_INPUT, true, "%s", err.msg);
  struct engine_info ei;
  engine_get_info(e, &ei);
  if (ei.n_ctx < eo.n_ctx) {
    engine_free(e);
    return efail(s, BENCH_BAD_INPUT, true, "-d %u -n %u: %u tokens per stream, beyond the model's "
                 "context of %u", o->prompt_tokens, o->max_tokens, eo.n_ctx, ei.n_ctx);
  }
  /* every stream's cache is written to its depth: it must fit in memory
   * (the cache's pages are taken as they are written; too late to fail then) */
  {
    uint64_t total = 0, avail = 0;
    struct tm_err merr = {{0}};
    char *mi = tm_read_text_file("/proc/meminfo", 1 << 20, &merr);
    const bool known = mi && machine_parse_meminfo(mi, &total, &avail) == 0 && avail > 0;
    free(mi);
    const double need = (double)ei.kv_bytes * ((double)o->prompt_tokens + o->max_tokens + 1) /
                            (double)ei.n_ctx + (double)ei.file_bytes;
    if (known && need > 0.9 * (double)avail) {
      engine_free(e);
      return efail(s, BENCH_BAD_INPUT, true,
                   "-c %u -d %u -n %u: the KV caches and the model need %.1f GiB, %.1f GiB is "
                   "available: fewer streams or a shallower depth", max_b, o->prompt_tokens,
                   o->max_tokens, need / 1073741824.0, (double)avail / 1073741824.0);
    }
  }
  snprintf(s->kernel_path, sizeof s->kernel_path, "%s", ei.kernel_path);
  s->engine_threads = ei.n_threads;
  snprintf(s->url_shown, sizeof s->url_shown, "in process, %s", o->gguf);
  snprintf(s->server_kind, sizeof s->server_kind, "engine %s, %d threads", ei.kernel_path,
           ei.n_threads);
  int rc = open_session(s, &ei);
  if (rc != 0) {
    engine_free(e);
    return rc;
  }
  struct tm_rng rng;
  tm_rng_seed(&rng, o->seed);
  int32_t *first = malloc(sizeof(int32_t) * max_b);
  rc = BENCH_OK;
  if (!first || prefill_streams(s, e, max_b, &rng, ei.n_vocab, first, &err) != 0) {
    s->interrupted = backend_interrupted();
    rc = efail(s, BENCH_RUNTIME, false, "%s", first ? err.msg : "out of memory");
  }
  for (size_t i = 0; rc == BENCH_OK && i < o->n_concurrency && s->n_levels < LOAD_MAX_LEVELS; i++) {
    if (one_level(s, e, o->concurrency[i], first, ei.n_vocab, &err) != 0) {
      s->interrupted = backend_interrupted();
      rc = efail(s, BENCH_RUNTIME, false, "%s%s", err.msg,
                 s->interrupted ? ": the levels finished are recorded" : "");
      break;
    }
  }
  if (!s->interrupted && rc == BENCH_OK) load_knee_finding(s);
  if (s->have_model && s->n_levels) load_batch_turn_finding(s);
  if (rc == BENCH_OK && s->session.write_failures)
    rc = efail(s, BENCH_RUNTIME, false, "results not safely kept: %llu records missing from %s",
               (unsigned long long)s->session.write_failures, s->session.path);
  uint32_t failed[RUN_ERR_COUNT] = {0}, runs = 0;
  for (size_t i = 0; i < s->n_levels; i++) runs += s->levels[i].f.requests_ok;
  bench_session_end(&s->session, runs, failed, s->interrupted, NAN, &s->findings);
  free(first);
  engine_free(e);
  return rc;
}
