/* cmd_bench: placeholder until its module lands. */
#include "cli/cli.h"

int cmd_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("bench", TM_EXIT_RUNTIME, "not built yet");
}
