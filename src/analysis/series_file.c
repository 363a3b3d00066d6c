/* series_file: one results file into series; see series_file.h. */
#include "analysis/series_file.h"

#include <string.h>

int series_file_load(const char *path, struct results *r, struct series_set *set,
                     bool *out_of_memory, struct tm_err *err) {
  const char *paths[1] = {path};
  *out_of_memory = false;
  memset(set, 0, sizeof *set);
  if (results_load(paths, 1, r, err) != 0) return -1;
  if (r->n_inv == 0) {
    results_free(r);
    return tm_errf(err, "no records in %s", path);
  }
  if (series_extract(r, set, err) != 0) {
    results_free(r);
    *out_of_memory = true;
    return -1;
  }
  return 0;
}
