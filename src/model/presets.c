/* presets: shapes of real models (from their published configs), and tiny ones
 * for tests. See shape.h. */
#include "model/shape.h"

#include <string.h>

static const struct model_preset presets[] = {
    {"tiny", "qwen3 shape, 2 layers, n_embd 64, vocab 512: 131k params, for tests",
     {"qwen3", 2, 64, 4, 2, 16, 192, 512, 0, 0, 0, true, 1e6f, 1e-6f, 4096}},
    {"tiny-llama", "llama shape, 2 layers, n_embd 64, vocab 512, untied: for tests",
     {"llama", 2, 64, 4, 2, 16, 192, 512, 0, 0, 0, false, 10000.0f, 1e-5f, 4096}},
    {"tiny-qwen2", "qwen2 shape (Q/K/V biases), 2 layers, n_embd 64: for tests",
     {"qwen2", 2, 64, 4, 2, 16, 192, 512, 0, 0, 0, true, 1e6f, 1e-6f, 4096}},
    {"tiny-moe", "qwen3moe shape, 2 layers, n_embd 64, 8 experts, 2 used: for tests",
     {"qwen3moe", 2, 64, 4, 2, 16, 192, 512, 8, 2, 32, true, 1e6f, 1e-6f, 4096}},
    {"qwen3-0.6b", "Qwen3-0.6B: 28 layers, n_embd 1024, 16/8 heads, head_dim 128, tied",
     {"qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 0, 0, 0, true, 1e6f, 1e-6f, 40960}},
    {"qwen3-1.7b", "Qwen3-1.7B: 28 layers, n_embd 2048, 16/8 heads, head_dim 128, tied",
     {"qwen3", 28, 2048, 16, 8, 128, 6144, 151936, 0, 0, 0, true, 1e6f, 1e-6f, 40960}},
    {"qwen3-4b", "Qwen3-4B: 36 layers, n_embd 2560, 32/8 heads, head_dim 128, tied",
     {"qwen3", 36, 2560, 32, 8, 128, 9728, 151936, 0, 0, 0, true, 1e6f, 1e-6f, 40960}},
    {"qwen3-8b", "Qwen3-8B: 36 layers, n_embd 4096, 32/8 heads, head_dim 128, untied",
     {"qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 0, 0, 0, false, 1e6f, 1e-6f, 40960}},
    {"llama-3.2-1b", "Llama-3.2-1B: 16 layers, n_embd 2048, 32/8 heads, head_dim 64, tied",
     {"llama", 16, 2048, 32, 8, 64, 8192, 128256, 0, 0, 0, true, 500000.0f, 1e-5f, 131072}},
    {"llama-3.2-3b", "Llama-3.2-3B: 28 layers, n_embd 3072, 24/8 heads, head_dim 128, tied",
     {"llama", 28, 3072, 24, 8, 128, 8192, 128256, 0, 0, 0, true, 500000.0f, 1e-5f, 131072}},
    {"qwen2.5-0.5b", "Qwen2.5-0.5B: 24 layers, n_embd 896, 14/2 heads, head_dim 64, tied",
     {"qwen2", 24, 896, 14, 2, 64, 4864, 151936, 0, 0, 0, true, 1e6f, 1e-6f, 32768}},
    {"qwen3-30b-a3b", "Qwen3-30B-A3B: 48 layers, n_embd 2048, 128 experts, 8 used, untied",
     {"qwen3moe", 48, 2048, 32, 4, 128, 6144, 151936, 128, 8, 768, false, 1e6f, 1e-6f, 40960}},
    /* No released model has this shape: a mixture of experts small enough
     * for a batch curve in minutes on a laptop (1.0 GiB at Q4_0), with the
     * routing of the large ones (8 of 64 experts per token). */
    {"moe-small", "qwen3moe shape, 16 layers, n_embd 1024, 64 experts, 8 used: 1.9B params, 0.45B active",
     {"qwen3moe", 16, 1024, 16, 8, 128, 3072, 151936, 64, 8, 512, true, 1e6f, 1e-6f, 40960}},
};

const struct model_preset *model_presets(size_t *count) {
  *count = sizeof presets / sizeof presets[0];
  return presets;
}

const struct model_preset *model_preset_find(const char *name) {
  size_t n;
  const struct model_preset *p = model_presets(&n);
  for (size_t i = 0; i < n; i++)
    if (strcmp(p[i].name, name) == 0) return &p[i];
  return NULL;
}

int model_shape_validate(const struct model_shape *s, struct tm_err *err) {
  static const char *const archs[] = {"llama", "qwen2", "qwen3", "qwen3moe"};
  int known = 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (strcmp(s->arch, archs[i]) == 0) known = 1;
  if (!known)
    return tm_errf(err, "unknown architecture '%s' (synth writes llama, qwen2, qwen3, qwen3moe)",
                   s->arch);
  if (!s->n_layer || !s->n_embd || !s->n_head || !s->n_head_kv || !s->head_dim || !s->n_vocab)
    return tm_errf(err, "layers, n_embd, heads, kv heads, head_dim and vocab must all be > 0");
  if (s->n_head % s->n_head_kv)
    return tm_errf(err, "heads (%u) must be a multiple of kv heads (%u)", s->n_head,
                   s->n_head_kv);
  /* RoPE rotates pairs of dimensions: llama.cpp and the engine refuse an odd
   * head (a file written with one would not run). */
  if (s->head_dim % 2)
    return tm_errf(err, "head dimension %u (%u heads, n_embd %u) must be even: RoPE rotates "
                   "pairs of dimensions", s->head_dim, s->n_head, s->n_embd);
  if (s->n_layer > 1024 || s->n_embd > 65536 || s->head_dim > 1024 || s->n_head > 1024 ||
      s->n_vocab > 4000000)
    return tm_errf(err, "shape too large (layers <= 1024, n_embd <= 65536, heads <= 1024, "
                        "head_dim <= 1024, vocab <= 4M)");
  int moe = strcmp(s->arch, "qwen3moe") == 0;
  if (moe) {
    if (!s->n_expert || !s->n_expert_used || !s->n_ff_exp)
      return tm_errf(err, "qwen3moe needs experts, experts used and expert n_ff > 0");
    if (s->n_expert_used > s->n_expert || s->n_expert > 1024)
      return tm_errf(err, "experts used (%u) must be <= experts (%u) <= 1024",
                     s->n_expert_used, s->n_expert);
  } else {
    if (s->n_expert)
      return tm_errf(err, "experts are only for qwen3moe (architecture %s is dense)", s->arch);
    if (!s->n_ff) return tm_errf(err, "n_ff must be > 0");
    if (s->n_ff > 1u << 20) return tm_errf(err, "n_ff too large (<= 1048576)");
  }
  if (!(s->rope_base > 0) || !(s->rms_eps > 0))
    return tm_errf(err, "rope base and rms epsilon must be > 0");
  return 0;
}
