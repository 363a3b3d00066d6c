/* probe: what this machine can do, measured. Read bandwidth at 1..N threads
 * (buffer far larger than the last-level cache, best of several passes), copy
 * bandwidth, compute rate per arithmetic path (f32 FMA; 8-bit integer dot
 * products where the CPU has VNNI or dotprod) at 1..N threads, and the machine's
 * identity: CPU model, cores, memory, feature flags, thermal zones and
 * frequencies where readable.
 *
 * Results are cached per machine in the cache directory (paths.h), keyed by CPU
 * model, core count and memory size, so `ceiling` and `bench` reuse them.
 *
 * Quick mode (probe_options.quick, or TOKMETER_PROBE_QUICK=1 in the environment,
 * which probe_run and probe_get honour) uses a small buffer and short passes so
 * tests stay fast; its figures are marked quick and are NOT memory bandwidth
 * (the buffer may fit in the last-level cache). A non-quick probe_get never
 * returns a cached quick result: it measures again.
 *
 * Method: the read buffer is max(1 GiB, 4 x LLC), capped at a quarter of the
 * available memory, first-touched by the pool's threads (each its own slice);
 * each thread reads its own contiguous slice with SIMD loads; a pass is timed
 * from the common start barrier to the last thread's finish; the best pass
 * counts. Copy moves the buffer's first half onto its second half: its figure
 * counts bytes read + bytes written (the write-allocate read of the
 * destination is not counted). Compute runs register-only multiply-add loops
 * (2 ops per multiply-add) with 12 independent accumulators. */
#ifndef TM_PROBE_H
#define TM_PROBE_H

#include <stdbool.h>
#include <stddef.h>
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
  struct machine_thermal thermal; /* snapshot taken right after the measurements */
  bool quick;                /* quick mode: small buffer, short passes */
  bool hugepages;            /* the read buffer was advised to use huge pages */
  /* CPUs kept busy by OTHER processes during a short window right before and
   * right after the measurements (from /proc/stat; this process sleeps in the
   * window). A shared machine lowers every figure; -1 when not readable. */
  double busy_cpus_before;
  double busy_cpus_after;
  char measured_at[32];      /* UTC, ISO 8601 */
  uint32_t max_threads;      /* measurements exist for 1..max_threads */
  uint64_t buffer_bytes;     /* size of the read buffer */
  double read_bw_bytes_s[PROBE_MAX_THREADS + 1];   /* index = threads; [0] unused */
  double copy_bw_bytes_s[PROBE_MAX_THREADS + 1];   /* bytes read + written per s */
  double f32_flops[PROBE_MAX_THREADS + 1];         /* FMA = 2 FLOPs */
  double int8_ops[PROBE_MAX_THREADS + 1];          /* 0 when no int8 dot path */
  char int8_path[24];        /* "avx512_vnni", "avx_vnni", "dotprod", "" */
  /* int8 on matrix tiles (AMX), a unit apart from the vector path above: a
   * runtime gets it only with kernels written for it (tokmeter's engine has
   * none), so it never replaces int8_ops in a ceiling unless a runtime says
   * it uses it. 0 / "" when the CPU or OS has none. */
  double int8_tile_ops[PROBE_MAX_THREADS + 1];
  char int8_tile_path[24];   /* "amx_int8", "" */
  bool tiles_probed;         /* false: a cache file from before tiles were measured */
  char f32_path[24];         /* "avx512f", "avx2+fma", "neon", "scalar" */
  char mem_path[24];         /* loads used for bandwidth: "avx512f", "avx2", "neon", "scalar" */
  char read_loop[64];        /* how the read passes ran: PROBE_READ_LOOP; "" when a
                                cache file predates the key */
};

/* The read measurement's method, recorded with every probe. A cached probe
 * taken another way is not reused: its bandwidth is not comparable (before
 * 2026-11-30 the passes prefetched 2 KiB ahead only, which read 3-17% low
 * on an AMD Zen 5). Change it whenever the read loop changes. */
#define PROBE_READ_LOOP "quarters, prefetch 1024/2048/none by pass"

struct probe_options {
  uint32_t max_threads;      /* 0 = online CPUs (fewer when the affinity mask says so) */
  bool quick;                /* small buffer, short passes (tests) */
};

/* Best over thread counts, with the count it was reached at (may be NULL). */
double probe_best_read_bw(const struct machine_probe *p, uint32_t *threads);

/* Read bandwidth of memory that already holds something (a model's mapped
 * weights), with the probe's read loop and thread slicing: bw[t] for t =
 * 1..max_threads (bw[0] unused), bytes per second, best of `passes`. The
 * buffer is only read. Tells whether the pages a job reads are as fast as
 * the probe's own buffer: on a VM they need not be. Returns 0, or -1 with err
 * set (nothing to read, too many threads, no threads). */
int machine_read_bw_of(const void *buf, uint64_t bytes, uint32_t max_threads, int passes,
                       double *bw, struct tm_err *err);
/* The probe's memory measurement again, now: a fresh anonymous buffer of
 * `bytes` (rounded down to 2 MiB, advised huge pages, first touched by
 * max_threads threads), then bw[t] for t = 1..max_threads as the probe reads
 * it (best of `passes`), then unmapped. For a second reading of the ceiling's
 * bandwidth after a long run (the machine's bandwidth drifts). Returns 0, or
 * -1 with err set (too many threads, no memory). */
int machine_read_bw_fresh(uint64_t bytes, uint32_t max_threads, int passes, double *bw,
                          struct tm_err *err);
/* A buffer held for several readings (the bench reads the bandwidth
 * around every decode configuration; on this project's VM, first-touching
 * a fresh 1 GiB buffer costs seconds of system time): `bytes` rounded down
 * to 2 MiB, anonymous, advised huge pages, first touched by touch_threads
 * threads, as the probe's own buffer. open returns 0, or -1 with err set
 * (b is then empty); close unmaps (an empty b is fine). */
struct machine_bw_buffer {
  uint8_t *base;
  uint64_t bytes;
};
int machine_bw_buffer_open(struct machine_bw_buffer *b, uint64_t bytes, uint32_t touch_threads,
                           struct tm_err *err);
void machine_bw_buffer_close(struct machine_bw_buffer *b);
/* machine_read_bw_of at one thread count only: *bw_out = the read
 * bandwidth at `threads`, best of `passes`. Returns 0, or -1 with err set. */
int machine_read_bw_of_at(const void *buf, uint64_t bytes, uint32_t threads, int passes,
                          double *bw_out, struct tm_err *err);
double probe_best_f32(const struct machine_probe *p, uint32_t *threads);
double probe_best_int8(const struct machine_probe *p, uint32_t *threads);
/* 0 when the probe has no tile path. */
double probe_best_int8_tile(const struct machine_probe *p, uint32_t *threads);

/* Reads identity and a thermal snapshot (cheap, no measurement). */
int machine_info_read(struct machine_info *info, struct tm_err *err);
void machine_thermal_read(struct machine_thermal *t);
bool machine_has_flag(const struct machine_info *info, const char *flag);

/* Parsers over file text, so they can be tested on samples.
 * cpuinfo: fills cpu_model ("model name", else "Hardware", else the ARM
 * implementer/part ids, else "unknown") and flags (from "flags" or "Features",
 * keeping only the LLM-relevant ones above; ARM "asimd" is reported as "neon").
 * Returns the number of flags kept. */
uint32_t machine_parse_cpuinfo(const char *text, struct machine_info *info);
/* MemTotal and MemAvailable (MemFree when the kernel predates MemAvailable), in
 * bytes; -1 when MemTotal is missing. */
int machine_parse_meminfo(const char *text, uint64_t *total_bytes, uint64_t *available_bytes);
/* PRETTY_NAME (quotes removed) into buf; -1 when absent. */
int machine_parse_os_release(const char *text, char *buf, size_t n);
/* A sysfs cache size ("491520K", "32M", "1024") in bytes; 0 when unreadable. */
uint64_t machine_parse_cache_size(const char *text);
/* Thermal zones, hwmon sensors and cpufreq under a sysfs root ("/sys"; tests
 * pass a fake tree). */
void machine_thermal_read_at(const char *sysfs_root, struct machine_thermal *t);
/* /proc/stat's aggregate "cpu" line: busy and total jiffies (busy = total -
 * idle - iowait). -1 when the line is missing or malformed. */
int machine_parse_proc_stat(const char *text, uint64_t *busy, uint64_t *total);
/* /proc/stat's aggregate "cpu" line as counters (jiffies): busy as above
 * (steal included), total, and steal, the time this (virtual) machine's CPUs
 * wanted to run but the hypervisor ran something else; has_steal is false on
 * kernels whose line has no steal column. */
struct machine_cpu_ticks {
  uint64_t busy, total, steal;
  bool has_steal;
  uint64_t self;  /* this process's user + system ticks (/proc/self/stat) */
  bool has_self;
};
int machine_parse_cpu_ticks(const char *text, struct machine_cpu_ticks *t);
/* utime + stime of a /proc/<pid>/stat line (the fields after the command's
 * closing ')', which may itself hold spaces and parentheses) into t->self;
 * -1 on a line it cannot read. */
int machine_parse_self_ticks(const char *text, struct machine_cpu_ticks *t);
/* The counters now; -1 when /proc/stat is not readable (then *t is zeroed,
 * has_steal false). */
int machine_cpu_ticks_now(struct machine_cpu_ticks *t);
/* Steal between two readings as a share (0..1) of the busy time between
 * them (the CPU time this machine's threads wanted); -1 when unknown (no
 * steal column, no busy time, or counters that went backwards). */
double machine_steal_share(const struct machine_cpu_ticks *before,
                           const struct machine_cpu_ticks *after);
/* machine_steal_share from `before` (taken with machine_cpu_ticks_now) to
 * now; NAN when unknown. */
double machine_steal_since(const struct machine_cpu_ticks *before);
/* Steal at or above this share of the busy time is worth a sentence. */
#define MACHINE_STEAL_WARN_SHARE 0.01
/* The sentence for `share` (0..1) of steal while runs at `threads` threads
 * ran (0: runs against a server, timed from this machine), into buf; false
 * (buf untouched) below MACHINE_STEAL_WARN_SHARE or when share is unknown
 * (negative or NAN). */
bool machine_steal_warning(uint32_t threads, double share, char *buf, size_t n);
/* The shortest windows the two figures below are read over, in /proc/stat
 * ticks (USER_HZ, 100 a second): 0.5 s of wall time for the CPUs other
 * processes kept busy (a tick is then 0.02 CPUs), 100 busy ticks for the
 * steal share (a tick is then at most 1%, the warning's threshold). Shorter
 * windows are unknown, not 0. */
#define MACHINE_TICKS_MIN_WALL 50.0
#define MACHINE_TICKS_MIN_BUSY 100

/* CPUs that other processes of this machine kept busy between two readings
 * (busy time less steal, less this process's own time, over the time that
 * passed, times the CPUs): the load a benchmark's threads competed with.
 * -1 when unknown (no self ticks, less than MACHINE_TICKS_MIN_WALL of wall
 * time, counters going backwards). */
double machine_other_cpus(const struct machine_cpu_ticks *before,
                          const struct machine_cpu_ticks *after, uint32_t cpus);
/* machine_other_cpus from `before` to now over the online CPUs; NAN when
 * unknown. */
double machine_other_cpus_since(const struct machine_cpu_ticks *before);
/* CPUs busy with other work over a window of window_ms (this thread sleeps):
 * busy share of all CPUs x online CPUs. -1 when /proc/stat is not readable. */
double machine_busy_cpus(uint32_t window_ms);
/* Above this many busy CPUs (before or after), a probe's figures are suspect. */
#define PROBE_BUSY_WARN_CPUS 0.25
/* When other processes were busy around the probe, writes one line saying so
 * (and what to do) into buf and returns true. */
bool probe_busy_warning(const struct machine_probe *p, char *buf, size_t n);
/* A cached probe measured while other processes were busy (the warning
 * above) is measured again once the machine is quiet: true when the probe
 * carries that warning and other processes keep at most
 * PROBE_BUSY_WARN_CPUS busy now (250 ms of /proc/stat), with a note saying
 * so in buf. False otherwise (then the cache stands, with its warning). */
bool probe_retake_busy(const struct machine_probe *p, char *buf, size_t n);
/* Its decision for a given reading of the CPUs busy now (-1: unknown). */
bool probe_retake_busy_at(const struct machine_probe *p, double busy_now, char *buf, size_t n);

/* The number of threads a default probe uses: online CPUs, or fewer when the
 * process's affinity mask allows fewer. */
uint32_t machine_default_threads(const struct machine_info *info);

typedef void (*probe_progress_fn)(const char *message, void *ctx);

/* Measures everything (a few seconds to tens of seconds). max_threads 0 = all
 * online CPUs. Quick when TOKMETER_PROBE_QUICK=1. */
int probe_run(struct machine_probe *p, uint32_t max_threads, probe_progress_fn progress,
              void *ctx, struct tm_err *err);
int probe_run_opts(struct machine_probe *p, const struct probe_options *opts,
                   probe_progress_fn progress, void *ctx, struct tm_err *err);
/* True when TOKMETER_PROBE_QUICK is set to a value other than "" or "0". */
bool probe_quick_from_env(void);
/* The cache file of this machine: <cache dir>/probe-<hash>.json, the hash over
 * CPU model, online CPUs and MemTotal. */
int probe_cache_path(const struct machine_info *info, char *buf, size_t n, struct tm_err *err);
/* The cached probe of this machine when there is one (returns 1), else 0; -1 on a
 * cache file that cannot be read, was measured with another read loop than
 * PROBE_READ_LOOP, or at more threads than the machine's CPUs (err set;
 * callers may re-probe). */
int probe_load_cached(struct machine_probe *p, struct tm_err *err);
int probe_save_cached(const struct machine_probe *p, struct tm_err *err);
/* Whether p measured every thread count a default probe of this machine
 * would (1..machine_default_threads): a cache from `probe -t 1` does not. */
bool probe_covers_machine(const struct machine_probe *p);
/* Whether a new probe p may replace the cached one without losing what
 * `ceiling` and `bench` need: a full measurement replaces a quick one (a
 * non-quick caller never uses a quick cache), never the reverse; between two
 * of a kind, p must have measured at least the cache's thread counts. A
 * narrower `tokmeter probe -t 1` (or `--quick`) after a full probe once
 * replaced it, and the next `ceiling` silently probed the machine again. */
bool probe_replaces_cached(const struct machine_probe *p, const struct machine_probe *cached);
/* Cached result, or a fresh probe (saved) when there is none, when the cached
 * one does not cover this machine's threads (probe_covers_machine), or when
 * rerun is set.
 * A corrupt, outdated or narrower cache file is not an error: the machine is probed again
 * and, on success, err->msg says which file was ignored and why (callers may warn); err->msg
 * is empty otherwise. A failure to save the fresh result is ignored likewise. */
int probe_get(struct machine_probe *p, bool rerun, probe_progress_fn progress, void *ctx,
              struct tm_err *err);

/* The probe as one JSON object (a jansson json_t *, returned as void * so
 * callers that do not print JSON need not include jansson.h). Keys include
 * read_bandwidth_bytes_s (best), read_bandwidth_by_threads (array of
 * {threads, bytes_s}), copy_bandwidth_by_threads, compute_f32_flops (best),
 * compute_f32_by_threads, compute_int8_ops (best, null when no path),
 * compute_int8_by_threads, and machine {cpu, cores, memory_bytes, flags, ...}.
 * Copy figures count bytes read + written: copy_bandwidth_read_plus_write_bytes_s
 * (best) and copy_bandwidth_by_threads [{threads, read_plus_write_bytes_s}].
 * probe_from_json checks every field's type and range and names the first bad
 * one in err. */
void *probe_to_json(const struct machine_probe *p);
int probe_from_json(struct machine_probe *p, const void *json, struct tm_err *err);

#endif
