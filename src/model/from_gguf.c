/* from_gguf: model_desc_from_gguf, a GGUF file's metadata and tensors as a
 * model_desc (analysis.h has the contract; model_analyze, in analysis.c, turns
 * it into costs). */
#include "model/analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "model/plan.h"

/* ------------------------------------------------------------ from a GGUF -- */

/* Metadata is read strictly. An absent key takes the documented default (and
 * an assumption line says so); a key that is present must be usable: the
 * right type, sign and range, or the file is refused with an error naming the
 * key. Read as absent, truncated to 32 bits or clamped, it would make every
 * figure built on it silently wrong. */

/* Per-head key/value length: real models use at most 1024; the bound keeps
 * head counts x lengths far from any overflow. */
#define MAX_HEAD_LENGTH 65536u
/* Recurrent-state dimensions (ssm.*, wkv.*, shortconv.*): real ones are below
 * 2^15; the bound keeps the state size inside 64 bits. */
#define MAX_STATE_DIM (1u << 20)
/* block_count: model_desc_init's limit (llama.cpp's is 512). */
#define MAX_LAYERS 65536u

/* Element i of an integer array as an unsigned value; -1 with err naming the
 * key when it is not one (floats, strings, bools, a negative value). */
static int arr_uint(const struct gguf_file *f, const struct gguf_kv *kv, uint64_t i,
                    uint64_t *out, struct tm_err *err) {
  if (gguf_arr_get_u64(kv, i, out) == 0) return 0;
  return tm_errf(err, "%s: key '%s': element %llu of the %s array is not an unsigned integer",
                 f->path, kv->key, (unsigned long long)i,
                 gguf_value_type_name(kv->v.arr.elem_type));
}

/* "{arch}.suffix" as an unsigned integer in [min, max]: 1 and *out set when
 * present; 0 when absent (*out untouched); -1 with err naming the key when
 * present but not usable (not an integer, negative, out of range). An array
 * where a scalar is expected gives its first element, checked alike. */
static int key_uint(const struct gguf_file *f, const char *arch, const char *suffix,
                    uint64_t min, uint64_t max, uint64_t *out, struct tm_err *err) {
  char key[192];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv) return 0;
  uint64_t v;
  if (kv->type == GGUF_VT_ARRAY) {
    if (kv->v.arr.count == 0) return tm_errf(err, "%s: key '%s' is an empty array", f->path, key);
    if (arr_uint(f, kv, 0, &v, err) != 0) return -1;
  } else if (gguf_get_u64(f, key, &v, err) != 0) {
    return -1;
  }
  if (v < min || v > max)
    return tm_errf(err, "%s: key '%s' = %llu is out of range (%llu..%llu)", f->path, key,
                   (unsigned long long)v, (unsigned long long)min, (unsigned long long)max);
  *out = v;
  return 1;
}

/* Fills per[n] from "{arch}.suffix", a scalar or a per-layer array of values
 * <= UINT32_MAX. 1 when present, 0 when absent, -1 (err) when present but not
 * usable or an array of more than n entries (it does not describe these n
 * layers). A shorter array fills the missing layers with its last element
 * (*short_array set: the caller notes it). */
static int key_per_layer(const struct gguf_file *f, const char *arch, const char *suffix,
                         uint32_t *per, uint32_t n, bool *short_array, struct tm_err *err) {
  char key[192];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  *short_array = false;
  if (!kv) return 0;
  uint64_t v = 0;
  if (kv->type != GGUF_VT_ARRAY) {
    int r = key_uint(f, arch, suffix, 0, UINT32_MAX, &v, err);
    for (uint32_t i = 0; r == 1 && i < n; i++) per[i] = (uint32_t)v;
    return r;
  }
  uint64_t count = kv->v.arr.count;
  if (count == 0) return tm_errf(err, "%s: key '%s' is an empty array", f->path, key);
  if (count > n)
    return tm_errf(err, "%s: key '%s' has %llu entries, more than %s.block_count %u", f->path,
                   key, (unsigned long long)count, arch, n);
  *short_array = count < n;
  for (uint32_t i = 0; i < n; i++) {
    if (arr_uint(f, kv, i < count ? i : count - 1, &v, err) != 0) return -1;
    if (v > UINT32_MAX)
      return tm_errf(err, "%s: key '%s': element %u = %llu is out of range (0..%u)", f->path,
                     key, i, (unsigned long long)v, UINT32_MAX);
    per[i] = (uint32_t)v;
  }
  return 1;
}

/* general.architecture into arch[n]: 1..n-1 printable ASCII bytes, as every
 * architecture name is. Anything else is refused, not cut at a NUL or at n
 * (the {arch}.* keys would all read as absent) nor carried raw into the
 * printed and JSON output. */
static int read_arch(const struct gguf_file *f, char *arch, size_t n, struct tm_err *err) {
  const char *key = "general.architecture";
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv) return tm_errf(err, "%s: no %s key: not a model file", f->path, key);
  if (kv->type != GGUF_VT_STRING)
    return tm_errf(err, "%s: key '%s' has type %s, expected string (at byte %llu)", f->path, key,
                   gguf_value_type_name(kv->type), (unsigned long long)kv->file_offset);
  const struct gguf_str *s = &kv->v.str;
  if (s->len == 0) return tm_errf(err, "%s: key '%s' is empty", f->path, key);
  if (s->len >= n)
    return tm_errf(err, "%s: key '%s' is %llu bytes long (at most %zu)", f->path, key,
                   (unsigned long long)s->len, n - 1);
  for (uint64_t i = 0; i < s->len; i++) {
    unsigned char c = (unsigned char)s->ptr[i];
    if (c <= 0x20 || c >= 0x7f)
      return tm_errf(err, "%s: key '%s' has byte 0x%02x at position %llu: an architecture "
                     "name is printable ASCII", f->path, key, c, (unsigned long long)i);
  }
  memcpy(arch, s->ptr, s->len);
  arch[s->len] = 0;
  return 0;
}

/* Block index of a "blk.N.*" tensor, -1 for any other name. An index too large
 * to be real reads as UINT32_MAX, past any block_count. */
int64_t model_block_index(const char *name) {
  if (strncmp(name, "blk.", 4) != 0 || name[4] < '0' || name[4] > '9') return -1;
  uint64_t l = 0;
  const char *p = name + 4;
  for (; *p >= '0' && *p <= '9'; p++)
    if (l <= UINT32_MAX) l = l * 10 + (uint64_t)(*p - '0');
  if (*p != '.') return -1;
  return l > UINT32_MAX ? (int64_t)UINT32_MAX : (int64_t)l;
}

/* The layer count: block_count, or without it the blk.N tensors (highest N +
 * 1, *guessed set). Either way, when the file has blk.N tensors the count must
 * agree with them: every block 0..count-1 holds at least one and none is past
 * the count. A layer without tensors would add KV and FLOPs of a layer that
 * does not exist. (Files with no blk.N tensor at all, such as T5's enc./dec.
 * blocks, are not checked.) */
static int read_layer_count(const struct gguf_file *f, const char *arch, uint64_t *n_layer,
                            bool *guessed, struct tm_err *err) {
  uint64_t n_blk = 0;
  const char *top = NULL;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    int64_t b = model_block_index(f->tensors[i].name);
    if (b >= 0 && (uint64_t)b + 1 > n_blk) n_blk = (uint64_t)b + 1, top = f->tensors[i].name;
  }
  int r = key_uint(f, arch, "block_count", 0, MAX_LAYERS, n_layer, err);
  if (r < 0) return -1;
  *guessed = r == 0;
  if (*guessed) {
    if (n_blk > MAX_LAYERS)
      return tm_errf(err, "%s: tensor '%s' is past block %u, more layers than any model has",
                     f->path, top, MAX_LAYERS - 1);
    *n_layer = n_blk;
  }
  if (n_blk == 0) return 0;
  if (n_blk > *n_layer)
    return tm_errf(err, "%s: tensor '%s' is past %s.block_count %llu", f->path, top, arch,
                   (unsigned long long)*n_layer);
  uint8_t *seen = calloc((size_t)*n_layer, 1);
  if (!seen) return tm_errf(err, "out of memory for %llu layers", (unsigned long long)*n_layer);
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    int64_t b = model_block_index(f->tensors[i].name);
    if (b >= 0) seen[b] = 1;
  }
  uint64_t missing = 0;
  while (missing < *n_layer && seen[missing]) missing++;
  free(seen);
  if (missing == *n_layer) return 0;
  if (*guessed)
    return tm_errf(err, "%s: no tensor of block %llu (blk.%llu.*) though '%s' exists: the "
                   "tensor table has a gap", f->path, (unsigned long long)missing,
                   (unsigned long long)missing, top);
  return tm_errf(err, "%s: %s.block_count is %llu but no tensor belongs to block %llu "
                 "(blk.%llu.*): the count does not match the tensors", f->path, arch,
                 (unsigned long long)*n_layer, (unsigned long long)missing,
                 (unsigned long long)missing);
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

static int mark_swa_layers(const struct gguf_file *f, struct model_desc *d, struct tm_err *err) {
  char key[192];
  snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", d->arch);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (kv && kv->type == GGUF_VT_ARRAY) {
    /* Per-layer flags: true (non-zero) = sliding window. A shorter array
     * repeats its last flag. */
    uint64_t count = kv->v.arr.count;
    if (count == 0 || count > d->n_layer)
      return tm_errf(err, "%s: key '%s' has %llu entries for %s.block_count %u", f->path, key,
                     (unsigned long long)count, d->arch, d->n_layer);
    for (uint32_t il = 0; il < d->n_layer; il++) {
      uint64_t v = 0, i = il < count ? il : count - 1;
      if (kv->v.arr.elem_type == GGUF_VT_BOOL) v = kv->v.arr.data[i] != 0;
      else if (arr_uint(f, kv, i, &v, err) != 0) return -1;
      if (v && d->layer_kind[il] == MODEL_LAYER_ATTN)
        d->layer_kind[il] = MODEL_LAYER_ATTN_SWA;
    }
    return 0;
  }
  uint64_t v = 0;
  int r = key_uint(f, d->arch, "attention.sliding_window_pattern", 0, UINT32_MAX, &v, err);
  if (r < 0) return -1;
  uint32_t period = (uint32_t)v;
  if (r == 0) {
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
  return 0;
}

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

/* The state a recurrent layer keeps, from whatever keys the file has: 1 when
 * it has state keys (ssm.*, wkv.*, shortconv.*), 0 when not, -1 (err) when
 * one is present but not usable. Each dimension is at most MAX_STATE_DIM, so
 * the sizes below stay inside 64 bits. */
static int recurrent_state(const struct gguf_file *f, struct model_desc *d, struct tm_err *err) {
  uint64_t d_conv = 0, d_inner = 0, d_state = 0, n_group = 0, head_size = 0, l_cache = 0;
  const char *a = d->arch;
  const uint64_t M = MAX_STATE_DIM;
  int has_conv = 0, has_state = 0, has_inner = 0, has_wkv = 0, has_l = 0;
  if ((has_conv = key_uint(f, a, "ssm.conv_kernel", 0, M, &d_conv, err)) < 0 ||
      (has_state = key_uint(f, a, "ssm.state_size", 0, M, &d_state, err)) < 0 ||
      (has_inner = key_uint(f, a, "ssm.inner_size", 0, M, &d_inner, err)) < 0 ||
      key_uint(f, a, "ssm.group_count", 0, M, &n_group, err) < 0 ||
      (has_wkv = key_uint(f, a, "wkv.head_size", 0, M, &head_size, err)) < 0 ||
      (has_l = key_uint(f, a, "shortconv.l_cache", 0, M, &l_cache, err)) < 0)
    return -1;
  if (has_conv || has_state || has_inner) {
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
    return 1;
  }
  if (has_wkv) {
    uint64_t shift = 2;
    if (key_uint(f, a, "token_shift_count", 0, M, &shift, err) < 0) return -1;
    d->recurrent_state_bytes = 4 * ((uint64_t)d->n_embd * head_size + shift * d->n_embd);
    model_desc_assume(d, "RWKV state per layer = F32 x n_embd x (wkv.head_size + %llu token "
                         "shifts) = %llu bytes", (unsigned long long)shift,
                      (unsigned long long)d->recurrent_state_bytes);
    return 1;
  }
  if (has_l) {
    d->recurrent_state_bytes = l_cache > 0 ? 4 * (uint64_t)d->n_embd * (l_cache - 1) : 0;
    model_desc_assume(d, "short-conv state per layer = F32 x n_embd x (l_cache - 1) = %llu "
                         "bytes", (unsigned long long)d->recurrent_state_bytes);
    return 1;
  }
  return 0;
}

/* Routed-expert tensors ("*_exps.*" with 3+ dims) stack expert_count experts
 * in their last dimension. Any other count (or none) would read them as dense,
 * or at the wrong used/count fraction. */
static int check_expert_tensors(const struct gguf_file *f, const struct model_desc *d,
                                bool has_count, struct tm_err *err) {
  for (size_t i = 0; i < d->n_tensors; i++) {
    const struct model_desc_tensor *t = &d->tensors[i];
    if (t->n_dims < 3 || !strstr(t->name, "_exps.") || t->ne[t->n_dims - 1] == d->n_expert)
      continue;
    if (!has_count)
      return tm_errf(err, "%s: tensor '%s' holds %llu experts but %s.expert_count is absent",
                     f->path, t->name, (unsigned long long)t->ne[t->n_dims - 1], d->arch);
    return tm_errf(err, "%s: tensor '%s' holds %llu experts but %s.expert_count is %u", f->path,
                   t->name, (unsigned long long)t->ne[t->n_dims - 1], d->arch, d->n_expert);
  }
  return 0;
}

int model_desc_from_gguf(const struct gguf_file *f, struct model_desc *d, struct tm_err *err) {
  memset(d, 0, sizeof *d);
  char arch[sizeof d->arch];
  if (read_arch(f, arch, sizeof arch, err) != 0) return -1;
  if (f->n_tensors == 0)
    return tm_errf(err, "%s: no tensors (a vocabulary-only file?): nothing to analyse",
                   f->path);
  uint64_t n_layer = 0;
  bool layer_guess = false;
  if (read_layer_count(f, arch, &n_layer, &layer_guess, err) != 0) return -1;
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

  uint64_t v = 0;
  int r;
  if ((r = key_uint(f, arch, "embedding_length", 1, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r) {
    d->n_embd = (uint32_t)v;
  } else if (emb && emb->ne[0] <= UINT32_MAX) {
    d->n_embd = (uint32_t)emb->ne[0];
    model_desc_assume(d, "%s.embedding_length absent: n_embd %u from token_embd", arch,
                      d->n_embd);
  }
  if ((r = key_uint(f, arch, "vocab_size", 1, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r) {
    d->n_vocab = (uint32_t)v;
  } else {
    const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    if (tok && tok->type == GGUF_VT_ARRAY && tok->v.arr.count <= UINT32_MAX)
      d->n_vocab = (uint32_t)tok->v.arr.count;
    else if (emb && emb->n_dims >= 2 && emb->ne[1] <= UINT32_MAX)
      d->n_vocab = (uint32_t)emb->ne[1];
  }
  if ((r = key_uint(f, arch, "context_length", 1, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r) d->context_length = v;
  else
    model_desc_assume(d, "%s.context_length absent: the trained context is unknown; the "
                         "context that fits is not capped by it", arch);

  /* Experts: expert_used_count must be 1..expert_count when there are
   * experts (a dense file may carry 0s). */
  uint64_t n_exp = 0, n_used = 0;
  int has_exp = 0, has_used = 0;
  if ((has_exp = key_uint(f, arch, "expert_count", 0, UINT32_MAX, &n_exp, err)) < 0 ||
      (has_used = key_uint(f, arch, "expert_used_count", 0, UINT32_MAX, &n_used, err)) < 0)
    goto fail;
  d->n_expert = (uint32_t)n_exp;
  if (d->n_expert && !has_used) {
    model_desc_assume(d, "%s.expert_used_count absent: every expert counted as used", arch);
    n_used = n_exp;
  } else if (d->n_expert && (n_used == 0 || n_used > n_exp)) {
    tm_errf(err, "%s: key '%s.expert_used_count' = %llu is out of range (1..%u, the "
            "expert_count)", f->path, arch, (unsigned long long)n_used, d->n_expert);
    goto fail;
  }
  d->n_expert_used = (uint32_t)n_used;
  if (check_expert_tensors(f, d, has_exp, err) != 0) goto fail;

  /* Heads: scalar or per-layer arrays. head_count_kv defaults to head_count. */
  bool short_arr = false;
  int have_heads = key_per_layer(f, arch, "attention.head_count", d->n_head, d->n_layer,
                                 &short_arr, err);
  if (have_heads < 0) goto fail;
  if (short_arr)
    model_desc_assume(d, "attention.head_count array shorter than block_count: last value "
                         "repeated");
  if ((r = key_per_layer(f, arch, "attention.head_count_kv", d->n_head_kv, d->n_layer,
                         &short_arr, err)) < 0)
    goto fail;
  if (r == 0) {
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
  int has_kl = 0, has_vl = 0;
  if ((has_kl = key_uint(f, arch, "attention.key_length", 0, MAX_HEAD_LENGTH, &kl, err)) < 0 ||
      (has_vl = key_uint(f, arch, "attention.value_length", 0, MAX_HEAD_LENGTH, &vl, err)) < 0)
    goto fail;
  if (!has_kl && n_head0) {
    kl = d->n_embd / n_head0;
    model_desc_assume(d, "attention.key_length absent: n_embd / head_count = %llu%s",
                      (unsigned long long)kl, has_vl ? "" : " (value_length too)");
  }
  if (!has_vl && n_head0) {
    vl = has_kl ? kl : d->n_embd / n_head0;
    if (has_kl) model_desc_assume(d, "attention.value_length absent: = key_length (%llu)",
                                  (unsigned long long)vl);
  }
  d->key_length = (uint32_t)kl; /* <= MAX_HEAD_LENGTH or n_embd: exact */
  d->value_length = (uint32_t)vl;
  if ((r = key_uint(f, arch, "attention.kv_lora_rank", 0, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r)
    model_desc_assume(d, "multi-head latent attention (kv_lora_rank %llu): KV per layer "
                      "counted as head_count_kv x (key_length + value_length) as the file "
                      "states them", (unsigned long long)v);

  /* Multi-token-prediction blocks: the last nextn_predict_layers, fewer than
   * all of them (a model whose every block is MTP has nothing to decode with). */
  if ((r = key_uint(f, arch, "nextn_predict_layers", 0, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r && v > 0) {
    if (v >= d->n_layer) {
      tm_errf(err, "%s: key '%s.nextn_predict_layers' = %llu: the multi-token-prediction "
              "blocks must be fewer than %s.block_count %u", f->path, arch,
              (unsigned long long)v, arch, d->n_layer);
      goto fail;
    }
    d->n_layer_nextn = (uint32_t)v;
    for (uint32_t il = d->n_layer - d->n_layer_nextn; il < d->n_layer; il++)
      d->layer_kind[il] = MODEL_LAYER_MTP;
  }

  /* Recurrent layers: full_attention_interval, or 0 KV heads with state keys,
   * or an RWKV file (wkv.*: every layer). */
  int has_state = recurrent_state(f, d, err);
  if (has_state < 0) goto fail;
  uint64_t interval = 0, wkv = 0;
  int is_rwkv = 0;
  if ((is_rwkv = key_uint(f, arch, "wkv.head_size", 0, MAX_STATE_DIM, &wkv, err)) < 0 ||
      (r = key_uint(f, arch, "full_attention_interval", 0, UINT32_MAX, &interval, err)) < 0)
    goto fail;
  bool any_recurrent = false;
  if (r && interval > 0) {
    for (uint32_t il = 0; il < d->n_layer; il++)
      if (d->layer_kind[il] != MODEL_LAYER_MTP && (il + 1) % interval != 0) {
        d->layer_kind[il] = MODEL_LAYER_RECURRENT;
        any_recurrent = true;
      }
  }
  /* Without any head count, a layer with attention tensors is still an
   * attention layer: its heads, hence its KV cache and attention FLOPs, are
   * unknown (reading them as 0 once printed "KV cache: 0 B" and "context
   * that fits: unbounded" for any architecture this reader does not know). */
  uint32_t n_unknown_heads = 0;
  for (uint32_t il = 0; !have_heads && !is_rwkv && il < d->n_layer; il++)
    if (d->layer_kind[il] == MODEL_LAYER_ATTN && d->n_head_kv[il] == 0 &&
        layer_has_attention_tensors(d, il))
      n_unknown_heads++;
  d->heads_unknown = n_unknown_heads > 0;
  if (d->heads_unknown)
    model_desc_assume(d, "%s.attention.head_count absent: the KV cache and attention FLOPs of "
                      "the %u layers with attention tensors are unknown", arch, n_unknown_heads);
  for (uint32_t il = 0; il < d->n_layer; il++) {
    if (d->layer_kind[il] != MODEL_LAYER_ATTN) continue;
    if (d->heads_unknown && d->n_head_kv[il] == 0 && layer_has_attention_tensors(d, il))
      continue; /* an attention layer of unknown heads */
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
    if (d->heads_unknown && d->n_head_kv[il] == 0) continue; /* nothing to check */
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

  if ((r = key_uint(f, arch, "attention.sliding_window", 0, UINT32_MAX, &v, err)) < 0) goto fail;
  if (r && v > 0) {
    d->sliding_window = (uint32_t)v;
    if (mark_swa_layers(f, d, err) != 0) goto fail;
  } else if (r == 0 && strcmp(arch, "llama4") == 0) {
    /* Absent: llama.cpp hard-codes 8192-token chunks on llama4. Present and 0
     * (what the converter writes for an all-full-attention model) turns
     * chunked attention off in llama.cpp: every layer then sees it all. */
    d->sliding_window = 8192;
    if (mark_swa_layers(f, d, err) != 0) goto fail;
  }
  return 0;
fail:
  model_desc_free(d);
  return -1;
}


const char *model_gguf_file_type(const struct gguf_file *f) {
  uint64_t ftype;
  if (!gguf_find_kv(f, "general.file_type") ||
      gguf_get_u64(f, "general.file_type", &ftype, NULL) != 0 || ftype > 1000)
    return NULL;
  return model_ftype_name((int)ftype);
}

/* The message names the file once: "PATH: ...". */
static int name_the_file(struct tm_err *err, const char *path) {
  if (err && !strstr(err->msg, path)) return tm_err_prefix(err, "%s", path);
  return -1;
}

int model_cost_from_file(const char *path, uint32_t kv_type, struct model_cost *cost,
                         struct model_file_facts *facts, struct tm_err *err) {
  struct gguf_file *f = gguf_open(path, err);
  if (!f) return name_the_file(err, path);
  struct model_desc d;
  struct model_analyze_options ao = {.kv_type = kv_type};
  int rc = model_desc_from_gguf(f, &d, err);
  if (rc == 0) {
    rc = model_analyze(&d, &ao, cost, err);
    model_desc_free(&d);
  }
  if (facts) {
    memset(facts, 0, sizeof *facts);
    const char *ft = model_gguf_file_type(f);
    snprintf(facts->file_type, sizeof facts->file_type, "%s", ft ? ft : "");
    if (gguf_get_str(f, "general.name", facts->name, sizeof facts->name, NULL) != 0)
      facts->name[0] = 0;
    facts->file_bytes = f->file_size;
  }
  gguf_close(f);
  return rc != 0 ? name_the_file(err, path) : 0;
}
