/* buildcheck: rule 10, "check what the build compiled". A runtime that reports
 * its CPU features (llama.cpp's system_info: "AVX2 = 1 | AVX512 = 0 | ...")
 * is compared with this machine's flags: an instruction set the CPU has and
 * the build does not use is named (a missing one cost a 4.1x prefill loss on
 * one phone). Only meaningful when the server runs on this machine. */
#ifndef TM_BUILDCHECK_H
#define TM_BUILDCHECK_H

#include "machine/probe.h"

#define BUILDCHECK_MAX 16

/* Writes into missing[] the machine flags (as /proc/cpuinfo names them) that
 * the build reports as off; returns how many. A feature the string does not
 * mention is not judged. */
int buildcheck_missing(const char *system_info, const struct machine_info *mi,
                       const char *missing[BUILDCHECK_MAX]);

/* True when the build reports feature `name` (its own spelling, "AMX_INT8")
 * as on: "AMX_INT8 = 1". */
bool buildcheck_reports_on(const char *system_info, const char *name);

#endif
