/* cmd_probe: `tokmeter probe`, measure this machine (read and copy bandwidth,
 * f32 and int8 compute at 1..N threads) and show its identity; the result is
 * saved in the per-machine cache that `ceiling` and `bench` read, unless that
 * holds a fuller one (machine/probe_keep.h). `--cached` shows the stored
 * result without measuring. This file parses the flags and prints. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "machine/probe.h"
#include "machine/probe_keep.h"
#include "util/units.h"

/* A reference; the method, the cache rules and the --json keys are in
 * docs/probe.md. */
static void usage(void) {
  printf("Usage: tokmeter probe [options]\n"
         "Measures this machine: memory read and copy bandwidth, f32 and int8 compute\n"
         "(int8 matrix tiles, AMX, where the CPU and OS give them) at 1..N threads,\n"
         "with its identity and temperatures, and caches the result for 'tokmeter\n"
         "ceiling' and 'tokmeter bench' (unless the cache holds a fuller one).\n"
         "\n"
         "Options:\n"
         "  -t, --threads N  measure at 1..N threads, N at most the online CPUs\n"
         "                   (default: online CPUs)\n"
         "      --quick      small buffer, short passes: a smoke test, not a\n"
         "                   measurement (default: off; also TOKMETER_PROBE_QUICK=1)\n"
         "      --cached     show the cached result instead of measuring\n"
         "                   (default: off, measure afresh)\n"
         "      --json       one JSON object on stdout (default: a table)\n"
         "  -h, --help       show this help and exit\n"
         "Exit codes: 0 ok, 1 the probe failed or --cached found none, 2 bad usage.\n"
         "Details: docs/probe.md\n");
}

static double gb(double v) { return v / 1e9; }

static void print_human(const struct machine_probe *p) {
  const struct machine_info *m = &p->info;
  char mem[32], avail[32], llc[32], buf[32];
  tm_fmt_bytes((double)m->memory_bytes, mem, sizeof mem);
  tm_fmt_bytes((double)m->memory_available_bytes, avail, sizeof avail);
  if (m->llc_bytes) tm_fmt_bytes((double)m->llc_bytes, llc, sizeof llc);
  else snprintf(llc, sizeof llc, "unknown");
  printf("machine:      %s, %s, %u CPUs, %s memory (%s available), LLC %s\n", m->cpu_model,
         m->arch, m->cpus, mem, avail, llc);
  printf("flags:        ");
  if (!m->n_flags) printf("(none of the LLM-relevant ones)");
  for (uint32_t i = 0; i < m->n_flags; i++) printf("%s%s", i ? " " : "", m->flags[i]);
  printf("\nos:           %s\n", m->os);

  const struct machine_thermal *t = &p->thermal;
  if (t->n_temps) {
    printf("temperatures:");
    for (uint32_t i = 0; i < t->n_temps; i++)
      printf("%s %s %.1f C", i ? "," : "", t->temps[i].name, t->temps[i].celsius);
    printf("\n");
  } else {
    printf("temperatures: not readable\n");
  }
  if (t->n_freqs) {
    double lo = t->freq_mhz[0], hi = t->freq_mhz[0];
    for (uint32_t i = 1; i < t->n_freqs; i++) {
      if (t->freq_mhz[i] < lo) lo = t->freq_mhz[i];
      if (t->freq_mhz[i] > hi) hi = t->freq_mhz[i];
    }
    printf("frequencies:  %.0f-%.0f MHz over %u CPUs\n", lo, hi, t->n_freqs);
  } else {
    printf("frequencies:  not readable\n");
  }
  tm_fmt_bytes((double)p->buffer_bytes, buf, sizeof buf);
  printf("buffer:       %s; loads %s; f32 path %s; int8 path %s%s%s\n", buf, p->mem_path,
         p->f32_path, p->int8_path[0] ? p->int8_path : "none",
         p->int8_tile_path[0] ? "; int8 tiles " : "", p->int8_tile_path);
  printf("measured:     %s%s\n", p->measured_at,
         p->quick ? " (QUICK: small buffer, short passes; not a measurement of memory)" : "");

  bool int8 = p->int8_path[0] != 0, tile = p->int8_tile_path[0] != 0;
  printf("\nthreads  read GB/s  copy GB/s  f32 GFLOPS  int8 GOPS%s\n",
         tile ? "  int8 tile GOPS" : "");
  for (uint32_t n = 1; n <= p->max_threads && n <= PROBE_MAX_THREADS; n++) {
    printf("%7u  %9.1f  %9.1f  %10.1f  ", n, gb(p->read_bw_bytes_s[n]), gb(p->copy_bw_bytes_s[n]),
           gb(p->f32_flops[n]));
    if (int8) printf("%9.1f", gb(p->int8_ops[n]));
    else printf("%9s", "-");
    if (tile) printf("  %14.1f", gb(p->int8_tile_ops[n]));
    printf("\n");
  }
  uint32_t tr = 0, tf = 0, ti = 0;
  char r[32], f[32], i8[32];
  tm_fmt_bandwidth(probe_best_read_bw(p, &tr), r, sizeof r);
  tm_fmt_ops(probe_best_f32(p, &tf), "FLOPS", f, sizeof f);
  printf("\nbest: read %s (%u thread%s), f32 %s (%u thread%s)", r, tr, tr == 1 ? "" : "s", f, tf,
         tf == 1 ? "" : "s");
  if (int8) {
    tm_fmt_ops(probe_best_int8(p, &ti), "OPS", i8, sizeof i8);
    printf(", int8 %s (%u thread%s)", i8, ti, ti == 1 ? "" : "s");
  } else {
    printf(", int8 none (no int8 dot-product instructions)");
  }
  if (tile) {
    tm_fmt_ops(probe_best_int8_tile(p, &ti), "OPS", i8, sizeof i8);
    printf(", int8 tiles %s (%s, %u thread%s)", i8, p->int8_tile_path, ti, ti == 1 ? "" : "s");
  }
  printf("\ncopy counts bytes read + bytes written.%s\n",
         p->quick ? " Quick result: run 'tokmeter probe' without --quick for real figures." : "");
  if (p->busy_cpus_before >= 0)
    printf("other load: %.2f CPUs busy before, %.2f after\n", p->busy_cpus_before,
           p->busy_cpus_after);
  char warn[400];
  if (probe_busy_warning(p, warn, sizeof warn)) cli_warn("probe", "%s", warn);
}

/* Caches p unless the cache holds a fuller probe (probe_keep.h), which then
 * stays for `ceiling` and `bench`: a line says so, or says why p could not
 * be cached. */
static void save_unless_narrower(const struct machine_probe *p) {
  struct probe_kept old;
  struct tm_err err = {{0}};
  int r = probe_save_unless_fuller(p, &old, &err);
  if (r == 1)
    cli_warn("probe", "not cached: the cached probe (%s, %s, 1..%u threads) is fuller than "
             "this one (%s, 1..%u threads) and stays for 'ceiling' and 'bench'; 'tokmeter probe' "
             "(every thread count, not --quick) replaces it", old.measured_at,
             old.quick ? "quick" : "full", old.max_threads, p->quick ? "quick" : "full",
             p->max_threads);
  else if (r != 0)
    cli_warn("probe", "result not cached: %s", err.msg);
}

int cmd_probe(int argc, char **argv) {
  static const struct option longopts[] = {
      {"threads", required_argument, NULL, 't'}, {"quick", no_argument, NULL, 'q'},
      {"cached", no_argument, NULL, 'c'},        {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  bool json = false, cached = false, quick = false, threads_set = false;
  uint32_t threads = 0;
  struct tm_err err = {{0}};
  optind = 0; /* glibc: full re-initialisation */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":t:h", longopts, NULL)) != -1) {
    switch (c) {
    case 't':
      if (tm_parse_u32(optarg, "--threads", &threads, &err) != 0)
        return cli_usage_error("probe", "%s", err.msg);
      if (threads > PROBE_MAX_THREADS)
        return cli_usage_error("probe", "--threads: at most %d", PROBE_MAX_THREADS);
      threads_set = true;
      break;
    case 'q': quick = true; break;
    case 'c': cached = true; break;
    case 'j': json = true; break;
    case 'h': usage(); return TM_EXIT_OK;
    case ':': return cli_usage_error("probe", "option '%s' needs a value", argv[optind - 1]);
    default: return cli_bad_option("probe", argv[optind - 1], longopts);
    }
  }
  if (optind < argc) return cli_usage_error("probe", "unexpected argument '%s'", argv[optind]);
  if (cached && (threads_set || quick))
    return cli_usage_error("probe", "--cached shows a stored result; --threads and --quick "
                                    "apply only to a new measurement");
  /* As bench refuses it: threads beyond the CPUs measure contention, and
   * `ceiling` would take the "best" of them. Refused before measuring. */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (threads_set && online > 0 && threads > (uint32_t)online)
    return cli_usage_error("probe", "--threads %u: this machine has %ld online CPUs", threads,
                           online);

  struct machine_probe *p = malloc(sizeof *p);
  if (!p) return cli_fail("probe", TM_EXIT_RUNTIME, "out of memory");
  int rc = TM_EXIT_OK;
  if (cached) {
    int r = probe_load_cached(p, &err);
    if (r == 0) {
      struct machine_info info;
      char path[4200] = "";
      if (machine_info_read(&info, NULL) == 0) probe_cache_path(&info, path, sizeof path, NULL);
      rc = cli_fail("probe", TM_EXIT_RUNTIME,
                    "no cached probe for this machine (%s); run 'tokmeter probe' first",
                    path[0] ? path : "cache directory unreadable");
      goto done;
    }
    if (r < 0) {
      rc = cli_fail("probe", TM_EXIT_RUNTIME, "%s; run 'tokmeter probe' to measure again",
                    err.msg);
      goto done;
    }
  } else {
    struct probe_options o = {threads, quick || probe_quick_from_env()};
    int r = probe_run_opts(p, &o, cli_progress, (void *)"probe", &err);
    cli_progress_done();
    if (r != 0) {
      rc = cli_fail("probe", TM_EXIT_RUNTIME, "%s", err.msg);
      goto done;
    }
    save_unless_narrower(p);
  }

  if (json) {
    json_t *j = probe_to_json(p);
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    if (!text) {
      rc = cli_fail("probe", TM_EXIT_RUNTIME, "cannot build JSON (out of memory)");
      goto done;
    }
    printf("%s\n", text);
    free(text);
  } else {
    print_human(p);
  }
  if (p->quick && !json && cached) cli_warn("probe", "the cached result is a quick one");
done:
  free(p);
  return rc;
}
