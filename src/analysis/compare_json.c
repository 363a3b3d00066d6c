/* compare_json: the --json document of `tokmeter compare` (keys:
 * docs/compare.md), built from compare_series' result. Nothing is computed or
 * printed here but the ceiling notes (series_ceiling_note); the caller dumps
 * the object (JSON_INDENT(2) | JSON_REAL_PRECISION(10)). A figure that is not
 * finite is null (record_json_num); the seed is an integer, stored exactly. */
#include <jansson.h>
#include <math.h>

#include "analysis/compare.h"
#include "record/record.h"

/* {n, median, mean, sd, min, max} of one side, each as computed (sd null
 * only when it is not finite, unlike record_stats_json). */
static json_t *summary_json(const struct stats_summary *s) {
  return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)s->n, "median",
                   record_json_num(s->median), "mean", record_json_num(s->mean), "sd",
                   record_json_num(s->sd), "min", record_json_num(s->min), "max",
                   record_json_num(s->max));
}

static json_t *note_json(const struct series *s) {
  char note[256];
  return series_ceiling_note(s, note, sizeof note) ? json_string(note) : json_null();
}

static json_t *row_json(const struct compare_row *row) {
  json_t *ci = json_pack("{s:o,s:o,s:o,s:o}", "lo", record_json_num(row->ci_ok ? row->ci.lo : NAN),
                         "hi", record_json_num(row->ci_ok ? row->ci.hi : NAN), "df",
                         record_json_num(row->ci.df), "t", record_json_num(row->ci.t));
  json_t *j = json_pack(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:o,s:o,s:o,s:o,s:s,s:o,s:o,s:{s:o,s:o}}", "key_a",
      row->a->key, "key_b", row->b->key, "differs", row->differs, "metric", record_metric_name(row->a->metric),
      "quantity", row->a->quantity, "unit", row->a->unit, "lower_is_better",
      row->lower_is_better, "a", summary_json(&row->sa), "b", summary_json(&row->sb), "ratio",
      record_json_num(row->ci.ratio), "ci", ci, "verdict", compare_verdict_name(row->verdict),
      "predicted_ratio", record_json_num(row->predicted_ratio), "predicted_from",
      record_json_str(row->predicted_from), "drift", "a",
      (json_t *)record_drift_json(&row->drift_a, row->drift_a_ok), "b",
      (json_t *)record_drift_json(&row->drift_b, row->drift_b_ok));
  if (j && (json_object_set_new(j, "ceiling_note_a", note_json(row->a)) ||
            json_object_set_new(j, "ceiling_note_b", note_json(row->b)))) {
    json_decref(j);
    j = NULL;
  }
  return j;
}

json_t *compare_json(const struct compare_result *cr, const char *path_a, const char *path_b,
                     const struct compare_opts *o) {
  json_t *rows = json_array();
  if (!rows) return NULL;
  for (size_t i = 0; i < cr->n; i++) {
    json_t *j = row_json(&cr->rows[i]);
    if (!j || json_array_append_new(rows, j)) {
      json_decref(rows);
      return NULL;
    }
  }
  return json_pack("{s:s,s:s,s:f,s:s,s:I,s:I,s:o,s:I,s:I}", "a", path_a, "b", path_b,
                   "confidence", o->confidence, "method",
                   o->method == STATS_CI_WELCH ? "welch" : "bootstrap", "resamples",
                   (json_int_t)(o->resamples ? o->resamples : STATS_BOOTSTRAP_RESAMPLES), "seed",
                   (json_int_t)o->seed, "rows", rows, "only_a", (json_int_t)cr->only_a, "only_b",
                   (json_int_t)cr->only_b);
}
