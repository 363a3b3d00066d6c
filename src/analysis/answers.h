/* answers: the checked answers of a results file per configuration (the
 * series key, series_server_key), for compare's accuracy beside speed:
 * counts of correct, wrong and no_answer over the timed, successful runs
 * that carry an `answer` (workload files' jobs with an expect), and the
 * two-sided Fisher exact test of two such counts, so a difference of one
 * answer in a few is said to be one (docs/workloads.md). */
#ifndef TM_ANALYSIS_ANSWERS_H
#define TM_ANALYSIS_ANSWERS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/results.h"

struct answer_tally {
  char key[320];
  uint32_t correct, wrong, no_answer;
};

struct answer_tallies {
  struct answer_tally *t;
  size_t n;
};

/* 0, or -1 when out of memory. */
int answer_tallies_of(const struct results *r, struct answer_tallies *out);
void answer_tallies_free(struct answer_tallies *t);
/* The tally of a configuration key; NULL when none of its runs was checked. */
const struct answer_tally *answer_tally_find(const struct answer_tallies *t, const char *key);

/* Two-sided Fisher exact p-value of a correct of n against b correct of m
 * (1 when either side is empty). */
double answers_fisher_p(uint32_t a, uint32_t n, uint32_t b, uint32_t m);

#endif
