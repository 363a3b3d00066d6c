/* test_depth_averages: the per-token costs every ceiling of a run at depth is
 * built from (bench in-process, bench --url, import): decode bytes averaged
 * over the depths a run's tokens are generated at, and prefill FLOPs of a
 * prompt read after `depth` tokens of context, where a windowed layer's
 * attention stops growing at the window. Worked out by hand from docs/design.md
 * "The ceiling" (attention at depth d: 2 x n_head x (k + v) x d per layer;
 * a windowed layer sees min(d, window)).
 *
 * The model: 4 layers of 2 heads, 1 KV head, k = v = 8, window 100 on layers
 * 0-2, layer 3 full; one F32 weight of 32 x 16 (2048 bytes, 512 parameters),
 * no output head. Per layer: KV 1 x 16 x 2 bytes = 32 bytes per token,
 * attention 2 x 2 x 16 = 64 FLOPs per token of depth; layers: 2 x 512 = 1024
 * FLOPs per token. */
#include <string.h>

#include "gguf/ggml_types.h"
#include "model/analysis.h"
#include "tm_test.h"

static int make(struct model_desc *d, struct model_cost *c) {
  if (model_desc_init(d, 4, NULL) != 0) return -1;
  strcpy(d->arch, "gemma3");
  d->key_length = d->value_length = 8;
  d->sliding_window = 100;
  for (int il = 0; il < 4; il++) {
    d->n_head[il] = 2;
    d->n_head_kv[il] = 1;
    d->layer_kind[il] = il < 3 ? MODEL_LAYER_ATTN_SWA : MODEL_LAYER_ATTN;
  }
  uint64_t ne[4] = {32, 16, 1, 1};
  CHECK(model_desc_add_tensor(d, "blk.0.attn_q.weight", 2, ne, GGML_TYPE_F32, NULL) == 0);
  return model_analyze(d, NULL, c, NULL);
}

/* Decode over depths 90..109 (20 tokens): full layer 32 x mean(90..109) =
 * 32 x 99.5 = 3184; windowed 3 x 32 = 96 x mean(min(d, 100)) = 96 x
 * (90 + ... + 99 + 10 x 100) / 20 = 96 x 97.25 = 9336; weights 2048:
 * 14568 bytes per token. */
static void decode_bytes_over_a_run(void) {
  struct model_desc d;
  struct model_cost c;
  CHECK(make(&d, &c) == 0);
  CHECK_NEAR(model_decode_bytes_mean(&c, 90, 20), 2048 + 3184 + 9336, 1e-9);
  /* one token at depth 90: 2048 + 128 x 90 */
  CHECK_NEAR(model_decode_bytes_mean(&c, 90, 1), 2048 + 128 * 90.0, 1e-9);
  CHECK_NEAR(model_decode_bytes_mean(&c, 90, 0), 2048 + 128 * 90.0, 1e-9); /* 0 counts as 1 */
  /* depths 0..127 (tg128): full 32 x 63.5 = 2032; windowed 96 x (0 + ... + 99
   * + 28 x 100) / 128 = 96 x 7750 / 128 = 5812.5 */
  CHECK_NEAR(model_decode_bytes_mean(&c, 0, 128), 2048 + 2032 + 5812.5, 1e-9);
  model_desc_free(&d);
}

/* Prefill of L tokens after d: a token at d + t attends to d + t tokens
 * (full) and min(d + t, 100) (windowed); averaged over t in [0, L). */
static void prefill_at_depth(void) {
  struct model_desc d;
  struct model_cost c;
  CHECK(make(&d, &c) == 0);
  /* L 50 after 20: inside the window, both average 20 + 25 = 45:
   * 1024 + 4 layers x 64 x 45 = 12544 */
  CHECK_NEAR(model_prefill_flops_at_depth(&c, 50, 20), 12544, 1e-9);
  /* L 50 after 200: full 225, windowed capped at 100:
   * 1024 + 64 x 225 + 3 x 64 x 100 = 34624 */
  CHECK_NEAR(model_prefill_flops_at_depth(&c, 50, 200), 34624, 1e-9);
  /* L 100 after 60: full 60 + 50 = 110; windowed: 40 tokens below the window
   * (depths 60..100, mean 80), then 60 at 100: (40 x 80 + 60 x 100) / 100 =
   * 92. 1024 + 64 x 110 + 192 x 92 = 25728. (Adding the cap of the context
   * before, min(60, 100), to the empty-cache mean 50 would count 110 for the
   * windowed layers too: 29184, attention the window never holds.) */
  CHECK_NEAR(model_prefill_flops_at_depth(&c, 100, 60), 25728, 1e-9);
  /* from an empty cache it is the empty-cache figure: L 400, full 200,
   * windowed 100 - 100^2 / 800 = 87.5 */
  CHECK_NEAR(model_prefill_flops_at_depth(&c, 400, 0), 1024 + 64 * 200 + 192 * 87.5, 1e-9);
  CHECK_NEAR(model_prefill_flops_per_token(&c, 400), 1024 + 64 * 200 + 192 * 87.5, 1e-9);
  model_desc_free(&d);
}

void tm_run_tests(void) {
  TM_RUN(decode_bytes_over_a_run);
  TM_RUN(prefill_at_depth);
}
