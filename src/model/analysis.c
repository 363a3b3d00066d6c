/* analysis: model_desc construction (hand-made, plan) and model_analyze; the
 * GGUF reading is from_gguf.c. See analysis.h for the contracts and
 * docs/ceiling.md for the formulas. */
#include "model/analysis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gguf/ggml_types.h"
#include "model/plan.h"

/* ------------------------------------------------------------ description -- */

int model_desc_init(struct model_desc *d, uint32_t n_layer, struct tm_err *err) {
  memset(d, 0, sizeof *d);
  if (n_layer > 65536) return tm_errf(err, "block_count %u is implausibly large", n_layer);
  d->n_layer = n_layer;
  size_t n = n_layer ? n_layer : 1;
  d->n_head = calloc(n, sizeof *d->n_head);
  d->n_head_kv = calloc(n, sizeof *d->n_head_kv);
  d->layer_kind = calloc(n, sizeof *d->layer_kind);
  if (!d->n_head || !d->n_head_kv || !d->layer_kind) {
    model_desc_free(d);
    return tm_errf(err, "out of memory for %u layers", n_layer);
  }
  return 0;
}

int model_desc_add_tensor(struct model_desc *d, const char *name, uint32_t n_dims,
                          const uint64_t ne[4], uint32_t type, struct tm_err *err) {
  if (d->n_tensors == d->cap_tensors) {
    size_t cap = d->cap_tensors ? d->cap_tensors * 2 : 64;
    struct model_desc_tensor *t = realloc(d->tensors, cap * sizeof *t);
    if (!t) return tm_errf(err, "out of memory for %zu tensors", cap);
    d->tensors = t;
    d->cap_tensors = cap;
  }
  struct model_desc_tensor *t = &d->tensors[d->n_tensors++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->n_dims = n_dims > 4 ? 4 : n_dims;
  for (int i = 0; i < 4; i++) t->ne[i] = (i < (int)t->n_dims) ? ne[i] : 1;
  t->type = type;
  return 0;
}

void model_desc_assume(struct model_desc *d, const char *fmt, ...) {
  if (d->n_assumptions >= MODEL_MAX_ASSUMPTIONS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->assumptions[d->n_assumptions++], MODEL_ASSUMPTION_LEN, fmt, ap);
  va_end(ap);
}

void model_desc_free(struct model_desc *d) {
  if (!d) return;
  free(d->n_head);
  free(d->n_head_kv);
  free(d->layer_kind);
  free(d->tensors);
  memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------ from a plan -- */

int model_desc_from_plan(const struct model_plan *p, struct model_desc *d, struct tm_err *err) {
  const struct model_shape *s = &p->shape;
  if (model_desc_init(d, s->n_layer, err) != 0) return -1;
  snprintf(d->arch, sizeof d->arch, "%s", s->arch);
  d->n_embd = s->n_embd;
  d->n_vocab = s->n_vocab;
  d->n_expert = s->n_expert;
  d->n_expert_used = s->n_expert_used;
  d->key_length = s->head_dim;
  d->value_length = s->head_dim;
  d->context_length = s->n_ctx_train;
  for (uint32_t il = 0; il < s->n_layer; il++) {
    d->n_head[il] = s->n_head;
    d->n_head_kv[il] = s->n_head_kv;
    d->layer_kind[il] = MODEL_LAYER_ATTN;
  }
  for (size_t i = 0; i < p->n_tensors; i++) {
    const struct plan_tensor *t = &p->tensors[i];
    if (model_desc_add_tensor(d, t->name, t->n_dims, t->ne, t->type, err) != 0) {
      model_desc_free(d);
      return -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- analyze -- */

/* Tensors read one row per token (embedding lookups). */
static bool is_lookup(const char *name) {
  return strcmp(name, "token_embd.weight") == 0 ||
         strcmp(name, "per_layer_token_embd.weight") == 0 ||
         strcmp(name, "position_embd.weight") == 0 || strcmp(name, "token_types.weight") == 0;
}

static int cmp_types(const void *a, const void *b) {
  const struct model_type_count *x = a, *y = b;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  return x->type < y->type ? -1 : x->type > y->type;
}

int model_analyze(const struct model_desc *d, const struct model_analyze_options *opt,
                  struct model_cost *c, struct tm_err *err) {
  memset(c, 0, sizeof *c);
  snprintf(c->arch, sizeof c->arch, "%s", d->arch);
  c->n_assumptions = d->n_assumptions;
  memcpy(c->assumptions, d->assumptions, sizeof c->assumptions);
  c->kv_type = opt ? opt->kv_type : GGML_TYPE_F16;
  const struct ggml_type_info *kvt = ggml_type_get(c->kv_type);
  if (!kvt || kvt->block_size == 0)
    return tm_errf(err, "unknown KV cache type id %u", c->kv_type);
  c->kv_elem_bytes = (double)kvt->type_size / kvt->block_size;
  c->context_length = d->context_length;
  c->sliding_window = d->sliding_window;
  c->moe = d->n_expert > 0;
  c->n_expert = d->n_expert;
  c->n_expert_used = d->n_expert_used;
  c->kv_unknown = d->heads_unknown;

  bool has_output = false;
  for (size_t i = 0; i < d->n_tensors; i++)
    if (strcmp(d->tensors[i].name, "output.weight") == 0) has_output = true;
  c->tied = !has_output;
  double expert_frac = d->n_expert ? (double)d->n_expert_used / d->n_expert : 1.0;
  uint64_t quant_bytes = 0;

  for (size_t i = 0; i < d->n_tensors; i++) {
    const struct model_desc_tensor *t = &d->tensors[i];
    const struct ggml_type_info *ti = ggml_type_get(t->type);
    if (!ti) return tm_errf(err, "tensor '%s': unknown type id %u", t->name, t->type);
    uint64_t n = 1;
    for (int k = 0; k < 4; k++) {
      if (t->ne[k] && n > UINT64_MAX / t->ne[k])
        return tm_errf(err, "tensor '%s': element count overflows", t->name);
      n *= t->ne[k];
    }
    uint64_t bytes = 0, row_bytes = 0;
    if (ggml_row_bytes(t->type, n, &bytes) != 0 || ggml_row_bytes(t->type, t->ne[0], &row_bytes) != 0)
      return tm_errf(err, "tensor '%s': %llu elements of type %s do not make whole blocks",
                     t->name, (unsigned long long)n, ti->name);
    if (UINT64_MAX - c->bytes_total < bytes || UINT64_MAX - c->params_total < n)
      return tm_errf(err, "tensor '%s': model size overflows", t->name);
    c->params_total += n;
    c->bytes_total += bytes;
    if (ti->quantized) quant_bytes += bytes;

    size_t k = 0;
    while (k < c->n_types && c->types[k].type != t->type) k++;
    if (k == c->n_types && k < sizeof c->types / sizeof c->types[0]) {
      c->types[k].type = t->type;
      c->n_types++;
    }
    if (k < c->n_types) {
      c->types[k].count++;
      c->types[k].bytes += bytes;
    }

    int64_t layer = model_block_index(t->name);
    if (layer >= 0 && (uint64_t)layer < d->n_layer && d->layer_kind[layer] == MODEL_LAYER_MTP)
      continue; /* multi-token prediction: not run in plain decode */

    if (strcmp(t->name, "token_embd.weight") == 0 && c->tied) {
      /* The head: read in full, which includes the input row. */
      c->weight_bytes_per_token += (double)bytes;
      c->params_output += n;
      c->params_active += (double)n;
    } else if (is_lookup(t->name)) {
      c->weight_bytes_per_token += (double)row_bytes;
      c->params_active += (double)n;
    } else if (strcmp(t->name, "output.weight") == 0) {
      c->weight_bytes_per_token += (double)bytes;
      c->params_output += n;
      c->params_active += (double)n;
    } else if (d->n_expert && strstr(t->name, "_exps") && t->n_dims >= 2 &&
               t->ne[t->n_dims - 1] == d->n_expert) {
      /* Routed experts: only expert_used_count of expert_count are read. */
      c->weight_bytes_per_token += (double)bytes * expert_frac;
      c->routed_expert_bytes += (double)bytes;
      c->params_active += (double)n * expert_frac;
      c->params_layers_active += (double)n * expert_frac;
    } else {
      c->weight_bytes_per_token += (double)bytes;
      c->params_active += (double)n;
      c->params_layers_active += (double)n;
    }
  }
  c->quantized_bytes_fraction = c->bytes_total ? (double)quant_bytes / c->bytes_total : 0;
  qsort(c->types, c->n_types, sizeof c->types[0], cmp_types);

  /* Sequence mixing, layer by layer. */
  /* In double: the sum of two 32-bit lengths wraps in 32 bits. */
  double kv_per_head = (double)d->key_length + (double)d->value_length;
  for (uint32_t il = 0; il < d->n_layer; il++) {
    double per_tok = d->n_head_kv[il] * kv_per_head * c->kv_elem_bytes;
    double flops = 2.0 * d->n_head[il] * kv_per_head;
    switch (d->layer_kind[il]) {
      case MODEL_LAYER_ATTN:
        if (d->n_head_kv[il] == 0 && d->heads_unknown) { c->n_attn_layers++; break; }
        if (d->n_head_kv[il] == 0) { c->n_none_layers++; break; }
        c->n_attn_layers++;
        c->kv_bytes_per_token_full += per_tok;
        c->attn_flops_per_depth_full += flops;
        break;
      case MODEL_LAYER_ATTN_SWA:
        if (d->n_head_kv[il] == 0 && d->heads_unknown) {
          c->n_attn_layers++;
          c->n_swa_layers++;
          break;
        }
        if (d->n_head_kv[il] == 0) { c->n_none_layers++; break; }
        c->n_attn_layers++;
        c->n_swa_layers++;
        c->kv_bytes_per_token_swa += per_tok;
        c->attn_flops_per_depth_swa += flops;
        break;
      case MODEL_LAYER_RECURRENT:
        c->n_recurrent_layers++;
        c->state_bytes += (double)d->recurrent_state_bytes;
        break;
      case MODEL_LAYER_MTP: c->n_mtp_layers++; break;
      default: c->n_none_layers++; break;
    }
  }
  c->state_bytes += (double)d->n_state_layers_extra * d->recurrent_state_bytes;
  if (c->n_swa_layers && !c->sliding_window) {
    /* Marked SWA without a window: treat as full attention. */
    c->kv_bytes_per_token_full += c->kv_bytes_per_token_swa;
    c->attn_flops_per_depth_full += c->attn_flops_per_depth_swa;
    c->kv_bytes_per_token_swa = c->attn_flops_per_depth_swa = 0;
    c->n_swa_layers = 0;
  }
  c->kv_bytes_per_token = c->kv_bytes_per_token_full + c->kv_bytes_per_token_swa;
  return 0;
}

/* ------------------------------------------------------ depth and memory -- */

static double swa_depth(const struct model_cost *c, double depth) {
  return depth < c->sliding_window ? depth : (double)c->sliding_window;
}

double model_kv_bytes_at_depth(const struct model_cost *c, uint64_t depth) {
  return c->kv_bytes_per_token_full * (double)depth +
         c->kv_bytes_per_token_swa * swa_depth(c, (double)depth);
}

double model_decode_bytes_at_depth(const struct model_cost *c, uint64_t depth) {
  return c->weight_bytes_per_token + c->state_bytes + model_kv_bytes_at_depth(c, depth);
}

double model_decode_flops_at_depth(const struct model_cost *c, uint64_t depth) {
  return 2.0 * c->params_layers_active + 2.0 * (double)c->params_output +
         c->attn_flops_per_depth_full * (double)depth +
         c->attn_flops_per_depth_swa * swa_depth(c, (double)depth);
}

double model_decode_bytes_mean(const struct model_cost *c, uint64_t depth, uint64_t n) {
  if (n == 0) n = 1;
  double sum = 0;
  for (uint64_t i = 0; i < n; i++) sum += model_decode_bytes_at_depth(c, depth + i);
  return sum / (double)n;
}

/* Mean of min(d + t, W) over t in [0, L): d + L/2 while the prompt stays
 * below the window, W once the context before it already fills the window,
 * and between the two the part below the window (from d up to W, over
 * t0 = W - d tokens) plus W for the rest. */
static double mean_windowed_depth(double d, double L, double W) {
  if (d >= W) return W;
  if (d + L <= W) return d + L / 2.0;
  double t0 = W - d;
  return (t0 * (d + t0 / 2.0) + (L - t0) * W) / L;
}

double model_prefill_flops_at_depth(const struct model_cost *c, uint64_t prompt_len,
                                    uint64_t depth) {
  double L = prompt_len ? (double)prompt_len : 1.0;
  double d = (double)depth;
  double avg_full = d + L / 2.0;
  double avg_swa = mean_windowed_depth(d, L, (double)c->sliding_window);
  return 2.0 * c->params_layers_active + 2.0 * (double)c->params_output / L +
         c->attn_flops_per_depth_full * avg_full + c->attn_flops_per_depth_swa * avg_swa;
}

double model_prefill_flops_per_token(const struct model_cost *c, uint64_t prompt_len) {
  return model_prefill_flops_at_depth(c, prompt_len, 0);
}

uint64_t model_context_fits(const struct model_cost *c, double memory_bytes,
                            double overhead_bytes, bool *capped) {
  if (capped) *capped = false;
  double avail = memory_bytes - (double)c->bytes_total - c->state_bytes - overhead_bytes;
  if (avail <= 0) return 0;
  double F = c->kv_bytes_per_token_full, S = c->kv_bytes_per_token_swa;
  double W = (double)c->sliding_window;
  double tokens;
  if (F + S <= 0) {
    tokens = -1; /* nothing grows */
  } else if (S > 0 && avail < (F + S) * W) {
    tokens = avail / (F + S);
  } else if (F <= 0) {
    tokens = -1; /* only windowed layers, and the whole window fits */
  } else {
    tokens = (avail - S * W) / F;
  }
  if (tokens < 0) {
    if (c->context_length) {
      if (capped) *capped = true;
      return c->context_length;
    }
    return UINT64_MAX;
  }
  uint64_t t = tokens >= 1.8e19 ? UINT64_MAX : (uint64_t)tokens;
  if (c->context_length && t > c->context_length) {
    if (capped) *capped = true;
    return c->context_length;
  }
  return t;
}

const char *model_most_bytes_type(const struct model_cost *c) {
  size_t best = 0;
  for (size_t i = 1; i < c->n_types; i++)
    if (c->types[i].bytes > c->types[best].bytes) best = i;
  const struct ggml_type_info *ti = c->n_types ? ggml_type_get(c->types[best].type) : NULL;
  return ti ? ti->name : "?";
}

int model_kv_type_from_name(const char *name, uint32_t *type) {
  static const char *const kv_types[] = {"F32",  "F16",  "BF16", "Q8_0",  "Q4_0",
                                         "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"};
  for (size_t i = 0; name && i < sizeof kv_types / sizeof kv_types[0]; i++)
    if (strcasecmp(name, kv_types[i]) == 0) {
      *type = (uint32_t)ggml_type_from_name(kv_types[i]);
      return 0;
    }
  return -1;
}
