/* image_cost: what a job's images cost a server, from its timed runs and the
 * one request of the same text without them (runner.h image_baseline):
 * prompt tokens with minus without (the server's own counts), per image, and
 * the prefill time they add: the runtime's prompt timer's difference where
 * both requests reported one, else the client TTFT's (which also holds the
 * first decode step and the network, equal on both sides to the noise). */
#ifndef TM_BENCH_IMAGE_COST_H
#define TM_BENCH_IMAGE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/runner.h"

struct image_cost {
  bool measured;            /* the job had images and a baseline was sent */
  uint32_t n_images;
  double tokens;            /* median prompt tokens with - without; NAN unknown */
  double tokens_per_image;  /* tokens / n_images */
  double prefill_ms;        /* the time they add; NAN unknown */
  const char *prefill_source; /* "server" (prompt timers), "ttft" (client), NULL */
};

void image_cost_of(const struct runner_workload_result *wr, struct image_cost *out);

#endif
