/* backend: runs ONE request against a server and hands back what happened.
 *
 * This is the only place that knows HTTP, SSE/NDJSON framing and each API's
 * JSON dialect. It does no statistics, no verdicts, no retries: method (warm-up,
 * nonces, cache checks, rates) lives in src/bench/ and is shared by every
 * backend. A backend records raw facts:
 *   - t_send_ns: when the request was handed to the connection (after any
 *     connect/TLS handshake, which is reported apart in connect_ns/tls_ns);
 *   - every streamed event's arrival time, taken (CLOCK_MONOTONIC) in the
 *     receive callback when its bytes arrive, BEFORE any parsing; the event
 *     completed by a buffer of bytes gets that buffer's arrival time;
 *   - the generated text pieces with the field they came in (content vs
 *     reasoning_content/reasoning), as the server sent them (inline <think>
 *     tags are NOT interpreted here);
 *   - the server's own counters and timers, exactly as reported (-1 / NAN when
 *     absent: never guessed);
 *   - on failure, a kind and a one-line message (HTTP bodies' error messages
 *     included). A failed run still carries whatever arrived before the failure.
 * Secrets: the API key is sent as a header and never copied into a result,
 * message, or log. */
#ifndef TM_BACKEND_H
#define TM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The API family (--api) and, within it, the endpoint used. */
enum api_family {
  API_AUTO = 0,  /* detect by probing the server */
  API_OPENAI,    /* OpenAI-compatible: llama.cpp, vLLM, LM Studio, MLX, hosted APIs */
  API_OLLAMA,    /* Ollama native (NDJSON) */
  API_LLAMACPP,  /* llama.cpp native /completion (SSE) */
};

enum api_endpoint {
  ENDPOINT_CHAT = 0,   /* /v1/chat/completions, /api/chat */
  ENDPOINT_COMPLETION, /* /v1/completions, /api/generate, /completion */
};

const char *api_family_name(enum api_family f);      /* "openai" ... */
int api_family_from_name(const char *s);             /* -1 when unknown */

/* What to send. Strings are borrowed for the duration of the call. */
/* One earlier turn of a chat (a workload file's system message, examples). */
struct backend_message {
  const char *role;          /* "system", "user", "assistant" */
  const char *content;
};

struct backend_request {
  const char *model;         /* served model name; NULL/"" = let the server pick */
  const char *prompt;        /* the user message (chat) or the prompt (completion) */
  /* Turns before the prompt's (chat: sent as messages; completion: their
   * contents put before the prompt, a blank line apart). n_history 0: none. */
  const struct backend_message *history;
  size_t n_history;
  /* Images attached to the prompt's turn after its text (so the nonce, the
   * text's first words, comes first): data:...;base64, or http(s):// URLs.
   * OpenAI chat sends image_url content parts, Ollama the base64 in
   * "images" (it takes no URLs); completion endpoints refuse them. */
  const char *const *images;
  size_t n_images;
  uint32_t max_tokens;       /* max_tokens / n_predict / num_predict */
  bool exact_length;         /* ask for exactly max_tokens where the API allows it
                                (ignore_eos, min_tokens, Ollama num_predict) */
  bool stream;               /* always true for measurements; false for helpers */
  bool unload_after;         /* Ollama keep_alive: 0 (cold measurements) */
  uint32_t seed;             /* sent where supported; temperature is always 0 */
  uint32_t num_thread;       /* Ollama options.num_thread; 0 = server default */
  double idle_timeout_s;     /* max gap between received bytes (default 60) */
  double total_timeout_s;    /* max for the whole request (default 600) */
};

enum chunk_field {
  CHUNK_CONTENT = 0,   /* answer text (may contain inline <think> tags) */
  CHUNK_REASONING = 1, /* reasoning_content / reasoning / Ollama message.thinking */
};

/* One streamed event that carried generated text (non-empty). */
struct run_chunk {
  uint64_t t_ns;       /* arrival of the bytes that completed this event */
  uint8_t field;       /* enum chunk_field */
  uint32_t n_tokens;   /* tokens the event says it carries, when it says
                          (llama.cpp native "tokens" array length), else 0 */
  uint32_t text_off;   /* into run_result.text */
  uint32_t text_len;
};

enum run_error {
  RUN_OK = 0,
  RUN_ERR_CONNECT,          /* connection refused, unreachable */
  RUN_ERR_DNS,              /* host name not resolved */
  RUN_ERR_TLS,              /* handshake or certificate failure */
  RUN_ERR_HTTP,             /* 4xx/5xx (message from the body) */
  RUN_ERR_CONTEXT_OVERFLOW, /* the prompt does not fit the server's context */
  RUN_ERR_STREAM,           /* an error event inside a 200 stream */
  RUN_ERR_MALFORMED,        /* unparseable JSON / framing */
  RUN_ERR_NO_USAGE,         /* stream ended without the final counters */
  RUN_ERR_IDLE_TIMEOUT,     /* the server stopped sending */
  RUN_ERR_TIMEOUT,          /* the whole request took too long */
  RUN_ERR_INTERRUPTED,      /* Ctrl-C */
  RUN_ERR_OTHER,
  RUN_ERR_INCOMPLETE,       /* the stream ended (or the connection was cut)
                               before the dialect's terminal event: [DONE] or a
                               finish_reason (OpenAI), done:true (Ollama),
                               stop:true (llama.cpp native) */
  RUN_ERR_INCONSISTENT,     /* the server's counters or timers are impossible
                               (a dialect: a usage count that is no number of
                               tokens) or contradict each other or what the
                               client saw (the method, src/bench/metrics.c);
                               run_result.check names the rule broken */
  RUN_ERR_COUNT
};

/* The plausibility rules a server's figures are held to (issue 31): which one
 * an RUN_ERR_INCONSISTENT run broke. The names are finding codes and the
 * record's error.check; docs/bench.md lists them. */
#define RUN_CHECKS(X)                                                                      \
  X(RUN_CHECK_NONE, "")                                                                  \
  X(RUN_CHECK_IMPOSSIBLE_COUNT, "impossible_count")   /* negative, fractional, absurd */    \
  X(RUN_CHECK_ABOVE_MAX_TOKENS, "count_above_max_tokens") /* > max_tokens + 1 */           \
  X(RUN_CHECK_CACHED_ABOVE_PROMPT, "cached_above_prompt")                                  \
  X(RUN_CHECK_PROMPT_COUNT_OFF, "prompt_count_off")   /* far from the tokenizer's count */ \
  X(RUN_CHECK_COUNTS_DISAGREE, "counts_disagree")     /* timings.*_n vs usage */           \
  X(RUN_CHECK_PIECES_ABOVE_COUNT, "pieces_above_count") /* more streamed pieces */         \
  X(RUN_CHECK_COUNT_ABOVE_TEXT, "count_above_text")   /* more tokens than bytes */         \
  X(RUN_CHECK_TIMER_NOT_DURATION, "timer_not_duration")                                    \
  X(RUN_CHECK_TIMER_BEYOND_CLOCK, "timer_beyond_clock") /* longer than the client saw */   \
  X(RUN_CHECK_TIMER_BELOW_STREAM, "timer_below_stream") /* too short for the stream */
enum run_check {
#define RUN_CHECK_ENUM(e, name) e,
  RUN_CHECKS(RUN_CHECK_ENUM)
#undef RUN_CHECK_ENUM
  RUN_CHECK_COUNT
};
/* The rule's name ("impossible_count"...); "" for RUN_CHECK_NONE. */
const char *run_check_name(enum run_check c);
/* "connect", "dns", "tls", "http", "context-overflow", "stream-error",
 * "malformed", "no-usage", "idle-timeout", "timeout", "interrupted", "other",
 * "incomplete", "inconsistent". */
const char *run_error_name(enum run_error e);

struct run_result {
  /* Time, CLOCK_MONOTONIC ns. 0 = did not happen. */
  uint64_t t_start_ns;       /* the call began (before any connect) */
  uint64_t t_send_ns;        /* request handed to the (kept-alive) connection */
  uint64_t t_headers_ns;     /* response headers complete */
  uint64_t t_end_ns;         /* transfer finished or failed */
  bool connection_reused;    /* false: a fresh connect (+TLS) happened, below */
  uint64_t connect_ns;       /* TCP connect duration of a fresh connection */
  uint64_t tls_ns;           /* TLS handshake duration (https, fresh) */
  int http_status;           /* 0 when no response */

  /* Streamed events. */
  uint32_t n_events;         /* every event/line received, text-bearing or not */
  size_t n_chunks;
  struct run_chunk *chunks;  /* text-bearing events, in arrival order (owned) */
  char *text;                /* all text pieces back to back (owned) */
  size_t text_len;

  /* Counters the server reported; -1 = not reported. */
  int64_t prompt_tokens;     /* usage.prompt_tokens, Ollama prompt_eval_count,
                                llama.cpp native tokens_evaluated */
  int64_t cached_tokens;     /* usage.prompt_tokens_details.cached_tokens */
  int64_t completion_tokens; /* usage.completion_tokens, Ollama eval_count,
                                llama.cpp native tokens_predicted */
  int64_t reasoning_tokens;  /* usage.completion_tokens_details.reasoning_tokens */
  /* llama.cpp `timings` (OpenAI endpoints and native): -1 / NAN when absent */
  int64_t timings_cache_n, timings_prompt_n, timings_predicted_n;
  int64_t draft_n, draft_n_accepted;
  double timings_prompt_ms, timings_predicted_ms;
  /* Ollama durations, converted from ns to ms; NAN when absent */
  double ollama_load_ms, ollama_prompt_eval_ms, ollama_eval_ms, ollama_total_ms;
  /* LM Studio `stats` (REST API v0): NAN when absent */
  double lmstudio_ttft_s, lmstudio_tok_s, lmstudio_generation_s;
  char finish_reason[32];    /* "length", "stop", "" */
  char server_model[128];    /* the model the server says answered */
  char system_fingerprint[64];

  /* Retry-After of an HTTP error answer (429, 503), in seconds (delta or
   * HTTP date); NAN when absent */
  double retry_after_s;

  enum run_error error;
  enum run_check check;      /* RUN_ERR_INCONSISTENT: the rule broken */
  char error_msg[400];       /* one line; never contains the API key */
};

void run_result_init(struct run_result *r);  /* zero + every counter to -1/NAN */
void run_result_free(struct run_result *r);

/* A connection to one server, kept alive across requests. */
struct backend;

struct backend_config {
  const char *base_url;      /* "http://127.0.0.1:8080" (trailing / ok; a path
                                prefix such as https://host/openai is kept) */
  enum api_family api;       /* API_AUTO: detect (backend_detect) first */
  enum api_endpoint endpoint;
  const char *api_key;       /* sent as "Authorization: Bearer ..."; NULL = none */
  double connect_timeout_s;  /* default 10 */
};

/* 0 when u is a usable server base URL: http:// or https://, a host, a port
 * 1..65535 when given, no spaces or control characters; *len_out (may be
 * NULL) = its length without trailing slashes. -1 with err (one line) else.
 * backend_new checks the same; the CLI checks first to call it bad usage. */
int backend_url_check(const char *u, size_t *len_out, struct tm_err *err);
struct backend *backend_new(const struct backend_config *cfg, struct tm_err *err);
void backend_free(struct backend *b);
enum api_family backend_api(const struct backend *b);

/* Runs one request to completion (or failure). Returns 0 when the run
 * succeeded, -1 when it failed (out->error says why); out is always filled. */
int backend_run(struct backend *b, const struct backend_request *req, struct run_result *out);

/* Detects the API family by probing (Ollama /api/version, llama.cpp /props,
 * OpenAI /v1/models). -1 with err when nothing answers like a known API. */
int backend_detect(const char *base_url, const char *api_key, enum api_family *out,
                   struct tm_err *err);
/* backend_detect with each request bounded by timeout_s (at most 10 s). */
int backend_detect_within(const char *base_url, const char *api_key, double timeout_s,
                          enum api_family *out, struct tm_err *err);

/* What the server says about itself, for the run identity. Absent fields are "". */
struct server_info {
  char kind[32];            /* "llama.cpp", "ollama", "vllm", "lmstudio", "openai-compatible" */
  char build[128];          /* llama.cpp /props build_info, Ollama /api/version */
  char model[256];          /* the model it serves / was asked for */
  char system_info[512];    /* llama.cpp CPU features string when exposed */
  uint32_t n_ctx;           /* context size when exposed, else 0 */
  bool has_tokenize;        /* POST /tokenize answered a token count when asked
                               (probed, not assumed from the kind: a llama.cpp
                               behind a proxy may not pass it) */
  bool tokenize_missing;    /* it has none: HTTP 404 / 405 / 501, or Ollama's API,
                               which has no tokenizer endpoint (normal for an
                               OpenAI-compatible server) */
  int tokenize_status;      /* HTTP status of the probe's answer; 0 when none came
                               (a timeout, a cut connection) or none was sent */
  char tokenize_error[224]; /* why has_tokenize is false, one line ("HTTP 404: the
                               server has no /tokenize endpoint", a timeout, an
                               error body; scrubbed of the API key); "" when it
                               answered, or when the probe was not reached */
};
/* Fills out; when the server identified itself (0), POST /tokenize is also
 * probed once with a short text (bounded like every informational request:
 * a tokenizer that hangs costs one timeout here, never a failed call). */
int backend_server_info(struct backend *b, struct server_info *out, struct tm_err *err);

/* The server's own token counters (Prometheus text at GET /metrics: llama.cpp
 * with --metrics, llamacpp:prompt_tokens_total / tokens_predicted_total;
 * vLLM, vllm:prompt_tokens_total / generation_tokens_total, summed over
 * their label sets). source "" when the server exposes none (no endpoint, or
 * none of these names): not an error. */
struct server_counters {
  char source[16];          /* "llama.cpp", "vllm", "" */
  double prompt_tokens, generated_tokens; /* NAN when absent */
};
int backend_server_counters(struct backend *b, struct server_counters *out, struct tm_err *err);

/* llama.cpp's slots (GET /slots, an array of slot objects): how many there
 * are and how many are processing a request now ("is_processing", or an
 * older server's "state" 1). total 0 when the server has no such endpoint
 * or answers something else: not an error; -1 only when the request could
 * not be made. */
struct server_slots {
  int total, busy;
};
int backend_server_slots(struct backend *b, struct server_slots *out, struct tm_err *err);

/* Model listing (/v1/models, /api/tags, LM Studio /api/v0/models): writes up to
 * max names; returns the count or -1. */
int backend_list_models(struct backend *b, char (*names)[256], int max, struct tm_err *err);

/* Tokenizes text with the server's tokenizer (llama.cpp / vLLM /tokenize).
 * Returns the token count, or -1 when the server has no such endpoint or fails. */
int64_t backend_count_tokens(struct backend *b, const char *model, const char *text,
                             struct tm_err *err);

/* Ctrl-C: a signal handler calls this; the running request stops within ~0.1 s
 * with RUN_ERR_INTERRUPTED. Async-signal-safe. */
void backend_interrupt(void);
bool backend_interrupted(void);
/* Clears the flag (the runner, after it has stopped; tests). backend_run does
 * not clear it: a Ctrl-C between two runs must still stop the next one. */
void backend_interrupt_clear(void);

#endif
