/* analysis: model_desc construction (hand-made, GGUF, plan) and model_analyze.
 * See analysis.h for the contracts and docs/ceiling.md for the formulas. */
#include "model/analysis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
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

/* ------------------------------------------------------------ from a GGUF -- */

/* "{arch}.suffix" as an unsigned value; 0 and found=false when absent. */
static bool key_u64(const struct gguf_file *f, const char *arch, const char *suffix,
                    uint64_t *out) {
  char key[192];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv) return false;
  if (kv->type == GGUF_VT_ARRAY) {
    /* A per-layer array where a scalar is expected: take the first element. */
    return kv->v.arr.count > 0 && gguf_arr_get_u64(kv, 0, out) == 0;
  }
  return gguf_get_u64(f, key, out, NULL) == 0;
}

/* Fills per[n] from "{arch}.suffix", which may be a scalar or a per-layer
 * array. Returns 1 when found, 0 when absent. An array of another length fills
 * the missing layers with its last element (noted by the caller). */
static int key_per_layer(const struct gguf_file *f, const char *arch, const char *suffix,
                         uint32_t *per, uint32_t n, bool *short_array) {
  char key[192];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  *short_array = false;
  if (!kv) return 0;
  if (kv->type == GGUF_VT_ARRAY) {
    uint64_t count = kv->v.arr.count, v = 0;
    if (count == 0) return 0;
    if (count != n) *short_array = true;
    for (uint32_t i = 0; i < n; i++) {
      if (gguf_arr_get_u64(kv, i < count ? i : count - 1, &v) != 0) return 0;
      per[i] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    return 1;
  }
  uint64_t v;
  if (gguf_get_u64(f, key, &v, NULL) != 0) return 0;
  for (uint32_t i = 0; i < n; i++) per[i] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  return 1;
}

/* Sliding-window layer pattern of architectures whose loader in llama.cpp
 * hard-codes it (set_swa_pattern(period): layer il uses the window when
 * il % period < period - 1). 0 = not known here. */
static uint32_t known_swa_period(const char *arch) {
  static const struct { const char *arch; uint32_t period; } t[] = {
      {"gemma2", 2}, {"gemma3", 6}, {"gemma3n", 5}, {"gemma-embedding", 6},
      {"cohere2", 4}, {"gpt-oss", 2}, {"exaone4", 4}, {"llama4", 4},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(arch, t[i].arch) == 0) return t[i].period;
  return 0;
}

static void mark_swa_layers(const struct gguf_file *f, struct model_desc *d) {
  char key[192];
  snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", d->arch);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  uint32_t period = 0;
  if (kv && kv->type == GGUF_VT_ARRAY && kv->v.arr.count > 0) {
    /* Per-layer flags: true (non-zero) = sliding window. */
    for (uint32_t il = 0; il < d->n_layer; il++) {
      uint64_t v = 0;
      uint64_t i = il < kv->v.arr.count ? il : kv->v.arr.count - 1;
      if (kv->v.arr.elem_type == GGUF_VT_BOOL) v = kv->v.arr.data[i] != 0;
      else if (gguf_arr_get_u64(kv, i, &v) != 0) v = 0;
      if (v && d->layer_kind[il] == MODEL_LAYER_ATTN)
        d->layer_kind[il] = MODEL_LAYER_ATTN_SWA;
    }
    return;
  }
  uint64_t v;
  if (kv && gguf_get_u64(f, key, &v, NULL) == 0) {
    period = (uint32_t)v;
  } else {
    period = known_swa_period(d->arch);
    if (period == 0) {
      model_desc_assume(d, "sliding window of %u tokens assumed on every attention layer "
                           "(no sliding_window_pattern key, pattern of '%s' not known)",
                        d->sliding_window, d->arch);
    } else if (strcmp(d->arch, "llama4") == 0) {
      model_desc_assume(d, "llama4 chunked attention (3 of 4 layers) counted as a window "
                           "of %u tokens", d->sliding_window);
    }
  }
  for (uint32_t il = 0; il < d->n_layer; il++) {
    bool swa = period == 0 || period == 1 ? period == 0 : (il % period) < period - 1;
    if (swa && d->layer_kind[il] == MODEL_LAYER_ATTN) d->layer_kind[il] = MODEL_LAYER_ATTN_SWA;
  }
}

/* The state a recurrent layer keeps, from whatever keys the file has. Returns
 * true when the file has any state keys (ssm.*, wkv.*, shortconv.*). */
/* Whether block il has a K projection (separate or fused). */
static bool layer_has_attention_tensors(const struct model_desc *d, uint32_t il) {
  char k[48], qkv[48];
  snprintf(k, sizeof k, "blk.%u.attn_k.", il);
  snprintf(qkv, sizeof qkv, "blk.%u.attn_qkv.", il);
  for (size_t i = 0; i < d->n_tensors; i++)
    if (strncmp(d->tensors[i].name, k, strlen(k)) == 0 ||
        strncmp(d->tensors[i].name, qkv, strlen(qkv)) == 0)
      return true;
  return false;
}

static bool recurrent_state(const struct gguf_file *f, struct model_desc *d) {
  uint64_t d_conv = 0, d_inner = 0, d_state = 0, n_group = 0, head_size = 0, l_cache = 0;
  bool has_ssm = key_u64(f, d->arch, "ssm.conv_kernel", &d_conv) |
                 key_u64(f, d->arch, "ssm.state_size", &d_state) |
                 key_u64(f, d->arch, "ssm.inner_size", &d_inner);
  key_u64(f, d->arch, "ssm.group_count", &n_group);
  if (has_ssm) {
    if (!d_inner) {
      d_inner = 2ull * d->n_embd;
      model_desc_assume(d, "ssm.inner_size absent: assumed 2 x n_embd = %llu",
                        (unsigned long long)d_inner);
    }
    uint64_t conv = d_conv > 0 ? (d_conv - 1) * (d_inner + 2 * n_group * d_state) : 0;
    d->recurrent_state_bytes = 4 * (conv + d_state * d_inner);
    model_desc_assume(d, "recurrent state per layer = F32 x ((conv_kernel-1) x (inner + 2 x "
                         "groups x state) + state x inner) = %llu bytes, read once per token",
                      (unsigned long long)d->recurrent_state_bytes);
    return true;
  }
  if (key_u64(f, d->arch, "wkv.head_size", &head_size)) {
    uint64_t shift = 2;
    key_u64(f, d->arch, "token_shift_count", &shift);
    d->recurrent_state_bytes = 4 * ((uint64_t)d->n_embd * head_size + shift * d->n_embd);
    model_desc_assume(d, "RWKV state per layer = F32 x n_embd x (wkv.head_size + %llu token "
                         "shifts) = %llu bytes", (unsigned long long)shift,
                      (unsigned long long)d->recurrent_state_bytes);
    return true;
  }
  if (key_u64(f, d->arch, "shortconv.l_cache", &l_cache)) {
    d->recurrent_state_bytes = l_cache > 0 ? 4 * (uint64_t)d->n_embd * (l_cache - 1) : 0;
    model_desc_assume(d, "short-conv state per layer = F32 x n_embd x (l_cache - 1) = %llu "
                         "bytes", (unsigned long long)d->recurrent_state_bytes);
    return true;
  }
  return false;
}

int model_desc_from_gguf(const struct gguf_file *f, struct model_desc *d, struct tm_err *err) {
  memset(d, 0, sizeof *d);
  char arch[64] = "";
  if (gguf_get_str(f, "general.architecture", arch, sizeof arch, NULL) != 0 || !arch[0])
    return tm_errf(err, "%s: no general.architecture key: not a model file", f->path);
  if (f->n_tensors == 0)
    return tm_errf(err, "%s: no tensors (a vocabulary-only file?): nothing to analyse",
                   f->path);

  /* Layer count: the key, else the highest blk.N in the tensor table. */
  uint64_t n_layer = 0;
  bool layer_guess = false;
  if (!key_u64(f, arch, "block_count", &n_layer)) {
    for (uint64_t i = 0; i < f->n_tensors; i++) {
      const char *name = f->tensors[i].name;
      if (strncmp(name, "blk.", 4) == 0) {
        unsigned long l = strtoul(name + 4, NULL, 10);
        if (l + 1 > n_layer) n_layer = l + 1;
      }
    }
    layer_guess = true;
  }
  if (n_layer > 65536) return tm_errf(err, "%s: %s.block_count %llu is implausible", f->path,
                                      arch, (unsigned long long)n_layer);
  /* A tensor of a block past block_count: the key is wrong (every count
   * derived from it would be). */
  for (uint64_t i = 0; !layer_guess && i < f->n_tensors; i++) {
    const char *name = f->tensors[i].name;
    if (strncmp(name, "blk.", 4) != 0) continue;
    char *end;
    unsigned long l = strtoul(name + 4, &end, 10);
    if (end != name + 4 && *end == '.' && l >= n_layer)
      return tm_errf(err, "%s: tensor '%s' is past %s.block_count %llu", f->path, name, arch,
                     (unsigned long long)n_layer);
  }
  if (model_desc_init(d, (uint32_t)n_layer, err) != 0) return -1;
  snprintf(d->arch, sizeof d->arch, "%s", arch);
  if (layer_guess)
    model_desc_assume(d, "%s.block_count absent: %u layers counted from the tensor names", arch,
                      d->n_layer);

  for (uint64_t i = 0; i < f->n_tensors; i++) {
    const struct gguf_tensor *t = &f->tensors[i];
    if (model_desc_add_tensor(d, t->name, t->n_dims, t->ne, t->type, err) != 0) goto fail;
  }
  const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");

  uint64_t v;
  if (key_u64(f, arch, "embedding_length", &v)) {
    d->n_embd = (uint32_t)v;
  } else if (emb) {
    d->n_embd = (uint32_t)emb->ne[0];
    model_desc_assume(d, "%s.embedding_length absent: n_embd %u from token_embd", arch,
                      d->n_embd);
  }
  if (key_u64(f, arch, "vocab_size", &v)) {
    d->n_vocab = (uint32_t)v;
  } else {
    const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (tok && tok->type == GGUF_VT_ARRAY) d->n_vocab = (uint32_t)tok->v.arr.count;
    else if (emb && emb->n_dims >= 2) d->n_vocab = (uint32_t)emb->ne[1];
  }
  if (key_u64(f, arch, "context_length", &v)) {
    if (v == 0) {
      tm_errf(err, "%s: %s.context_length is 0", f->path, arch);
      goto fail;
    }
    d->context_length = v;
  }
  if (key_u64(f, arch, "expert_count", &v)) d->n_expert = (uint32_t)v;
  if (key_u64(f, arch, "expert_used_count", &v)) d->n_expert_used = (uint32_t)v;
  if (d->n_expert && (!d->n_expert_used || d->n_expert_used > d->n_expert)) {
    model_desc_assume(d, "%s.expert_used_count missing or invalid: every expert counted as "
                         "used", arch);
    d->n_expert_used = d->n_expert;
  }

  /* Heads: scalar or per-layer arrays. head_count_kv defaults to head_count. */
  bool short_arr = false;
  int have_heads = key_per_layer(f, arch, "attention.head_count", d->n_head, d->n_layer,
                                 &short_arr);
  if (short_arr)
    model_desc_assume(d, "attention.head_count array shorter than block_count: last value "
                         "repeated");
  if (!key_per_layer(f, arch, "attention.head_count_kv", d->n_head_kv, d->n_layer, &short_arr)) {
    memcpy(d->n_head_kv, d->n_head, d->n_layer * sizeof *d->n_head);
    if (have_heads)
      model_desc_assume(d, "attention.head_count_kv absent: = head_count (no grouped-query "
                           "attention)");
  } else if (short_arr) {
    model_desc_assume(d, "attention.head_count_kv array shorter than block_count: last value "
                         "repeated");
  }
  uint32_t n_head0 = 0;
  for (uint32_t il = 0; il < d->n_layer; il++)
    if (d->n_head[il] > n_head0) n_head0 = d->n_head[il];
  uint64_t kl = 0, vl = 0;
  bool has_kl = key_u64(f, arch, "attention.key_length", &kl);
  bool has_vl = key_u64(f, arch, "attention.value_length", &vl);
  if (!has_kl && n_head0) {
    kl = d->n_embd / n_head0;
    model_desc_assume(d, "attention.key_length absent: n_embd / head_count = %llu",
                      (unsigned long long)kl);
  }
  if (!has_vl && n_head0) {
    vl = has_kl ? kl : d->n_embd / n_head0;
    if (has_kl) model_desc_assume(d, "attention.value_length absent: = key_length (%llu)",
                                  (unsigned long long)vl);
  }
  d->key_length = (uint32_t)kl;
  d->value_length = (uint32_t)vl;
  if (key_u64(f, arch, "attention.kv_lora_rank", &v))
    model_desc_assume(d, "multi-head latent attention (kv_lora_rank %llu): KV per layer "
                      "counted as head_count_kv x (key_length + value_length) as the file "
                      "states them", (unsigned long long)v);

  /* Multi-token-prediction blocks: the last nextn_predict_layers. */
  if (key_u64(f, arch, "nextn_predict_layers", &v) && v > 0) {
    d->n_layer_nextn = v > d->n_layer ? d->n_layer : (uint32_t)v;
    for (uint32_t il = d->n_layer - d->n_layer_nextn; il < d->n_layer; il++)
      d->layer_kind[il] = MODEL_LAYER_MTP;
  }

  /* Recurrent layers: full_attention_interval, or 0 KV heads with state keys,
   * or an RWKV file (wkv.*: every layer). */
  bool has_state = recurrent_state(f, d);
  uint64_t interval = 0;
  uint64_t wkv = 0;
  bool is_rwkv = key_u64(f, arch, "wkv.head_size", &wkv);
  bool any_recurrent = false;
  if (key_u64(f, arch, "full_attention_interval", &interval) && interval > 0) {
    for (uint32_t il = 0; il < d->n_layer; il++)
      if (d->layer_kind[il] != MODEL_LAYER_MTP && (il + 1) % interval != 0) {
        d->layer_kind[il] = MODEL_LAYER_RECURRENT;
        any_recurrent = true;
      }
  }
  for (uint32_t il = 0; il < d->n_layer; il++) {
    if (d->layer_kind[il] != MODEL_LAYER_ATTN) continue;
    if (is_rwkv || d->n_head_kv[il] == 0) {
      d->layer_kind[il] = has_state ? MODEL_LAYER_RECURRENT : MODEL_LAYER_NONE;
      any_recurrent |= has_state;
    }
  }
  if (has_state && !any_recurrent) {
    /* State keys but every layer attends (Falcon-H1 runs attention and an SSM
     * side by side in each layer): every layer keeps both. */
    for (uint32_t il = 0; il < d->n_layer; il++)
      if (d->layer_kind[il] == MODEL_LAYER_ATTN) d->n_state_layers_extra++;
    model_desc_assume(d, "state keys on an all-attention model: each layer assumed to keep "
                         "an SSM state beside its KV cache (parallel hybrid)");
  }
  if (any_recurrent && !has_state)
    model_desc_assume(d, "recurrent layers without ssm.* keys: their state is not counted");

  /* Attention layers: the head counts and lengths every KV and FLOP figure
   * is made of. A layer with attention tensors but no KV heads, a query head
   * count that is not a multiple of the KV heads, or a zero key/value length
   * is a corrupt file, not a model to guess about. */
  for (uint32_t il = 0; il < d->n_layer; il++) {
    bool attn_tensors = layer_has_attention_tensors(d, il);
    if (d->layer_kind[il] == MODEL_LAYER_ATTN) {
      if (d->n_head[il] < d->n_head_kv[il] || d->n_head[il] % d->n_head_kv[il] != 0) {
        tm_errf(err, "%s: layer %u: attention.head_count %u, head_count_kv %u: the query heads "
                "must be a positive multiple of the KV heads", f->path, il, d->n_head[il],
                d->n_head_kv[il]);
        goto fail;
      }
      if (attn_tensors && (d->key_length == 0 || d->value_length == 0)) {
        tm_errf(err, "%s: attention.key_length %u / value_length %u: an attention layer needs "
                "both", f->path, d->key_length, d->value_length);
        goto fail;
      }
    } else if (d->layer_kind[il] == MODEL_LAYER_NONE && attn_tensors && !is_rwkv && have_heads) {
      tm_errf(err, "%s: layer %u has attention tensors but attention.head_count_kv is 0",
              f->path, il);
      goto fail;
    }
  }

  if (key_u64(f, arch, "attention.sliding_window", &v) && v > 0) {
    d->sliding_window = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    mark_swa_layers(f, d);
  } else if (strcmp(arch, "llama4") == 0) {
    d->sliding_window = 8192; /* hard-coded by llama.cpp for llama4's chunked layers */
    mark_swa_layers(f, d);
  }
  return 0;
fail:
  model_desc_free(d);
  return -1;
}

/* ---------------------------------------------------------------- analyze -- */

/* Block index of "blk.N.*", or -1 for a global tensor. */
static long tensor_layer(const char *name) {
  if (strncmp(name, "blk.", 4) != 0) return -1;
  char *end;
  unsigned long l = strtoul(name + 4, &end, 10);
  if (end == name + 4 || *end != '.') return -1;
  return (long)l;
}

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

    long layer = tensor_layer(t->name);
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
  double kv_per_head = (double)(d->key_length + d->value_length);
  for (uint32_t il = 0; il < d->n_layer; il++) {
    double per_tok = d->n_head_kv[il] * kv_per_head * c->kv_elem_bytes;
    double flops = 2.0 * d->n_head[il] * kv_per_head;
    switch (d->layer_kind[il]) {
      case MODEL_LAYER_ATTN:
        if (d->n_head_kv[il] == 0) { c->n_none_layers++; break; }
        c->n_attn_layers++;
        c->kv_bytes_per_token_full += per_tok;
        c->attn_flops_per_depth_full += flops;
        break;
      case MODEL_LAYER_ATTN_SWA:
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

double model_prefill_flops_per_token(const struct model_cost *c, uint64_t prompt_len) {
  double L = prompt_len ? (double)prompt_len : 1.0;
  double avg_full = L / 2.0;
  /* Mean of min(t, W) over t in [0, L): L/2 below the window, W - W^2/(2L) past it. */
  double W = (double)c->sliding_window;
  double avg_swa = L <= W ? L / 2.0 : W - W * W / (2.0 * L);
  return 2.0 * c->params_layers_active + 2.0 * (double)c->params_output / L +
         c->attn_flops_per_depth_full * avg_full + c->attn_flops_per_depth_swa * avg_swa;
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
