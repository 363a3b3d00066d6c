/* inproc_json: the in-process bench's --json document (inproc.h eb_json):
 * the models (what each file is, how it was loaded and placed, the
 * readings of its weights and memory), the summaries as recorded, the
 * findings as data and their sentences, and the bandwidth read before and
 * after the runs. Keys are documented in docs/records.md and kept stable. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "bench/inproc.h"
#include "machine/probe.h"

/* obj[key] = [{threads, bytes_s}] for bw[1..n] (an empty list when n = 0);
 * nothing when obj is NULL (out of memory). */
static void set_bw_by_threads(json_t *obj, const char *key, const double *bw, uint32_t n) {
  if (!obj) return;
  json_t *list = json_array();
  for (uint32_t t = 1; t <= n; t++)
    json_array_append_new(list, json_pack("{s:i, s:f}", "threads", (int)t, "bytes_s", bw[t]));
  json_object_set_new(obj, key, list);
}

json_t *eb_json(const struct eb_state *s) {
  json_t *models = json_array();
  for (size_t i = 0; i < s->n_models; i++) {
    const struct eb_model *m = &s->models[i];
    json_t *mo =
        json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:f, s:s, s:s, s:s}", "model", m->label,
                  "file", m->path, "arch", m->arch, "type", m->type, "file_bytes",
                  (json_int_t)m->file_bytes, "bytes_per_token",
                  m->cost.weight_bytes_per_token + m->cost.state_bytes, "load_ms",
                  m->info.load_ms, "kernel_path", m->kernel_path, "best_cpu_path", m->best_path,
                  "prefill_compute_path", m->tiles ? "int8_tile" : m->int8 ? "int8" : "f32");
    /* general.file_type's name ("Q4_K_M"), null when the file has none */
    if (mo)
      json_object_set_new(mo, "file_type",
                          m->file_type[0] ? json_string(m->file_type) : json_null());
    if (mo)
      json_object_set_new(mo, "decode_chunk_bytes",
                          json_integer((json_int_t)m->info.decode_chunk_bytes));
    /* share of the weights read through 2 MiB pages; null when unknown */
    if (mo) json_object_set_new(mo, "huge_page_share", m->info.huge_share >= 0
                                                          ? json_real(m->info.huge_share)
                                                          : json_null());
    /* the engine's resident memory after the model's runs (engine_memory) */
    if (mo && m->have_mem) {
      const struct engine_memory *mem = &m->mem;
      json_t *jm = json_object();
      json_object_set_new(jm, "weights_resident_bytes",
                          mem->weights_resident >= 0 ? json_integer(mem->weights_resident)
                                                     : json_null());
      json_object_set_new(jm, "kv_resident_bytes", mem->kv_resident >= 0
                                                       ? json_integer(mem->kv_resident)
                                                       : json_null());
      json_object_set_new(jm, "kv_bytes", json_integer((json_int_t)mem->kv_bytes));
      json_object_set_new(jm, "buffer_bytes", json_integer((json_int_t)mem->buffers));
      json_object_set_new(jm, "resident_bytes",
                          mem->total >= 0 ? json_integer(mem->total) : json_null());
      json_object_set_new(jm, "limit_bytes", json_integer((json_int_t)mem->limit));
      json_object_set_new(jm, "within_limit", mem->total >= 0
                                                  ? json_boolean((uint64_t)mem->total <=
                                                                 mem->limit)
                                                  : json_null());
      json_object_set_new(mo, "memory", jm);
    }
    /* the probe's read loop over the weights as run, per thread count */
    set_bw_by_threads(mo, "weights_read_bandwidth_by_threads", m->weights_read_bw,
                      m->weights_bw_threads);
    /* ... and the probe's buffer read just before, the pages' reference */
    set_bw_by_threads(mo, "reference_read_bandwidth_by_threads", m->weights_ref_bw,
                      m->weights_bw_threads);
    if (mo) json_object_set_new(mo, "weights", json_string(m->info.hugepages ? "copied"
                                                                              : "mapped"));
    /* the prefill batch the engine ran, and the one asked (the memory bound) */
    if (mo) json_object_set_new(mo, "prefill_batch", json_integer(m->info.max_batch));
    if (mo) json_object_set_new(mo, "prefill_batch_asked", json_integer(m->info.max_batch_asked));
    /* whether the weights fit in the caches, and the reading that decided it */
    if (mo) json_object_set_new(mo, "fits_in_caches",
                                m->fit_bw_threads ? json_boolean(m->fits_caches) : json_null());
    set_bw_by_threads(mo, "same_size_read_bandwidth_by_threads", m->fit_read_bw,
                      m->fit_bw_threads);
    /* the main job's copy: what the mapped pages read */
    if (m->copied)
      set_bw_by_threads(mo, "mapped_weights_read_bandwidth_by_threads", m->mapped_read_bw,
                        m->mapped_bw_threads);
    if (m->copied)
      set_bw_by_threads(mo, "mapped_reference_read_bandwidth_by_threads", m->mapped_ref_bw,
                        m->mapped_bw_threads);
    /* ... or the copy it made and dropped, which read slower than the mapping */
    if (m->copy_bw_threads)
      set_bw_by_threads(mo, "copy_weights_read_bandwidth_by_threads", m->copy_read_bw,
                        m->copy_bw_threads);
    if (m->copy_bw_threads)
      set_bw_by_threads(mo, "copy_reference_read_bandwidth_by_threads", m->copy_ref_bw,
                        m->copy_bw_threads);
    json_array_append_new(models, mo);
  }
  json_t *root = json_pack("{s:s, s:s, s:s, s:b, s:i, s:o, s:O, s:O}", "tokmeter",
                           TOKMETER_VERSION, "identity", s->identity, "records_file",
                           s->o->out ? s->o->out : RECORD_DEFAULT_FILE, "probe_quick",
                           s->probe->quick, "runs", (int)s->runs, "models", models, "summaries",
                           s->summaries, "conclusions", s->conclusions);
  /* the findings as data (findings.h; docs/records.md "findings") */
  if (root) json_object_set_new(root, "findings", bench_findings_json(&s->findings));
  /* with a cached probe: its read loop before the runs (the decode ceilings'
   * bandwidth) and what the cache said, per thread count */
  if (s->bw_now_threads) {
    set_bw_by_threads(root, "read_bandwidth_before_by_threads", s->probe->read_bw_bytes_s,
                      s->bw_now_threads);
    set_bw_by_threads(root, "read_bandwidth_cached_by_threads", s->bw_cached,
                      s->bw_now_threads);
  }
  /* the probe's read loop again after the runs, per thread count */
  set_bw_by_threads(root, "read_bandwidth_after_by_threads", s->bw_after, s->bw_after_threads);
  char warn[400];
  if (root && probe_busy_warning(s->probe, warn, sizeof warn))
    json_object_set_new(root, "probe_busy_warning", json_string(warn));
  return root;
}
