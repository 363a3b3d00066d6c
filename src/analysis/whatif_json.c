/* whatif_json: the --json documents of `tokmeter whatif` (keys: docs/whatif.md),
 * built from what whatif.c computed. Nothing is computed here beyond the sweep's
 * floor and largest speedup (whatif_limit_s, whatif_max_speedup), and nothing is
 * printed: the caller dumps the object (JSON_INDENT(2) | JSON_REAL_PRECISION(10)).
 *
 * Numbers are reals throughout; a figure that is not finite (unknown, or a
 * speedup with nothing to compare against) is null (record_json_num). */
#include <jansson.h>
#include <math.h>

#include "analysis/whatif.h"
#include "record/record.h"

/* Sets key on obj; 1 when the value or the set failed (value stolen). */
static int put(json_t *obj, const char *key, json_t *value) {
  return record_json_set(obj, key, value);
}

static json_t *inputs_json(const struct whatif_job *job, double baseline_tok_s) {
  json_t *in = json_object(), *steps = json_array();
  int bad = !in || !steps;
  bad |= put(in, "gen_tokens", json_real(job->gen_tokens));
  bad |= put(in, "read_tokens", json_real(job->read_tokens));
  bad |= put(in, "items", json_real(job->items));
  bad |= put(in, "concurrency", json_real(job->concurrency));
  bad |= put(in, "prefill_tok_s", record_json_num(job->prefill_tok_s));
  bad |= put(in, "prefill_ratio",
             job->prefill_ratio > 0 ? json_real(job->prefill_ratio) : json_null());
  bad |= put(in, "baseline_tok_s", json_real(baseline_tok_s));
  for (size_t i = 0; i < job->n_steps && steps; i++) {
    const struct whatif_step *st = &job->steps[i];
    json_t *s = json_pack("{s:s,s:f,s:s}", "name", st->name, "seconds", st->seconds, "per",
                          st->per_item ? "item" : "job");
    bad |= !s || json_array_append_new(steps, s) != 0;
  }
  bad |= put(in, "steps", steps);
  if (bad) {
    json_decref(in);
    return NULL;
  }
  return in;
}

static json_t *row_json(const struct whatif_row *r) {
  json_t *row = json_object();
  int bad = !row;
  bad |= put(row, "rate_tok_s", json_real(r->rate_tok_s));
  bad |= put(row, "aggregate_tok_s", json_real(r->aggregate_tok_s));
  bad |= put(row, "prefill_tok_s", record_json_num(r->prefill_tok_s));
  bad |= put(row, "waves", json_real(r->waves));
  bad |= put(row, "read_s", json_real(r->read_s));
  bad |= put(row, "generate_s", json_real(r->generate_s));
  bad |= put(row, "item_steps_s", json_real(r->item_steps_s));
  bad |= put(row, "job_steps_s", json_real(r->job_steps_s));
  bad |= put(row, "total_s", json_real(r->total_s));
  bad |= put(row, "speedup", record_json_num(r->speedup));
  bad |= put(row, "fixed_share", record_json_num(r->fixed_share));
  bad |= put(row, "generate_share", record_json_num(r->generate_share));
  if (bad) {
    json_decref(row);
    return NULL;
  }
  return row;
}

json_t *whatif_sweep_json(const struct whatif_job *job, const struct whatif_row *base,
                          const struct whatif_row *rows, size_t n_rows) {
  json_t *root = json_object(), *arr = json_array();
  int bad = !root || !arr;
  bad |= put(root, "inputs", inputs_json(job, base->rate_tok_s));
  for (size_t i = 0; i < n_rows && arr; i++) {
    json_t *row = row_json(&rows[i]);
    bad |= !row || json_array_append_new(arr, row) != 0;
  }
  bad |= put(root, "rows", arr);
  double limit = whatif_limit_s(job);
  bad |= put(root, "limit_s", json_real(limit));
  bad |= put(root, "max_speedup", record_json_num(whatif_max_speedup(job, base->total_s)));
  if (bad) {
    json_decref(root);
    return NULL;
  }
  return root;
}

json_t *whatif_claim_json(const char *claim, const struct whatif_claim_in *in,
                          const struct whatif_claim_out *c) {
  json_t *root = json_object(), *at = json_array();
  int bad = !root || !at;
  bad |= put(root, "claim", json_string(claim));
  bad |= put(root, "value", json_real(in->value));
  bad |= put(root, "context",
             json_pack("{s:f,s:f,s:f,s:o,s:o}", "tokens", c->context_tokens, "prompt_tokens",
                       in->prompt_tokens, "prompts", c->context_prompts, "prefill_tok_s",
                       record_json_num(in->prefill_tok_s), "fill_s",
                       record_json_num(c->context_fill_s)));
  bad |= put(root, "prefill", json_pack("{s:f,s:f}", "prompt_tokens", in->prompt_tokens,
                                        "prompt_s", c->prefill_prompt_s));
  bad |= put(root, "decode",
             json_pack("{s:f,s:f,s:f,s:o,s:o}", "answer_tokens", in->answer_tokens, "answer_s",
                       c->decode_answer_s, "token_s", c->decode_token_s, "bytes_per_token",
                       record_json_num(in->bytes_per_token), "bandwidth_bytes_s",
                       record_json_num(c->decode_bandwidth_bytes_s)));
  for (size_t i = 0; i < c->n_at && at; i++) {
    json_t *s = json_pack("{s:f,s:f,s:f}", "streams", c->at[i].streams, "per_stream_tok_s",
                          c->at[i].per_stream_tok_s, "answer_s", c->at[i].answer_s);
    bad |= !s || json_array_append_new(at, s) != 0;
  }
  bad |= put(root, "aggregate", at);
  if (bad) {
    json_decref(root);
    return NULL;
  }
  return root;
}
