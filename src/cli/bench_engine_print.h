/* bench_engine_print: the in-process bench's rendering
 * (cmd_bench_engine_print.c) of what src/bench/inproc.h measured. */
#ifndef TM_CLI_BENCH_ENGINE_PRINT_H
#define TM_CLI_BENCH_ENGINE_PRINT_H

#include <stdbool.h>

struct eb_state;

/* The screen: the machine in two lines, per model one table, at most five
 * findings' briefs, the records line (verbose: every reading and every
 * finding's sentence). */
void bench_engine_print(struct eb_state *s, bool verbose);
/* The --json document: models, summaries, conclusions, findings. */
void bench_engine_print_json(struct eb_state *s);

#endif
