/* PLACEHOLDER (being written this session): replaced by its owner. */
#include "cli/cli.h"
int cmd_whatif(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("whatif", TM_EXIT_RUNTIME, "not built yet");
}
