/* shape: the hyperparameters of a transformer of a supported family, and the
 * named presets of real models (tiny test shapes, Qwen3, Llama 3.2, Qwen3-MoE).
 * A shape says nothing about weight types; see plan.h for that. */
#ifndef TM_SHAPE_H
#define TM_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct model_shape {
  char arch[24];          /* "llama", "qwen2", "qwen3", "qwen3moe" */
  uint32_t n_layer;       /* {arch}.block_count */
  uint32_t n_embd;        /* {arch}.embedding_length */
  uint32_t n_head;        /* attention.head_count */
  uint32_t n_head_kv;     /* attention.head_count_kv */
  uint32_t head_dim;      /* attention.key_length = value_length */
  uint32_t n_ff;          /* feed_forward_length (dense FFN) */
  uint32_t n_vocab;       /* rows of token_embd */
  uint32_t n_expert;      /* 0 for dense */
  uint32_t n_expert_used; /* experts per token (MoE) */
  uint32_t n_ff_exp;      /* expert_feed_forward_length (MoE) */
  bool tied;              /* output head shares token_embd (no output.weight) */
  float rope_base;        /* rope.freq_base */
  float rms_eps;          /* attention.layer_norm_rms_epsilon */
  uint32_t n_ctx_train;   /* context_length */
};

struct model_preset {
  const char *name;        /* "qwen3-0.6b" */
  const char *description; /* one line for --help */
  struct model_shape shape;
};

/* NULL when there is no preset of that name. */
const struct model_preset *model_preset_find(const char *name);
/* All presets, in the order --help lists them. */
const struct model_preset *model_presets(size_t *count);
/* Checks the architecture is known and sizes are consistent (heads divisible by
 * kv heads, an even head dimension, MoE fields set for qwen3moe and only there,
 * nothing zero...). */
int model_shape_validate(const struct model_shape *s, struct tm_err *err);

#endif
