/* load_shard: see load_shard.h. */
#include "bench/load_shard.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A whole number 0..max with nothing after it; -1 when not. */
static long long whole(const char *s, long long max) {
  if (!s || !isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v > max) return -1;
  return v;
}

int load_shard_resolve(const char *shard_flag, uint32_t shards_flag,
                       const char *(*get)(const char *name), uint32_t *index, uint32_t *count,
                       const char **source, struct tm_err *err) {
  *index = 0;
  *count = 1;
  *source = NULL;
  if (shard_flag) {
    if (shards_flag) return tm_errf(err, "--shard I/N and --shards N: give one");
    char buf[64];
    snprintf(buf, sizeof buf, "%s", shard_flag);
    char *slash = strchr(buf, '/');
    if (slash) *slash = 0;
    long long i = whole(buf, LOAD_MAX_SHARDS), n = slash ? whole(slash + 1, LOAD_MAX_SHARDS) : -1;
    if (i < 0 || n < 1)
      return tm_errf(err, "--shard: '%s' is not I/N (I from 0, N from 1, e.g. 0/4)", shard_flag);
    if (i >= n) return tm_errf(err, "--shard %s: I counts from 0, so it is below N", shard_flag);
    *index = (uint32_t)i, *count = (uint32_t)n, *source = "flag";
    return 0;
  }
  static const struct {
    const char *index, *count, *source;
  } env[] = {{"JOB_COMPLETION_INDEX", NULL, "kubernetes"},
             {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
             {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi"}};
  for (size_t k = 0; k < sizeof env / sizeof env[0]; k++) {
    const char *iv = get(env[k].index);
    if (!iv || !*iv) continue;
    /* Kubernetes gives no count: only with --shards; the others give theirs */
    if (!env[k].count && !shards_flag) continue;
    long long i = whole(iv, LOAD_MAX_SHARDS - 1);
    if (i < 0) return tm_errf(err, "%s='%s' is not a shard index (a whole number)", env[k].index, iv);
    long long n = shards_flag;
    if (!n) {
      const char *nv = get(env[k].count);
      n = whole(nv, LOAD_MAX_SHARDS);
      if (n < 1)
        return tm_errf(err, "%s='%s' is not a shard count (a whole number from 1)", env[k].count,
                       nv ? nv : "");
      if (n == 1) return 0; /* one task: not sharded */
    }
    if (i >= n) return tm_errf(err, "%s=%lld is not below the shard count %lld", env[k].index, i, n);
    *index = (uint32_t)i, *count = (uint32_t)n, *source = env[k].source;
    return 0;
  }
  if (shards_flag > 1)
    return tm_errf(err, "--shards %u: no shard index in the environment (JOB_COMPLETION_INDEX, "
                        "SLURM_PROCID, OMPI_COMM_WORLD_RANK); give --shard I/N",
                   (unsigned)shards_flag);
  return 0;
}

int load_parse_start_at(const char *s, double *out, struct tm_err *err) {
  if (!s || !*s) return tm_errf(err, "--start-at: an empty time");
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!errno && *end == 0 && isdigit((unsigned char)*s)) {
    if (!(isfinite(v) && v >= 1e9 && v < 1e11))
      return tm_errf(err, "--start-at %s: not unix seconds of this era", s);
    *out = v;
    return 0;
  }
  int Y, M, D, h, m, n = 0;
  double sec;
  char sep;
  if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%lf%n", &Y, &M, &D, &sep, &h, &m, &sec, &n) == 7 &&
      (sep == 'T' || sep == ' ') && s[n] == 'Z' && s[n + 1] == 0 && M >= 1 && M <= 12 && D >= 1 &&
      D <= 31 && h >= 0 && h < 24 && m >= 0 && m < 60 && sec >= 0 && sec < 61) {
    struct tm t = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = m};
    time_t base = timegm(&t);
    if (base != (time_t)-1 && t.tm_mday == D) {
      *out = (double)base + sec;
      return 0;
    }
  }
  return tm_errf(err, "--start-at '%s': give unix seconds or a UTC time like 2026-12-02T10:30:00Z", s);
}
