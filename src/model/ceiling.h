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
