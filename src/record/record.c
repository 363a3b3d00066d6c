/* record: the JSON Lines writer, ids, times, redaction and the identity
 * record. Contracts in record.h; key meanings in docs/records.md. */
#include "record/keys.h"
#include "record/record.h"
#include "util/paths.h"
#include "util/redact.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* Reals are printed with 12 significant digits: enough for ns-derived ms and
 * rates, and short decimals (196.2) read back as the same double. Key order
 * is insertion order (jansson >= 2.8). */
#define RECORD_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

struct record_file {
  int fd;
  uint64_t lines;
  uint64_t failures;
  char path[512];
};

struct record_file *record_open(const char *path, struct tm_err *err) {
  if (!path || !*path) {
    tm_errf(err, "records: empty file name");
    return NULL;
  }
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    tm_errf(err, "records: cannot open %s for appending: %s", path, strerror(errno));
    return NULL;
  }
  struct record_file *f = calloc(1, sizeof *f);
  if (!f) {
    close(fd);
    tm_errf(err, "records: out of memory opening %s", path);
    return NULL;
  }
  f->fd = fd;
  snprintf(f->path, sizeof f->path, "%s", path);
  return f;
}

/* Whether the open, non-empty regular file f holds tokmeter records: its
 * first non-blank line (read up to RESULTS_LINE_MAX bytes) is a JSON object
 * with a "record" string, and its last byte is a newline. NULL when it does,
 * else why not (a static string). */
#define RESULTS_LINE_MAX (1u << 20)
/* the one refusal a repair can lift (compared by address) */
static const char why_cut[] = "its last line is cut (no newline at the end)";

static const char *not_results_why(FILE *f) {
  char *buf = malloc(RESULTS_LINE_MAX);
  if (!buf) return "out of memory reading it";
  size_t n = 0;
  int c;
  bool nul = false, any = false, whole = false;
  while ((c = fgetc(f)) != EOF) {
    if (c == '\n') {
      if (n) {
        whole = true;
        break;
      }
      continue;
    }
    if (!n && isspace(c)) continue;
    any = true;
    if (c == 0) nul = true;
    if (n == RESULTS_LINE_MAX) break;
    buf[n++] = (char)c;
  }
  const char *why = NULL;
  if (ferror(f)) {
    why = "it cannot be read";
  } else if (any) {
    /* A line past the cap is no record tokmeter writes first (an identity
     * line is a few KiB): parsing the cut prefix fails, as it should. */
    json_t *v = nul || (!whole && n == RESULTS_LINE_MAX) ? NULL : json_loadb(buf, n, 0, NULL);
    if (!v || !json_is_object(v)) why = "its first line is not a JSON object";
    else if (!json_is_string(json_object_get(v, "record")))
      why = "its first line is not a tokmeter record";
    json_decref(v);
    /* A last line without its newline (cut by a crash of another writer, or
     * an editor): the next record would glue onto it. tokmeter's own writer
     * never leaves one (record_write cuts a torn line off again). */
    if (!why && (fseek(f, -1, SEEK_END) != 0 || fgetc(f) != '\n')) why = why_cut;
  }
  free(buf);
  return why;
}

int record_repair_torn(const char *path, uint64_t *dropped, struct tm_err *err) {
  *dropped = 0;
  int fd = open(path, O_RDWR);
  if (fd < 0) return errno == ENOENT ? 0 : tm_errf(err, "records: cannot open %s: %s", path,
                                                     strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    close(fd);
    return 0; /* nothing a repair could mean */
  }
  /* back from the end to the last newline, in blocks */
  char buf[4096];
  off_t end = st.st_size, keep = 0;
  bool found = false;
  while (end > 0 && !found) {
    const off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
    const ssize_t n = pread(fd, buf, (size_t)(end - from), from);
    if (n <= 0) {
      close(fd);
      return tm_errf(err, "records: cannot read %s: %s", path, strerror(errno));
    }
    for (ssize_t i = n - 1; i >= 0; i--)
      if (buf[i] == '\n') {
        keep = from + i + 1;
        found = true;
        break;
      }
    end = from;
  }
  if (keep == st.st_size) { /* the last line is whole */
    close(fd);
    return 0;
  }
  if (ftruncate(fd, keep) != 0) {
    close(fd);
    return tm_errf(err, "records: cannot cut %s back to %lld bytes: %s", path, (long long)keep,
                   strerror(errno));
  }
  close(fd);
  *dropped = (uint64_t)(st.st_size - keep);
  return 0;
}

int record_check_writable(const char *path, struct tm_err *err) {
  if (!path || !*path) return tm_errf(err, "records: empty file name");
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return tm_errf(err, "records: %s is a directory", path);
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
      return tm_errf(err, "records: %s is not a regular file", path);
    if (access(path, W_OK) != 0)
      return tm_errf(err, "records: cannot write %s: %s", path, strerror(errno));
    /* A character device (/dev/stdout, /dev/null) is never read; /dev/full
     * (Linux: major 1, minor 7) refuses every write, so no record would be
     * kept: refused now rather than after a model is loaded. */
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 7)
      return tm_errf(err, "records: %s refuses every write (no space on the device)", path);
    if (!S_ISREG(st.st_mode)) return 0;
    /* A regular file is read even when its size says 0: /proc and /sys files
     * report 0 and hold text (/proc/version), which is no results file. */
    FILE *f = fopen(path, "rb");
    if (!f) return tm_errf(err, "records: cannot read %s: %s", path, strerror(errno));
    const char *why = not_results_why(f);
    fclose(f);
    if (why)
      return tm_errf(err, "records: %s: not a tokmeter results file (%s): refusing to append; "
                          "give a new file or a tokmeter results file%s",
                     path, why,
                     why == why_cut ? " (bench --repair drops the cut line)" : "");
    return 0;
  }
  if (errno != ENOENT) return tm_errf(err, "records: cannot use %s: %s", path, strerror(errno));
  /* A new file: its directory must exist and take new entries. */
  char dir[4096];
  if (!tm_parent_dir_exists(path, dir, sizeof dir))
    return tm_errf(err, "records: cannot create %s: no directory %s", path, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return tm_errf(err, "records: cannot create %s in %s: %s", path, dir, strerror(errno));
  return 0;
}

char *record_dump(const void *json) {
  if (!json) return NULL;
  return json_dumps((const json_t *)json, RECORD_DUMP_FLAGS);
}

int record_write(struct record_file *f, void *json, struct tm_err *err) {
  json_t *j = json;
  if (!f) {
    json_decref(j);
    return tm_errf(err, "records: file not open");
  }
  f->failures++; /* until the line is down */
  if (!j) return tm_errf(err, "records: out of memory building a record for %s", f->path);
  char *s = record_dump(j);
  json_decref(j);
  if (!s) return tm_errf(err, "records: out of memory writing %s", f->path);
  size_t len = strlen(s);
  /* One buffer, line + newline, so one write(2) puts the whole line down
   * (O_APPEND: even two tokmeter processes appending do not interleave
   * within a line of ordinary size). */
  char *line = realloc(s, len + 2);
  if (!line) {
    free(s);
    return tm_errf(err, "records: out of memory writing %s", f->path);
  }
  line[len] = '\n';
  line[len + 1] = 0;
  /* Where the line starts, to cut a torn line off again (O_APPEND writes at
   * the end; a character device such as /dev/stdout has no size to restore). */
  struct stat st;
  bool regular = fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode);
  off_t before = regular ? st.st_size : 0;
  size_t off = 0, total = len + 1;
  while (off < total) {
    ssize_t w = write(f->fd, line + off, total - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      free(line);
      if (off > 0 && regular && ftruncate(f->fd, before) != 0)
        return tm_errf(err, "records: cannot write %s: %s; the last line is torn (%zu of %zu "
                            "bytes) and could not be removed: %s",
                       f->path, strerror(e), off, total, strerror(errno));
      return tm_errf(err, "records: cannot write %s: %s (the record was not kept)", f->path,
                     strerror(e));
    }
    off += (size_t)w;
  }
  free(line);
  f->lines++;
  f->failures--;
  return 0;
}

uint64_t record_write_failures(const struct record_file *f) { return f ? f->failures : 0; }

uint64_t record_lines_written(const struct record_file *f) { return f ? f->lines : 0; }

void record_close(struct record_file *f) {
  if (!f) return;
  close(f->fd);
  free(f);
}

/* ------------------------------------------------------------- pieces --- */

int record_new_id(char out[RECORD_ID_LEN + 1], struct tm_err *err) {
  unsigned char raw[RECORD_ID_LEN / 2];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tm_errf(err, "records: cannot open /dev/urandom: %s", strerror(errno));
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t r = read(fd, raw + got, sizeof raw - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      close(fd);
      return tm_errf(err, "records: cannot read /dev/urandom");
    }
    got += (size_t)r;
  }
  close(fd);
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof raw; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[RECORD_ID_LEN] = 0;
  return 0;
}

void record_time_utc(char out[32]) {
  time_t now = time(NULL);
  struct tm tmv;
  if (!gmtime_r(&now, &tmv) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv) == 0)
    snprintf(out, 32, "1970-01-01T00:00:00Z");
}

void record_redact_url(const char *url, char *out, size_t n) {
  if (!n) return;
  out[0] = 0;
  if (!url) return;
  /* Scheme ("http://"), then authority up to the first '/', '?' or '#'. */
  const char *p = url;
  const char *scheme_end = strstr(url, "://");
  size_t o = 0;
#define PUT(c)                 \
  do {                         \
    if (o + 1 < n) out[o++] = (c); \
  } while (0)
  if (scheme_end) {
    for (; p < scheme_end + 3; p++) PUT(*p);
  }
  const char *auth_end = p + strcspn(p, "/?#");
  const char *at = NULL;
  for (const char *q = p; q < auth_end; q++)
    if (*q == '@') at = q;
  if (at) p = at + 1;
  for (; *p && *p != '?' && *p != '#'; p++) PUT(*p);
#undef PUT
  out[o] = 0;
}

void record_redact_secrets(char *msg, size_t cap) { tm_redact(msg, cap, NULL); }

void *record_json_num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

void *record_json_count(int64_t v) { return v < 0 ? json_null() : json_integer((json_int_t)v); }

void *record_json_str(const char *s) { return s && *s ? json_string(s) : json_null(); }

int record_json_set(void *obj, const char *key, void *value) {
  if (!value) return 1;
  if (!obj) {
    json_decref((json_t *)value);
    return 1;
  }
  return json_object_set_new((json_t *)obj, key, (json_t *)value) != 0;
}

#define str_or_null record_json_str
#define put record_json_set

void *record_head_json(const char *kind, const char *identity, const char *time) {
  char now[32];
  if (!time) {
    record_time_utc(now);
    time = now;
  }
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_RECORD), json_string(kind));
  bad |= put(o, record_key_leaf(RK_SCHEMA), json_integer(RECORD_SCHEMA));
  bad |= put(o, record_key_leaf(RK_IDENTITY), str_or_null(identity));
  bad |= put(o, record_key_leaf(RK_TIME), json_string(time));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_stats_json(const struct stats_summary *s) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "n", json_integer((json_int_t)s->n));
  bad |= put(o, record_key_leaf(RK_RATE_TOK_S_MEDIAN), record_json_num(s->n ? s->median : NAN));
  bad |= put(o, "mean", record_json_num(s->n ? s->mean : NAN));
  bad |= put(o, "sd", record_json_num(s->n > 1 ? s->sd : NAN));
  bad |= put(o, "min", record_json_num(s->n ? s->min : NAN));
  bad |= put(o, "max", record_json_num(s->n ? s->max : NAN));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_drift_json(const struct stats_drift *d, bool tested) {
  if (!tested) return json_null();
  return json_pack("{s:I,s:b,s:o,s:o,s:o}", "n", (json_int_t)d->n, "slower", d->slower,
                   "change", record_json_num(d->change), "t", record_json_num(d->t), "t_crit",
                   record_json_num(d->t_crit));
}

void *record_machine_json(const struct machine_info *m) {
  if (!m) return json_null();
  json_t *o = json_object();
  json_t *flags = json_array();
  if (!o || !flags) {
    json_decref(o);
    json_decref(flags);
    return NULL;
  }
  int bad = 0;
  for (uint32_t i = 0; i < m->n_flags && i < PROBE_MAX_FLAGS; i++)
    bad |= json_array_append_new(flags, json_string(m->flags[i])) != 0;
  bad |= put(o, record_key_leaf(RK_MACHINE_CPU), json_string(m->cpu_model));
  bad |= put(o, "arch", json_string(m->arch));
  bad |= put(o, record_key_leaf(RK_MACHINE_CORES), json_integer(m->cpus));
  bad |= put(o, "memory_bytes", json_integer((json_int_t)m->memory_bytes));
  bad |= put(o, "memory_available_bytes", json_integer((json_int_t)m->memory_available_bytes));
  bad |= put(o, "llc_bytes", m->llc_bytes ? json_integer((json_int_t)m->llc_bytes) : json_null());
  bad |= put(o, "os", json_string(m->os));
  bad |= put(o, "flags", flags);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_thermal_json(const struct machine_thermal *t) {
  if (!t) return json_null();
  json_t *o = json_object(), *temps = json_array(), *freqs = json_array();
  if (!o || !temps || !freqs) {
    json_decref(o);
    json_decref(temps);
    json_decref(freqs);
    return NULL;
  }
  int bad = 0;
  for (uint32_t i = 0; i < t->n_temps && i < PROBE_MAX_SENSORS; i++) {
    json_t *e = json_object();
    if (!e) {
      bad = 1;
      break;
    }
    bad |= put(e, "name", json_string(t->temps[i].name));
    bad |= put(e, record_key_leaf(RK_TEMP_CELSIUS), record_json_num(t->temps[i].celsius));
    bad |= json_array_append_new(temps, e) != 0;
  }
  for (uint32_t i = 0; i < t->n_freqs && i < PROBE_MAX_SENSORS; i++)
    bad |= json_array_append_new(freqs, record_json_num(t->freq_mhz[i])) != 0;
  bad |= put(o, "readable", json_boolean(t->readable));
  bad |= put(o, "temps", temps);
  bad |= put(o, "freqs_mhz", freqs);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

struct record_ceiling record_ceiling_none(void) {
  return (struct record_ceiling){.decode_ceiling_tok_s = NAN, .prefill_ceiling_tok_s = NAN,
                                 .read_bandwidth_bytes_s = NAN, .bytes_per_token = NAN,
                                 .flops_per_token = NAN, .compute_ops_s = NAN,
                                 .compute_path = NULL};
}

/* A ceiling's part: null unless a figure above 0 (a zero here is an unset
 * field, never a measurement). */
static json_t *part_num(double v) { return v > 0 && isfinite(v) ? json_real(v) : json_null(); }

void *record_ceiling_json(const struct record_ceiling *c) {
  if (!c) return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_CEILING_DECODE_TOK_S), record_json_num(c->decode_ceiling_tok_s));
  bad |= put(o, record_key_leaf(RK_CEILING_PREFILL_TOK_S), record_json_num(c->prefill_ceiling_tok_s));
  bad |= put(o, record_key_leaf(RK_CEILING_READ_BANDWIDTH), record_json_num(c->read_bandwidth_bytes_s));
  bad |= put(o, record_key_leaf(RK_CEILING_BYTES_PER_TOKEN), part_num(c->bytes_per_token));
  bad |= put(o, record_key_leaf(RK_CEILING_FLOPS_PER_TOKEN), part_num(c->flops_per_token));
  bad |= put(o, record_key_leaf(RK_CEILING_COMPUTE_OPS), part_num(c->compute_ops_s));
  bad |= put(o, "compute_path", c->compute_path ? json_string(c->compute_path) : json_null());
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

double record_percent_of(double rate, double ceiling) {
  if (!isfinite(rate) || !isfinite(ceiling) || ceiling <= 0) return NAN;
  return 100.0 * rate / ceiling;
}

/* --------------------------------------------------------- identity --- */

static json_t *model_json(const struct record_model *m) {
  if (!m) return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, record_key_leaf(RK_MODEL_NAME), str_or_null(m->name));
  bad |= put(o, record_key_leaf(RK_MODEL_FILE), str_or_null(m->file));
  bad |= put(o, record_key_leaf(RK_MODEL_ARCH), str_or_null(m->arch));
  bad |= put(o, record_key_leaf(RK_MODEL_TYPE), str_or_null(m->type));
  /* bytes per token is a whole number of bytes in the ceiling's arithmetic. */
  bad |= put(o, record_key_leaf(RK_MODEL_BYTES_PER_TOKEN), isfinite(m->bytes_per_token) && m->bytes_per_token >= 0
                                       ? json_integer((json_int_t)llround(m->bytes_per_token))
                                       : json_null());
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *server_json(const struct server_info *s) {
  if (!s) return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= put(o, "kind", str_or_null(s->kind));
  bad |= put(o, "build", str_or_null(s->build));
  bad |= put(o, record_key_leaf(RK_MODEL), str_or_null(s->model));
  bad |= put(o, "system_info", str_or_null(s->system_info));
  bad |= put(o, "n_ctx", s->n_ctx ? json_integer(s->n_ctx) : json_null());
  bad |= put(o, "has_tokenize", json_boolean(s->has_tokenize));
  bad |= put(o, "tokenize_error", str_or_null(s->tokenize_error));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void *record_identity_build(const struct record_identity_in *in,
                            char id_out[RECORD_ID_LEN + 1], struct tm_err *err) {
  char id[RECORD_ID_LEN + 1], when[32], target[512];
  if (record_new_id(id, err)) return NULL;
  record_time_utc(when);
  record_redact_url(in->target, target, sizeof target);

  json_t *settings = in->settings ? json_deep_copy((const json_t *)in->settings) : json_object();
  json_t *command = json_null();
  if (in->command) {
    /* Scrubbed whole (secrets, user:password@ of URLs), and valid UTF-8
     * whatever bytes the arguments held. */
    char *buf = tm_redact_dup(in->command, strlen(in->command), NULL, NULL);
    json_decref(command);
    command = buf ? json_string(buf) : NULL;
    free(buf);
  }

  json_t *o = json_object();
  int bad = !o;
  if (o) {
    bad |= put(o, record_key_leaf(RK_RECORD), json_string("identity"));
    bad |= put(o, record_key_leaf(RK_SCHEMA), json_integer(RECORD_SCHEMA));
    bad |= put(o, "id", json_string(id));
    bad |= put(o, record_key_leaf(RK_TIME), json_string(when));
    bad |= put(o, "tokmeter", str_or_null(in->tokmeter_version));
    bad |= put(o, record_key_leaf(RK_COMMAND), command);
    command = NULL;
    bad |= put(o, record_key_leaf(RK_BACKEND), str_or_null(in->backend));
    bad |= put(o, record_key_leaf(RK_TARGET), str_or_null(target));
    bad |= put(o, record_key_leaf(RK_MODEL), model_json(in->model));
    bad |= put(o, record_key_leaf(RK_SERVER), server_json(in->server));
    bad |= put(o, record_key_leaf(RK_MACHINE), record_machine_json(in->machine));
    bad |= put(o, record_key_leaf(RK_THERMAL_BEFORE), record_thermal_json(in->thermal_before));
    bad |= put(o, record_key_leaf(RK_SETTINGS), settings);
    settings = NULL;
  }
  json_decref(command);
  json_decref(settings);
  if (bad) {
    json_decref(o);
    tm_errf(err, "records: out of memory building the identity record");
    return NULL;
  }
  if (id_out) memcpy(id_out, id, sizeof id);
  return o;
}
