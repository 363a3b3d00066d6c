/* cmd_ceiling: placeholder until its module lands. */
#include "cli/cli.h"

int cmd_ceiling(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("ceiling", TM_EXIT_RUNTIME, "not built yet");
}
