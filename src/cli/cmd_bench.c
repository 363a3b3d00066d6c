/* cmd_bench: `tokmeter bench`, the main job: parsing, --help and dispatch.
 *
 * No --url: in-process on tokmeter's own engine (cmd_bench_engine.c): the
 * embedded default pair (a Qwen3-0.6B shape in Q4_0 and Q8_0, synthesized once
 * into the cache) or -m FILE; pp and tg per thread count, each rate against
 * its ceiling. --url: a running server (cmd_bench_server.c).
 *
 * Exit codes: 0 ok; 2 bad flag or unusable model; 1 runtime failure. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli/bench_cli.h"
#include "cli/cli.h"
#include "record/record.h"
#include "workload/workload_file.h"
#include "util/units.h"

static const char *const CMD = "bench";

/* A reference, at most about 45 lines: the method is in docs/bench.md. */
static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter bench [options]               the main job: a Qwen3-0.6B shape\n"
          "                                              in Q4_0 and Q8_0, in-process\n"
          "       tokmeter bench -m FILE.gguf [options]  a model file, in-process\n"
          "       tokmeter bench --url URL [options]     a running server\n"
          "Prefill and decode tok/s beside their ceilings. Method: docs/bench.md.\n"
          "In-process (no --url):\n"
          "  -m, --gguf FILE          GGUF model (llama, qwen2, qwen3, qwen3moe)\n"
          "  -t, --threads LIST       thread counts, e.g. 1,2 (default 1..online CPUs)\n"
          "  -p, --prompt-tokens LIST ppN lengths (default 512; 0 = none)\n"
          "  -n, --max-tokens LIST    tgN lengths (default 128; 0 = none; below 24 no rate)\n"
          "  -d, --depth LIST         context filled before each run, untimed (default 0)\n"
          "  -w, --workload FILE.jsonl  with -m: your jobs' prompts at llama.cpp's token\n"
          "                           counts (the file's vocabulary) in place of -p/-d\n"
          "  -r, --reps N             timed repetitions (default 3; 5 with -m)\n"
          "      --hugepages          copy the weights into huge pages (default: mapped)\n"
          "      --reprobe            measure the machine again (default: cached probe)\n"
          "Server (--url):\n"
          "      --url URL            base URL, e.g. http://127.0.0.1:8080\n"
          "      --api KIND           auto, openai, ollama or llamacpp (default auto)\n"
          "      --endpoint E         chat or completion (default chat)\n"
          "      --model NAME         the served model (default the server's)\n"
          "  -m, --gguf FILE          the file the server serves: adds ceilings\n"
          "      --api-key-env VAR    variable with the API key (default OPENAI_API_KEY)\n"
          "  -w, --workload LIST      classify, extract, generate (default all three),\n"
          "                           or FILE.jsonl: your jobs, answers checked\n"
          "                           (docs/workloads.md)\n"
          "  -p, --prompt-tokens N    custom workload's prompt tokens (default 50\n"
          "                           when only -n is given)\n"
          "  -n, --max-tokens M       custom workload's output (default 128 when\n"
          "                           only -p or --prompt-file is given)\n"
          "      --prompt-file F      custom workload whose prompt is the file's text\n"
          "  -r, --reps N             timed runs per workload (default 3)\n"
          "      --allow-cache        keep prompt-cache hits in prefill figures (labelled)\n"
          "      --cold               also measure the model load (Ollama)\n"
          "      --list-models        list the served models and exit\n"
          "      --idle-timeout S     fail a run silent for S seconds (default 60)\n"
          "      --timeout S          fail a run longer than S seconds (default 600)\n"
          "      --max-wait S         the whole invocation's budget (default none)\n"
          "Both:\n"
          "      --out FILE           results file to append to (tokmeter-results.jsonl)\n"
          "      --repair             first drop a cut last line of --out (a killed writer)\n"
          "      --ttft-sweep         TTFT at -p lengths (default 32..1024), fitted\n"
          "      --cooldown S         idle pause before each configuration but the first\n"
          "      --json               in-process: one JSON document; --url: summary lines\n"
          "  -v, --verbose            every reading and finding in full (default: tables)\n"
          "      --[no-]progress      a progress line per configuration (default), or none\n"
          "  -h, --help               this help\n"
          "Exit: 0 all done; 1 a runtime failure or failed runs; 2 bad usage or input.\n"
          "Env: TOKMETER_CACHE_DIR; TOKMETER_KERNELS=scalar|avx2|avx512|vnni|vbmi|amx|neon\n"
          "pins the engine's kernels; TOKMETER_NO_AMX=1 keeps prefill off the AMX tiles.\n");
}

static int parse_seconds(const char *s, const char *what, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v > 0) || v > 86400)
    return cli_usage_error(CMD, "%s: '%s' is not a number of seconds (0 < S <= 86400)", what, s);
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o) {
  enum { O_URL = 1000, O_API, O_ENDPOINT, O_MODEL, O_KEYENV, O_PFILE, O_ALLOW, O_COLD, O_LIST,
         O_OUT, O_IDLE, O_TIMEOUT, O_REPROBE, O_JSON, O_HUGEPAGES, O_TTFT, O_COOLDOWN,
         O_PROGRESS, O_NO_PROGRESS, O_REPAIR, O_MAXWAIT };
  static const struct option longopts[] = {
      {"gguf", required_argument, 0, 'm'},          {"threads", required_argument, 0, 't'},
      {"depth", required_argument, 0, 'd'},
      {"prompt-tokens", required_argument, 0, 'p'}, {"max-tokens", required_argument, 0, 'n'},
      {"reprobe", no_argument, 0, O_REPROBE},
      {"hugepages", no_argument, 0, O_HUGEPAGES},       {"json", no_argument, 0, O_JSON},
      {"ttft-sweep", no_argument, 0, O_TTFT},
      {"url", required_argument, 0, O_URL},         {"api", required_argument, 0, O_API},
      {"endpoint", required_argument, 0, O_ENDPOINT}, {"model", required_argument, 0, O_MODEL},
      {"api-key-env", required_argument, 0, O_KEYENV}, {"workload", required_argument, 0, 'w'},
      {"prompt-file", required_argument, 0, O_PFILE}, {"reps", required_argument, 0, 'r'},
      {"allow-cache", no_argument, 0, O_ALLOW},     {"cold", no_argument, 0, O_COLD},
      {"list-models", no_argument, 0, O_LIST},      {"out", required_argument, 0, O_OUT},
      {"idle-timeout", required_argument, 0, O_IDLE}, {"timeout", required_argument, 0, O_TIMEOUT},
      {"cooldown", required_argument, 0, O_COOLDOWN}, {"max-wait", required_argument, 0, O_MAXWAIT},
      {"verbose", no_argument, 0, 'v'},             {"progress", no_argument, 0, O_PROGRESS},
      {"no-progress", no_argument, 0, O_NO_PROGRESS}, {"repair", no_argument, 0, O_REPAIR},
      {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
  struct tm_err err;
  memset(o, 0, sizeof *o);
  o->api = API_AUTO;
  o->endpoint = ENDPOINT_CHAT;
  o->idle_timeout_s = 60;
  o->timeout_s = 600;
  bool timeouts_given = false; /* the server's timeouts: meaningless in-process */
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":m:t:p:n:d:w:r:vh", longopts, NULL)) != -1) {
    switch (c) {
      case 'm': o->gguf = optarg; break;
      case 't':
        if (tm_parse_u32_list(optarg, "--threads", o->threads, BENCH_MAX_LIST, &o->n_threads,
                              &err) != 0 ||
            tm_check_distinct(o->threads, o->n_threads, "--threads", &err) != 0)
          return cli_usage_error(CMD, "%s", err.msg);
        break;
      case 'p':
      case 'n':
      case 'd': {
        const char *flag = c == 'p' ? "--prompt-tokens" : c == 'n' ? "--max-tokens" : "--depth";
        uint32_t *v = c == 'p' ? o->prompt_tokens : c == 'n' ? o->max_tokens : o->depth;
        size_t *n = c == 'p' ? &o->n_prompt_tokens : c == 'n' ? &o->n_max_tokens : &o->n_depth;
        if (tm_parse_u32_set0(optarg, flag, 1000000, v, BENCH_MAX_LIST, n, &err) != 0)
          return cli_usage_error(CMD, "%s", err.msg);
        break;
      }
      case 'w': o->workloads = optarg; break;
      case 'r':
        if (tm_parse_u32(optarg, "--reps", &o->reps, &err) != 0 || o->reps > 1000)
          return cli_usage_error(CMD, "--reps: '%s' is not 1..1000", optarg);
        break;
      case O_URL: o->url = optarg; break;
      case O_API:
        o->api = api_family_from_name(optarg);
        if (o->api < 0)
          return cli_usage_error(CMD, "--api: '%s' is not auto, openai, ollama or llamacpp",
                                 optarg);
        break;
      case O_ENDPOINT:
        if (!strcmp(optarg, "chat")) o->endpoint = ENDPOINT_CHAT;
        else if (!strcmp(optarg, "completion") || !strcmp(optarg, "completions"))
          o->endpoint = ENDPOINT_COMPLETION;
        else return cli_usage_error(CMD, "--endpoint: '%s' is not chat or completion", optarg);
        break;
      case O_MODEL: o->model = optarg; break;
      case O_KEYENV: o->api_key_env = optarg; break;
      case O_PFILE: o->prompt_file = optarg; break;
      case O_ALLOW: o->allow_cache = true; break;
      case O_COLD: o->cold = true; break;
      case O_LIST: o->list_models = true; break;
      case O_OUT: o->out = optarg; break;
      case O_IDLE:
        if (parse_seconds(optarg, "--idle-timeout", &o->idle_timeout_s)) return TM_EXIT_USAGE;
        timeouts_given = true;
        break;
      case O_TIMEOUT:
        if (parse_seconds(optarg, "--timeout", &o->timeout_s)) return TM_EXIT_USAGE;
        timeouts_given = true;
        break;
      case O_MAXWAIT:
        if (parse_seconds(optarg, "--max-wait", &o->max_wait_s)) return TM_EXIT_USAGE;
        break;
      case O_COOLDOWN: {
        char *end;
        double v = strtod(optarg, &end);
        if (end == optarg || *end || !(v >= 0) || v > 3600)
          return cli_usage_error(CMD, "--cooldown: '%s' is not a number of seconds (0 to 3600)",
                                 optarg);
        o->cooldown_s = v;
        break;
      }
      case O_REPROBE: o->reprobe = true; break;
      case O_HUGEPAGES: o->hugepages = true; break;
      case O_JSON: o->json = true; break;
      case O_TTFT: o->ttft_sweep = true; break;
      case 'v': o->verbose = true; break;
      case O_PROGRESS: cli_progress_force(1); break;
      case O_NO_PROGRESS: cli_progress_force(0); break;
      case O_REPAIR: o->repair = true; break;
      case 'h': usage(stdout); return -1;
      case ':': return cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
      default: return cli_bad_option(CMD, argv[optind - 1], longopts);
    }
  }
  /* Before the sweep fills in its default -p list: only a -p the user gave. */
  if (o->prompt_file && o->n_prompt_tokens)
    return cli_usage_error(CMD, "--prompt-file and --prompt-tokens: the prompt is the file's "
                                "text, of the file's length; give one");
  if (o->ttft_sweep) {
    int rc = bench_ttft_prepare(o);
    if (rc) return rc;
  }
  if (optind < argc)
    return cli_usage_error(CMD, "unexpected argument '%s' (a model file goes after -m)",
                           argv[optind]);
  if (!o->list_models) { /* every other bench appends records: before any probe, load or
                            request, the file must take them (one line, exit 2) */
    struct tm_err werr = {{0}};
    const char *out = o->out ? o->out : RECORD_DEFAULT_FILE;
    uint64_t dropped = 0;
    if (o->repair && record_repair_torn(out, &dropped, &werr) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "--repair: %s", werr.msg);
    if (dropped)
      cli_note(CMD, "--repair: dropped the cut last line of %s (%llu bytes); the records before "
               "it are kept", out, (unsigned long long)dropped);
    if (record_check_writable(out, &werr) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "--out: %s", werr.msg);
  }
  if (!o->url) {
    if (o->workloads && !workload_is_file(o->workloads))
      return cli_usage_error(CMD, "--workload %s: the built-in workloads are for --url; in "
                                  "process -w takes a workload file (FILE.jsonl)", o->workloads);
    if (o->workloads && !o->gguf)
      return cli_usage_error(CMD, "--workload %s in process needs -m MODEL.gguf with a "
                                  "vocabulary (tokmeter synth --vocab-from FILE makes one)",
                             o->workloads);
    if (o->workloads && (o->n_prompt_tokens || o->n_depth || o->n_max_tokens > 1))
      return cli_usage_error(CMD, "--workload: a workload file's jobs set the prompts (no -p, "
                                  "-d or lists of -n; one -n is the jobs' default output)");
    const char *server_only = o->model         ? "--model"
                              : o->prompt_file   ? "--prompt-file"
                              : o->allow_cache   ? "--allow-cache"
                              : o->cold          ? "--cold"
                              : o->list_models   ? "--list-models"
                              : o->api_key_env   ? "--api-key-env"
                              : o->api != API_AUTO ? "--api"
                              : timeouts_given   ? "--idle-timeout/--timeout"
                              : o->max_wait_s > 0 ? "--max-wait"
                                                   : NULL;
    if (server_only) return cli_usage_error(CMD, "%s needs --url (a server to measure)", server_only);
  } else {
    if (o->n_depth) return cli_usage_error(CMD, "--depth is for in-process runs (no --url)");
    if (o->hugepages) return cli_usage_error(CMD, "--hugepages is for in-process runs (no --url)");
    if (o->n_threads) return cli_usage_error(CMD, "--threads is for in-process runs (no --url)");
    if ((o->n_prompt_tokens > 1 && !o->ttft_sweep) || o->n_max_tokens > 1)
      return cli_usage_error(CMD, "lists of -p/-n are for in-process runs; with --url give "
                                  "one value each");
    for (size_t i = 0; i < o->n_prompt_tokens; i++)
      if (!o->prompt_tokens[i]) return cli_usage_error(CMD, "--prompt-tokens: 0 with --url");
    for (size_t i = 0; i < o->n_max_tokens; i++)
      if (!o->max_tokens[i]) return cli_usage_error(CMD, "--max-tokens: 0 with --url");
  }
  return 0;
}

int cmd_bench(int argc, char **argv) {
  struct bench_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) return TM_EXIT_OK; /* --help */
  if (rc > 0) return rc;
  /* The command line goes into the run identity. Keys never appear on it
   * (they come from the environment); the records redact URLs anyway. */
  char command[2048] = "tokmeter";
  for (int i = 0; i < argc; i++) {
    size_t len = strlen(command);
    snprintf(command + len, sizeof command - len, " %s", argv[i]);
  }
  o.command = command;
  rc = o.url ? bench_server(&o) : bench_inprocess(&o);
  /* A sweep with some failed runs (exit 1) still fits the runs that worked. */
  if (o.ttft_sweep && (rc == TM_EXIT_OK || (rc == TM_EXIT_RUNTIME && o.url))) {
    int frc = bench_ttft_report(&o);
    if (rc == TM_EXIT_OK) rc = frc;
  }
  return rc;
}
