/* keys: the record keys that writers and readers share, in one table. Each
 * key is its dotted path from a record's root ("ceiling.bytes_per_token");
 * writers set its last part (record_key_leaf) in the object they build,
 * readers look the whole path up (record_get and its typed forms). A key
 * renamed here is renamed for both; a key misspelled at a use does not
 * compile. docs/records.md says what each one means; a key's meaning never
 * changes without a new schema.
 *
 * Also here: rule 5's constant (the fewest generated tokens that give a
 * decode rate), which every writer of a rate and every reader obeys. */
#ifndef TM_RECORD_KEYS_H
#define TM_RECORD_KEYS_H

#include <jansson.h>
#include <stdbool.h>

/* Rule 5 (docs/design.md): below this many generated tokens a decode has no
 * rate (null in the records; the times stay). */
#define RECORD_MIN_DECODE_TOKENS 24

/* X(id, dotted path) */
#define RECORD_KEYS(X)                                                \
  X(RK_RECORD, "record")                                              \
  X(RK_SCHEMA, "schema")                                              \
  X(RK_IDENTITY, "identity")                                          \
  X(RK_COMMAND, "command")                                            \
  X(RK_BACKEND, "backend")                                            \
  X(RK_TARGET, "target")                                              \
  X(RK_WORKLOAD, "workload")                                          \
  X(RK_TEST, "test")                                                  \
  X(RK_THREADS, "threads")                                            \
  X(RK_DEPTH, "depth")                                                \
  X(RK_PHASE, "phase")                                                \
  X(RK_INDEX, "index")                                                \
  X(RK_OK, "ok")                                                      \
  X(RK_WARMUP, "warmup")                                              \
  X(RK_COLD, "cold")                                                  \
  X(RK_CALIBRATION, "calibration")                                    \
  X(RK_MAX_TOKENS, "max_tokens")                                      \
  X(RK_RUNS, "runs")                                                  \
  X(RK_FINDINGS, "findings")                                          \
  X(RK_MODEL, "model")                                                \
  X(RK_MODEL_NAME, "model.name")                                      \
  X(RK_MODEL_FILE, "model.file")                                      \
  X(RK_MODEL_ARCH, "model.arch")                                      \
  X(RK_MODEL_TYPE, "model.type")                                      \
  X(RK_MODEL_BYTES_PER_TOKEN, "model.bytes_per_token")                \
  X(RK_MODEL_LOAD_MS, "model.load_ms")                                \
  X(RK_MACHINE, "machine")                                            \
  X(RK_MACHINE_CPU, "machine.cpu")                                    \
  X(RK_MACHINE_GPU, "machine.gpu")                                    \
  X(RK_MACHINE_CORES, "machine.cores")                                \
  X(RK_SETTINGS, "settings")                                          \
  X(RK_SETTINGS_MAX_TOKENS, "settings.max_tokens")                    \
  X(RK_SETTINGS_PROMPT_TOKENS, "settings.prompt_tokens")              \
  X(RK_SETTINGS_PROMPT_TOKENS_TARGET, "settings.prompt_tokens_target") \
  X(RK_SETTINGS_JOB, "settings.job")                                  \
  X(RK_TOKENS, "tokens")                                              \
  X(RK_TOKENS_PROMPT, "tokens.prompt")                                \
  X(RK_TOKENS_PROCESSED, "tokens.processed")                          \
  X(RK_TOKENS_COMPLETION, "tokens.completion")                        \
  X(RK_TOKENS_CACHED, "tokens.cached")                                \
  X(RK_TOKENS_CLIENT_CHUNKS, "tokens.client_chunks")                  \
  X(RK_CLIENT, "client")                                              \
  X(RK_CLIENT_TTFT_MS, "client.ttft_ms")                              \
  X(RK_CLIENT_LAST_MS, "client.last_ms")                              \
  X(RK_CLIENT_DECODE_SPAN_MS, "client.decode_span_ms")                \
  X(RK_CLIENT_HEADERS_MS, "client.headers_ms")                        \
  X(RK_CLIENT_END_MS, "client.end_ms")                                \
  X(RK_CLIENT_CONNECT_MS, "client.connect_ms")                        \
  X(RK_CLIENT_TLS_MS, "client.tls_ms")                                \
  X(RK_CLIENT_CHUNK_TOKENS, "client.chunk_tokens")                    \
  X(RK_SERVER, "server")                                              \
  X(RK_SERVER_MODEL, "server.model")                                  \
  X(RK_SERVER_PROMPT_N, "server.prompt_n")                            \
  X(RK_SERVER_PROMPT_MS, "server.prompt_ms")                          \
  X(RK_SERVER_PREDICTED_N, "server.predicted_n")                      \
  X(RK_SERVER_PREDICTED_MS, "server.predicted_ms")                    \
  X(RK_SERVER_LMSTUDIO, "server.lmstudio")                            \
  X(RK_RATES, "rates")                                                \
  X(RK_RATES_PREFILL, "rates.prefill_tok_s")                          \
  X(RK_RATES_PREFILL_SERVER, "rates.prefill_tok_s.server")            \
  X(RK_RATES_PREFILL_CLIENT, "rates.prefill_tok_s.client")            \
  X(RK_RATES_PREFILL_HEADLINE, "rates.prefill_tok_s.headline")        \
  X(RK_RATES_PREFILL_SOURCE, "rates.prefill_tok_s.source")            \
  X(RK_RATES_DECODE, "rates.decode_tok_s")                            \
  X(RK_RATES_DECODE_SERVER, "rates.decode_tok_s.server")              \
  X(RK_RATES_DECODE_CLIENT, "rates.decode_tok_s.client")              \
  X(RK_RATES_DECODE_HEADLINE, "rates.decode_tok_s.headline")          \
  X(RK_RATES_DECODE_SOURCE, "rates.decode_tok_s.source")              \
  X(RK_RATES_DECODE_BY_SEGMENT, "rates.decode_by_segment")            \
  X(RK_CACHE, "cache")                                                \
  X(RK_CACHE_PREFILL_EXCLUDED, "cache.prefill_excluded")              \
  X(RK_CEILING, "ceiling")                                            \
  X(RK_CEILING_TOK_S, "ceiling.ceiling_tok_s")                        \
  X(RK_CEILING_DECODE_TOK_S, "ceiling.decode_ceiling_tok_s")          \
  X(RK_CEILING_PREFILL_TOK_S, "ceiling.prefill_ceiling_tok_s")        \
  X(RK_CEILING_READ_BANDWIDTH, "ceiling.read_bandwidth_bytes_s")      \
  X(RK_CEILING_BYTES_PER_TOKEN, "ceiling.bytes_per_token")            \
  X(RK_CEILING_FLOPS_PER_TOKEN, "ceiling.flops_per_token")            \
  X(RK_CEILING_COMPUTE_OPS, "ceiling.compute_ops_s")                  \
  X(RK_RATE_TOK_S, "rate_tok_s")                                      \
  X(RK_RATE_TOK_S_MEDIAN, "rate_tok_s.median")                        \
  X(RK_PERCENT_OF_CEILING, "percent_of_ceiling")                      \
  X(RK_DECODE_BY_SEGMENT, "decode_by_segment")                        \
  X(RK_THERMAL_BEFORE, "thermal_before")                              \
  X(RK_THERMAL_AFTER, "thermal_after")                                \
  X(RK_MS, "ms")                                                      \
  X(RK_TIME, "time")                                                  \
  X(RK_N_FAILED, "n_failed")                                          \
  /* inside an entry of a decode_by_segment list */                   \
  X(RK_SEGMENT_FROM, "from")                                          \
  X(RK_SEGMENT_TO, "to")                                              \
  X(RK_SEGMENT_TOK_S, "tok_s")                                        \
  /* inside an entry of a thermal reading's temps list */             \
  X(RK_TEMP_CELSIUS, "celsius")                                       \
  /* inside an entry of a findings list (bench/findings.h) */         \
  X(RK_FINDING_CODE, "code")                                          \
  X(RK_FINDING_SEVERITY, "severity")                                  \
  X(RK_FINDING_CONFIG, "config")                                      \
  X(RK_FINDING_FIGURES, "figures")                                    \
  X(RK_FINDING_BRIEF, "brief")                                        \
  X(RK_FINDING_TEXT, "text")

enum record_key {
#define RECORD_KEY_ENUM(id, path) id,
  RECORD_KEYS(RECORD_KEY_ENUM)
#undef RECORD_KEY_ENUM
  RK_COUNT
};

/* The metrics a series of runs holds (analysis/series.h), one table: name
 * (as report's CSV and compare's JSON print it), quantity (docs/design.md:
 * PF prefill rate, DC decode rate, FX fixed costs) and unit. A metric in ms
 * is better lower, one in tok/s higher. X(id, name, quantity, unit) */
#define RECORD_METRICS(X)                                             \
  X(METRIC_PREFILL_TOK_S, "prefill_tok_s", "PF", "tok/s")             \
  X(METRIC_PREFILL_MS, "prefill_ms", "FX", "ms")                      \
  X(METRIC_DECODE_TOK_S, "decode_tok_s", "DC", "tok/s")               \
  X(METRIC_DECODE_MS, "decode_ms", "FX", "ms")                        \
  X(METRIC_DECODE_TOK_S_CLIENT, "decode_tok_s_client", "DC", "tok/s") \
  X(METRIC_TTFT_MS, "ttft_ms", "FX", "ms")                            \
  X(METRIC_COLD_TTFT_MS, "cold_ttft_ms", "FX", "ms")

enum record_metric {
#define RECORD_METRIC_ENUM(id, name, quantity, unit) id,
  RECORD_METRICS(RECORD_METRIC_ENUM)
#undef RECORD_METRIC_ENUM
  METRIC_COUNT
};

const char *record_metric_name(enum record_metric m);     /* "decode_tok_s" */
const char *record_metric_quantity(enum record_metric m); /* "DC" */
const char *record_metric_unit(enum record_metric m);     /* "tok/s" */
bool record_metric_lower_is_better(enum record_metric m); /* a time */
/* The metric of that name; METRIC_COUNT when none. */
enum record_metric record_metric_from_name(const char *name);

/* The dotted path from the record's root ("ceiling.bytes_per_token"). */
const char *record_key(enum record_key k);
/* Its last part ("bytes_per_token"): the key a writer sets in the object
 * that the path's earlier parts name. */
const char *record_key_leaf(enum record_key k);

/* Lookups by key in a parsed record (rec may be NULL). record_get: the
 * value or NULL; record_num: NAN when absent, null or not a number;
 * record_str: NULL when absent or not a string; record_int: def when absent
 * or not an integer; record_true: the value is JSON true. */
json_t *record_get(const json_t *rec, enum record_key k);
/* The same walk for a dotted path not in the table (tests reading a record
 * independently of it, an analysis of keys a runtime reports); NULL when a
 * part is missing or not an object. */
json_t *record_get_path(const json_t *rec, const char *dotted);
double record_num(const json_t *rec, enum record_key k);
const char *record_str(const json_t *rec, enum record_key k);
long long record_int(const json_t *rec, enum record_key k, long long def);
bool record_true(const json_t *rec, enum record_key k);

#endif
