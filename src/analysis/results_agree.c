/* results_agree: a run record's counts, times and rates against each other
 * (see results_agree.h for the identities and the tolerance).
 *
 * Why: report, compare and decide read a rate as it is written. A record
 * edited by hand, or written by a tool that computes a rate over another
 * span, can carry a prefill rate that its own prompt time and token count
 * contradict, and every figure built on it would be reported as if true.
 * The types and ranges are results.c's; here every figure is already a
 * number in range or null, and null leaves its identity unchecked. */
#include "record/keys.h"
#include "analysis/results_agree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/results.h"

static bool num_at(json_t *run, enum record_key path, double *out) {
  json_t *v = record_get(run, path);
  if (!json_is_number(v)) return false;
  *out = json_number_value(v);
  return true;
}

static bool int_at(json_t *run, enum record_key path, long long *out) {
  json_t *v = record_get(run, path);
  if (!json_is_integer(v)) return false;
  *out = (long long)json_integer_value(v);
  return true;
}

/* rate x ms / 1000 = n, within the tolerance: 0, or -1 with msg. The names
 * are how the message calls the three figures (count_name may be an
 * expression: a count key "- 1"). */
static int rate_time_count(double rate, const char *rate_name, double ms, const char *ms_name,
                           long long n, const char *count_name, char *msg, size_t cap) {
  double implied = rate * ms / 1000.0;
  double slack = RESULTS_AGREE_TOL_REL * fabs((double)n) + rate * RESULTS_AGREE_TOL_MS / 1000.0;
  if (fabs(implied - (double)n) <= slack) return 0;
  snprintf(msg, cap,
           "%s %g tok/s x %s %g ms is %.6g tokens, but %s is %lld: the figures contradict "
           "each other (more than %g%% apart)",
           rate_name, rate, ms_name, ms, implied, count_name, n, 100 * RESULTS_AGREE_TOL_REL);
  return -1;
}

/* The same with the rate and the time read from the record; unchecked when
 * either is null or absent. */
static int rate_check(json_t *run, enum record_key rate_key, enum record_key ms_key, long long n,
                      const char *count_name, char *msg, size_t cap) {
  double rate, ms;
  if (!num_at(run, rate_key, &rate) || !num_at(run, ms_key, &ms)) return 0;
  return rate_time_count(rate, record_key(rate_key), ms, record_key(ms_key), n, count_name, msg,
                         cap);
}

/* ------------------------------------------------------- in-process --- */

/* decode_by_segment entries that carry their time (engine runs): each one's
 * rate over its own to - from + 1 tokens. */
static int inprocess_segments(json_t *run, char *msg, size_t cap) {
  json_t *a = record_get(run, RK_DECODE_BY_SEGMENT);
  for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++) {
    json_t *e = json_array_get(a, i);
    json_t *tok_s = json_object_get(e, "tok_s"), *ms = json_object_get(e, "ms");
    if (!json_is_number(tok_s) || !json_is_number(ms)) continue;
    long long n = (long long)json_integer_value(json_object_get(e, "to")) -
                  (long long)json_integer_value(json_object_get(e, "from")) + 1;
    char rate_name[64], ms_name[64], count_name[64];
    snprintf(rate_name, sizeof rate_name, "decode_by_segment[%zu].tok_s", i);
    snprintf(ms_name, sizeof ms_name, "decode_by_segment[%zu].ms", i);
    snprintf(count_name, sizeof count_name, "decode_by_segment[%zu] to - from + 1", i);
    if (rate_time_count(json_number_value(tok_s), rate_name, json_number_value(ms), ms_name, n,
                        count_name, msg, cap))
      return -1;
  }
  return 0;
}

/* test (checked by results.c: pp<N> / tg<N>) names the tokens timed. */
static int inprocess_agrees(json_t *run, char *msg, size_t cap) {
  const char *test = record_str(run, RK_TEST);
  if (!test) return 0;
  long long n = atoll(test + 2), tokens;
  if (int_at(run, RK_TOKENS, &tokens) && tokens != n) {
    snprintf(msg, cap, "tokens %lld is not the %lld tokens test \"%s\" names", tokens, n, test);
    return -1;
  }
  if (rate_check(run, RK_RATE_TOK_S, RK_MS, n, record_key(RK_TOKENS), msg, cap)) return -1;
  return inprocess_segments(run, msg, cap);
}

/* ----------------------------------------------------------- server --- */

/* tokens.processed: llama.cpp's own count when it gave one, else prompt -
 * cached (metrics.c); -1 in *processed when the record has none. */
static int processed_agrees(json_t *run, long long *processed, char *msg, size_t cap) {
  long long prompt_n, prompt, cached = 0;
  *processed = -1;
  if (!int_at(run, RK_TOKENS_PROCESSED, processed)) return 0;
  if (int_at(run, RK_SERVER_PROMPT_N, &prompt_n)) {
    if (*processed == prompt_n) return 0;
    snprintf(msg, cap, "%s %lld is not %s %lld (the runtime's count of the prompt tokens it "
                       "evaluated)", record_key(RK_TOKENS_PROCESSED), *processed,
             record_key(RK_SERVER_PROMPT_N), prompt_n);
    return -1;
  }
  if (!int_at(run, RK_TOKENS_PROMPT, &prompt)) return 0;
  if (!int_at(run, RK_TOKENS_CACHED, &cached) || cached < 0) cached = 0;
  if (*processed == prompt - cached) return 0;
  snprintf(msg, cap, "%s %lld is not %s %lld - %s %lld", record_key(RK_TOKENS_PROCESSED),
           *processed, record_key(RK_TOKENS_PROMPT), prompt, record_key(RK_TOKENS_CACHED), cached);
  return -1;
}

/* The count the client decode rate divides (generated - 1 over the decode
 * span): the server's generated count, else the client's (metrics.c). -1
 * when the record has neither. */
static long long generated_of(json_t *run, const char **name, char *buf, size_t cap) {
  long long n;
  snprintf(buf, cap, "%s - 1", record_key(RK_TOKENS_COMPLETION));
  *name = buf;
  if (int_at(run, RK_TOKENS_COMPLETION, &n)) return n;
  *name = "the client's generated count - 1";
  json_t *per_chunk = record_get(run, RK_CLIENT_CHUNK_TOKENS);
  if (json_is_array(per_chunk)) {
    long long sum = 0;
    for (size_t i = 0; i < json_array_size(per_chunk); i++) {
      json_t *v = json_array_get(per_chunk, i);
      if (!json_is_integer(v)) return -1;
      sum += json_integer_value(v) > 0 ? (long long)json_integer_value(v) : 1;
    }
    return sum;
  }
  return int_at(run, RK_TOKENS_CLIENT_CHUNKS, &n) ? n : -1;
}

/* The server's decode rate: llama.cpp (predicted_n - 1) / predicted_ms,
 * Ollama completion / eval time; LM Studio's own figure is not checked. */
static int decode_server_agrees(json_t *run, char *msg, size_t cap) {
  long long n;
  if (json_is_object(record_get(run, RK_SERVER_LMSTUDIO))) return 0;
  char predicted_less_one[64];
  snprintf(predicted_less_one, sizeof predicted_less_one, "%s - 1",
           record_key(RK_SERVER_PREDICTED_N));
  if (int_at(run, RK_SERVER_PREDICTED_N, &n))
    return rate_check(run, RK_RATES_DECODE_SERVER, RK_SERVER_PREDICTED_MS, n - 1,
                      predicted_less_one, msg, cap);
  if (int_at(run, RK_TOKENS_COMPLETION, &n))
    return rate_check(run, RK_RATES_DECODE_SERVER, RK_SERVER_PREDICTED_MS, n,
                      record_key(RK_TOKENS_COMPLETION), msg, cap);
  return 0;
}

/* A phase's headline rate is the figure its source names, as written. */
struct phase_keys {
  enum record_key headline, source, server, client;
};
static const struct phase_keys PREFILL_KEYS = {RK_RATES_PREFILL_HEADLINE, RK_RATES_PREFILL_SOURCE,
                                               RK_RATES_PREFILL_SERVER, RK_RATES_PREFILL_CLIENT};
static const struct phase_keys DECODE_KEYS = {RK_RATES_DECODE_HEADLINE, RK_RATES_DECODE_SOURCE,
                                              RK_RATES_DECODE_SERVER, RK_RATES_DECODE_CLIENT};

static int headline_agrees(json_t *run, const struct phase_keys *k, char *msg, size_t cap) {
  double headline, figure;
  const char *source = record_str(run, k->source), *key = record_key(k->headline);
  if (!num_at(run, k->headline, &headline) || !source ||
      (strcmp(source, "server") && strcmp(source, "client")))
    return 0;
  const enum record_key fk = strcmp(source, "server") == 0 ? k->server : k->client;
  const char *figure_key = record_key(fk);
  if (!num_at(run, fk, &figure)) {
    snprintf(msg, cap, "%s %g names source \"%s\", but %s is null", key, headline, source,
             figure_key);
    return -1;
  }
  if (fabs(headline - figure) <= RESULTS_AGREE_TOL_REL * figure) return 0;
  snprintf(msg, cap, "%s %g is not %s %g, the source it names (more than %g%% apart)", key,
           headline, figure_key, figure, 100 * RESULTS_AGREE_TOL_REL);
  return -1;
}

static int server_agrees(json_t *run, char *msg, size_t cap) {
  long long processed;
  if (processed_agrees(run, &processed, msg, cap)) return -1;
  if (processed >= 0 &&
      (rate_check(run, RK_RATES_PREFILL_SERVER, RK_SERVER_PROMPT_MS, processed,
                  record_key(RK_TOKENS_PROCESSED), msg, cap) ||
       rate_check(run, RK_RATES_PREFILL_CLIENT, RK_CLIENT_TTFT_MS, processed,
                  record_key(RK_TOKENS_PROCESSED), msg, cap)))
    return -1;
  if (decode_server_agrees(run, msg, cap)) return -1;
  const char *generated_name;
  char name_buf[64];
  long long generated = generated_of(run, &generated_name, name_buf, sizeof name_buf);
  if (generated >= 0 && rate_check(run, RK_RATES_DECODE_CLIENT, RK_CLIENT_DECODE_SPAN_MS,
                                   generated - 1, generated_name, msg, cap))
    return -1;
  return headline_agrees(run, &PREFILL_KEYS, msg, cap) ||
                 headline_agrees(run, &DECODE_KEYS, msg, cap)
             ? -1
             : 0;
}

int results_run_agrees(json_t *run, bool in_process, char *msg, size_t cap) {
  return in_process ? inprocess_agrees(run, msg, cap) : server_agrees(run, msg, cap);
}
