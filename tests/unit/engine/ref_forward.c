/* ref_forward: the float64 reference forward and the llama.cpp fixture reader
 * (contracts in ref_forward.h). Written from the formulas, independently of
 * src/engine: nothing here is shared with the engine but the GGUF reader and
 * the reference dequantizers. Test-only: included by the test files. */
#include "ref_forward.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "util/fp16.h"

enum ref_rope { REF_ROPE_NORM, REF_ROPE_NEOX };

/* A weight as doubles plus its type in the file (for the llama.cpp rounding
 * emulation: the type decides how llama.cpp rounds the activations it meets). */
struct ref_w {
  double *d;
  uint32_t type;
};

struct ref_layer {
  double *attn_norm, *bq, *bk, *bv, *q_norm, *k_norm, *ffn_norm; /* F32 vectors */
  struct ref_w wq, wk, wv, wo;
  struct ref_w gate, up, down;                   /* dense */
  struct ref_w router, gate_exps, up_exps, down_exps; /* qwen3moe */
};

struct ref_model {
  char arch[32];
  enum ref_rope rope;
  int n_layer, n_embd, n_head, n_head_kv, head_dim, n_rot, n_ff, n_vocab;
  int n_expert, n_expert_used, n_ff_exp;
  double eps, freq_base;
  bool all_float;
  bool has_kquant; /* some matrix is Q2_K..Q6_K */
  bool llamacpp_rounding; /* see ref_set_llamacpp_rounding */
  struct ref_w tok_embd, output; /* output.d == tok_embd.d when tied (not owned) */
  double *out_norm;
  bool output_owned;
  struct ref_layer *layers;
};

uint32_t ref_n_vocab(const struct ref_model *m) { return (uint32_t)m->n_vocab; }
const char *ref_arch(const struct ref_model *m) { return m->arch; }
bool ref_all_float(const struct ref_model *m) { return m->all_float; }
bool ref_has_kquant(const struct ref_model *m) { return m->has_kquant; }

/* Dequantizes tensor `name` into a new double array; checks its shape against
 * ne (0 = any). NULL when missing (err set only when required). */
static double *ref_tensor(struct ref_model *m, const struct gguf_file *f, const char *name,
                          uint64_t ne0, uint64_t ne1, uint64_t ne2, bool required,
                          struct tm_err *err, int *failed, uint32_t *type_out) {
  const struct gguf_tensor *t = gguf_find_tensor(f, name);
  if (t && type_out) *type_out = t->type;
  if (!t) {
    if (required) {
      tm_errf(err, "%s: tensor '%s' missing", f->path, name);
      *failed = 1;
    }
    return NULL;
  }
  uint64_t want[3] = {ne0, ne1, ne2};
  for (int d = 0; d < 3; d++)
    if (want[d] && t->ne[d] != want[d]) {
      tm_errf(err, "%s: tensor '%s' ne[%d] = %llu, expected %llu", f->path, name, d,
              (unsigned long long)t->ne[d], (unsigned long long)want[d]);
      *failed = 1;
      return NULL;
    }
  uint64_t n = t->n_elements;
  float *tmp = malloc(n * sizeof *tmp);
  double *out = malloc(n * sizeof *out);
  if (!tmp || !out || ggml_dequantize_ref(t->type, t->data, tmp, (int64_t)n) != 0) {
    const struct ggml_type_info *ti = ggml_type_get(t->type);
    tm_errf(err, "%s: tensor '%s' (type %s): cannot dequantize", f->path, name,
            ti ? ti->name : "?");
    free(tmp);
    free(out);
    *failed = 1;
    return NULL;
  }
  /* 1-D tensors (norms, biases) are F32 in every file; only matrices decide. */
  if (t->n_dims >= 2 && t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 &&
      t->type != GGML_TYPE_BF16)
    m->all_float = false;
  if (t->type >= GGML_TYPE_Q2_K && t->type <= GGML_TYPE_Q6_K) m->has_kquant = true;
  for (uint64_t i = 0; i < n; i++) out[i] = tmp[i];
  free(tmp);
  return out;
}

static int ref_u(const struct gguf_file *f, const char *arch, const char *suffix, int *out,
                 bool required, struct tm_err *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s", arch, suffix);
  uint64_t v;
  if (gguf_get_u64(f, key, &v, NULL) != 0) {
    if (required) return tm_errf(err, "%s: metadata '%s' missing", f->path, key);
    return 0;
  }
  *out = (int)v;
  return 0;
}

struct ref_model *ref_model_load(const char *path, struct tm_err *err) {
  struct gguf_file *f = gguf_open(path, err);
  if (!f) return NULL;
  struct ref_model *m = calloc(1, sizeof *m);
  if (!m) {
    gguf_close(f);
    tm_errf(err, "out of memory");
    return NULL;
  }
  m->all_float = true;
  int failed = 0;
  if (gguf_get_str(f, "general.architecture", m->arch, sizeof m->arch, err) != 0) goto fail;
  if (!strcmp(m->arch, "llama"))
    m->rope = REF_ROPE_NORM;
  else if (!strcmp(m->arch, "qwen2") || !strcmp(m->arch, "qwen3") || !strcmp(m->arch, "qwen3moe"))
    m->rope = REF_ROPE_NEOX;
  else {
    tm_errf(err, "%s: architecture '%s' not supported by the reference", path, m->arch);
    goto fail;
  }
  const char *a = m->arch;
  if (ref_u(f, a, "block_count", &m->n_layer, true, err) ||
      ref_u(f, a, "embedding_length", &m->n_embd, true, err) ||
      ref_u(f, a, "attention.head_count", &m->n_head, true, err))
    goto fail;
  m->n_head_kv = m->n_head;
  ref_u(f, a, "attention.head_count_kv", &m->n_head_kv, false, err);
  m->head_dim = m->n_embd / m->n_head;
  ref_u(f, a, "attention.key_length", &m->head_dim, false, err);
  m->n_rot = m->head_dim;
  ref_u(f, a, "rope.dimension_count", &m->n_rot, false, err);
  ref_u(f, a, "feed_forward_length", &m->n_ff, false, err);
  ref_u(f, a, "expert_count", &m->n_expert, false, err);
  ref_u(f, a, "expert_used_count", &m->n_expert_used, false, err);
  ref_u(f, a, "expert_feed_forward_length", &m->n_ff_exp, false, err);
  char key[128];
  snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a);
  if (gguf_get_f64(f, key, &m->eps, err) != 0) goto fail;
  m->freq_base = 10000.0; /* llama.cpp's default when the key is absent */
  snprintf(key, sizeof key, "%s.rope.freq_base", a);
  gguf_get_f64(f, key, &m->freq_base, NULL);
  if (m->n_expert && strcmp(a, "qwen3moe") != 0) {
    tm_errf(err, "%s: experts in a '%s' model are not supported by the reference", path, a);
    goto fail;
  }

  const struct gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
  if (!te) {
    tm_errf(err, "%s: tensor 'token_embd.weight' missing", path);
    goto fail;
  }
  m->n_vocab = (int)te->ne[1];
  const uint64_t E = (uint64_t)m->n_embd, NQ = (uint64_t)m->n_head * m->head_dim;
  const uint64_t NK = (uint64_t)m->n_head_kv * m->head_dim;
  m->tok_embd.d = ref_tensor(m, f, "token_embd.weight", E, 0, 0, true, err, &failed,
                             &m->tok_embd.type);
  m->out_norm = ref_tensor(m, f, "output_norm.weight", E, 0, 0, true, err, &failed, NULL);
  if (failed) goto fail;
  m->output.d = ref_tensor(m, f, "output.weight", E, (uint64_t)m->n_vocab, 0, false, err,
                           &failed, &m->output.type);
  if (failed) goto fail;
  m->output_owned = m->output.d != NULL;
  if (!m->output.d) m->output = m->tok_embd;

  m->layers = calloc((size_t)m->n_layer, sizeof *m->layers);
  if (!m->layers) {
    tm_errf(err, "out of memory");
    goto fail;
  }
  for (int l = 0; l < m->n_layer && !failed; l++) {
    struct ref_layer *L = &m->layers[l];
    char n[96];
#define T(field, what, a0, a1, a2, req)                                      \
  (snprintf(n, sizeof n, "blk.%d.%s", l, what),                               \
   L->field = ref_tensor(m, f, n, a0, a1, a2, req, err, &failed, NULL))
#define W(field, what, a0, a1, a2)                                           \
  (snprintf(n, sizeof n, "blk.%d.%s", l, what),                               \
   L->field.d = ref_tensor(m, f, n, a0, a1, a2, true, err, &failed, &L->field.type))
    T(attn_norm, "attn_norm.weight", E, 0, 0, true);
    W(wq, "attn_q.weight", E, NQ, 0);
    W(wk, "attn_k.weight", E, NK, 0);
    W(wv, "attn_v.weight", E, NK, 0);
    W(wo, "attn_output.weight", NQ, E, 0);
    bool qwen2 = !strcmp(a, "qwen2"), qk = !strcmp(a, "qwen3") || !strcmp(a, "qwen3moe");
    T(bq, "attn_q.bias", NQ, 0, 0, qwen2);
    T(bk, "attn_k.bias", NK, 0, 0, qwen2);
    T(bv, "attn_v.bias", NK, 0, 0, qwen2);
    T(q_norm, "attn_q_norm.weight", (uint64_t)m->head_dim, 0, 0, qk);
    T(k_norm, "attn_k_norm.weight", (uint64_t)m->head_dim, 0, 0, qk);
    T(ffn_norm, "ffn_norm.weight", E, 0, 0, true);
    if (m->n_expert) {
      uint64_t X = (uint64_t)m->n_expert, F = (uint64_t)m->n_ff_exp;
      W(router, "ffn_gate_inp.weight", E, X, 0);
      W(gate_exps, "ffn_gate_exps.weight", E, F, X);
      W(up_exps, "ffn_up_exps.weight", E, F, X);
      W(down_exps, "ffn_down_exps.weight", F, E, X);
    } else {
      uint64_t F = (uint64_t)m->n_ff;
      W(gate, "ffn_gate.weight", E, F, 0);
      W(up, "ffn_up.weight", E, F, 0);
      W(down, "ffn_down.weight", F, E, 0);
    }
#undef T
#undef W
  }
  if (failed) goto fail;
  gguf_close(f);
  return m;
fail:
  gguf_close(f);
  ref_model_free(m);
  return NULL;
}

void ref_model_free(struct ref_model *m) {
  if (!m) return;
  for (int l = 0; m->layers && l < m->n_layer; l++) {
    struct ref_layer *L = &m->layers[l];
    double *all[] = {L->attn_norm, L->wq.d, L->wk.d, L->wv.d, L->wo.d, L->bq, L->bk, L->bv,
                     L->q_norm, L->k_norm, L->ffn_norm, L->gate.d, L->up.d, L->down.d,
                     L->router.d, L->gate_exps.d, L->up_exps.d, L->down_exps.d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
  }
  free(m->layers);
  if (m->output_owned) free(m->output.d);
  free(m->tok_embd.d);
  free(m->out_norm);
  free(m);
}

/* ------------------------------------------------------------ the math -- */

void ref_set_llamacpp_rounding(struct ref_model *m, bool on) { m->llamacpp_rounding = on; }

static double ref_f16(double x) { return tm_fp16_to_fp32(tm_fp32_to_fp16((float)x)); }

/* ggml's nearest_int: round half to even in float. */
static float ref_rintf(float x) { return rintf(x); }

/* What llama.cpp's CPU backend does to an activation row before a dot product
 * with weights of type wtype (its vec_dot_type), as values: F16 weights meet
 * F16 activations; Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 meet Q8_0 (blocks of 32, scale
 * amax/127 stored as F16, q = round(x * 127/amax)); K-quants meet Q8_K (blocks
 * of 256, iscale = -127/max where max is the signed value of largest |x|,
 * q = min(127, round(iscale x)), scale 1/iscale as f32). n: a multiple of the
 * block (always true for these tensors' rows). */
static void ref_round_act(uint32_t wtype, const double *x, double *y, int n) {
  switch (wtype) {
  case GGML_TYPE_F16:
    for (int i = 0; i < n; i++) y[i] = ref_f16(x[i]);
    return;
  case GGML_TYPE_BF16:
    for (int i = 0; i < n; i++) y[i] = tm_bf16_to_fp32(tm_fp32_to_bf16((float)x[i]));
    return;
  case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
  case GGML_TYPE_Q8_0:
    for (int b = 0; b < n; b += 32) {
      float amax = 0;
      for (int i = b; i < b + 32; i++) amax = fmaxf(amax, fabsf((float)x[i]));
      float d = amax / 127.f, id = amax != 0.f ? 127.f / amax : 0.f;
      double dh = ref_f16(d);
      for (int i = b; i < b + 32; i++) y[i] = ref_rintf((float)x[i] * id) * dh;
    }
    return;
  case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K:
  case GGML_TYPE_Q6_K:
    for (int b = 0; b < n; b += QK_K) {
      float amax = 0, max = 0;
      for (int i = b; i < b + QK_K; i++)
        if (fabsf((float)x[i]) > amax) {
          amax = fabsf((float)x[i]);
          max = (float)x[i];
        }
      if (amax == 0.f) {
        for (int i = b; i < b + QK_K; i++) y[i] = 0;
        continue;
      }
      float iscale = -127.f / max, d = 1.f / iscale;
      for (int i = b; i < b + QK_K; i++) {
        float q = ref_rintf(iscale * (float)x[i]);
        y[i] = (double)(q > 127.f ? 127.f : q) * d;
      }
    }
    return;
  default: /* F32 */
    for (int i = 0; i < n; i++) y[i] = (float)x[i];
    return;
  }
}

/* y[t][r] = sum_i W[r][i] x[t][i] (+ b[r]) for n rows of x; W is `out` rows of
 * `in`. With rounding on, each x row first goes through ref_round_act. */
static void ref_matmul_r(const double *w, uint32_t wtype, bool rounding, const double *b,
                         const double *x, double *y, int n, int in, int out) {
  double *xr = rounding ? malloc((size_t)in * sizeof *xr) : NULL;
  if (rounding && !xr) abort(); /* test code: a few KB; no way to report from here */
  for (int t = 0; t < n; t++) {
    const double *xt = x + (size_t)t * in;
    if (xr) {
      ref_round_act(wtype, xt, xr, in);
      xt = xr;
    }
    for (int r = 0; r < out; r++) {
      const double *wr = w + (size_t)r * in;
      double acc = 0;
      for (int i = 0; i < in; i++) acc += wr[i] * xt[i];
      y[(size_t)t * out + r] = acc + (b ? b[r] : 0.0);
    }
  }
  free(xr);
}

static void ref_matmul(const struct ref_model *m, struct ref_w w, const double *b,
                       const double *x, double *y, int n, int in, int out) {
  ref_matmul_r(w.d, w.type, m->llamacpp_rounding, b, x, y, n, in, out);
}

static void ref_rmsnorm(const double *x, const double *w, double *y, int n, double eps) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double k = 1.0 / sqrt(ss / n + eps);
  for (int i = 0; i < n; i++) y[i] = x[i] * k * w[i];
}

/* RMSNorm as llama.cpp's CPU backend computes it (rounding emulation only):
 * rms_norm sums the f32 squares in double, then narrows: mean = (float)(sum /
 * n), scale = 1.0f / sqrtf(mean + eps) in single precision, y = x * scale in
 * f32; the graph's separate mul by the weight rounds again. The single-
 * precision scale is what matters: it differs from (float)(1 / sqrt(double))
 * by an ulp now and then, and when the activations are a quantized embedding
 * (every value d * sc * q, so ratios to the block max are small fractions),
 * iscale * x of the next Q8_K quantization sits on a .5 tie often enough that
 * the ulp flips whole 8-bit steps. Measured on kq-llama-Q4_K_M (Q6_K
 * embedding): max error against llama.cpp 0.174 -> 0.000 (2026-11-29). */
static void ref_rmsnorm_ggml(const double *x, const double *w, double *y, int n, double eps) {
  double ss = 0;
  for (int i = 0; i < n; i++) {
    float xf = (float)x[i];
    ss += (double)(xf * xf);
  }
  const float mean = (float)(ss / n);
  const float scale = 1.0f / sqrtf(mean + (float)eps);
  for (int i = 0; i < n; i++) {
    float t = (float)x[i] * scale;
    y[i] = t * (float)w[i];
  }
}

/* Rotates the first n_rot dims of one head at position pos. Pair j (j < n_rot/2)
 * turns by pos * base^(-2j/n_rot): NORM pairs (2j, 2j+1), NEOX (j, j + n_rot/2). */
static void ref_rope(double *v, int n_rot, int pos, double base, enum ref_rope style) {
  for (int j = 0; j < n_rot / 2; j++) {
    double th = pos * pow(base, -2.0 * j / n_rot), c = cos(th), s = sin(th);
    int i0 = style == REF_ROPE_NORM ? 2 * j : j;
    int i1 = style == REF_ROPE_NORM ? 2 * j + 1 : j + n_rot / 2;
    double a = v[i0], b = v[i1];
    v[i0] = a * c - b * s;
    v[i1] = a * s + b * c;
  }
}

/* RoPE as ggml's CPU rope computes it (rounding emulation only): the angle of
 * pair j is theta_j = pos * theta_scale^j with theta_scale = powf(base,
 * -2/n_rot) and the power built by repeated f32 multiplication (theta *=
 * theta_scale), cosf/sinf in f32 and the rotation in f32. At positions up to
 * 31 the iterated angle is off the exact one by ~1e-6 rad, enough to move
 * K's F16 rounding and, later, an 8-bit activation step: tiny-llama-Q8_0
 * 0.135 -> 0.061 nats, the F16 files 0.005-0.010 -> 0.004-0.006. */
static void ref_rope_ggml(double *v, int n_rot, int pos, double base, enum ref_rope style) {
  const float theta_scale = powf((float)base, -2.0f / (float)n_rot);
  float theta = (float)pos;
  for (int j = 0; j < n_rot / 2; j++) {
    const float c = cosf(theta), s = sinf(theta);
    int i0 = style == REF_ROPE_NORM ? 2 * j : j;
    int i1 = style == REF_ROPE_NORM ? 2 * j + 1 : j + n_rot / 2;
    const float a = (float)v[i0], b = (float)v[i1];
    /* ggml writes x0*cos - x1*sin and x0*sin + x1*cos; its x86 build (gcc,
     * -march=native) contracts them into these FMAs. Measured: this form
     * beats the uncontracted one (tiny-llama-Q4_0 0.051 vs 0.112 nats) and
     * the other contraction (same, and qwen3moe-f16 0.004 vs 0.010). */
    v[i0] = fmaf(a, c, -(b * s));
    v[i1] = fmaf(a, s, b * c);
    theta *= theta_scale;
  }
}

/* llama.cpp's CPU flash attention for one query head with an F16 KV cache
 * (llama-server's default): Q (already F16-rounded) against n cached keys
 * (rows stride apart), scores in f32, online softmax whose V accumulator is
 * kept in F16 (rescaled and rounded at every key), divided by the sum at the
 * end. Only in the rounding emulation. */
static void ref_attn_flash_f16(const double *q, const double *k, const double *v, int stride,
                               int n, int hd, double scale, double *out) {
  float m = -INFINITY, s_sum = 0;
  for (int i = 0; i < hd; i++) out[i] = 0;
  for (int p = 0; p < n; p++) {
    const double *kp = k + (size_t)p * stride, *vp = v + (size_t)p * stride;
    double dot = 0;
    for (int i = 0; i < hd; i++) dot += q[i] * kp[i];
    float s = (float)dot * (float)scale, ms = 1.f, vs = 1.f;
    if (s > m) {
      float m_old = m;
      m = s;
      ms = expf(m_old - m);
      for (int i = 0; i < hd; i++) out[i] = ref_f16((float)out[i] * ms);
    } else {
      vs = expf(s - m);
    }
    for (int i = 0; i < hd; i++) out[i] = ref_f16((float)out[i] + (float)vp[i] * vs);
    s_sum = s_sum * ms + vs;
  }
  for (int i = 0; i < hd; i++) out[i] = (float)out[i] / s_sum;
}

static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

/* SwiGLU of n rows: out = down(silu(gate x) * up x). g, u: n * ff scratch.
 * off: element offset of one expert's matrices inside 3-D tensors. */
static void ref_swiglu(const struct ref_model *m, struct ref_w gate, struct ref_w up,
                       struct ref_w down, size_t off, const double *x, double *out, double *g,
                       double *u, int n, int E, int ff) {
  gate.d += off;
  up.d += off;
  down.d += off;
  ref_matmul(m, gate, NULL, x, g, n, E, ff);
  ref_matmul(m, up, NULL, x, u, n, E, ff);
  for (size_t i = 0; i < (size_t)n * ff; i++) g[i] = ref_silu(g[i]) * u[i];
  ref_matmul(m, down, NULL, g, out, n, ff, E);
}

/* qwen3moe FFN for one row h: softmax over the router logits, the top-k experts
 * (ties to the lower index), their probabilities renormalized to sum 1. */
static void ref_moe(const struct ref_model *m, const struct ref_layer *L, const double *h,
                    double *out, double *g, double *u, double *d) {
  const int E = m->n_embd, X = m->n_expert, K = m->n_expert_used, F = m->n_ff_exp;
  double pr[256];
  int used[256] = {0}, top[64];
  ref_matmul(m, L->router, NULL, h, pr, 1, E, X);
  double mx = -INFINITY, sum = 0, wsum = 0;
  for (int e = 0; e < X; e++) mx = pr[e] > mx ? pr[e] : mx;
  for (int e = 0; e < X; e++) sum += (pr[e] = exp(pr[e] - mx));
  for (int e = 0; e < X; e++) pr[e] /= sum;
  for (int k = 0; k < K; k++) {
    int best = -1;
    for (int e = 0; e < X; e++)
      if (!used[e] && (best < 0 || pr[e] > pr[best])) best = e;
    used[best] = 1;
    top[k] = best;
    wsum += pr[best];
  }
  for (int i = 0; i < E; i++) out[i] = 0;
  const size_t per = (size_t)E * F;
  for (int k = 0; k < K; k++) {
    int e = top[k];
    ref_swiglu(m, L->gate_exps, L->up_exps, L->down_exps, e * per, h, d, g, u, 1, E, F);
    for (int i = 0; i < E; i++) out[i] += pr[e] / wsum * d[i];
  }
}

int ref_logits(const struct ref_model *m, const int32_t *tokens, int n, double *logits,
               struct tm_err *err) {
  const int E = m->n_embd, H = m->n_head, HK = m->n_head_kv, HD = m->head_dim;
  const int NQ = H * HD, NK = HK * HD;
  const int FF = m->n_expert ? m->n_ff_exp : m->n_ff;
  const bool rnd = m->llamacpp_rounding;
  void (*norm)(const double *, const double *, double *, int, double) =
      rnd ? ref_rmsnorm_ggml : ref_rmsnorm;
  void (*rope)(double *, int, int, double, enum ref_rope) = rnd ? ref_rope_ggml : ref_rope;
  if (m->n_expert > 256 || m->n_expert_used > 64 || m->n_expert_used > m->n_expert)
    return tm_errf(err, "reference: %d experts / %d used is beyond its fixed buffers",
                   m->n_expert, m->n_expert_used);
  for (int t = 0; t < n; t++)
    if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
      return tm_errf(err, "reference: token %d at %d out of range [0, %d)", tokens[t], t,
                     m->n_vocab);
  size_t nn = (size_t)n;
  double *x = malloc(nn * E * sizeof *x), *h = malloc(nn * E * sizeof *h);
  double *q = malloc(nn * NQ * sizeof *q), *k = malloc(nn * NK * sizeof *k);
  double *v = malloc(nn * NK * sizeof *v), *att = malloc(nn * NQ * sizeof *att);
  double *o = malloc(nn * E * sizeof *o), *sc = malloc(nn * sizeof *sc);
  double *g = malloc(nn * FF * sizeof *g), *u = malloc(nn * FF * sizeof *u);
  double *d = malloc((size_t)E * sizeof *d), *qr = malloc((size_t)HD * sizeof *qr);
  int rc = 0;
  if (!x || !h || !q || !k || !v || !att || !o || !sc || !g || !u || !d || !qr) {
    rc = tm_errf(err, "reference: out of memory");
    goto done;
  }
  for (int t = 0; t < n; t++)
    memcpy(x + (size_t)t * E, m->tok_embd.d + (size_t)tokens[t] * E, E * sizeof *x);
  const double scale = 1.0 / sqrt((double)HD);
  for (int l = 0; l < m->n_layer; l++) {
    const struct ref_layer *L = &m->layers[l];
    for (int t = 0; t < n; t++)
      norm(x + (size_t)t * E, L->attn_norm, h + (size_t)t * E, E, m->eps);
    ref_matmul(m, L->wq, L->bq, h, q, n, E, NQ);
    ref_matmul(m, L->wk, L->bk, h, k, n, E, NK);
    ref_matmul(m, L->wv, L->bv, h, v, n, E, NK);
    for (int t = 0; t < n; t++) {
      for (int hh = 0; hh < H; hh++) {
        double *qh = q + (size_t)t * NQ + hh * HD;
        if (L->q_norm) norm(qh, L->q_norm, qh, HD, m->eps);
        rope(qh, m->n_rot, t, m->freq_base, m->rope);
      }
      for (int hh = 0; hh < HK; hh++) {
        double *kh = k + (size_t)t * NK + hh * HD;
        if (L->k_norm) norm(kh, L->k_norm, kh, HD, m->eps);
        rope(kh, m->n_rot, t, m->freq_base, m->rope);
      }
    }
    if (rnd) /* llama.cpp's KV cache is F16 */
      for (size_t i = 0; i < nn * NK; i++) {
        k[i] = ref_f16(k[i]);
        v[i] = ref_f16(v[i]);
      }
    /* causal GQA: query head hh reads KV head hh / (H / HK) */
    for (int t = 0; t < n; t++)
      for (int hh = 0; hh < H; hh++) {
        const int kvh = hh / (H / HK);
        const double *qh = q + (size_t)t * NQ + hh * HD;
        if (rnd) { /* Q meets F16 K: rounded to F16 */
          for (int i = 0; i < HD; i++) qr[i] = ref_f16(qh[i]);
          qh = qr;
        }
        double *ah = att + (size_t)t * NQ + hh * HD;
        if (rnd) {
          ref_attn_flash_f16(qh, k + kvh * HD, v + kvh * HD, NK, t + 1, HD, scale, ah);
          continue;
        }
        double mx = -INFINITY, sum = 0;
        for (int p = 0; p <= t; p++) {
          const double *kp = k + (size_t)p * NK + kvh * HD;
          double dot = 0;
          for (int i = 0; i < HD; i++) dot += qh[i] * kp[i];
          sc[p] = dot * scale;
          if (sc[p] > mx) mx = sc[p];
        }
        for (int p = 0; p <= t; p++) sum += (sc[p] = exp(sc[p] - mx));
        for (int i = 0; i < HD; i++) ah[i] = 0;
        for (int p = 0; p <= t; p++) {
          const double *vp = v + (size_t)p * NK + kvh * HD, w = sc[p] / sum;
          for (int i = 0; i < HD; i++) ah[i] += w * vp[i];
        }
      }
    ref_matmul(m, L->wo, NULL, att, o, n, NQ, E);
    for (size_t i = 0; i < nn * E; i++) x[i] += o[i];
    for (int t = 0; t < n; t++)
      norm(x + (size_t)t * E, L->ffn_norm, h + (size_t)t * E, E, m->eps);
    if (m->n_expert) {
      for (int t = 0; t < n; t++) ref_moe(m, L, h + (size_t)t * E, o + (size_t)t * E, g, u, d);
    } else {
      ref_swiglu(m, L->gate, L->up, L->down, 0, h, o, g, u, n, E, FF);
    }
    for (size_t i = 0; i < nn * E; i++) x[i] += o[i];
  }
  for (int t = 0; t < n; t++)
    norm(x + (size_t)t * E, m->out_norm, h + (size_t)t * E, E, m->eps);
  ref_matmul(m, m->output, NULL, h, logits, n, E, m->n_vocab);
done:
  free(x); free(h); free(q); free(k); free(v); free(att); free(o); free(sc);
  free(g); free(u); free(d); free(qr);
  return rc;
}

void ref_log_softmax(double *x, uint32_t n) {
  double mx = -INFINITY, sum = 0;
  for (uint32_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (uint32_t i = 0; i < n; i++) sum += exp(x[i] - mx);
  double lse = mx + log(sum);
  for (uint32_t i = 0; i < n; i++) x[i] -= lse;
}

/* ------------------------------------------------------------ fixtures -- */

static int ref_json_ids(json_t *arr, int32_t *out, int max, int *n_out) {
  if (!json_is_array(arr) || (int)json_array_size(arr) > max) return -1;
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    if (!json_is_integer(v)) return -1;
    out[i] = (int32_t)json_integer_value(v);
  }
  *n_out = (int)json_array_size(arr);
  return 0;
}

int ref_fixture_load(const char *json_path, struct ref_fixture *fx, struct tm_err *err) {
  memset(fx, 0, sizeof *fx);
  json_error_t je;
  json_t *root = json_load_file(json_path, 0, &je);
  if (!root) return tm_errf(err, "%s: line %d: %s", json_path, je.line, je.text);
  int rc = -1;
  const char *model = json_string_value(json_object_get(root, "model"));
  if (!model) {
    tm_errf(err, "%s: no 'model'", json_path);
    goto done;
  }
  snprintf(fx->model, sizeof fx->model, "%s", model);
  if (ref_json_ids(json_object_get(root, "prompt_tokens"), fx->prompt, 64, &fx->n_prompt) ||
      ref_json_ids(json_object_get(root, "generated_tokens"), fx->gen, 64, &fx->n_gen)) {
    tm_errf(err, "%s: bad prompt_tokens / generated_tokens", json_path);
    goto done;
  }
  json_t *cp = json_object_get(root, "completion_probabilities");
  if (!json_is_array(cp) || (int)json_array_size(cp) != fx->n_gen) {
    tm_errf(err, "%s: completion_probabilities should have %d entries", json_path, fx->n_gen);
    goto done;
  }
  for (int i = 0; i < fx->n_gen; i++) {
    json_t *top = json_object_get(json_array_get(cp, (size_t)i), "top_logprobs");
    if (!json_is_array(top) || json_array_size(top) != REF_FIX_TOP) {
      tm_errf(err, "%s: step %d: top_logprobs should have %d entries", json_path, i, REF_FIX_TOP);
      goto done;
    }
    for (int j = 0; j < REF_FIX_TOP; j++) {
      json_t *e = json_array_get(top, (size_t)j);
      json_t *id = json_object_get(e, "id"), *lp = json_object_get(e, "logprob");
      if (!json_is_integer(id) || !json_is_number(lp)) {
        tm_errf(err, "%s: step %d entry %d: bad id/logprob", json_path, i, j);
        goto done;
      }
      fx->top_id[i][j] = (int32_t)json_integer_value(id);
      fx->top_lp[i][j] = json_number_value(lp);
    }
  }
  rc = 0;
done:
  json_decref(root);
  return rc;
}

static int ref_name_cmp(const void *a, const void *b) { return strcmp(a, b); }

int ref_fixture_list(const char *dir, char names[][128], int max) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  static const char suffix[] = ".llama-cpp-reference.json";
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL && n < max) {
    size_t len = strlen(de->d_name), sl = sizeof suffix - 1;
    if (len > sl && len < 128 && !strcmp(de->d_name + len - sl, suffix))
      snprintf(names[n++], 128, "%s", de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], ref_name_cmp);
  return n;
}

int ref_fixture_tokens(const struct ref_fixture *fx, int32_t *out) {
  int n = 0;
  for (int i = 0; i < fx->n_prompt; i++) out[n++] = fx->prompt[i];
  for (int i = 0; i + 1 < fx->n_gen; i++) out[n++] = fx->gen[i];
  return n;
}

void ref_compare_fixture(const struct ref_fixture *fx, const double *lp, uint32_t n_vocab,
                         int n_steps, double margin, struct ref_cmp *out) {
  memset(out, 0, sizeof *out);
  out->first_mismatch_step = -1;
  for (int s = 0; s < n_steps && s < fx->n_gen; s++) {
    const double *row = lp + (size_t)s * n_vocab;
    for (int j = 0; j < REF_FIX_TOP; j++) {
      int32_t id = fx->top_id[s][j];
      double e = (id >= 0 && (uint32_t)id < n_vocab) ? fabs(row[id] - fx->top_lp[s][j]) : INFINITY;
      if (e > out->max_err) {
        out->max_err = e;
        out->max_err_step = s;
        out->max_err_id = id;
      }
    }
    if (fx->top_lp[s][0] - fx->top_lp[s][1] > margin) {
      out->n_clear++;
      uint32_t best = 0;
      for (uint32_t i = 1; i < n_vocab; i++)
        if (row[i] > row[best]) best = i;
      if ((int32_t)best != fx->top_id[s][0]) {
        if (out->first_mismatch_step < 0) out->first_mismatch_step = s;
        out->n_top_mismatch++;
      }
    }
  }
}
