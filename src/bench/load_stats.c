/* load_stats: the load method's pure arithmetic (see load.h): SLO parsing
 * (the statistics are stats/load_window.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/load_internal.h"

/* ------------------------------------------------------------------ SLOs */

int load_slo_parse(const char *s, struct load_slo *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  char buf[512];
  if (!s || !*s || strlen(s) >= sizeof buf) return tm_errf(err, "an empty or too long list");
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
       item = strtok_r(NULL, ",", &save)) {
    double pct = 99;
    char *spec = item;
    if (item[0] == 'p' && strchr(item, ':')) {
      char *colon = strchr(item, ':'), *end;
      *colon = 0;
      pct = strtod(item + 1, &end);
      if (end == item + 1 || *end || !(pct > 0 && pct <= 100))
        return tm_errf(err, "'%s': the percentile is p1..p100 (p99:ttft=500ms)", item);
      spec = colon + 1;
    }
    char *eq = strchr(spec, '=');
    if (!eq) return tm_errf(err, "'%s' is not NAME=LIMIT (ttft=500ms)", spec);
    *eq = 0;
    int m = -1;
    for (int k = 0; k < LOAD_SLO_COUNT; k++)
      if (!strcmp(spec, load_slo_name((enum load_slo_metric)k))) m = k;
    if (m < 0) return tm_errf(err, "'%s' is not ttft, tpot or e2e", spec);
    if (out->set[m]) return tm_errf(err, "%s is given twice", spec);
    char *end;
    double v = strtod(eq + 1, &end);
    double scale = 1;
    if (!strcmp(end, "s")) scale = 1000;
    else if (strcmp(end, "ms") != 0 && *end)
      return tm_errf(err, "%s=%s: a time in ms or s (500ms, 0.5s)", spec, eq + 1);
    if (end == eq + 1 || !(v > 0) || !isfinite(v))
      return tm_errf(err, "%s=%s: a time above 0 (500ms, 0.5s)", spec, eq + 1);
    out->set[m] = true;
    out->limit_ms[m] = v * scale;
    out->percentile[m] = pct;
  }
  return 0;
}
