/* PLACEHOLDER (being written this session): replaced by its owner. */
#include "cli/cli.h"
int cmd_compare(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("compare", TM_EXIT_RUNTIME, "not built yet");
}
