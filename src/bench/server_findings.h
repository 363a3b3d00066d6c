/* server_findings: the findings (findings.h) of one server workload, drawn
 * from its summary and ceiling: failed runs, buffered streams, prompt-cache
 * hits, token counts that disagree, reasoning that ate the budget, drift
 * (rule 11), steal, and where prefill and decode stand against their
 * ceilings (above them; decode below the practical range). Pure: the
 * thresholds are unit-tested (tests/unit/bench/test_server_findings.c). */
#ifndef TM_BENCH_SERVER_FINDINGS_H
#define TM_BENCH_SERVER_FINDINGS_H

#include "bench/findings.h"
#include "bench/summary.h"
#include "record/record.h"

/* Appends workload s's findings to out (config.workload = its name);
 * ceiling NULL when no model file was given; steal_share 0..1 or NAN. */
void bench_server_findings(const struct bench_summary *s, const struct record_ceiling *ceiling,
                           double steal_share, struct bench_findings *out);
/* A server whose figures broke a plausibility rule (backend.h RUN_CHECKS):
 * one finding per rule broken, coded by the rule's name ("impossible_count",
 * "count_above_max_tokens", ...), a problem, with the number of requests
 * (n[rule], of `requests` sent) and the first one's reason, what was seen.
 * `workload` is the workload's name, or "calibration". */
void bench_implausible_findings(const char *workload, const uint32_t *n,
                                const char (*first)[160], uint32_t requests,
                                struct bench_findings *out);
/* The invocation's steal, when at or above the warning threshold and no
 * workload's steal finding is in out already. */
void bench_server_steal_finding(double steal_share, struct bench_findings *out);

#endif
