/* warm: idle threads of a decode step prefetch the next matrix job's weights.
 *
 * Decode streams every weight once per token, and between the matrix jobs a
 * core reads nothing: its share of a job is done and it waits for the other
 * threads, or for the caller's serial steps (norms, activation quantization,
 * residual adds). At 2 threads that was 6% of the time, plus the attention
 * in between. During those waits (tpool_run_idle) each thread issues L2
 * prefetches for the start of its own region of the next job (mm_layout.h
 * says where that is), up to WARM_BYTES, stopping as soon as it has work;
 * a later wait for the same target resumes where it stopped. Before the
 * attention it first prefetches the cached K and V rows the attention will
 * read, which otherwise arrive one miss at a time. In a MoE layer the
 * router's matrix follows the output projection, and once the router has
 * chosen, the chosen experts' down slices follow their gate/up job (the
 * caller publishes them in e->moe_active before that job). Results do not
 * change: prefetches only move data closer. Private to the engine. */
#ifndef TM_ENGINE_WARM_H
#define TM_ENGINE_WARM_H

#include <stdint.h>

#include "engine/model.h"
#include "engine/threadpool.h"

/* The matrix jobs of a decode step, in order within a layer. */
enum warm_stage {
  WARM_QKV = 1,
  WARM_WO,
  WARM_GATE_UP, /* the router's matrix in a MoE layer */
  WARM_DOWN,    /* dense only */
  WARM_HEAD,
  WARM_MOE_DOWN /* the chosen experts' down slices (e->moe_active), during gate/up */
};

/* Per thread, on its own cache line: how far it got warming which target. */
struct warm_cursor {
  _Alignas(64) uintptr_t target;
  uint64_t kv_bytes; /* of the KV rows (WARM_WO), UINT64_MAX when done */
  uint64_t bytes;    /* of the weights, UINT64_MAX when done */
};

/* The tpool_run_idle argument naming the job of stage s in layer `layer`
 * (ignored for WARM_HEAD) as the next one of decode step `step`; never 0. */
uintptr_t warm_target(uint32_t step, uint32_t layer, enum warm_stage s);

/* tpool_idle_fn; ctx is the struct engine. */
void warm_idle(void *ctx, uintptr_t target, struct tpool *p, int ith, int nth);

#endif
