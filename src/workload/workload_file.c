/* workload_file: see workload_file.h. */
#include "workload/workload_file.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool workload_is_file(const char *arg) {
  size_t n = arg ? strlen(arg) : 0;
  return n > 6 && !strcmp(arg + n - 6, ".jsonl");
}

static int failf(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- images ------------------------------------------------------------- */

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p) { return be16(p) << 16 | be16(p + 2); }
static uint32_t le16(const uint8_t *p) { return (uint32_t)p[1] << 8 | p[0]; }
static uint32_t le24(const uint8_t *p) { return le16(p) | (uint32_t)p[2] << 16; }

/* The type and, where the header gives it, the size of an image file from
 * its first bytes (h, n of them). False: not an image type servers take. */
static bool sniff_image(const uint8_t *h, size_t n, FILE *f, struct wl_image *im) {
  if (n >= 24 && !memcmp(h, "\x89PNG\r\n\x1a\n", 8)) {
    strcpy(im->mime, "image/png");
    if (!memcmp(h + 12, "IHDR", 4)) im->width = be32(h + 16), im->height = be32(h + 20);
    return true;
  }
  if (n >= 10 && (!memcmp(h, "GIF87a", 6) || !memcmp(h, "GIF89a", 6))) {
    strcpy(im->mime, "image/gif");
    im->width = le16(h + 6);
    im->height = le16(h + 8);
    return true;
  }
  if (n >= 30 && !memcmp(h, "RIFF", 4) && !memcmp(h + 8, "WEBP", 4)) {
    strcpy(im->mime, "image/webp");
    if (!memcmp(h + 12, "VP8X", 4)) {
      im->width = le24(h + 24) + 1;
      im->height = le24(h + 27) + 1;
    } else if (!memcmp(h + 12, "VP8L", 4) && h[20] == 0x2f) {
      const uint32_t b = h[21] | (uint32_t)h[22] << 8 | (uint32_t)h[23] << 16 | (uint32_t)h[24] << 24;
      im->width = (b & 0x3fff) + 1;
      im->height = ((b >> 14) & 0x3fff) + 1;
    } else if (!memcmp(h + 12, "VP8 ", 4) && h[23] == 0x9d && h[24] == 0x01 && h[25] == 0x2a) {
      im->width = le16(h + 26) & 0x3fff;
      im->height = le16(h + 28) & 0x3fff;
    }
    return true;
  }
  if (n >= 3 && h[0] == 0xff && h[1] == 0xd8 && h[2] == 0xff) {
    strcpy(im->mime, "image/jpeg");
    /* walk the segments to the first start-of-frame for the size */
    if (fseek(f, 2, SEEK_SET) != 0) return true;
    for (int guard = 0; guard < 4096; guard++) {
      uint8_t m[9];
      if (fread(m, 1, 4, f) != 4 || m[0] != 0xff) break;
      const uint8_t t = m[1];
      const long len = (long)be16(m + 2);
      if (t >= 0xc0 && t <= 0xcf && t != 0xc4 && t != 0xc8 && t != 0xcc) {
        if (fread(m + 4, 1, 5, f) == 5) im->height = be16(m + 5), im->width = be16(m + 7);
        break;
      }
      if (len < 2 || fseek(f, len - 2, SEEK_CUR) != 0) break;
    }
    return true;
  }
  return false;
}

static bool is_url(const char *s) {
  return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) || !strncmp(s, "data:", 5);
}

/* Resolves and checks one image entry. */
static int image_load(const char *dir, const char *src, struct wl_image *im, char *why,
                      size_t whyn) {
  memset(im, 0, sizeof *im);
  im->source = strdup(src);
  if (!im->source) return failf(why, whyn, "out of memory");
  if (is_url(src)) {
    if (!strncmp(src, "data:", 5) && !strstr(src, ";base64,"))
      return failf(why, whyn, "image \"%.60s\": a data URL must be base64 (data:TYPE;base64,...)", src);
    im->url = strdup(src);
    return im->url ? 0 : failf(why, whyn, "out of memory");
  }
  if (src[0] == '/') im->path = strdup(src);
  else if (asprintf(&im->path, "%s/%s", dir, src) < 0) im->path = NULL;
  if (!im->path) return failf(why, whyn, "out of memory");
  FILE *f = fopen(im->path, "rb");
  if (!f) return failf(why, whyn, "image \"%s\": %s", src, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return failf(why, whyn, "image \"%s\": not a regular file", src);
  }
  im->bytes = (uint64_t)st.st_size;
  uint8_t h[32];
  size_t n = fread(h, 1, sizeof h, f);
  const bool ok = sniff_image(h, n, f, im);
  fclose(f);
  if (!ok)
    return failf(why, whyn, "image \"%s\": not a PNG, JPEG, GIF or WebP file (%s)", src,
                 n ? "unknown first bytes" : "empty");
  return 0;
}

static char *base64(const uint8_t *d, size_t n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *o = malloc((n + 2) / 3 * 4 + 1);
  if (!o) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                       (i + 2 < n ? d[i + 2] : 0);
    o[w++] = t[v >> 18 & 63];
    o[w++] = t[v >> 12 & 63];
    o[w++] = i + 1 < n ? t[v >> 6 & 63] : '=';
    o[w++] = i + 2 < n ? t[v & 63] : '=';
  }
  o[w] = '\0';
  return o;
}

char *wl_image_url(const struct wl_image *im, char *err, size_t errn) {
  if (im->url) return strdup(im->url);
  FILE *f = fopen(im->path, "rb");
  if (!f) {
    failf(err, errn, "image \"%s\": %s", im->source, strerror(errno));
    return NULL;
  }
  uint8_t *d = malloc(im->bytes ? im->bytes : 1);
  const size_t got = d ? fread(d, 1, im->bytes, f) : 0;
  fclose(f);
  if (!d || got != im->bytes) {
    free(d);
    failf(err, errn, "image \"%s\": changed or unreadable since the workload was read", im->source);
    return NULL;
  }
  char *b = base64(d, got);
  free(d);
  char *url = NULL;
  if (!b || asprintf(&url, "data:%s;base64,%s", im->mime, b) < 0) url = NULL;
  free(b);
  if (!url) failf(err, errn, "out of memory");
  return url;
}

/* ---- jobs --------------------------------------------------------------- */

static void job_free(struct wl_job *j) {
  free(j->name);
  for (size_t i = 0; i < j->n_messages; i++) {
    free(j->messages[i].role);
    free(j->messages[i].content);
  }
  free(j->messages);
  for (size_t i = 0; i < j->n_images; i++) {
    free(j->images[i].source);
    free(j->images[i].path);
    free(j->images[i].url);
  }
  free(j->images);
  expect_free(&j->expect);
  memset(j, 0, sizeof *j);
}

static int add_message(struct wl_job *j, const char *role, const char *content) {
  struct wl_message *m = realloc(j->messages, (j->n_messages + 1) * sizeof *m);
  if (!m) return -1;
  j->messages = m;
  m[j->n_messages].role = strdup(role);
  m[j->n_messages].content = strdup(content);
  j->n_messages++;
  return m[j->n_messages - 1].role && m[j->n_messages - 1].content ? 0 : -1;
}

static const char *const job_keys[] = {"name",   "prompt", "messages", "system",
                                       "images", "max_tokens", "expect", "repeat"};

/* A positive integer field (absent: 0). */
static int positive(const json_t *o, const char *key, int64_t max, int64_t *out, char *why,
                    size_t whyn) {
  const json_t *v = json_object_get(o, key);
  *out = 0;
  if (!v) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
    return failf(why, whyn, "\"%s\" must be an integer from 1 to %lld", key, (long long)max);
  *out = json_integer_value(v);
  return 0;
}

/* One line's job; why gets what is wrong (no file or line). */
static int job_parse(const json_t *o, const char *dir, struct wl_job *j, char *why, size_t whyn) {
  if (!json_is_object(o)) return failf(why, whyn, "a line must be a JSON object (one job)");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)o, key, val) {
    bool known = false;
    for (size_t i = 0; i < sizeof job_keys / sizeof job_keys[0]; i++) known |= !strcmp(key, job_keys[i]);
    if (!known)
      return failf(why, whyn,
                   "unknown field \"%s\" (name, prompt, messages, system, images, max_tokens, "
                   "expect, repeat)",
                   key);
  }
  const json_t *name = json_object_get(o, "name");
  if (!name) return failf(why, whyn, "missing \"name\"");
  if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > 31)
    return failf(why, whyn, "\"name\" must be a string of 1 to 31 bytes (it names the workload in tables and records)");
  j->name = strdup(json_string_value(name));
  const json_t *prompt = json_object_get(o, "prompt"), *msgs = json_object_get(o, "messages");
  const json_t *sys = json_object_get(o, "system");
  if (!j->name) return failf(why, whyn, "out of memory");
  if (!prompt == !msgs) return failf(why, whyn, "give \"prompt\" or \"messages\", exactly one of them");
  if (sys) {
    if (!json_is_string(sys)) return failf(why, whyn, "\"system\" must be a string");
    if (add_message(j, "system", json_string_value(sys)) != 0) return failf(why, whyn, "out of memory");
  }
  if (prompt) {
    if (!json_is_string(prompt) || json_string_length(prompt) == 0)
      return failf(why, whyn, "\"prompt\" must be a non-empty string");
    if (add_message(j, "user", json_string_value(prompt)) != 0) return failf(why, whyn, "out of memory");
    j->from_prompt = true;
  } else {
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
      return failf(why, whyn, "\"messages\" must be a non-empty array of {\"role\", \"content\"}");
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
      const json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
      if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content) ||
          json_object_size(m) != 2)
        return failf(why, whyn, "messages[%zu] must be {\"role\": string, \"content\": string}", i);
      const char *r = json_string_value(role);
      if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant"))
        return failf(why, whyn, "messages[%zu]: role \"%s\" is not system, user or assistant", i, r);
      if (add_message(j, r, json_string_value(content)) != 0) return failf(why, whyn, "out of memory");
    }
    if (strcmp(j->messages[j->n_messages - 1].role, "user"))
      return failf(why, whyn, "the last of \"messages\" must be the user's (the turn to answer)");
  }
  const json_t *imgs = json_object_get(o, "images");
  if (imgs) {
    if (!json_is_array(imgs) || json_array_size(imgs) == 0)
      return failf(why, whyn, "\"images\" must be a non-empty array of paths or URLs");
    j->images = calloc(json_array_size(imgs), sizeof *j->images);
    if (!j->images) return failf(why, whyn, "out of memory");
    size_t i;
    json_t *im;
    json_array_foreach(imgs, i, im) {
      if (!json_is_string(im) || json_string_length(im) == 0)
        return failf(why, whyn, "images[%zu] must be a non-empty string", i);
      j->n_images = i + 1;
      if (image_load(dir, json_string_value(im), &j->images[i], why, whyn) != 0) return -1;
    }
  }
  int64_t v;
  if (positive(o, "max_tokens", 1 << 20, &v, why, whyn) != 0) return -1;
  j->max_tokens = v;
  if (positive(o, "repeat", 1000, &v, why, whyn) != 0) return -1;
  j->repeat = (int)v;
  const json_t *ex = json_object_get(o, "expect");
  if (ex) {
    char e[256];
    if (expect_parse(ex, &j->expect, e, sizeof e) != 0) return failf(why, whyn, "%s", e);
    j->has_expect = true;
  }
  return 0;
}

void workload_file_free(struct workload_file *wf) {
  for (size_t i = 0; i < wf->n_jobs; i++) job_free(&wf->jobs[i]);
  free(wf->jobs);
  free(wf->path);
  memset(wf, 0, sizeof *wf);
}

int workload_file_load(const char *path, struct workload_file *wf, char *err, size_t errn) {
  memset(wf, 0, sizeof *wf);
  FILE *f = fopen(path, "r");
  if (!f) return failf(err, errn, "%s: %s", path, strerror(errno));
  char *dcopy = strdup(path);
  const char *dir = dcopy ? dirname(dcopy) : ".";
  wf->path = strdup(path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0, rc = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    size_t sp = strspn(line, " \t");
    if (line[sp] == '\0') continue;
    if ((size_t)len != strlen(line)) {
      rc = failf(err, errn, "%s:%d: a NUL byte in the line", path, lineno);
      break;
    }
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    if (!o) {
      rc = failf(err, errn, "%s:%d: invalid JSON at column %d: %s", path, lineno, je.column, je.text);
      break;
    }
    struct wl_job *jobs = realloc(wf->jobs, (wf->n_jobs + 1) * sizeof *jobs);
    if (!jobs) {
      json_decref(o);
      rc = failf(err, errn, "%s:%d: out of memory", path, lineno);
      break;
    }
    wf->jobs = jobs;
    struct wl_job *j = &wf->jobs[wf->n_jobs++];
    memset(j, 0, sizeof *j);
    j->line = lineno;
    char why[512];
    rc = job_parse(o, dir, j, why, sizeof why);
    json_decref(o);
    if (rc != 0) {
      failf(err, errn, "%s:%d: %s", path, lineno, why);
      break;
    }
    for (size_t k = 0; k + 1 < wf->n_jobs; k++)
      if (!strcmp(wf->jobs[k].name, j->name)) {
        rc = failf(err, errn, "%s:%d: name \"%s\" is already line %d's", path, lineno, j->name,
                   wf->jobs[k].line);
        break;
      }
    if (rc != 0) break;
  }
  if (rc == 0 && ferror(f)) rc = failf(err, errn, "%s: read error", path);
  if (rc == 0 && wf->n_jobs == 0) rc = failf(err, errn, "%s: no jobs (one JSON object per line)", path);
  free(line);
  free(dcopy);
  fclose(f);
  if (rc != 0) workload_file_free(wf);
  return rc;
}

char *wl_job_text(const struct wl_job *j) {
  size_t n = 1;
  for (size_t i = 0; i < j->n_messages; i++) n += strlen(j->messages[i].content) + 2;
  char *t = malloc(n);
  if (!t) return NULL;
  t[0] = '\0';
  for (size_t i = 0; i < j->n_messages; i++) {
    if (i) strcat(t, "\n\n");
    strcat(t, j->messages[i].content);
  }
  return t;
}
