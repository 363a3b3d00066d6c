/* main: `tokmeter CMD [flags]` dispatch, --help and --version. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/suggest.h"

struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

static const struct command commands[] = {
    {"bench", cmd_bench, "the main job: the two numbers (prefill, decode) on this machine"},
    {"load", cmd_load, "a server under load: aggregate tok/s and latency by concurrency or rate"},
    {"report", cmd_report, "results files -> tables, markdown, CSV, an HTML report with plots"},
    {"compare", cmd_compare, "B against A: ratios with confidence intervals, or 'not distinguishable'"},
    {"whatif", cmd_whatif, "what a faster generator would change for a token job (Amdahl)"},
    {"decide", cmd_decide, "device or API for one job: seconds to the answer and money"},
    {"import", cmd_import, "llama-bench JSON / JSONL output -> tokmeter records"},
    {"ceiling", cmd_ceiling, "how fast a model could decode and prefill: bytes and FLOPs per token"},
    {"probe", cmd_probe, "measure this machine: memory bandwidth, compute rate, CPU flags"},
    {"synth", cmd_synth, "write a random-weight GGUF model of a real shape and type"},
};

static void usage(FILE *out) {
  fprintf(out,
          "tokmeter " TOKMETER_VERSION " - tokens per second is two numbers\n"
          "\n"
          "Usage: tokmeter COMMAND [options]\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "Run 'tokmeter COMMAND --help' for a command's options.\n"
          "Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input.\n"
          "Cache (probe results, synthesized models): $TOKMETER_CACHE_DIR, else\n"
          "$XDG_CACHE_HOME/tokmeter, else ~/.cache/tokmeter.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    /* one line that names the commands, as for an unknown command */
    fprintf(stderr, "tokmeter: no command given (");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
      fprintf(stderr, "%s%s", i ? ", " : "", commands[i].name);
    fprintf(stderr, ")\nTry 'tokmeter --help'.\n");
    return TM_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return TM_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("tokmeter %s\n", TOKMETER_VERSION);
    return TM_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  const char *names[sizeof commands / sizeof commands[0]];
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) names[i] = commands[i].name;
  const char *near = tm_suggest(cmd, names, sizeof names / sizeof names[0]);
  if (near)
    fprintf(stderr, "tokmeter: unknown command '%s' (did you mean '%s'?)\nTry 'tokmeter --help'.\n",
            cmd, near);
  else
    fprintf(stderr, "tokmeter: unknown command '%s'\nTry 'tokmeter --help'.\n", cmd);
  return TM_EXIT_USAGE;
}
