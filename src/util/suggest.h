/* suggest: "did you mean": the candidate nearest a mistyped word by edit
 * distance (insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count 1: "bnech" is 1 from "bench"). */
#ifndef TM_SUGGEST_H
#define TM_SUGGEST_H

#include <stddef.h>

/* The distance between a and b (both at most 63 bytes; longer ones count
 * as far apart: SIZE_MAX). */
size_t tm_edit_distance(const char *a, const char *b);

/* The candidate nearest word, when it is near enough to be a typo: at most
 * 2 edits, and fewer than half of the word's length; the first of equals.
 * NULL otherwise. */
const char *tm_suggest(const char *word, const char *const *candidates, size_t n);

#endif
