/* keys: see keys.h. */
#include "record/keys.h"

#include <math.h>
#include <string.h>

static const char *const paths[RK_COUNT] = {
#define RECORD_KEY_PATH(id, path) [id] = path,
    RECORD_KEYS(RECORD_KEY_PATH)
#undef RECORD_KEY_PATH
};

const char *record_key(enum record_key k) { return (unsigned)k < RK_COUNT ? paths[k] : ""; }

const char *record_key_leaf(enum record_key k) {
  const char *p = record_key(k), *dot = strrchr(p, '.');
  return dot ? dot + 1 : p;
}

json_t *record_get(const json_t *rec, enum record_key k) {
  return record_get_path(rec, record_key(k));
}

json_t *record_get_path(const json_t *rec, const char *dotted) {
  char part[128];
  const char *p = dotted;
  json_t *cur = (json_t *)rec;
  while (cur && *p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (len >= sizeof part) return NULL;
    memcpy(part, p, len);
    part[len] = '\0';
    cur = json_is_object(cur) ? json_object_get(cur, part) : NULL;
    p = dot ? dot + 1 : p + len;
  }
  return cur;
}

double record_num(const json_t *rec, enum record_key k) {
  json_t *v = record_get(rec, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *record_str(const json_t *rec, enum record_key k) {
  return json_string_value(record_get(rec, k));
}

long long record_int(const json_t *rec, enum record_key k, long long def) {
  json_t *v = record_get(rec, k);
  return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

bool record_true(const json_t *rec, enum record_key k) { return json_is_true(record_get(rec, k)); }

struct metric_row {
  const char *name, *quantity, *unit;
};
static const struct metric_row metrics[METRIC_COUNT] = {
#define RECORD_METRIC_ROW(id, name, quantity, unit) [id] = {name, quantity, unit},
    RECORD_METRICS(RECORD_METRIC_ROW)
#undef RECORD_METRIC_ROW
};

static const struct metric_row *metric_row(enum record_metric m) {
  static const struct metric_row none = {"", "", ""};
  return (unsigned)m < METRIC_COUNT ? &metrics[m] : &none;
}

const char *record_metric_name(enum record_metric m) { return metric_row(m)->name; }
const char *record_metric_quantity(enum record_metric m) { return metric_row(m)->quantity; }
const char *record_metric_unit(enum record_metric m) { return metric_row(m)->unit; }
bool record_metric_lower_is_better(enum record_metric m) {
  return strcmp(metric_row(m)->unit, "ms") == 0;
}

enum record_metric record_metric_from_name(const char *name) {
  for (int m = 0; name && m < METRIC_COUNT; m++)
    if (strcmp(metrics[m].name, name) == 0) return (enum record_metric)m;
  return METRIC_COUNT;
}
