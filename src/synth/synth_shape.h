/* synth_shape: the shape `tokmeter synth` writes, from a preset (model/plan.h)
 * and the shape flags given on top of it, with the defaults --help and
 * docs/synth.md state:
 *  - without a preset, --arch, --layers, --n-embd, --heads, --vocab and
 *    --n-ff (qwen3moe: not --n-ff) are required; the output head is tied,
 *    the context 4096, rope base 10000 for llama and 1e6 otherwise, RMSNorm
 *    epsilon 1e-5 for llama and 1e-6 otherwise;
 *  - KV heads: the flag, else a preset's own when they still divide the
 *    heads, else the heads (plain multi-head);
 *  - head dimension: the flag, else a preset's own, else n_embd / heads,
 *    which must divide exactly;
 *  - every other field given replaces the preset's.
 * The result passes model_shape_validate. Pure: nothing is printed. */
#ifndef TM_SYNTH_SHAPE_H
#define TM_SYNTH_SHAPE_H

#include <stdint.h>

#include "model/shape.h"
#include "util/err.h"

/* Shape fields given on the command line: 0 (NULL) = not given. */
struct synth_shape_flags {
  const char *arch;
  uint32_t layers, embd, heads, kv_heads, head_dim, ff, vocab, experts, experts_used, expert_ff,
      ctx;
  int tied;          /* 1 tied, 0 untied, -1 not given */
  double rope, eps;  /* > 0 when given */
};

/* preset NULL: the shape from the flags alone. 0 with *out filled, or -1 with
 * err naming the flag that is missing or the field that is wrong (every
 * failure is the input's: exit 2 material). */
int synth_shape_build(const struct model_preset *preset, const struct synth_shape_flags *f,
                      struct model_shape *out, struct tm_err *err);

#endif
