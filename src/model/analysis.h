/* analysis: what a model costs per token, from a neutral description.
 *
 * A GGUF file, a synth plan (plan.h) and a hand-made test shape are all turned
 * into a struct model_desc (hyperparameters + tensor table), and one function,
 * model_analyze(), computes from it: parameters (total and active per token),
 * bytes read per generated token (tensor by tensor, each with its own type),
 * KV-cache bytes per token of context (sliding-window layers capped at the
 * window, recurrent layers as a constant state), and FLOPs per token. The
 * formulas are those of docs/design.md "The ceiling"; docs/ceiling.md spells them out.
 *
 * Works on any architecture from metadata alone: general.architecture, then
 * {arch}.* keys; where a key is absent a documented default is used and a line
 * is added to `assumptions` so the user is told.
 *
 * Depth-dependent quantities are helpers over the result (model_kv_bytes_at_depth,
 * model_decode_bytes_at_depth, ...), so one analysis serves every depth. */
#ifndef TM_ANALYSIS_H
#define TM_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct gguf_file;
struct model_plan;

#define MODEL_MAX_ASSUMPTIONS 16
#define MODEL_ASSUMPTION_LEN 200

/* What one layer (block) does with its sequence history. */
enum model_layer_kind {
  MODEL_LAYER_ATTN = 0,  /* full attention: KV grows with depth */
  MODEL_LAYER_ATTN_SWA,  /* sliding-window attention: KV stops growing at the window */
  MODEL_LAYER_RECURRENT, /* SSM / linear attention / conv: constant state */
  MODEL_LAYER_NONE,      /* no sequence mixing (0 KV heads, no state) */
  MODEL_LAYER_MTP,       /* multi-token-prediction block: not run in plain decode */
};

struct model_desc_tensor {
  char name[128];
  uint32_t n_dims;
  uint64_t ne[4];  /* ne[0] = row length; unused dims are 1 */
  uint32_t type;   /* enum ggml_type */
};

struct model_desc {
  char arch[64];             /* general.architecture */
  uint32_t n_layer;          /* block_count (MTP blocks included) */
  uint32_t n_layer_nextn;    /* nextn_predict_layers: the last ones are MTP blocks */
  uint32_t n_embd;
  uint32_t n_vocab;          /* 0 when unknown */
  uint32_t n_expert;         /* 0 = dense */
  uint32_t n_expert_used;
  uint32_t key_length;       /* per head; attention.key_length, else n_embd / n_head */
  uint32_t value_length;
  uint32_t sliding_window;   /* tokens; 0 = none */
  uint64_t context_length;   /* trained context; 0 = unknown */
  /* Per layer (n_layer entries, allocated by model_desc_init). */
  uint32_t *n_head;
  uint32_t *n_head_kv;
  uint8_t *layer_kind;       /* enum model_layer_kind */
  /* State one recurrent layer keeps per sequence, in bytes (F32 as llama.cpp
   * keeps it): conv state + SSM state. */
  uint64_t recurrent_state_bytes;
  /* Attention layers that also keep that state (parallel hybrids, Falcon-H1). */
  uint32_t n_state_layers_extra;
  /* No attention.head_count key, yet layers with attention tensors: those
   * layers are attention layers of unknown head count (n_head = n_head_kv =
   * 0), so their KV cache and attention FLOPs are unknown, not 0. */
  bool heads_unknown;

  size_t n_tensors, cap_tensors;
  struct model_desc_tensor *tensors;

  size_t n_assumptions;
  char assumptions[MODEL_MAX_ASSUMPTIONS][MODEL_ASSUMPTION_LEN];
};

/* Zeroes the description and allocates the per-layer arrays (n_head,
 * n_head_kv zero; every layer MODEL_LAYER_ATTN). For hand-made descriptions. */
int model_desc_init(struct model_desc *d, uint32_t n_layer, struct tm_err *err);
/* Appends a tensor (name truncated to 127 bytes). */
int model_desc_add_tensor(struct model_desc *d, const char *name, uint32_t n_dims,
                          const uint64_t ne[4], uint32_t type, struct tm_err *err);
/* Adds a line to assumptions (printf format); silently drops past the limit. */
void model_desc_assume(struct model_desc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void model_desc_free(struct model_desc *d);

/* From a parsed GGUF file's metadata and tensor table. Fails (err) on a file
 * without tensors (vocab-only) or without a usable layer count. */
int model_desc_from_gguf(const struct gguf_file *f, struct model_desc *d, struct tm_err *err);
/* The block index N of a "blk.N.*" tensor name, -1 for any other name; an
 * index too large to be real reads as UINT32_MAX (past any block_count). */
int64_t model_block_index(const char *name);
/* From a synth plan (shape + llama.cpp's per-tensor types). */
int model_desc_from_plan(const struct model_plan *p, struct model_desc *d, struct tm_err *err);

/* The KV cache types a runtime accepts (F32, F16, BF16, Q8_0, Q4_0, Q4_1,
 * Q5_0, Q5_1, IQ4_NL; any case) -> enum ggml_type; 0, or -1 for another. */
int model_kv_type_from_name(const char *name, uint32_t *type);

struct model_analyze_options {
  uint32_t kv_type; /* enum ggml_type of the K and V cache; GGML_TYPE_F16 (1) by default */
};

struct model_type_count {
  uint32_t type;
  uint32_t count;     /* tensors of this type */
  uint64_t bytes;
};

struct model_cost {
  char arch[64];
  uint64_t params_total;        /* every element of every tensor */
  uint64_t bytes_total;         /* tensor data bytes */
  double params_active;         /* per token: routed experts at used/count, MTP excluded,
                                   embeddings counted (they are parameters) */
  double params_layers_active;  /* FLOP-bearing part of params_active: no lookups
                                   (embeddings), no output head */
  uint64_t params_output;       /* output head (token_embd when tied) */
  bool tied;                    /* no output.weight: token_embd is the head */
  bool moe;
  double weight_bytes_per_token;/* weights read per generated token */
  double routed_expert_bytes;   /* every routed expert's bytes, all layers (a
                                   decode step of one token reads n_expert_used /
                                   n_expert of them); 0 for a dense model */
  uint32_t n_expert, n_expert_used;
  double state_bytes;           /* recurrent state (all recurrent layers), read per token */
  double kv_bytes_per_token_full; /* KV bytes per token of context, full-attention layers */
  double kv_bytes_per_token_swa;  /* same for sliding-window layers (until the window) */
  double kv_bytes_per_token;      /* sum: per token of context below the window */
  double kv_elem_bytes;           /* bytes per K/V element of the cache type */
  uint32_t kv_type;
  uint32_t sliding_window;
  uint32_t n_attn_layers, n_swa_layers, n_recurrent_layers, n_none_layers, n_mtp_layers;
  /* model_desc.heads_unknown: the KV figures (and every KV-dependent one:
   * decode bytes past depth 0, the context that fits) and the attention FLOPs
   * (prefill) count no attention and are NOT the model's; callers say
   * "unknown". n_attn_layers includes those layers. */
  bool kv_unknown;
  /* Attention FLOPs per token per unit of depth: 2 x sum n_head x (k + v). */
  double attn_flops_per_depth_full;
  double attn_flops_per_depth_swa;
  uint64_t context_length;
  double quantized_bytes_fraction; /* share of bytes_total in quantized types */
  size_t n_types;
  struct model_type_count types[48]; /* histogram, most tensors first */
  size_t n_assumptions;
  char assumptions[MODEL_MAX_ASSUMPTIONS][MODEL_ASSUMPTION_LEN];
};

/* Fails on a tensor of unknown type or a size that overflows, or a KV type the
 * table does not know. */
int model_analyze(const struct model_desc *d, const struct model_analyze_options *opt,
                  struct model_cost *out, struct tm_err *err);

/* The tensor type holding the most bytes ("Q6_K"); "?" when there are none. */
const char *model_most_bytes_type(const struct model_cost *c);
/* general.file_type as llama-quantize names it ("Q4_K_M"); NULL when the
 * file has none or a value tokmeter does not name. It names a file better
 * than its tensors do: a small Q4_0 file can hold most of its bytes in its
 * Q8_0 embeddings (model_most_bytes_type would say Q8_0). */
const char *model_gguf_file_type(const struct gguf_file *f);

/* What a GGUF file says of itself beside its cost. */
struct model_file_facts {
  char file_type[32]; /* model_gguf_file_type's name; "" when none */
  char name[256];     /* general.name; "" when none */
  uint64_t file_bytes;
};
/* GGUF file -> model cost, for every command: opens path, reads its
 * description, analyses it with the KV cache in kv_type (enum ggml_type).
 * 0, or -1 with err one line that names the file ("PATH: what is wrong").
 * facts may be NULL. */
int model_cost_from_file(const char *path, uint32_t kv_type, struct model_cost *cost,
                         struct model_file_facts *facts, struct tm_err *err);
/* A preset at a file type (NULL: Q4_K_M) -> model cost, with the tensor
 * types llama-quantize chooses, no file written; type_name gets the type's
 * name. 0; -1 with err for the user's input ("unknown preset 'X'; accepted:
 * ...", "unknown type 'T'; accepted: ...", a shape the type cannot make);
 * -2 with err when the plan cannot be analysed (a bug, not the input). */
int model_cost_from_preset(const char *preset, const char *type, uint32_t kv_type,
                           struct model_cost *cost, char *type_name, size_t tn,
                           struct tm_err *err);

/* KV cache bytes held at context depth `depth` (= bytes of KV read to generate
 * the next token). Sliding-window layers count min(depth, window). */
double model_kv_bytes_at_depth(const struct model_cost *c, uint64_t depth);
/* Bytes read per generated token at depth: weights + recurrent state + KV. */
double model_decode_bytes_at_depth(const struct model_cost *c, uint64_t depth);
/* FLOPs to generate one token at depth: layers + output head + attention. */
double model_decode_flops_at_depth(const struct model_cost *c, uint64_t depth);
/* Bytes read per generated token averaged over n tokens generated at depths
 * depth .. depth + n - 1 (n 0 counts as 1): the decode ceiling of a run of n
 * tokens is bandwidth / this mean (its time is the sum of the tokens' bytes
 * over the bandwidth). */
double model_decode_bytes_mean(const struct model_cost *c, uint64_t depth, uint64_t n);
/* FLOPs per prompt token for a prompt of prompt_len tokens read from an empty
 * cache: layers + one output head amortised over the prompt + attention at the
 * average depth (L/2; sliding-window layers averaged with their cap). */
double model_prefill_flops_per_token(const struct model_cost *c, uint64_t prompt_len);
/* The same for a prompt read after `depth` tokens already in the cache: a
 * token at position depth + t attends to depth + t tokens on a full layer and
 * min(depth + t, window) on a windowed one, averaged over t in [0, L). At
 * depth 0 it is model_prefill_flops_per_token. */
double model_prefill_flops_at_depth(const struct model_cost *c, uint64_t prompt_len,
                                    uint64_t depth);
/* Largest context (tokens) whose KV cache fits in memory_bytes after the
 * weights, the recurrent state and overhead_bytes; 0 when not even the weights
 * fit. Capped by context_length when known (*capped set); UINT64_MAX when
 * unbounded (no growing KV and no known context length). */
uint64_t model_context_fits(const struct model_cost *c, double memory_bytes,
                            double overhead_bytes, bool *capped);

#endif
