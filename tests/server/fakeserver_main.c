/* tokmeter-fakeserver: the fake LLM servers of fakeserver.h as a process, for
 * CLI tests. Prints "port N" on stdout (flushed) once listening, optionally
 * writes N to --port-file, and serves until SIGTERM or SIGINT. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakeserver.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: tokmeter-fakeserver [options]\n"
          "A fake LLM server on 127.0.0.1 (ephemeral port) for tests.\n"
          "  --mode M              replay | paced | buffered | break (default paced)\n"
          "  --flavor F            llamacpp | openai | ollama | lmstudio (default llamacpp)\n"
          "  --fixtures DIR        replay: directory of llama-server *.json exchanges\n"
          "                        (default $TOKMETER_FIXTURES/llama-server)\n"
          "  --replay-file F       replay: answer every request with this exchange\n"
          "                        (basename; default: choose by method+path)\n"
          "  --time-scale X        replay pacing multiplier, 0 = no waits (default 1)\n"
          "  --a MS                prefill fixed delay (default 20)\n"
          "  --b MS                prefill delay per uncached prompt token (default 0.5)\n"
          "  --c MS                interval between tokens (default 10)\n"
          "  --heat X              generation k takes --b and --c x (1 + X)^k: a server\n"
          "                        that heats up (default 0)\n"
          "  --system-info S       llamacpp: /props reports this build feature string\n"
          "                        (\"AVX512 = 1 | AMX_INT8 = 1 |\"; default: none)\n"
          "  --template-tokens N   tokens the chat template adds (default 0)\n"
          "  --fixed-prompt-tokens N  user prompt tokens instead of its word count\n"
          "                        (default 0 = count words)\n"
          "  --prompt-cache        report cached prefixes (default off)\n"
          "  --reasoning           first half of tokens as reasoning (default off)\n"
          "  --think-tags          first half inline in <think>...</think> (default off)\n"
          "  --stop-early          stop at max_tokens/4 unless exact length asked (default off)\n"
          "  --answer TEXT         the answer's words are TEXT's, then stop unless ignore_eos or\n"
          "                        min_tokens asked for more (default: alpha, bravo, ...)\n"
          "  --image-tokens N      each image in a request adds N prompt tokens (default 0)\n"
          "  --reject-images       a request with an image gets HTTP 400 (a text-only model)\n"
          "  --lie-completion J    hostile: usage.completion_tokens is J (a JSON literal:\n"
          "                        -32, 32.5, 200000) whatever was generated\n"
          "  --lie-prompt J        hostile: usage.prompt_tokens is J (a JSON literal)\n"
          "  --lie-cached J        hostile: usage's cached_tokens is J (a JSON literal)\n"
          "  --lie-prompt-ms X     hostile: llama.cpp timings.prompt_ms is X\n"
          "  --break-after N       serve the first N generation requests, then break\n"
          "  --rate-limit N        the first N generation requests get HTTP 429\n"
          "  --retry-after V       ... with this Retry-After header value (default none)\n"
          "  --usage-every-chunk   usage (counts so far) in every OpenAI token event (vLLM\n"
          "                        continuous_usage_stats; default off)\n"
          "  --break STAGE         break mode stage (default http-500): close-on-accept,\n"
          "                        half-headers, after-headers, mid-event, after-first-token,\n"
          "                        no-done-no-usage, stall, stall-before-headers,\n"
          "                        malformed-json, http-500, http-404, error-event,\n"
          "                        context-overflow, garbage (implies --mode break)\n"
          "  --echo-key 401|model  hostile: every request 401 quoting the bearer key after\n"
          "                        --echo-pad N x's; or /v1/models lists \"m <key>\"\n"
          "  --tokenize-hang       hostile: POST /tokenize never answers\n"
          "  --tokenize-404        hostile: POST /tokenize answers HTTP 404\n"
          "  --fail-unload         hostile: a generation with keep_alive 0 gets HTTP 500\n"
          "  --port-file F         also write the port number to F (default none)\n"
          "  --help                this text\n");
}

static int parse_num(const char *flag, const char *v, double *out) {
  char *e;
  double x = v ? strtod(v, &e) : 0;
  if (!v || *e || e == v || x < 0) {
    fprintf(stderr, "tokmeter-fakeserver: %s needs a number >= 0\n", flag);
    return -1;
  }
  *out = x;
  return 0;
}

int main(int argc, char **argv) {
  struct fs_config cfg;
  fs_config_init(&cfg);
  const char *port_file = NULL;
  char fixtures[4096] = "";
  const char *env = getenv("TOKMETER_FIXTURES");
  if (env) snprintf(fixtures, sizeof fixtures, "%s/llama-server", env);
  cfg.fixtures_dir = fixtures[0] ? fixtures : NULL;
  bool mode_set = false;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    double x;
#define NEEDV()                                                        \
  do {                                                                 \
    if (!v) {                                                          \
      fprintf(stderr, "tokmeter-fakeserver: %s needs a value\n", a);   \
      return 2;                                                        \
    }                                                                  \
    i++;                                                               \
  } while (0)
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--mode") == 0) {
      NEEDV();
      mode_set = true;
      if (strcmp(v, "replay") == 0) cfg.mode = FS_REPLAY;
      else if (strcmp(v, "paced") == 0) cfg.mode = FS_PACED;
      else if (strcmp(v, "buffered") == 0) cfg.mode = FS_BUFFERED;
      else if (strcmp(v, "break") == 0) cfg.mode = FS_BREAK;
      else {
        fprintf(stderr, "tokmeter-fakeserver: unknown --mode %s\n", v);
        return 2;
      }
    } else if (strcmp(a, "--flavor") == 0) {
      NEEDV();
      if (strcmp(v, "llamacpp") == 0) cfg.flavor = FS_FLAVOR_LLAMACPP;
      else if (strcmp(v, "openai") == 0 || strcmp(v, "vllm") == 0) cfg.flavor = FS_FLAVOR_OPENAI;
      else if (strcmp(v, "ollama") == 0) cfg.flavor = FS_FLAVOR_OLLAMA;
      else if (strcmp(v, "lmstudio") == 0) cfg.flavor = FS_FLAVOR_LMSTUDIO;
      else {
        fprintf(stderr, "tokmeter-fakeserver: unknown --flavor %s\n", v);
        return 2;
      }
    } else if (strcmp(a, "--fixtures") == 0) {
      NEEDV();
      cfg.fixtures_dir = v;
    } else if (strcmp(a, "--replay-file") == 0) {
      NEEDV();
      cfg.replay_file = v;
    } else if (strcmp(a, "--time-scale") == 0) {
      NEEDV();
      if (parse_num(a, v, &cfg.time_scale)) return 2;
    } else if (strcmp(a, "--a") == 0) {
      NEEDV();
      if (parse_num(a, v, &cfg.a_ms)) return 2;
    } else if (strcmp(a, "--b") == 0) {
      NEEDV();
      if (parse_num(a, v, &cfg.b_ms)) return 2;
    } else if (strcmp(a, "--c") == 0) {
      NEEDV();
      if (parse_num(a, v, &cfg.c_ms)) return 2;
    } else if (strcmp(a, "--system-info") == 0) {
      NEEDV();
      cfg.system_info = v;
    } else if (strcmp(a, "--heat") == 0) {
      NEEDV();
      if (parse_num(a, v, &cfg.heat)) return 2;
    } else if (strcmp(a, "--template-tokens") == 0) {
      NEEDV();
      if (parse_num(a, v, &x)) return 2;
      cfg.template_tokens = (uint32_t)x;
    } else if (strcmp(a, "--fixed-prompt-tokens") == 0) {
      NEEDV();
      if (parse_num(a, v, &x)) return 2;
      cfg.fixed_prompt_tokens = (uint32_t)x;
    } else if (strcmp(a, "--prompt-cache") == 0) {
      cfg.prompt_cache = true;
    } else if (strcmp(a, "--reasoning") == 0) {
      cfg.reasoning = true;
    } else if (strcmp(a, "--think-tags") == 0) {
      cfg.think_tags = true;
    } else if (strcmp(a, "--stop-early") == 0) {
      cfg.stop_early = true;
    } else if (strcmp(a, "--answer") == 0) {
      NEEDV();
      cfg.answer = v;
    } else if (strcmp(a, "--image-tokens") == 0) {
      NEEDV();
      if (parse_num(a, v, &x)) return 2;
      cfg.image_tokens = (uint32_t)x;
    } else if (strcmp(a, "--reject-images") == 0) {
      cfg.reject_images = true;
    } else if (strcmp(a, "--usage-every-chunk") == 0) {
      cfg.usage_every_chunk = true;
    } else if (strcmp(a, "--lie-completion") == 0) {
      NEEDV();
      cfg.lie_completion = v;
    } else if (strcmp(a, "--lie-prompt") == 0) {
      NEEDV();
      cfg.lie_prompt = v;
    } else if (strcmp(a, "--lie-cached") == 0) {
      NEEDV();
      cfg.lie_cached = v;
    } else if (strcmp(a, "--lie-prompt-ms") == 0) {
      NEEDV();
      cfg.lie_prompt_ms = v;
    } else if (strcmp(a, "--break-after") == 0) {
      NEEDV();
      cfg.break_after = (uint32_t)atoi(v);
    } else if (strcmp(a, "--rate-limit") == 0) {
      NEEDV();
      cfg.rate_limit = (uint32_t)atoi(v);
    } else if (strcmp(a, "--retry-after") == 0) {
      NEEDV();
      cfg.retry_after = v;
    } else if (strcmp(a, "--break") == 0) {
      NEEDV();
      int st = fs_break_stage_from_name(v);
      if (st < 0) {
        fprintf(stderr, "tokmeter-fakeserver: unknown --break stage %s\n", v);
        return 2;
      }
      cfg.break_stage = (enum fs_break_stage)st;
      if (!mode_set) cfg.mode = FS_BREAK;
    } else if (strcmp(a, "--echo-key") == 0) {
      NEEDV();
      if (strcmp(v, "401") == 0) cfg.echo_key = FS_ECHO_401;
      else if (strcmp(v, "model") == 0) cfg.echo_key = FS_ECHO_MODEL;
      else {
        fprintf(stderr, "tokmeter-fakeserver: --echo-key 401|model\n");
        return 2;
      }
    } else if (strcmp(a, "--echo-pad") == 0) {
      NEEDV();
      if (parse_num(a, v, &x)) return 2;
      cfg.echo_pad = (uint32_t)x;
    } else if (strcmp(a, "--tokenize-hang") == 0) {
      cfg.tokenize_hang = true;
    } else if (strcmp(a, "--tokenize-404") == 0) {
      cfg.tokenize_404 = true;
    } else if (strcmp(a, "--fail-unload") == 0) {
      cfg.fail_unload = true;
    } else if (strcmp(a, "--port-file") == 0) {
      NEEDV();
      port_file = v;
    } else {
      fprintf(stderr, "tokmeter-fakeserver: unknown option %s (see --help)\n", a);
      return 2;
    }
#undef NEEDV
  }
  if (cfg.mode == FS_REPLAY && !cfg.fixtures_dir) {
    fprintf(stderr, "tokmeter-fakeserver: --mode replay needs --fixtures DIR\n");
    return 2;
  }

  /* Block the stop signals before the server thread starts (it inherits the
   * mask), then wait for one synchronously. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);

  int port = 0;
  struct fakeserver *s = fs_start(&cfg, &port);
  if (!s) return 1;
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
      fprintf(stderr, "tokmeter-fakeserver: cannot write %s\n", port_file);
      fs_stop(s);
      return 1;
    }
  }
  printf("port %d\n", port);
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  fs_stop(s);
  return 0;
}
