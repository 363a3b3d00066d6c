/* runner: the method for server benchmarks, shared by every backend.
 *
 * For one invocation: calibrate (two short fresh-nonce requests back to back:
 * the second one's cached-token count is the chat template's shared prefix,
 * the cache baseline of rule 2; both give tokens-per-word for prompts of a
 * target length), then per workload one discarded warm-up and N timed runs,
 * each prompt starting with a fresh random nonce (rule 2), each run's metrics
 * computed by metrics.h and handed to the caller's sink as soon as it ends, so
 * results already measured reach the disk before the next request.
 *
 * Prompt lengths (the runner aims each synthesized prompt at its target in
 * the server's tokens; the prompt tokens reported are always the server's own
 * count, rule 3): with the server's tokenizer (POST /tokenize) when it counts,
 * else with tokens per word measured from the two calibration requests'
 * reported prompt counts, corrected by the warm-up's count. Which one sized a
 * workload is in its result (prompt_sizing); a tokenizer that answered but
 * was not used says why in tokenizer_note.
 *
 * The very first request to the server is the cold one (the model may be
 * loading): it is reported apart, never in the warm figures. With cold_series
 * (Ollama: keep_alive 0), every timed run of the cold series follows an unload;
 * those runs count as timed runs (runs, failed, failed_by_kind) and apart in
 * cold_runs / cold_failed.
 *
 * The runner never prints: progress goes to a callback, results to the sink. */
#ifndef TM_RUNNER_H
#define TM_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "bench/metrics.h"
#include "bench/summary.h"
#include "util/err.h"
#include "workload/expect.h"
#include "workload/workload_file.h"

/* Workloads per invocation: the built-in three, a TTFT sweep's lengths (at
 * most 8, workloads.c), or a workload file's jobs. */
#define RUNNER_MAX_WORKLOADS 32
#define RUNNER_MAX_REPS 1000
/* Prompt tokens per word of the synthesized text before calibration measures
 * it (English text in BPE vocabularies), and when the server reports none. */
#define RUNNER_ASSUMED_TOKENS_PER_WORD 1.3

struct workload {
  char name[32];          /* "classify", "extract", "generate", "custom" */
  uint32_t prompt_tokens; /* target prompt length, in the server's tokens */
  uint32_t max_tokens;    /* output length asked for */
  const char *prompt_text;/* NULL: synthesized to prompt_tokens; else used as is
                             (after the nonce) */
  /* A job of a workload file (workload/workload_file.h), or NULL: its
   * earlier turns go before the prompt (prompt_text: its last user turn),
   * its images after the prompt's text, its repeat replaces the options'
   * reps, it runs at its natural length (no exact_length) and, with an
   * expect, each successful run's answer is checked (runner_event.answer). */
  const struct wl_job *job;
};

/* The named workloads: classify (~50 prompt tokens, 16 out), extract (~1700, 60),
 * generate (~50, 400). Returns -1 for an unknown name. */
int workload_by_name(const char *name, struct workload *out);
/* "classify,extract,generate". */
const char *workload_names(void);

/* Writes a prompt of about n_words words of varied text, starting with the
 * nonce sentence "Reference <nonce>." and framed for the workload (an
 * instruction before the text). seed varies the text. Returns a malloc'd
 * string, NULL when out of memory. */
char *runner_make_prompt(const char *workload, const char *nonce, uint32_t n_words,
                         uint32_t seed);
/* A fresh random nonce of 8 lowercase letters and digits (from /dev/urandom). */
void runner_nonce(char out[16]);

/* One finished request, as the sink sees it. */
struct runner_event {
  const struct workload *workload; /* NULL for calibration requests */
  uint32_t index;                  /* 0-based timed-run index; warm-up = 0 */
  bool warmup;                     /* discarded warm-up */
  bool cold;                       /* first request after a (possible) model load */
  bool calibration;                /* a calibration request (not a measurement) */
  bool image_baseline;             /* the text-only request of an image job
                                      (calibration is set too) */
  const struct backend_request *request;
  const struct run_result *result;
  const struct run_metrics *metrics;
  /* The answer's check (a job with an expect, the run successful); NULL
   * otherwise. */
  const struct answer_check *answer;
};

typedef void (*runner_sink_fn)(const struct runner_event *ev, void *ctx);
typedef void (*runner_progress_fn)(const char *message, void *ctx);

struct runner_options {
  struct backend *backend;
  const char *model;              /* served model name; NULL = server default */
  struct workload workloads[RUNNER_MAX_WORKLOADS];
  size_t n_workloads;
  uint32_t reps;                  /* timed runs per workload (default 3) */
  bool warmup;                    /* one discarded warm-up per workload (default on) */
  bool allow_cache;               /* keep cache-hit runs in prefill figures, labelled */
  bool exact_length;              /* ask for exactly max_tokens (default on) */
  bool cold_series;               /* --cold: measure the load cost (Ollama only) */
  bool skip_tokenize;             /* the server's /tokenize is known not to count
                                     (backend_server_info's probe): never asked */
  double idle_timeout_s, total_timeout_s;
  double max_wait_s;              /* the whole invocation's budget (--max-wait):
                                     no request starts after it, and one in
                                     flight is cut at it; 0 = none */
  double cooldown_s;              /* pause before each workload after the first
                                     (rule 11: a machine heating under load);
                                     0 = none; an interrupt ends it */
  uint32_t seed;
  runner_sink_fn sink;
  runner_progress_fn progress;
  runner_progress_fn step;        /* each workload as it begins: "[2/3, about 40 s
                                     left] extract: ..."; NULL: none */
  void *ctx;
};
void runner_options_init(struct runner_options *o);

/* How a workload's prompt length was aimed at its target. */
enum runner_prompt_sizing {
  SIZING_TOKENS_PER_WORD = 0, /* tokens per word from the server's reported
                                 prompt counts (calibration, then the warm-up's);
                                 runner_result.tokens_per_word, or
                                 RUNNER_ASSUMED_TOKENS_PER_WORD when the server
                                 reported none */
  SIZING_TOKENIZE,            /* the server's /tokenize counted the prompt text */
  SIZING_PROMPT_FILE,         /* the text given (--prompt-file): not sized */
};
const char *runner_prompt_sizing_name(enum runner_prompt_sizing s); /* "tokenize"... */

struct runner_workload_result {
  struct workload workload;
  struct bench_summary summary;
  uint32_t n_words;               /* prompt words used for the timed runs */
  enum runner_prompt_sizing prompt_sizing;
  double cpu_steal_share;         /* steal while its timed runs ran: the share
                                     of this machine's busy CPU time the host
                                     gave to other work, 0..1; NAN unknown */
  /* Given up early: after RUNNER_GIVE_UP_AFTER consecutive failures of one
   * kind (the warm-up's counts), the workload's remaining timed runs are not
   * sent; how many, and the kind (RUN_OK when none were skipped). */
  uint32_t n_skipped;
  enum run_error skipped_after;
  bool skipped_max_wait;          /* skipped because --max-wait ran out (then
                                     skipped_after is RUN_OK) */
  /* Runs that broke a plausibility rule (run_check), by rule, and the first
   * one's reason: what was seen. The warm-up's count. */
  /* A job with an expect: its timed runs' verdicts (enum answer_verdict);
   * failed runs have none. */
  bool checked;
  uint32_t answers[3];
  /* A job with images: one request of the same text without them, after
   * the warm-up (a calibration request in the records, "image_baseline" in
   * its settings): its prompt tokens (-1: none reported or it failed), the
   * runtime's prompt time and the client TTFT (NAN: not known). The image
   * cost is the timed runs' medians minus these. */
  bool image_baseline;
  int64_t baseline_prompt_tokens;
  double baseline_prompt_ms, baseline_ttft_ms;
  uint32_t implausible[RUN_CHECK_COUNT];
  char implausible_first[RUN_CHECK_COUNT][160];
};

/* A dead or stalled server is not waited on for every request: this many
 * consecutive failures of one kind end a workload (and the calibration's
 * two requests, both timed out, end the invocation). */
#define RUNNER_GIVE_UP_AFTER 2
/* Retry-After (HTTP 429 / 503) is honoured once per invocation, when it asks
 * for at most this long: the next request waits for it. */
#define RUNNER_RETRY_AFTER_MAX_S 60.0

struct runner_result {
  int64_t cache_baseline_tokens;  /* -1 when the server reports no cached tokens,
                                     or its report was not believable (below) */
  char baseline_rejected[256];    /* why a reported baseline was dropped; "" */
  bool cache_counter;             /* the server reports cached prompt tokens */
  double tokens_per_word;         /* calibrated (NAN when unknown) */
  int64_t template_tokens;        /* prompt tokens the template adds (-1 unknown) */
  bool tokenizer_endpoint;        /* prompt lengths came from the server's /tokenize */
  struct run_metrics cold;        /* the first request of the invocation */
  bool have_cold;
  double cold_load_ms[RUNNER_MAX_REPS]; /* --cold series (Ollama load_duration) */
  size_t n_cold_load;
  size_t n_workloads;
  struct runner_workload_result workloads[RUNNER_MAX_WORKLOADS];
  uint32_t runs, failed;          /* timed runs over all workloads, the --cold
                                     series' runs included */
  uint32_t failed_by_kind[RUN_ERR_COUNT];
  uint32_t cold_runs, cold_failed;/* the --cold series alone (also in runs, failed) */
  char tokenizer_error[224];      /* the calibration asked /tokenize and got no
                                     count: why (HTTP 404...); "" otherwise */
  char tokenizer_note[256];       /* why the server's /tokenize, asked, was not
                                     used or given up (it timed out, failed
                                     mid-run, or counted more than the server
                                     reported); "" */
  bool interrupted;
  bool max_wait_reached;          /* --max-wait ran out: runs were cut or skipped */
  /* Retry-After: the first error answer that carried one (what it asked, what
   * was waited, 0 when it asked for more than RUNNER_RETRY_AFTER_MAX_S or
   * the budget left, and the request it answered); asked NAN when none did */
  double retry_after_asked_s, retry_after_waited_s;
  int retry_after_status;
  char retry_after_request[48];   /* "calibration 1", "classify run 2" */
  /* The calibration requests that broke a plausibility rule: the first
   * rule and its reason (RUN_CHECK_NONE when none did). */
  enum run_check calibration_check;
  char calibration_check_msg[160];
};

/* The calibration alone (for the load generator, src/bench/load.c: the same
 * two requests, the same rules): res holds the cold request, the cache
 * baseline and tokens per word; *words_per_token_line gets the calibrated
 * line (tokens = overhead + per_word x words) for runner_words_for. 0, or -1
 * with err as runner_run's calibration fails. */
struct runner_line {
  double tokens_per_word, overhead_tokens;
};
int runner_calibrate(const struct runner_options *opt, struct runner_result *res,
                     struct runner_line *line, struct tm_err *err);
/* Words of synthesized text for a prompt of about `tokens` server tokens. */
uint32_t runner_words_for(const struct runner_line *line, uint32_t tokens);

/* Runs everything. Returns 0 when every timed run succeeded, 1 when some
 * failed (they are in the summaries and went to the sink), -1 when the run
 * could not proceed at all (err: e.g. the server is unreachable during
 * calibration, or Ctrl-C). */
int runner_run(const struct runner_options *opt, struct runner_result *res, struct tm_err *err);

#endif
