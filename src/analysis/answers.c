/* answers: see answers.h. */
#include "analysis/answers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/series.h"
#include "record/keys.h"

static struct answer_tally *tally_for(struct answer_tallies *t, const char *key, size_t *cap) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->t[i].key, key)) return &t->t[i];
  if (t->n == *cap) {
    size_t nc = *cap ? 2 * *cap : 8;
    struct answer_tally *g = realloc(t->t, nc * sizeof *g);
    if (!g) return NULL;
    t->t = g;
    *cap = nc;
  }
  struct answer_tally *a = &t->t[t->n++];
  memset(a, 0, sizeof *a);
  snprintf(a->key, sizeof a->key, "%s", key);
  return a;
}

int answer_tallies_of(const struct results *r, struct answer_tallies *out) {
  memset(out, 0, sizeof *out);
  size_t cap = 0;
  for (size_t i = 0; i < r->n_inv; i++) {
    const struct results_invocation *inv = &r->inv[i];
    for (size_t k = 0; k < inv->n_runs; k++) {
      json_t *run = inv->runs[k];
      const char *v = json_string_value(json_object_get(json_object_get(run, "answer"), "verdict"));
      if (!v || record_true(run, RK_WARMUP) || record_true(run, RK_CALIBRATION) ||
          record_true(run, RK_COLD) || !record_true(run, RK_OK))
        continue;
      char key[320];
      series_server_key(inv, run, key, sizeof key);
      struct answer_tally *a = tally_for(out, key, &cap);
      if (!a) {
        answer_tallies_free(out);
        return -1;
      }
      if (!strcmp(v, "correct")) a->correct++;
      else if (!strcmp(v, "wrong")) a->wrong++;
      else a->no_answer++;
    }
  }
  return 0;
}

void answer_tallies_free(struct answer_tallies *t) {
  free(t->t);
  memset(t, 0, sizeof *t);
}

const struct answer_tally *answer_tally_find(const struct answer_tallies *t, const char *key) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->t[i].key, key)) return &t->t[i];
  return NULL;
}

/* log of the hypergeometric probability of x correct in the first row, the
 * margins fixed: rows n, m; correct k = a + b in all. */
static double log_hyper(uint32_t x, uint32_t n, uint32_t m, uint32_t k) {
  const double N = (double)n + m;
  return lgamma(n + 1.0) - lgamma(x + 1.0) - lgamma(n - x + 1.0) + lgamma(m + 1.0) -
         lgamma(k - x + 1.0) - lgamma(m - (k - x) + 1.0) - (lgamma(N + 1) - lgamma(k + 1.0) -
                                                             lgamma(N - k + 1));
}

double answers_fisher_p(uint32_t a, uint32_t n, uint32_t b, uint32_t m) {
  if (n == 0 || m == 0 || a > n || b > m) return 1.0;
  const uint32_t k = a + b;
  const uint32_t lo = k > m ? k - m : 0, hi = k < n ? k : n;
  const double obs = log_hyper(a, n, m, k);
  double p = 0;
  for (uint32_t x = lo; x <= hi; x++) {
    const double l = log_hyper(x, n, m, k);
    if (l <= obs + 1e-7) p += exp(l); /* as likely as observed, or less */
  }
  return p > 1 ? 1 : p;
}
