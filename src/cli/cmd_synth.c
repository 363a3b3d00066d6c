/* cmd_synth: placeholder until its module lands. */
#include "cli/cli.h"

int cmd_synth(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("synth", TM_EXIT_RUNTIME, "not built yet");
}
