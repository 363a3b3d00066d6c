/* cmd_load: `tokmeter load --url URL`: aggregate throughput under
 * concurrency (closed loop, -c) or arrival rate (open loop, --rate); without
 * --url, streams decoding together on the engine (load_engine.c): -m FILE,
 * or the main job's Qwen3-0.6B-shaped Q4_0 model and the moe-small preset's
 * (synthesized once, cached), a dense and a mixture-of-experts curve.
 * Parses the flags, runs src/bench/load.c, prints a table per level. */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "bench/load.h"
#include "bench/load_shard.h"
#include "bench/runner.h"
#include "cli/cli.h"
#include "model/analysis.h"
#include "record/record.h"
#include "synth/synth.h"
#include "util/redact.h"
#include "workload/workload_file.h"

static const char *const CMD = "load";

static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter load --url URL (-c LIST | --rate LIST) [options]\n"
          "       tokmeter load [-m FILE] [-c LIST] [-d N] [-n N] [-t N] [-r N]\n"
          "Aggregate throughput of a server under load, each request judged as bench\n"
          "judges a run; without --url, streams decoding together on tokmeter's engine\n"
          "(default -c 1,2,4,8,16,32,64 -d 64 -n 32; no -m: a dense and a MoE synthetic\n"
          "model), each level beside its ceiling. Method and records: docs/load.md.\n"
          "  --url URL            base URL, e.g. http://127.0.0.1:8080\n"
          "  --api KIND           auto, openai, ollama or llamacpp (default auto)\n"
          "  --endpoint E         chat or completion (default chat)\n"
          "  --model NAME         the served model (default the server's)\n"
          "  -m, --gguf FILE      the file the server serves: the aggregate ceiling\n"
          "  --api-key-env VAR    variable with the API key (default OPENAI_API_KEY)\n"
          "  -c, --concurrency L  closed loop: requests in flight per level, e.g. 1,4,16\n"
          "  --rate L             open loop: requests/s per level, e.g. 0.5,1,2\n"
          "  --arrivals A         poisson, constant or gamma (default poisson)\n"
          "  --burstiness X       gamma's coefficient of variation (default 1)\n"
          "  -w, --workload LIST  named workloads in turn (classify,extract) or FILE.jsonl\n"
          "  -p, --prompt-tokens N[:SD]  prompt length, mean and sd (default 128)\n"
          "  -n, --max-tokens N[:SD]     output length, mean and sd (default 128)\n"
          "  --slo LIST           objectives, e.g. ttft=500ms,p95:tpot=50ms,e2e=10s\n"
          "                       (default percentile p99): share met, goodput\n"
          "  --find-capacity      bisect the -c or --rate range for the largest load\n"
          "                       meeting --slo\n"
          "  --ramp S             seconds per level not counted (default 2)\n"
          "  --duration S         the measured window per level (default 10)\n"
          "  --requests N         or: the window ends when N requests sent in it ended\n"
          "  --idle-timeout S     fail a request silent for S seconds (default 60)\n"
          "  --timeout S          fail a request longer than S seconds (default 600)\n"
          "  --shard I/N          run shard I (from 0) of N: its share of each level;\n"
          "                       or --shards N with JOB_COMPLETION_INDEX (Kubernetes);\n"
          "                       Slurm's and Open MPI's tasks are read by themselves\n"
          "  --start-at TIME      the common start (unix seconds or 2026-12-02T10:30:00Z);\n"
          "                       level k begins at TIME + k x (ramp + duration + drain)\n"
          "  --drain S            a scheduled level's drain budget (default 30)\n"
          "In process (no --url):\n"
          "  -d, --depth N        each stream's prompt, prefilled first (default 64)\n"
          "  -t, --threads N      engine threads (default every CPU)\n"
          "  -r, --repetitions N  timed passes per level, the median kept (default 3)\n"
          "  --warmup N           untimed passes first (default 1)\n"
          "  --out FILE           results file to append to (tokmeter-results.jsonl)\n"
          "  --json               one level record per line on stdout\n"
          "  -v, --verbose        every finding in full\n"
          "  --[no-]progress      a progress line (default on a terminal)\n"
          "  -h, --help           this help\n"
          "Exit: 0 all done; 1 a runtime failure or failed requests; 2 bad usage.\n");
}

static const char *shard_env(const char *name) { return getenv(name); }

static void on_sigint(int sig) {
  (void)sig;
  backend_interrupt();
}

/* "N" or "N:SD", whole numbers. */
static int parse_mean_sd(const char *s, const char *flag, uint32_t *mean, uint32_t *sd) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  char *colon = strchr(buf, ':');
  if (colon) *colon = 0;
  double m, d = 0;
  if (cli_parse_number(CMD, buf, flag, true, 1, 1000000, &m)) return -1;
  if (colon && cli_parse_number(CMD, colon + 1, flag, true, 0, 1000000, &d)) return -1;
  *mean = (uint32_t)m;
  *sd = (uint32_t)d;
  return 0;
}

static int parse_list(const char *s, const char *flag, bool whole, double min, double max,
                      double *out, size_t *n) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", s);
  *n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == LOAD_MAX_LEVELS)
      return cli_usage_error(CMD, "%s: at most %d levels", flag, LOAD_MAX_LEVELS) ? -1 : -1;
    if (cli_parse_number(CMD, t, flag, whole, min, max, &out[(*n)++])) return -1;
  }
  if (!*n) {
    cli_usage_error(CMD, "%s: an empty list", flag);
    return -1;
  }
  return 0;
}

/* A figure for the table: "-" when there is none. */
static const char *cell(char buf[16], double v, const char *fmt) {
  if (!isfinite(v)) return "-";
  snprintf(buf, 16, fmt, v);
  return buf;
}

static void print_dist_row(const char *name, const struct load_dist *d, const char *unit) {
  if (!d->n) {
    printf("  %-22s -\n", name);
    return;
  }
  printf("  %-22s p50 %9.1f  p90 %9.1f  p99 %9.1f  max %9.1f %s\n", name, d->p50, d->p90, d->p99,
         d->max, unit);
}

static void hook_level(const struct load_level *lv, const void *rec, void *ctx) {
  const bool *json = ctx;
  if (*json) {
    char *line = record_dump(rec);
    if (line) printf("%s\n", line);
    free(line);
    fflush(stdout);
  }
  (void)lv;
}

static void print_levels(const struct load_state *s, bool verbose) {
  printf("tokmeter load: %s (%s)\n", s->url_shown, s->server_kind[0] ? s->server_kind : "server");
  if (s->o->shard_count > 1)
    printf("shard %u of %u (%s, run %s): this process's share of each level; `tokmeter report` "
           "merges every shard's file into the run's figures\n",
           s->o->shard_index, s->o->shard_count, s->o->shard_source, s->run_id);
  printf("%-12s %7s %6s %8s %12s %12s %12s %12s %12s\n", "level", "ok", "failed", "req/s",
         "output tok/s", "prompt tok/s", "stream tok/s", "TTFT p50 ms", "TTFT p99 ms");
  for (size_t i = 0; i < s->n_levels; i++) {
    const struct load_level *lv = &s->levels[i];
    char name[32];
    if (lv->concurrency) snprintf(name, sizeof name, "c=%u", lv->concurrency);
    else snprintf(name, sizeof name, "rate=%g/s", lv->request_rate);
    if (s->o->shard_count > 1 && lv->concurrency)
      snprintf(name + strlen(name), sizeof name - strlen(name), " (%u)", lv->shard_concurrency);
    else if (s->o->shard_count > 1)
      snprintf(name + strlen(name), sizeof name - strlen(name), " (%.3g)", lv->shard_rate);
    char slo[160] = "";
    if (isfinite(lv->f.slo_met_share))
      snprintf(slo, sizeof slo, "  SLO %s: %.0f%% met, goodput %.2f req/s",
               lv->f.slo_met ? "met" : "MISSED", 100 * lv->f.slo_met_share, lv->f.goodput_req_s);
    if (isfinite(lv->aggregate_decode_ceiling_tok_s)) {
      size_t l = strlen(slo);
      if (isfinite(lv->percent_of_ceiling))
        snprintf(slo + l, sizeof slo - l, "  ceiling %.0f tok/s (%.0f%%, %s)",
                 lv->aggregate_decode_ceiling_tok_s, lv->percent_of_ceiling, lv->ceiling_bound);
      else
        snprintf(slo + l, sizeof slo - l, "  ceiling %.0f tok/s (%s)",
                 lv->aggregate_decode_ceiling_tok_s, lv->ceiling_bound);
    }
    if (lv->schedule_lag_s > 0) {
      size_t l = strlen(slo);
      snprintf(slo + l, sizeof slo - l, "  (began %.1f s late)", lv->schedule_lag_s);
    }
    char c1[16], c2[16], c3[16], c4[16], c5[16], c6[16];
    printf("%-12s %7u %6u %8s %12s %12s %12s %12s %12s%s%s\n", name, lv->f.requests_ok,
           lv->f.requests_failed, cell(c1, lv->f.requests_per_s, "%.2f"),
           cell(c2, lv->f.aggregate_output_tok_s, "%.1f"), cell(c3, lv->f.aggregate_prompt_tok_s, "%.1f"),
           cell(c4, lv->f.per_stream_decode_tok_s.p50, "%.1f"), cell(c5, lv->f.ttft_ms.p50, "%.1f"),
           cell(c6, lv->f.ttft_ms.p99, "%.1f"), slo,
           lv->f.behind_schedule ? "  (client behind schedule)"
           : lv->client_saturated ? "  (client saturated)" : "");
    if (verbose) {
      print_dist_row("per-stream decode", &lv->f.per_stream_decode_tok_s, "tok/s");
      print_dist_row("TTFT", &lv->f.ttft_ms, "ms");
      if (!lv->concurrency) print_dist_row("TTFT from schedule", &lv->f.ttft_sched_ms, "ms");
      print_dist_row("first answer token", &lv->f.ttfat_ms, "ms");
      print_dist_row("inter-token gap", &lv->f.itl_ms, "ms");
      print_dist_row("time per output token", &lv->f.tpot_ms, "ms");
      print_dist_row("end to end", &lv->f.e2e_ms, "ms");
      print_dist_row("queue", &lv->f.queue_ms, "ms");
    }
  }
  printf("(output/prompt tok/s: every stream together over the measured window; stream tok/s:\n"
         " one stream's decode, p50, none under 24 tokens; TTFT of any token, cache hits out)\n");
  size_t shown = 0;
  size_t *order = s->findings.n ? malloc(s->findings.n * sizeof *order) : NULL;
  if (order) {
    bench_findings_order(&s->findings, order);
    for (size_t i = 0; i < s->findings.n && (verbose || shown < 5); i++, shown++) {
      const struct bench_finding *f = &s->findings.v[order[i]];
      if (verbose) printf("%s\n", f->text);
      else printf("%-7s %s\n", bench_severity_name(f->severity), f->brief);
    }
    if (s->findings.n > shown) printf("(%zu more findings: -v)\n", s->findings.n - shown);
    free(order);
  }
  printf("records: %s (%llu lines this run)\n", s->session.path,
         (unsigned long long)s->session.lines);
}

/* The command line as recorded, the API key left out. */
static void command_line(int argc, char **argv, const char *api_key, char *shown, size_t n) {
  char command[2048] = "tokmeter";
  for (int i = 0; i < argc; i++) {
    size_t len = strlen(command);
    snprintf(command + len, sizeof command - len, " %s", argv[i]);
  }
  snprintf(shown, n, "%s", command);
  tm_redact(shown, n, api_key);
}

/* Runs one load (a server's, or the engine's on one model) and prints it. */
static int run_one(struct load_opts *o, bool json, bool verbose) {
  const struct load_hooks hooks = {.progress = cli_progress, .level = hook_level, .ctx = &json};
  struct load_state *st = calloc(1, sizeof *st);
  if (!st) return cli_fail(CMD, TM_EXIT_RUNTIME, "out of memory");
  load_state_init(st, o, &hooks);
  struct sigaction sa = {0}, old_sa;
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  int rc = load_run(st);
  sigaction(SIGINT, &old_sa, NULL);
  cli_progress_done();
  if (!json && st->session.lines) print_levels(st, verbose);
  if (rc != BENCH_OK) {
    if (st->err_is_usage) rc = cli_usage_error(CMD, "%s", st->err.msg);
    else rc = cli_fail(CMD, rc == BENCH_BAD_INPUT ? TM_EXIT_USAGE : TM_EXIT_RUNTIME, "%s", st->err.msg);
  }
  load_state_free(st);
  free(st);
  return rc;
}

static void synth_progress(uint64_t done, uint64_t total, void *ctx) {
  const char *name = ctx;
  char line[160];
  snprintf(line, sizeof line, "load: synthesizing the %s model (once): %.0f%%", name,
           total ? 100.0 * (double)done / (double)total : 0.0);
  cli_progress(line, NULL);
}

/* No --url: the engine's batched decode, on -m FILE or the two default
 * models in turn. */
static int load_in_process(struct load_opts *o, int argc, char **argv, bool json, bool verbose,
                           const char *server_flag, bool p_given, bool n_given, uint32_t depth) {
  if (server_flag) {
    char flag[64];
    snprintf(flag, sizeof flag, "%s", server_flag);
    char *eq = strchr(flag, '=');
    if (eq) *eq = 0;
    return cli_usage_error(CMD, "%s is for a server load (--url); in process: -m, -c, -d, -n, -t, "
                                "-r, --warmup, --out, --json", flag);
  }
  if (p_given)
    return cli_usage_error(CMD, "in process the prompt is each stream's depth: -d N");
  if (!o->n_concurrency) {
    static const uint32_t def[] = {1, 2, 4, 8, 16, 32, 64};
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++) o->concurrency[i] = def[i];
    o->n_concurrency = sizeof def / sizeof def[0];
  }
  o->prompt_tokens = depth ? depth : 64;
  if (!n_given) o->max_tokens = 32;
  if (o->max_tokens_sd) return cli_usage_error(CMD, "-n: in process every stream runs N steps (no :SD)");
  const char *out = o->out ? o->out : RECORD_DEFAULT_FILE;
  struct tm_err err = {{0}};
  if (record_check_writable(out, &err) != 0) return cli_usage_error(CMD, "--out: %s", err.msg);
  char shown[2048];
  command_line(argc, argv, NULL, shown, sizeof shown);
  o->command = shown;
  if (o->gguf) return run_one(o, json, verbose);
  /* the main job's dense model and the MoE preset, synthesized once */
  static const char *const presets[] = {"qwen3-0.6b", "moe-small"};
  int worst = TM_EXIT_OK;
  for (size_t i = 0; i < 2; i++) {
    char path[1024];
    bool written = false;
    if (synth_cached(presets[i], MODEL_FTYPE_Q4_0, SYNTH_DEFAULT_SEED, 0, synth_progress,
                     (void *)presets[i], path, sizeof path, &written, &err) != 0) {
      cli_progress_done();
      return cli_fail(CMD, TM_EXIT_RUNTIME, "cannot synthesize the %s model: %s", presets[i],
                      err.msg);
    }
    cli_progress_done();
    o->gguf = path;
    if (i && !json) printf("\n");
    const int rc = run_one(o, json, verbose);
    if (rc > worst) worst = rc;
    if (rc == TM_EXIT_USAGE || backend_interrupted()) break;
  }
  return worst;
}

/* -w FILE.jsonl's jobs (load_opts.file borrows them until the run ends). */
static struct workload_file wfile;

int cmd_load(int argc, char **argv) {
  enum { O_URL = 1000, O_API, O_ENDPOINT, O_MODEL, O_KEYENV, O_RATE, O_ARRIVALS, O_BURST, O_RAMP,
         O_DURATION, O_REQUESTS, O_IDLE, O_TIMEOUT, O_OUT, O_JSON, O_PROGRESS, O_NO_PROGRESS,
         O_SLO, O_CAPACITY, O_SHARD, O_SHARDS, O_START_AT, O_DRAIN, O_WARMUP };
  static const struct option longopts[] = {
      {"url", required_argument, 0, O_URL},           {"api", required_argument, 0, O_API},
      {"endpoint", required_argument, 0, O_ENDPOINT}, {"model", required_argument, 0, O_MODEL},
      {"api-key-env", required_argument, 0, O_KEYENV},
      {"concurrency", required_argument, 0, 'c'},     {"rate", required_argument, 0, O_RATE},
      {"arrivals", required_argument, 0, O_ARRIVALS}, {"burstiness", required_argument, 0, O_BURST},
      {"prompt-tokens", required_argument, 0, 'p'},   {"max-tokens", required_argument, 0, 'n'},
      {"ramp", required_argument, 0, O_RAMP},         {"duration", required_argument, 0, O_DURATION},
      {"requests", required_argument, 0, O_REQUESTS}, {"idle-timeout", required_argument, 0, O_IDLE},
      {"timeout", required_argument, 0, O_TIMEOUT},   {"out", required_argument, 0, O_OUT},
      {"json", no_argument, 0, O_JSON},               {"verbose", no_argument, 0, 'v'},
      {"progress", no_argument, 0, O_PROGRESS},       {"no-progress", no_argument, 0, O_NO_PROGRESS},
      {"slo", required_argument, 0, O_SLO},           {"find-capacity", no_argument, 0, O_CAPACITY},
      {"gguf", required_argument, 0, 'm'},            {"workload", required_argument, 0, 'w'},
      {"shard", required_argument, 0, O_SHARD},       {"shards", required_argument, 0, O_SHARDS},
      {"start-at", required_argument, 0, O_START_AT}, {"drain", required_argument, 0, O_DRAIN},
      {"depth", required_argument, 0, 'd'},           {"threads", required_argument, 0, 't'},
      {"repetitions", required_argument, 0, 'r'},     {"warmup", required_argument, 0, O_WARMUP},
      {"help", no_argument, 0, 'h'},                  {0, 0, 0, 0}};
  struct load_opts o;
  load_opts_init(&o);
  const char *key_env = NULL, *shard_flag = NULL;
  uint32_t shards_flag = 0;
  bool drain_given = false;
  bool json = false, verbose = false, burst_given = false, slo_given = false, pn_given = false;
  bool p_given = false, n_given = false, engine_flag = false;
  const char *server_flag = NULL; /* the first flag that means a server */
  uint32_t depth = 0;
  double list[LOAD_MAX_LEVELS], v;
  size_t n;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":c:p:n:m:w:d:t:r:vh", longopts, NULL)) != -1) {
    /* the flags that mean a server, and those that mean the engine */
    if (ch == O_API || ch == O_ENDPOINT || ch == O_MODEL || ch == O_KEYENV || ch == O_RATE ||
        ch == O_ARRIVALS || ch == O_BURST || ch == 'w' || ch == O_SLO || ch == O_CAPACITY ||
        ch == O_RAMP || ch == O_DURATION || ch == O_REQUESTS || ch == O_IDLE || ch == O_TIMEOUT ||
        ch == O_SHARD || ch == O_SHARDS || ch == O_START_AT || ch == O_DRAIN)
      if (!server_flag) /* the option itself, whether its value came apart or with '=' */
        server_flag = optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2]
                                                                          : argv[optind - 1];
    if (ch == 'd' || ch == 't' || ch == 'r' || ch == O_WARMUP) engine_flag = true;
    switch (ch) {
      case O_URL: o.url = optarg; break;
      case O_API: {
        int a = api_family_from_name(optarg);
        if (a < 0) return cli_usage_error(CMD, "--api: '%s' is not auto, openai, ollama or llamacpp", optarg);
        o.api = (enum api_family)a;
        break;
      }
      case O_ENDPOINT:
        if (!strcmp(optarg, "chat")) o.endpoint = ENDPOINT_CHAT;
        else if (!strcmp(optarg, "completion")) o.endpoint = ENDPOINT_COMPLETION;
        else return cli_usage_error(CMD, "--endpoint: '%s' is not chat or completion", optarg);
        break;
      case O_MODEL: o.model = optarg; break;
      case O_KEYENV: key_env = optarg; break;
      case 'c':
        if (parse_list(optarg, "--concurrency", true, 1, LOAD_MAX_CONCURRENCY, list, &n)) return TM_EXIT_USAGE;
        for (size_t i = 0; i < n; i++) o.concurrency[i] = (uint32_t)list[i];
        o.n_concurrency = n;
        break;
      case O_RATE:
        if (parse_list(optarg, "--rate", false, 1e-3, 1e5, o.rate, &o.n_rate)) return TM_EXIT_USAGE;
        break;
      case O_ARRIVALS:
        if (!strcmp(optarg, "poisson")) o.arrivals = LOAD_POISSON;
        else if (!strcmp(optarg, "constant")) o.arrivals = LOAD_CONSTANT;
        else if (!strcmp(optarg, "gamma")) o.arrivals = LOAD_GAMMA;
        else return cli_usage_error(CMD, "--arrivals: '%s' is not poisson, constant or gamma", optarg);
        break;
      case O_BURST:
        if (cli_parse_number(CMD, optarg, "--burstiness", false, 0.01, 100, &o.burstiness)) return TM_EXIT_USAGE;
        burst_given = true;
        break;
      case 'd':
        if (cli_parse_number(CMD, optarg, "--depth", true, 1, 1000000, &v)) return TM_EXIT_USAGE;
        depth = (uint32_t)v;
        break;
      case 't':
        if (cli_parse_number(CMD, optarg, "--threads", true, 1, 1024, &v)) return TM_EXIT_USAGE;
        o.n_threads = (int)v;
        break;
      case 'r':
        if (cli_parse_number(CMD, optarg, "--repetitions", true, 1, 16, &v)) return TM_EXIT_USAGE;
        o.reps = (uint32_t)v;
        break;
      case O_WARMUP:
        if (cli_parse_number(CMD, optarg, "--warmup", true, 0, 100, &v)) return TM_EXIT_USAGE;
        o.warmup = (uint32_t)v;
        break;
      case 'p':
        pn_given = p_given = true;
        if (parse_mean_sd(optarg, "--prompt-tokens", &o.prompt_tokens, &o.prompt_sd)) return TM_EXIT_USAGE;
        break;
      case 'n':
        pn_given = n_given = true;
        if (parse_mean_sd(optarg, "--max-tokens", &o.max_tokens, &o.max_tokens_sd)) return TM_EXIT_USAGE;
        break;
      case O_RAMP:
        if (cli_parse_number(CMD, optarg, "--ramp", false, 0, 3600, &o.ramp_s)) return TM_EXIT_USAGE;
        break;
      case O_DURATION:
        if (cli_parse_number(CMD, optarg, "--duration", false, 0.1, 86400, &o.duration_s)) return TM_EXIT_USAGE;
        break;
      case O_REQUESTS:
        if (cli_parse_number(CMD, optarg, "--requests", true, 1, 10000000, &v)) return TM_EXIT_USAGE;
        o.requests = (uint32_t)v;
        break;
      case O_IDLE:
        if (cli_parse_number(CMD, optarg, "--idle-timeout", false, 0.01, 86400, &o.idle_timeout_s)) return TM_EXIT_USAGE;
        break;
      case O_TIMEOUT:
        if (cli_parse_number(CMD, optarg, "--timeout", false, 0.01, 86400, &o.timeout_s)) return TM_EXIT_USAGE;
        break;
      case O_OUT: o.out = optarg; break;
      case 'm': o.gguf = optarg; break;
      case 'w': {
        if (workload_is_file(optarg)) {
          /* a workload file: read and checked whole before anything runs */
          char why[768];
          workload_file_free(&wfile);
          if (workload_file_load(optarg, &wfile, why, sizeof why) != 0)
            return cli_fail(CMD, TM_EXIT_USAGE, "%s", why);
          o.file = &wfile;
          o.n_workloads = 0;
          break;
        }
        o.file = NULL;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", optarg);
        o.n_workloads = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
          struct workload w;
          if (workload_by_name(t, &w) != 0)
            return cli_usage_error(CMD, "-w: '%s' is not one of %s", t, workload_names());
          if (o.n_workloads == 8) return cli_usage_error(CMD, "-w: at most 8 workloads");
          snprintf(o.workloads[o.n_workloads++], sizeof o.workloads[0], "%s", t);
        }
        if (!o.n_workloads) return cli_usage_error(CMD, "-w: an empty list");
        break;
      }
      case O_SLO: {
        struct tm_err e = {{0}};
        if (load_slo_parse(optarg, &o.slo, &e) != 0) return cli_usage_error(CMD, "--slo: %s", e.msg);
        slo_given = true;
        break;
      }
      case O_CAPACITY: o.find_capacity = true; break;
      case O_SHARD: shard_flag = optarg; break;
      case O_SHARDS:
        if (cli_parse_number(CMD, optarg, "--shards", true, 1, LOAD_MAX_SHARDS, &v)) return TM_EXIT_USAGE;
        shards_flag = (uint32_t)v;
        break;
      case O_START_AT: {
        struct tm_err e = {{0}};
        if (load_parse_start_at(optarg, &o.start_at_unix, &e) != 0) return cli_usage_error(CMD, "%s", e.msg);
        break;
      }
      case O_DRAIN:
        if (cli_parse_number(CMD, optarg, "--drain", false, 0, 86400, &o.drain_s)) return TM_EXIT_USAGE;
        drain_given = true;
        break;
      case O_JSON: json = true; break;
      case 'v': verbose = true; break;
      case O_PROGRESS: cli_progress_force(1); break;
      case O_NO_PROGRESS: cli_progress_force(0); break;
      case 'h': usage(stdout); return TM_EXIT_OK;
      case ':': return cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
      default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
  }
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  if (!o.url) return load_in_process(&o, argc, argv, json, verbose, server_flag, p_given,
                                      n_given, depth);
  if (engine_flag)
    return cli_usage_error(CMD, "-d, -t, -r and --warmup are for the in-process load (no --url)");
  if (!o.n_concurrency && !o.n_rate) return cli_usage_error(CMD, "give -c LIST (closed loop) or --rate LIST (open loop)");
  if (o.n_concurrency && o.n_rate) return cli_usage_error(CMD, "-c and --rate: one loop at a time");
  if (o.n_concurrency && (o.arrivals != LOAD_POISSON || burst_given))
    return cli_usage_error(CMD, "--arrivals and --burstiness are for --rate (open loop)");
  if (o.n_workloads && pn_given)
    return cli_usage_error(CMD, "-w and -p/-n: the workloads set the lengths; give one");
  if (o.file && p_given)
    return cli_usage_error(CMD, "-w FILE.jsonl and -p: the jobs are the prompts (-n: their "
                                "default budget)");
  if (o.find_capacity && !slo_given)
    return cli_usage_error(CMD, "--find-capacity needs --slo (the objectives to meet)");
  if (burst_given && o.arrivals != LOAD_GAMMA)
    return cli_usage_error(CMD, "--burstiness needs --arrivals gamma");
  struct tm_err err = {{0}};
  if (load_shard_resolve(shard_flag, shards_flag, shard_env, &o.shard_index, &o.shard_count,
                         &o.shard_source, &err) != 0)
    return cli_usage_error(CMD, "%s", err.msg);
  /* a sharded run without --start-at, or scheduled with --requests or
   * --find-capacity: load_run refuses them before anything is sent */
  if (drain_given && !isfinite(o.start_at_unix))
    return cli_usage_error(CMD, "--drain is a scheduled level's budget: give --start-at too");
  if (backend_url_check(o.url, NULL, &err) != 0) {
    tm_redact(err.msg, sizeof err.msg, NULL);
    return cli_usage_error(CMD, "--url: %s", err.msg);
  }
  const char *env = key_env ? key_env : "OPENAI_API_KEY";
  o.api_key = getenv(env);
  if (key_env && (!o.api_key || !*o.api_key))
    return cli_usage_error(CMD, "--api-key-env %s: that environment variable is not set", env);
  if (o.api_key && !*o.api_key) o.api_key = NULL;
  const char *out = o.out ? o.out : RECORD_DEFAULT_FILE;
  if (record_check_writable(out, &err) != 0) return cli_usage_error(CMD, "--out: %s", err.msg);
  char shown[2048];
  command_line(argc, argv, o.api_key, shown, sizeof shown);
  o.command = shown;
  const int rc = run_one(&o, json, verbose);
  workload_file_free(&wfile);
  return rc;
}
