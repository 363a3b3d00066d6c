/* plan: shape + file type -> the tensor list of a GGUF file, with the tensor types
 * llama.cpp's quantizer (llama-quantize, src/llama-quant.cpp) chooses for that
 * file type. See plan.h.
 *
 * The rules, as llama.cpp applies them without an imatrix and without overrides:
 *  1. Only tensors whose name ends in "weight", with 2+ dims, that are not norms
 *     ("_norm.weight") and not the MoE router ("ffn_gate_inp.weight") are
 *     converted; everything else keeps its source type (F32 here).
 *  2. For F32/F16/BF16 files every converted tensor takes that type; no rule
 *     below applies (they apply only when the default type is quantized).
 *  3. The output head (output.weight, or token_embd.weight when there is no
 *     output.weight): Q8_0 when its row length is not a multiple of the default
 *     type's block size, else Q6_K unless the default is Q8_0.
 *  4. attn_v: Q4_K_M/Q5_K_M -> Q6_K on use_more_bits layers; Q4_K_S -> Q5_K on the
 *     first 4; a 70B llama (80 layers) bumps Q4_K to Q5_K; 8 experts -> Q8_0.
 *     attn_k: 8 experts -> Q8_0. attn_output: 8 experts and Q4_K_S/Q4_K_M -> Q5_K.
 *     ffn_down (ffn_down_exps too): Q4_K_M/Q5_K_M -> Q6_K on use_more_bits
 *     layers; Q4_K_S -> Q5_K on layers < n_layer/8.
 *     use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
 *  5. Fallback when the row length is not a multiple of the chosen type's block:
 *     Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0; if that still does not divide,
 *     F16. Other types have no fallback: llama-quantize stops with an error, and
 *     so does model_plan_make.
 * Order: llama.cpp's loader sorts tensors by (layer, name), layer -1 for the
 * global ones, and llama-quantize writes them in that order; so does the plan. */
#include "model/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gguf/ggml_types.h"
#include "model/analysis.h"
#include "model/shape.h"

static const struct {
  const char *name;
  int ftype;
} ftype_names[] = {
    {"F32", MODEL_FTYPE_F32},       {"F16", MODEL_FTYPE_F16},       {"BF16", MODEL_FTYPE_BF16},
    {"Q8_0", MODEL_FTYPE_Q8_0},     {"Q4_0", MODEL_FTYPE_Q4_0},     {"Q4_1", MODEL_FTYPE_Q4_1},
    {"Q5_0", MODEL_FTYPE_Q5_0},     {"Q5_1", MODEL_FTYPE_Q5_1},     {"Q4_K_S", MODEL_FTYPE_Q4_K_S},
    {"Q4_K_M", MODEL_FTYPE_Q4_K_M}, {"Q5_K_S", MODEL_FTYPE_Q5_K_S}, {"Q5_K_M", MODEL_FTYPE_Q5_K_M},
    {"Q6_K", MODEL_FTYPE_Q6_K},
};
#define N_FTYPES (sizeof ftype_names / sizeof ftype_names[0])

int model_ftype_from_name(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < N_FTYPES; i++)
    if (strcasecmp(name, ftype_names[i].name) == 0) return ftype_names[i].ftype;
  return -1;
}

const char *model_ftype_name(int ftype) {
  for (size_t i = 0; i < N_FTYPES; i++)
    if (ftype_names[i].ftype == ftype) return ftype_names[i].name;
  return NULL;
}

const char *model_ftype_names(void) {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K";
}

/* llama_ftype -> the default tensor type llama-quantize uses for it. */
static int ftype_default_type(int ftype) {
  switch (ftype) {
  case MODEL_FTYPE_F32: return GGML_TYPE_F32;
  case MODEL_FTYPE_F16: return GGML_TYPE_F16;
  case MODEL_FTYPE_BF16: return GGML_TYPE_BF16;
  case MODEL_FTYPE_Q4_0: return GGML_TYPE_Q4_0;
  case MODEL_FTYPE_Q4_1: return GGML_TYPE_Q4_1;
  case MODEL_FTYPE_Q5_0: return GGML_TYPE_Q5_0;
  case MODEL_FTYPE_Q5_1: return GGML_TYPE_Q5_1;
  case MODEL_FTYPE_Q8_0: return GGML_TYPE_Q8_0;
  case MODEL_FTYPE_Q4_K_S:
  case MODEL_FTYPE_Q4_K_M: return GGML_TYPE_Q4_K;
  case MODEL_FTYPE_Q5_K_S:
  case MODEL_FTYPE_Q5_K_M: return GGML_TYPE_Q5_K;
  case MODEL_FTYPE_Q6_K: return GGML_TYPE_Q6_K;
  default: return -1;
  }
}

/* Block sizes of the types a plan can hold; kept here (facts of the format) so
 * the plan does not depend on the state of the type table. */
static uint32_t type_block(uint32_t t) {
  switch (t) {
  case GGML_TYPE_F32:
  case GGML_TYPE_F16:
  case GGML_TYPE_BF16: return 1;
  case GGML_TYPE_Q4_K:
  case GGML_TYPE_Q5_K:
  case GGML_TYPE_Q6_K: return QK_K;
  default: return 32; /* Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 */
  }
}

static uint64_t type_block_bytes(uint32_t t) {
  switch (t) {
  case GGML_TYPE_F32: return 4;
  case GGML_TYPE_F16:
  case GGML_TYPE_BF16: return 2;
  case GGML_TYPE_Q4_0: return 18;
  case GGML_TYPE_Q4_1: return 20;
  case GGML_TYPE_Q5_0: return 22;
  case GGML_TYPE_Q5_1: return 24;
  case GGML_TYPE_Q8_0: return 34;
  case GGML_TYPE_Q4_K: return 144;
  case GGML_TYPE_Q5_K: return 176;
  case GGML_TYPE_Q6_K: return 210;
  default: return 0;
  }
}

static const char *type_name(uint32_t t) {
  switch (t) {
  case GGML_TYPE_Q4_0: return "Q4_0";
  case GGML_TYPE_Q4_1: return "Q4_1";
  case GGML_TYPE_Q5_0: return "Q5_0";
  case GGML_TYPE_Q5_1: return "Q5_1";
  case GGML_TYPE_Q8_0: return "Q8_0";
  default: return "this type";
  }
}

static int use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static int has(const char *name, const char *part) { return strstr(name, part) != NULL; }

/* Rules 1-5 for one tensor. Returns the type, or -1 with err set. */
static int choose_type(const struct model_shape *s, int ftype, bool tied,
                       const struct plan_tensor *t, struct tm_err *err) {
  const char *name = t->name;
  size_t len = strlen(name);
  bool quantize = t->n_dims >= 2 && len >= 6 && strcmp(name + len - 6, "weight") == 0 &&
                  !has(name, "_norm.weight") && !has(name, "ffn_gate_inp.weight");
  if (!quantize) return GGML_TYPE_F32; /* source type of norms, biases, router */
  int def = ftype_default_type(ftype);
  if (def == GGML_TYPE_F32 || def == GGML_TYPE_F16 || def == GGML_TYPE_BF16) return def;

  int type = def;
  int layer = t->layer == UINT32_MAX ? -1 : (int)t->layer;
  int n_layer = (int)s->n_layer;
  bool is_output = strcmp(name, "output.weight") == 0 || (tied && strcmp(name, "token_embd.weight") == 0);
  bool moe8 = s->n_expert == 8;
  bool k_m = ftype == MODEL_FTYPE_Q4_K_M || ftype == MODEL_FTYPE_Q5_K_M;
  if (is_output) {
    if (t->ne[0] % type_block((uint32_t)type) != 0)
      type = GGML_TYPE_Q8_0;
    else if (type != GGML_TYPE_Q8_0)
      type = GGML_TYPE_Q6_K;
  } else if (strcmp(name, "token_embd.weight") == 0) {
    /* untied embedding: the default type (no rule for the types we write) */
  } else if (has(name, "attn_v.weight")) {
    if (k_m && use_more_bits(layer, n_layer))
      type = GGML_TYPE_Q6_K;
    else if (ftype == MODEL_FTYPE_Q4_K_S && layer < 4)
      type = GGML_TYPE_Q5_K;
    /* LLM_TYPE_70B: llama.cpp names a llama of 80 layers 70B */
    if (strcmp(s->arch, "llama") == 0 && n_layer == 80 && type == GGML_TYPE_Q4_K)
      type = GGML_TYPE_Q5_K;
    if (moe8) type = GGML_TYPE_Q8_0;
  } else if (has(name, "attn_k.weight")) {
    if (moe8) type = GGML_TYPE_Q8_0;
  } else if (has(name, "attn_output.weight")) {
    if (moe8 && (ftype == MODEL_FTYPE_Q4_K_S || ftype == MODEL_FTYPE_Q4_K_M)) type = GGML_TYPE_Q5_K;
  } else if (has(name, "ffn_down")) {
    if (k_m && use_more_bits(layer, n_layer))
      type = GGML_TYPE_Q6_K;
    else if (ftype == MODEL_FTYPE_Q4_K_S && layer < n_layer / 8)
      type = GGML_TYPE_Q5_K;
  }

  if (t->ne[0] % type_block((uint32_t)type) != 0) {
    int fb;
    switch (type) {
    case GGML_TYPE_Q4_K: fb = GGML_TYPE_Q5_0; break;
    case GGML_TYPE_Q5_K: fb = GGML_TYPE_Q5_1; break;
    case GGML_TYPE_Q6_K: fb = GGML_TYPE_Q8_0; break;
    default:
      return tm_errf(err,
                     "tensor %s: row length %llu is not a multiple of %s's block size %u "
                     "(llama-quantize has no fallback for it either); choose another --type "
                     "or a shape whose sizes are multiples of %u",
                     name, (unsigned long long)t->ne[0], type_name((uint32_t)type),
                     type_block((uint32_t)type), type_block((uint32_t)type));
    }
    if (t->ne[0] % type_block((uint32_t)fb) != 0) fb = GGML_TYPE_F16;
    type = fb;
  }
  return type;
}

static int tensor_layer_cmp(const void *pa, const void *pb) {
  const struct plan_tensor *a = pa, *b = pb;
  int la = a->layer == UINT32_MAX ? -1 : (int)a->layer;
  int lb = b->layer == UINT32_MAX ? -1 : (int)b->layer;
  if (la != lb) return la < lb ? -1 : 1;
  return strcmp(a->name, b->name);
}

struct plan_builder {
  struct plan_tensor *t;
  size_t n, cap;
};

static void add(struct plan_builder *b, uint32_t layer, const char *name, uint32_t n_dims,
                uint64_t ne0, uint64_t ne1, uint64_t ne2) {
  struct plan_tensor *t = &b->t[b->n++]; /* capacity reserved by the caller */
  memset(t, 0, sizeof *t);
  if (layer == UINT32_MAX)
    snprintf(t->name, sizeof t->name, "%s", name);
  else
    snprintf(t->name, sizeof t->name, "blk.%u.%s", layer, name);
  t->n_dims = n_dims;
  t->ne[0] = ne0;
  t->ne[1] = n_dims > 1 ? ne1 : 1;
  t->ne[2] = n_dims > 2 ? ne2 : 1;
  t->ne[3] = 1;
  t->layer = layer;
}

int model_plan_make(const struct model_shape *shape, int ftype, struct model_plan *plan,
                    struct tm_err *err) {
  memset(plan, 0, sizeof *plan);
  if (model_shape_validate(shape, err) != 0) return -1;
  if (ftype_default_type(ftype) < 0)
    return tm_errf(err, "unknown file type %d (supported: %s)", ftype, model_ftype_names());
  const struct model_shape *s = shape;
  bool qwen2 = strcmp(s->arch, "qwen2") == 0;
  bool qk_norm = strcmp(s->arch, "qwen3") == 0 || strcmp(s->arch, "qwen3moe") == 0;
  bool moe = strcmp(s->arch, "qwen3moe") == 0;
  uint64_t n_embd = s->n_embd, n_q = (uint64_t)s->n_head * s->head_dim,
           n_kv = (uint64_t)s->n_head_kv * s->head_dim;

  struct plan_builder b = {0};
  b.cap = 3 + (size_t)s->n_layer * 16;
  b.t = calloc(b.cap, sizeof *b.t);
  if (!b.t) return tm_errf(err, "out of memory for a plan of %zu tensors", b.cap);

  /* Shapes as llama.cpp's loader (load_tensors) expects them: ne[0] is the input
   * size of a matrix, ne[1] its output size. */
  add(&b, UINT32_MAX, "token_embd.weight", 2, n_embd, s->n_vocab, 1);
  add(&b, UINT32_MAX, "output_norm.weight", 1, n_embd, 1, 1);
  if (!s->tied) add(&b, UINT32_MAX, "output.weight", 2, n_embd, s->n_vocab, 1);
  for (uint32_t l = 0; l < s->n_layer; l++) {
    add(&b, l, "attn_norm.weight", 1, n_embd, 1, 1);
    add(&b, l, "attn_q.weight", 2, n_embd, n_q, 1);
    add(&b, l, "attn_k.weight", 2, n_embd, n_kv, 1);
    add(&b, l, "attn_v.weight", 2, n_embd, n_kv, 1);
    add(&b, l, "attn_output.weight", 2, n_q, n_embd, 1);
    if (qwen2) {
      add(&b, l, "attn_q.bias", 1, n_q, 1, 1);
      add(&b, l, "attn_k.bias", 1, n_kv, 1, 1);
      add(&b, l, "attn_v.bias", 1, n_kv, 1, 1);
    }
    if (qk_norm) {
      add(&b, l, "attn_q_norm.weight", 1, s->head_dim, 1, 1);
      add(&b, l, "attn_k_norm.weight", 1, s->head_dim, 1, 1);
    }
    add(&b, l, "ffn_norm.weight", 1, n_embd, 1, 1);
    if (moe) {
      add(&b, l, "ffn_gate_inp.weight", 2, n_embd, s->n_expert, 1);
      add(&b, l, "ffn_gate_exps.weight", 3, n_embd, s->n_ff_exp, s->n_expert);
      add(&b, l, "ffn_up_exps.weight", 3, n_embd, s->n_ff_exp, s->n_expert);
      add(&b, l, "ffn_down_exps.weight", 3, s->n_ff_exp, n_embd, s->n_expert);
    } else {
      add(&b, l, "ffn_gate.weight", 2, n_embd, s->n_ff, 1);
      add(&b, l, "ffn_up.weight", 2, n_embd, s->n_ff, 1);
      add(&b, l, "ffn_down.weight", 2, s->n_ff, n_embd, 1);
    }
  }
  qsort(b.t, b.n, sizeof *b.t, tensor_layer_cmp);
  for (size_t i = 0; i < b.n; i++) {
    int type = choose_type(s, ftype, s->tied, &b.t[i], err);
    if (type < 0) {
      free(b.t);
      return -1;
    }
    b.t[i].type = (uint32_t)type;
  }
  plan->shape = *s;
  plan->ftype = ftype;
  plan->n_tensors = b.n;
  plan->tensors = b.t;
  return 0;
}

void model_plan_free(struct model_plan *plan) {
  if (!plan) return;
  free(plan->tensors);
  plan->tensors = NULL;
  plan->n_tensors = 0;
}

uint64_t model_plan_data_bytes(const struct model_plan *plan) {
  uint64_t total = 0;
  for (size_t i = 0; i < plan->n_tensors; i++) {
    const struct plan_tensor *t = &plan->tensors[i];
    uint64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    total += n / type_block(t->type) * type_block_bytes(t->type);
  }
  return total;
}

int model_cost_from_preset(const char *preset, const char *type, uint32_t kv_type,
                           struct model_cost *cost, char *type_name, size_t tn,
                           struct tm_err *err) {
  const struct model_preset *p = model_preset_find(preset);
  if (!p) {
    size_t np;
    const struct model_preset *all = model_presets(&np);
    char list[1024] = "";
    for (size_t i = 0; i < np; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
               all[i].name);
    return tm_errf(err, "unknown preset '%s'; accepted: %s", preset, list);
  }
  const char *t = type ? type : "Q4_K_M";
  const int ftype = model_ftype_from_name(t);
  if (ftype < 0) return tm_errf(err, "unknown type '%s'; accepted: %s", t, model_ftype_names());
  if (type_name) snprintf(type_name, tn, "%s", model_ftype_name(ftype));
  struct model_plan plan;
  if (model_plan_make(&p->shape, ftype, &plan, err) != 0)
    return tm_err_prefix(err, "preset %s at %s", preset, t);
  struct model_desc d;
  int rc = model_desc_from_plan(&plan, &d, err);
  model_plan_free(&plan);
  if (rc != 0) return -2;
  struct model_analyze_options ao = {.kv_type = kv_type};
  rc = model_analyze(&d, &ao, cost, err);
  model_desc_free(&d);
  return rc != 0 ? -1 : 0;
}
