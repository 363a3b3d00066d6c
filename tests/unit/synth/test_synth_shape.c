/* test_synth_shape: a preset plus shape flags -> the shape synth writes
 * (synth_shape_build): fields given replace the preset's, the defaults
 * without a preset (llama's rope base and epsilon differ), KV heads and head
 * dimension defaults, and refusals naming the flag or field. */
#include <string.h>

#include "synth/synth_shape.h"
#include "tm_test.h"

static struct synth_shape_flags none(void) {
  struct synth_shape_flags f;
  memset(&f, 0, sizeof f);
  f.tied = -1;
  return f;
}

static void preset_with_overrides(void) {
  const struct model_preset *p = model_preset_find("qwen3-0.6b");
  CHECK(p != NULL);
  if (!p) return;
  struct synth_shape_flags f = none();
  struct model_shape s;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(synth_shape_build(p, &f, &s, &err), 0);
  CHECK(memcmp(&s, &p->shape, sizeof s) == 0); /* nothing given: the preset */
  f.layers = 1;
  f.vocab = 256;
  f.tied = 0;
  f.ctx = 1024;
  f.rope = 5000;
  CHECK_EQ_INT(synth_shape_build(p, &f, &s, &err), 0);
  CHECK_EQ_INT(s.n_layer, 1);
  CHECK_EQ_INT(s.n_vocab, 256);
  CHECK(!s.tied);
  CHECK_EQ_INT(s.n_ctx_train, 1024);
  CHECK_NEAR(s.rope_base, 5000, 0);
  CHECK_NEAR(s.rms_eps, 1e-6, 1e-12); /* the preset's */
  CHECK_EQ_INT(s.head_dim, 128);      /* the preset's, not 1024 / 16 = 64 */
  /* 6 heads: the preset's 8 KV heads no longer divide them -> 6 */
  f = none();
  f.heads = 6;
  CHECK_EQ_INT(synth_shape_build(p, &f, &s, &err), 0);
  CHECK_EQ_INT(s.n_head_kv, 6);
  /* 32 heads: the preset's 8 KV heads divide them and stay */
  f.heads = 32;
  CHECK_EQ_INT(synth_shape_build(p, &f, &s, &err), 0);
  CHECK_EQ_INT(s.n_head_kv, 8);
}

static void shape_from_flags(void) {
  struct synth_shape_flags f = none();
  f.arch = "llama";
  f.layers = 2;
  f.embd = 64;
  f.heads = 4;
  f.ff = 128;
  f.vocab = 256;
  struct model_shape s;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), 0);
  CHECK_STR(s.arch, "llama");
  CHECK_EQ_INT(s.n_head_kv, 4);  /* plain multi-head */
  CHECK_EQ_INT(s.head_dim, 16);  /* 64 / 4 */
  CHECK(s.tied);
  CHECK_EQ_INT(s.n_ctx_train, 4096);
  CHECK_NEAR(s.rope_base, 10000, 0); /* llama */
  CHECK_NEAR(s.rms_eps, 1e-5, 1e-12);
  f.arch = "qwen3";
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), 0);
  CHECK_NEAR(s.rope_base, 1e6, 0);
  CHECK_NEAR(s.rms_eps, 1e-6, 1e-12);
  /* qwen3moe needs no --n-ff, but its experts */
  f.arch = "qwen3moe";
  f.ff = 0;
  f.experts = 4;
  f.experts_used = 2;
  f.expert_ff = 32;
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), 0);
  CHECK_EQ_INT(s.n_expert, 4);
}

static void refusals(void) {
  struct synth_shape_flags f = none();
  struct model_shape s;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), -1);
  CHECK_STR(err.msg, "give --preset NAME or the shape (--arch is missing)");
  f.arch = "llama";
  f.layers = 2;
  f.embd = 64;
  f.heads = 4;
  f.vocab = 256;
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), -1);
  CHECK_STR(err.msg, "give --preset NAME or the shape (--n-ff is missing)");
  f.ff = 128;
  f.heads = 3;
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), -1);
  CHECK_STR(err.msg, "--n-embd 64 is not a multiple of --heads 3: give --head-dim, or heads "
                     "that divide n_embd");
  f.heads = 4;
  f.arch = "an-architecture-name-too-long";
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), -1);
  CHECK_CONTAINS(err.msg, "unknown architecture 'an-architecture-name-too-long'");
  /* model_shape_validate's own checks come through */
  f.arch = "llama";
  f.kv_heads = 3;
  CHECK_EQ_INT(synth_shape_build(NULL, &f, &s, &err), -1);
  CHECK_STR(err.msg, "heads (4) must be a multiple of kv heads (3)");
}

void tm_run_tests(void) {
  TM_RUN(preset_with_overrides);
  TM_RUN(shape_from_flags);
  TM_RUN(refusals);
}
