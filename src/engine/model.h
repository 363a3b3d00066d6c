/* model: binds a GGUF file's tensors to the engine's architectures (llama,
 * qwen2, qwen3, qwen3moe) and reads their hyperparameters. Internal to the
 * engine module.
 *
 * Contract: every weight stays a pointer into the file's map (no copies); only
 * small vectors (norm weights, biases) that are not F32 in the file are
 * converted once into owned f32 arrays. model_bind() checks every tensor's
 * presence, shape and type (a gemm kernel for matrices, a dequantizer for the
 * embedding table) so the forward pass can trust them. Shapes use GGUF order:
 * ne[0] is the row length (the input dimension of a matrix). */
#ifndef TM_ENGINE_MODEL_H
#define TM_ENGINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/kernels.h"
#include "gguf/gguf.h"
#include "util/err.h"

enum model_arch { ARCH_LLAMA = 0, ARCH_QWEN2, ARCH_QWEN3, ARCH_QWEN3MOE };

/* A weight matrix: rows of ne0 elements, row_bytes apart. For a 3-D expert
 * tensor, expert e's matrix starts at data + e * rows * row_bytes. */
struct mat {
  const struct gguf_tensor *t;
  const uint8_t *data;
  uint32_t type;
  int64_t n;          /* row length (input dimension) */
  int64_t rows;       /* output dimension (per expert for 3-D tensors) */
  size_t row_bytes;
};

struct layer_weights {
  const float *attn_norm;      /* (n_embd) */
  struct mat wq;               /* (n_embd) -> (n_head * head_dim) */
  struct mat wk;               /* (n_embd) -> (n_head_kv * head_dim) */
  struct mat wv;               /* (n_embd) -> (n_head_kv * head_dim) */
  struct mat wo;               /* (n_head * head_dim) -> (n_embd) */
  const float *bq, *bk, *bv;   /* qwen2 biases, NULL otherwise */
  const float *q_norm, *k_norm;/* qwen3/qwen3moe per-head RMSNorm weights (head_dim) */
  const float *ffn_norm;       /* (n_embd) */
  struct mat ffn_gate;         /* dense: (n_embd) -> (n_ff) */
  struct mat ffn_up;           /* dense: (n_embd) -> (n_ff) */
  struct mat ffn_down;         /* dense: (n_ff) -> (n_embd) */
  struct mat gate_inp;         /* moe router: (n_embd) -> (n_expert) */
  struct mat gate_exps;        /* moe: n_expert x [(n_embd) -> (n_ff_exp)] */
  struct mat up_exps;          /* moe: n_expert x [(n_embd) -> (n_ff_exp)] */
  struct mat down_exps;        /* moe: n_expert x [(n_ff_exp) -> (n_embd)] */
};

struct model {
  enum model_arch arch;
  char arch_name[32];
  uint32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
  uint32_t n_expert, n_expert_used, n_ff_exp;
  uint32_t n_ctx_train;
  float rope_base, rms_eps;
  bool rope_neox;              /* pairs (i, i + d/2) instead of (2i, 2i+1) */
  bool tied_output;

  struct mat token_embd;       /* n_vocab rows of n_embd */
  const float *output_norm;    /* (n_embd) */
  struct mat output;           /* (n_embd) -> (n_vocab); token_embd when tied */
  struct layer_weights *layers;/* n_layer */

  float **owned;               /* converted small vectors, freed with the model */
  int n_owned, cap_owned;
  uint64_t owned_bytes;         /* their sizes summed (engine_memory) */
};

/* Reads hyperparameters and binds tensors; ops decides which weight types run.
 * On failure returns -1 with one line in err; model_free() is safe afterwards. */
int model_bind(struct model *m, const struct gguf_file *f, const struct kernel_ops *ops,
               struct tm_err *err);
void model_free(struct model *m);

#endif
