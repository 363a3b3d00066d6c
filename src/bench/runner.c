/* runner: see runner.h. */
#include "bench/runner.h"

#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "machine/probe.h"
#include "util/clock.h"

/* ------------------------------------------------------------ workloads --- */

/* Targets from issue 3: classify is short in and out (its decode cell stays
 * blank by rule 5: 16 < 24 tokens), extract is prompt-heavy, generate is
 * decode-heavy. */
static const struct workload named_workloads[] = {
    {"classify", 50, 16, NULL, NULL},
    {"extract", 1700, 60, NULL, NULL},
    {"generate", 50, 400, NULL, NULL},
};

int workload_by_name(const char *name, struct workload *out) {
  for (size_t i = 0; i < sizeof named_workloads / sizeof named_workloads[0]; i++)
    if (strcmp(name, named_workloads[i].name) == 0) {
      *out = named_workloads[i];
      return 0;
    }
  return -1;
}

const char *workload_names(void) { return "classify,extract,generate"; }

/* ------------------------------------------------------------- prompts --- */

static const char *const vocabulary[] = {
    "the", "memory", "server", "model", "reads", "every", "weight", "once", "per", "token",
    "while", "prompt", "arrives", "in", "one", "batch", "and", "compute", "sets", "pace",
    "engineers", "measure", "bandwidth", "before", "they", "trust", "a", "number", "from",
    "vendor", "cache", "lines", "stream", "through", "cores", "that", "wait", "on", "data",
    "report", "shows", "invoice", "dated", "March", "amount", "customer", "Alice", "Bob",
    "paid", "seventy", "dollars", "shipment", "left", "warehouse", "Tuesday", "morning",
    "team", "reviewed", "logs", "found", "slow", "request", "after", "restart", "queue",
    "grew", "until", "noon", "when", "operator", "added", "second", "machine", "latency",
    "fell", "again", "quietly", "planned", "careful", "test", "with", "fresh", "inputs",
    "results", "stayed", "stable", "across", "three", "runs", "so", "decision", "was", "easy",
};

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static const char *framing_of(const char *workload) {
  if (!strcmp(workload, "classify"))
    return "Classify the customer message below as billing, technical or other. "
           "Answer with one word.\nMessage:";
  if (!strcmp(workload, "extract"))
    return "Read the report below and list every name, date and amount it mentions, "
           "as JSON.\nReport:";
  if (!strcmp(workload, "generate"))
    return "Write a long, detailed explanation for a new engineer, building on these "
           "notes:";
  return "";
}

char *runner_make_prompt(const char *workload, const char *nonce, uint32_t n_words,
                         uint32_t seed) {
  const char *frame = framing_of(workload);
  size_t cap = 64 + strlen(frame) + (size_t)n_words * 16;
  char *p = malloc(cap);
  if (!p) return NULL;
  size_t len = (size_t)snprintf(p, cap, "Reference %s. %s", nonce, frame);
  uint64_t s = 0x7f4a7c15ull ^ ((uint64_t)seed << 32);
  uint32_t in_sentence = 0, sentence_len = 0;
  const size_t nv = sizeof vocabulary / sizeof vocabulary[0];
  for (uint32_t i = 0; i < n_words; i++) {
    if (in_sentence == 0) sentence_len = 6 + (uint32_t)(splitmix(&s) % 9);
    const char *w = vocabulary[splitmix(&s) % nv];
    bool first = in_sentence == 0, last = in_sentence + 1 == sentence_len || i + 1 == n_words;
    len += (size_t)snprintf(p + len, cap - len, " %c%s%s", first ? (w[0] & ~0x20) : w[0], w + 1,
                            last ? "." : "");
    in_sentence = last ? 0 : in_sentence + 1;
  }
  return p;
}

void runner_nonce(char out[16]) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char raw[8];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, raw, sizeof raw) : -1;
  if (fd >= 0) close(fd);
  if (got != (ssize_t)sizeof raw) {
    /* No /dev/urandom: the clock still differs between requests. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    for (size_t i = 0; i < sizeof raw; i++) raw[i] = (unsigned char)splitmix(&s);
  }
  for (size_t i = 0; i < sizeof raw; i++) out[i] = alphabet[raw[i] % 36];
  out[8] = 0;
}

/* -------------------------------------------------------------- runner --- */

const char *runner_prompt_sizing_name(enum runner_prompt_sizing s) {
  switch (s) {
  case SIZING_TOKENIZE: return "tokenize";
  case SIZING_PROMPT_FILE: return "prompt-file";
  case SIZING_TOKENS_PER_WORD: break;
  }
  return "tokens-per-word";
}

void runner_options_init(struct runner_options *o) {
  memset(o, 0, sizeof *o);
  o->reps = 3;
  o->warmup = true;
  o->exact_length = true;
  o->idle_timeout_s = 60;
  o->total_timeout_s = 600;
  o->seed = 1;
}

struct run_ctx {
  const struct runner_options *opt;
  struct runner_result *res;
  struct metrics_options mopt;
  double tokens_per_word;  /* estimate; refined by calibration */
  double overhead_tokens;  /* prompt tokens besides the words (template, framing) */
  uint32_t seq;            /* request counter, varies the prompt text */
  bool have_tokenizer;     /* the server counts tokens for us (/tokenize) */
  /* The current workload's aim by the tokenizer: aim_total tokens (template
   * included) for aim_words words; NAN when not counted. Each request's
   * prompt count is held against it (RUN_CHECK_PROMPT_COUNT_OFF). */
  double aim_total, aim_words;
  uint64_t deadline_ns;    /* --max-wait: no request starts after it; 0 = none */
  bool retry_waited;       /* the last request's Retry-After was waited out */
  /* The current workload's job (a workload file's): its earlier turns and
   * its images as URLs, made once for its requests; the last request's
   * verdict (-1: none). */
  struct backend_message *history;
  size_t n_history;
  char **images;
  size_t n_images;
  bool text_only;          /* the image baseline: the job's text, no images */
  int last_verdict;
};

static void progress(const struct run_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void progress(const struct run_ctx *c, const char *fmt, ...) {
  if (!c->opt->progress) return;
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  c->opt->progress(buf, c->opt->ctx);
}

/* one_request's answer when --max-wait left no time to send the request */
#define OUT_OF_TIME (-3)

/* Sleeps `seconds` in slices of 100 ms, so an interrupt ends the pause. */
static void pause_for(double seconds) {
  const uint64_t end = tm_now_ns() + (uint64_t)(seconds * 1e9);
  for (uint64_t now = tm_now_ns(); now < end && !backend_interrupted(); now = tm_now_ns()) {
    uint64_t left = end - now, slice = left < 100000000u ? left : 100000000u;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice};
    nanosleep(&ts, NULL);
  }
}

/* "calibration 1", "classify warm-up", "classify run 2": the request, for a message. */
static void request_label(const struct runner_event *ev, char *out, size_t n) {
  if (ev->calibration || !ev->workload)
    snprintf(out, n, "calibration");
  else if (ev->warmup)
    snprintf(out, n, "%.24s warm-up", ev->workload->name);
  else
    snprintf(out, n, "%.24s %srun %u", ev->workload->name, ev->cold ? "cold " : "", ev->index + 1);
}

/* An error answer's Retry-After (429 Too Many Requests, 503 Unavailable): the
 * first one of the invocation is recorded, and honoured when it asks for at
 * most RUNNER_RETRY_AFTER_MAX_S and the budget (--max-wait) leaves room: the
 * next request waits for it. Later ones are not waited for (a server that
 * keeps asking is failing, and the give-up rule ends the workload). */
static void honour_retry_after(struct run_ctx *c, const struct runner_event *ev,
                               const struct run_result *r) {
  c->retry_waited = false;
  if (r->error != RUN_ERR_HTTP || !(r->http_status == 429 || r->http_status == 503) ||
      !isfinite(r->retry_after_s) || r->retry_after_s < 0 || !isnan(c->res->retry_after_asked_s))
    return;
  struct runner_result *res = c->res;
  res->retry_after_asked_s = r->retry_after_s;
  res->retry_after_status = r->http_status;
  request_label(ev, res->retry_after_request, sizeof res->retry_after_request);
  const double wait = r->retry_after_s;
  const bool in_budget =
      !c->deadline_ns || tm_now_ns() + (uint64_t)(wait * 1e9) < c->deadline_ns;
  if (wait > RUNNER_RETRY_AFTER_MAX_S || !in_budget) {
    res->retry_after_waited_s = 0;
    char why[64];
    if (in_budget) snprintf(why, sizeof why, "the %.0f s tokmeter waits", RUNNER_RETRY_AFTER_MAX_S);
    else snprintf(why, sizeof why, "--max-wait leaves");
    progress(c, "%s: HTTP %d asks to retry after %.0f s: more than %s; not waited",
             res->retry_after_request, r->http_status, wait, why);
    return;
  }
  progress(c, "%s: HTTP %d, Retry-After %.0f s: waiting before the next request (once)",
           res->retry_after_request, r->http_status, wait);
  pause_for(wait);
  res->retry_after_waited_s = wait;
  c->retry_waited = true;
}

/* Sends one request with a fresh nonce; fills result and metrics and hands
 * them to the sink. Returns the backend's verdict (0 ok, -1 failed). */
static int one_request(struct run_ctx *c, const struct workload *w, const char *kind,
                       uint32_t n_words, uint32_t max_tokens, bool exact, bool unload,
                       struct runner_event *ev, struct run_result *r, struct run_metrics *m,
                       char **keep_prompt) {
  char nonce[16];
  runner_nonce(nonce);
  c->last_verdict = -1; /* until this request's answer is checked */
  char *prompt = w && w->prompt_text ? NULL : runner_make_prompt(kind, nonce, n_words, c->seq++);
  if (w && w->prompt_text) {
    size_t n = strlen(w->prompt_text) + 32;
    prompt = malloc(n);
    if (prompt) snprintf(prompt, n, "Reference %s. %s", nonce, w->prompt_text);
  }
  run_result_init(r);
  /* --max-wait: no request starts without time left; one in flight is cut
   * at the budget's end. */
  double left_s = INFINITY;
  if (c->deadline_ns) {
    const uint64_t now = tm_now_ns();
    left_s = now + 50000000u < c->deadline_ns ? (double)(c->deadline_ns - now) / 1e9 : 0;
    if (left_s <= 0) {
      free(prompt);
      c->res->max_wait_reached = true;
      return OUT_OF_TIME;
    }
  }
  if (!prompt) {
    r->error = RUN_ERR_OTHER;
    snprintf(r->error_msg, sizeof r->error_msg, "out of memory building the prompt");
    run_metrics_compute(r, NULL, &c->mopt, m);
    return -1;
  }
  struct backend_request req = {
      .model = c->opt->model,
      .prompt = prompt,
      .history = w && w->job ? c->history : NULL,
      .n_history = w && w->job ? c->n_history : 0,
      .images = w && w->job && !c->text_only ? (const char *const *)c->images : NULL,
      .n_images = w && w->job && !c->text_only ? c->n_images : 0,
      .max_tokens = max_tokens,
      .exact_length = exact,
      .stream = true,
      .unload_after = unload,
      .seed = c->opt->seed,
      .idle_timeout_s = c->opt->idle_timeout_s,
      .total_timeout_s = c->opt->total_timeout_s,
  };
  const bool cut_by_budget = left_s < req.total_timeout_s;
  if (cut_by_budget) req.total_timeout_s = left_s;
  if (req.idle_timeout_s > left_s) req.idle_timeout_s = left_s;
  int rc = backend_run(c->opt->backend, &req, r);
  if (rc != 0 && cut_by_budget && (r->error == RUN_ERR_TIMEOUT || r->error == RUN_ERR_IDLE_TIMEOUT)) {
    c->res->max_wait_reached = true;
    r->error = RUN_ERR_TIMEOUT;
    snprintf(r->error_msg, sizeof r->error_msg, "cut at --max-wait: the invocation's %.0f s ran "
             "out (%u events received)", c->opt->max_wait_s, r->n_events);
  }
  /* Each request's prompt count against the tokenizer's, where it counted. */
  struct metrics_options mo = c->mopt;
  if (w && !w->prompt_text && isfinite(c->aim_total))
    mo.expected_prompt_tokens = c->aim_total + ((double)n_words - c->aim_words) * c->tokens_per_word;
  run_metrics_compute(r, &req, &mo, m);
  if (rc == 0 && m->error == RUN_ERR_INCONSISTENT) {
    /* The method's verdict on a run the backend completed: the server's
     * figures contradict each other or what the client saw. The run fails with
     * that reason (its record, the failure counts, the exit code). */
    r->error = RUN_ERR_INCONSISTENT;
    r->check = m->check;
    snprintf(r->error_msg, sizeof r->error_msg, "%s", m->error_msg);
    rc = -1;
  }
  /* A job's expected answer, on the answer alone (not the reasoning). */
  struct answer_check check;
  bool checked = false;
  if (rc == 0 && w && w->job && w->job->has_expect) {
    char *answer = metrics_answer_text(r);
    if (answer && expect_check(&w->job->expect, answer, &check) == 0) {
      checked = true;
      c->last_verdict = (int)check.verdict;
      ev->answer = &check;
    }
    free(answer);
  }
  ev->request = &req;
  ev->result = r;
  ev->metrics = m;
  if (c->opt->sink) c->opt->sink(ev, c->opt->ctx);
  ev->request = NULL; /* req dies here */
  ev->answer = NULL;
  if (checked) answer_check_free(&check);
  honour_retry_after(c, ev, r);
  if (keep_prompt)
    *keep_prompt = prompt;
  else
    free(prompt);
  return rc;
}

/* Words for a target of `tokens` prompt tokens, from the calibrated line. */
static uint32_t words_for(const struct run_ctx *c, uint32_t tokens) {
  double words = ((double)tokens - c->overhead_tokens) / c->tokens_per_word;
  if (!(words >= 1)) words = 1;
  if (words > 2e6) words = 2e6;
  return (uint32_t)lround(words);
}

/* Two short fresh-nonce requests back to back. The first is the cold one; the
 * second's cached tokens are the shared template prefix (rule 2's baseline);
 * together they give prompt tokens per word (and the fixed overhead). */
static int calibrate(struct run_ctx *c, struct tm_err *err) {
  const uint32_t words[2] = {20, 80};
  int64_t tokens[2] = {-1, -1};
  struct run_metrics m;
  enum run_error failed[2] = {RUN_OK, RUN_OK};
  bool retried = false;
  char *first_prompt = NULL; /* calibration 1's, counted by the tokenizer after 2 */
  for (int i = 0; i < 2; i++) {
    struct run_result r;
    struct runner_event ev = {.calibration = true, .cold = i == 0};
    progress(c, "calibrating (%d/2): prompt length, cache baseline%s", i + 1,
             i == 0 ? ", first request (cold)" : "");
    char *prompt = NULL;
    int rc = one_request(c, NULL, "custom", words[i], 2, false, false, &ev, &r, &m, &prompt);
    if (rc == OUT_OF_TIME) {
      run_result_free(&r);
      free(first_prompt);
      return tm_errf(err, "--max-wait (%.0f s) ran out during the calibration: nothing was "
                          "measured", c->opt->max_wait_s);
    }
    if (rc != 0 && c->retry_waited && !retried) {
      /* the server asked to wait (Retry-After) and was waited for: this
       * calibration request again, once */
      retried = true;
      free(prompt);
      run_result_free(&r);
      i--;
      continue;
    }
    if (rc != 0 && r.error == RUN_ERR_INCONSISTENT && c->res->calibration_check == RUN_CHECK_NONE) {
      c->res->calibration_check = r.check;
      snprintf(c->res->calibration_check_msg, sizeof c->res->calibration_check_msg, "%.*s",
               (int)sizeof c->res->calibration_check_msg - 1, r.error_msg);
    }
    if (i == 1 && rc == 0 && r.prompt_tokens > 0 && prompt && !c->opt->skip_tokenize) {
      /* With a server tokenizer, the template's share is exact: reported
       * prompt tokens minus the tokens of the text we sent. */
      struct tm_err terr;
      int64_t counted = backend_count_tokens(c->opt->backend, c->opt->model, prompt, &terr);
      if (counted < 0)
        snprintf(c->res->tokenizer_error, sizeof c->res->tokenizer_error, "%.*s",
                 (int)sizeof c->res->tokenizer_error - 1, terr.msg);
      if (counted < 0 && c->res->tokenizer_note[0] == 0 && strstr(terr.msg, "within"))
        snprintf(c->res->tokenizer_note, sizeof c->res->tokenizer_note,
                 "the server's tokenizer did not answer (%.120s): prompt lengths come from "
                 "the calibrated tokens per word instead", terr.msg);
      /* The server's counts must follow its own tokenizer: from request 1
       * to 2 the template's share cancels, so the reported prompts grow by
       * what the tokenizer counts between the two texts. A server that
       * reports counts of its own (a constant, a multiple) fails here, before
       * any figure rests on them. */
      int64_t counted1 = counted > 0 && first_prompt && tokens[0] > 0
                             ? backend_count_tokens(c->opt->backend, c->opt->model, first_prompt,
                                                    &terr)
                             : -1;
      if (counted1 > 0) {
        const double grew = (double)(r.prompt_tokens - tokens[0]);
        const double want = (double)(counted - counted1);
        if (fabs(grew - want) > METRICS_PROMPT_TOL_TOKENS + METRICS_PROMPT_TOL_REL * fabs(want)) {
          c->res->calibration_check = RUN_CHECK_PROMPT_COUNT_OFF;
          snprintf(c->res->calibration_check_msg, sizeof c->res->calibration_check_msg,
                   "the server reports prompts of %lld and %lld tokens for texts its own "
                   "tokenizer counts as %lld and %lld", (long long)tokens[0],
                   (long long)r.prompt_tokens, (long long)counted1, (long long)counted);
          tm_errf(err, "%s: its prompt counts, and every prefill figure drawn from them, "
                       "cannot be trusted; nothing was measured", c->res->calibration_check_msg);
          c->res->failed_by_kind[RUN_ERR_INCONSISTENT]++;
          free(prompt);
          free(first_prompt);
          run_result_free(&r);
          return -1;
        }
      }
      if (counted > 0 && counted <= r.prompt_tokens) {
        c->have_tokenizer = true;
        c->res->tokenizer_endpoint = true;
        c->res->template_tokens = r.prompt_tokens - counted;
      } else if (counted > r.prompt_tokens && c->res->tokenizer_note[0] == 0) {
        /* More tokens in the text than the server says the whole prompt
         * held: that tokenizer is not the one that read the prompt. */
        snprintf(c->res->tokenizer_note, sizeof c->res->tokenizer_note,
                 "the server's tokenizer counted %lld tokens in a prompt the server reported "
                 "as %lld: not used; prompt lengths come from the calibrated tokens per word "
                 "instead", (long long)counted, (long long)r.prompt_tokens);
      }
    }
    if (i == 0 && rc == 0) {
      free(first_prompt);
      first_prompt = prompt;
    } else {
      free(prompt);
    }
    if (i == 0) {
      c->res->cold = m;
      c->res->have_cold = true;
    }
    if (rc != 0) {
      enum run_error e = r.error;
      /* Nothing will work if the server cannot be reached or refuses the API. */
      if (e == RUN_ERR_CONNECT || e == RUN_ERR_DNS || e == RUN_ERR_TLS || e == RUN_ERR_HTTP ||
          e == RUN_ERR_INTERRUPTED) {
        if (retried && r.http_status == 429)
          tm_errf(err, "%s, again after the wait it asked for", r.error_msg);
        else
          tm_errf(err, "%s", r.error_msg);
        if (e != RUN_ERR_INTERRUPTED) c->res->failed_by_kind[e]++;
        run_result_free(&r);
        free(first_prompt);
        return -1;
      }
      failed[i] = e;
      /* A server that timed out on both (headers then silence, or a trickle):
       * every later request would wait as long. The invocation ends here. */
      if (i == 1 && e == failed[0] && (e == RUN_ERR_IDLE_TIMEOUT || e == RUN_ERR_TIMEOUT)) {
        tm_errf(err, "both calibration requests failed on the %s (%s): the server is stalled, "
                     "nothing was measured", run_error_name(e), r.error_msg);
        c->res->failed_by_kind[e] += 2;
        run_result_free(&r);
        free(first_prompt);
        return -1;
      }
    }
    tokens[i] = r.prompt_tokens;
    if (i == 1) {
      c->res->cache_baseline_tokens = r.cached_tokens;
      c->res->cache_counter = r.cached_tokens >= 0;
    }
    run_result_free(&r);
  }
  free(first_prompt);
  bool counts_sane = tokens[0] > 0 && tokens[1] > tokens[0];
  if (counts_sane) {
    c->tokens_per_word = (double)(tokens[1] - tokens[0]) / (words[1] - words[0]);
    c->overhead_tokens = (double)tokens[0] - c->tokens_per_word * words[0];
    if (c->overhead_tokens < 0) c->overhead_tokens = 0;
    c->res->tokens_per_word = c->tokens_per_word;
  }
  /* The nonce's position by the server's own tokenizer: the template's
   * tokens and those of "Reference" before it. A server with several slots
   * may answer the second calibration request from a fresh slot (cached 0,
   * seen with llama-server -np 4): the prefix every fresh-nonce prompt shares
   * is then counted rather than observed, so a later request that reuses a
   * slot's template is not called a hit. */
  if (c->have_tokenizer && c->res->template_tokens >= 0 && c->res->cache_counter) {
    struct tm_err terr;
    const int64_t ref = backend_count_tokens(c->opt->backend, c->opt->model, "Reference", &terr);
    const int64_t before = ref > 0 ? c->res->template_tokens + ref : -1;
    if (before > c->res->cache_baseline_tokens) c->res->cache_baseline_tokens = before;
  }
  /* A baseline is the template's tokens before the nonce: it must fit in the
   * prompt's fixed overhead (template + nonce sentence + framing). A server
   * that reports more cached tokens on a fresh nonce, or prompt counts that do
   * not grow with the prompt, is not calibrating anything: drop the baseline,
   * so the uncalibrated rule (flag caches above half the prompt) applies. */
  int64_t base = c->res->cache_baseline_tokens;
  if (base > 0 && (!counts_sane || (double)base > c->overhead_tokens + 1.0)) {
    snprintf(c->res->baseline_rejected, sizeof c->res->baseline_rejected,
             "the server reported %lld cached tokens on a fresh nonce (prompt %lld tokens, "
             "%s): not a chat-template prefix; cache checks use the uncalibrated rule",
             (long long)base, (long long)tokens[1],
             counts_sane ? "more than its fixed overhead"
                         : "prompt counts that do not grow with the prompt");
    c->res->cache_baseline_tokens = -1;
  }
  c->mopt.cache_baseline_tokens = c->res->cache_baseline_tokens;
  return 0;
}

/* Refines a word count with the server's own tokenizer: the prompt text (with a
 * nonce of the real length) is counted, plus the template's tokens, and the
 * words adjusted; three rounds reach the target within a token or two. */
static uint32_t words_by_tokenizer(struct run_ctx *c, const struct workload *w,
                                   uint32_t n_words) {
  for (int round = 0; round < 3; round++) {
    char nonce[16];
    runner_nonce(nonce);
    char *p = runner_make_prompt(w->name, nonce, n_words, c->seq);
    if (!p) break;
    struct tm_err err;
    int64_t n = backend_count_tokens(c->opt->backend, c->opt->model, p, &err);
    free(p);
    if (n < 0) {
      /* A tokenizer that stopped answering is not asked again (each try
       * would wait out the timeout); the calibrated line stands in. */
      c->have_tokenizer = false;
      if (c->res->tokenizer_note[0] == 0)
        snprintf(c->res->tokenizer_note, sizeof c->res->tokenizer_note,
                 "the server's tokenizer failed (%.120s): prompt lengths come from the "
                 "calibrated tokens per word instead", err.msg);
      break;
    }
    if (n == 0) break;
    double total = (double)n + (double)c->res->template_tokens;
    c->aim_total = total;
    c->aim_words = n_words;
    double delta = ((double)w->prompt_tokens - total) / c->tokens_per_word;
    if (fabs(delta) < 0.5) break;
    double nw = (double)n_words + delta;
    n_words = nw >= 1 ? (uint32_t)lround(nw) : 1;
  }
  return n_words;
}

/* A run that broke a plausibility rule: counted by rule, the first one's
 * reason kept (what was seen). */
static void note_implausible(struct runner_workload_result *out, const struct run_result *r) {
  if (r->error != RUN_ERR_INCONSISTENT || r->check <= RUN_CHECK_NONE || r->check >= RUN_CHECK_COUNT)
    return;
  if (out->implausible[r->check]++ == 0)
    snprintf(out->implausible_first[r->check], sizeof out->implausible_first[r->check], "%.*s",
             (int)sizeof out->implausible_first[r->check] - 1, r->error_msg);
}

/* The job's earlier turns and image URLs for its requests (c->history,
 * c->images); -1 with why when an image file can no longer be read. */
static int job_prepare(struct run_ctx *c, const struct wl_job *j, char *why, size_t whyn) {
  c->n_history = c->n_images = 0;
  if (!j) return 0;
  c->history = calloc(j->n_messages ? j->n_messages : 1, sizeof *c->history);
  c->images = calloc(j->n_images ? j->n_images : 1, sizeof *c->images);
  if (!c->history || !c->images) return snprintf(why, whyn, "out of memory"), -1;
  for (size_t i = 0; i + 1 < j->n_messages; i++)
    c->history[c->n_history++] = (struct backend_message){j->messages[i].role, j->messages[i].content};
  for (size_t i = 0; i < j->n_images; i++) {
    c->images[i] = wl_image_url(&j->images[i], why, whyn);
    if (!c->images[i]) return -1;
    c->n_images = i + 1;
  }
  return 0;
}

static void job_release(struct run_ctx *c) {
  for (size_t i = 0; c->images && i < c->n_images; i++) free(c->images[i]);
  free(c->images);
  free(c->history);
  c->images = NULL;
  c->history = NULL;
  c->n_images = c->n_history = 0;
}

static int run_workload_body(struct run_ctx *c, size_t wi, uint32_t reps, bool exact);

static int run_workload(struct run_ctx *c, size_t wi) {
  const struct workload *w = &c->opt->workloads[wi];
  const uint32_t reps = w->job && w->job->repeat ? (uint32_t)w->job->repeat : c->opt->reps;
  /* a job runs as the user's application would: to its natural end */
  const bool exact = w->job ? false : c->opt->exact_length;
  char why[300] = "";
  if (job_prepare(c, w->job, why, sizeof why) != 0) {
    job_release(c);
    struct runner_workload_result *out = &c->res->workloads[wi];
    out->workload = *w;
    out->cpu_steal_share = NAN;
    out->n_skipped = reps;
    out->skipped_after = RUN_ERR_OTHER;
    progress(c, "%s: %s: its runs are skipped", w->name, why);
    c->res->failed += reps;
    c->res->runs += reps;
    c->res->failed_by_kind[RUN_ERR_OTHER] += reps;
    bench_summarize(w->name, NULL, 0, NULL, c->opt->allow_cache, &out->summary);
    return 1;
  }
  int rc = run_workload_body(c, wi, reps, exact);
  job_release(c);
  return rc;
}

static int run_workload_body(struct run_ctx *c, size_t wi, uint32_t reps, bool exact) {
  const struct workload *w = &c->opt->workloads[wi];
  struct runner_workload_result *out = &c->res->workloads[wi];
  out->workload = *w;
  out->checked = w->job && w->job->has_expect;
  out->cpu_steal_share = NAN; /* until its timed runs have run */
  uint32_t n_words = words_for(c, w->prompt_tokens);
  c->aim_total = c->aim_words = NAN;
  if (c->have_tokenizer && !w->prompt_text) n_words = words_by_tokenizer(c, w, n_words);
  if (!c->have_tokenizer) c->aim_total = NAN; /* it failed: nothing to hold counts against */
  /* words_by_tokenizer drops the tokenizer when it fails: then the warm-up's
   * count corrects the calibrated line, as without one. */
  out->prompt_sizing = w->prompt_text     ? SIZING_PROMPT_FILE
                       : c->have_tokenizer ? SIZING_TOKENIZE
                                           : SIZING_TOKENS_PER_WORD;
  struct run_metrics *ms = calloc(reps ? reps : 1, sizeof *ms);
  if (!ms) return -1;
  int failed = 0;
  /* consecutive failures of one kind, the warm-up's included */
  enum run_error streak_kind = RUN_OK;
  uint32_t streak = 0;

  if (c->opt->warmup) {
    struct run_result r;
    struct run_metrics m;
    struct runner_event ev = {.workload = w, .warmup = true};
    progress(c, "%s: warm-up (discarded)", w->name);
    int rc = one_request(c, w, w->name, n_words, w->max_tokens, exact, false, &ev,
                         &r, &m, NULL);
    if (rc == OUT_OF_TIME) {
      run_result_free(&r);
      free(ms);
      out->n_skipped = reps;
      out->skipped_max_wait = true;
      bench_summarize(w->name, NULL, 0, NULL, c->opt->allow_cache, &out->summary);
      return 0;
    }
    note_implausible(out, &r);
    if (r.error != RUN_OK && r.error != RUN_ERR_INTERRUPTED) streak_kind = r.error, streak = 1;
    /* Aim the timed runs at the target with what the warm-up reported. */
    if (!w->prompt_text && !c->have_tokenizer && r.prompt_tokens > 0 && c->tokens_per_word > 0) {
      double adjust = ((double)w->prompt_tokens - (double)r.prompt_tokens) / c->tokens_per_word;
      double nw = (double)n_words + adjust;
      n_words = nw >= 1 ? (uint32_t)lround(nw) : 1;
    }
    run_result_free(&r);
    if (backend_interrupted()) {
      free(ms);
      return -2;
    }
  }
  out->n_words = n_words;

  /* An image job: the same text once without its images (warm, after the
   * warm-up), so the images' own tokens and prefill time can be told apart. */
  out->baseline_prompt_tokens = -1;
  out->baseline_prompt_ms = out->baseline_ttft_ms = NAN;
  if (w->job && c->n_images > 0) {
    struct run_result r;
    struct run_metrics m;
    struct runner_event ev = {.workload = w, .calibration = true, .image_baseline = true};
    progress(c, "%s: the text without its images (image cost)", w->name);
    c->text_only = true;
    int rc = one_request(c, w, w->name, n_words, w->max_tokens, exact, false, &ev, &r, &m, NULL);
    c->text_only = false;
    out->image_baseline = true;
    if (rc == 0) {
      out->baseline_prompt_tokens = m.prompt_tokens;
      out->baseline_prompt_ms = m.server_prompt_ms;
      out->baseline_ttft_ms = m.ttft_ms;
    }
    run_result_free(&r);
    if (rc == OUT_OF_TIME) {
      free(ms);
      out->n_skipped = reps;
      out->skipped_max_wait = true;
      bench_summarize(w->name, NULL, 0, NULL, c->opt->allow_cache, &out->summary);
      return 0;
    }
    if (backend_interrupted()) {
      free(ms);
      return -2;
    }
  }

  /* Steal over this workload's timed runs (the warm-up left out): on a VM
   * whose host runs other work on its CPUs, every time taken here is
   * stretched, and a local server's too. */
  struct machine_cpu_ticks ticks;
  machine_cpu_ticks_now(&ticks);
  uint32_t done = 0;
  for (uint32_t i = 0; i < reps; i++) {
    struct run_result r;
    struct runner_event ev = {.workload = w, .index = i};
    progress(c, "%s: run %u/%u", w->name, i + 1, reps);
    int rc = one_request(c, w, w->name, n_words, w->max_tokens, exact, false, &ev,
                         &r, &ms[i], NULL);
    if (rc == OUT_OF_TIME) {
      run_result_free(&r);
      out->n_skipped = reps - i;
      out->skipped_max_wait = true;
      break;
    }
    note_implausible(out, &r);
    if (c->last_verdict >= 0) out->answers[c->last_verdict]++;
    done++;
    c->res->runs++;
    if (rc != 0) {
      failed = 1;
      c->res->failed++;
      c->res->failed_by_kind[r.error]++;
      streak = r.error == streak_kind ? streak + 1 : 1;
      streak_kind = r.error;
    } else {
      streak = 0;
    }
    run_result_free(&r);
    if (backend_interrupted()) break;
    /* Give up early, say why: the same failure twice in a row (a server that
     * is gone or stalls would cost an idle timeout per request). */
    if (streak >= RUNNER_GIVE_UP_AFTER && i + 1 < reps && streak_kind != RUN_ERR_INTERRUPTED) {
      out->n_skipped = reps - (i + 1);
      out->skipped_after = streak_kind;
      progress(c, "%s: %u consecutive %s failures: the other %u runs are skipped", w->name,
               streak, run_error_name(streak_kind), out->n_skipped);
      break;
    }
  }
  out->cpu_steal_share = machine_steal_since(&ticks);
  bench_summarize(w->name, ms, done, NULL, c->opt->allow_cache, &out->summary);
  free(ms);
  if (backend_interrupted()) return -2;
  return failed;
}

/* Ollama: keep_alive 0 unloads the model after each answer, so a request sent
 * after one of those pays the load; its load_duration is the load cost. */
static void cold_series(struct run_ctx *c) {
  const struct workload *w = &c->opt->workloads[0];
  uint32_t n_words = c->res->workloads[0].n_words ? c->res->workloads[0].n_words : 20;
  struct run_result r;
  struct run_metrics m;
  struct runner_event ev = {.workload = w, .calibration = true};
  progress(c, "cold series: unloading the model");
  one_request(c, w, w->name, n_words, 2, false, true, &ev, &r, &m, NULL);
  run_result_free(&r);
  for (uint32_t i = 0; i < c->opt->reps && !backend_interrupted(); i++) {
    struct runner_event cev = {.workload = w, .index = i, .cold = true};
    progress(c, "cold series: run %u/%u (load, then answer)", i + 1, c->opt->reps);
    int rc = one_request(c, w, w->name, n_words, w->max_tokens, c->opt->exact_length, true,
                         &cev, &r, &m, NULL);
    if (rc == OUT_OF_TIME) {
      run_result_free(&r);
      break;
    }
    c->res->runs++;
    c->res->cold_runs++;
    if (rc != 0) {
      c->res->failed++;
      c->res->cold_failed++;
      c->res->failed_by_kind[r.error]++;
    }
    if (r.error == RUN_OK && isfinite(r.ollama_load_ms) && c->res->n_cold_load < RUNNER_MAX_REPS)
      c->res->cold_load_ms[c->res->n_cold_load++] = r.ollama_load_ms;
    run_result_free(&r);
  }
}

/* --cooldown: the machine idle for opt->cooldown_s before the next
 * workload, in slices of 100 ms so an interrupt ends the pause. */
static void cool_down(const struct run_ctx *c, const char *next) {
  progress(c, "cooling down for %g s before %s (--cooldown)", c->opt->cooldown_s, next);
  pause_for(c->opt->cooldown_s);
}

/* A fresh result and the context of one invocation (both runner_run's and
 * runner_calibrate's). */
static struct run_ctx begin(const struct runner_options *opt, struct runner_result *res) {
  memset(res, 0, sizeof *res);
  res->cache_baseline_tokens = -1;
  res->template_tokens = -1;
  res->tokens_per_word = NAN;
  res->retry_after_asked_s = res->retry_after_waited_s = NAN;
  struct run_ctx c = {.opt = opt,
                      .res = res,
                      .tokens_per_word = RUNNER_ASSUMED_TOKENS_PER_WORD,
                      .overhead_tokens = 10,
                      .aim_total = NAN,
                      .aim_words = NAN};
  if (opt->max_wait_s > 0) c.deadline_ns = tm_now_ns() + (uint64_t)(opt->max_wait_s * 1e9);
  metrics_options_init(&c.mopt);
  return c;
}

int runner_calibrate(const struct runner_options *opt, struct runner_result *res,
                     struct runner_line *line, struct tm_err *err) {
  struct run_ctx c = begin(opt, res);
  if (!opt->backend) return tm_errf(err, "runner: no backend");
  int rc = calibrate(&c, err);
  line->tokens_per_word = c.tokens_per_word;
  line->overhead_tokens = c.overhead_tokens;
  return rc;
}

uint32_t runner_words_for(const struct runner_line *line, uint32_t tokens) {
  struct run_ctx c = {.tokens_per_word = line->tokens_per_word,
                      .overhead_tokens = line->overhead_tokens};
  return words_for(&c, tokens);
}

int runner_run(const struct runner_options *opt, struct runner_result *res, struct tm_err *err) {
  struct run_ctx c = begin(opt, res);
  if (!opt->backend || opt->n_workloads == 0 || opt->n_workloads > RUNNER_MAX_WORKLOADS)
    return tm_errf(err, "runner: no backend or no workload");
  if (opt->reps == 0 || opt->reps > RUNNER_MAX_REPS)
    return tm_errf(err, "runner: repetitions must be 1..%d", RUNNER_MAX_REPS);

  if (calibrate(&c, err) != 0) {
    if (backend_interrupted()) {
      res->interrupted = true;
      return tm_errf(err, "interrupted during calibration: nothing was measured yet");
    }
    return -1;
  }

  int any_failed = 0;
  res->n_workloads = opt->n_workloads;
  const uint64_t t0 = tm_now_ns();
  for (size_t i = 0; i < opt->n_workloads; i++) {
    if (res->max_wait_reached) { /* --max-wait ran out: the rest is not sent */
      struct runner_workload_result *wr = &res->workloads[i];
      wr->workload = opt->workloads[i];
      wr->cpu_steal_share = NAN;
      wr->n_skipped = opt->reps;
      wr->skipped_max_wait = true;
      bench_summarize(wr->workload.name, NULL, 0, NULL, opt->allow_cache, &wr->summary);
      any_failed = 1;
      continue;
    }
    if (i > 0 && opt->cooldown_s > 0) cool_down(&c, opt->workloads[i].name);
    if (opt->step) { /* its place in the plan, and the time left at the pace so far */
      char msg[160], left[48] = "";
      if (i > 0) {
        const double s_left = (double)(tm_now_ns() - t0) / 1e9 / i * (opt->n_workloads - i);
        if (s_left < 90) snprintf(left, sizeof left, ", about %.0f s left", s_left);
        else snprintf(left, sizeof left, ", about %.0f min left", s_left / 60);
      }
      snprintf(msg, sizeof msg, "[%zu/%zu%s] %s: warm-up and %u timed runs", i + 1,
               opt->n_workloads, left, opt->workloads[i].name, opt->reps);
      opt->step(msg, opt->ctx);
    }
    int rc = run_workload(&c, i);
    if (rc == -2 || backend_interrupted()) {
      res->interrupted = true;
      res->n_workloads = i + 1;
      return tm_errf(err, "interrupted: the runs finished so far are recorded");
    }
    if (rc != 0) any_failed = 1;
  }
  if (opt->cold_series && backend_api(opt->backend) == API_OLLAMA && !res->max_wait_reached) {
    cold_series(&c);
    if (res->cold_failed) any_failed = 1;
  }
  if (backend_interrupted()) {
    res->interrupted = true;
    return tm_errf(err, "interrupted: the runs finished so far are recorded");
  }
  if (res->max_wait_reached) any_failed = 1;
  return any_failed;
}
