/* probe_json: the probe as one JSON object (the cache file and `probe --json`),
 * and back. The reader treats the text as untrusted: every field is checked for
 * type and range, and the first bad one is named in err.
 *
 * Layout (keys in this order):
 *   schema "tokmeter.probe/1", quick, measured_at, max_threads, buffer_bytes,
 *   mem_path, buffer_hugepages, read_loop (PROBE_READ_LOOP; absent in files
 *   written before it), busy_cpus_before, busy_cpus_after (CPUs other processes kept
 *   busy around the run; null when not readable or quick), read_bandwidth_bytes_s
 *   (best), read_bandwidth_threads,
 *   read_bandwidth_by_threads [{threads, bytes_s}],
 *   copy_bandwidth_read_plus_write_bytes_s (best: bytes read + bytes written
 *   per second), copy_bandwidth_by_threads [{threads, read_plus_write_bytes_s}],
 *   f32_path, compute_f32_flops (best), compute_f32_threads,
 *   compute_f32_by_threads [{threads, flops}],
 *   int8_path (null when none), compute_int8_ops (best; null when none),
 *   compute_int8_threads, compute_int8_by_threads [{threads, ops_s}] (empty when
 *   none), int8_tile_path ("amx_int8"; null when none), compute_int8_tile_ops
 *   (best; null when none), compute_int8_tile_threads,
 *   compute_int8_tile_by_threads [{threads, ops_s}] (empty when none; the key
 *   absent in files written before tiles were measured), machine {cpu, arch, cores, memory_bytes, memory_available_bytes,
 *   llc_bytes (null when unknown), os, flags[]}, thermal {readable, temps [{name, celsius}],
 *   freqs_mhz []}. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "machine/probe.h"

/* ------------------------------------------------------------- writer --- */

/* jansson cannot hold NaN or infinity: those become null. */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *by_threads(const double *v, uint32_t n, const char *key) {
  json_t *a = json_array();
  if (!a) return NULL;
  for (uint32_t t = 1; t <= n && t <= PROBE_MAX_THREADS; t++) {
    json_t *e = json_object();
    if (!e) break;
    json_object_set_new(e, "threads", json_integer(t));
    json_object_set_new(e, key, num(v[t]));
    json_array_append_new(a, e);
  }
  return a;
}

void *probe_to_json(const struct machine_probe *p) {
  json_t *o = json_object();
  if (!o) return NULL;
  uint32_t t = 0;
  double best;
  json_object_set_new(o, "schema", json_string("tokmeter.probe/1"));
  json_object_set_new(o, "quick", json_boolean(p->quick));
  json_object_set_new(o, "measured_at", json_string(p->measured_at));
  json_object_set_new(o, "max_threads", json_integer(p->max_threads));
  json_object_set_new(o, "buffer_bytes", json_integer((json_int_t)p->buffer_bytes));
  json_object_set_new(o, "mem_path", json_string(p->mem_path));
  json_object_set_new(o, "buffer_hugepages", json_boolean(p->hugepages));
  json_object_set_new(o, "read_loop", json_string(p->read_loop));
  json_object_set_new(o, "busy_cpus_before",
                      p->busy_cpus_before >= 0 ? json_real(p->busy_cpus_before) : json_null());
  json_object_set_new(o, "busy_cpus_after",
                      p->busy_cpus_after >= 0 ? json_real(p->busy_cpus_after) : json_null());

  best = probe_best_read_bw(p, &t);
  json_object_set_new(o, "read_bandwidth_bytes_s", num(best));
  json_object_set_new(o, "read_bandwidth_threads", json_integer(t));
  json_object_set_new(o, "read_bandwidth_by_threads",
                      by_threads(p->read_bw_bytes_s, p->max_threads, "bytes_s"));
  best = 0;
  for (uint32_t i = 1; i <= p->max_threads && i <= PROBE_MAX_THREADS; i++)
    if (p->copy_bw_bytes_s[i] > best) best = p->copy_bw_bytes_s[i];
  json_object_set_new(o, "copy_bandwidth_read_plus_write_bytes_s", num(best));
  json_object_set_new(o, "copy_bandwidth_by_threads",
                      by_threads(p->copy_bw_bytes_s, p->max_threads, "read_plus_write_bytes_s"));

  json_object_set_new(o, "f32_path", json_string(p->f32_path));
  best = probe_best_f32(p, &t);
  json_object_set_new(o, "compute_f32_flops", num(best));
  json_object_set_new(o, "compute_f32_threads", json_integer(t));
  json_object_set_new(o, "compute_f32_by_threads",
                      by_threads(p->f32_flops, p->max_threads, "flops"));

  bool has_int8 = p->int8_path[0] != 0;
  json_object_set_new(o, "int8_path", has_int8 ? json_string(p->int8_path) : json_null());
  best = probe_best_int8(p, &t);
  json_object_set_new(o, "compute_int8_ops", has_int8 ? num(best) : json_null());
  json_object_set_new(o, "compute_int8_threads", has_int8 ? json_integer(t) : json_null());
  json_object_set_new(o, "compute_int8_by_threads",
                      has_int8 ? by_threads(p->int8_ops, p->max_threads, "ops_s") : json_array());

  bool has_tile = p->int8_tile_path[0] != 0;
  json_object_set_new(o, "int8_tile_path", has_tile ? json_string(p->int8_tile_path) : json_null());
  best = probe_best_int8_tile(p, &t);
  json_object_set_new(o, "compute_int8_tile_ops", has_tile ? num(best) : json_null());
  json_object_set_new(o, "compute_int8_tile_threads", has_tile ? json_integer(t) : json_null());
  json_object_set_new(o, "compute_int8_tile_by_threads",
                      has_tile ? by_threads(p->int8_tile_ops, p->max_threads, "ops_s")
                               : json_array());

  const struct machine_info *m = &p->info;
  json_t *mj = json_object();
  json_object_set_new(mj, "cpu", json_string(m->cpu_model));
  json_object_set_new(mj, "arch", json_string(m->arch));
  json_object_set_new(mj, "cores", json_integer(m->cpus));
  json_object_set_new(mj, "memory_bytes", json_integer((json_int_t)m->memory_bytes));
  json_object_set_new(mj, "memory_available_bytes",
                      json_integer((json_int_t)m->memory_available_bytes));
  /* null when unknown, as the identity record says (docs/records.md) */
  json_object_set_new(mj, "llc_bytes",
                      m->llc_bytes ? json_integer((json_int_t)m->llc_bytes) : json_null());
  json_object_set_new(mj, "os", json_string(m->os));
  json_t *flags = json_array();
  for (uint32_t i = 0; i < m->n_flags && i < PROBE_MAX_FLAGS; i++)
    json_array_append_new(flags, json_string(m->flags[i]));
  json_object_set_new(mj, "flags", flags);
  json_object_set_new(o, "machine", mj);

  const struct machine_thermal *th = &p->thermal;
  json_t *tj = json_object();
  json_object_set_new(tj, "readable", json_boolean(th->readable));
  json_t *temps = json_array();
  for (uint32_t i = 0; i < th->n_temps && i < PROBE_MAX_SENSORS; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(th->temps[i].name));
    json_object_set_new(e, "celsius", num(th->temps[i].celsius));
    json_array_append_new(temps, e);
  }
  json_object_set_new(tj, "temps", temps);
  json_t *freqs = json_array();
  for (uint32_t i = 0; i < th->n_freqs && i < PROBE_MAX_SENSORS; i++)
    json_array_append_new(freqs, num(th->freq_mhz[i]));
  json_object_set_new(tj, "freqs_mhz", freqs);
  json_object_set_new(o, "thermal", tj);
  return o;
}

/* ------------------------------------------------------------- reader --- */

static int get_str(const json_t *o, const char *where, const char *key, char *buf, size_t n,
                   bool nullable, struct tm_err *err) {
  json_t *v = json_object_get(o, key);
  if (nullable && (!v || json_is_null(v))) {
    buf[0] = 0;
    return 0;
  }
  if (!json_is_string(v)) return tm_errf(err, "probe JSON: %s%s missing or not a string", where, key);
  if (strlen(json_string_value(v)) >= n)
    return tm_errf(err, "probe JSON: %s%s longer than %zu bytes", where, key, n - 1);
  snprintf(buf, n, "%s", json_string_value(v));
  return 0;
}

static int get_u64(const json_t *o, const char *where, const char *key, uint64_t max,
                   uint64_t *out, struct tm_err *err) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
    return tm_errf(err, "probe JSON: %s%s missing, not an integer, or out of range [0, %llu]",
                   where, key, (unsigned long long)max);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

/* A non-negative finite number; integers are accepted too (a hand-edited file
 * may say 1e10 as 10000000000). */
static int as_rate(const json_t *v, double *out) {
  if (!json_is_number(v)) return -1;
  double d = json_number_value(v);
  if (!isfinite(d) || d < 0) return -1;
  *out = d;
  return 0;
}

/* Fills v[threads] from [{threads, key}]; returns the largest thread count. */
static int get_series(const json_t *o, const char *name, const char *key, double *v,
                      uint32_t max_threads, struct tm_err *err) {
  json_t *a = json_object_get(o, name);
  if (!json_is_array(a)) return tm_errf(err, "probe JSON: %s missing or not an array", name);
  size_t i;
  json_t *e;
  json_array_foreach(a, i, e) {
    json_t *t = json_object_get(e, "threads");
    if (!json_is_integer(t) || json_integer_value(t) < 1 ||
        json_integer_value(t) > (json_int_t)max_threads)
      return tm_errf(err, "probe JSON: %s[%zu].threads missing or not in 1..%u", name, i,
                     max_threads);
    if (as_rate(json_object_get(e, key), &v[json_integer_value(t)]) != 0)
      return tm_errf(err, "probe JSON: %s[%zu].%s missing or not a non-negative number", name,
                     i, key);
  }
  return 0;
}

int probe_from_json(struct machine_probe *p, const void *json, struct tm_err *err) {
  const json_t *o = json;
  memset(p, 0, sizeof *p);
  if (!json_is_object(o)) return tm_errf(err, "probe JSON: not an object");
  /* Another schema's fields may mean other things: not ours to read. An
   * absent schema is read as this one (files written before it was added). */
  json_t *schema = json_object_get(o, "schema");
  if (schema && !(json_is_string(schema) &&
                  strcmp(json_string_value(schema), "tokmeter.probe/1") == 0))
    return tm_errf(err, "probe JSON: schema is not \"tokmeter.probe/1\"");
  uint64_t u = 0;

  json_t *q = json_object_get(o, "quick");
  if (q && !json_is_boolean(q)) return tm_errf(err, "probe JSON: quick is not a boolean");
  p->quick = q && json_is_true(q);
  json_t *hp = json_object_get(o, "buffer_hugepages");
  if (hp && !json_is_boolean(hp))
    return tm_errf(err, "probe JSON: buffer_hugepages is not a boolean");
  p->hugepages = hp && json_is_true(hp);
  if (get_str(o, "", "measured_at", p->measured_at, sizeof p->measured_at, false, err)) return -1;
  if (get_u64(o, "", "max_threads", PROBE_MAX_THREADS, &u, err)) return -1;
  if (u == 0) return tm_errf(err, "probe JSON: max_threads is 0");
  p->max_threads = (uint32_t)u;
  if (get_u64(o, "", "buffer_bytes", UINT64_MAX >> 1, &p->buffer_bytes, err)) return -1;
  if (get_str(o, "", "mem_path", p->mem_path, sizeof p->mem_path, true, err)) return -1;
  /* Absent in files written before the key existed: "" (another loop). */
  if (get_str(o, "", "read_loop", p->read_loop, sizeof p->read_loop, true, err)) return -1;
  /* Absent or null (older cache files, quick runs): not readable. */
  const json_t *bb = json_object_get(o, "busy_cpus_before"), *ba = json_object_get(o, "busy_cpus_after");
  if ((bb && !json_is_null(bb) && !json_is_number(bb)) ||
      (ba && !json_is_null(ba) && !json_is_number(ba)))
    return tm_errf(err, "probe JSON: busy_cpus_before/after is not a number");
  p->busy_cpus_before = bb && json_is_number(bb) ? json_number_value(bb) : -1;
  p->busy_cpus_after = ba && json_is_number(ba) ? json_number_value(ba) : -1;
  if (get_str(o, "", "f32_path", p->f32_path, sizeof p->f32_path, false, err)) return -1;
  if (get_str(o, "", "int8_path", p->int8_path, sizeof p->int8_path, true, err)) return -1;

  if (get_series(o, "read_bandwidth_by_threads", "bytes_s", p->read_bw_bytes_s, p->max_threads,
                 err) ||
      get_series(o, "copy_bandwidth_by_threads", "read_plus_write_bytes_s", p->copy_bw_bytes_s,
                 p->max_threads, err) ||
      get_series(o, "compute_f32_by_threads", "flops", p->f32_flops, p->max_threads, err) ||
      get_series(o, "compute_int8_by_threads", "ops_s", p->int8_ops, p->max_threads, err))
    return -1;
  /* Absent in files written before int8 tiles were measured: tiles_probed
   * stays false (probe_load_cached re-measures a machine that has them). */
  if (json_object_get(o, "compute_int8_tile_by_threads")) {
    if (get_str(o, "", "int8_tile_path", p->int8_tile_path, sizeof p->int8_tile_path, true, err) ||
        get_series(o, "compute_int8_tile_by_threads", "ops_s", p->int8_tile_ops, p->max_threads,
                   err))
      return -1;
    p->tiles_probed = true;
  }
  if (probe_best_read_bw(p, NULL) <= 0)
    return tm_errf(err, "probe JSON: read_bandwidth_by_threads has no positive figure");

  const json_t *m = json_object_get(o, "machine");
  if (!json_is_object(m)) return tm_errf(err, "probe JSON: machine missing or not an object");
  struct machine_info *info = &p->info;
  if (get_str(m, "machine.", "cpu", info->cpu_model, sizeof info->cpu_model, false, err) ||
      get_str(m, "machine.", "arch", info->arch, sizeof info->arch, false, err) ||
      get_str(m, "machine.", "os", info->os, sizeof info->os, false, err))
    return -1;
  if (get_u64(m, "machine.", "cores", UINT32_MAX, &u, err)) return -1;
  info->cpus = (uint32_t)u;
  if (get_u64(m, "machine.", "memory_bytes", UINT64_MAX >> 1, &info->memory_bytes, err) ||
      get_u64(m, "machine.", "memory_available_bytes", UINT64_MAX >> 1,
              &info->memory_available_bytes, err))
    return -1;
  /* null: unknown (0 in memory; caches written before said 0) */
  info->llc_bytes = 0;
  if (!json_is_null(json_object_get(m, "llc_bytes")) &&
      get_u64(m, "machine.", "llc_bytes", UINT64_MAX >> 1, &info->llc_bytes, err))
    return -1;
  json_t *flags = json_object_get(m, "flags");
  if (!json_is_array(flags)) return tm_errf(err, "probe JSON: machine.flags missing or not an array");
  if (json_array_size(flags) > PROBE_MAX_FLAGS)
    return tm_errf(err, "probe JSON: machine.flags has more than %d entries", PROBE_MAX_FLAGS);
  size_t i;
  json_t *e;
  json_array_foreach(flags, i, e) {
    if (!json_is_string(e) || strlen(json_string_value(e)) >= sizeof info->flags[0])
      return tm_errf(err, "probe JSON: machine.flags[%zu] not a short string", i);
    snprintf(info->flags[info->n_flags++], sizeof info->flags[0], "%s", json_string_value(e));
  }

  /* thermal is optional (older files); when present it must be well formed. */
  const json_t *th = json_object_get(o, "thermal");
  if (th) {
    struct machine_thermal *t = &p->thermal;
    if (!json_is_object(th)) return tm_errf(err, "probe JSON: thermal is not an object");
    json_t *r = json_object_get(th, "readable");
    if (!json_is_boolean(r)) return tm_errf(err, "probe JSON: thermal.readable missing or not a boolean");
    t->readable = json_is_true(r);
    json_t *temps = json_object_get(th, "temps"), *freqs = json_object_get(th, "freqs_mhz");
    if (!json_is_array(temps) || json_array_size(temps) > PROBE_MAX_SENSORS)
      return tm_errf(err, "probe JSON: thermal.temps missing, not an array, or too long");
    if (!json_is_array(freqs) || json_array_size(freqs) > PROBE_MAX_SENSORS)
      return tm_errf(err, "probe JSON: thermal.freqs_mhz missing, not an array, or too long");
    json_array_foreach(temps, i, e) {
      if (get_str(e, "thermal.temps[].", "name", t->temps[i].name, sizeof t->temps[i].name,
                  false, err))
        return -1;
      json_t *c = json_object_get(e, "celsius");
      if (!json_is_number(c)) return tm_errf(err, "probe JSON: thermal.temps[%zu].celsius not a number", i);
      t->temps[i].celsius = json_number_value(c);
      t->n_temps++;
    }
    json_array_foreach(freqs, i, e) {
      if (as_rate(e, &t->freq_mhz[i]) != 0)
        return tm_errf(err, "probe JSON: thermal.freqs_mhz[%zu] not a non-negative number", i);
      t->n_freqs++;
    }
  }
  return 0;
}
