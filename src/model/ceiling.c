/* ceiling: see ceiling.h. */
#include "model/ceiling.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/analysis.h"

double ceiling_tok_s(double rate_per_s, double per_token) {
  if (!(rate_per_s > 0) || !(per_token > 0)) return 0;
  return rate_per_s / per_token;
}

double ceiling_napkin_tok_s(double bandwidth_bytes_s, double size_bytes, double active_fraction) {
  if (!(active_fraction > 0)) return 0;
  return ceiling_tok_s(bandwidth_bytes_s, size_bytes * active_fraction);
}

bool ceiling_use_int8(double quantized_bytes_fraction, double int8_ops_s) {
  return quantized_bytes_fraction > 0.5 && int8_ops_s > 0;
}

static bool known(double v) { return v > 0 && isfinite(v); }

const char *ceiling_compute_path(double quantized_bytes_fraction, const struct ceiling_rates *r,
                                 uint64_t prompt_tokens) {
  if (known(r->given_compute_ops_s)) return "given";
  const bool int8 = ceiling_use_int8(quantized_bytes_fraction, known(r->int8_ops) ? r->int8_ops : 0);
  if (int8 && r->tiles && known(r->int8_tile_ops) && prompt_tokens >= r->tiles_min_batch)
    return "int8_tile";
  if (int8) return "int8";
  return known(r->f32_flops) ? "f32" : NULL;
}

void ceiling_of_workload(const struct model_cost *c, const struct ceiling_rates *r,
                         const struct ceiling_workload *w, struct ceiling_result *out) {
  out->decode_tok_s = out->read_bw_bytes_s = out->bytes_per_token = NAN;
  out->prefill_tok_s = out->compute_ops_s = out->flops_per_token = NAN;
  out->compute_path = NULL;
  if (w->gen_tokens > 0) {
    out->bytes_per_token = model_decode_bytes_mean(c, w->depth + w->prompt_tokens, w->gen_tokens);
    out->read_bw_bytes_s = known(r->read_bw_bytes_s) ? r->read_bw_bytes_s : NAN;
    const double t = ceiling_tok_s(out->read_bw_bytes_s, out->bytes_per_token);
    out->decode_tok_s = t > 0 && isfinite(t) ? t : NAN;
  }
  if (w->prompt_tokens > 0) {
    out->flops_per_token = model_prefill_flops_at_depth(c, w->prompt_tokens, w->depth);
    out->compute_path = ceiling_compute_path(c->quantized_bytes_fraction, r, w->prompt_tokens);
    const char *p = out->compute_path;
    out->compute_ops_s = !p                          ? NAN
                         : !strcmp(p, "given")       ? r->given_compute_ops_s
                         : !strcmp(p, "int8_tile")   ? r->int8_tile_ops
                         : !strcmp(p, "int8")        ? r->int8_ops
                                                     : r->f32_flops;
    const double t = ceiling_tok_s(out->compute_ops_s, out->flops_per_token);
    out->prefill_tok_s = t > 0 && isfinite(t) ? t : NAN;
  }
}

void ceiling_batch(const struct model_cost *c, const struct ceiling_rates *r, uint32_t batch,
                   double depth, struct ceiling_batch_point *out) {
  memset(out, 0, sizeof *out);
  const uint32_t b = batch ? batch : 1;
  const uint64_t d = depth > 0 ? (uint64_t)llround(depth) : 0;
  out->batch = b;
  out->depth = (double)d;
  /* one token's bytes: weights (experts at k/E) + state + KV at d */
  const double one = model_decode_bytes_at_depth(c, d);
  const double per_stream = one - c->weight_bytes_per_token; /* KV + state */
  double weights = c->weight_bytes_per_token;
  if (c->n_expert && c->routed_expert_bytes > 0) {
    const double k_e = (double)c->n_expert_used / c->n_expert;
    const double touched = 1 - pow(1 - k_e, (double)b); /* share of experts read */
    weights += c->routed_expert_bytes * (touched - k_e);
  }
  out->bytes_per_step = weights + (double)b * per_stream;
  out->flops_per_step = (double)b * model_decode_flops_at_depth(c, d);
  out->memory_s = known(r->read_bw_bytes_s) ? out->bytes_per_step / r->read_bw_bytes_s : NAN;
  out->compute_path = ceiling_compute_path(c->quantized_bytes_fraction, r, b);
  const char *p = out->compute_path;
  const double ops = !p                        ? NAN
                     : !strcmp(p, "given")     ? r->given_compute_ops_s
                     : !strcmp(p, "int8_tile") ? r->int8_tile_ops
                     : !strcmp(p, "int8")      ? r->int8_ops
                                               : r->f32_flops;
  out->compute_s = known(ops) ? out->flops_per_step / ops : NAN;
  const bool compute_bound = isfinite(out->compute_s) && !(out->compute_s <= out->memory_s);
  out->bound = compute_bound ? "compute" : "memory";
  const double step = compute_bound ? out->compute_s : out->memory_s;
  out->aggregate_decode_tok_s = step > 0 && isfinite(step) ? (double)b / step : NAN;
  out->per_stream_decode_tok_s = out->aggregate_decode_tok_s / b;
}

uint32_t ceiling_batch_turn(const struct model_cost *c, const struct ceiling_rates *r,
                            double depth, uint32_t max_batch) {
  for (uint32_t b = 1; b <= max_batch; b++) {
    struct ceiling_batch_point p;
    ceiling_batch(c, r, b, depth, &p);
    if (!isfinite(p.compute_s)) return 0;
    if (!strcmp(p.bound, "compute")) return b;
  }
  return 0;
}

int ceiling_verdict_make(const char *phase, double measured_tok_s, double ceiling_tok_s,
                         struct ceiling_verdict *v) {
  memset(v, 0, sizeof *v);
  if (!(ceiling_tok_s > 0) || !(measured_tok_s >= 0)) return -1;
  snprintf(v->phase, sizeof v->phase, "%s", phase);
  v->measured_tok_s = measured_tok_s;
  v->ceiling_tok_s = ceiling_tok_s;
  double r = measured_tok_s / ceiling_tok_s;
  v->percent = 100.0 * r;
  bool decode = strcmp(phase, "decode") == 0;
  /* Compare the ratio, not a rounded percentage, so 100.4% is above. */
  if (r > 1.0) {
    v->kind = CEILING_ABOVE;
    v->code = "above-ceiling";
    snprintf(v->message, sizeof v->message,
             decode ? "%.0f%% of the ceiling: above what the bandwidth allows; likely a "
                      "mixture-of-experts model sized as dense, a cached prompt, speculative "
                      "decoding, a buffered stream, or a wrong bandwidth figure"
                    : "%.0f%% of the ceiling: above what the compute rate allows; likely a "
                      "cached prompt (tokens not processed), a wrong compute figure (a GPU or "
                      "matrix unit the probe did not measure), or miscounted prompt tokens",
             v->percent);
  } else if (r >= CEILING_WELL_TUNED) {
    v->kind = CEILING_WELL_TUNED_K;
    v->code = "well-tuned";
    snprintf(v->message, sizeof v->message,
             "%.0f%% of the ceiling: well tuned (well-tuned runtimes reach 75-85%%)", v->percent);
  } else if (r >= CEILING_FAR_BELOW) {
    v->kind = CEILING_BELOW_PRACTICAL;
    v->code = "below-practical";
    snprintf(v->message, sizeof v->message,
             "%.0f%% of the ceiling: below the 75-85%% well-tuned runtimes reach; check the "
             "thread count and that the build uses the CPU's SIMD instructions", v->percent);
  } else {
    v->kind = CEILING_FAR_BELOW_K;
    v->code = "far-below";
    snprintf(v->message, sizeof v->message,
             "%.0f%% of the ceiling: far below; common causes: a build without the CPU's SIMD "
             "instructions, too few threads, a cold model (first run), or a throttled device",
             v->percent);
  }
  return 0;
}
