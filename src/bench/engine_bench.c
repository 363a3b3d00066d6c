/* engine_bench: the in-process pp / tg method (see engine_bench.h). */
#include "bench/engine_bench.h"

#include "bench/drift.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/clock.h"
#include "util/rng.h"

size_t engine_bench_segments(uint32_t n, struct engine_bench_segment *out) {
  /* Candidate ends 32, 64, 128, ... below n (at most 27 below 2^32). */
  uint32_t cand[32], ends[ENGINE_BENCH_MAX_SEGMENTS];
  size_t n_cand = 0;
  for (uint64_t e = 32; e < n && n_cand < sizeof cand / sizeof cand[0]; e *= 2)
    cand[n_cand++] = (uint32_t)e;
  size_t k = metrics_segment_ends(cand, n_cand, n, METRICS_MIN_DECODE_TOKENS, ends,
                                  ENGINE_BENCH_MAX_SEGMENTS);
  memset(out, 0, sizeof *out * ENGINE_BENCH_MAX_SEGMENTS);
  uint32_t from = 1;
  for (size_t i = 0; i < k; i++) {
    out[i] = (struct engine_bench_segment){.from = from, .to = ends[i]};
    from = ends[i] + 1;
  }
  return k;
}

const char *engine_bench_test_name(const struct engine_bench_config *cfg, char *buf, size_t n) {
  snprintf(buf, n, "%s%u", cfg->kind == ENGINE_BENCH_PP ? "pp" : "tg", cfg->tokens);
  return buf;
}

void engine_bench_result_free(struct engine_bench_result *r) {
  if (!r) return;
  free(r->reps);
  r->reps = NULL;
  r->n_reps = 0;
}

static void random_tokens(struct tm_rng *rng, uint32_t n_vocab, int32_t *out, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) out[i] = (int32_t)(tm_rng_next(rng) % n_vocab);
}

/* Prefills n tokens in batches of at most max_batch. */
static int prefill_chunks(struct engine *e, const int32_t *tok, uint32_t n, uint32_t max_batch,
                          float *logits, struct tm_err *err) {
  for (uint32_t off = 0; off < n;) {
    uint32_t m = n - off < max_batch ? n - off : max_batch;
    bool last = off + m == n;
    if (engine_prefill(e, tok + off, m, last ? logits : NULL, err) != 0) return -1;
    off += m;
  }
  return 0;
}

/* One repetition: fresh cache, depth untimed, then the timed part. */
static int run_rep(struct engine *e, const struct engine_bench_config *cfg, uint32_t max_batch,
                   uint32_t n_vocab, struct tm_rng *rng, int32_t *tok, float *logits,
                   double *step_ms, struct engine_bench_rep *rep, struct tm_err *err) {
  engine_reset(e);
  if (cfg->depth > 0) {
    if (cfg->text_ids && cfg->kind == ENGINE_BENCH_TG)
      memcpy(tok, cfg->text_ids, cfg->depth * sizeof *tok);
    else
      random_tokens(rng, n_vocab, tok, cfg->depth);
    if (prefill_chunks(e, tok, cfg->depth, max_batch, NULL, err) != 0) return -1;
  }
  rep->tokens = cfg->tokens;
  rep->n_segments = 0;
  if (cfg->kind == ENGINE_BENCH_PP) {
    if (cfg->text_ids) memcpy(tok, cfg->text_ids, cfg->tokens * sizeof *tok);
    else random_tokens(rng, n_vocab, tok, cfg->tokens);
    uint64_t t0 = tm_now_ns();
    if (prefill_chunks(e, tok, cfg->tokens, max_batch, logits, err) != 0) return -1;
    rep->ms = (double)(tm_now_ns() - t0) / 1e6;
  } else {
    int32_t next = (int32_t)(tm_rng_next(rng) % n_vocab);
    double sum_ms = 0;
    for (uint32_t i = 0; i < cfg->tokens; i++) {
      uint64_t t0 = tm_now_ns();
      /* Greedy: the argmax is part of producing the next token (taken by
       * the engine inside its output head's job, as a runtime may). EOS is
       * ignored: nothing here stops early, so the count is exact. */
      if (engine_decode_greedy(e, next, logits, &next, err) != 0) return -1;
      step_ms[i] = (double)(tm_now_ns() - t0) / 1e6;
      sum_ms += step_ms[i];
    }
    rep->ms = sum_ms;
    rep->n_segments = engine_bench_segments(cfg->tokens, rep->seg);
    for (size_t s = 0; s < rep->n_segments; s++) {
      double ms = 0;
      for (uint32_t i = rep->seg[s].from - 1; i < rep->seg[s].to; i++) ms += step_ms[i];
      rep->seg[s].ms = ms;
      rep->seg[s].tok_s = ms > 0 ? (rep->seg[s].to - rep->seg[s].from + 1) * 1000.0 / ms : NAN;
    }
  }
  /* Rule 5: a decode of a handful of tokens gives no rate (its time stays). */
  bool blank = cfg->kind == ENGINE_BENCH_TG && cfg->tokens < METRICS_MIN_DECODE_TOKENS;
  rep->tok_s = rep->ms > 0 && !blank ? rep->tokens * 1000.0 / rep->ms : NAN;
  return 0;
}

int engine_bench_run(struct engine *e, const struct engine_bench_config *cfg,
                     engine_bench_progress_fn progress, void *ctx,
                     struct engine_bench_result *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  out->cfg = *cfg;
  if (cfg->tokens == 0) return tm_errf(err, "engine bench: 0 tokens to time");
  if (cfg->reps == 0 || cfg->reps > ENGINE_BENCH_MAX_REPS)
    return tm_errf(err, "engine bench: %u repetitions (1..%d)", cfg->reps, ENGINE_BENCH_MAX_REPS);
  struct engine_info info;
  engine_get_info(e, &info);
  out->n_threads = info.n_threads;
  if (info.n_vocab == 0) return tm_errf(err, "engine bench: the model has no vocabulary");
  uint32_t n_text = !cfg->text_ids ? 0 : cfg->kind == ENGINE_BENCH_PP ? cfg->tokens : cfg->depth;
  for (uint32_t i = 0; i < n_text; i++)
    if (cfg->text_ids[i] < 0 || (uint32_t)cfg->text_ids[i] >= info.n_vocab)
      return tm_errf(err, "engine bench: token %d of the text is outside the model's "
                          "vocabulary (%u tokens): the vocabulary is not this model's",
                     cfg->text_ids[i], info.n_vocab);
  uint64_t need = (uint64_t)cfg->depth + cfg->tokens;
  if (need > info.n_ctx)
    return tm_errf(err, "engine bench: depth %u + %u tokens exceeds the KV capacity (%u)",
                   cfg->depth, cfg->tokens, info.n_ctx);
  uint32_t max_batch = cfg->max_batch ? cfg->max_batch : 512;
  uint32_t warmups = cfg->warmups ? cfg->warmups : 1;
  uint32_t n_buf = cfg->depth > cfg->tokens ? cfg->depth : cfg->tokens;

  int rc = -1;
  int32_t *tok = malloc(sizeof *tok * n_buf);
  float *logits = malloc(sizeof *logits * info.n_vocab);
  double *step_ms = malloc(sizeof *step_ms * cfg->tokens);
  out->reps = calloc(cfg->reps, sizeof *out->reps);
  double *rates = malloc(sizeof *rates * cfg->reps);
  double *times = malloc(sizeof *times * cfg->reps);
  if (!tok || !logits || !step_ms || !out->reps || !rates || !times) {
    tm_errf(err, "engine bench: out of memory");
    goto done;
  }
  struct tm_rng rng;
  tm_rng_seed(&rng, cfg->seed);
  uint32_t total = warmups + cfg->reps;
  for (uint32_t i = 0; i < total; i++) {
    bool warm = i < warmups;
    struct engine_bench_rep *rep = warm ? &out->warmup : &out->reps[i - warmups];
    memset(rep, 0, sizeof *rep);
    rep->warmup = warm;
    if (run_rep(e, cfg, max_batch, info.n_vocab, &rng, tok, logits, step_ms, rep, err) != 0)
      goto done;
    if (!warm) {
      rates[out->n_reps] = rep->tok_s;
      times[out->n_reps] = rep->ms;
      out->n_reps++;
    }
    if (progress) progress(cfg, i, total, rep, ctx);
  }
  stats_describe(rates, out->n_reps, &out->tok_s);
  stats_describe(times, out->n_reps, &out->ms);
  out->drift_tested = bench_drift_test(rates, out->n_reps, &out->drift);
  if (cfg->kind == ENGINE_BENCH_TG) {
    out->n_segments = engine_bench_segments(cfg->tokens, out->seg);
    for (size_t s = 0; s < out->n_segments; s++) {
      double sum_rate = 0, sum_ms = 0;
      for (size_t r = 0; r < out->n_reps; r++) {
        sum_rate += out->reps[r].seg[s].tok_s;
        sum_ms += out->reps[r].seg[s].ms;
      }
      out->seg[s].tok_s = sum_rate / (double)out->n_reps;
      out->seg[s].ms = sum_ms / (double)out->n_reps;
    }
    /* Step i (0-based) reads a context of depth + i tokens. */
    out->mean_depth = cfg->depth + (cfg->tokens - 1) / 2.0;
  } else {
    /* Token i of the batch attends to depth + i tokens before it. */
    out->mean_depth = cfg->depth + cfg->tokens / 2.0;
  }
  rc = 0;
done:
  free(tok);
  free(logits);
  free(step_ms);
  free(rates);
  free(times);
  return rc;
}
