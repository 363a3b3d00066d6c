/* whatif: Amdahl for token jobs (issue 5, part 4). A job is `items` pieces of
 * work; each reads `read_tokens` (prefill) and writes `gen_tokens` (decode),
 * and may carry serial steps of its own (a test run per item); the job may
 * carry steps done once (a human review). What happens to the whole wait when
 * only generation gets faster?
 *
 * Model (docs/whatif.md), with C = concurrency, waves = ceil(items / C):
 *   read_s       = waves * read_tokens / prefill_tok_s
 *   generate_s   = waves * gen_tokens / rate_tok_s
 *   item_steps_s = waves * sum(per-item steps)
 *   job_steps_s  = sum(per-job steps)
 *   total_s      = read_s + generate_s + item_steps_s + job_steps_s
 *   speedup      = total_s(baseline rate) / total_s(rate)
 *   fixed_share  = (item_steps_s + job_steps_s) / total_s
 *   limit_s      = total_s as rate -> infinity (read + steps): the Amdahl floor
 * The rate is the decode rate of ONE stream (docs/design.md's DC) and is assumed to
 * hold at C streams: the aggregate is C x rate. A server that slows down under
 * load must be given the per-stream rate it keeps at C streams. Each item's
 * chain (read, write, its own steps) runs inside its stream; items in the same
 * wave run side by side.
 *
 * Contracts: every function is pure arithmetic on its inputs (the --json
 * builders at the end only arrange its results); rates must be
 * > 0 and finite; a reading that cannot be computed (prefill rate unknown while
 * there is something to read) is refused by whatif_eval, never made 0. */
#ifndef TM_WHATIF_H
#define TM_WHATIF_H

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define WHATIF_MAX_RATES 64
#define WHATIF_MAX_STEPS 16

struct whatif_step {
  char name[48];
  double seconds;
  bool per_item;   /* true: once per item (inside its stream); false: once per job */
};

struct whatif_job {
  double gen_tokens;      /* tokens written per item */
  double read_tokens;     /* prompt tokens read per item (0: none) */
  double items;           /* >= 1 */
  double concurrency;     /* streams side by side, >= 1 */
  double prefill_tok_s;   /* PF; NAN when not given */
  double prefill_ratio;   /* > 0: prefill = ratio x generation rate (overrides prefill_tok_s); else 0 */
  const struct whatif_step *steps;
  size_t n_steps;
};

struct whatif_row {
  double rate_tok_s;       /* DC, one stream */
  double aggregate_tok_s;  /* AT: rate x min(C, items) */
  double prefill_tok_s;    /* PF used; NAN when nothing is read */
  double waves;
  double read_s, generate_s, item_steps_s, job_steps_s, total_s;
  double speedup;          /* vs the baseline; NAN when no baseline */
  double fixed_share;      /* 0..1 */
  double generate_share;   /* 0..1: what a faster generator can still remove */
};

/* Checks the job (counts >= 1, tokens >= 0, steps >= 0, a prefill rate when
 * read_tokens > 0). 0 or -1 with err naming the input. */
int whatif_check(const struct whatif_job *job, struct tm_err *err);
/* One rate. baseline_total_s: total_s at the baseline rate (NAN: no speedup).
 * 0 or -1 with err. */
int whatif_eval(const struct whatif_job *job, double rate_tok_s, double baseline_total_s,
                struct whatif_row *row, struct tm_err *err);
/* The Amdahl floor: total_s with infinitely fast generation (prefill fixed;
 * with a prefill_ratio, reading vanishes too and only the steps remain). */
double whatif_limit_s(const struct whatif_job *job);
/* The most any generation rate can speed the job up against the baseline:
 * baseline_total_s / whatif_limit_s; INFINITY when the floor is 0 (nothing
 * but generation: no bound). */
static inline double whatif_max_speedup(const struct whatif_job *job, double baseline_total_s) {
  double limit = whatif_limit_s(job);
  return limit > 0 ? baseline_total_s / limit : INFINITY;
}

/* Rates as users type them: "1000", "1M tok/s", a list "100,1k,10k", or a
 * log sweep "A..B" (A, B and every 1-2-5 value between) or "A..B:N" (N points
 * log-spaced, A and B included). Sorted ascending, duplicates removed.
 * 0 or -1 with err. */
int whatif_parse_rates(const char *s, double *out, size_t max, size_t *n, struct tm_err *err);
/* "review=600", "test=30/item", "check=1.5s", "review=10m", "build=1h". 0 / -1. */
int whatif_parse_step(const char *s, struct whatif_step *out, struct tm_err *err);
/* A duration: a bare number is seconds; units ns, us, ms, s, m/min, h, d.
 * "600", "1.5s", "350ms", "10m", "2h". >= 0 and finite. 0 / -1 with err. */
int whatif_parse_seconds(const char *s, double *out, struct tm_err *err);

/* --claim: one figure read as each of the quantities. */
struct whatif_claim_in {
  double value;            /* the claimed number ("1M tok/s" -> 1e6) */
  double prompt_tokens;    /* the prompt used to make it concrete (e.g. 100000) */
  double answer_tokens;    /* the answer used to make it concrete (e.g. 1000) */
  double prefill_tok_s;    /* to say how long filling the context takes; NAN unknown */
  double bytes_per_token;  /* decode: bytes read per token; NAN unknown */
  const double *streams;   /* stream counts for the aggregate reading */
  size_t n_streams;
};
struct whatif_claim_stream {
  double streams, per_stream_tok_s, answer_s;
};
struct whatif_claim_out {
  /* CC: a context of `value` tokens */
  double context_tokens, context_prompts; /* how many of the prompts fit */
  double context_fill_s;                  /* value / prefill_tok_s; NAN unknown */
  /* PF: reading at `value` tok/s */
  double prefill_prompt_s;                /* prompt_tokens / value */
  /* DC: one stream at `value` tok/s */
  double decode_answer_s, decode_token_s; /* answer_tokens / value, 1 / value */
  double decode_bandwidth_bytes_s;        /* value x bytes_per_token; NAN unknown */
  /* AT: value summed over N streams */
  struct whatif_claim_stream at[WHATIF_MAX_RATES];
  size_t n_at;
};
int whatif_claim(const struct whatif_claim_in *in, struct whatif_claim_out *out,
                 struct tm_err *err);

/* The --json documents (whatif_json.c; keys: docs/whatif.md), each a new
 * object for the caller to dump and free, or NULL when out of memory.
 * Sweep: {"inputs", "rows", "limit_s", "max_speedup"}; base is the row at the
 * baseline rate (whatif_eval with no baseline), rows the n_rows rates asked
 * for. Claim: {"claim" (the figure as typed), "value", "context", "prefill",
 * "decode", "aggregate"} from whatif_claim's input and output. */
json_t *whatif_sweep_json(const struct whatif_job *job, const struct whatif_row *base,
                          const struct whatif_row *rows, size_t n_rows);
json_t *whatif_claim_json(const char *claim, const struct whatif_claim_in *in,
                          const struct whatif_claim_out *out);

#endif
