/* test_info: the identity parsers (cpuinfo, meminfo, os-release, cache sizes)
 * on sample text, the thermal reader on a fake sysfs tree, and the live
 * identity read of this machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "machine/probe.h"
#include <time.h>
#include <unistd.h>

#include "tm_test.h"

static const char x86_cpuinfo[] =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "flags\t\t: fpu vme sse2 avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx_vnni "
    "amx_int8 avx\n"
    "vmx flags\t: vnmi i8mm sve\n"
    "bugs\t\t: spectre_v1\n"
    "\n"
    "processor\t: 1\n"
    "model name\t: Some Other Name\n"
    "flags\t\t: fpu\n";

static const char arm_cpuinfo[] =
    "processor\t: 0\n"
    "BogoMIPS\t: 108.00\n"
    "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid "
    "asimdrdm lrcpc dcpop asimddp\n"
    "CPU implementer\t: 0x41\n"
    "CPU architecture: 8\n"
    "CPU part\t: 0xd0b\n";

static void test_cpuinfo_x86(void) {
  struct machine_info info = {0};
  uint32_t n = machine_parse_cpuinfo(x86_cpuinfo, &info);
  CHECK_STR(info.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
  /* Table order, first processor only, "vmx flags" ignored. */
  CHECK_EQ_INT(n, 10);
  CHECK_EQ_INT(info.n_flags, 10);
  CHECK_STR(info.flags[0], "avx");
  CHECK_STR(info.flags[1], "avx2");
  CHECK(machine_has_flag(&info, "avx512_vnni"));
  CHECK(machine_has_flag(&info, "avx_vnni"));
  CHECK(machine_has_flag(&info, "amx_int8"));
  CHECK(!machine_has_flag(&info, "sse2"));     /* not LLM-relevant */
  CHECK(!machine_has_flag(&info, "i8mm"));     /* only on the vmx flags line */
  CHECK(!machine_has_flag(&info, "avx512")); /* prefix of a word is not a word */
}

static void test_cpuinfo_arm(void) {
  struct machine_info info = {0};
  uint32_t n = machine_parse_cpuinfo(arm_cpuinfo, &info);
  CHECK_STR(info.cpu_model, "implementer 0x41 part 0xd0b");
  CHECK_EQ_INT(n, 3);
  CHECK(machine_has_flag(&info, "neon"));
  CHECK(machine_has_flag(&info, "asimdhp"));
  CHECK(machine_has_flag(&info, "asimddp"));
  CHECK(!machine_has_flag(&info, "asimd"));
  CHECK(!machine_has_flag(&info, "i8mm"));
}

static void test_cpuinfo_empty(void) {
  struct machine_info info = {0};
  CHECK_EQ_INT(machine_parse_cpuinfo("", &info), 0);
  CHECK_STR(info.cpu_model, "unknown");
  CHECK_EQ_INT(machine_parse_cpuinfo("Hardware\t: BCM2835\n", &info), 0);
  CHECK_STR(info.cpu_model, "BCM2835");
}

static void test_meminfo(void) {
  uint64_t total = 0, avail = 0;
  CHECK_EQ_INT(machine_parse_meminfo("MemTotal:       24684084 kB\n"
                                     "MemFree:        24361852 kB\n"
                                     "MemAvailable:   24389452 kB\n",
                                     &total, &avail),
               0);
  CHECK_EQ_U64(total, 24684084ull * 1024);
  CHECK_EQ_U64(avail, 24389452ull * 1024);
  /* Old kernels have no MemAvailable: MemFree stands in. */
  CHECK_EQ_INT(machine_parse_meminfo("MemTotal: 1000 kB\nMemFree: 300 kB\n", &total, &avail), 0);
  CHECK_EQ_U64(avail, 300ull * 1024);
  CHECK_EQ_INT(machine_parse_meminfo("MemFree: 300 kB\n", &total, &avail), -1);
  CHECK_EQ_INT(machine_parse_meminfo("MemTotal: lots\n", &total, &avail), -1);
}

static void test_os_release(void) {
  char buf[64];
  CHECK_EQ_INT(machine_parse_os_release("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 "
                                        "(bookworm)\"\nID=debian\n",
                                        buf, sizeof buf),
               0);
  CHECK_STR(buf, "Debian GNU/Linux 12 (bookworm)");
  CHECK_EQ_INT(machine_parse_os_release("PRETTY_NAME=Alpine\n", buf, sizeof buf), 0);
  CHECK_STR(buf, "Alpine");
  CHECK_EQ_INT(machine_parse_os_release("PRETTY_NAME='Arch Linux'", buf, sizeof buf), 0);
  CHECK_STR(buf, "Arch Linux");
  CHECK_EQ_INT(machine_parse_os_release("NAME=x\n", buf, sizeof buf), -1);
  char small[8];
  CHECK_EQ_INT(machine_parse_os_release("PRETTY_NAME=\"Long Name Here\"\n", small, sizeof small), 0);
  CHECK_STR(small, "Long Na");
}

static void test_cache_size(void) {
  CHECK_EQ_U64(machine_parse_cache_size("491520K\n"), 491520ull * 1024);
  CHECK_EQ_U64(machine_parse_cache_size("32M"), 32ull << 20);
  CHECK_EQ_U64(machine_parse_cache_size("1024"), 1024);
  CHECK_EQ_U64(machine_parse_cache_size("x"), 0);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static void mkdirs(const char *root, const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') *p = 0, mkdir(path, 0755), *p = '/';
  mkdir(path, 0755);
}

static void test_thermal_fake_tree(void) {
  char root[512], path[1024];
  snprintf(root, sizeof root, "%s/sys", tm_test_tmpdir());
  mkdir(root, 0755);
  struct machine_thermal t;
  machine_thermal_read_at(root, &t);
  CHECK(!t.readable);
  CHECK_EQ_INT(t.n_temps, 0);
  CHECK_EQ_INT(t.n_freqs, 0);

  mkdirs(root, "class/thermal/thermal_zone0");
  snprintf(path, sizeof path, "%s/class/thermal/thermal_zone0/temp", root);
  write_file(path, "45500\n");
  snprintf(path, sizeof path, "%s/class/thermal/thermal_zone0/type", root);
  write_file(path, "x86_pkg_temp\n");
  mkdirs(root, "class/hwmon/hwmon0");
  snprintf(path, sizeof path, "%s/class/hwmon/hwmon0/name", root);
  write_file(path, "coretemp\n");
  snprintf(path, sizeof path, "%s/class/hwmon/hwmon0/temp2_input", root);
  write_file(path, "51000\n");
  snprintf(path, sizeof path, "%s/class/hwmon/hwmon0/temp2_label", root);
  write_file(path, "Core 0\n");
  mkdirs(root, "devices/system/cpu/cpu0/cpufreq");
  mkdirs(root, "devices/system/cpu/cpu1"); /* offline or no cpufreq: skipped */
  mkdirs(root, "devices/system/cpu/cpu2/cpufreq");
  snprintf(path, sizeof path, "%s/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", root);
  write_file(path, "2400000\n");
  snprintf(path, sizeof path, "%s/devices/system/cpu/cpu2/cpufreq/scaling_cur_freq", root);
  write_file(path, "3100500\n");

  machine_thermal_read_at(root, &t);
  CHECK(t.readable);
  CHECK_EQ_INT(t.n_temps, 2);
  CHECK_STR(t.temps[0].name, "x86_pkg_temp");
  CHECK_NEAR(t.temps[0].celsius, 45.5, 1e-9);
  CHECK_STR(t.temps[1].name, "coretemp/Core 0");
  CHECK_NEAR(t.temps[1].celsius, 51.0, 1e-9);
  CHECK_EQ_INT(t.n_freqs, 2);
  CHECK_NEAR(t.freq_mhz[0], 2400.0, 1e-9);
  CHECK_NEAR(t.freq_mhz[1], 3100.5, 1e-9);
}

static void test_live_identity(void) {
  struct machine_info info;
  struct tm_err err = {{0}};
  CHECK_EQ_INT(machine_info_read(&info, &err), 0);
  CHECK(info.cpus >= 1);
  CHECK(info.memory_bytes > (64ull << 20));
  CHECK(info.memory_available_bytes <= info.memory_bytes);
  CHECK(info.cpu_model[0] != 0);
  CHECK(info.arch[0] != 0);
  CHECK_CONTAINS(info.os, "Linux");
  uint32_t d = machine_default_threads(&info);
  CHECK(d >= 1 && d <= info.cpus);
#if defined(__x86_64__)
  CHECK_STR(info.arch, "x86_64");
#endif
}

static void test_proc_stat(void) {
  uint64_t busy = 0, total = 0;
  const char *text =
      "cpu  100 5 50 1000 20 3 2 10 7 0\n"
      "cpu0 50 2 25 500 10 1 1 5 3 0\n"
      "intr 12345\n";
  CHECK(machine_parse_proc_stat(text, &busy, &total) == 0);
  /* user+nice+system+idle+iowait+irq+softirq+steal; guest is inside user */
  CHECK_EQ_U64(total, 100 + 5 + 50 + 1000 + 20 + 3 + 2 + 10);
  CHECK_EQ_U64(busy, total - 1000 - 20);
  /* an old kernel with only four columns */
  CHECK(machine_parse_proc_stat("cpu  1 2 3 4\n", &busy, &total) == 0);
  CHECK_EQ_U64(total, 10);
  CHECK_EQ_U64(busy, 6);
  CHECK(machine_parse_proc_stat("cpu0 1 2 3 4\n", &busy, &total) == -1);
  CHECK(machine_parse_proc_stat("cpu  x y\n", &busy, &total) == -1);
  CHECK(machine_parse_proc_stat("", &busy, &total) == -1);
  double b = machine_busy_cpus(20);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK_MSG(b >= 0 && b <= cpus + 0.01, "busy cpus %.3f of %ld", b, cpus);
}

/* Other processes' load: /proc/stat's busy time less steal, less this
 * process's own ticks (/proc/self/stat), per wall-clock tick. */
static void test_other_cpus(void) {
  struct machine_cpu_ticks a, b;
  CHECK(machine_parse_cpu_ticks("cpu  100 5 50 1000 20 3 2 10 7 0\n", &a) == 0);
  CHECK(machine_parse_cpu_ticks("cpu  300 5 90 1500 20 3 2 25 7 0\n", &b) == 0);
  CHECK(machine_other_cpus(&a, &b, 2) < 0); /* no self ticks: unknown */
  /* a command name with a space and a ')' of its own */
  CHECK(machine_parse_self_ticks("42 (a) b) R 1 42 42 0 -1 4194560 10 0 0 0 30 10 0 0 20 0", &a) == 0);
  CHECK_EQ_U64(a.self, 40);
  CHECK(machine_parse_self_ticks("43 (x) R 1 43 43 0 -1 0 0 0 0 0 100 40 0 0", &b) == 0);
  CHECK_EQ_U64(b.self, 140);
  /* 755 ticks over 2 CPUs = 377.5 of wall time; 255 busy - 15 stolen - 100 ours */
  CHECK_NEAR(machine_other_cpus(&a, &b, 2), 140.0 / 377.5, 1e-12);
  CHECK(machine_other_cpus(&b, &a, 2) < 0); /* backwards */
  /* a window shorter than MACHINE_TICKS_MIN_WALL (here 49.5 ticks of wall
   * time on 2 CPUs) is unknown: one tick in it would read as 0.02+ CPUs */
  struct machine_cpu_ticks c = a, d = a;
  d.total += 99;
  d.busy += 30;
  CHECK(machine_other_cpus(&c, &d, 2) < 0);
  d.total += 1; /* 50 ticks: known */
  CHECK_NEAR(machine_other_cpus(&c, &d, 2), 30.0 / 50.0, 1e-12);
  CHECK(machine_parse_self_ticks("no parenthesis here", &a) == -1);
  CHECK(machine_parse_self_ticks("1 (x) R 1", &a) == -1);
  /* live: unknown over 30 ms, a finite share within the machine's CPUs
   * over 0.6 s */
  struct machine_cpu_ticks now;
  CHECK(machine_cpu_ticks_now(&now) == 0 && now.has_self);
  struct timespec ts = {0, 30000000L};
  nanosleep(&ts, NULL);
  CHECK(isnan(machine_other_cpus_since(&now)));
  ts.tv_nsec = 570000000L;
  nanosleep(&ts, NULL);
  double o = machine_other_cpus_since(&now);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK_MSG(o >= 0 && o <= cpus + 0.05, "other cpus %.3f of %ld", o, cpus);
}

static void test_steal(void) {
  struct machine_cpu_ticks a, b;
  /* user nice system idle iowait irq softirq steal guest guest_nice */
  CHECK(machine_parse_cpu_ticks("cpu  100 5 50 1000 20 3 2 10 7 0\n", &a) == 0);
  CHECK(a.has_steal);
  CHECK_EQ_U64(a.steal, 10);
  CHECK_EQ_U64(a.busy, 100 + 5 + 50 + 3 + 2 + 10);
  CHECK(machine_parse_cpu_ticks("cpu  300 5 90 1500 20 3 2 25 7 0\n", &b) == 0);
  /* 15 of the 255 busy ticks between them were stolen */
  CHECK_NEAR(machine_steal_share(&a, &b), 15.0 / 255.0, 1e-12);
  CHECK(machine_steal_share(&b, &a) < 0); /* counters going backwards */
  CHECK(machine_steal_share(&a, &a) < 0); /* no busy time: unknown, not 0 */
  /* fewer busy ticks than MACHINE_TICKS_MIN_BUSY: one stolen tick would read
   * as 1% or more, so unknown */
  struct machine_cpu_ticks c = a, d = a;
  d.busy += MACHINE_TICKS_MIN_BUSY - 1;
  d.steal += 1;
  CHECK(machine_steal_share(&c, &d) < 0);
  d.busy += 1;
  CHECK_NEAR(machine_steal_share(&c, &d), 1.0 / MACHINE_TICKS_MIN_BUSY, 1e-12);
  struct machine_cpu_ticks old;
  CHECK(machine_parse_cpu_ticks("cpu  1 2 3 4 5 6 7\n", &old) == 0); /* no steal column */
  CHECK(!old.has_steal);
  CHECK(machine_steal_share(&old, &b) < 0);
  CHECK(machine_parse_cpu_ticks("cpu0 1 2 3 4\n", &old) == -1);
  struct machine_cpu_ticks now;
  CHECK(machine_cpu_ticks_now(&now) == 0);
  CHECK(now.busy <= now.total && now.steal <= now.busy);
  /* from a reading without a steal column: unknown (NAN), never 0 */
  CHECK(isnan(machine_steal_since(&old)));
  double since = machine_steal_since(&now);
  CHECK(isnan(since) || (since >= 0 && since <= 1));

  char buf[400] = "untouched";
  CHECK(!machine_steal_warning(2, 0.009, buf, sizeof buf));
  CHECK(!machine_steal_warning(2, NAN, buf, sizeof buf));
  CHECK(!machine_steal_warning(2, -1, buf, sizeof buf));
  CHECK_STR(buf, "untouched");
  CHECK(machine_steal_warning(2, 0.035, buf, sizeof buf));
  CHECK_MSG(strstr(buf, "At 2 threads") && strstr(buf, "3.5%") && strstr(buf, "slowest thread"),
            "%s", buf);
  CHECK(machine_steal_warning(1, 0.01, buf, sizeof buf));
  CHECK_MSG(strstr(buf, "At 1 thread ") && strstr(buf, "1.0%") && !strstr(buf, "slowest"), "%s",
            buf);
  /* 0 threads: runs against a server, timed from this machine */
  CHECK(machine_steal_warning(0, 0.02, buf, sizeof buf));
  CHECK_MSG(strstr(buf, "During the runs") && strstr(buf, "2.0%") && strstr(buf, "server"), "%s",
            buf);
  CHECK(!machine_steal_warning(0, 0.0099, buf, sizeof buf));
}

static void test_busy_warning(void) {
  struct machine_probe p;
  memset(&p, 0, sizeof p);
  p.info.cpus = 2;
  char buf[400];
  p.busy_cpus_before = -1, p.busy_cpus_after = -1;
  CHECK(!probe_busy_warning(&p, buf, sizeof buf));
  p.busy_cpus_before = 0.1, p.busy_cpus_after = 0.2;
  CHECK(!probe_busy_warning(&p, buf, sizeof buf));
  p.busy_cpus_after = 0.9;
  CHECK(probe_busy_warning(&p, buf, sizeof buf));
  CHECK_CONTAINS(buf, "0.9 of 2 CPUs busy");
  CHECK_CONTAINS(buf, "re-run 'tokmeter probe'");

  /* The retake: never for a probe without the warning; with it, only when
   * the machine is quiet now, and then the note names the cached probe. */
  snprintf(p.measured_at, sizeof p.measured_at, "2026-12-01T00:19:30Z");
  p.busy_cpus_before = 0.1, p.busy_cpus_after = 0.2;
  buf[0] = 0;
  CHECK(!probe_retake_busy_at(&p, 0.0, buf, sizeof buf));
  CHECK(!probe_retake_busy(&p, buf, sizeof buf)); /* no warning: no reading either */
  CHECK_STR(buf, "");
  p.busy_cpus_before = 1.1;
  CHECK(!probe_retake_busy_at(&p, 0.9, buf, sizeof buf));  /* still busy: keep it */
  CHECK(!probe_retake_busy_at(&p, -1, buf, sizeof buf));   /* unknown: keep it */
  CHECK(!probe_retake_busy_at(&p, PROBE_BUSY_WARN_CPUS + 0.01, buf, sizeof buf));
  CHECK(probe_retake_busy_at(&p, PROBE_BUSY_WARN_CPUS, buf, sizeof buf));
  CHECK(probe_retake_busy_at(&p, 0.04, buf, sizeof buf));
  CHECK_STR(buf, "the cached probe (2026-12-01T00:19:30Z) was measured while other processes "
                 "kept 1.1 of 2 CPUs busy; they keep 0.0 busy now, so this machine is measured "
                 "again");
}

void tm_run_tests(void) {
  TM_RUN(test_proc_stat);
  TM_RUN(test_steal);
  TM_RUN(test_other_cpus);
  TM_RUN(test_busy_warning);
  TM_RUN(test_cpuinfo_x86);
  TM_RUN(test_cpuinfo_arm);
  TM_RUN(test_cpuinfo_empty);
  TM_RUN(test_meminfo);
  TM_RUN(test_os_release);
  TM_RUN(test_cache_size);
  TM_RUN(test_thermal_fake_tree);
  TM_RUN(test_live_identity);
}
