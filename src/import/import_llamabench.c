/* import_llamabench: llama-bench JSON / JSONL -> tokmeter records. Contracts
 * in import_llamabench.h; keys in docs/records.md. This file holds the entry
 * (one import, in order), the output's lines and warnings, and the check of
 * a results file before appending; reading llama-bench's formats and building
 * the records have a file each (import_llamabench_internal.h lists them). */
#include "import/import_llamabench.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_llamabench_internal.h"
#include "record/record.h"

/* ------------------------------------------------------------- output --- */

void import_lb_warn(struct import_out *out, const char *fmt, ...) {
  if (out->n_warnings >= IMPORT_MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->warnings[out->n_warnings], sizeof out->warnings[0], fmt, ap);
  va_end(ap);
  /* the same sentence once, however many entries trigger it */
  for (size_t i = 0; i < out->n_warnings; i++)
    if (!strcmp(out->warnings[i], out->warnings[out->n_warnings])) return;
  out->n_warnings++;
}

int import_lb_push(struct import_out *out, json_t *line) {
  if (!line) return -1;
  void **grown = realloc(out->lines, (out->n_lines + 1) * sizeof *grown);
  if (!grown) {
    json_decref(line);
    return -1;
  }
  out->lines = grown;
  out->lines[out->n_lines++] = line;
  return 0;
}

/* -------------------------------------------------------------- entry --- */

int import_llamabench(const char *text, size_t len, const struct import_opts *o,
                      struct import_out *out, struct tm_err *err) {
  memset(out, 0, sizeof *out);
  json_t *root = NULL, *items = NULL;
  struct lb_entry *es = NULL;
  size_t n_es = 0;
  int rc = -1;
  json_t **summaries = NULL;
  size_t n_items = 0;
  size_t *line_of = NULL; /* JSONL: the line of each entry */
  if (import_lb_parse_input(text, len, &root, &items, out->format, &line_of, err) != 0) goto done;
  n_items = json_array_size(items);
  es = calloc(n_items ? n_items : 1, sizeof *es);
  summaries = calloc(n_items ? n_items : 1, sizeof *summaries);
  if (!es || !summaries) {
    tm_errf(err, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n_items; i++) {
    struct lb_entry *e = &es[n_es];
    memset(e, 0, sizeof *e);
    if (!strcmp(out->format, "jsonl") && line_of)
      snprintf(e->where, sizeof e->where, "line %zu (entry %zu)", line_of[i], i);
    else
      snprintf(e->where, sizeof e->where, "entry %zu", i);
    int c = import_lb_check_entry(json_array_get(items, i), e, err);
    n_es++;
    if (c != 0) goto done;
    if (e->avg_only)
      import_lb_warn(out,
                     "no samples_ns (an older llama-bench): one run per test, at its mean time");
    if (e->n_prompt > 0 && e->n_gen > 0) {
      out->n_skipped_combined++;
      free(e->ns);
      n_es--;
      continue;
    }
    if (e->n_prompt == 0 && e->n_gen == 0) {
      tm_errf(err, "%s: n_prompt and n_gen are both 0", e->where);
      goto done;
    }
  }
  if (out->n_skipped_combined)
    import_lb_warn(out, "%zu combined pp+tg test%s skipped: one rate over prompt and generated "
                        "tokens blends prefill and decode",
                   out->n_skipped_combined, out->n_skipped_combined == 1 ? "" : "s");
  if (n_es == 0) {
    rc = 0;
    goto done;
  }
  char id[RECORD_ID_LEN + 1];
  json_t *ident = import_lb_identity_build(o, es, n_es, out->format, id, err);
  if (!ident || import_lb_push(out, ident) != 0) {
    if (ident) tm_errf(err, "out of memory");
    goto done;
  }
  if (o->cost) {
    /* The GGUF given should be the file llama-bench ran: its model_size is
     * the tensor bytes. */
    json_t *ms = json_object_get(es[0].obj, "model_size");
    if (ms && json_is_integer(ms) && (uint64_t)json_integer_value(ms) != o->cost->bytes_total)
      import_lb_warn(out, "%s holds %llu tensor bytes, llama-bench's model %llu: ceilings are "
                          "for a different file",
                     o->model_file ? o->model_file : "the model file",
                     (unsigned long long)o->cost->bytes_total,
                     (unsigned long long)json_integer_value(ms));
  }
  for (size_t i = 0; i < n_es; i++) {
    if (import_lb_build_entry(o, id, &es[i], out, &summaries[i]) != 0) {
      tm_errf(err, "out of memory");
      goto done;
    }
    out->n_tests++;
  }
  for (size_t i = 0; i < n_es; i++) {
    int p = import_lb_push(out, summaries[i]);
    summaries[i] = NULL;
    if (p != 0) {
      tm_errf(err, "out of memory");
      goto done;
    }
  }
  if (import_lb_push(out, import_lb_end_build(id, out->n_runs)) != 0) {
    tm_errf(err, "out of memory");
    goto done;
  }
  rc = 0;
done:
  for (size_t i = 0; i < n_es; i++) free(es[i].ns);
  free(es);
  if (summaries)
    for (size_t i = 0; i < n_items; i++)
      if (summaries[i]) json_decref(summaries[i]);
  free(summaries);
  free(line_of);
  json_decref(items);
  json_decref(root);
  if (rc != 0) import_out_free(out);
  return rc;
}

void import_out_free(struct import_out *out) {
  if (!out) return;
  for (size_t i = 0; i < out->n_lines; i++) json_decref(out->lines[i]);
  free(out->lines);
  memset(out, 0, sizeof *out);
}
