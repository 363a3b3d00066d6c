/* suggest: contracts in suggest.h (optimal string alignment distance). */
#include "util/suggest.h"

#include <stdint.h>
#include <string.h>

#define MAXLEN 63

size_t tm_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > MAXLEN || m > MAXLEN) return SIZE_MAX;
  size_t d[MAXLEN + 1][MAXLEN + 1];
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

const char *tm_suggest(const char *word, const char *const *candidates, size_t n) {
  const char *best = NULL;
  size_t best_d = SIZE_MAX, len = strlen(word);
  for (size_t i = 0; i < n; i++) {
    size_t dist = tm_edit_distance(word, candidates[i]);
    if (dist < best_d) {
      best_d = dist;
      best = candidates[i];
    }
  }
  return best && best_d <= 2 && 2 * best_d < len ? best : NULL;
}
