/* cmd_bench_server: `tokmeter bench --url URL`: what only the command line
 * knows (the flags' workloads, the API key's environment variable, the
 * prompt file, Ctrl-C) handed to the method (src/bench/server_bench.h), its
 * progress and warnings on stderr, its result rendered: the table, the
 * findings, the records line (-v: every line under the table, the cache
 * baseline, the prompt sizing, steal).
 *
 * Exit codes: 0 every timed run succeeded; 1 some runs failed, the server could
 * not be used, or Ctrl-C (everything measured before is in the results file);
 * 2 bad usage or input (flags, an unreadable model or prompt file). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench/image_cost.h"
#include "bench/server_table.h"
#include "bench/server_bench.h"
#include "bench/workloads.h"
#include "cli/bench_cli.h"
#include "cli/cli.h"
#include "record/record.h"
#include "util/redact.h"
#include "util/textfile.h"
#include "util/units.h"
#include "workload/workload_file.h"

static const char *const CMD = "bench";
#define PROMPT_FILE_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------- Ctrl-C --- */

static void on_sigint(int sig) {
  (void)sig;
  backend_interrupt();
}

/* ------------------------------------------------------------ helpers --- */

/* ------------------------------------------------------------ output --- */

/* At most this many findings on the screen, the most important first. */
#define SCREEN_FINDINGS 5

static void print_findings(const struct bench_findings *l, bool verbose) {
  if (!l->n) return;
  size_t *order = malloc(l->n * sizeof *order);
  if (!order) return;
  bench_findings_order(l, order);
  const size_t shown = verbose || l->n < SCREEN_FINDINGS ? l->n : SCREEN_FINDINGS;
  /* -v: the lines under the table and the steal line already say these */
  static const char *const in_details[] = {"runs_failed", "stream_buffered", "cache_hit",
                                           "count_mismatch", "reasoning_ate_budget", "drift",
                                           "above_ceiling"};
  for (size_t i = 0; i < shown; i++) {
    const struct bench_finding *f = &l->v[order[i]];
    bool said = false;
    for (size_t k = 0; verbose && k < sizeof in_details / sizeof *in_details; k++)
      said |= strcmp(f->code, in_details[k]) == 0;
    if (said) continue;
    if (verbose) printf("%s\n", f->text);
    else printf("%-7s %s\n", bench_severity_name(f->severity), f->brief);
  }
  if (l->n > shown) printf("(%zu more findings: -v, --json, tokmeter report)\n", l->n - shown);
  free(order);
}

/* The jobs with an expected answer: correct of checked, per job and in all
 * (a difference of one answer in a few is not a ranking: the counts, not a
 * percentage). */
static void print_answers(const struct runner_result *res) {
  uint32_t tot[3] = {0, 0, 0};
  bool any = false;
  for (size_t i = 0; i < res->n_workloads; i++) {
    const struct runner_workload_result *w = &res->workloads[i];
    if (!w->checked) continue;
    if (!any) printf("answers (checked after normalization, docs/workloads.md):\n");
    any = true;
    const uint32_t *a = w->answers, n = a[0] + a[1] + a[2];
    printf("  %-31s %u/%u correct", w->workload.name, a[ANSWER_CORRECT], n);
    if (a[ANSWER_WRONG]) printf(", %u wrong", a[ANSWER_WRONG]);
    if (a[ANSWER_NO_ANSWER]) printf(", %u no answer", a[ANSWER_NO_ANSWER]);
    if (n < w->summary.n_runs)
      printf(" (%u runs failed: not checked)", w->summary.n_runs - n);
    printf("\n");
    for (int k = 0; k < 3; k++) tot[k] += a[k];
  }
  if (any)
    printf("  %-31s %u/%u correct\n", "all", tot[ANSWER_CORRECT], tot[0] + tot[1] + tot[2]);
}

/* The jobs with images: tokens per image and the prefill they add, against
 * the same text sent once without them. */
static void print_images(const struct runner_result *res) {
  bool any = false;
  for (size_t i = 0; i < res->n_workloads; i++) {
    const struct runner_workload_result *w = &res->workloads[i];
    struct image_cost ic;
    image_cost_of(w, &ic);
    if (!ic.measured) continue;
    if (!any) printf("images (against the same text once without them):\n");
    any = true;
    const struct wl_image *f = &w->workload.job->images[0];
    char what[96] = "";
    if (ic.n_images == 1 && f->path)
      snprintf(what, sizeof what, " (%s %ux%u, %.1f KB)", f->mime + 6, f->width, f->height,
               f->bytes / 1000.0);
    printf("  %-31s %u image%s%s: ", w->workload.name, ic.n_images, ic.n_images == 1 ? "" : "s",
           what);
    if (isfinite(ic.tokens_per_image)) printf("%.0f tokens each", ic.tokens_per_image);
    else printf("tokens not known (no prompt count)");
    if (isfinite(ic.prefill_ms))
      printf(", prefill %+.1f ms (%s)", ic.prefill_ms,
             !strcmp(ic.prefill_source, "server") ? "server timer" : "TTFT difference");
    printf("\n");
  }
}

static void print_result(const struct sb_state *s, bool verbose) {
  const struct runner_result *res = s->res;
  /* the server's own words, cleaned for the terminal (util/redact.h) */
  char model[256], build[sizeof s->si.build];
  snprintf(model, sizeof model, "%s",
           s->model_name && *s->model_name ? s->model_name : "the served model");
  snprintf(build, sizeof build, "%s", s->si.build);
  tm_clean_control(model);
  tm_clean_control(build);
  printf("tokmeter %s - %s at %s (%s%s%s)\n", TOKMETER_VERSION, model, s->url_shown,
         api_family_name(s->api), build[0] ? ", build " : "", build);
  report_server_table(stdout, s->summaries, res->n_workloads, s->model.have ? s->ceilings : NULL,
                      verbose);
  print_images(res);
  print_answers(res);
  if (verbose) {
    if (res->have_cold && isfinite(res->cold.ttft_ms))
      printf("first request (cold, calibration-sized): TTFT %.1f ms%s\n", res->cold.ttft_ms,
             isfinite(res->cold.server_load_ms) ? " (server load time recorded)" : "");
    if (res->cache_baseline_tokens >= 0)
      printf("cache baseline: %lld prompt tokens shared before the nonce (chat template); "
             "runs above it are flagged\n",
             (long long)res->cache_baseline_tokens);
    else if (!res->cache_counter)
      printf("cache: this server reports no cached-token counter; a repeated prompt cannot be "
             "detected (every prompt starts with a fresh nonce)\n");
  }
  if (res->baseline_rejected[0]) cli_warn(CMD, "%s", res->baseline_rejected);
  if (res->n_cold_load) {
    double sum = 0;
    for (size_t i = 0; i < res->n_cold_load; i++) sum += res->cold_load_ms[i];
    printf("model load (--cold, %zu loads): %.0f ms mean%s\n", res->n_cold_load,
           sum / res->n_cold_load, res->cold_failed ? " (some cold runs failed)" : "");
  } else if (res->cold_runs) {
    printf("model load (--cold): not measured: %u of %u cold runs failed%s\n", res->cold_failed,
           res->cold_runs,
           res->cold_failed < res->cold_runs ? " (the others reported no load time)" : "");
  }
  if (verbose) {
    char sizing[1200];
    if (*sb_prompt_sizing_text(s, sizing, sizeof sizing)) printf("%s\n", sizing);
  }
  print_findings(&s->findings, verbose);
  printf("records: %s (%llu lines this run)\n", s->session.path,
         (unsigned long long)s->session.lines);
  cli_print_report_hint(s->session.path);
}

/* ---------------------------------------------------------------- hooks --- */

static void hook_progress(const char *msg, void *ctx) { cli_progress(msg, ctx); }
static void hook_progress_done(void *ctx) {
  (void)ctx;
  cli_progress_done();
}
static void hook_step(const char *msg, void *ctx) { cli_progress_step(msg, ctx); }
static void hook_warn(const char *msg, void *ctx) { cli_warn(ctx, "%s", msg); }
static void hook_note(const char *msg, void *ctx) { cli_note(ctx, "%s", msg); }
static void hook_summary_json(const void *record, void *ctx) {
  (void)ctx;
  char *line = record_dump(record);
  if (line) printf("%s\n", line);
  free(line);
}

/* --------------------------------------------------------------- main --- */

int bench_server(const struct bench_opts *o) {
  struct tm_err err = {{0}};
  int rc = TM_EXIT_OK;
  char url_shown[512];
  record_redact_url(o->url, url_shown, sizeof url_shown);
  if (backend_url_check(o->url, NULL, &err) != 0) {
    tm_redact(err.msg, sizeof err.msg, NULL);
    return cli_usage_error(CMD, "--url: %s", err.msg);
  }
  /* The key: read from the environment, sent as a header, never shown. */
  const char *key_env = o->api_key_env ? o->api_key_env : "OPENAI_API_KEY";
  const char *api_key = getenv(key_env);
  if (o->api_key_env && (!api_key || !*api_key))
    return cli_usage_error(CMD, "--api-key-env %s: that environment variable is not set",
                           key_env);
  if (api_key && !*api_key) api_key = NULL;

  char *prompt_text = NULL;
  struct workload_file wfile = {0};
  if (o->prompt_file &&
      !(prompt_text = tm_read_text_file(o->prompt_file, PROMPT_FILE_MAX_BYTES, &err)))
    return cli_fail(CMD, TM_EXIT_USAGE, "--prompt-file %s", err.msg);
  struct sb_opts so = {.url = o->url, .api = o->api, .endpoint = o->endpoint, .model = o->model,
                       .api_key = api_key, .gguf = o->gguf, .prompt_file = o->prompt_file,
                       .reps = o->reps, .allow_cache = o->allow_cache, .cold = o->cold,
                       .out = o->out, .idle_timeout_s = o->idle_timeout_s,
                       .timeout_s = o->timeout_s, .cooldown_s = o->cooldown_s,
                       .max_wait_s = o->max_wait_s,
                       .command = o->command};
  /* -w FILE.jsonl: the user's jobs, read and checked whole before anything runs */
  const bool from_file = workload_is_file(o->workloads);
  if (from_file) {
    char why[768];
    if (workload_file_load(o->workloads, &wfile, why, sizeof why) != 0) {
      rc = cli_fail(CMD, TM_EXIT_USAGE, "%s", why);
      goto out;
    }
  }
  const struct workload_request wr = {.names = from_file ? NULL : o->workloads,
                                      .file = from_file ? &wfile : NULL,
                                      .prompt_tokens = o->prompt_tokens,
                                      .n_prompt_tokens = o->n_prompt_tokens,
                                      .max_tokens = o->max_tokens,
                                      .n_max_tokens = o->n_max_tokens,
                                      .prompt_text = prompt_text, .ttft_sweep = o->ttft_sweep};
  if (workloads_from_request(&wr, so.workloads, &so.n_workloads, &err) != 0) {
    rc = cli_usage_error(CMD, "%s", err.msg);
    goto out;
  }
  if (o->list_models) {
    char (*names)[256] = calloc(256, sizeof *names);
    int n = names ? sb_list_models(&so, names, 256, &err) : -1;
    if (n < 0) rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", names ? err.msg : "out of memory");
    for (int i = 0; i < n; i++) printf("%s\n", names[i]);
    free(names);
    goto out;
  }
  const struct sb_hooks hooks = {.progress = hook_progress, .progress_done = hook_progress_done,
                                 .step = hook_step, .warn = hook_warn, .note = hook_note,
                                 .summary = o->json ? hook_summary_json : NULL,
                                 .ctx = (void *)CMD};
  struct sb_state *st = calloc(1, sizeof *st);
  if (!st) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
    goto out;
  }
  sb_state_init(st, &so, &hooks);
  struct sigaction sa = {0}, old_sa;
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  rc = sb_run(st);
  sigaction(SIGINT, &old_sa, NULL);
  cli_progress_done();
  if (st->measured && !o->json) print_result(st, o->verbose);
  if (rc != BENCH_OK) {
    if (st->err_is_usage) rc = cli_usage_error(CMD, "%s", st->err.msg);
    else rc = cli_fail(CMD, rc == BENCH_BAD_INPUT ? TM_EXIT_USAGE : TM_EXIT_RUNTIME, "%s",
                       st->err.msg);
  }
  sb_state_free(st);
  free(st);
out:
  free(prompt_text);
  workload_file_free(&wfile);
  return rc;
}
