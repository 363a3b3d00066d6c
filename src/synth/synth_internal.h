/* synth_internal: the pipeline's entry point, shared by synth.c and
 * synth_pipeline.c (not a public API). */
#ifndef TM_SYNTH_INTERNAL_H
#define TM_SYNTH_INTERNAL_H

#include <stdint.h>

#include "gguf/gguf.h"
#include "synth/synth.h"

/* Generates every tensor of the plan and writes its bytes through w (whose
 * header is already written), in plan order, with opt->n_threads workers. */
int synth_pipeline_run(const struct synth_options *opt, const struct model_shape *shape,
                       const struct model_plan *plan, struct gguf_writer *w,
                       synth_progress_fn progress, void *ctx, struct tm_err *err);

/* The generator seed of one chunk: a function of (seed, tensor, chunk) only. */
uint64_t synth_chunk_seed(uint64_t seed, uint64_t tensor_index, uint64_t chunk_index);

/* One-pass K-quant quantizers (synth_quant_fast.c): n floats (a multiple of
 * 256, finite) to n/256 blocks of 144 (Q4_K), 176 (Q5_K) or 210 (Q6_K) bytes.
 * Every element lands within half a step of its value under the stored scales
 * (its nearest level: the stored range covers each sub-block); deterministic. */
void synth_quantize_q4_k_fast(const float *x, uint8_t *out, uint64_t n);
void synth_quantize_q5_k_fast(const float *x, uint8_t *out, uint64_t n);
void synth_quantize_q6_k_fast(const float *x, uint8_t *out, uint64_t n);

#endif
