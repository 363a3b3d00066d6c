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

/* Q6_K blocks for n floats (n a multiple of 256): a one-pass quantizer (see
 * synth_pipeline.c). */
void synth_quantize_q6_k_fast(const float *x, uint8_t *out, uint64_t n);

#endif
