/* cmd_bench_server: `tokmeter bench --url URL`, the server benchmark.
 *
 * Wires the pieces, in docs/design.md's one-way flow: backend (one request ->
 * run_result) -> runner (method: calibration, warm-up, nonces, repetitions) ->
 * metrics and summaries -> records (JSON Lines, appended as each run ends) and
 * the terminal table. It owns what only the command line knows: the API key's
 * environment variable, Ctrl-C, the results file, the model file for ceilings,
 * the check of the server's build flags against this machine's.
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
#include <strings.h>

#include "backend/backend.h"
#include "bench/buildcheck.h"
#include "bench/records_bench.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "cli/bench_cli.h"
#include "cli/cli.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "machine/probe.h"
#include "model/analysis.h"
#include "model/ceiling.h"
#include "record/record.h"
#include "util/redact.h"
#include "util/units.h"

static const char *const CMD = "bench";
#define PROMPT_FILE_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------- Ctrl-C --- */

static void on_sigint(int sig) {
  (void)sig;
  backend_interrupt();
}

/* ------------------------------------------------------------ helpers --- */

static char *read_text_file(const char *path, struct tm_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    tm_errf(err, "--prompt-file %s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(PROMPT_FILE_MAX_BYTES + 1);
  size_t n = buf ? fread(buf, 1, PROMPT_FILE_MAX_BYTES + 1, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad || n > PROMPT_FILE_MAX_BYTES || n == 0) {
    tm_errf(err, "--prompt-file %s: %s", path,
            !buf ? "out of memory" : bad ? "read error" : n == 0 ? "empty file"
                                                               : "larger than 16 MiB");
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (strlen(buf) != n) {
    tm_errf(err, "--prompt-file %s: contains a NUL byte (not text)", path);
    free(buf);
    return NULL;
  }
  /* Sent inside a JSON request: it must be UTF-8 text (checked here, before
   * anything reaches the server). */
  if (!tm_utf8_valid(buf, n)) {
    tm_errf(err, "--prompt-file %s: not UTF-8 text", path);
    free(buf);
    return NULL;
  }
  return buf;
}

/* Fills the runner's workload list from -w, -p/-n and --prompt-file. */
static int make_workloads(const struct bench_opts *o, const char *prompt_text,
                          struct runner_options *ro) {
  bool custom = o->n_prompt_tokens || o->n_max_tokens || prompt_text;
  if ((o->n_prompt_tokens > 1 && !o->ttft_sweep) || o->n_max_tokens > 1)
    return cli_usage_error(CMD, "with --url, -p and -n take one value each");
  const char *list = o->workloads ? o->workloads : custom ? "" : workload_names();
  struct tm_err lerr;
  if (o->workloads && tm_list_check(o->workloads, "--workload", &lerr) != 0)
    return cli_usage_error(CMD, "%s", lerr.msg);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (ro->n_workloads == RUNNER_MAX_WORKLOADS)
      return cli_usage_error(CMD, "at most %d workloads", RUNNER_MAX_WORKLOADS);
    if (workload_by_name(t, &ro->workloads[ro->n_workloads]) != 0)
      return cli_usage_error(CMD, "--workload: unknown workload '%s' (known: %s)", t,
                             workload_names());
    for (size_t i = 0; i < ro->n_workloads; i++)
      if (strcmp(ro->workloads[i].name, t) == 0)
        return cli_usage_error(CMD, "--workload: '%s' given twice", t);
    ro->n_workloads++;
  }
  /* --ttft-sweep: one custom workload per prompt length (the fit's points). */
  for (size_t i = 0; o->ttft_sweep && i + 1 < o->n_prompt_tokens; i++) {
    if (ro->n_workloads == RUNNER_MAX_WORKLOADS)
      return cli_usage_error(CMD, "at most %d workloads", RUNNER_MAX_WORKLOADS);
    struct workload *w = &ro->workloads[ro->n_workloads++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "custom");
    w->prompt_tokens = o->prompt_tokens[i];
    w->max_tokens = o->n_max_tokens ? o->max_tokens[0] : 128;
  }
  if (custom) {
    if (ro->n_workloads == RUNNER_MAX_WORKLOADS)
      return cli_usage_error(CMD, "at most %d workloads", RUNNER_MAX_WORKLOADS);
    struct workload *w = &ro->workloads[ro->n_workloads++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", prompt_text ? "prompt-file" : "custom");
    w->prompt_tokens = o->n_prompt_tokens ? o->prompt_tokens[o->n_prompt_tokens - 1] : 50;
    w->max_tokens = o->n_max_tokens ? o->max_tokens[0] : 128;
    w->prompt_text = prompt_text;
  }
  if (ro->n_workloads == 0) return cli_usage_error(CMD, "--workload: no workload given");
  return 0;
}

/* The model file behind the server, for ceilings. */
struct served_model {
  bool have;
  struct model_cost cost;
  char arch[64], type[32], name[256];
  struct ceiling_rates rates;  /* this machine's best per path; NAN when not probed */
  double bandwidth;            /* rates.read_bw_bytes_s */
};

static int load_model(const char *path, struct served_model *m) {
  struct tm_err err = {{0}};
  struct model_file_facts facts;
  if (model_cost_from_file(path, GGML_TYPE_F16, &m->cost, &facts, &err) != 0)
    return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
  const char *name = facts.name, *ftype = facts.file_type[0] ? facts.file_type : NULL;
  snprintf(m->arch, sizeof m->arch, "%s", m->cost.arch);
  snprintf(m->name, sizeof m->name, "%s", name[0] ? name : path);
  /* The file's type names it ("Q4_K_M"), else the tensors' (the type
   * holding the most bytes), as in the in-process records. */
  snprintf(m->type, sizeof m->type, "%s", ftype ? ftype : model_most_bytes_type(&m->cost));
  m->have = true;
  return 0;
}

/* The server's prefill ceiling is held against the compute its kernels can
 * use: the int8 vector path, or the int8 tiles (AMX) when a server on this
 * machine reports a build that uses them (llama.cpp's "AMX_INT8 = 1"): its
 * prefill can run far past the vector rate, and "above the ceiling" would
 * then be a false alarm. */
static void probe_for_ceilings(struct served_model *m, bool server_uses_tiles) {
  struct machine_probe *p = calloc(1, sizeof *p);
  struct tm_err err = {{0}};
  m->bandwidth = NAN;
  m->rates = (struct ceiling_rates){.read_bw_bytes_s = NAN};
  if (!p) return;
  cli_progress("probing this machine for the ceilings (once, then cached)", (void *)CMD);
  int rc = probe_get(p, false, cli_progress, (void *)CMD, &err);
  cli_progress_done();
  if (rc != 0) {
    cli_warn(CMD, "no ceilings: the probe failed: %s", err.msg);
    free(p);
    return;
  }
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) cli_warn(CMD, "%s", warn);
  m->bandwidth = probe_best_read_bw(p, NULL);
  m->rates = (struct ceiling_rates){.read_bw_bytes_s = m->bandwidth,
                                    .f32_flops = probe_best_f32(p, NULL),
                                    .int8_ops = probe_best_int8(p, NULL),
                                    .int8_tile_ops = probe_best_int8_tile(p, NULL),
                                    .tiles = server_uses_tiles};
  if (server_uses_tiles && !strcmp(ceiling_compute_path(m->cost.quantized_bytes_fraction, &m->rates, 1) ?: "", "int8_tile")) {
    char a[32];
    cli_note(CMD, "the server's build uses %s tiles: its prefill ceiling is their int8 rate, %s",
             p->int8_tile_path, tm_fmt_ops(m->rates.int8_tile_ops, "OPS", a, sizeof a));
  }
  free(p);
}

/* Ceilings at a prompt of `prompt` tokens (the server's count) followed by
 * max_tokens generated ones: decode at the context depths those tokens were
 * generated at (prompt .. prompt + n - 1), prefill at the prompt's length.
 * A workload's summary passes its runs' median prompt, each run record its
 * own, so the run's percentages and the summary's rest on the same machine
 * figures and model analysis. */
static struct record_ceiling ceiling_at(const struct served_model *m, double prompt,
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
static struct record_ceiling ceiling_depth_unknown(const struct served_model *m) {
  struct record_ceiling c = record_ceiling_none();
  if (m->have) c.read_bandwidth_bytes_s = m->bandwidth; /* NAN when the probe failed */
  return c;
}

/* One workload's ceilings: at its successful runs' median prompt. */
static struct record_ceiling ceiling_for(const struct served_model *m,
                                         const struct bench_summary *s, uint32_t max_tokens) {
  if (!isfinite(s->prompt_tokens.median)) return ceiling_depth_unknown(m);
  return ceiling_at(m, s->prompt_tokens.median, max_tokens);
}

/* One run's ceilings: at the prompt the server reported for it. */
static struct record_ceiling ceiling_for_run(const struct served_model *m,
                                             const struct run_metrics *rm, uint32_t max_tokens) {
  if (rm->prompt_tokens < 0) return ceiling_depth_unknown(m);
  return ceiling_at(m, (double)rm->prompt_tokens, max_tokens);
}

static bool url_is_local(const char *url) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  return !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
}

/* Rule 10: only meaningful for a server on this machine. */
static void check_build_flags(const struct server_info *si, const struct machine_info *mi,
                              const char *url) {
  if (!url_is_local(url)) return;
  const char *missing[BUILDCHECK_MAX];
  int n = buildcheck_missing(si->system_info, mi, missing);
  for (int i = 0; i < n; i++)
    cli_warn(CMD,
             "the server's build does not use %s, which this CPU has: expect lower prefill; "
             "rebuild the server for this CPU",
             missing[i]);
}

/* Steal over the invocation, and per workload when there are several and
 * any took some. The warning sentence from the invocation's share, or, when
 * that stayed under the threshold, from the workload with the largest (a
 * burst during one workload stretches that workload's figures most), named. */
static void print_steal(const struct runner_result *res, double overall) {
  bool any = overall >= 0.0005;
  const struct runner_workload_result *worst = NULL;
  for (size_t i = 0; i < res->n_workloads; i++) {
    double v = res->workloads[i].cpu_steal_share;
    any |= v >= 0.0005;
    if (v >= 0 && (!worst || v > worst->cpu_steal_share)) worst = &res->workloads[i];
  }
  if (any) {
    printf("steal while the runs ran (the share of this machine's busy CPU time the host "
           "gave to other work): ");
    if (!isnan(overall)) printf("%.1f%%", 100.0 * overall);
    else printf("unknown");
    if (res->n_workloads > 1) {
      printf(" (");
      for (size_t i = 0; i < res->n_workloads; i++) {
        double v = res->workloads[i].cpu_steal_share;
        printf("%s%s ", i ? ", " : "", res->workloads[i].workload.name);
        if (!isnan(v)) printf("%.1f%%", 100.0 * v);
        else printf("unknown");
      }
      printf(")");
    }
    printf("\n");
  }
  char note[600];
  if (machine_steal_warning(0, overall, note, sizeof note))
    printf("%s\n", note);
  else if (worst && machine_steal_warning(0, worst->cpu_steal_share, note, sizeof note))
    printf("%s (its timed runs): %s\n", worst->workload.name, note);
}

/* ------------------------------------------------------ prompt sizing --- */

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
static void print_prompt_sizing(const struct server_info *si, const struct runner_result *res) {
  size_t n_tok = 0, n_tpw = 0;
  for (size_t i = 0; i < res->n_workloads; i++) {
    n_tok += res->workloads[i].prompt_sizing == SIZING_TOKENIZE;
    n_tpw += res->workloads[i].prompt_sizing == SIZING_TOKENS_PER_WORD;
  }
  if (!n_tok && !n_tpw) return; /* every prompt from --prompt-file: nothing sized */
  bool mixed = n_tok && n_tpw;
  char names[256];
  printf("prompt lengths: ");
  if (n_tok) {
    names_sized(res, SIZING_TOKENIZE, names, sizeof names);
    printf("aimed with the server's tokenizer (POST /tokenize)%s%s", mixed ? " for " : "",
           mixed ? names : "");
  }
  if (n_tpw) {
    names_sized(res, SIZING_TOKENS_PER_WORD, names, sizeof names);
    if (n_tok) printf("; for %s, ", names);
    if (si->tokenize_error[0])
      printf("%s", si->tokenize_error);
    else if (res->tokenizer_error[0]) /* no probe: the server said nothing about itself */
      printf("%s", res->tokenizer_error);
    else if (res->tokenizer_note[0])
      printf("the server's tokenizer was given up (see the warning above)");
    else
      printf("the server's tokenizer was not used (the calibration gave no prompt count to "
             "check it against)");
    if (isfinite(res->tokens_per_word))
      printf(", so prompts were aimed with %.2f tokens per word measured from the server's "
             "reported prompt counts", res->tokens_per_word);
    else
      printf(", so prompts were aimed with an assumed %.1f tokens per word (the calibration "
             "requests reported no usable prompt counts)", RUNNER_ASSUMED_TOKENS_PER_WORD);
    printf(", corrected by each warm-up's reported count");
  }
  printf(". The prompt tokens shown are the server's own count.\n");
}

/* ---------------------------------------------------------------- sink --- */

struct sink_ctx {
  struct record_file *file;
  char identity[RECORD_ID_LEN + 1];
  const char *backend_name, *target, *model;
  const struct served_model *model_file;
  uint32_t write_errors;
  char last_error[sizeof(struct tm_err)];
};

static void sink(const struct runner_event *ev, void *vctx) {
  struct sink_ctx *c = vctx;
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
  struct record_run_in in = {
      .identity = c->identity,
      .workload = ev->workload ? ev->workload->name : NULL,
      .index = ev->index,
      .warmup = ev->warmup,
      .cold = ev->cold,
      .calibration = ev->calibration,
      .backend = c->backend_name,
      .target = c->target,
      .model = c->model,
      .settings = settings,
      .max_tokens = ev->request->max_tokens,
      .ceiling = NULL,
  };
  /* With the model file: the same ceiling object as the summaries, at this
   * run's own prompt and max_tokens. */
  struct record_ceiling ceiling;
  if (c->model_file && c->model_file->have) {
    ceiling = ceiling_for_run(c->model_file, ev->metrics, ev->request->max_tokens);
    in.ceiling = &ceiling;
  }
  struct tm_err err;
  if (record_write(c->file, record_run_build(&in, ev->result, ev->metrics), &err) != 0) {
    c->write_errors++;
    snprintf(c->last_error, sizeof c->last_error, "%s", err.msg);
  }
  json_decref(settings);
  if (!ev->warmup && !ev->calibration && ev->result->error != RUN_OK) {
    cli_progress_done();
    cli_warn(CMD, "%s %srun %u failed (%s): %s", ev->workload ? ev->workload->name : "",
             ev->cold ? "cold " : "", ev->index + 1, run_error_name(ev->result->error),
             ev->result->error_msg);
  }
}

/* The runner gives progress and sink one context (the sink's); the progress
 * line only needs the command name. */
static void progress(const char *message, void *ctx) {
  (void)ctx;
  cli_progress(message, (void *)CMD);
}

/* --------------------------------------------------------------- main --- */

static int list_models(struct backend *b, const char *api_key) {
  char (*names)[256] = calloc(256, sizeof *names);
  struct tm_err err;
  if (!names) return cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
  int n = backend_list_models(b, names, 256, &err);
  if (n < 0) {
    free(names);
    tm_redact(err.msg, sizeof err.msg, api_key);
    return cli_fail(CMD, TM_EXIT_RUNTIME, "cannot list models: %s", err.msg);
  }
  for (int i = 0; i < n; i++) {
    tm_redact(names[i], sizeof names[i], api_key); /* the server's text */
    printf("%s\n", names[i]);
  }
  free(names);
  return TM_EXIT_OK;
}

int bench_server(const struct bench_opts *o) {
  struct tm_err err = {{0}};
  int rc = TM_EXIT_OK;
  /* The URL as shown and recorded: without user:password@ (and ?query). */
  char url_shown[512];
  record_redact_url(o->url, url_shown, sizeof url_shown);
  if (backend_url_check(o->url, NULL, &err) != 0) {
    tm_redact(err.msg, sizeof err.msg, NULL);
    return cli_usage_error(CMD, "--url: %s", err.msg);
  }
  /* --model is sent inside JSON requests and recorded: UTF-8 text only. */
  if (o->model && !tm_utf8_valid(o->model, strlen(o->model)))
    return cli_usage_error(CMD, "--model: not UTF-8 text");

  /* The key: read from the environment, kept in this frame, sent as a header. */
  const char *key_env = o->api_key_env ? o->api_key_env : "OPENAI_API_KEY";
  const char *api_key = getenv(key_env);
  if (o->api_key_env && (!api_key || !*api_key))
    return cli_usage_error(CMD, "--api-key-env %s: that environment variable is not set",
                           key_env);
  if (api_key && !*api_key) api_key = NULL;

  char *prompt_text = NULL;
  if (o->prompt_file && !(prompt_text = read_text_file(o->prompt_file, &err)))
    return cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
  struct runner_options ro;
  runner_options_init(&ro);
  if ((rc = make_workloads(o, prompt_text, &ro)) != 0) goto out_text;

  struct served_model model = {0};
  if (o->gguf && (rc = load_model(o->gguf, &model)) != 0) goto out_text;

  /* The server's own information requests (detection, /props, /tokenize,
   * ...) and the connection: 10 s each, or --timeout or --idle-timeout when
   * shorter (an answer in one piece is one gap). */
  double info_timeout_s = o->timeout_s > 0 && o->timeout_s < 10 ? o->timeout_s : 10;
  if (o->idle_timeout_s > 0 && o->idle_timeout_s < info_timeout_s)
    info_timeout_s = o->idle_timeout_s;
  enum api_family api = (enum api_family)o->api;
  if (api == API_AUTO) {
    if (backend_detect_within(o->url, api_key, info_timeout_s, &api, &err) != 0) {
      tm_redact(err.msg, sizeof err.msg, api_key);
      rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
      goto out_text;
    }
  }
  struct backend_config cfg = {.base_url = o->url,
                               .api = api,
                               .endpoint = (enum api_endpoint)o->endpoint,
                               .api_key = api_key,
                               .connect_timeout_s = info_timeout_s};
  struct backend *b = backend_new(&cfg, &err);
  if (!b) {
    tm_redact(err.msg, sizeof err.msg, api_key);
    rc = cli_usage_error(CMD, "--url %s: %s", url_shown, err.msg);
    goto out_text;
  }
  if (o->list_models) {
    rc = list_models(b, api_key);
    goto out_backend;
  }
  if (o->cold && api != API_OLLAMA)
    cli_warn(CMD, "--cold: only Ollama can unload a model on request (keep_alive: 0); "
                  "the first request is still measured apart as the cold one");

  struct machine_info mi;
  struct machine_thermal th_before, th_after;
  if (machine_info_read(&mi, &err) != 0) memset(&mi, 0, sizeof mi);
  machine_thermal_read(&th_before);
  struct server_info si;
  memset(&si, 0, sizeof si);
  if (backend_server_info(b, &si, &err) != 0) {
    tm_redact(err.msg, sizeof err.msg, api_key);
    cli_warn(CMD, "server info not available: %s", err.msg);
  }
  check_build_flags(&si, &mi, o->url);
  if (model.have) {
    probe_for_ceilings(&model, url_is_local(o->url) &&
                                   buildcheck_reports_on(si.system_info, "AMX_INT8"));
    if (!url_is_local(o->url))
      cli_warn(CMD, "the ceilings use THIS machine's bandwidth and compute; the server at %s "
                    "may run on other hardware",
               url_shown);
  }

  /* The results file and the identity line. */
  const char *out_path = o->out ? o->out : RECORD_DEFAULT_FILE;
  struct sink_ctx sc = {.backend_name = api_family_name(api), .target = o->url,
                        .model = o->model ? o->model : si.model, .model_file = &model};
  sc.file = record_open(out_path, &err);
  if (!sc.file) {
    rc = cli_fail(CMD, TM_EXIT_USAGE, "%s", err.msg);
    goto out_backend;
  }
  json_t *settings = json_pack(
      "{s:s, s:s, s:s, s:s?, s:s?, s:i, s:b, s:b, s:b, s:f, s:f, s:s?}", "url", url_shown, "api",
      api_family_name(api), "endpoint", o->endpoint == ENDPOINT_CHAT ? "chat" : "completion",
      "model", o->model, "gguf", o->gguf, "reps", o->reps ? o->reps : 3, "allow_cache",
      o->allow_cache, "cold", o->cold, "warmup", 1, "idle_timeout_s", o->idle_timeout_s,
      "timeout_s", o->timeout_s, "prompt_file", o->prompt_file);
  json_t *wl = json_array();
  for (size_t i = 0; i < ro.n_workloads; i++)
    json_array_append_new(wl, json_pack("{s:s, s:i, s:i}", "name", ro.workloads[i].name,
                                        "prompt_tokens", ro.workloads[i].prompt_tokens,
                                        "max_tokens", ro.workloads[i].max_tokens));
  json_object_set_new(settings, "workloads", wl);
  json_object_set_new(settings, "cooldown_s", json_real(o->cooldown_s));
  struct record_model rm = {.name = model.have ? model.name : sc.model,
                            .file = o->gguf,
                            .arch = model.have ? model.arch : NULL,
                            .type = model.have ? model.type : NULL,
                            .bytes_per_token = model.have ? model.cost.weight_bytes_per_token
                                                          : NAN};
  struct record_identity_in idin = {.tokmeter_version = TOKMETER_VERSION,
                                    .settings = settings,
                                    .machine = &mi,
                                    .thermal_before = &th_before,
                                    .server = &si,
                                    .model = &rm,
                                    .backend = sc.backend_name,
                                    .target = o->url,
                                    .command = o->command};
  json_t *ident = record_identity_build(&idin, sc.identity, &err);
  json_decref(settings);
  if (!ident || record_write(sc.file, ident, &err) != 0) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s: %s", out_path, err.msg);
    goto out_file;
  }

  /* Measure. */
  ro.backend = b;
  ro.model = o->model;
  ro.reps = o->reps ? o->reps : 3;
  ro.allow_cache = o->allow_cache;
  ro.cold_series = o->cold;
  /* The probe in backend_server_info said /tokenize gives no count: asking
   * again would cost a request (a timeout, for one that hangs) for nothing. */
  ro.skip_tokenize = !si.has_tokenize && si.tokenize_error[0];
  ro.idle_timeout_s = o->idle_timeout_s;
  ro.cooldown_s = o->cooldown_s;
  ro.total_timeout_s = o->timeout_s;
  ro.sink = sink;
  ro.progress = progress;
  ro.ctx = &sc;
  struct sigaction sa = {0}, old_sa;
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  /* Steal over the runs: on a VM whose host runs other work on its CPUs,
   * every time taken here is stretched (and a local server's too). */
  struct machine_cpu_ticks ticks;
  machine_cpu_ticks_now(&ticks);
  struct runner_result *res = calloc(1, sizeof *res);
  int run_rc = res ? runner_run(&ro, res, &err) : -1;
  const double steal = machine_steal_since(&ticks);
  sigaction(SIGINT, &old_sa, NULL);
  cli_progress_done();
  if (!res) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
    goto out_file;
  }
  /* A tokenizer that is there but failed is worth a warning; one that is
   * missing is said in the notes under the table (print_prompt_sizing). */
  if (si.tokenize_error[0] && !si.tokenize_missing)
    cli_warn(CMD, "the server's tokenizer %s (%s): prompt lengths come from the calibrated "
                  "tokens per word instead",
             si.tokenize_status ? "failed" : "did not answer", si.tokenize_error);
  if (res->tokenizer_note[0]) cli_warn(CMD, "%s", res->tokenizer_note);

  /* Summaries: records, then the table. */
  struct record_ceiling ceilings[RUNNER_MAX_WORKLOADS];
  struct bench_summary summaries[RUNNER_MAX_WORKLOADS];
  for (size_t i = 0; i < res->n_workloads; i++) {
    summaries[i] = res->workloads[i].summary;
    ceilings[i] = ceiling_for(&model, &summaries[i], res->workloads[i].workload.max_tokens);
    const struct runner_workload_result *wr = &res->workloads[i];
    json_t *ws = json_pack("{s:i, s:i, s:i, s:s, s:o}", "prompt_tokens_target",
                           wr->workload.prompt_tokens, "max_tokens", wr->workload.max_tokens,
                           "prompt_words", wr->n_words, "prompt_sizing",
                           runner_prompt_sizing_name(wr->prompt_sizing), "tokens_per_word",
                           wr->prompt_sizing == SIZING_TOKENS_PER_WORD
                               ? record_json_num(res->tokens_per_word)
                               : json_null());
    json_t *sum = record_summary_build(sc.identity, &summaries[i], ws,
                                       model.have ? &ceilings[i] : NULL,
                                       res->workloads[i].cpu_steal_share);
    if (o->json && sum) {
      char *line = record_dump(sum);
      if (line) printf("%s\n", line);
      free(line);
    }
    if (record_write(sc.file, sum, &err) != 0) {
      sc.write_errors++;
      snprintf(sc.last_error, sizeof sc.last_error, "%s", err.msg);
    }
    json_decref(ws);
  }
  machine_thermal_read(&th_after);
  if (record_write(sc.file,
                   record_end_build(sc.identity, &th_after, res->runs, res->failed_by_kind,
                                    res->interrupted, steal),
                   &err) != 0) {
    sc.write_errors++;
    snprintf(sc.last_error, sizeof sc.last_error, "%s", err.msg);
  }

  if (!o->json && res->n_workloads) {
    printf("tokmeter %s - %s at %s (%s%s%s)\n", TOKMETER_VERSION,
           sc.model && *sc.model ? sc.model : "the served model", url_shown, api_family_name(api),
           si.build[0] ? ", build " : "", si.build);
    report_server_table(stdout, summaries, res->n_workloads, model.have ? ceilings : NULL);
    if (res->have_cold && isfinite(res->cold.ttft_ms))
      printf("first request (cold, calibration-sized): TTFT %.1f ms%s\n", res->cold.ttft_ms,
             isfinite(res->cold.server_load_ms) ? " (server load time recorded)" : "");
    if (res->baseline_rejected[0]) cli_warn(CMD, "%s", res->baseline_rejected);
    if (res->cache_baseline_tokens >= 0)
      printf("cache baseline: %lld prompt tokens shared before the nonce (chat template); "
             "runs above it are flagged\n",
             (long long)res->cache_baseline_tokens);
    else if (!res->cache_counter)
      printf("cache: this server reports no cached-token counter; a repeated prompt cannot be "
             "detected (every prompt starts with a fresh nonce)\n");
    if (res->n_cold_load) {
      double sum = 0;
      for (size_t i = 0; i < res->n_cold_load; i++) sum += res->cold_load_ms[i];
      printf("model load (--cold, %zu loads): %.0f ms mean%s\n", res->n_cold_load,
             sum / res->n_cold_load, res->cold_failed ? " (some cold runs failed)" : "");
    } else if (res->cold_runs) {
      printf("model load (--cold): not measured: %u of %u cold runs failed%s\n",
             res->cold_failed, res->cold_runs,
             res->cold_failed < res->cold_runs ? " (the others reported no load time)" : "");
    }
    print_prompt_sizing(&si, res);
    print_steal(res, steal);
    printf("records: %s (%llu lines this run)\n", out_path,
           (unsigned long long)record_lines_written(sc.file));
    cli_print_report_hint(out_path);
  }
  if (sc.write_errors)
    cli_warn(CMD, "%u records could not be written to %s: %s", sc.write_errors, out_path,
             sc.last_error);

  if (run_rc < 0) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%s", err.msg);
  } else if (sc.write_errors) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME,
                  "results not safely kept: %u records missing from %s (the lines there are "
                  "whole)",
                  sc.write_errors, out_path);
  } else if (run_rc > 0 || res->failed) {
    rc = cli_fail(CMD, TM_EXIT_RUNTIME, "%u of %u timed runs failed (see the table and %s)",
                  res->failed, res->runs, out_path);
  } else {
    rc = TM_EXIT_OK;
  }
  free(res);
out_file:
  record_close(sc.file);
out_backend:
  backend_free(b);
out_text:
  free(prompt_text);
  return rc;
}
