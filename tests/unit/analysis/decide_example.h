/* decide_example: docs/decide.md's worked example as decide inputs, shared by
 * the decide tests (test_decide.c works it through, test_decide_edges.c
 * changes one input at a time). Test-only header. */
#ifndef TM_TEST_DECIDE_EXAMPLE_H
#define TM_TEST_DECIDE_EXAMPLE_H

#include <math.h>

#include "analysis/decide.h"

/* 1000-token prompt, 201-token answer, 1000 requests a day. Device: 500 tok/s
 * prefill, 20 tok/s decode, 5 s load, 100 W at 0.30 per kWh, 1500 of hardware
 * over 1095 days. API: 0.1 s round trip + 0.4 s TTFT, 50 tok/s, 1 / 4 per
 * million input / output tokens. */
static inline struct decide_inputs example(void) {
  struct decide_inputs in = {
      .prompt_tokens = 1000, .output_tokens = 201, .requests_per_day = 1000,
      .dev_prefill_tok_s = 500, .dev_decode_tok_s = 20, .dev_overhead_s = 0,
      .dev_load_s = 5, .dev_stays_warm = true, .dev_watts = 100, .kwh_price = 0.30,
      .dev_hw_price = 1500, .dev_lifetime_days = 1095,
      .api_rtt_s = 0.1, .api_ttft_s = 0.4, .api_prefill_tok_s = NAN, .api_decode_tok_s = 50,
      .price_in_per_m = 1.0, .price_out_per_m = 4.0};
  return in;
}

#endif
