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
#include "util/units.h"

static const char *const CMD = "bench";

static void usage(FILE *out) {
  fprintf(out,
          "Usage: tokmeter bench [options]                 the embedded default (in-process)\n"
          "       tokmeter bench -m FILE.gguf [options]     a model file (in-process)\n"
          "       tokmeter bench --url URL [options]        a running server\n"
          "\n"
          "The main job: the two numbers, prefill (prompt tok/s, sets the time to first\n"
          "token) and decode (generated tok/s of one stream), each held against its ceiling.\n"
          "\n"
          "IN-PROCESS (no --url), on tokmeter's own engine, the way llama-bench measures:\n"
          "ppN = N random prompt tokens / the time of one batched forward pass; tgN = N\n"
          "generated tokens / the time of their decode steps (greedy, end-of-sequence\n"
          "ignored, so exactly N). Each repetition starts from a fresh KV cache at depth d\n"
          "(d random tokens prefilled first, untimed). One discarded warm-up, then -r timed\n"
          "repetitions per configuration; median +- sd; model load time apart; the decode\n"
          "curve per output segment (1-32, 33-64, 65-128, ...; none shorter than 24\n"
          "tokens). Below 24 generated tokens the decode cell is blank (null in the\n"
          "records, which keep the times): no decode rate from a handful of tokens, as\n"
          "over a server. Every rate is held against its ceiling at the same\n"
          "thread count: decode = read bandwidth / bytes read per token at the run's depth,\n"
          "prefill = compute (int8 for quantized models where the CPU has it; in process,\n"
          "the int8 tiles (AMX) for Q4_0 / Q8_0 prompts of 16+ tokens where the engine runs\n"
          "them, and over a llama.cpp server that reports AMX_INT8 = 1) / FLOPs per\n"
          "prompt token; the machine is probed once and the result cached, but each decode\n"
          "configuration's read bandwidth is measured at its thread count between its\n"
          "repetitions (after the warm-up and after each; each reading the faster of the\n"
          "probe's buffer and the model's weights in place): each repetition is held\n"
          "against the readings on either side of it, and a spread of more than 5%% is said\n"
          "as the uncertainty of its percentage. The model's mapped weights are also read\n"
          "once with the probe's loop and that figure shown beside the probe's: pages more\n"
          "than 10%% slower are called out (decode cannot reach the ceiling by that much).\n"
          "Steal time (/proc/stat: the host running other work on this VM's CPUs) is read\n"
          "around each configuration and called out from 1%%.\n"
          "With no model given, the main job: a Qwen3-0.6B-shaped model with random weights\n"
          "in Q4_0 and in Q8_0 (synthesized once into the cache), pp512 and tg128 at\n"
          "1..online CPUs threads, 3 timed repetitions, then what the numbers say (scaling\n"
          "with cores, what fewer bytes per token bought). -r/-p/-n/-d/-t override those\n"
          "defaults (a quick look: -r 1 -p 32 -n 32). When its models' mapped pages read\n"
          "more than 5%% below the probe's buffer, the main job runs them from an\n"
          "anonymous copy (as --hugepages does) and says so, with the mapped figures;\n"
          "when the copy reads slower still, it keeps the mapping and says that.\n"
          "  -m, --gguf FILE        a GGUF model instead of the default pair (llama, qwen2,\n"
          "                         qwen3, qwen3moe)\n"
          "  -t, --threads LIST     thread counts, e.g. 1,2 (default: 1..online CPUs)\n"
          "  -p, --prompt-tokens LIST  prompt lengths of the pp runs (default 512; 0 = none)\n"
          "  -n, --max-tokens LIST  generated tokens of the tg runs (default 128; 0 = none;\n"
          "                         below 24: no decode rate, the cell is blank)\n"
          "  -d, --depth LIST       context depth before each run (default 0)\n"
          "  -r, --reps N           timed repetitions (default 5 with -m, 3 for the default\n"
          "                         pair)\n"
          "      --out FILE         results file, JSON Lines, appended (default\n"
          "                         tokmeter-results.jsonl); an existing file must be a\n"
          "                         tokmeter results file: any other (a model, a text\n"
          "                         file) is refused before anything runs (exit 2)\n"
          "      --reprobe          measure the machine again instead of using the cache\n"
          "      --hugepages        copy the weights into transparent huge pages at load\n"
          "                         instead of reading them through the file mapping (the\n"
          "                         mapping already uses 2 MiB page-cache folios where the\n"
          "                         kernel has them; for kernels without, or when the\n"
          "                         bench finds the file's pages slower than fresh memory;\n"
          "                         default off)\n"
          "\n"
          "SERVER (--url): llama.cpp's llama-server, Ollama, vLLM, LM Studio, an MLX server or\n"
          "a hosted OpenAI-compatible API. Per workload: one discarded warm-up, then N timed\n"
          "runs, each prompt opening with a fresh random nonce; cached-token counters are\n"
          "checked (a run whose cache reaches past the nonce is flagged and left out of the\n"
          "prefill figures); token counts come from the server; server and client timers are\n"
          "both reported. Every run is appended to the results file as it ends. Steal time\n"
          "(/proc/stat) over the runs and per workload is recorded and called out from 1%%.\n"
          "      --url URL          the server's base URL, e.g. http://127.0.0.1:8080\n"
          "      --api KIND         auto, openai, ollama or llamacpp (default auto: detected)\n"
          "      --endpoint E       chat or completion (default chat): /v1/chat/completions or\n"
          "                         /v1/completions; Ollama /api/chat or /api/generate\n"
          "      --model NAME       the served model (default: the server's)\n"
          "  -m, --gguf FILE        the file the server serves: adds ceilings and %% of ceiling\n"
          "      --api-key-env VAR  environment variable holding the API key (default\n"
          "                         OPENAI_API_KEY when set); sent as a header, never recorded\n"
          "  -w, --workload LIST    classify (~50 prompt tokens, 16 out), extract (~1700, 60),\n"
          "                         generate (~50, 400); default all three\n"
          "  -p, --prompt-tokens N  a custom workload: prompt length in tokens (default 50\n"
          "                         when only -n is given)\n"
          "  -n, --max-tokens M     a custom workload: tokens to generate (default 128 when\n"
          "                         only -p or --prompt-file is given; below 24 the decode\n"
          "                         rate is blank, with a footnote)\n"
          "      --prompt-file F    a custom workload whose prompt is the file's text (its\n"
          "                         length is the file's: not with -p)\n"
          "  -r, --reps N           timed runs per workload (default 3)\n"
          "      --allow-cache      keep runs that hit the prompt cache in prefill figures\n"
          "                         (labelled)\n"
          "      --cold             also measure the model load cost (Ollama: keep_alive 0)\n"
          "      --list-models      list the served models and exit\n"
          "      --out FILE         results file, JSON Lines, appended (default\n"
          "                         tokmeter-results.jsonl); an existing file must be a\n"
          "                         tokmeter results file: any other (a model, a text\n"
          "                         file) is refused before anything runs (exit 2)\n"
          "      --idle-timeout S   fail a run when the server sends nothing for S seconds\n"
          "                         (default 60)\n"
          "      --timeout S        fail a run that takes longer than S seconds (default 600)\n"
          "                         (detection, /props, /tokenize, model lists: 10 s each,\n"
          "                         or the shorter of these two)\n"
          "\n"
          "Both:\n"
          "      --ttft-sweep       measure time to first token at several prompt lengths\n"
          "                         (-p LIST; default 32,64,128,256,512,1024) and fit\n"
          "                         TTFT = fixed cost + L / prefill rate (each +- its standard\n"
          "                         error; needs 3+ timed runs, lengths x -r); in-process:\n"
          "                         pp runs at each -d depth (default 0; no tg unless -n);\n"
          "                         --url: one custom workload per length, -n tokens each\n"
          "                         (default 16, at most 8 lengths). Default off\n"
          "      --cooldown S       pause S seconds (at most 3600) before each configuration\n"
          "                         after the first (in-process: each model, thread count,\n"
          "                         length and depth; --url: each workload), so a machine\n"
          "                         that heats up under load starts each one rested;\n"
          "                         default none. Either way, a configuration whose later\n"
          "                         timed runs are slower than its first beyond the noise\n"
          "                         is called out (a fitted line over the runs in order,\n"
          "                         as tokmeter compare tests drift; 3+ runs)\n"
          "      --json             machine-readable output on stdout instead of the\n"
          "                         table: in-process one JSON document; --url the\n"
          "                         summary records, one JSON object per line (JSON Lines)\n"
          "                         as written to --out (docs/records.md)\n"
          "  -h, --help             this help\n"
          "\n"
          "Exit codes: 0 every timed run succeeded; 1 a runtime failure or some runs failed\n"
          "(the others are still measured, recorded and summarised); 2 bad usage or input.\n"
          "Cache: $TOKMETER_CACHE_DIR, else $XDG_CACHE_HOME/tokmeter, else ~/.cache/tokmeter.\n"
          "In-process, TOKMETER_KERNELS=scalar|avx2|avx512|vnni|vbmi|amx|neon pins the\n"
          "engine's kernel set (for A/B runs; one this CPU lacks is refused), and\n"
          "TOKMETER_NO_AMX=1 keeps its prefill off the AMX tiles.\n");
}

static int parse_seconds(const char *s, const char *what, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v > 0) || v > 86400)
    return cli_usage_error(CMD, "%s: '%s' is not a number of seconds (0 < S <= 86400)", what, s);
  *out = v;
  return 0;
}

/* "0,128,512": a list of integers 0..1,000,000 (0 allowed: -p 0 skips pp). */
static int parse_list0(const char *s, const char *what, uint32_t *out, size_t *n) {
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    if (*p < '0' || *p > '9')
      return cli_usage_error(CMD, "%s: '%s' is not a list of numbers, e.g. 128,512", what, s);
    unsigned long v = strtoul(p, &end, 10);
    if (v > 1000000)
      return cli_usage_error(CMD, "%s: %lu is too large (at most 1000000)", what, v);
    if (*n == BENCH_MAX_LIST)
      return cli_usage_error(CMD, "%s: at most %d values", what, BENCH_MAX_LIST);
    out[(*n)++] = (uint32_t)v;
    if (*end == 0) return 0;
    if (*end != ',')
      return cli_usage_error(CMD, "%s: '%s' is not a list of numbers, e.g. 128,512", what, s);
    p = end + 1;
  }
}

/* A value listed twice would be measured twice and shown as one row: the
 * lists are sets. 0 or a usage error. */
static int check_unique(const uint32_t *v, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (v[i] == v[j]) return cli_usage_error(CMD, "%s: %u is listed twice", what, v[i]);
  return 0;
}

static int parse_args(int argc, char **argv, struct bench_opts *o) {
  enum { O_URL = 1000, O_API, O_ENDPOINT, O_MODEL, O_KEYENV, O_PFILE, O_ALLOW, O_COLD, O_LIST,
         O_OUT, O_IDLE, O_TIMEOUT, O_REPROBE, O_JSON, O_HUGEPAGES, O_TTFT, O_COOLDOWN };
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
      {"cooldown", required_argument, 0, O_COOLDOWN},
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
  while ((c = getopt_long(argc, argv, ":m:t:p:n:d:w:r:h", longopts, NULL)) != -1) {
    switch (c) {
      case 'm': o->gguf = optarg; break;
      case 't':
        if (tm_parse_u32_list(optarg, "--threads", o->threads, BENCH_MAX_LIST, &o->n_threads,
                              &err) != 0)
          return cli_usage_error(CMD, "%s", err.msg);
        if (check_unique(o->threads, o->n_threads, "--threads")) return TM_EXIT_USAGE;
        break;
      case 'p':
        if (parse_list0(optarg, "--prompt-tokens", o->prompt_tokens, &o->n_prompt_tokens) ||
            check_unique(o->prompt_tokens, o->n_prompt_tokens, "--prompt-tokens"))
          return TM_EXIT_USAGE;
        break;
      case 'n':
        if (parse_list0(optarg, "--max-tokens", o->max_tokens, &o->n_max_tokens) ||
            check_unique(o->max_tokens, o->n_max_tokens, "--max-tokens"))
          return TM_EXIT_USAGE;
        break;
      case 'd':
        if (parse_list0(optarg, "--depth", o->depth, &o->n_depth) ||
            check_unique(o->depth, o->n_depth, "--depth"))
          return TM_EXIT_USAGE;
        break;
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
    if (record_check_writable(o->out ? o->out : RECORD_DEFAULT_FILE, &werr) != 0)
      return cli_fail(CMD, TM_EXIT_USAGE, "--out: %s", werr.msg);
  }
  if (!o->url) {
    const char *server_only = o->workloads      ? "--workload"
                              : o->model         ? "--model"
                              : o->prompt_file   ? "--prompt-file"
                              : o->allow_cache   ? "--allow-cache"
                              : o->cold          ? "--cold"
                              : o->list_models   ? "--list-models"
                              : o->api_key_env   ? "--api-key-env"
                              : o->api != API_AUTO ? "--api"
                              : timeouts_given   ? "--idle-timeout/--timeout"
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
