/* fakeserver: LLM servers on loopback for tests, with exactly known behaviour.
 *
 * One server = one thread accepting on 127.0.0.1:<ephemeral port>, HTTP/1.1
 * keep-alive, plain sockets (no libcurl). Up to 128 connections may be open at
 * once (a kept-alive one plus side requests); requests are answered one at a
 * time, each to completion (a single-slot server). Content-Length request
 * bodies; "Expect: 100-continue" is honoured. Streams go out chunked, one
 * event per send() (TCP_NODELAY). The thread asks for SCHED_FIFO priority 1
 * (silently ignored without the privilege) so its deadlines hold on a loaded
 * machine.
 * Modes:
 *   FS_REPLAY  serves tests/fixtures/llama-server/ (*.json) exchanges: a request
 *              is answered with the recorded exchange whose method+path match
 *              (and, when several match, the one named by cfg.replay_file or
 *              chosen by fs_replay_next), with the recorded status, headers and
 *              lines, each line sent at its recorded t_ms (x time_scale) after
 *              the request arrived.
 *   FS_PACED   a synthetic server with exactly known timing: prefill delay
 *              a_ms + b_ms x prompt_tokens (prompt tokens = the number of
 *              whitespace-separated words of the prompt/last user message, or
 *              cfg.fixed_prompt_tokens when set), then one token every c_ms,
 *              max_tokens tokens (each token's text is one word + a space), in
 *              the chosen flavor. Exact rules (counting, cache, stop_early,
 *              reasoning, reported timers) are in fs_paced.c's header comment;
 *              in short: prompt_tokens = template_tokens + (fixed_prompt_tokens
 *              or the word count), on every generation endpoint; prefill =
 *              a + b x (prompt_tokens - cached); token i at prefill + i x c;
 *              prompt_ms = b x (P - cached) (a is outside the runtime's timer), predicted_ms = (n - 1) x c; default
 *              length 16 when the request gives none:
 *                FS_FLAVOR_LLAMACPP  OpenAI SSE + usage + llama.cpp `timings`
 *                                    (prompt_ms = b x uncached prompt tokens: the fixed a is outside the runtime's timer; predicted_ms
 *                                    = the decode time, cache_n, prompt_n...) and
 *                                    GET /props, POST /tokenize
 *                FS_FLAVOR_OPENAI    OpenAI SSE + usage, no timings (vLLM-like:
 *                                    GET /v1/models, POST /tokenize {count})
 *                FS_FLAVOR_OLLAMA    Ollama NDJSON /api/chat, /api/generate with
 *                                    *_duration in ns, GET /api/version, /api/tags
 *                FS_FLAVOR_LMSTUDIO  OpenAI SSE + usage, GET /api/v0/models
 *              A prompt that starts with a word already seen in an earlier
 *              request (the nonce) is served as cached when cfg.prompt_cache is
 *              set: cached_tokens/cache_n = the shared prefix length.
 *   FS_BUFFERED like FS_PACED but every token arrives in ONE chunk at the end
 *              (a buffering proxy).
 *   FS_BREAK   fails at cfg.break_stage (see enum fs_break_stage).
 *
 * All timing uses CLOCK_MONOTONIC and absolute deadlines (clock_nanosleep), so
 * pacing does not drift with the number of tokens. */
#ifndef TM_FAKESERVER_H
#define TM_FAKESERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fs_mode { FS_REPLAY = 0, FS_PACED, FS_BUFFERED, FS_BREAK };

enum fs_flavor {
  FS_FLAVOR_LLAMACPP = 0,
  FS_FLAVOR_OPENAI,
  FS_FLAVOR_OLLAMA,
  FS_FLAVOR_LMSTUDIO,
};

/* FS_BREAK breaks GENERATION requests (chat/completions, /completion,
 * /api/chat, /api/generate); info endpoints (/props, /v1/models, /tokenize,
 * /api/version ...) answer normally, except under close-on-accept. Timing is
 * the paced one (a + b x n, then c per token); at least 2 tokens are made; the
 * request's "stream" flag is ignored (stages that stream always stream).
 * "close" = the server closes the TCP connection; streamed stages that close
 * send "Connection: close" and, unless stated, no terminating chunk. */
enum fs_break_stage {
  FS_BREAK_CLOSE_ON_ACCEPT = 0, /* accept, then close without a byte (every
                                   connection; the client sees an empty reply,
                                   or a reset if its request was still unread) */
  FS_BREAK_HALF_HEADERS,        /* read the request, send "HTTP/1.1 20", close */
  FS_BREAK_AFTER_HEADERS,       /* 200 + SSE/NDJSON chunked headers, then close */
  FS_BREAK_MID_EVENT,           /* role + token 0 complete, then the first half of
                                   token 1's "data: {..." line, then close */
  FS_BREAK_AFTER_FIRST_TOKEN,   /* role + token 0, then close */
  FS_BREAK_NO_DONE_NO_USAGE,    /* all tokens, then the terminating chunk (a clean
                                   end of body) and close: no finish_reason chunk,
                                   no usage, no [DONE] (Ollama: no done line) */
  FS_BREAK_STALL,               /* role + token 0, then silence until the client
                                   closes (or fs_stop) */
  FS_BREAK_STALL_BEFORE_HEADERS,/* read the request, then silence (no byte) */
  FS_BREAK_MALFORMED_JSON,      /* token 1 is replaced by a data: line with broken
                                   JSON; the rest of the stream (tokens 2.., finish,
                                   usage, [DONE]) follows normally, keep-alive */
  FS_BREAK_HTTP_500,            /* 500 with a JSON error body (keep-alive):
                                   {"error":{"code":500,"message":...,"type":
                                   "server_error"}}; Ollama {"error":"..."} */
  FS_BREAK_HTTP_404,            /* 404, same shapes, "not_found_error" */
  FS_BREAK_ERROR_EVENT,         /* 200 stream whose first and only event (at the
                                   first-token time) is data: {"error":{"code":500,
                                   ...}} (Ollama: {"error":"..."} line), then a clean
                                   end of body, keep-alive */
  FS_BREAK_CONTEXT_OVERFLOW,    /* 400 exceed_context_size_error (llama.cpp body,
                                   with n_prompt_tokens and n_ctx 4096), keep-alive */
  FS_BREAK_GARBAGE,             /* read the request, send non-HTTP bytes, close */
  FS_BREAK_COUNT
};
const char *fs_break_stage_name(enum fs_break_stage s);
/* The stage whose name (as printed by fs_break_stage_name, e.g. "http-500",
 * "mid-event") is given; -1 when unknown. */
int fs_break_stage_from_name(const char *name);

struct fs_config {
  enum fs_mode mode;
  enum fs_flavor flavor;
  const char *fixtures_dir;   /* FS_REPLAY: .../llama-server */
  const char *replay_file;    /* FS_REPLAY: serve this exchange for every request
                                 (basename, e.g. "llama-server-chat-stream.json");
                                 NULL: choose by method+path */
  double time_scale;          /* FS_REPLAY pacing multiplier (1 = as recorded;
                                 0 = as fast as possible) */
  double a_ms, b_ms, c_ms;    /* FS_PACED/FS_BUFFERED timing */
  const char *system_info;    /* llamacpp /props "system_info" (the build's CPU
                                 features, "AVX512 = 1 | AMX_INT8 = 1 |");
                                 NULL: the key is absent */
  double heat;                /* FS_PACED/FS_BUFFERED: a server heating up:
                                 generation k (0-based, as received) takes
                                 b_ms and c_ms x (1 + heat)^k; 0 = steady */
  uint32_t fixed_prompt_tokens; /* 0 = count words */
  uint32_t template_tokens;   /* tokens a chat template adds before the user
                                 message (reported in prompt_tokens; cached on a
                                 fresh nonce when prompt_cache is set) */
  bool prompt_cache;          /* report cached prefixes as llama.cpp does */
  bool reasoning;             /* FS_PACED: the first half of the tokens come as
                                 reasoning_content (OpenAI) / thinking (Ollama) */
  bool think_tags;            /* FS_PACED: reasoning inline in <think>...</think> */
  /* FS_PACED: the answer's words (after any reasoning) are these, and the
   * generation stops after them (finish "stop") unless the exact length was
   * asked; NULL = alpha, bravo, ... to the length */
  const char *answer;
  /* FS_PACED: each image of a request (OpenAI image_url parts, Ollama
   * images) adds this many prompt tokens, prefilled at b like text; with
   * reject_images a request with any image gets HTTP 400 as a text-only
   * server answers */
  uint32_t image_tokens;
  bool reject_images;
  /* hostile: the OpenAI-style usage reports this completion_tokens (a JSON
   * literal as given: "-32", "32.5", "200000"), whatever was generated;
   * NULL = the truth */
  const char *lie_completion;
  /* hostile, the same way: usage.prompt_tokens, usage.prompt_tokens_details.
   * cached_tokens (a JSON literal), llama.cpp timings.prompt_ms (ms) */
  const char *lie_prompt, *lie_cached, *lie_prompt_ms;
  bool stop_early;            /* FS_PACED: stop after max_tokens/4 with
                                 finish_reason "stop" unless ignore_eos/min_tokens
                                 /num_predict asked for the exact length */
  bool usage_every_chunk;     /* FS_PACED/FS_BREAK, OpenAI-style flavors: every
                                 token event also carries a usage object with the
                                 counts so far (vLLM continuous_usage_stats) */
  enum fs_break_stage break_stage;
  uint32_t break_after;       /* FS_BREAK: the first break_after generation
                                 requests are served as FS_PACED, the later
                                 ones break (a server that fails mid-run) */
  /* Hostile servers (FS_PACED/FS_BREAK), for the client's robustness tests: */
  enum fs_echo {
    FS_ECHO_NONE = 0,
    FS_ECHO_401,   /* every request: 401 {"error":{"message":"<echo_pad x's> token
                      <the request's bearer key>"}} */
    FS_ECHO_MODEL, /* GET /v1/models lists one model named "m <bearer key>" */
  } echo_key;
  uint32_t echo_pad;
  bool tokenize_hang; /* POST /tokenize: silence until the client gives up */
  bool tokenize_404;  /* POST /tokenize: HTTP 404, as a server without the
                         endpoint (or a proxy that does not pass it) answers */
  bool fail_unload;   /* a generation request with keep_alive 0 (Ollama's
                         unload): HTTP 500 */
  /* a rate limiter: the first rate_limit generation requests get HTTP 429
   * with "Retry-After: <retry_after>" (a header value as given: "2", an HTTP
   * date; NULL = no header), the later ones are served */
  uint32_t rate_limit;
  const char *retry_after;
};

void fs_config_init(struct fs_config *c); /* llamacpp flavor, a=20, b=0.5, c=10 ms */

struct fakeserver;

/* Starts the server thread; *port receives the bound port. NULL on failure
 * (message on stderr: this is test code). */
struct fakeserver *fs_start(const struct fs_config *cfg, int *port);
void fs_stop(struct fakeserver *s);

/* What the server saw: number of requests, and the last request's method,
 * path, headers and body (copies, valid until the next request or fs_stop). */
int fs_requests(struct fakeserver *s);
const char *fs_last_request_line(struct fakeserver *s); /* "POST /v1/chat/completions" */
const char *fs_last_request_headers(struct fakeserver *s);
const char *fs_last_request_body(struct fakeserver *s);
/* FS_PACED: the exact times the server used for the last request (ms), so a
 * test can compare what the client measured with what the server did. */
struct fs_timing {
  uint32_t prompt_tokens, generated_tokens;
  double prefill_ms;        /* a + b x (prompt_tokens - cached tokens) */
  double token_interval_ms; /* c */
};
struct fs_timing fs_last_timing(struct fakeserver *s);

/* FS_REPLAY: the NEXT request (only that one) is answered with this exchange
 * (basename, e.g. "llama-server-chat-long-repeat-cached.json"), whatever its
 * method and path; then selection goes back to cfg.replay_file / method+path. */
void fs_replay_next(struct fakeserver *s, const char *file);

#endif
