/* server_bench: see server_bench.h. The one-way flow of docs/design.md:
 * backend (one request -> run_result) -> runner (the method) -> metrics and
 * summaries -> records (each run line as it ends) and the findings. */
#include "bench/server_bench.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/buildcheck.h"
#include "bench/image_cost.h"
#include "bench/records_bench.h"
#include "bench/server_findings.h"
#include "gguf/ggml_types.h"
#include "util/redact.h"
#include "util/units.h"

/* ---------------------------------------------------------- the hooks --- */

static void say(void (*fn)(const char *, void *), void *ctx, const char *fmt, va_list ap) {
  if (!fn) return;
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fn(msg, ctx);
}

static void sb_warn(const struct sb_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_warn(const struct sb_state *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s->hooks.warn, s->hooks.ctx, fmt, ap);
  va_end(ap);
}

static void sb_note(const struct sb_state *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_note(const struct sb_state *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s->hooks.note, s->hooks.ctx, fmt, ap);
  va_end(ap);
}

static void sb_progress_done(const struct sb_state *s) {
  if (s->hooks.progress_done) s->hooks.progress_done(s->hooks.ctx);
}

static int sb_fail(struct sb_state *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int sb_fail(struct sb_state *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err.msg, sizeof s->err.msg, fmt, ap);
  va_end(ap);
  /* the server's text may echo the key: never shown */
  tm_redact(s->err.msg, sizeof s->err.msg, s->o->api_key);
  return code;
}

/* ------------------------------------------------------ the model file --- */

static int load_model(struct sb_state *s, const char *path) {
  struct sb_model *m = &s->model;
  struct tm_err err = {{0}};
  struct model_file_facts facts;
  if (model_cost_from_file(path, GGML_TYPE_F16, &m->cost, &facts, &err) != 0)
    return sb_fail(s, BENCH_BAD_INPUT, "%s", err.msg);
  snprintf(m->arch, sizeof m->arch, "%s", m->cost.arch);
  snprintf(m->name, sizeof m->name, "%s", facts.name[0] ? facts.name : path);
  /* The file's type names it ("Q4_K_M"), else the tensors' (the type
   * holding the most bytes), as in the in-process records. */
  snprintf(m->type, sizeof m->type, "%s",
           facts.file_type[0] ? facts.file_type : model_most_bytes_type(&m->cost));
  m->have = true;
  return 0;
}

/* The server's prefill ceiling is held against the compute its kernels can
 * use: the int8 vector path, or the int8 tiles (AMX) when a server on this
 * machine reports a build that uses them (llama.cpp's "AMX_INT8 = 1"): its
 * prefill can run far past the vector rate, and "above the ceiling" would
 * then be a false alarm. */
static void probe_for_ceilings(struct sb_state *s, bool server_uses_tiles) {
  struct sb_model *m = &s->model;
  struct machine_probe *p = calloc(1, sizeof *p);
  struct tm_err err = {{0}};
  m->bandwidth = NAN;
  m->rates = (struct ceiling_rates){.read_bw_bytes_s = NAN};
  if (!p) return;
  if (s->hooks.progress)
    s->hooks.progress("probing this machine for the ceilings (once, then cached)", s->hooks.ctx);
  int rc = probe_get(p, false, s->hooks.progress, s->hooks.ctx, &err);
  sb_progress_done(s);
  if (rc != 0) {
    sb_warn(s, "no ceilings: the probe failed: %s", err.msg);
    free(p);
    return;
  }
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) sb_warn(s, "%s", warn);
  m->bandwidth = probe_best_read_bw(p, NULL);
  m->rates = (struct ceiling_rates){.read_bw_bytes_s = m->bandwidth,
                                    .f32_flops = probe_best_f32(p, NULL),
                                    .int8_ops = probe_best_int8(p, NULL),
                                    .int8_tile_ops = probe_best_int8_tile(p, NULL),
                                    .tiles = server_uses_tiles};
  const char *path = ceiling_compute_path(m->cost.quantized_bytes_fraction, &m->rates, 1);
  if (server_uses_tiles && path && !strcmp(path, "int8_tile")) {
    char a[32];
    sb_note(s, "the server's build uses %s tiles: its prefill ceiling is their int8 rate, %s",
            p->int8_tile_path, tm_fmt_ops(m->rates.int8_tile_ops, "OPS", a, sizeof a));
  }
  free(p);
}

/* Ceilings at a prompt of `prompt` tokens (the server's count) followed by
 * max_tokens generated ones: decode at the context depths those tokens were
 * generated at (prompt .. prompt + n - 1), prefill at the prompt's length
 * (model/ceiling.h, as every command). A workload's summary passes its runs'
 * median prompt, each run record its own, so the run's percentages and the
 * summary's rest on the same machine figures and model analysis. */
static struct record_ceiling ceiling_at(const struct sb_model *m, double prompt,
                                        uint32_t max_tokens) {
  struct record_ceiling c = record_ceiling_none();
  if (!m->have || !isfinite(m->bandwidth)) return c;
  const struct ceiling_workload w = {.prompt_tokens = prompt >= 1 ? (uint64_t)prompt : 0,
                                     .gen_tokens = max_tokens ? max_tokens : 1};
  struct ceiling_result r;
  ceiling_of_workload(&m->cost, &m->rates, &w, &r);
  c.read_bandwidth_bytes_s = m->bandwidth;
  c.bytes_per_token = r.bytes_per_token;
  c.decode_ceiling_tok_s = ceiling_tok_s(m->bandwidth, r.bytes_per_token);
  if (w.prompt_tokens && r.compute_path) {
    c.flops_per_token = r.flops_per_token;
    c.compute_ops_s = r.compute_ops_s;
    c.compute_path = r.compute_path;
    c.prefill_ceiling_tok_s = r.prefill_tok_s;
  }
  return c;
}

/* When the prompt a ceiling needs is not known (a run whose server reported
 * no prompt count: it failed first, or sent no usage; a workload none of
 * whose runs did): the machine's bandwidth, and no ceiling. The depth the
 * tokens saw is not known, and a ceiling at a guessed depth would be a
 * number that is not true. */
static struct record_ceiling ceiling_depth_unknown(const struct sb_model *m) {
  struct record_ceiling c = record_ceiling_none();
  if (m->have) c.read_bandwidth_bytes_s = m->bandwidth; /* NAN when the probe failed */
  return c;
}

/* One workload's ceilings: at its successful runs' median prompt. */
static struct record_ceiling ceiling_for(const struct sb_model *m, const struct bench_summary *s,
                                         uint32_t max_tokens) {
  if (!isfinite(s->prompt_tokens.median)) return ceiling_depth_unknown(m);
  return ceiling_at(m, s->prompt_tokens.median, max_tokens);
}

/* One run's ceilings: at the prompt the server reported for it. */
static struct record_ceiling ceiling_for_run(const struct sb_model *m,
                                             const struct run_metrics *rm, uint32_t max_tokens) {
  if (rm->prompt_tokens < 0) return ceiling_depth_unknown(m);
  return ceiling_at(m, (double)rm->prompt_tokens, max_tokens);
}

bool sb_url_is_local(const char *url) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  return !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
}

/* Rule 10: only meaningful for a server on this machine. */
static void check_build_flags(struct sb_state *s) {
  if (!sb_url_is_local(s->o->url)) return;
  const char *missing[BUILDCHECK_MAX];
  int n = buildcheck_missing(s->si.system_info, &s->mi, missing);
  for (int i = 0; i < n; i++) {
    sb_warn(s, "the server's build does not use %s, which this CPU has: expect lower prefill; "
               "rebuild the server for this CPU", missing[i]);
    struct bench_finding *f = bench_findings_add(&s->findings, "build_flags_missing", BENCH_WARNING);
    bench_finding_brief(f, "the server's build does not use %s, which this CPU has: lower prefill",
                        missing[i]);
    bench_finding_text(f, "The server's build does not use %s, which this CPU has: expect lower "
                          "prefill; rebuild the server for this CPU.", missing[i]);
  }
}

/* ------------------------------------------------------------- the sink --- */

/* Each finished request: its run line, on disk before the next request. */
static void sink(const struct runner_event *ev, void *vctx) {
  struct sb_state *s = vctx;
  json_t *settings = json_object();
  if (ev->workload) {
    json_object_set_new(settings, "workload", json_string(ev->workload->name));
    json_object_set_new(settings, "prompt_tokens_target",
                        json_integer(ev->workload->prompt_tokens));
  }
  json_object_set_new(settings, "max_tokens", json_integer(ev->request->max_tokens));
  json_object_set_new(settings, "exact_length", json_boolean(ev->request->exact_length));
  json_object_set_new(settings, "nonce", json_true());
  json_object_set_new(settings, "unload_after", json_boolean(ev->request->unload_after));
  if (ev->image_baseline) json_object_set_new(settings, "image_baseline", json_true());
  if (ev->workload && ev->workload->job) {
    /* a workload file's job: its name is the configuration (series.h) */
    json_object_set_new(settings, "job", json_true());
    json_object_set_new(settings, "images", json_integer((json_int_t)ev->request->n_images));
  }
  struct record_run_in in = {
      .identity = s->session.identity,
      .workload = ev->workload ? ev->workload->name : NULL,
      .index = ev->index,
      .warmup = ev->warmup,
      .cold = ev->cold,
      .calibration = ev->calibration,
      .backend = api_family_name(s->api),
      .target = s->o->url,
      .model = s->model_name,
      .settings = settings,
      .max_tokens = ev->request->max_tokens,
      .ceiling = NULL,
  };
  /* With the model file: the same ceiling object as the summaries, at this
   * run's own prompt and max_tokens. */
  struct record_ceiling ceiling;
  if (s->model.have) {
    ceiling = ceiling_for_run(&s->model, ev->metrics, ev->request->max_tokens);
    in.ceiling = &ceiling;
  }
  json_t *answer = ev->answer && ev->workload && ev->workload->job
                       ? answer_check_json(&ev->workload->job->expect, ev->answer)
                       : NULL;
  in.answer = answer;
  bench_session_write(&s->session, record_run_build(&in, ev->result, ev->metrics));
  json_decref(settings);
  json_decref(answer);
  if (!ev->warmup && !ev->calibration && ev->result->error != RUN_OK) {
    sb_progress_done(s);
    sb_warn(s, "%s %srun %u failed (%s): %s", ev->workload ? ev->workload->name : "",
            ev->cold ? "cold " : "", ev->index + 1, run_error_name(ev->result->error),
            ev->result->error_msg);
  }
}

/* The runner gives progress and sink one context, the state. */
static void runner_progress(const char *message, void *ctx) {
  const struct sb_state *s = ctx;
  if (!s->hooks.progress) return;
  /* each request's line names the workload's place in the plan too */
  char line[1200];
  snprintf(line, sizeof line, "%s%s%s", s->place, s->place[0] ? " " : "", message);
  s->hooks.progress(line, s->hooks.ctx);
}

/* "[2/3, about 40 s left] extract: ...": the place is kept for the lines of
 * that workload's requests. */
static void runner_step(const char *message, void *ctx) {
  struct sb_state *s = ctx;
  const char *end = message[0] == '[' ? strchr(message, ']') : NULL;
  if (end) snprintf(s->place, sizeof s->place, "%.*s", (int)(end - message + 1), message);
  if (s->hooks.step) s->hooks.step(message, s->hooks.ctx);
}

/* --------------------------------------------------------------- the run --- */

void sb_state_init(struct sb_state *s, const struct sb_opts *o, const struct sb_hooks *hooks) {
  memset(s, 0, sizeof *s);
  s->o = o;
  if (hooks) s->hooks = *hooks;
  s->steal_share = NAN;
  record_redact_url(o->url, s->url_shown, sizeof s->url_shown);
}

void sb_state_free(struct sb_state *s) {
  bench_session_end(&s->session, 0, NULL, false, NAN, NULL); /* only when still open */
  free(s->res);
  s->res = NULL;
  bench_findings_free(&s->findings);
}

/* The connection and the server's own requests (detection, /props,
 * /tokenize, ...): 10 s each, or --timeout or --idle-timeout when shorter
 * (an answer in one piece is one gap). */
static double info_timeout_of(const struct sb_opts *o) {
  double t = o->timeout_s > 0 && o->timeout_s < 10 ? o->timeout_s : 10;
  if (o->idle_timeout_s > 0 && o->idle_timeout_s < t) t = o->idle_timeout_s;
  return t;
}

/* The backend for o, the API detected when not given; NULL with s->err. */
static struct backend *open_backend(struct sb_state *s) {
  const struct sb_opts *o = s->o;
  struct tm_err err = {{0}};
  const double info_timeout_s = info_timeout_of(o);
  s->api = (enum api_family)o->api;
  if (s->api == API_AUTO &&
      backend_detect_within(o->url, o->api_key, info_timeout_s, &s->api, &err) != 0) {
    sb_fail(s, BENCH_RUNTIME, "%s", err.msg);
    return NULL;
  }
  struct backend_config cfg = {.base_url = o->url,
                               .api = s->api,
                               .endpoint = (enum api_endpoint)o->endpoint,
                               .api_key = o->api_key,
                               .connect_timeout_s = info_timeout_s};
  struct backend *b = backend_new(&cfg, &err);
  if (!b) {
    s->err_is_usage = true;
    sb_fail(s, BENCH_BAD_INPUT, "--url %s: %s", s->url_shown, err.msg);
  }
  return b;
}

int sb_list_models(const struct sb_opts *o, char (*names)[256], int cap, struct tm_err *err) {
  struct sb_state s;
  sb_state_init(&s, o, NULL);
  struct backend *b = open_backend(&s);
  if (!b) {
    *err = s.err;
    return -1;
  }
  int n = backend_list_models(b, names, cap, err);
  backend_free(b);
  if (n < 0) {
    tm_redact(err->msg, sizeof err->msg, o->api_key);
    tm_err_prefix(err, "cannot list models");
    return -1;
  }
  for (int i = 0; i < n; i++) { /* the server's text: no key, no control byte */
    tm_redact(names[i], sizeof names[i], o->api_key);
    tm_clean_control(names[i]);
  }
  return n;
}

/* The identity line: the settings, this machine, the server, the model. */
static int open_records(struct sb_state *s, const struct machine_thermal *th_before) {
  const struct sb_opts *o = s->o;
  struct tm_err err = {{0}};
  json_t *settings = json_pack(
      "{s:s, s:s, s:s, s:s?, s:s?, s:i, s:b, s:b, s:b, s:f, s:f, s:s?}", "url", s->url_shown,
      "api", api_family_name(s->api), "endpoint",
      o->endpoint == ENDPOINT_CHAT ? "chat" : "completion", "model", o->model, "gguf", o->gguf,
      "reps", o->reps ? o->reps : 3, "allow_cache", o->allow_cache, "cold", o->cold, "warmup", 1,
      "idle_timeout_s", o->idle_timeout_s, "timeout_s", o->timeout_s, "prompt_file",
      o->prompt_file);
  json_t *wl = json_array();
  for (size_t i = 0; i < o->n_workloads; i++)
    json_array_append_new(wl, json_pack("{s:s, s:i, s:i}", "name", o->workloads[i].name,
                                        "prompt_tokens", o->workloads[i].prompt_tokens,
                                        "max_tokens", o->workloads[i].max_tokens));
  json_object_set_new(settings, "workloads", wl);
  json_object_set_new(settings, "cooldown_s", json_real(o->cooldown_s));
  json_object_set_new(settings, "max_wait_s",
                      o->max_wait_s > 0 ? json_real(o->max_wait_s) : json_null());
  const struct sb_model *m = &s->model;
  struct record_model rm = {.name = m->have ? m->name : s->model_name,
                            .file = o->gguf,
                            .arch = m->have ? m->arch : NULL,
                            .type = m->have ? m->type : NULL,
                            .bytes_per_token = m->have ? m->cost.weight_bytes_per_token : NAN};
  struct record_identity_in idin = {.tokmeter_version = TOKMETER_VERSION,
                                    .settings = settings,
                                    .machine = &s->mi,
                                    .thermal_before = th_before,
                                    .server = &s->si,
                                    .model = &rm,
                                    .backend = api_family_name(s->api),
                                    .target = o->url,
                                    .command = o->command};
  int rc = bench_session_open(&s->session, o->out, &idin, &err);
  json_decref(settings);
  /* a file that cannot be opened is the user's path; an identity that
   * cannot be written is the disk's */
  if (rc != 0) return sb_fail(s, rc == -1 ? BENCH_BAD_INPUT : BENCH_RUNTIME, "%s", err.msg);
  return 0;
}

/* What happened outside any workload: a calibration that failed or broke a
 * plausibility rule, a Retry-After, the budget running out. */
static void invocation_findings(struct sb_state *s) {
  const struct runner_result *res = s->res;
  struct bench_finding *f;
  if (s->run_rc < 0 && !res->interrupted && s->run_err[0]) {
    f = bench_findings_add(&s->findings, "calibration_failed", BENCH_PROBLEM);
    bench_finding_brief(f, "the calibration failed: nothing measured");
    bench_finding_text(f, "%s", s->run_err);
    if (f) tm_clean_control(f->text);
  }
  if (res->calibration_check != RUN_CHECK_NONE) {
    uint32_t n[RUN_CHECK_COUNT] = {0};
    char first[RUN_CHECK_COUNT][160] = {{0}};
    n[res->calibration_check] = 1;
    snprintf(first[res->calibration_check], sizeof first[0], "%s", res->calibration_check_msg);
    bench_implausible_findings("calibration", n, (const char(*)[160])first, 2, &s->findings);
  }
  if (isfinite(res->retry_after_asked_s)) {
    const bool waited = res->retry_after_waited_s > 0 || res->retry_after_asked_s == 0;
    f = bench_findings_add(&s->findings, "retry_after", BENCH_WARNING);
    bench_finding_figure(f, "http_status", res->retry_after_status);
    bench_finding_figure(f, "retry_after_s", res->retry_after_asked_s);
    bench_finding_figure(f, "waited_s", waited ? res->retry_after_waited_s : 0);
    bench_finding_brief(f, "%s: HTTP %d, Retry-After %.0f s: %s", res->retry_after_request,
                        res->retry_after_status, res->retry_after_asked_s,
                        waited ? "waited once, then went on" : "too long, not waited");
    bench_finding_text(f, "The server answered %s with HTTP %d and asked to retry after %.0f s; "
                          "%s (Retry-After is honoured once per invocation, up to %.0f s).",
                       res->retry_after_request, res->retry_after_status,
                       res->retry_after_asked_s,
                       waited ? "the next request waited that long"
                              : "that was more than tokmeter waits or the budget left, so it was "
                                "not waited for",
                       RUNNER_RETRY_AFTER_MAX_S);
  }
  if (res->max_wait_reached) {
    f = bench_findings_add(&s->findings, "max_wait_reached", BENCH_PROBLEM);
    bench_finding_figure(f, "max_wait_s", s->o->max_wait_s);
    bench_finding_brief(f, "--max-wait (%.0f s) ran out: the measurement is incomplete",
                        s->o->max_wait_s);
    bench_finding_text(f, "The invocation's budget (--max-wait %.0f s) ran out: the request in "
                          "flight was cut and the rest were not sent.", s->o->max_wait_s);
  }
}

/* Summaries (with their ceilings and findings), then the end line. */
static void summarize(struct sb_state *s) {
  const struct runner_result *res = s->res;
  for (size_t i = 0; i < res->n_workloads; i++) {
    const struct runner_workload_result *wr = &res->workloads[i];
    s->summaries[i] = wr->summary;
    s->ceilings[i] = ceiling_for(&s->model, &s->summaries[i], wr->workload.max_tokens);
    json_t *ws = json_pack("{s:i, s:i, s:i, s:s, s:o}", "prompt_tokens_target",
                           wr->workload.prompt_tokens, "max_tokens", wr->workload.max_tokens,
                           "prompt_words", wr->n_words, "prompt_sizing",
                           runner_prompt_sizing_name(wr->prompt_sizing), "tokens_per_word",
                           wr->prompt_sizing == SIZING_TOKENS_PER_WORD
                               ? record_json_num(res->tokens_per_word)
                               : json_null());
    json_t *sum = record_summary_build(s->session.identity, &s->summaries[i], ws,
                                       s->model.have ? &s->ceilings[i] : NULL,
                                       wr->cpu_steal_share);
    json_decref(ws);
    /* runs given up (runner.h RUNNER_GIVE_UP_AFTER): how many, after what */
    if (sum)
      json_object_set_new(sum, "skipped",
                          wr->n_skipped
                              ? json_pack("{s:i, s:s}", "runs", (int)wr->n_skipped, "after",
                                          wr->skipped_max_wait ? "max-wait"
                                                               : run_error_name(wr->skipped_after))
                              : json_null());
    /* a job with an expect: its timed runs' verdicts */
    if (sum)
      json_object_set_new(sum, "answers",
                          wr->checked ? json_pack("{s:i, s:i, s:i}", "correct",
                                                  (int)wr->answers[ANSWER_CORRECT], "wrong",
                                                  (int)wr->answers[ANSWER_WRONG], "no_answer",
                                                  (int)wr->answers[ANSWER_NO_ANSWER])
                                      : json_null());
    /* a job with images: what they cost (image_cost.h) */
    struct image_cost ic;
    image_cost_of(wr, &ic);
    if (sum) {
      json_t *im = json_null();
      if (ic.measured) {
        json_t *files = json_array();
        for (size_t k = 0; k < wr->workload.job->n_images; k++) {
          const struct wl_image *f = &wr->workload.job->images[k];
          json_array_append_new(
              files, json_pack("{s:s?, s:o, s:o, s:o}", "mime", f->mime[0] ? f->mime : NULL,
                               "width", f->width ? json_integer(f->width) : json_null(), "height",
                               f->height ? json_integer(f->height) : json_null(), "bytes",
                               f->path ? json_integer((json_int_t)f->bytes) : json_null()));
        }
        im = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:s?}", "n", (int)ic.n_images, "files",
                       files, "baseline_prompt_tokens",
                       wr->baseline_prompt_tokens >= 0 ? json_integer(wr->baseline_prompt_tokens)
                                                       : json_null(),
                       "tokens", record_json_num(ic.tokens), "tokens_per_image",
                       record_json_num(ic.tokens_per_image), "prefill_ms",
                       record_json_num(ic.prefill_ms), "prefill_source", ic.prefill_source);
      }
      json_object_set_new(sum, "images", im ? im : json_null());
    }
    /* this workload's findings, in its summary and in the invocation's list */
    struct bench_findings mine = {0};
    if (ic.measured && isfinite(ic.tokens) && ic.tokens <= 0) {
      struct bench_finding *f = bench_findings_add(&mine, "images_not_counted", BENCH_WARNING);
      if (f) snprintf(f->config.workload, sizeof f->config.workload, "%s", wr->workload.name);
      bench_finding_figure(f, "image_tokens", ic.tokens);
      bench_finding_brief(f, "%s: the prompt counted %.0f tokens more with its images than without: "
                             "the server may have ignored them", wr->workload.name, ic.tokens);
      bench_finding_text(f, "%s: with its %u images the prompt was %.0f tokens longer than the "
                            "same text alone: the server did not count the images, so it may "
                            "have dropped them (a model without a vision projector).",
                         wr->workload.name, ic.n_images, ic.tokens);
    }
    bench_server_findings(&s->summaries[i], s->model.have ? &s->ceilings[i] : NULL,
                          wr->cpu_steal_share, &mine);
    bench_implausible_findings(wr->workload.name, wr->implausible, wr->implausible_first,
                               s->summaries[i].n_runs + 1, &mine);
    if (wr->n_skipped) {
      struct bench_finding *f = bench_findings_add(&mine, "runs_skipped", BENCH_PROBLEM);
      if (f) snprintf(f->config.workload, sizeof f->config.workload, "%s", wr->workload.name);
      bench_finding_figure(f, "skipped_runs", wr->n_skipped);
      if (wr->skipped_max_wait) {
        bench_finding_brief(f, "%s: %u runs not sent: --max-wait (%.0f s) ran out",
                            wr->workload.name, wr->n_skipped, s->o->max_wait_s);
        bench_finding_text(f, "%s: %u timed runs were not sent: the invocation's budget "
                              "(--max-wait %.0f s) ran out.", wr->workload.name, wr->n_skipped,
                           s->o->max_wait_s);
      } else {
        bench_finding_brief(f, "%s: %u runs skipped after %d %s failures in a row",
                            wr->workload.name, wr->n_skipped, RUNNER_GIVE_UP_AFTER,
                            run_error_name(wr->skipped_after));
        bench_finding_text(f, "%s: after %d consecutive %s failures the other %u timed runs "
                              "were not sent: the server is gone or stalls, and each would have "
                              "waited its timeout.", wr->workload.name, RUNNER_GIVE_UP_AFTER,
                           run_error_name(wr->skipped_after), wr->n_skipped);
      }
    }
    for (size_t k = 0; k < mine.n; k++) {
      struct bench_finding *f = bench_findings_add(&s->findings, mine.v[k].code, mine.v[k].severity);
      if (f) *f = mine.v[k];
    }
    if (sum) json_object_set_new(sum, "findings", bench_findings_json(&mine));
    bench_findings_free(&mine);
    if (sum && s->hooks.summary) s->hooks.summary(sum, s->hooks.ctx);
    bench_session_write(&s->session, sum);
  }
  invocation_findings(s);
  /* the invocation's steal, when no workload's own was said */
  bench_server_steal_finding(s->steal_share, &s->findings);
  bench_session_end(&s->session, res->runs, res->failed_by_kind, res->interrupted, s->steal_share,
                    &s->findings);
}

/* The server could not be used at all (unreachable, or answering like no
 * known API): the invocation still leaves its identity and end records, the
 * failure's kind counted and said as a finding, so a sweep over many
 * endpoints tells "down" from "not tried". Best effort: the error already
 * in s->err is what the caller reports. */
static void record_unusable_server(struct sb_state *s) {
  const bool unreachable = strstr(s->err.msg, "cannot reach") != NULL;
  struct machine_thermal th;
  struct tm_err err = {{0}};
  if (machine_info_read(&s->mi, &err) != 0) memset(&s->mi, 0, sizeof s->mi);
  machine_thermal_read(&th);
  const struct tm_err saved = s->err;
  if (open_records(s, &th) != 0) {
    s->err = saved;
    return;
  }
  s->err = saved;
  struct bench_finding *f = bench_findings_add(
      &s->findings, unreachable ? "server_unreachable" : "server_not_identified", BENCH_PROBLEM);
  bench_finding_brief(f, "%s", unreachable ? "the server could not be reached: nothing measured"
                                           : "the server answered like no known API: nothing "
                                             "measured");
  bench_finding_text(f, "%s", s->err.msg);
  if (f) tm_clean_control(f->text); /* a server's or libcurl's words */
  uint32_t failed[RUN_ERR_COUNT] = {0};
  failed[unreachable ? RUN_ERR_CONNECT : RUN_ERR_OTHER] = 1;
  bench_session_end(&s->session, 0, failed, false, NAN, &s->findings);
}

int sb_run(struct sb_state *s) {
  const struct sb_opts *o = s->o;
  struct tm_err err = {{0}};
  /* --model is sent inside JSON requests and recorded: UTF-8 text only. */
  if (o->model && !tm_utf8_valid(o->model, strlen(o->model))) {
    s->err_is_usage = true;
    return sb_fail(s, BENCH_BAD_INPUT, "--model: not UTF-8 text");
  }
  int rc;
  if (o->gguf && (rc = load_model(s, o->gguf)) != 0) return rc;
  struct backend *b = open_backend(s);
  if (!b) {
    if (!s->err_is_usage) record_unusable_server(s);
    return s->err_is_usage ? BENCH_BAD_INPUT : BENCH_RUNTIME;
  }
  if (o->cold && s->api != API_OLLAMA)
    sb_warn(s, "--cold: only Ollama can unload a model on request (keep_alive: 0); "
               "the first request is still measured apart as the cold one");
  struct machine_thermal th_before;
  if (machine_info_read(&s->mi, &err) != 0) memset(&s->mi, 0, sizeof s->mi);
  machine_thermal_read(&th_before);
  if (backend_server_info(b, &s->si, &err) != 0) {
    tm_redact(err.msg, sizeof err.msg, o->api_key);
    sb_warn(s, "server info not available: %s", err.msg);
  }
  s->model_name = o->model ? o->model : s->si.model;
  check_build_flags(s);
  if (s->model.have) {
    probe_for_ceilings(s, sb_url_is_local(o->url) &&
                              buildcheck_reports_on(s->si.system_info, "AMX_INT8"));
    if (!sb_url_is_local(o->url)) {
      sb_warn(s, "the ceilings use THIS machine's bandwidth and compute; the server at %s "
                 "may run on other hardware", s->url_shown);
      struct bench_finding *f =
          bench_findings_add(&s->findings, "ceilings_other_hardware", BENCH_WARNING);
      bench_finding_brief(f, "the ceilings are this machine's; the server may run elsewhere");
      bench_finding_text(f, "The ceilings use this machine's bandwidth and compute; the server "
                            "at %s may run on other hardware.", s->url_shown);
    }
  }
  if ((rc = open_records(s, &th_before)) != 0) {
    backend_free(b);
    return rc;
  }

  struct runner_options ro;
  runner_options_init(&ro);
  memcpy(ro.workloads, o->workloads, sizeof ro.workloads);
  ro.n_workloads = o->n_workloads;
  ro.backend = b;
  ro.model = o->model;
  ro.reps = o->reps ? o->reps : 3;
  ro.allow_cache = o->allow_cache;
  ro.cold_series = o->cold;
  /* The probe in backend_server_info said /tokenize gives no count: asking
   * again would cost a request (a timeout, for one that hangs) for nothing. */
  ro.skip_tokenize = !s->si.has_tokenize && s->si.tokenize_error[0];
  ro.idle_timeout_s = o->idle_timeout_s;
  ro.cooldown_s = o->cooldown_s;
  ro.total_timeout_s = o->timeout_s;
  ro.max_wait_s = o->max_wait_s;
  ro.sink = sink;
  ro.progress = runner_progress;
  ro.step = runner_step;
  ro.ctx = s;
  /* Steal over the runs: on a VM whose host runs other work on its CPUs,
   * every time taken here is stretched (and a local server's too). */
  struct machine_cpu_ticks ticks;
  machine_cpu_ticks_now(&ticks);
  s->res = calloc(1, sizeof *s->res);
  s->run_rc = s->res ? runner_run(&ro, s->res, &err) : -1;
  if (s->run_rc < 0) snprintf(s->run_err, sizeof s->run_err, "%.*s", (int)sizeof s->run_err - 1, err.msg);
  s->steal_share = machine_steal_since(&ticks);
  sb_progress_done(s);
  backend_free(b);
  if (!s->res) {
    bench_session_end(&s->session, 0, NULL, false, s->steal_share, NULL);
    return sb_fail(s, BENCH_RUNTIME, "out of memory");
  }
  const struct runner_result *res = s->res;
  /* A tokenizer that is there but failed is worth a warning; one that is
   * missing is said in the notes under the table. */
  if (s->si.tokenize_error[0] && !s->si.tokenize_missing)
    sb_warn(s, "the server's tokenizer %s (%s): prompt lengths come from the calibrated tokens "
               "per word instead",
            s->si.tokenize_status ? "failed" : "did not answer", s->si.tokenize_error);
  if (res->tokenizer_note[0]) sb_warn(s, "%s", res->tokenizer_note);
  summarize(s);
  s->measured = res->n_workloads > 0;
  if (s->run_rc < 0) return sb_fail(s, BENCH_RUNTIME, "%s", err.msg);
  if (res->max_wait_reached) {
    uint32_t unsent = 0;
    for (size_t i = 0; i < res->n_workloads; i++)
      if (res->workloads[i].skipped_max_wait) unsent += res->workloads[i].n_skipped;
    return sb_fail(s, BENCH_RUNTIME, "--max-wait (%.0f s) ran out: %u timed runs measured, %u not "
                                     "sent (see %s)",
                   o->max_wait_s, res->runs - res->failed, unsent, s->session.path);
  }
  if (s->session.write_failures) {
    sb_warn(s, "%llu records could not be written to %s: %s",
            (unsigned long long)s->session.write_failures, s->session.path,
            s->session.last_error);
    return sb_fail(s, BENCH_RUNTIME,
                   "results not safely kept: %llu records missing from %s (the lines there are "
                   "whole)",
                   (unsigned long long)s->session.write_failures, s->session.path);
  }
  if (s->run_rc > 0 || res->failed)
    return sb_fail(s, BENCH_RUNTIME, "%u of %u timed runs failed (see the table and %s)",
                   res->failed, res->runs, s->session.path);
  return BENCH_OK;
}

/* ------------------------------------------------------ prompt sizing --- */

/* Appends to out (cap bytes) like printf; a sentence too long is cut. */
#define PUT(...)                                                                    \
  do {                                                                              \
    if (at < cap) at += (size_t)snprintf(out + at, cap - at, __VA_ARGS__);          \
  } while (0)


/* The workloads sized one way, by name ("classify, extract"). */
static void names_sized(const struct runner_result *res, enum runner_prompt_sizing how,
                        char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (size_t i = 0; i < res->n_workloads && used < n; i++)
    if (res->workloads[i].prompt_sizing == how)
      used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "",
                               res->workloads[i].workload.name);
}

/* How the synthesized prompts were aimed at their target lengths, and, when
 * not with the server's tokenizer, why not and what stood in. A missing
 * /tokenize is normal (OpenAI-compatible servers): a note, not a warning. The
 * prompt tokens the table shows are the server's own count either way. */
const char *sb_prompt_sizing_text(const struct sb_state *s, char *out, size_t cap) {
  const struct server_info *si = &s->si;
  const struct runner_result *res = s->res;
  size_t at = 0;
  out[0] = 0;
  if (!res) return out;
  size_t n_tok = 0, n_tpw = 0;
  for (size_t i = 0; i < res->n_workloads; i++) {
    n_tok += res->workloads[i].prompt_sizing == SIZING_TOKENIZE;
    n_tpw += res->workloads[i].prompt_sizing == SIZING_TOKENS_PER_WORD;
  }
  if (!n_tok && !n_tpw) return out; /* every prompt from --prompt-file: nothing sized */
  bool mixed = n_tok && n_tpw;
  char names[256];
  PUT("prompt lengths: ");
  if (n_tok) {
    names_sized(res, SIZING_TOKENIZE, names, sizeof names);
    PUT("aimed with the server's tokenizer (POST /tokenize)%s%s", mixed ? " for " : "",
           mixed ? names : "");
  }
  if (n_tpw) {
    names_sized(res, SIZING_TOKENS_PER_WORD, names, sizeof names);
    if (n_tok) PUT("; for %s, ", names);
    if (si->tokenize_error[0])
      PUT("%s", si->tokenize_error);
    else if (res->tokenizer_error[0]) /* no probe: the server said nothing about itself */
      PUT("%s", res->tokenizer_error);
    else if (res->tokenizer_note[0])
      PUT("the server's tokenizer was given up (see the warning above)");
    else
      PUT("the server's tokenizer was not used (the calibration gave no prompt count to "
             "check it against)");
    if (isfinite(res->tokens_per_word))
      PUT(", so prompts were aimed with %.2f tokens per word measured from the server's "
             "reported prompt counts", res->tokens_per_word);
    else
      PUT(", so prompts were aimed with an assumed %.1f tokens per word (the calibration "
             "requests reported no usable prompt counts)", RUNNER_ASSUMED_TOKENS_PER_WORD);
    PUT(", corrected by each warm-up's reported count");
  }
  PUT(". The prompt tokens shown are the server's own count.");
  return out;
}
#undef PUT
