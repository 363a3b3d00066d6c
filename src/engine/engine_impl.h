/* engine_impl: the engine's private state, shared by engine.c (load, API,
 * buffers) and forward.c (the forward pass). Not a public header.
 *
 * Buffer shapes use B = max_batch rows (tokens); E = n_embd, Q = n_head *
 * head_dim, KV = n_head_kv * head_dim, F = n_ff (dense) or n_ff_exp (moe),
 * K = n_expert_used. Row t of a (B, E) buffer starts at t * E. */
#ifndef TM_ENGINE_IMPL_H
#define TM_ENGINE_IMPL_H

#include <stdint.h>

#include "engine/engine.h"
#include "engine/model.h"
#include "engine/threadpool.h"
#include "engine/warm.h"
#include "gguf/gguf.h"

/* One matrix product of a parallel job (forward.c): out[c * out_stride + r] =
 * W row r . act row c, for every row r of w and c < ncols. */
struct mm_item {
  const struct mat *w;
  const uint8_t *wdata;   /* the matrix (an expert's slice for 3-D tensors) */
  const void *act;        /* activation rows in the weight's format */
  size_t a_stride;
  int64_t ncols;
  float *out;
  int64_t out_stride;
  /* The output head of one row (ncols 1) only, else NULL: per chunk of rows,
   * the first largest output and its row (argmax_slot), taken while the
   * chunk's outputs are in its thread's L1. */
  struct argmax_slot *amax;
};

/* One chunk's greedy candidate: its first largest logit and that row. */
struct argmax_slot {
  float v;
  int32_t i;
};

/* The index engine_argmax(x, n) returns, from the candidates of the n_slots
 * consecutive chunks that cover x[0..n) in order (each by the path's
 * argmax: first index of its maximum, a NaN first element kept): the first
 * index of the maximum, NaN never winning unless at index 0. A candidate
 * that is NaN (its chunk starts with one) or no candidates at all: argmax
 * over x instead, so the answer is always engine_argmax's. */
int64_t argmax_of_chunks(const struct kernel_ops *ops, const struct argmax_slot *slots,
                         int64_t n_slots, const float *x, int64_t n);

struct engine {
  struct gguf_file *file;
  struct model m;
  const struct kernel_ops *ops;
  struct tpool *pool;
  int n_threads;
  struct warm_cursor *warm; /* (n_threads): warm.h, decode's idle prefetch */
  uintptr_t warm_next;      /* the tpool_run_idle argument of the next job, 0: none */
  uint32_t n_steps;         /* forward_batch calls so far (names warm targets) */
  uint32_t n_ctx, max_batch;
  /* Sequences (engine_options.n_seq): seq_past[s] tokens of sequence s are
   * in its cache region. Each region is the whole single-sequence layout
   * (below), seq_cells uint16 apart. */
  uint32_t n_seq;
  uint32_t *seq_past;
  size_t seq_cells;
  /* The rows of the batch forward_batch runs (B entries, set by its
   * caller): row t is token t of sequence row_seq[t] at position
   * row_pos[t] (its K and V go to that cell, it attends to the cells
   * 0..row_pos[t] of its sequence). */
  uint32_t *row_seq, *row_pos;
  double load_ms;
  bool hugepages; /* weights copied into huge pages (engine_options.hugepages) */
  size_t decode_chunk_bytes; /* engine_options.decode_chunk_bytes, resolved */
  double huge_share; /* engine_info.huge_share */

  /* KV cache, F16: (n_seq, n_layer, n_head_kv, n_ctx, head_dim) each for K
   * and V (one head's positions contiguous: forward.c qkv_row; one
   * sequence's cells together, so a sequence touches pages of its own). */
  uint16_t *k_cache, *v_cache;
  void *kv_map;          /* the mapping holding both (engine.c kv_map) */
  size_t kv_map_bytes;
  uint64_t kv_bytes;
  /* Bytes allocated for activation buffers (alloc_buffers) and for the
   * threads' state (engine_set_threads): engine_memory's "buffers". */
  uint64_t buffer_bytes, thread_state_bytes;
  bool sizing; /* alloc_buffers only counts buffer_bytes (batch_within_bound) */
  uint32_t max_batch_asked; /* engine_options.max_batch before the memory bound */

  float *inv_freq;   /* (head_dim / 2): rope_base^(-2i/head_dim) */
  float *rope_cs;    /* (B, head_dim / 2, 2): cos, sin per position of the batch */

  float *x;          /* (B, E) residual stream */
  float *xb;         /* (B, E) normed input of a block / block output */
  float *q;          /* (B, Q) */
  float *k, *v;      /* (B, KV) */
  float *att;        /* (B, Q) attention output (input of attn_output) */
  float *hb, *hb2;   /* (B, F) dense gate / up;  moe: (B*K, F) */
  float *ffn_out;    /* (B, E) moe: weighted sum of the experts */
  float *logits_tmp; /* (n_vocab) when the caller passes no logits buffer */

  /* Quantized activations, one buffer per format (ACT_Q8, ACT_Q8K), sized for
   * the widest input: max(B*K, B) rows of max(E, Q, F). */
  void *act[3];
  size_t act_bytes;

  /* MoE (qwen3moe): routing and the token rows gathered per expert. */
  float *router;     /* (B, n_expert) logits, then probabilities */
  int32_t *top_e;    /* (B, K) chosen experts */
  float *top_w;      /* (B, K) their normalized weights */
  float *moe_x;      /* (B*K, E) inputs grouped by expert */
  float *moe_o;      /* (B*K, E) expert outputs */
  int32_t *moe_tok;  /* (B*K) token of each grouped row */
  float *moe_w;      /* (B*K) routing weight of each grouped row */
  int32_t *moe_active;   /* (n_expert) the experts of the current MoE layer, in job order */
  uint32_t moe_n_active; /* valid from the routing to the down job (warm.c reads them) */
  /* Decode's output head: the candidates of its chunks (mm_job_chunks of the
   * output matrix for one row at n_threads; allocated by engine_set_threads),
   * valid for the last forward_batch when head_amax_n > 0
   * (engine_decode_greedy). */
  struct argmax_slot *head_amax;
  int64_t head_amax_n;
  struct mm_item *items; /* room for max(3, 2 * n_expert) matrices per job */
  int max_items;
};

/* Runs tokens[0..n) (n <= max_batch) as the rows e->row_seq / e->row_pos
 * name (one sequence's consecutive positions, a prompt; or one token of each
 * of n distinct sequences, a batched decode step), appends to the KV cache
 * and advances each row's sequence past its position. logits: (n, n_vocab)
 * when all_logits, else (n_vocab) for the last row, or NULL to skip the
 * output head (a batch that is not the last of a prompt). The caller has
 * checked ids and capacity. */
void forward_batch(struct engine *e, const int32_t *tokens, uint32_t n, float *logits,
                   bool all_logits);

#endif
