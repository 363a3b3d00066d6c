/* test_ceiling_batch: the aggregate decode ceiling of B streams
 * (model/ceiling.h ceiling_batch): at B = 1 the single-stream ceiling;
 * dense weights read once per step, each stream's KV apart; a
 * mixture-of-experts model's routed experts as their expected union,
 * E x (1 - (1 - k/E)^B); the compute bound past the turn; no compute rate,
 * the memory bound alone. */
#include <math.h>
#include <string.h>

#include "gguf/ggml_types.h"
#include "model/analysis.h"
#include "model/ceiling.h"
#include "tm_test.h"

static struct model_cost preset(const char *name) {
  struct model_cost c;
  struct tm_err err = {{0}};
  char type[32];
  CHECK_EQ_INT(model_cost_from_preset(name, "Q4_0", GGML_TYPE_F16, &c, type, sizeof type, &err), 0);
  return c;
}

static void test_dense(void) {
  struct model_cost c = preset("qwen3-0.6b");
  CHECK(c.routed_expert_bytes == 0 && c.n_expert == 0);
  struct ceiling_rates r = {.read_bw_bytes_s = 40e9, .f32_flops = 1e11, .int8_ops = 2e12};
  struct ceiling_batch_point p1, p8;
  ceiling_batch(&c, &r, 1, 512, &p1);
  /* B = 1: bandwidth over one token's bytes, as every decode ceiling */
  CHECK_NEAR(p1.aggregate_decode_tok_s, 40e9 / model_decode_bytes_at_depth(&c, 512), 1e-6);
  CHECK_STR(p1.bound, "memory");
  ceiling_batch(&c, &r, 8, 512, &p8);
  const double kv = model_decode_bytes_at_depth(&c, 512) - c.weight_bytes_per_token;
  CHECK_NEAR(p8.bytes_per_step, c.weight_bytes_per_token + 8 * kv, 1);
  CHECK_NEAR(p8.flops_per_step, 8 * model_decode_flops_at_depth(&c, 512), 1);
  CHECK_NEAR(p8.per_stream_decode_tok_s * 8, p8.aggregate_decode_tok_s, 1e-9);
  /* at depth 512 every stream's own KV (F16: 58 MB) outweighs the shared
   * weights: 8 streams gain far less than 8x, and stay memory bound */
  CHECK(p8.aggregate_decode_tok_s < 5 * p1.aggregate_decode_tok_s);
  CHECK_STR(p8.bound, "memory");
  CHECK_EQ_INT(ceiling_batch_turn(&c, &r, 512, 4096), 0);
  /* at depth 0 the weights are read once for all: nearly 8x */
  ceiling_batch(&c, &r, 1, 0, &p1);
  ceiling_batch(&c, &r, 8, 0, &p8);
  CHECK(p8.aggregate_decode_tok_s > 7.9 * p1.aggregate_decode_tok_s);
  /* the turn: the first batch whose step is compute bound, its neighbour not */
  uint32_t turn = ceiling_batch_turn(&c, &r, 0, 4096);
  CHECK(turn > 1);
  struct ceiling_batch_point a, b;
  ceiling_batch(&c, &r, turn - 1, 0, &a);
  ceiling_batch(&c, &r, turn, 0, &b);
  CHECK_STR(a.bound, "memory");
  CHECK_STR(b.bound, "compute");
  CHECK_NEAR(b.aggregate_decode_tok_s, turn / b.compute_s, 1e-6);
  /* no compute rate: the memory bound alone, and no turn */
  struct ceiling_rates mem = {.read_bw_bytes_s = 40e9};
  ceiling_batch(&c, &mem, 64, 512, &a);
  CHECK(isnan(a.compute_s) && !strcmp(a.bound, "memory") && a.compute_path == NULL);
  CHECK_EQ_INT(ceiling_batch_turn(&c, &mem, 512, 4096), 0);
  /* no bandwidth: no ceiling */
  struct ceiling_rates none = {0};
  ceiling_batch(&c, &none, 4, 0, &a);
  CHECK(isnan(a.aggregate_decode_tok_s));
}

static void test_moe_union(void) {
  struct model_cost c = preset("tiny-moe");
  CHECK_EQ_INT(c.n_expert, 8);
  CHECK_EQ_INT(c.n_expert_used, 2);
  CHECK(c.routed_expert_bytes > 0);
  struct ceiling_rates r = {.read_bw_bytes_s = 1e9};
  const double kv = model_decode_bytes_at_depth(&c, 0) - c.weight_bytes_per_token;
  const double dense = c.weight_bytes_per_token - c.routed_expert_bytes * 2 / 8;
  for (uint32_t b = 1; b <= 33; b += 4) {
    struct ceiling_batch_point p;
    ceiling_batch(&c, &r, b, 0, &p);
    const double touched = 1 - pow(1 - 2.0 / 8, b);
    CHECK_NEAR(p.bytes_per_step, dense + c.routed_expert_bytes * touched + b * kv, 1e-6);
  }
  /* B = 1 reads k of E; many streams read nearly every expert */
  struct ceiling_batch_point one, many;
  ceiling_batch(&c, &r, 1, 0, &one);
  ceiling_batch(&c, &r, 64, 0, &many);
  CHECK_NEAR(one.bytes_per_step, c.weight_bytes_per_token + kv, 1e-6);
  CHECK(many.bytes_per_step - 64 * kv < dense + c.routed_expert_bytes + 1);
  CHECK(many.bytes_per_step - 64 * kv > dense + 0.99 * c.routed_expert_bytes);
}

void tm_run_tests(void) {
  TM_RUN(test_dense);
  TM_RUN(test_moe_union);
}
