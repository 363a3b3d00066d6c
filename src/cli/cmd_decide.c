/* PLACEHOLDER (being written this session): replaced by its owner. */
#include "cli/cli.h"
int cmd_decide(int argc, char **argv) {
  (void)argc; (void)argv;
  return cli_fail("decide", TM_EXIT_RUNTIME, "not built yet");
}
