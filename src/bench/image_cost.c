/* image_cost: see image_cost.h. */
#include "bench/image_cost.h"

#include <math.h>
#include <string.h>

void image_cost_of(const struct runner_workload_result *wr, struct image_cost *out) {
  memset(out, 0, sizeof *out);
  out->tokens = out->tokens_per_image = out->prefill_ms = NAN;
  const struct wl_job *j = wr->workload.job;
  if (!wr->image_baseline || !j || j->n_images == 0) return;
  out->measured = true;
  out->n_images = (uint32_t)j->n_images;
  const struct bench_summary *s = &wr->summary;
  if (wr->baseline_prompt_tokens >= 0 && isfinite(s->prompt_tokens.median)) {
    out->tokens = s->prompt_tokens.median - (double)wr->baseline_prompt_tokens;
    out->tokens_per_image = out->tokens / out->n_images;
  }
  if (isfinite(wr->baseline_prompt_ms) && isfinite(s->server_prompt_ms.median)) {
    out->prefill_ms = s->server_prompt_ms.median - wr->baseline_prompt_ms;
    out->prefill_source = "server";
  } else if (isfinite(wr->baseline_ttft_ms) && isfinite(s->ttft_ms.median)) {
    out->prefill_ms = s->ttft_ms.median - wr->baseline_ttft_ms;
    out->prefill_source = "ttft";
  }
}
