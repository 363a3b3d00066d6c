/* engine_bench: the in-process method (docs/design.md "Definitions", in-process
 * row; method rules 1, 5 and 8), the way llama-bench measures pp and tg:
 *
 *   pp<L> at depth d: per repetition, a fresh KV cache (engine_reset), d
 *     random tokens prefilled UNTIMED, then L random token ids run as one
 *     batched forward pass (chunks of at most max_batch); rate = L / time of
 *     that pass (the last token's logits are computed, as a real prompt needs).
 *   tg<N> at depth d: per repetition, a fresh KV cache, d random tokens
 *     prefilled untimed, then N decode steps: a random first token, afterwards
 *     the greedy argmax of the previous step fed back, end-of-sequence ignored
 *     (there is no stop), so exactly N tokens; rate = N / time of the N steps.
 *     Every step is timed on its own: the decode curve (rate per output
 *     segment, e.g. tokens 1-32, 33-64, 65-128) comes from those step times.
 *     Rule 5, as the server bench applies it (metrics.h): below
 *     METRICS_MIN_DECODE_TOKENS (24) steps the rate is blank (NAN; the times
 *     stay: they are measurements), and no segment of the curve is shorter.
 *
 * One warm-up repetition per configuration (at least one; never in the
 * statistics), then `reps` timed ones. Token ids are random (seeded: the same
 * seed gives the same prompts) so no cache or branch predictor sees a repeat.
 * Library code: nothing printed; errors (from the engine) returned in err. */
#ifndef TM_ENGINE_BENCH_H
#define TM_ENGINE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/metrics.h" /* METRICS_MIN_DECODE_TOKENS (rule 5) */
#include "stats/significance.h"
#include "stats/stats.h"
#include "util/err.h"

struct engine;

#define ENGINE_BENCH_MAX_REPS 1000
#define ENGINE_BENCH_MAX_SEGMENTS 12

enum engine_bench_kind { ENGINE_BENCH_PP = 0, ENGINE_BENCH_TG };

struct engine_bench_config {
  enum engine_bench_kind kind;
  uint32_t tokens;     /* L for pp, N for tg (>= 1) */
  uint32_t depth;      /* context already in the KV cache (untimed) */
  uint32_t reps;       /* timed repetitions (1..ENGINE_BENCH_MAX_REPS) */
  uint32_t warmups;    /* discarded repetitions first; 0 is taken as 1 */
  uint32_t max_batch;  /* largest prefill batch the engine takes; 0 = 512 */
  uint64_t seed;       /* token ids */
  /* A text job's tokens (tokenizer.h), in place of random ones: pp's L
   * timed tokens, or tg's d depth tokens (the prompt, prefilled untimed
   * before the N timed steps). NULL: random ids, as above. */
  const int32_t *text_ids;
  const char *workload; /* that job's name (the records' "workload"); NULL */
};

/* Output tokens [from, to] (1-based, inclusive) of a tg run: at least
 * METRICS_MIN_DECODE_TOKENS of them (engine_bench_segments). */
struct engine_bench_segment {
  uint32_t from, to;
  double ms;           /* sum of those steps' times */
  double tok_s;        /* (to - from + 1) / ms */
};

/* One repetition. */
struct engine_bench_rep {
  bool warmup;
  uint32_t tokens;     /* tokens timed: exactly cfg.tokens */
  double ms;           /* the timed pass (pp) or the sum of the steps (tg) */
  double tok_s;        /* tokens / ms; NAN for a tg of fewer than
                          METRICS_MIN_DECODE_TOKENS tokens (rule 5: blank) */
  size_t n_segments;   /* tg only; 0 for pp */
  struct engine_bench_segment seg[ENGINE_BENCH_MAX_SEGMENTS];
};

struct engine_bench_result {
  struct engine_bench_config cfg;
  int n_threads;                   /* the engine's, when run */
  size_t n_reps;                   /* timed repetitions done (= cfg.reps) */
  struct engine_bench_rep *reps;   /* n_reps timed ones (malloc'd) */
  struct engine_bench_rep warmup;  /* the last warm-up repetition */
  struct stats_summary tok_s, ms;  /* over the timed repetitions; tok_s has
                                      n = 0 (every figure NAN) when the rate is
                                      blank by rule 5, ms keeps the times */
  /* Decode curve over the timed repetitions: per segment, the mean of the
   * reps' segment rates (tg only). */
  size_t n_segments;
  struct engine_bench_segment seg[ENGINE_BENCH_MAX_SEGMENTS];
  double mean_depth;               /* mean context depth the timed tokens saw */
  /* Rule 11 over the timed repetitions' rates in run order (drift.h);
   * drift_tested false when fewer than 3 rates (then drift is not set). */
  struct stats_drift drift;
  bool drift_tested;
};

/* Called after each repetition (warm-ups included); index counts all of them
 * from 0, total = warmups + reps. NULL = none. */
typedef void (*engine_bench_progress_fn)(const struct engine_bench_config *cfg,
                                         uint32_t index, uint32_t total,
                                         const struct engine_bench_rep *rep, void *ctx);

/* The segments of an n-token decode run: 1-32, 33-64, 65-128, 129-256, ...
 * (doubling), the last one ending at n, each of at least
 * METRICS_MIN_DECODE_TOKENS tokens (rule 5, cut as the server's curve is:
 * metrics_segment_ends): a remainder shorter than that joins the segment
 * before it (n = 140: 1-32, 33-64, 65-140), so n < 56 is one segment 1-n and
 * n < 24 none. Returns the count (<= ENGINE_BENCH_MAX_SEGMENTS; the last
 * segment absorbs the rest when doubling would exceed it). The ms and tok_s
 * fields are zeroed. */
size_t engine_bench_segments(uint32_t n, struct engine_bench_segment *out);

/* "pp512" / "tg128" into buf. */
const char *engine_bench_test_name(const struct engine_bench_config *cfg, char *buf, size_t n);

/* Runs one configuration on e at its current thread count. out is filled
 * (free with engine_bench_result_free, also after a failure). Fails when
 * depth + tokens exceeds the engine's KV capacity (checked before running), or
 * the engine fails (its message). */
int engine_bench_run(struct engine *e, const struct engine_bench_config *cfg,
                     engine_bench_progress_fn progress, void *ctx,
                     struct engine_bench_result *out, struct tm_err *err);
void engine_bench_result_free(struct engine_bench_result *r);

#endif
