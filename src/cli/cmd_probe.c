/* cmd_probe: placeholder until its module lands. */
#include "cli/cli.h"

int cmd_probe(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("probe", TM_EXIT_RUNTIME, "not built yet");
}
