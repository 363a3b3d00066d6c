/* test_forward: the "neither vanish nor explode" check. A plain float64
 * reference forward pass (embedding, RMSNorm, NEOX RoPE, GQA attention with
 * Q/K norms and biases where the architecture has them, SwiGLU or top-k MoE,
 * output head) over a few tokens of synthesized models, read back from the file
 * and dequantized with the reference dequantizers. After every layer the
 * hidden state's RMS must stay within [1e-2, 1e2] of the embedding's, and the
 * logits must be finite with a spread of order 1. */
#include <stdlib.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "synth/synth.h"
#include "tm_test.h"
#include "util/fp16.h"

struct model {
  struct gguf_file *f;
  struct model_shape s;
};

/* A tensor as doubles (malloc'd), or NULL when missing. */
static double *load(const struct model *m, const char *name, uint64_t *n_out) {
  const struct gguf_tensor *t = gguf_find_tensor(m->f, name);
  if (!t) return NULL;
  uint64_t n = t->n_elements;
  float *tmp = malloc(n * sizeof *tmp);
  double *out = malloc(n * sizeof *out);
  if (!tmp || !out) abort();
  if (t->type == GGML_TYPE_F32)
    memcpy(tmp, t->data, n * sizeof(float));
  else if (t->type == GGML_TYPE_F16)
    for (uint64_t i = 0; i < n; i++) tmp[i] = tm_fp16_to_fp32(((const uint16_t *)t->data)[i]);
  else if (t->type == GGML_TYPE_BF16)
    for (uint64_t i = 0; i < n; i++) tmp[i] = tm_bf16_to_fp32(((const uint16_t *)t->data)[i]);
  else if (ggml_dequantize_ref(t->type, t->data, tmp, (int64_t)n) != 0)
    abort();
  for (uint64_t i = 0; i < n; i++) out[i] = tmp[i];
  free(tmp);
  if (n_out) *n_out = n;
  return out;
}

static double *load_l(const struct model *m, int l, const char *what) {
  char name[96];
  snprintf(name, sizeof name, "blk.%d.%s", l, what);
  return load(m, name, NULL);
}

/* y[out] = W x, W stored with rows of length in (ne = {in, out}). */
static void matvec(const double *w, const double *x, double *y, int in, int out) {
  for (int r = 0; r < out; r++) {
    double acc = 0;
    for (int i = 0; i < in; i++) acc += w[(size_t)r * in + i] * x[i];
    y[r] = acc;
  }
}

static void rmsnorm(const double *x, const double *w, double *y, int n, double eps) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double k = 1.0 / sqrt(ss / n + eps);
  for (int i = 0; i < n; i++) y[i] = x[i] * k * (w ? w[i] : 1.0);
}

static double rms(const double *x, int n) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  return sqrt(ss / n);
}

static void rope_neox(double *v, int hd, int pos, double base) {
  for (int i = 0; i < hd / 2; i++) {
    double th = pos * pow(base, -2.0 * i / hd), c = cos(th), s = sin(th);
    double a = v[i], b = v[i + hd / 2];
    v[i] = a * c - b * s;
    v[i + hd / 2] = a * s + b * c;
  }
}

static double silu(double x) { return x / (1 + exp(-x)); }

/* Runs n_tok tokens; checks as described at the top. */
static void check_forward(const char *label, const char *path, int n_tok) {
  struct tm_err err;
  struct model m;
  m.f = gguf_open(path, &err);
  CHECK_MSG(m.f != NULL, "%s: %s", label, m.f ? "" : err.msg);
  if (!m.f) return;
  char arch[24];
  gguf_get_str(m.f, "general.architecture", arch, sizeof arch, &err);
  const struct model_shape *s = &m.s;
  memset(&m.s, 0, sizeof m.s);
  char key[96];
  uint64_t v;
#define U(field, suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), \
                          gguf_get_u64(m.f, key, &v, NULL) == 0 ? (m.s.field = (uint32_t)v) : 0)
  U(n_layer, "block_count"); U(n_embd, "embedding_length"); U(n_head, "attention.head_count");
  U(n_head_kv, "attention.head_count_kv"); U(head_dim, "attention.key_length");
  U(n_ff, "feed_forward_length"); U(n_expert, "expert_count"); U(n_expert_used, "expert_used_count");
  U(n_ff_exp, "expert_feed_forward_length"); U(n_vocab, "vocab_size");
#undef U
  const int E = (int)s->n_embd, H = (int)s->n_head, HK = (int)s->n_head_kv, HD = (int)s->head_dim;
  const int V = (int)s->n_vocab, L = (int)s->n_layer, NQ = H * HD, NK = HK * HD;
  const int FF = s->n_expert ? (int)s->n_ff_exp : (int)s->n_ff;
  const double eps = 1e-6, base = 1e6;

  double *embd = load(&m, "token_embd.weight", NULL);
  double *out_w = load(&m, "output.weight", NULL);
  double *out_norm = load(&m, "output_norm.weight", NULL);
  double *kcache = calloc((size_t)L * n_tok * NK, sizeof(double));
  double *vcache = calloc((size_t)L * n_tok * NK, sizeof(double));
  double *x = calloc(E, sizeof *x), *h = calloc(E, sizeof *h), *q = calloc(NQ, sizeof *q);
  double *att = calloc(NQ, sizeof *att), *o = calloc(E, sizeof *o), *sc = calloc(n_tok, sizeof *sc);
  double *g = calloc(FF, sizeof *g), *u = calloc(FF, sizeof *u), *d = calloc(E, sizeof *d);
  double *logits = calloc(V, sizeof *logits);
  double worst_ratio_lo = 1e300, worst_ratio_hi = 0;
  int bad_logits = 0;
  double min_spread = 1e300, max_spread = 0;

  for (int t = 0; t < n_tok; t++) {
    int tok = (t * 7919 + 13) % V;
    memcpy(x, embd + (size_t)tok * E, E * sizeof *x);
    double rms0 = rms(x, E);
    for (int l = 0; l < L; l++) {
      double *an = load_l(&m, l, "attn_norm.weight"), *wq = load_l(&m, l, "attn_q.weight");
      double *wk = load_l(&m, l, "attn_k.weight"), *wv = load_l(&m, l, "attn_v.weight");
      double *wo = load_l(&m, l, "attn_output.weight"), *bq = load_l(&m, l, "attn_q.bias");
      double *bk = load_l(&m, l, "attn_k.bias"), *bv = load_l(&m, l, "attn_v.bias");
      double *qn = load_l(&m, l, "attn_q_norm.weight"), *kn = load_l(&m, l, "attn_k_norm.weight");
      double *kc = kcache + ((size_t)l * n_tok + t) * NK, *vc = vcache + ((size_t)l * n_tok + t) * NK;
      rmsnorm(x, an, h, E, eps);
      matvec(wq, h, q, E, NQ);
      matvec(wk, h, kc, E, NK);
      matvec(wv, h, vc, E, NK);
      for (int i = 0; bq && i < NQ; i++) q[i] += bq[i];
      for (int i = 0; bk && i < NK; i++) kc[i] += bk[i];
      for (int i = 0; bv && i < NK; i++) vc[i] += bv[i];
      for (int hh = 0; hh < H; hh++) {
        if (qn) rmsnorm(q + hh * HD, qn, q + hh * HD, HD, eps);
        rope_neox(q + hh * HD, HD, t, base);
      }
      for (int hh = 0; hh < HK; hh++) {
        if (kn) rmsnorm(kc + hh * HD, kn, kc + hh * HD, HD, eps);
        rope_neox(kc + hh * HD, HD, t, base);
      }
      for (int hh = 0; hh < H; hh++) {
        int kvh = hh / (H / HK);
        double mx = -1e300, sum = 0;
        for (int p = 0; p <= t; p++) {
          const double *kp = kcache + ((size_t)l * n_tok + p) * NK + kvh * HD;
          double dot = 0;
          for (int i = 0; i < HD; i++) dot += q[hh * HD + i] * kp[i];
          sc[p] = dot / sqrt((double)HD);
          if (sc[p] > mx) mx = sc[p];
        }
        for (int p = 0; p <= t; p++) sum += (sc[p] = exp(sc[p] - mx));
        for (int i = 0; i < HD; i++) {
          double acc = 0;
          for (int p = 0; p <= t; p++)
            acc += sc[p] / sum * vcache[((size_t)l * n_tok + p) * NK + kvh * HD + i];
          att[hh * HD + i] = acc;
        }
      }
      matvec(wo, att, o, NQ, E);
      for (int i = 0; i < E; i++) x[i] += o[i];
      free(an); free(wq); free(wk); free(wv); free(wo); free(bq); free(bk); free(bv);
      free(qn); free(kn);

      double *fn = load_l(&m, l, "ffn_norm.weight");
      rmsnorm(x, fn, h, E, eps);
      free(fn);
      if (!s->n_expert) {
        double *wg = load_l(&m, l, "ffn_gate.weight"), *wu = load_l(&m, l, "ffn_up.weight");
        double *wd = load_l(&m, l, "ffn_down.weight");
        matvec(wg, h, g, E, FF);
        matvec(wu, h, u, E, FF);
        for (int i = 0; i < FF; i++) g[i] = silu(g[i]) * u[i];
        matvec(wd, g, d, FF, E);
        for (int i = 0; i < E; i++) x[i] += d[i];
        free(wg); free(wu); free(wd);
      } else {
        const int NE = (int)s->n_expert, K = (int)s->n_expert_used;
        double *router = load_l(&m, l, "ffn_gate_inp.weight");
        double *wg = load_l(&m, l, "ffn_gate_exps.weight"), *wu = load_l(&m, l, "ffn_up_exps.weight");
        double *wd = load_l(&m, l, "ffn_down_exps.weight");
        double rl[1024], pr[1024], mx = -1e300, sum = 0;
        int used[1024] = {0};
        matvec(router, h, rl, E, NE);
        for (int e = 0; e < NE; e++) mx = rl[e] > mx ? rl[e] : mx;
        for (int e = 0; e < NE; e++) sum += (pr[e] = exp(rl[e] - mx));
        for (int e = 0; e < NE; e++) pr[e] /= sum;
        int top[64];
        double wsum = 0;
        for (int k = 0; k < K; k++) { /* top-k by probability */
          int best = -1;
          for (int e = 0; e < NE; e++)
            if (!used[e] && (best < 0 || pr[e] > pr[best])) best = e;
          used[best] = 1;
          top[k] = best;
          wsum += pr[best];
        }
        for (int k = 0; k < K; k++) { /* qwen3moe renormalizes the top-k weights */
          int e = top[k];
          matvec(wg + (size_t)e * E * FF, h, g, E, FF);
          matvec(wu + (size_t)e * E * FF, h, u, E, FF);
          for (int i = 0; i < FF; i++) g[i] = silu(g[i]) * u[i];
          matvec(wd + (size_t)e * E * FF, g, d, FF, E);
          for (int i = 0; i < E; i++) x[i] += pr[e] / wsum * d[i];
        }
        free(router); free(wg); free(wu); free(wd);
      }
      double ratio = rms(x, E) / rms0;
      if (ratio < worst_ratio_lo) worst_ratio_lo = ratio;
      if (ratio > worst_ratio_hi) worst_ratio_hi = ratio;
    }
    rmsnorm(x, out_norm, h, E, eps);
    matvec(out_w ? out_w : embd, h, logits, E, V);
    double mean = 0, var = 0;
    for (int i = 0; i < V; i++) {
      if (!isfinite(logits[i])) bad_logits++;
      mean += logits[i];
    }
    mean /= V;
    for (int i = 0; i < V; i++) var += (logits[i] - mean) * (logits[i] - mean);
    double spread = sqrt(var / V);
    if (spread < min_spread) min_spread = spread;
    if (spread > max_spread) max_spread = spread;
  }
  CHECK_MSG(worst_ratio_lo >= 1e-2 && worst_ratio_hi <= 1e2,
            "%s: hidden RMS / input RMS ranged over [%g, %g], outside [1e-2, 1e2]", label,
            worst_ratio_lo, worst_ratio_hi);
  CHECK_MSG(bad_logits == 0, "%s: %d non-finite logits", label, bad_logits);
  CHECK_MSG(min_spread > 0.1 && max_spread < 30, "%s: logit std over the vocabulary in [%g, %g]",
            label, min_spread, max_spread);
  free(embd); free(out_w); free(out_norm); free(kcache); free(vcache); free(x); free(h); free(q);
  free(att); free(o); free(sc); free(g); free(u); free(d); free(logits);
  gguf_close(m.f);
}

static void synth_and_check(const char *preset, int ftype, const struct model_shape *shape) {
  struct synth_options opt;
  synth_options_init(&opt);
  opt.shape = shape ? *shape : model_preset_find(preset)->shape;
  opt.ftype = ftype;
  opt.n_threads = 2;
  char name[96];
  snprintf(name, sizeof name, "%s-%s.gguf", preset, model_ftype_name(ftype));
  const char *path = tm_tmpfile(name);
  struct tm_err err;
  int rc = synth_write(&opt, path, NULL, NULL, NULL, &err);
  CHECK_MSG(rc == 0, "%s: %s", name, rc ? err.msg : "");
  if (rc == 0) check_forward(name, path, 6);
}

static void test_tiny_models(void) {
  synth_and_check("tiny", MODEL_FTYPE_Q8_0, NULL);
  synth_and_check("tiny", MODEL_FTYPE_F32, NULL);
  synth_and_check("tiny-moe", MODEL_FTYPE_Q4_K_M, NULL);
  synth_and_check("tiny-moe", MODEL_FTYPE_F16, NULL);
  synth_and_check("tiny-llama", MODEL_FTYPE_Q4_0, NULL);
  synth_and_check("tiny-qwen2", MODEL_FTYPE_Q5_1, NULL);
}

/* Depth is where vanishing or exploding shows: 24 layers, untied and tied. */
static void test_deep(void) {
  struct model_shape s = {"qwen3", 24, 128, 4, 2, 32, 384, 300, 0, 0, 0, true, 1e6f, 1e-6f, 4096};
  synth_and_check("deep-qwen3", MODEL_FTYPE_Q8_0, &s);
  struct model_shape u = {"llama", 24, 128, 4, 4, 32, 384, 300, 0, 0, 0, false, 1e6f, 1e-6f, 4096};
  synth_and_check("deep-llama-untied", MODEL_FTYPE_F16, &u);
}

void tm_run_tests(void) {
  TM_RUN(test_tiny_models);
  TM_RUN(test_deep);
}
