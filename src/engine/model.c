/* model: hyperparameters and tensor binding for llama, qwen2, qwen3, qwen3moe.
 * See model.h. Tensor names and metadata keys are llama.cpp's (facts of the
 * GGUF format as llama.cpp writes it). */
#include "engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"

static const char *const k_arch_names[] = {"llama", "qwen2", "qwen3", "qwen3moe"};

static const char *type_name(uint32_t t) {
  const struct ggml_type_info *ti = ggml_type_get(t);
  return ti ? ti->name : "unknown";
}

/* ------------------------------------------------------------ metadata -- */

static int get_u32(const struct gguf_file *f, const char *arch, const char *suffix,
                   uint32_t *out, bool required, struct tm_err *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  const struct gguf_kv *kv = gguf_find_kv(f, key);
  if (!kv) {
    if (required) return tm_errf(err, "%s: metadata key '%s' is missing", f->path, key);
    return 1;
  }
  uint64_t v;
  if (kv->type == GGUF_VT_ARRAY) {
    /* Per-layer arrays (head_count_kv in some files): the engine needs them equal. */
    if (gguf_arr_get_u64(kv, 0, &v) != 0)
      return tm_errf(err, "%s: metadata key '%s' is not an integer array", f->path, key);
    for (uint64_t i = 1; i < kv->v.arr.count; i++) {
      uint64_t w;
      if (gguf_arr_get_u64(kv, i, &w) != 0 || w != v)
        return tm_errf(err, "%s: '%s' differs between layers, which the embedded engine "
                       "does not support", f->path, key);
    }
  } else if (gguf_get_u64(f, key, &v, err) != 0) {
    return -1;
  }
  if (v > UINT32_MAX) return tm_errf(err, "%s: '%s' = %llu is too large", f->path, key,
                                     (unsigned long long)v);
  *out = (uint32_t)v;
  return 0;
}

static int get_f32(const struct gguf_file *f, const char *arch, const char *suffix, float *out,
                   struct tm_err *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  if (!gguf_find_kv(f, key)) return 1;
  double v;
  if (gguf_get_f64(f, key, &v, err) != 0) return -1;
  *out = (float)v;
  return 0;
}

/* ------------------------------------------------------------- tensors -- */

static const struct gguf_tensor *find(const struct gguf_file *f, const struct model *m,
                                      const char *name, bool required, struct tm_err *err) {
  const struct gguf_tensor *t = gguf_find_tensor(f, name);
  if (!t && required)
    tm_errf(err, "%s: tensor '%s' is missing (needed by architecture %s)", f->path, name,
            m->arch_name);
  return t;
}

static int check_shape(const struct gguf_file *f, const struct gguf_tensor *t, uint32_t n_dims,
                       const uint64_t *ne, struct tm_err *err) {
  bool ok = t->n_dims <= n_dims || (t->n_dims > n_dims && t->ne[n_dims] == 1);
  for (uint32_t i = 0; i < n_dims && ok; i++) ok = t->ne[i] == ne[i];
  for (uint32_t i = n_dims; i < GGUF_MAX_DIMS && ok; i++) ok = t->ne[i] == 1;
  if (ok) return 0;
  char want[96], got[96];
  int a = snprintf(want, sizeof want, "[%llu", (unsigned long long)ne[0]);
  for (uint32_t i = 1; i < n_dims; i++)
    a += snprintf(want + a, sizeof want - (size_t)a, ", %llu", (unsigned long long)ne[i]);
  snprintf(want + a, sizeof want - (size_t)a, "]");
  int b = snprintf(got, sizeof got, "[%llu", (unsigned long long)t->ne[0]);
  for (uint32_t i = 1; i < t->n_dims && i < GGUF_MAX_DIMS; i++)
    b += snprintf(got + b, sizeof got - (size_t)b, ", %llu", (unsigned long long)t->ne[i]);
  snprintf(got + b, sizeof got - (size_t)b, "]");
  return tm_errf(err, "%s: tensor '%s' has shape %s, expected %s", f->path, t->name, got, want);
}

/* Binds a matrix of `rows` rows of n elements (times n_expert when > 0). */
static int bind_mat(struct model *m, const struct gguf_file *f, const struct kernel_ops *ops,
                    const char *name, int64_t n, int64_t rows, uint32_t n_expert,
                    struct mat *out, struct tm_err *err) {
  const struct gguf_tensor *t = find(f, m, name, true, err);
  if (!t) return -1;
  uint64_t ne[3] = {(uint64_t)n, (uint64_t)rows, n_expert};
  if (check_shape(f, t, n_expert ? 3 : 2, ne, err) != 0) return -1;
  if (t->type >= GGML_TYPE_COUNT || !ops->gemm[t->type])
    return tm_errf(err, "%s: tensor '%s' has type %s, which the embedded engine has no "
                   "kernel for (%s path)", f->path, name, type_name(t->type), ops->name);
  uint64_t rb;
  if (ggml_row_bytes(t->type, (uint64_t)n, &rb) != 0)
    return tm_errf(err, "%s: tensor '%s': row of %lld elements does not fit type %s", f->path,
                   name, (long long)n, type_name(t->type));
  *out = (struct mat){.t = t, .data = t->data, .type = t->type, .n = n, .rows = rows,
                      .row_bytes = (size_t)rb};
  return 0;
}

static int own(struct model *m, float *p) {
  if (m->n_owned == m->cap_owned) {
    int cap = m->cap_owned ? m->cap_owned * 2 : 16;
    float **q = realloc(m->owned, (size_t)cap * sizeof *q);
    if (!q) return -1;
    m->owned = q;
    m->cap_owned = cap;
  }
  m->owned[m->n_owned++] = p;
  return 0;
}

/* A small f32 vector of n elements: in place when the file holds aligned F32,
 * else converted once (norms and biases only: a few KB). Absent and optional:
 * *out = NULL. */
static int bind_vec(struct model *m, const struct gguf_file *f, const char *name, int64_t n,
                    bool required, const float **out, struct tm_err *err) {
  *out = NULL;
  const struct gguf_tensor *t = find(f, m, name, required, err);
  if (!t) return required ? -1 : 0;
  uint64_t ne[1] = {(uint64_t)n};
  if (check_shape(f, t, 1, ne, err) != 0) return -1;
  if (t->type == GGML_TYPE_F32 && ((uintptr_t)t->data & 3) == 0) {
    *out = t->data;
    return 0;
  }
  float *buf = malloc((size_t)n * sizeof *buf);
  if (!buf || own(m, buf) != 0) {
    free(buf);
    return tm_errf(err, "out of memory converting tensor '%s'", name);
  }
  m->owned_bytes += (uint64_t)n * sizeof *buf;
  if (ggml_dequantize_ref(t->type, t->data, buf, n) != 0)
    return tm_errf(err, "%s: tensor '%s' has type %s, which the embedded engine cannot read",
                   f->path, name, type_name(t->type));
  *out = buf;
  return 0;
}

/* ------------------------------------------------------------- binding -- */

static int read_hparams(struct model *m, const struct gguf_file *f, struct tm_err *err) {
  const char *a = m->arch_name;
  if (get_u32(f, a, "block_count", &m->n_layer, true, err) < 0 ||
      get_u32(f, a, "embedding_length", &m->n_embd, true, err) < 0 ||
      get_u32(f, a, "attention.head_count", &m->n_head, true, err) < 0)
    return -1;
  m->n_head_kv = m->n_head;
  if (get_u32(f, a, "attention.head_count_kv", &m->n_head_kv, false, err) < 0) return -1;
  if (m->n_head == 0 || m->n_head_kv == 0 || m->n_layer == 0 || m->n_embd == 0 ||
      m->n_head % m->n_head_kv != 0)
    return tm_errf(err, "%s: bad attention shape: %u layers, n_embd %u, %u heads, %u KV heads",
                   f->path, m->n_layer, m->n_embd, m->n_head, m->n_head_kv);
  m->head_dim = m->n_embd / m->n_head;
  if (get_u32(f, a, "attention.key_length", &m->head_dim, false, err) < 0) return -1;
  uint32_t vlen = m->head_dim;
  if (get_u32(f, a, "attention.value_length", &vlen, false, err) < 0) return -1;
  if (vlen != m->head_dim)
    return tm_errf(err, "%s: key_length %u != value_length %u is not supported", f->path,
                   m->head_dim, vlen);
  if (m->head_dim > 1024)
    return tm_errf(err, "%s: head dimension %u is larger than the engine supports (1024)",
                   f->path, m->head_dim);
  if (m->head_dim == 0 || m->head_dim % 2 != 0)
    return tm_errf(err, "%s: head dimension %u must be even", f->path, m->head_dim);
  if (get_u32(f, a, "feed_forward_length", &m->n_ff, m->arch != ARCH_QWEN3MOE, err) < 0)
    return -1;
  if (m->arch == ARCH_QWEN3MOE) {
    if (get_u32(f, a, "expert_count", &m->n_expert, true, err) < 0 ||
        get_u32(f, a, "expert_used_count", &m->n_expert_used, true, err) < 0 ||
        get_u32(f, a, "expert_feed_forward_length", &m->n_ff_exp, true, err) < 0)
      return -1;
    if (m->n_expert == 0 || m->n_expert_used == 0 || m->n_expert_used > m->n_expert ||
        m->n_expert_used > 64 || m->n_expert > 512)
      return tm_errf(err, "%s: bad expert counts: %u used of %u", f->path, m->n_expert_used,
                     m->n_expert);
  }
  m->n_ctx_train = 4096;
  if (get_u32(f, a, "context_length", &m->n_ctx_train, false, err) < 0) return -1;
  m->rope_base = 10000.0f;
  m->rms_eps = 1e-5f;
  if (get_f32(f, a, "rope.freq_base", &m->rope_base, err) < 0 ||
      get_f32(f, a, "attention.layer_norm_rms_epsilon", &m->rms_eps, err) < 0)
    return -1;
  /* Both feed every activation: a NaN, zero or negative one would run and
   * print rates for NaN logits. (!(x > 0) also catches NaN.) */
  if (!(m->rope_base > 1.0f) || !isfinite(m->rope_base))
    return tm_errf(err, "%s: %s.rope.freq_base is %g: it must be a finite number above 1",
                   f->path, a, (double)m->rope_base);
  if (!(m->rms_eps > 0.0f) || !(m->rms_eps < 1.0f))
    return tm_errf(err, "%s: %s.attention.layer_norm_rms_epsilon is %g: it must be in (0, 1)",
                   f->path, a, (double)m->rms_eps);
  uint32_t rope_dim = m->head_dim;
  if (get_u32(f, a, "rope.dimension_count", &rope_dim, false, err) < 0) return -1;
  if (rope_dim != m->head_dim)
    return tm_errf(err, "%s: partial RoPE (%u of %u dimensions) is not supported", f->path,
                   rope_dim, m->head_dim);
  return 0;
}

int model_bind(struct model *m, const struct gguf_file *f, const struct kernel_ops *ops,
               struct tm_err *err) {
  memset(m, 0, sizeof *m);
  if (gguf_get_str(f, "general.architecture", m->arch_name, sizeof m->arch_name, err) != 0)
    return tm_err_prefix(err, "%s", f->path);
  int arch = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(m->arch_name, k_arch_names[i]) == 0) arch = i;
  if (arch < 0)
    return tm_errf(err, "architecture '%s' is not supported by the embedded engine (llama, "
                   "qwen2, qwen3, qwen3moe); tokmeter ceiling still works on it", m->arch_name);
  m->arch = (enum model_arch)arch;
  /* llama.cpp's rope type: NORM for llama, NEOX for the qwen family. */
  m->rope_neox = m->arch != ARCH_LLAMA;
  if (read_hparams(m, f, err) != 0) return -1;

  const int64_t E = m->n_embd, Q = (int64_t)m->n_head * m->head_dim,
                KV = (int64_t)m->n_head_kv * m->head_dim;

  /* Token embedding: a row lookup (dequantizer) and, when tied, the output head. */
  const struct gguf_tensor *te = find(f, m, "token_embd.weight", true, err);
  if (!te) return -1;
  if (te->n_dims != 2 || te->ne[0] != (uint64_t)E || te->ne[1] == 0 || te->ne[1] > INT32_MAX)
    return tm_errf(err, "%s: tensor 'token_embd.weight' has shape [%llu, %llu], expected "
                   "[%u, n_vocab]", f->path, (unsigned long long)te->ne[0],
                   (unsigned long long)te->ne[1], m->n_embd);
  m->n_vocab = (uint32_t)te->ne[1];
  const struct ggml_type_info *ti = ggml_type_get(te->type);
  if (!ti || !ti->has_ref)
    return tm_errf(err, "%s: tensor 'token_embd.weight' has type %s, which the embedded "
                   "engine cannot read", f->path, type_name(te->type));
  const struct gguf_tensor *out = gguf_find_tensor(f, "output.weight");
  m->tied_output = out == NULL;
  if (m->tied_output) {
    if (bind_mat(m, f, ops, "token_embd.weight", E, m->n_vocab, 0, &m->output, err) != 0)
      return -1;
    m->token_embd = m->output;
  } else {
    uint64_t rb;
    if (ggml_row_bytes(te->type, (uint64_t)E, &rb) != 0)
      return tm_errf(err, "%s: token_embd row does not fit type %s", f->path,
                     type_name(te->type));
    m->token_embd = (struct mat){.t = te, .data = te->data, .type = te->type, .n = E,
                                 .rows = m->n_vocab, .row_bytes = (size_t)rb};
    if (bind_mat(m, f, ops, "output.weight", E, m->n_vocab, 0, &m->output, err) != 0)
      return -1;
  }
  if (bind_vec(m, f, "output_norm.weight", E, true, &m->output_norm, err) != 0) return -1;

  m->layers = calloc(m->n_layer, sizeof *m->layers);
  if (!m->layers) return tm_errf(err, "out of memory binding %u layers", m->n_layer);
  char nm[96];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%u." s, l), nm)
  for (uint32_t l = 0; l < m->n_layer; l++) {
    struct layer_weights *L = &m->layers[l];
    if (bind_vec(m, f, NAME("attn_norm.weight"), E, true, &L->attn_norm, err) ||
        bind_mat(m, f, ops, NAME("attn_q.weight"), E, Q, 0, &L->wq, err) ||
        bind_mat(m, f, ops, NAME("attn_k.weight"), E, KV, 0, &L->wk, err) ||
        bind_mat(m, f, ops, NAME("attn_v.weight"), E, KV, 0, &L->wv, err) ||
        bind_mat(m, f, ops, NAME("attn_output.weight"), Q, E, 0, &L->wo, err) ||
        bind_vec(m, f, NAME("ffn_norm.weight"), E, true, &L->ffn_norm, err))
      return -1;
    bool bias = m->arch == ARCH_QWEN2;
    if (bind_vec(m, f, NAME("attn_q.bias"), Q, bias, &L->bq, err) ||
        bind_vec(m, f, NAME("attn_k.bias"), KV, bias, &L->bk, err) ||
        bind_vec(m, f, NAME("attn_v.bias"), KV, bias, &L->bv, err))
      return -1;
    bool qk_norm = m->arch == ARCH_QWEN3 || m->arch == ARCH_QWEN3MOE;
    if (qk_norm && (bind_vec(m, f, NAME("attn_q_norm.weight"), m->head_dim, true, &L->q_norm,
                             err) ||
                    bind_vec(m, f, NAME("attn_k_norm.weight"), m->head_dim, true, &L->k_norm,
                             err)))
      return -1;
    if (m->arch == ARCH_QWEN3MOE) {
      const int64_t F = m->n_ff_exp;
      if (bind_mat(m, f, ops, NAME("ffn_gate_inp.weight"), E, m->n_expert, 0, &L->gate_inp,
                   err) ||
          bind_mat(m, f, ops, NAME("ffn_gate_exps.weight"), E, F, m->n_expert, &L->gate_exps,
                   err) ||
          bind_mat(m, f, ops, NAME("ffn_up_exps.weight"), E, F, m->n_expert, &L->up_exps,
                   err) ||
          bind_mat(m, f, ops, NAME("ffn_down_exps.weight"), F, E, m->n_expert, &L->down_exps,
                   err))
        return -1;
    } else {
      const int64_t F = m->n_ff;
      if (bind_mat(m, f, ops, NAME("ffn_gate.weight"), E, F, 0, &L->ffn_gate, err) ||
          bind_mat(m, f, ops, NAME("ffn_up.weight"), E, F, 0, &L->ffn_up, err) ||
          bind_mat(m, f, ops, NAME("ffn_down.weight"), F, E, 0, &L->ffn_down, err))
        return -1;
    }
  }
#undef NAME
  return 0;
}

void model_free(struct model *m) {
  if (!m) return;
  for (int i = 0; i < m->n_owned; i++) free(m->owned[i]);
  free(m->owned);
  free(m->layers);
  memset(m, 0, sizeof *m);
}
