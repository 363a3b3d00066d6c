/* ceiling: the arithmetic that turns costs into ceilings and a measured rate
 * into a verdict. Pure functions over numbers, so the thresholds are tested
 * apart from any model or machine.
 *
 *   decode ceiling (tok/s)  = read bandwidth (B/s) / bytes read per generated token
 *   prefill ceiling (tok/s) = compute rate (op/s)  / FLOPs per prompt token
 *   practical decode range  = 75%..85% of the decode ceiling (what well-tuned
 *                             runtimes reach)
 *
 * Verdict thresholds on measured / ceiling: > 100% "above-ceiling" (not a
 * measurement to share: the likely causes are named), 75%..100% "well-tuned",
 * 40%..75% "below-practical", < 40% "far-below" (common causes named). */
#ifndef TM_CEILING_H
#define TM_CEILING_H

#include <stdbool.h>
#include <stdint.h>

struct model_cost;

#define CEILING_PRACTICAL_LO 0.75
#define CEILING_PRACTICAL_HI 0.85
#define CEILING_WELL_TUNED 0.75
#define CEILING_FAR_BELOW 0.40

/* rate / per_token; 0 when either is not positive (unknown). */
double ceiling_tok_s(double rate_per_s, double per_token);

/* Napkin: bandwidth / (size x active_fraction). 0 on a non-positive input. */
double ceiling_napkin_tok_s(double bandwidth_bytes_s, double size_bytes, double active_fraction);

/* The prefill of a model whose bytes are mostly (> 50%) in quantized types runs
 * on 8-bit integer dot products where the CPU has them. */
bool ceiling_use_int8(double quantized_bytes_fraction, double int8_ops_s);

/* ---- the ceiling of a workload: one function for every command ---- */

/* The machine's rates behind a ceiling, at one thread count (or each path's
 * best, as the caller decides); 0 or NAN where unknown. */
struct ceiling_rates {
  double read_bw_bytes_s;
  double f32_flops, int8_ops, int8_tile_ops;
  double given_compute_ops_s; /* a compute rate the user gave (--compute): used as
                                 is, on path "given"; 0/NAN: none */
  bool tiles;                 /* the runtime runs this model's prefill on the int8
                                 tiles (AMX) where it can: the engine's tile kernels
                                 take its types, or a server reports a build using
                                 them (a runtime fact the caller knows) */
  uint32_t tiles_min_batch;   /* ... for prompts of at least this many tokens */
};

/* What runs: a prompt of prompt_tokens read after depth tokens already in
 * the cache, then gen_tokens generated one by one (decode at the depths
 * depth + prompt_tokens .. + gen_tokens - 1). Either count may be 0. */
struct ceiling_workload {
  uint64_t prompt_tokens, depth, gen_tokens;
};

/* The two ceilings and what each is made of; NAN (NULL) where unknown or
 * not asked (gen_tokens 0: no decode; prompt_tokens 0: no prefill). */
struct ceiling_result {
  double decode_tok_s, read_bw_bytes_s, bytes_per_token;
  double prefill_tok_s, compute_ops_s, flops_per_token;
  const char *compute_path; /* "given", "int8_tile", "int8", "f32" */
};

/* The one rule for the prefill's arithmetic path: the user's figure when
 * given; else the int8 tiles when the runtime runs them (r->tiles), the
 * probe measured them, the model is quantized (ceiling_use_int8) and the
 * prompt is at least tiles_min_batch; else int8 for a quantized model where
 * the probe has int8; else f32. NULL when no rate for any path is known. */
const char *ceiling_compute_path(double quantized_bytes_fraction, const struct ceiling_rates *r,
                                 uint64_t prompt_tokens);
/* decode = read bandwidth / bytes read per generated token (the mean over
 * its depths: model_decode_bytes_mean); prefill = the path's rate / FLOPs per
 * prompt token at its depth (model_prefill_flops_at_depth). */
void ceiling_of_workload(const struct model_cost *c, const struct ceiling_rates *r,
                         const struct ceiling_workload *w, struct ceiling_result *out);

/* ---- many streams decoding together (a batch of B) ----
 * One decode step of B streams, each at context depth d, reads the dense
 * weights once, the routed experts' expected union (per layer E x (1 - (1 -
 * k/E)^B) of E experts with k used per token: routing taken as uniform and
 * independent) and each stream's own KV cache and recurrent state; it
 * computes B x the FLOPs of one token at d, on the path the prefill's rule
 * picks for B tokens (ceiling_compute_path). Its time is at least the larger
 * of bytes / bandwidth and FLOPs / compute; the aggregate ceiling is B over
 * that time. With no compute rate known, the memory bound alone (bound
 * "memory", compute_known false). */
struct ceiling_batch_point {
  uint32_t batch;
  double depth;
  double bytes_per_step, flops_per_step;
  double memory_s, compute_s;        /* the two lower bounds of a step; compute NAN unknown */
  double aggregate_decode_tok_s;     /* NAN when the bandwidth is unknown */
  double per_stream_decode_tok_s;    /* aggregate / B */
  const char *bound;                 /* "memory" or "compute" */
  const char *compute_path;          /* as ceiling_compute_path; NULL unknown */
};
void ceiling_batch(const struct model_cost *c, const struct ceiling_rates *r, uint32_t batch,
                   double depth, struct ceiling_batch_point *out);
/* The smallest batch (1..max_batch) whose step is compute bound; 0 when
 * none is (or no compute rate is known). */
uint32_t ceiling_batch_turn(const struct model_cost *c, const struct ceiling_rates *r,
                            double depth, uint32_t max_batch);

enum ceiling_verdict_kind {
  CEILING_ABOVE = 0,       /* > 100% */
  CEILING_WELL_TUNED_K,    /* 75%..100% */
  CEILING_BELOW_PRACTICAL, /* 40%..75% */
  CEILING_FAR_BELOW_K,     /* < 40% */
};

struct ceiling_verdict {
  char phase[8];          /* "decode" or "prefill" */
  double measured_tok_s;
  double ceiling_tok_s;
  double percent;         /* measured / ceiling x 100 */
  enum ceiling_verdict_kind kind;
  const char *code;       /* "above-ceiling", "well-tuned", "below-practical", "far-below" */
  char message[480];      /* one line for people */
};

/* Fails (returns -1) when the ceiling is unknown (<= 0) or measured < 0. */
int ceiling_verdict_make(const char *phase, double measured_tok_s, double ceiling_tok_s,
                         struct ceiling_verdict *v);

#endif
