/* fp16/bf16 conversions: exact values, rounding ties to even, specials, and a
 * full sweep of every half value through f32 and back. */
#include <stdint.h>
#include <string.h>

#include "tm_test.h"
#include "util/fp16.h"

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void exact_values(void) {
  CHECK_EQ_INT(tm_fp32_to_fp16(1.0f), 0x3c00);
  CHECK_EQ_INT(tm_fp32_to_fp16(-2.0f), 0xc000);
  CHECK_EQ_INT(tm_fp32_to_fp16(65504.0f), 0x7bff);
  CHECK_EQ_INT(tm_fp32_to_fp16(0.0f), 0x0000);
  CHECK_EQ_INT(tm_fp32_to_fp16(-0.0f), 0x8000);
  CHECK_EQ_INT(tm_fp32_to_fp16(5.9604645e-8f), 0x0001); /* smallest subnormal */
  CHECK_NEAR(tm_fp16_to_fp32(0x3555), 0.333251953125, 0);
  CHECK_NEAR(tm_fp16_to_fp32(0x0001), 5.9604644775390625e-8, 0);
}

static void rounding_and_specials(void) {
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1. */
  CHECK_EQ_INT(tm_fp32_to_fp16(1.0f + 1.0f / 2048), 0x3c00);
  /* 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9: -> even 0x3c02. */
  CHECK_EQ_INT(tm_fp32_to_fp16(1.0f + 3.0f / 2048), 0x3c02);
  CHECK_EQ_INT(tm_fp32_to_fp16(65520.0f), 0x7c00); /* rounds to inf */
  CHECK_EQ_INT(tm_fp32_to_fp16(1e10f), 0x7c00);
  CHECK_EQ_INT(tm_fp32_to_fp16(-1e10f), 0xfc00);
  CHECK_EQ_INT(tm_fp32_to_fp16(bits_f(0x7f800000u)), 0x7c00);
  uint16_t nan = tm_fp32_to_fp16(bits_f(0x7fc00000u));
  CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x03ff) != 0);
  CHECK(isnan(tm_fp16_to_fp32(0x7e00)));
  CHECK(isinf(tm_fp16_to_fp32(0x7c00)));
}

static void every_half_round_trips(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
    if (tm_fp32_to_fp16(tm_fp16_to_fp32((uint16_t)h)) != h) bad++;
  }
  CHECK_EQ_INT(bad, 0);
}

static void bf16(void) {
  CHECK_EQ_INT(tm_fp32_to_bf16(1.0f), 0x3f80);
  CHECK_NEAR(tm_bf16_to_fp32(0x3f80), 1.0, 0);
  /* 1 + 2^-8 is halfway between bf16 neighbours 1 and 1+2^-7: ties to even. */
  CHECK_EQ_INT(tm_fp32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  CHECK_EQ_INT(tm_fp32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  uint16_t nan = tm_fp32_to_bf16(bits_f(0x7f800001u));
  CHECK((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
}

void tm_run_tests(void) {
  TM_RUN(exact_values);
  TM_RUN(rounding_and_specials);
  TM_RUN(every_half_round_trips);
  TM_RUN(bf16);
}
