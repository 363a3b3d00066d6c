/* records_bench: run / summary / end records. Contracts in records_bench.h;
 * every key and unit in docs/records.md. */
#include "record/keys.h"
#include "bench/records_bench.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define put record_json_set
#define num record_json_num
#define count record_json_count
#define str record_json_str

/* ms from ns, rounded to the microsecond: the clock's ns carry no meaning at
 * that scale in a network measurement, and the file stays readable. */
static double ms_of_ns(uint64_t ns) { return round((double)ns / 1e3) / 1e3; }

/* ms of t relative to base; NAN when t did not happen (0) or precedes base. */
static double rel_ms(uint64_t t, uint64_t base) {
  if (!t || !base || t < base) return NAN;
  return ms_of_ns(t - base);
}


static json_t *settings_copy(const void *settings) {
  return settings ? json_deep_copy((const json_t *)settings) : json_object();
}

/* {"server", "client", "headline", "source"} for one rate. */
static json_t *rate_json(double server, double client, double headline, const char *source) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_SERVER), num(server));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_CLIENT), num(client));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_HEADLINE), num(headline));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_SOURCE), str(source));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *segments_json(const struct decode_segment *seg, size_t n) {
  json_t *a = json_array();
  if (!a) return NULL;
  for (size_t i = 0; i < n && i < METRICS_MAX_SEGMENTS; i++) {
    json_t *e = json_object();
    int bad = !e;
    bad |= put(e, record_key_leaf(RK_SEGMENT_FROM), json_integer(seg[i].from));
    bad |= put(e, record_key_leaf(RK_SEGMENT_TO), json_integer(seg[i].to));
    bad |= put(e, record_key_leaf(RK_SEGMENT_TOK_S), num(seg[i].tok_s));
    if (bad) {
      json_decref(e);
      json_decref(a);
      return NULL;
    }
    if (json_array_append_new(a, e)) { /* append_new frees e on failure */
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

static json_t *percent_json(double prefill, double prefill_ceiling, double decode,
                            double decode_ceiling) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "prefill", num(record_percent_of(prefill, prefill_ceiling)));
  bad |= put(o, "decode", num(record_percent_of(decode, decode_ceiling)));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Failures by kind as {"http": 2, ...}; only kinds that happened. */
static json_t *failed_json(const uint32_t *by_kind) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  for (int k = 1; by_kind && k < RUN_ERR_COUNT; k++)
    if (by_kind[k]) bad |= put(o, run_error_name((enum run_error)k), json_integer(by_kind[k]));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* --------------------------------------------------------------- run --- */

static json_t *run_tokens(const struct run_result *r, const struct run_metrics *m) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_TOKENS_PROMPT), count(m->prompt_tokens));
  bad |= put(o, record_key_leaf(RK_TOKENS_CACHED), count(m->cached_tokens));
  bad |= put(o, record_key_leaf(RK_TOKENS_PROCESSED), count(m->prompt_processed));
  bad |= put(o, record_key_leaf(RK_TOKENS_COMPLETION), count(m->completion_tokens));
  bad |= put(o, "reasoning", count(m->reasoning_tokens));
  bad |= put(o, "reasoning_source", m->reasoning_tokens < 0 ? json_null()
                                    : json_string(m->reasoning_from_client ? "client" : "server"));
  bad |= put(o, record_key_leaf(RK_TOKENS_CLIENT_CHUNKS), json_integer(m->client_chunks));
  bad |= put(o, "client_answer_chunks", json_integer(m->client_answer_chunks));
  bad |= put(o, "client_reasoning_chunks", json_integer(m->client_reasoning_chunks));
  bad |= put(o, "text_bytes", json_integer((json_int_t)r->text_len));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *run_client(const struct run_result *r, const struct run_metrics *m) {
  json_t *o = json_object(), *arr = json_array(), *reas = json_array(), *toks = json_array();
  bool *is_reasoning = r->n_chunks ? calloc(r->n_chunks, sizeof *is_reasoning) : NULL;
  int bad = !o || !arr || !reas || !toks || (r->n_chunks && !is_reasoning);
  if (!bad && is_reasoning) metrics_classify_chunks(r, is_reasoning);
  /* Arrivals are relative to t_send (docs/design.md: every client time is). */
  uint64_t base = r->t_send_ns ? r->t_send_ns : r->t_start_ns;
  bool any_tokens = false;
  for (size_t i = 0; !bad && i < r->n_chunks; i++) {
    const struct run_chunk *c = &r->chunks[i];
    bad |= json_array_append_new(arr, num(rel_ms(c->t_ns, base))) != 0;
    if (is_reasoning[i]) bad |= json_array_append_new(reas, json_integer((json_int_t)i)) != 0;
    bad |= json_array_append_new(toks, json_integer(c->n_tokens)) != 0;
    if (c->n_tokens) any_tokens = true;
  }
  free(is_reasoning);
  if (!any_tokens) {
    json_decref(toks);
    toks = json_null();
  }
  if (bad) {
    json_decref(o);
    json_decref(arr);
    json_decref(reas);
    json_decref(toks);
    return NULL;
  }
  bad |= put(o, record_key_leaf(RK_CLIENT_TTFT_MS), num(m->ttft_ms));
  bad |= put(o, record_key_leaf(RK_CLIENT_LAST_MS), num(m->last_ms));
  bad |= put(o, record_key_leaf(RK_CLIENT_DECODE_SPAN_MS), num(m->decode_span_ms));
  bad |= put(o, record_key_leaf(RK_CLIENT_HEADERS_MS), num(rel_ms(r->t_headers_ns, base)));
  bad |= put(o, record_key_leaf(RK_CLIENT_END_MS), num(rel_ms(r->t_end_ns, base)));
  bad |= put(o, "connection_reused", json_boolean(r->connection_reused));
  bad |= put(o, record_key_leaf(RK_CLIENT_CONNECT_MS), r->connection_reused || !r->connect_ns ? json_null()
                                                                      : num(ms_of_ns(r->connect_ns)));
  bad |= put(o, record_key_leaf(RK_CLIENT_TLS_MS), r->connection_reused || !r->tls_ns ? json_null() : num(ms_of_ns(r->tls_ns)));
  bad |= put(o, "http_status", r->http_status ? json_integer(r->http_status) : json_null());
  bad |= put(o, "events", json_integer(r->n_events));
  bad |= put(o, "chunk_arrival_ms", arr);
  bad |= put(o, "reasoning_chunks", reas);
  bad |= put(o, record_key_leaf(RK_CLIENT_CHUNK_TOKENS), toks);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *s_to_ms(double s) { return num(isfinite(s) ? s * 1000.0 : NAN); }

static json_t *run_server(const struct run_result *r, const struct run_metrics *m) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_SERVER_PROMPT_MS), num(m->server_prompt_ms));
  bad |= put(o, record_key_leaf(RK_SERVER_PREDICTED_MS), num(m->server_predicted_ms));
  bad |= put(o, "load_ms", num(m->server_load_ms));
  bad |= put(o, "total_ms", num(r->ollama_total_ms));
  bad |= put(o, "cache_n", count(r->timings_cache_n));
  bad |= put(o, record_key_leaf(RK_SERVER_PROMPT_N), count(r->timings_prompt_n));
  bad |= put(o, record_key_leaf(RK_SERVER_PREDICTED_N), count(r->timings_predicted_n));
  bad |= put(o, "draft_n", count(r->draft_n));
  bad |= put(o, "draft_n_accepted", count(r->draft_n_accepted));
  bad |= put(o, "finish_reason", str(r->finish_reason));
  bad |= put(o, record_key_leaf(RK_SERVER_MODEL), str(r->server_model));
  bad |= put(o, "system_fingerprint", str(r->system_fingerprint));
  json_t *lm = json_null();
  if (isfinite(r->lmstudio_ttft_s) || isfinite(r->lmstudio_tok_s) ||
      isfinite(r->lmstudio_generation_s)) {
    json_decref(lm);
    lm = json_object();
    bad |= !lm;
    bad |= put(lm, "ttft_ms", s_to_ms(r->lmstudio_ttft_s));
    bad |= put(lm, "tok_s", num(r->lmstudio_tok_s));
    bad |= put(lm, "generation_ms", s_to_ms(r->lmstudio_generation_s));
  }
  bad |= put(o, record_key_leaf(RK_SERVER_LMSTUDIO), lm);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *run_error(const struct run_result *r) {
  if (r->error == RUN_OK) return json_null();
  char msg[sizeof r->error_msg];
  snprintf(msg, sizeof msg, "%s", r->error_msg);
  record_redact_secrets(msg, sizeof msg);
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "kind", json_string(run_error_name(r->error)));
  bad |= put(o, "message", json_string(msg));
  /* the plausibility rule broken (backend.h RUN_CHECKS), for inconsistent runs */
  bad |= put(o, "check", r->check != RUN_CHECK_NONE ? json_string(run_check_name(r->check))
                                                    : json_null());
  if (isfinite(r->retry_after_s)) bad |= put(o, "retry_after_s", json_real(r->retry_after_s));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *run_verdicts(const struct run_metrics *m) {
  json_t *a = json_array();
  if (!a) return NULL;
  int bad = 0;
  bad |= json_array_append_new(a, json_string(cache_verdict_name(m->cache))) != 0;
  bad |= json_array_append_new(a, json_string(stream_verdict_name(m->stream))) != 0;
  if (m->count_mismatch)
    bad |= json_array_append_new(a, json_string(RECORD_VERDICT_COUNT_MISMATCH)) != 0;
  if (m->reasoning_ate_budget)
    bad |= json_array_append_new(a, json_string(RECORD_VERDICT_REASONING_BUDGET)) != 0;
  if (m->prefill_excluded)
    bad |= json_array_append_new(a, json_string(RECORD_VERDICT_PREFILL_EXCLUDED)) != 0;
  if (bad) {
    json_decref(a);
    return NULL;
  }
  return a;
}

/* The answer check as recorded: its compared strings cut at
 * RECORD_ANSWER_MAX_BYTES (on a UTF-8 boundary, "..." after) and scrubbed of
 * anything shaped like a key, as error messages are. */
#define RECORD_ANSWER_MAX_BYTES 1000
static json_t *answer_for_record(const void *answer) {
  json_t *a = json_deep_copy(answer);
  static const char *const fields[] = {"answer", "expected"};
  for (size_t i = 0; a && i < 2; i++) {
    const char *v = json_string_value(json_object_get(a, fields[i]));
    if (!v) continue;
    char buf[RECORD_ANSWER_MAX_BYTES + 8];
    size_t n = strlen(v);
    if (n > RECORD_ANSWER_MAX_BYTES) {
      n = RECORD_ANSWER_MAX_BYTES;
      while (n > 0 && ((unsigned char)v[n] & 0xC0) == 0x80) n--; /* not inside a character */
      memcpy(buf, v, n);
      memcpy(buf + n, "...", 4);
    } else {
      memcpy(buf, v, n + 1);
    }
    record_redact_secrets(buf, sizeof buf);
    json_object_set_new(a, fields[i], json_string(buf));
  }
  return a;
}

void *record_run_build(const struct record_run_in *in, const struct run_result *r,
                       const struct run_metrics *m) {
  json_t *o = record_head_json("run", in->identity, NULL);
  if (!o) return NULL;
  char target[512];
  record_redact_url(in->target, target, sizeof target);
  const struct record_ceiling *c = in->ceiling;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_WORKLOAD), str(in->workload));
  bad |= put(o, record_key_leaf(RK_INDEX), json_integer(in->index));
  bad |= put(o, record_key_leaf(RK_WARMUP), json_boolean(in->warmup));
  bad |= put(o, record_key_leaf(RK_COLD), json_boolean(in->cold));
  bad |= put(o, record_key_leaf(RK_CALIBRATION), json_boolean(in->calibration));
  bad |= put(o, record_key_leaf(RK_BACKEND), str(in->backend));
  bad |= put(o, record_key_leaf(RK_TARGET), str(target));
  bad |= put(o, record_key_leaf(RK_MODEL), str(in->model));
  bad |= put(o, record_key_leaf(RK_SETTINGS), settings_copy(in->settings));
  bad |= put(o, record_key_leaf(RK_MAX_TOKENS), in->max_tokens ? json_integer(in->max_tokens) : json_null());
  bad |= put(o, record_key_leaf(RK_OK), json_boolean(m->ok && r->error == RUN_OK));
  bad |= put(o, "error", run_error(r));
  bad |= put(o, record_key_leaf(RK_TOKENS), run_tokens(r, m));
  bad |= put(o, record_key_leaf(RK_CLIENT), run_client(r, m));
  bad |= put(o, record_key_leaf(RK_SERVER), run_server(r, m));

  json_t *rates = json_object();
  bad |= !rates;
  bad |= put(rates, record_key_leaf(RK_RATES_PREFILL), rate_json(m->prefill_server, m->prefill_client,
                                               m->prefill_headline, m->prefill_source));
  bad |= put(rates, record_key_leaf(RK_RATES_DECODE), rate_json(m->decode_server, m->decode_client,
                                              m->decode_headline, m->decode_source));
  bad |= put(rates, record_key_leaf(RK_RATES_DECODE_BY_SEGMENT), segments_json(m->segments, m->n_segments));
  bad |= put(o, record_key_leaf(RK_RATES), rates);
  bad |= put(o, "ttft_gap_ms", num(m->ttft_gap_ms));

  json_t *stream = json_object();
  bad |= !stream;
  bad |= put(stream, "verdict", json_string(stream_verdict_name(m->stream)));
  bad |= put(stream, "tokens_per_chunk", num(m->tokens_per_chunk));
  bad |= put(stream, "median_gap_ms", num(m->median_gap_ms));
  bad |= put(stream, "max_gap_ms", num(m->max_gap_ms));
  bad |= put(o, "stream", stream);

  json_t *cache = json_object();
  bad |= !cache;
  bad |= put(cache, "verdict", json_string(cache_verdict_name(m->cache)));
  bad |= put(cache, record_key_leaf(RK_CACHE_PREFILL_EXCLUDED), json_boolean(m->prefill_excluded));
  bad |= put(o, record_key_leaf(RK_CACHE), cache);

  bad |= put(o, record_key_leaf(RK_CEILING), record_ceiling_json(c));
  bad |= put(o, record_key_leaf(RK_PERCENT_OF_CEILING),
             c ? percent_json(m->prefill_headline, c->prefill_ceiling_tok_s, m->decode_headline,
                              c->decode_ceiling_tok_s)
               : json_null());
  bad |= put(o, "verdicts", run_verdicts(m));
  /* a job with an expect: its answer's check (only there: absent, not null) */
  if (in->answer) bad |= put(o, "answer", answer_for_record(in->answer));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ----------------------------------------------------------- summary --- */


static json_t *rate_stats_json(const struct stats_summary *server,
                               const struct stats_summary *client,
                               const struct stats_summary *headline, const char *source,
                               const struct stats_drift *drift, bool drift_tested) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_SERVER), record_stats_json(server));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_CLIENT), record_stats_json(client));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_HEADLINE), record_stats_json(headline));
  bad |= put(o, record_key_leaf(RK_RATES_PREFILL_SOURCE), str(source));
  /* rule 11 on the headline's runs in order */
  bad |= put(o, "drift", record_drift_json(drift, drift_tested));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_summary_build(const char *identity, const struct bench_summary *s,
                           const void *settings, const struct record_ceiling *ceiling,
                           double cpu_steal_share) {
  json_t *o = record_head_json("summary", identity, NULL);
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_WORKLOAD), str(s->workload));
  bad |= put(o, record_key_leaf(RK_SETTINGS), settings_copy(settings));
  bad |= put(o, "n", json_integer(s->n_runs));
  bad |= put(o, "n_ok", json_integer(s->n_ok));
  bad |= put(o, record_key_leaf(RK_N_FAILED), json_integer(s->n_failed));
  bad |= put(o, "failed", failed_json(s->failed_by_kind));

  json_t *tokens = json_object();
  bad |= !tokens;
  bad |= put(tokens, record_key_leaf(RK_TOKENS_PROMPT), record_stats_json(&s->prompt_tokens));
  bad |= put(tokens, record_key_leaf(RK_TOKENS_PROCESSED), record_stats_json(&s->prompt_processed));
  bad |= put(tokens, record_key_leaf(RK_TOKENS_COMPLETION), record_stats_json(&s->completion_tokens));
  bad |= put(tokens, "reasoning", record_stats_json(&s->reasoning_tokens));
  bad |= put(o, record_key_leaf(RK_TOKENS), tokens);
  bad |= put(o, "ttft_ms", record_stats_json(&s->ttft_ms));
  bad |= put(o, "ttft_gap_ms", record_stats_json(&s->ttft_gap_ms));
  bad |= put(o, "server_prompt_ms", record_stats_json(&s->server_prompt_ms));

  json_t *rates = json_object();
  bad |= !rates;
  bad |= put(rates, record_key_leaf(RK_RATES_PREFILL), rate_stats_json(&s->prefill_server, &s->prefill_client,
                                                     &s->prefill_headline, s->prefill_source,
                                                     &s->prefill_drift,
                                                     s->prefill_drift_tested));
  bad |= put(rates, record_key_leaf(RK_RATES_DECODE), rate_stats_json(&s->decode_server, &s->decode_client,
                                                    &s->decode_headline, s->decode_source,
                                                    &s->decode_drift, s->decode_drift_tested));
  bad |= put(rates, record_key_leaf(RK_RATES_DECODE_BY_SEGMENT), segments_json(s->segments, s->n_segments));
  bad |= put(o, record_key_leaf(RK_RATES), rates);

  json_t *cold = json_null();
  if (isfinite(s->cold_ttft_ms) || isfinite(s->cold_load_ms)) {
    json_decref(cold);
    cold = json_object();
    bad |= !cold;
    bad |= put(cold, "ttft_ms", num(s->cold_ttft_ms));
    bad |= put(cold, "load_ms", num(s->cold_load_ms));
  }
  bad |= put(o, record_key_leaf(RK_COLD), cold);

  bad |= put(o, record_key_leaf(RK_CEILING), record_ceiling_json(ceiling));
  bad |= put(o, record_key_leaf(RK_PERCENT_OF_CEILING),
             ceiling ? percent_json(s->prefill_headline.n ? s->prefill_headline.median : NAN,
                                    ceiling->prefill_ceiling_tok_s,
                                    s->decode_headline.n ? s->decode_headline.median : NAN,
                                    ceiling->decode_ceiling_tok_s)
                     : json_null());
  bad |= put(o, "allow_cache", json_boolean(s->allow_cache));

  json_t *v = json_object();
  bad |= !v;
  bad |= put(v, cache_verdict_name(CACHE_HIT), json_integer(s->n_cache_hits));
  bad |= put(v, stream_verdict_name(STREAM_BUFFERED), json_integer(s->n_buffered));
  bad |= put(v, RECORD_VERDICT_COUNT_MISMATCH, json_integer(s->n_count_mismatch));
  bad |= put(v, RECORD_VERDICT_REASONING_BUDGET, json_integer(s->n_reasoning_ate_budget));
  bad |= put(o, "verdicts", v);
  bad |= put(o, "cpu_steal_share", num(cpu_steal_share));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* --------------------------------------------------------------- end --- */

void *record_end_build(const char *identity, const struct machine_thermal *thermal_after,
                       uint32_t runs, const uint32_t *failed_by_kind, bool interrupted,
                       double cpu_steal_share) {
  json_t *o = record_head_json("end", identity, NULL);
  if (!o) return NULL;
  uint32_t n_failed = 0;
  for (int k = 1; failed_by_kind && k < RUN_ERR_COUNT; k++) n_failed += failed_by_kind[k];
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_THERMAL_AFTER), record_thermal_json(thermal_after));
  bad |= put(o, record_key_leaf(RK_RUNS), json_integer(runs));
  bad |= put(o, record_key_leaf(RK_N_FAILED), json_integer(n_failed));
  bad |= put(o, "failed", failed_json(failed_by_kind));
  bad |= put(o, "interrupted", json_boolean(interrupted));
  bad |= put(o, "cpu_steal_share", num(cpu_steal_share));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}
