/* probe: what this machine can do, measured. Read bandwidth at 1..N threads
 * (buffer far larger than the last-level cache, best of several passes), copy
 * bandwidth, compute rate per arithmetic path (f32 FMA; 8-bit integer dot
 * products where the CPU has VNNI or dotprod) at 1..N threads, and the machine's
 * identity: CPU model, cores, memory, feature flags, thermal zones and
 * frequencies where readable.
 *
 * Results are cached per machine in the cache directory (paths.h), keyed by CPU
 * model, core count and memory size, so `ceiling` and `bench` reuse them. */
#ifndef TM_PROBE_H
#define TM_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define PROBE_MAX_THREADS 256
#define PROBE_MAX_FLAGS 64
#define PROBE_MAX_SENSORS 32

struct machine_info {
  char cpu_model[128];
  char arch[16];             /* "x86_64", "aarch64" */
  uint32_t cpus;             /* online logical CPUs */
  uint64_t memory_bytes;     /* MemTotal */
  uint64_t memory_available_bytes;
  uint64_t llc_bytes;        /* last-level cache, 0 when unknown */
  char os[128];              /* "Linux 6.1.0 (Debian GNU/Linux 12)" */
  /* The flags that matter to LLM kernels, as the kernel names them: "avx2",
   * "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni",
   * "avx512_bf16", "amx_int8", "neon", "asimddp" (dotprod), "i8mm", "sve". */
  uint32_t n_flags;
  char flags[PROBE_MAX_FLAGS][24];
};

/* Temperatures and clock frequencies at one moment. readable=false means the
 * machine exposes none (many VMs): say "not readable", never "steady". */
struct machine_thermal {
  bool readable;
  uint32_t n_temps;
  struct { char name[32]; double celsius; } temps[PROBE_MAX_SENSORS];
  uint32_t n_freqs;
  double freq_mhz[PROBE_MAX_SENSORS]; /* per CPU, current */
};

struct machine_probe {
  struct machine_info info;
  char measured_at[32];      /* UTC, ISO 8601 */
  uint32_t max_threads;      /* measurements exist for 1..max_threads */
  uint64_t buffer_bytes;     /* size of the read buffer */
  double read_bw_bytes_s[PROBE_MAX_THREADS + 1];   /* index = threads; [0] unused */
  double copy_bw_bytes_s[PROBE_MAX_THREADS + 1];   /* bytes read + written per s */
  double f32_flops[PROBE_MAX_THREADS + 1];         /* FMA = 2 FLOPs */
  double int8_ops[PROBE_MAX_THREADS + 1];          /* 0 when no int8 dot path */
  char int8_path[24];        /* "avx512_vnni", "avx_vnni", "dotprod", "" */
  char f32_path[24];         /* "avx512f", "avx2+fma", "neon", "scalar" */
};

/* Best over thread counts, with the count it was reached at (may be NULL). */
double probe_best_read_bw(const struct machine_probe *p, uint32_t *threads);
double probe_best_f32(const struct machine_probe *p, uint32_t *threads);
double probe_best_int8(const struct machine_probe *p, uint32_t *threads);

/* Reads identity and a thermal snapshot (cheap, no measurement). */
int machine_info_read(struct machine_info *info, struct tm_err *err);
void machine_thermal_read(struct machine_thermal *t);
bool machine_has_flag(const struct machine_info *info, const char *flag);

typedef void (*probe_progress_fn)(const char *message, void *ctx);

/* Measures everything (a few seconds to tens of seconds). max_threads 0 = all
 * online CPUs. */
int probe_run(struct machine_probe *p, uint32_t max_threads, probe_progress_fn progress,
              void *ctx, struct tm_err *err);
/* The cached probe of this machine when there is one (returns 1), else 0; -1 on a
 * cache file that cannot be read (err set; callers may re-probe). */
int probe_load_cached(struct machine_probe *p, struct tm_err *err);
int probe_save_cached(const struct machine_probe *p, struct tm_err *err);
/* Cached result, or a fresh probe (saved) when there is none or rerun is set. */
int probe_get(struct machine_probe *p, bool rerun, probe_progress_fn progress, void *ctx,
              struct tm_err *err);

/* The probe as one JSON object (a jansson json_t *, returned as void * so
 * callers that do not print JSON need not include jansson.h). Keys include
 * read_bandwidth_bytes_s (best), read_bandwidth_by_threads (array of
 * {threads, bytes_s}), copy_bandwidth_by_threads, compute_f32_flops (best),
 * compute_f32_by_threads, compute_int8_ops (best, null when no path),
 * compute_int8_by_threads, and machine {cpu, cores, memory_bytes, flags, ...}. */
void *probe_to_json(const struct machine_probe *p);
int probe_from_json(struct machine_probe *p, const void *json, struct tm_err *err);

#endif
