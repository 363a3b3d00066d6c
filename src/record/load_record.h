/* load_record: the JSON of a load level's figures and of one request's
 * sample (docs/records.md "load" and "request"), written by `tokmeter load`
 * and read back by `report` to merge the shards of one run. The two sides
 * share this file so the merge reads exactly what the run wrote.
 *
 * A request record's "load" object holds the sample as the run judged it:
 * level (index), shard (index or null), sched_unix / send_unix / end_unix
 * (wall-clock seconds), ok, error (kind name or null), cache_hit, buffered,
 * token_by_token, short_decode, implausible, ttft_ms, ttfat_ms,
 * decode_tok_s, tpot_ms, e2e_ms, queue_ms, prompt_processed,
 * prompt_reported, tokens, chunk_us (each text chunk's arrival, whole
 * microseconds after send_unix). */
#ifndef TM_RECORD_LOAD_RECORD_H
#define TM_RECORD_LOAD_RECORD_H

#include <jansson.h>

#include "stats/load_window.h"

/* The sample's object; times in x are seconds on a clock that is the wall
 * clock minus unix_offset (x->t + unix_offset = unix seconds). error_name:
 * the kind's name (NULL when ok). shard < 0: null. */
json_t *record_load_sample_json(const struct load_sample *x, double unix_offset, int level,
                                int shard, const char *error_name);

/* Parses a "load" object back (times as unix seconds). The chunk times are
 * malloc'd into *chunks (the caller frees; x->chunk_t points at them);
 * *error_name borrows the kind's name (NULL when ok), *level the level
 * index. 0, or -1 with what is wrong in why (a key missing or of the wrong
 * type). */
int record_load_sample_parse(json_t *o, struct load_sample *x, double **chunks,
                             const char **error_name, int *level, char *why, size_t why_len);

/* Sets the figures' keys on a level record: window_s, requests_ok,
 * requests_failed, failed (by kind: names[k] for kind k, NULL names
 * skipped), requests_per_s, aggregate_output_tok_s, aggregate_prompt_tok_s,
 * output_tokens_in_window, prompt_tokens_in_window, the distributions
 * (ttft_sched_ms null in closed loop), cache_hits, buffered, short_decode,
 * implausible, client_chunks, server_tokens, late_sends, max_send_lag_ms,
 * behind_schedule, slo_met_share, goodput_req_s, goodput_tok_s and slo_met
 * (null without objectives). */
void record_load_figures_put(json_t *o, const struct load_figures *f, bool open_loop,
                             bool slo_set, const char *const names[LOAD_ERROR_KINDS]);

/* A distribution as its object (null when empty). */
json_t *record_load_dist_json(const struct load_dist *d);

#endif
