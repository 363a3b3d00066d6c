/* load_shard: which share of a load run this process drives, and when it
 * starts (`tokmeter load --shard I/N --start-at TIME`), from the flags or
 * from the launchers people already run, with no coordinator of our own:
 *
 *   --shard I/N                         I counted from 0, as launchers count
 *   --shards N + JOB_COMPLETION_INDEX   a Kubernetes Indexed Job (its pods
 *                                       know their index, not the count)
 *   SLURM_PROCID, SLURM_NTASKS          srun's tasks (sharded when NTASKS > 1)
 *   OMPI_COMM_WORLD_RANK / _SIZE        Open MPI's mpirun (sharded when SIZE > 1)
 *
 * in that order: a flag wins over the environment, and --shards N takes
 * its index from the first of the three that is set. Not sharded: index 0
 * of 1, source NULL. Pure functions of their inputs (getenv passed in). */
#ifndef TM_BENCH_LOAD_SHARD_H
#define TM_BENCH_LOAD_SHARD_H

#include <stdint.h>

#include "util/err.h"

#define LOAD_MAX_SHARDS 65536

/* shard_flag: "I/N" or NULL; shards_flag: --shards N (0 = not given);
 * get: getenv or a test's own. 0 with *index, *count, *source ("flag",
 * "kubernetes", "slurm", "openmpi", or NULL when not sharded), or -1 with
 * err (what is wrong, one line). */
int load_shard_resolve(const char *shard_flag, uint32_t shards_flag,
                       const char *(*get)(const char *name), uint32_t *index, uint32_t *count,
                       const char **source, struct tm_err *err);

/* --start-at: unix seconds ("1767225600", "1767225600.5") or a UTC time
 * "YYYY-MM-DDTHH:MM:SS[.fff]Z" (also with a space for the T). 0 with *out
 * (unix seconds), or -1 with err. */
int load_parse_start_at(const char *s, double *out, struct tm_err *err);

#endif
