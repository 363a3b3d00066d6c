/* info: the machine's identity (CPU model, flags, cores, memory, last-level
 * cache, OS) and thermal snapshots, read from /proc and /sys. The parsers take
 * text so they can be tested on samples; the readers only fetch files.
 * Nothing here measures, so everything is cheap. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "machine/probe.h"

/* The flags that decide which kernels an LLM runtime can use, as Linux names
 * them in /proc/cpuinfo. The order here is the order they are reported in. */
static const char *const relevant_flags[] = {
    /* x86 */
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
    /* aarch64 ("neon" is added for "asimd") */
    "neon", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme",
};

/* ------------------------------------------------------------- helpers --- */

/* Reads a whole (small) file into a malloc'd NUL-terminated buffer. /proc and
 * /sys files report size 0, so read until EOF. */
static char *read_text_file(const char *path, size_t max_bytes) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return NULL;
  }
  for (;;) {
    if (len + 1 >= cap) {
      if (cap >= max_bytes) break;
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb, cap *= 2;
    }
    size_t r = fread(buf + len, 1, cap - 1 - len, f);
    if (r == 0) break;
    len += r;
  }
  fclose(f);
  buf[len] = 0;
  return buf;
}

static void copy_trimmed(char *dst, size_t n, const char *src, size_t len) {
  while (len && isspace((unsigned char)*src)) src++, len--;
  while (len && isspace((unsigned char)src[len - 1])) len--;
  if (len >= n) len = n - 1;
  memcpy(dst, src, len);
  dst[len] = 0;
}

/* Finds the first line "key<spaces or tabs>:value" and returns a pointer to
 * value (after ':'), with *len its length up to the end of the line. The key
 * must start the line and match entirely ("flags" does not match "vmx
 * flags"). */
static const char *find_field(const char *text, const char *key, size_t *len) {
  size_t klen = strlen(key);
  for (const char *line = text; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t llen = eol ? (size_t)(eol - line) : strlen(line);
    if (llen > klen && strncmp(line, key, klen) == 0) {
      const char *p = line + klen;
      while (p < line + llen && (*p == ' ' || *p == '\t')) p++;
      if (p < line + llen && *p == ':') {
        p++;
        *len = llen - (size_t)(p - line);
        return p;
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return NULL;
}

static void add_flag(struct machine_info *info, const char *flag) {
  if (machine_has_flag(info, flag) || info->n_flags >= PROBE_MAX_FLAGS) return;
  snprintf(info->flags[info->n_flags++], sizeof info->flags[0], "%s", flag);
}

/* ------------------------------------------------------------- parsers --- */

uint32_t machine_parse_cpuinfo(const char *text, struct machine_info *info) {
  size_t len = 0;
  const char *v;
  info->cpu_model[0] = 0;
  if ((v = find_field(text, "model name", &len)) || (v = find_field(text, "Hardware", &len)))
    copy_trimmed(info->cpu_model, sizeof info->cpu_model, v, len);
  if (!info->cpu_model[0]) {
    /* Many ARM kernels name no model; the implementer and part ids identify
     * the core (e.g. 0x41 / 0xd0b = Arm Cortex-A76). */
    char impl[32] = "", part[32] = "";
    if ((v = find_field(text, "CPU implementer", &len))) copy_trimmed(impl, sizeof impl, v, len);
    if ((v = find_field(text, "CPU part", &len))) copy_trimmed(part, sizeof part, v, len);
    if (impl[0] || part[0])
      snprintf(info->cpu_model, sizeof info->cpu_model, "implementer %s part %s",
               impl[0] ? impl : "?", part[0] ? part : "?");
    else
      snprintf(info->cpu_model, sizeof info->cpu_model, "unknown");
  }

  info->n_flags = 0;
  v = find_field(text, "flags", &len);
  if (!v) v = find_field(text, "Features", &len);
  if (!v) return 0;
  /* Collect the CPU's words first, then report the relevant ones in table
   * order, so the output does not depend on the kernel's ordering. */
  bool present[sizeof relevant_flags / sizeof relevant_flags[0]] = {0};
  const char *end = v + len;
  for (const char *p = v; p < end;) {
    while (p < end && isspace((unsigned char)*p)) p++;
    const char *w = p;
    while (p < end && !isspace((unsigned char)*p)) p++;
    size_t wlen = (size_t)(p - w);
    if (!wlen) continue;
    for (size_t i = 0; i < sizeof relevant_flags / sizeof relevant_flags[0]; i++) {
      const char *f = relevant_flags[i];
      if (strlen(f) == wlen && memcmp(f, w, wlen) == 0) present[i] = true;
      if (wlen == 5 && memcmp(w, "asimd", 5) == 0 && strcmp(f, "neon") == 0) present[i] = true;
    }
  }
  for (size_t i = 0; i < sizeof relevant_flags / sizeof relevant_flags[0]; i++)
    if (present[i]) add_flag(info, relevant_flags[i]);
  return info->n_flags;
}

static int meminfo_kib(const char *text, const char *key, uint64_t *bytes) {
  size_t len;
  const char *v = find_field(text, key, &len);
  if (!v) return -1;
  char num[32];
  copy_trimmed(num, sizeof num, v, len);
  char *endp;
  errno = 0;
  unsigned long long kib = strtoull(num, &endp, 10);
  if (endp == num || errno) return -1;
  *bytes = (uint64_t)kib * 1024u;
  return 0;
}

int machine_parse_meminfo(const char *text, uint64_t *total_bytes, uint64_t *available_bytes) {
  if (meminfo_kib(text, "MemTotal", total_bytes) != 0) return -1;
  if (meminfo_kib(text, "MemAvailable", available_bytes) != 0 &&
      meminfo_kib(text, "MemFree", available_bytes) != 0)
    *available_bytes = 0;
  return 0;
}

int machine_parse_os_release(const char *text, char *buf, size_t n) {
  for (const char *line = text; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t llen = eol ? (size_t)(eol - line) : strlen(line);
    if (llen > 12 && strncmp(line, "PRETTY_NAME=", 12) == 0) {
      const char *v = line + 12;
      size_t vlen = llen - 12;
      while (vlen && isspace((unsigned char)v[vlen - 1])) vlen--;
      if (vlen >= 2 && (v[0] == '"' || v[0] == '\'') && v[vlen - 1] == v[0]) v++, vlen -= 2;
      copy_trimmed(buf, n, v, vlen);
      return buf[0] ? 0 : -1;
    }
    line = eol ? eol + 1 : NULL;
  }
  return -1;
}

uint64_t machine_parse_cache_size(const char *text) {
  char *endp;
  errno = 0;
  unsigned long long v = strtoull(text, &endp, 10);
  if (endp == text || errno) return 0;
  switch (toupper((unsigned char)*endp)) {
  case 'K': return (uint64_t)v << 10;
  case 'M': return (uint64_t)v << 20;
  case 'G': return (uint64_t)v << 30;
  default: return (uint64_t)v;
  }
}

/* ------------------------------------------------------------- readers --- */

bool machine_has_flag(const struct machine_info *info, const char *flag) {
  for (uint32_t i = 0; i < info->n_flags; i++)
    if (strcmp(info->flags[i], flag) == 0) return true;
  return false;
}

/* The largest size among the data/unified caches of the highest level that
 * cpu0 reports. */
static uint64_t read_llc_bytes(void) {
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    char *level = read_text_file(path, 64);
    if (!level) continue;
    int lv = atoi(level);
    free(level);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    char *type = read_text_file(path, 64);
    bool instruction = type && strncmp(type, "Instruction", 11) == 0;
    free(type);
    if (instruction) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    char *size = read_text_file(path, 64);
    uint64_t bytes = size ? machine_parse_cache_size(size) : 0;
    free(size);
    if (bytes && (lv > best_level || (lv == best_level && bytes > best)))
      best = bytes, best_level = lv;
  }
  return best;
}

int machine_info_read(struct machine_info *info, struct tm_err *err) {
  memset(info, 0, sizeof *info);
  struct utsname u;
  bool have_uname = uname(&u) == 0;
  snprintf(info->arch, sizeof info->arch, "%.15s", have_uname ? u.machine : "unknown");

  long online = sysconf(_SC_NPROCESSORS_ONLN);
  info->cpus = online > 0 ? (uint32_t)online : 1;

  char *cpuinfo = read_text_file("/proc/cpuinfo", 16u << 20);
  if (cpuinfo) {
    machine_parse_cpuinfo(cpuinfo, info);
    free(cpuinfo);
  } else {
    snprintf(info->cpu_model, sizeof info->cpu_model, "unknown");
  }

  char *meminfo = read_text_file("/proc/meminfo", 1u << 20);
  if (!meminfo) return tm_errf(err, "cannot read /proc/meminfo: %s", strerror(errno));
  int rc = machine_parse_meminfo(meminfo, &info->memory_bytes, &info->memory_available_bytes);
  free(meminfo);
  if (rc != 0) return tm_errf(err, "/proc/meminfo: no MemTotal line");

  info->llc_bytes = read_llc_bytes();

  char pretty[96] = "";
  char *osr = read_text_file("/etc/os-release", 1u << 16);
  if (!osr) osr = read_text_file("/usr/lib/os-release", 1u << 16);
  if (osr) {
    machine_parse_os_release(osr, pretty, sizeof pretty);
    free(osr);
  }
  char kernel[96];
  if (have_uname)
    snprintf(kernel, sizeof kernel, "%.40s %.50s", u.sysname, u.release);
  else
    snprintf(kernel, sizeof kernel, "unknown");
  if (pretty[0])
    snprintf(info->os, sizeof info->os, "%.60s (%.60s)", kernel, pretty);
  else
    snprintf(info->os, sizeof info->os, "%s", kernel);
  return 0;
}

uint32_t machine_default_threads(const struct machine_info *info) {
  uint32_t n = info->cpus ? info->cpus : 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int allowed = CPU_COUNT(&set);
    if (allowed > 0 && (uint32_t)allowed < n) n = (uint32_t)allowed;
  }
  return n > PROBE_MAX_THREADS ? PROBE_MAX_THREADS : n;
}

/* ------------------------------------------------------------- thermal --- */

static bool read_number(const char *path, double *v) {
  char *t = read_text_file(path, 256);
  if (!t) return false;
  char *endp;
  double x = strtod(t, &endp);
  bool ok = endp != t;
  free(t);
  if (ok) *v = x;
  return ok;
}

static void read_name(const char *path, char *buf, size_t n) {
  char *t = read_text_file(path, 256);
  if (t) copy_trimmed(buf, n, t, strlen(t));
  free(t);
}

static void add_temp(struct machine_thermal *t, const char *name, double millideg) {
  if (t->n_temps >= PROBE_MAX_SENSORS) return;
  snprintf(t->temps[t->n_temps].name, sizeof t->temps[0].name, "%.31s", name);
  t->temps[t->n_temps].celsius = millideg / 1000.0;
  t->n_temps++;
}

void machine_thermal_read_at(const char *root, struct machine_thermal *t) {
  memset(t, 0, sizeof *t);
  char path[512], name[64];
  double v;

  /* thermal_zone<N>/temp in millidegrees C, named by thermal_zone<N>/type. */
  for (int i = 0; i < 64 && t->n_temps < PROBE_MAX_SENSORS; i++) {
    snprintf(path, sizeof path, "%s/class/thermal/thermal_zone%d/temp", root, i);
    if (!read_number(path, &v)) continue;
    snprintf(name, sizeof name, "zone%d", i);
    snprintf(path, sizeof path, "%s/class/thermal/thermal_zone%d/type", root, i);
    read_name(path, name, sizeof name);
    add_temp(t, name, v);
  }

  /* hwmon<N>/temp<M>_input in millidegrees C, named "<hwmon name>/<label>". */
  for (int i = 0; i < 32 && t->n_temps < PROBE_MAX_SENSORS; i++) {
    char chip[32] = "";
    snprintf(path, sizeof path, "%s/class/hwmon/hwmon%d/name", root, i);
    read_name(path, chip, sizeof chip);
    for (int j = 1; j < 32 && t->n_temps < PROBE_MAX_SENSORS; j++) {
      snprintf(path, sizeof path, "%s/class/hwmon/hwmon%d/temp%d_input", root, i, j);
      if (!read_number(path, &v)) continue;
      char label[32];
      snprintf(label, sizeof label, "temp%d", j);
      snprintf(path, sizeof path, "%s/class/hwmon/hwmon%d/temp%d_label", root, i, j);
      read_name(path, label, sizeof label);
      snprintf(name, sizeof name, "%.28s/%.31s", chip[0] ? chip : "hwmon", label);
      add_temp(t, name, v);
    }
  }

  /* scaling_cur_freq is in kHz. /proc/cpuinfo "cpu MHz" is not used: in a VM it
   * is a constant, not a reading. */
  for (int c = 0; c < 4096 && t->n_freqs < PROBE_MAX_SENSORS; c++) {
    snprintf(path, sizeof path, "%s/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", root, c);
    if (!read_number(path, &v)) {
      snprintf(path, sizeof path, "%s/devices/system/cpu/cpu%d", root, c);
      if (access(path, F_OK) != 0) break; /* no such CPU: past the last one */
      continue;
    }
    t->freq_mhz[t->n_freqs++] = v / 1000.0;
  }
  t->readable = t->n_temps > 0 || t->n_freqs > 0;
}

void machine_thermal_read(struct machine_thermal *t) { machine_thermal_read_at("/sys", t); }

/* ------------------------------------------------------- other load --- */

int machine_parse_cpu_ticks(const char *text, struct machine_cpu_ticks *t) {
  const char *line = text;
  while (line && strncmp(line, "cpu ", 4) != 0) {
    line = strchr(line, '\n');
    if (line) line++;
  }
  if (!line) return -1;
  unsigned long long v[10] = {0};
  int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  if (n < 4) return -1;
  /* user nice system idle iowait irq softirq steal guest guest_nice; guest time
   * is already inside user, so it is not added again. */
  uint64_t sum = 0;
  for (int i = 0; i < n && i < 8; i++) sum += v[i];
  uint64_t idle = v[3] + (n > 4 ? v[4] : 0);
  t->total = sum;
  t->busy = sum - idle;
  t->has_steal = n >= 8;
  t->steal = n >= 8 ? v[7] : 0;
  t->self = 0; /* machine_parse_self_ticks reads those */
  t->has_self = false;
  return 0;
}

int machine_parse_proc_stat(const char *text, uint64_t *busy, uint64_t *total) {
  struct machine_cpu_ticks t;
  if (machine_parse_cpu_ticks(text, &t) != 0) return -1;
  *busy = t.busy;
  *total = t.total;
  return 0;
}

int machine_parse_self_ticks(const char *text, struct machine_cpu_ticks *t) {
  const char *p = text ? strrchr(text, ')') : NULL;
  if (!p) return -1;
  /* after ')': state ppid pgrp session tty_nr tpgid flags minflt cminflt
   * majflt cmajflt utime stime (fields 3..15 of proc(5)) */
  unsigned long long utime, stime;
  if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
             &stime) != 2)
    return -1;
  t->self = utime + stime;
  t->has_self = true;
  return 0;
}

/* fread of a small /proc file into buf (NUL-terminated); -1 when unreadable. */
static int read_small(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t got = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[got] = 0;
  return 0;
}

int machine_cpu_ticks_now(struct machine_cpu_ticks *t) {
  char buf[4096];
  memset(t, 0, sizeof *t); /* unreadable: no steal column, so no share from it */
  if (read_small("/proc/stat", buf, sizeof buf) != 0 || machine_parse_cpu_ticks(buf, t) != 0)
    return -1;
  /* Both files count in clock ticks (USER_HZ). A missing self line only
   * leaves the other-load figure unknown. */
  if (read_small("/proc/self/stat", buf, sizeof buf) == 0) machine_parse_self_ticks(buf, t);
  return 0;
}

double machine_other_cpus(const struct machine_cpu_ticks *before,
                          const struct machine_cpu_ticks *after, uint32_t cpus) {
  if (!before->has_self || !after->has_self || after->total <= before->total ||
      after->busy < before->busy || after->steal < before->steal || after->self < before->self)
    return -1;
  /* A window of a few ticks says nothing: a prompt run of a tiny model
   * (4 ms) read 2.0 CPUs busy from one tick landing in it. */
  if ((double)(after->total - before->total) / (cpus ? cpus : 1) < MACHINE_TICKS_MIN_WALL)
    return -1;
  /* /proc/stat's total sums every CPU's ticks: over a wall time W on c CPUs
   * it grows by about c W; the others' busy ticks over it, divided by W, are
   * the CPUs they kept busy. */
  double busy = (double)(after->busy - before->busy) - (double)(after->steal - before->steal) -
                (double)(after->self - before->self);
  double wall = (double)(after->total - before->total) / (cpus ? cpus : 1);
  double others = busy / wall;
  return others > 0 ? others : 0;
}

double machine_other_cpus_since(const struct machine_cpu_ticks *before) {
  struct machine_cpu_ticks now;
  if (machine_cpu_ticks_now(&now) != 0) return NAN;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double v = machine_other_cpus(before, &now, cpus > 0 ? (uint32_t)cpus : 1);
  return v >= 0 ? v : NAN;
}

/* Steal over busy time: the share of the CPU time this machine wanted that
 * the host ran something else in (busy counts steal, see above). */
double machine_steal_share(const struct machine_cpu_ticks *before,
                           const struct machine_cpu_ticks *after) {
  if (!before->has_steal || !after->has_steal || after->busy <= before->busy ||
      after->steal < before->steal)
    return -1;
  /* one stolen tick in fewer busy ticks would read as 1% or more */
  if (after->busy - before->busy < MACHINE_TICKS_MIN_BUSY) return -1;
  return (double)(after->steal - before->steal) / (double)(after->busy - before->busy);
}

double machine_steal_since(const struct machine_cpu_ticks *before) {
  struct machine_cpu_ticks now;
  if (machine_cpu_ticks_now(&now) != 0) return NAN;
  double share = machine_steal_share(before, &now);
  return share >= 0 ? share : NAN;
}

/* Every rate measured while the host ran other guests is lower for it, and a
 * step at several threads also waits for the thread that was descheduled
 * (the team's 2-vCPU VM: 0% at 1 thread, 2-3.5% at 2). */
bool machine_steal_warning(uint32_t threads, double share, char *buf, size_t n) {
  if (!(share >= MACHINE_STEAL_WARN_SHARE)) return false;
  if (threads == 0) {
    snprintf(buf, n,
             "During the runs the host ran other work on this machine's CPUs for %.1f%% of "
             "their busy time (steal time, /proc/stat): timings taken here (time to first token, "
             "client rates) are stretched by it, and so are the server's own when it runs on this "
             "machine. Compare runs measured together, or measure on a quieter host.",
             100.0 * share);
    return true;
  }
  const char *s = threads == 1 ? "" : "s";
  snprintf(buf, n,
           "At %u thread%s the host ran other work on this VM's CPUs for %.1f%% of their busy "
           "time (steal time, /proc/stat): the rates at %u thread%s are lower for it, %s. "
           "Compare runs measured together, or measure on a quieter host.",
           threads, s, 100.0 * share, threads, s,
           threads > 1 ? "by about that much or more, since a step waits for its slowest thread"
                       : "by about that much");
  return true;
}

static int read_proc_stat(uint64_t *busy, uint64_t *total) {
  struct machine_cpu_ticks t;
  if (machine_cpu_ticks_now(&t) != 0) return -1;
  *busy = t.busy;
  *total = t.total;
  return 0;
}

double machine_busy_cpus(uint32_t window_ms) {
  uint64_t b0, t0, b1, t1;
  if (read_proc_stat(&b0, &t0) != 0) return -1;
  struct timespec ts = {window_ms / 1000, (long)(window_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  if (read_proc_stat(&b1, &t1) != 0 || t1 <= t0 || b1 < b0) return -1;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return (double)(b1 - b0) / (double)(t1 - t0) * (double)(cpus > 0 ? cpus : 1);
}
