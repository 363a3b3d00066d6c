/* compare_files: see compare_files.h. */
#include "analysis/compare_files.h"

#include <string.h>

#include "analysis/series_file.h"

/* One side: 0, or -1 with err and nothing held. */
static int load_side(const char *path, struct results *r, struct series_set *set, bool *oom,
                     struct tm_err *err) {
  if (series_file_load(path, r, set, oom, err) != 0) return -1;
  if (set->n == 0) { /* nothing timed to compare */
    series_set_free(set);
    results_free(r);
    return tm_errf(err, "no timed successful runs in %s", path);
  }
  return 0;
}

int compare_files_load(const char *a, const char *b, const struct compare_opts *o,
                       struct compare_files *cf, bool *out_of_memory, struct tm_err *err) {
  memset(cf, 0, sizeof *cf);
  *out_of_memory = false;
  if (load_side(a, &cf->ra, &cf->sa, out_of_memory, err) != 0) return -1;
  if (load_side(b, &cf->rb, &cf->sb, out_of_memory, err) != 0) {
    series_set_free(&cf->sa);
    results_free(&cf->ra);
    return -1;
  }
  if (compare_series(&cf->sa, &cf->sb, o, &cf->cr, err) != 0) {
    *out_of_memory = true; /* compare_series fails only for memory */
    compare_files_free(cf);
    return -1;
  }
  if (cf->cr.n == 0) {
    compare_files_free(cf);
    return tm_errf(err, "nothing to compare: no configuration of %s matches one of %s (same "
                        "test, threads and depth, or the same workload)", a, b);
  }
  return 0;
}

void compare_files_free(struct compare_files *cf) {
  compare_result_free(&cf->cr);
  series_set_free(&cf->sa);
  series_set_free(&cf->sb);
  results_free(&cf->ra);
  results_free(&cf->rb);
}
