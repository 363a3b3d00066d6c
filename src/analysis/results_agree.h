/* results_agree: whether one run record's figures agree with each other
 * (docs/records.md, "Reading"). Owns the identities between a run's counts,
 * times and rates; results.c owns the types and ranges, checked before this.
 *
 * A rate in a record is a count over a time the same record carries, so each
 * rate, its time and its count must satisfy rate x ms / 1000 = tokens. The
 * identities, exactly as tokmeter's writers compute them (src/bench/metrics.c,
 * engine_bench.c, import/import_llamabench.c):
 *   in-process ("test" pp<N> / tg<N>):
 *     tokens = N;  rate_tok_s x ms = tokens;
 *     each decode_by_segment entry with ms: tok_s x ms = to - from + 1
 *   server:
 *     tokens.processed = server.prompt_n (llama.cpp's own count) when present,
 *       else tokens.prompt - tokens.cached (cached null or negative = 0);
 *     rates.prefill_tok_s.server x server.prompt_ms = tokens.processed;
 *     rates.prefill_tok_s.client x client.ttft_ms = tokens.processed;
 *     rates.decode_tok_s.server x server.predicted_ms = server.predicted_n - 1
 *       (llama.cpp: its predicted_ms spans first to last token), else
 *       tokens.completion (Ollama's eval_count / eval_duration); not checked
 *       when server.lmstudio is an object (LM Studio's own tokens_per_second,
 *       over a span it does not state);
 *     rates.decode_tok_s.client x client.decode_span_ms = generated - 1, where
 *       generated is tokens.completion, or when null the client's count
 *       (client.chunk_tokens summed, 0 counting 1, else tokens.client_chunks);
 *     rates.*.headline = the figure its source ("server" / "client") names.
 *   Server decode_by_segment entries carry no time: not checked.
 * A figure that is null or absent (a blank, or a writer that keeps fewer keys)
 * leaves its identity unchecked; counts must be equal exactly; a rate, its
 * time and its count may differ by RESULTS_AGREE_TOL_REL of the count plus what
 * RESULTS_AGREE_TOL_MS of the time is worth at that rate. */
#ifndef TM_RESULTS_AGREE_H
#define TM_RESULTS_AGREE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* tokmeter's own records agree to 12 significant digits (JSON printing) and
 * a time rounded to the microsecond; 2% leaves room for records written by
 * hand or by other tools with rounded figures (a rate to 3 significant
 * digits, a time of 10 ms or more to 0.1 ms), and trips on any contradiction
 * of more than that. */
#define RESULTS_AGREE_TOL_REL 0.02
#define RESULTS_AGREE_TOL_MS 0.001

/* 0 when every identity above that the record's figures allow holds; -1 with
 * msg (one line, no file:line: "rate_tok_s 512 tok/s x ms 100 is 51.2 tokens,
 * not tokens 32 ...") naming the first that fails. in_process selects the
 * in-process identities. */
int results_run_agrees(json_t *run, bool in_process, char *msg, size_t cap);

#endif
