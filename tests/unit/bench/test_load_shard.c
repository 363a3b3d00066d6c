/* test_load_shard: which share a process runs (load_shard_resolve): the
 * flag, then each launcher's environment (Kubernetes only with --shards,
 * Slurm and Open MPI by their own counts, one task not sharded), and every
 * bad value refused with a message; and --start-at's two forms. */
#include <math.h>
#include <string.h>

#include "bench/load_shard.h"
#include "tm_test.h"

static const char *const *env_now; /* NAME=VALUE pairs, NULL-ended */

static const char *fake_env(const char *name) {
  for (size_t i = 0; env_now && env_now[i]; i++) {
    size_t n = strlen(name);
    if (!strncmp(env_now[i], name, n) && env_now[i][n] == '=') return env_now[i] + n + 1;
  }
  return NULL;
}

static int resolve(const char *flag, uint32_t shards, const char *const *env, uint32_t *i,
                   uint32_t *n, const char **src) {
  struct tm_err err = {{0}};
  env_now = env;
  int rc = load_shard_resolve(flag, shards, fake_env, i, n, src, &err);
  CHECK(rc == 0 || err.msg[0]);
  return rc;
}

static void test_sources(void) {
  uint32_t i, n;
  const char *src;
  CHECK(resolve(NULL, 0, NULL, &i, &n, &src) == 0 && i == 0 && n == 1 && src == NULL);
  CHECK(resolve("2/4", 0, NULL, &i, &n, &src) == 0 && i == 2 && n == 4 && !strcmp(src, "flag"));
  const char *slurm[] = {"SLURM_PROCID=3", "SLURM_NTASKS=8", NULL};
  CHECK(resolve(NULL, 0, slurm, &i, &n, &src) == 0 && i == 3 && n == 8 && !strcmp(src, "slurm"));
  /* the flag wins over the environment */
  CHECK(resolve("1/2", 0, slurm, &i, &n, &src) == 0 && i == 1 && n == 2 && !strcmp(src, "flag"));
  const char *one_task[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", NULL};
  CHECK(resolve(NULL, 0, one_task, &i, &n, &src) == 0 && n == 1 && src == NULL);
  const char *mpi[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", NULL};
  CHECK(resolve(NULL, 0, mpi, &i, &n, &src) == 0 && i == 1 && n == 2 && !strcmp(src, "openmpi"));
  const char *k8s[] = {"JOB_COMPLETION_INDEX=5", NULL};
  /* Kubernetes gives the index only: not sharded without --shards */
  CHECK(resolve(NULL, 0, k8s, &i, &n, &src) == 0 && n == 1 && src == NULL);
  CHECK(resolve(NULL, 6, k8s, &i, &n, &src) == 0 && i == 5 && n == 6 && !strcmp(src, "kubernetes"));
  /* --shards N overrides a launcher's own count */
  CHECK(resolve(NULL, 4, slurm, &i, &n, &src) == 0 && i == 3 && n == 4);
}

static void test_refusals(void) {
  uint32_t i, n;
  const char *src;
  const char *flags[] = {"4/4", "1", "a/4", "1/0", "-1/4", "1/4x", "", "1/99999999"};
  for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
    CHECK_MSG(resolve(flags[k], 0, NULL, &i, &n, &src) == -1, "accepted --shard '%s'", flags[k]);
  CHECK(resolve("0/2", 2, NULL, &i, &n, &src) == -1);     /* both flags */
  CHECK(resolve(NULL, 4, NULL, &i, &n, &src) == -1);      /* --shards, no index anywhere */
  const char *k8s_high[] = {"JOB_COMPLETION_INDEX=4", NULL};
  CHECK(resolve(NULL, 4, k8s_high, &i, &n, &src) == -1);
  const char *bad_rank[] = {"SLURM_PROCID=x", "SLURM_NTASKS=4", NULL};
  CHECK(resolve(NULL, 0, bad_rank, &i, &n, &src) == -1);
  const char *no_count[] = {"OMPI_COMM_WORLD_RANK=0", NULL};
  CHECK(resolve(NULL, 0, no_count, &i, &n, &src) == -1);
  const char *rank_high[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2", NULL};
  CHECK(resolve(NULL, 0, rank_high, &i, &n, &src) == -1);
}

static void test_start_at(void) {
  struct tm_err err = {{0}};
  double t;
  CHECK(load_parse_start_at("1767225600", &t, &err) == 0 && t == 1767225600.0);
  CHECK(load_parse_start_at("1767225600.25", &t, &err) == 0 && fabs(t - 1767225600.25) < 1e-6);
  CHECK(load_parse_start_at("2026-01-01T00:00:00Z", &t, &err) == 0 && t == 1767225600.0);
  CHECK(load_parse_start_at("2026-01-01 00:00:01.5Z", &t, &err) == 0 &&
        fabs(t - 1767225601.5) < 1e-6);
  const char *bad[] = {"", "now", "+30", "12", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z",
                       "2026-02-31T00:00:00Z", "2026-01-01T25:00:00Z", "1767225600x", "nan"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    err.msg[0] = 0;
    CHECK_MSG(load_parse_start_at(bad[k], &t, &err) == -1 && err.msg[0], "accepted '%s'", bad[k]);
  }
}

void tm_run_tests(void) {
  TM_RUN(test_sources);
  TM_RUN(test_refusals);
  TM_RUN(test_start_at);
}
