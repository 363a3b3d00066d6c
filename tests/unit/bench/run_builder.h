/* run_builder: runs (struct run_result) built by hand with exact arrival
 * times, for the metrics tests. A run_result as run_result_init leaves it is
 * built here, so these tests do not depend on the backend's code. Test-only
 * header: static inline helpers, included by each test file that needs them. */
#ifndef TM_TEST_RUN_BUILDER_H
#define TM_TEST_RUN_BUILDER_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"

#define BASE_NS 1000000000ull /* t_send; chunk times are ms after it */

/* A run_result as run_result_init leaves it (zero, counters -1, timers NAN). */
static inline void tr_init(struct run_result *r) {
  memset(r, 0, sizeof *r);
  r->t_start_ns = BASE_NS;
  r->t_send_ns = BASE_NS;
  r->connection_reused = true;
  r->prompt_tokens = r->cached_tokens = r->completion_tokens = r->reasoning_tokens = -1;
  r->timings_cache_n = r->timings_prompt_n = r->timings_predicted_n = -1;
  r->draft_n = r->draft_n_accepted = -1;
  r->timings_prompt_ms = r->timings_predicted_ms = NAN;
  r->ollama_load_ms = r->ollama_prompt_eval_ms = r->ollama_eval_ms = r->ollama_total_ms = NAN;
  r->lmstudio_ttft_s = r->lmstudio_tok_s = r->lmstudio_generation_s = NAN;
  r->error = RUN_OK;
}

static inline void tr_add(struct run_result *r, double t_ms, enum chunk_field field, const char *text,
                   uint32_t n_tokens) {
  size_t len = strlen(text);
  struct run_chunk *c = realloc(r->chunks, (r->n_chunks + 1) * sizeof *c);
  char *t = realloc(r->text, r->text_len + len + 1);
  if (!c || !t) abort(); /* a test helper: no memory is not a test result */
  r->chunks = c;
  r->text = t;
  memcpy(r->text + r->text_len, text, len + 1);
  c[r->n_chunks] = (struct run_chunk){.t_ns = BASE_NS + (uint64_t)llround(t_ms * 1e6),
                                      .field = (uint8_t)field,
                                      .n_tokens = n_tokens,
                                      .text_off = (uint32_t)r->text_len,
                                      .text_len = (uint32_t)len};
  r->n_chunks++;
  r->text_len += len;
}

/* n one-token content chunks, the first at t0_ms, then every dt_ms. */
static inline void tr_tokens(struct run_result *r, int n, double t0_ms, double dt_ms) {
  for (int i = 0; i < n; i++) tr_add(r, t0_ms + dt_ms * i, CHUNK_CONTENT, "w ", 0);
}

static inline void tr_free(struct run_result *r) {
  free(r->chunks);
  free(r->text);
  memset(r, 0, sizeof *r);
}

#endif
