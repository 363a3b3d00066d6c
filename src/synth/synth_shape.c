/* synth_shape: a preset plus shape flags -> the shape to write; see
 * synth_shape.h for the defaults. */
#include "synth/synth_shape.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int synth_shape_build(const struct model_preset *preset, const struct synth_shape_flags *f,
                      struct model_shape *out, struct tm_err *err) {
  struct model_shape *s = out;
  if (preset) {
    *s = preset->shape;
  } else {
    memset(s, 0, sizeof *s);
    const char *missing = !f->arch ? "--arch" : !f->layers ? "--layers" : !f->embd ? "--n-embd"
                        : !f->heads ? "--heads" : !f->vocab ? "--vocab" : NULL;
    if (!missing && !f->ff && !(f->arch && strcmp(f->arch, "qwen3moe") == 0)) missing = "--n-ff";
    if (missing) return tm_errf(err, "give --preset NAME or the shape (%s is missing)", missing);
    s->tied = true;
    s->n_ctx_train = 4096;
  }
  if (f->arch) {
    if (strlen(f->arch) >= sizeof s->arch)
      return tm_errf(err, "unknown architecture '%s' (llama, qwen2, qwen3, qwen3moe)", f->arch);
    snprintf(s->arch, sizeof s->arch, "%s", f->arch);
  }
  bool llama = strcmp(s->arch, "llama") == 0;
  if (!preset) {
    s->rope_base = llama ? 10000.0f : 1e6f;
    s->rms_eps = llama ? 1e-5f : 1e-6f;
  }
  if (f->layers) s->n_layer = f->layers;
  if (f->embd) s->n_embd = f->embd;
  if (f->heads) s->n_head = f->heads;
  if (f->kv_heads)
    s->n_head_kv = f->kv_heads;
  else if (!preset || (s->n_head_kv && s->n_head % s->n_head_kv != 0))
    s->n_head_kv = s->n_head;
  if (f->head_dim) {
    s->head_dim = f->head_dim;
  } else if (!preset) {
    /* The default must be exact: 64 / 3 heads is not a head of 21. */
    if (s->n_head && s->n_embd % s->n_head)
      return tm_errf(err, "--n-embd %u is not a multiple of --heads %u: give --head-dim, or "
                     "heads that divide n_embd", s->n_embd, s->n_head);
    s->head_dim = s->n_head ? s->n_embd / s->n_head : 0;
  }
  if (f->ff) s->n_ff = f->ff;
  if (f->vocab) s->n_vocab = f->vocab;
  if (f->experts) s->n_expert = f->experts;
  if (f->experts_used) s->n_expert_used = f->experts_used;
  if (f->expert_ff) s->n_ff_exp = f->expert_ff;
  if (f->tied >= 0) s->tied = f->tied;
  if (f->rope > 0) s->rope_base = (float)f->rope;
  if (f->eps > 0) s->rms_eps = (float)f->eps;
  if (f->ctx) s->n_ctx_train = f->ctx;
  return model_shape_validate(s, err);
}
