/* dialect_util: typed JSON reads, event parsing, llama.cpp timings and HTTP
 * error bodies shared by the dialects. See dialect_util.h. */
#include "backend/dialect_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend/backend_internal.h"

static const char *json_type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "?";
}

/* The field's value, NULL when absent or null, or when the reader already failed. */
static json_t *field(struct du_reader *rd, json_t *obj, const char *key) {
  if (rd->failed || !obj || !json_is_object(obj)) return NULL;
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return NULL;
  return v;
}

static void wrong_type(struct du_reader *rd, const char *path, const json_t *v,
                       const char *expected) {
  rd->failed = true;
  run_result_fail(rd->r, RUN_ERR_MALFORMED, "malformed event: %s is %s, expected %s", path,
                  json_type_name(v), expected);
}

/* An impossible value of a usage count fails the reader; of another
 * counter (a runtime's own timings, where -1 has meant "not counted") it is
 * left out, as before. */
static bool impossible_count(struct du_reader *rd, const char *path, double x) {
  if (strncmp(path, "usage.", 6) != 0) return false;
  rd->failed = true;
  run_result_fail(rd->r, RUN_ERR_INCONSISTENT, "impossible count: %s is %g, not a number of "
                  "tokens (a whole number >= 0)", path, x);
  rd->r->check = RUN_CHECK_IMPOSSIBLE_COUNT;
  return false;
}

const char *du_str(struct du_reader *rd, json_t *obj, const char *key, const char *path,
                   size_t *len) {
  json_t *v = field(rd, obj, key);
  if (!v) return NULL;
  if (!json_is_string(v)) {
    wrong_type(rd, path, v, "a string");
    return NULL;
  }
  if (len) *len = json_string_length(v);
  return json_string_value(v);
}

json_t *du_obj(struct du_reader *rd, json_t *obj, const char *key, const char *path) {
  json_t *v = field(rd, obj, key);
  if (!v) return NULL;
  if (!json_is_object(v)) {
    wrong_type(rd, path, v, "an object");
    return NULL;
  }
  return v;
}

json_t *du_arr(struct du_reader *rd, json_t *obj, const char *key, const char *path) {
  json_t *v = field(rd, obj, key);
  if (!v) return NULL;
  if (!json_is_array(v)) {
    wrong_type(rd, path, v, "an array");
    return NULL;
  }
  return v;
}

bool du_bool(struct du_reader *rd, json_t *obj, const char *key, const char *path) {
  json_t *v = field(rd, obj, key);
  if (!v) return false;
  if (!json_is_boolean(v)) {
    wrong_type(rd, path, v, "a boolean");
    return false;
  }
  return json_is_true(v);
}

bool du_count(struct du_reader *rd, json_t *obj, const char *key, const char *path,
              int64_t *out) {
  json_t *v = field(rd, obj, key);
  if (!v) return false;
  /* A count that cannot be (negative, fractional, past 2^62) is a server
   * that lies: the run fails naming it, never a silent null (issue 31). */
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0) return impossible_count(rd, path, (double)x);
    *out = (int64_t)x;
    return true;
  }
  if (json_is_real(v)) {
    double x = json_real_value(v);
    /* 2^62: far above any real count, and safe to convert. */
    if (!isfinite(x) || x < 0 || x > 4.6e18 || x != floor(x)) return impossible_count(rd, path, x);
    *out = (int64_t)x;
    return true;
  }
  wrong_type(rd, path, v, "a number");
  return false;
}

bool du_real(struct du_reader *rd, json_t *obj, const char *key, const char *path,
             double *out) {
  json_t *v = field(rd, obj, key);
  if (!v) return false;
  if (!json_is_number(v)) {
    wrong_type(rd, path, v, "a number");
    return false;
  }
  double x = json_number_value(v);
  if (!isfinite(x)) return false;
  *out = x;
  return true;
}

void du_copy(struct du_reader *rd, json_t *obj, const char *key, const char *path, char *dst,
             size_t dst_n) {
  size_t n = 0;
  const char *s = du_str(rd, obj, key, path, &n);
  if (!s || n == 0) return;
  du_one_line(dst, dst_n, s, n);
}

void du_one_line(char *dst, size_t dst_n, const char *src, size_t len) {
  if (dst_n == 0) return;
  size_t o = 0;
  bool space = true; /* drops leading spaces */
  for (size_t i = 0; i < len && o + 1 < dst_n; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c < 0x20 || c == 0x7f) c = ' ';
    if (c == ' ') {
      if (space) continue;
      space = true;
    } else {
      space = false;
    }
    dst[o++] = (char)c;
  }
  while (o > 0 && dst[o - 1] == ' ') o--;
  /* Do not leave half of a UTF-8 sequence at a truncation point. */
  if (o > 0 && ((unsigned char)dst[o - 1] & 0x80)) {
    size_t k = o;
    while (k > 0 && ((unsigned char)dst[k - 1] & 0xC0) == 0x80) k--;
    if (k > 0) {
      unsigned char lead = (unsigned char)dst[k - 1];
      size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (o - (k - 1) < need) o = k - 1;
    }
  }
  dst[o] = 0;
}

bool du_payload_is(const char *payload, size_t len, const char *word) {
  while (len > 0 && isspace((unsigned char)payload[0])) payload++, len--;
  while (len > 0 && isspace((unsigned char)payload[len - 1])) len--;
  size_t wn = strlen(word);
  return len == wn && memcmp(payload, word, wn) == 0;
}

json_t *du_parse_event(struct run_result *r, const char *payload, size_t len, bool *empty) {
  *empty = false;
  size_t i = 0;
  while (i < len && isspace((unsigned char)payload[i])) i++;
  if (i == len) {
    *empty = true;
    return NULL;
  }
  json_error_t jerr;
  json_t *root = json_loadb(payload, len, JSON_ALLOW_NUL, &jerr);
  if (!root) {
    char snippet[64];
    du_one_line(snippet, sizeof snippet, payload, len < 60 ? len : 60);
    run_result_fail(r, RUN_ERR_MALFORMED, "malformed JSON in event (byte %d: %s): %s",
                    jerr.position, jerr.text, snippet);
    return NULL;
  }
  if (!json_is_object(root)) {
    run_result_fail(r, RUN_ERR_MALFORMED, "malformed event: %s, expected a JSON object",
                    json_type_name(root));
    json_decref(root);
    return NULL;
  }
  return root;
}

void du_read_timings(struct du_reader *rd, json_t *t) {
  if (!t) return;
  struct run_result *r = rd->r;
  du_count(rd, t, "cache_n", "timings.cache_n", &r->timings_cache_n);
  du_count(rd, t, "prompt_n", "timings.prompt_n", &r->timings_prompt_n);
  du_real(rd, t, "prompt_ms", "timings.prompt_ms", &r->timings_prompt_ms);
  du_count(rd, t, "predicted_n", "timings.predicted_n", &r->timings_predicted_n);
  du_real(rd, t, "predicted_ms", "timings.predicted_ms", &r->timings_predicted_ms);
  du_count(rd, t, "draft_n", "timings.draft_n", &r->draft_n);
  du_count(rd, t, "draft_n_accepted", "timings.draft_n_accepted", &r->draft_n_accepted);
}

int du_add_text(struct run_result *r, uint64_t t_ns, enum chunk_field field, const char *text,
                size_t len, uint32_t n_tokens) {
  if (!text || len == 0) return 0;
  if (run_result_add_chunk(r, t_ns, field, text, len, n_tokens) != 0) {
    run_result_fail(r, RUN_ERR_OTHER, "out of memory storing the streamed text");
    return -1;
  }
  return 0;
}

/* Writes a scalar (string or number) into buf as text. */
static void scalar_text(json_t *v, char *buf, size_t n) {
  if (!buf || n == 0) return;
  buf[0] = 0;
  if (!v) return;
  if (json_is_string(v))
    du_one_line(buf, n, json_string_value(v), json_string_length(v));
  else if (json_is_integer(v))
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
}

bool du_error_text(json_t *root, char *dst, size_t dst_n, char *type, size_t type_n, char *code,
                   size_t code_n) {
  dst[0] = 0;
  if (type && type_n) type[0] = 0;
  if (code && code_n) code[0] = 0;
  if (!root) return false;
  json_t *e = root;
  if (json_is_object(root)) {
    json_t *inner = json_object_get(root, "error");
    if (inner && !json_is_null(inner) && !json_is_false(inner)) {
      e = inner;
    } else if (json_object_get(root, "detail")) {
      /* FastAPI: "detail": "text" or [{"msg": "...", "loc": [...]}, ...] */
      json_t *d = json_object_get(root, "detail");
      if (json_is_array(d) && json_array_size(d) > 0) {
        json_t *m = json_object_get(json_array_get(d, 0), "msg");
        if (json_is_string(m)) {
          du_one_line(dst, dst_n, json_string_value(m), json_string_length(m));
          return dst[0] != 0;
        }
      }
      e = d;
    }
  }
  if (json_is_string(e)) {
    du_one_line(dst, dst_n, json_string_value(e), json_string_length(e));
    return dst[0] != 0;
  }
  if (!json_is_object(e)) return false;
  json_t *m = json_object_get(e, "message");
  if (json_is_string(m)) du_one_line(dst, dst_n, json_string_value(m), json_string_length(m));
  scalar_text(json_object_get(e, "type"), type, type_n);
  scalar_text(json_object_get(e, "code"), code, code_n);
  return dst[0] != 0;
}

static bool mentions_context(const char *msg) {
  for (const char *p = msg; *p; p++)
    if (strncasecmp(p, "context", 7) == 0) return true;
  return false;
}

void du_http_error(struct run_result *r, int status, const char *body, size_t len) {
  r->http_status = status;
  char msg[300] = "", type[64] = "", code[64] = "";
  json_t *root = NULL;
  if (body && len > 0) {
    json_error_t jerr;
    /* DISABLE_EOF_CHECK: the first JSON value counts even when something
     * follows it (a body repeated by a proxy, a trailing newline or log). */
    root = json_loadb(body, len, JSON_DISABLE_EOF_CHECK, &jerr);
  }
  bool found = root && du_error_text(root, msg, sizeof msg, type, sizeof type, code, sizeof code);
  if (root) json_decref(root);
  if (!found && body && len > 0) du_one_line(msg, sizeof msg, body, len); /* plain text */

  bool overflow = strcmp(type, "exceed_context_size_error") == 0 ||
                  strcmp(code, "context_length_exceeded") == 0 ||
                  strcmp(type, "context_length_exceeded") == 0 || mentions_context(msg);
  enum run_error kind = overflow ? RUN_ERR_CONTEXT_OVERFLOW : RUN_ERR_HTTP;
  if (msg[0])
    run_result_fail(r, kind, "HTTP %d: %s", status, msg);
  else
    run_result_fail(r, kind, "HTTP %d (empty body)", status);
}

char *du_flat_prompt(const struct backend_request *req) {
  const char *prompt = req->prompt ? req->prompt : "";
  size_t n = strlen(prompt) + 1;
  for (size_t i = 0; i < req->n_history; i++) n += strlen(req->history[i].content) + 2;
  char *t = malloc(n);
  if (!t) return NULL;
  t[0] = '\0';
  for (size_t i = 0; i < req->n_history; i++) {
    strcat(t, req->history[i].content);
    strcat(t, "\n\n");
  }
  strcat(t, prompt);
  return t;
}

const char *du_data_url_base64(const char *url) {
  if (strncmp(url, "data:", 5) != 0) return NULL;
  const char *b = strstr(url, ";base64,");
  return b ? b + 8 : NULL;
}

int du_set_text_prompt(json_t *o, const struct backend_request *req, const char *which_chat,
                       int *bad, struct tm_err *err) {
  if (req->n_images)
    return tm_errf(err, "images need the chat endpoint (%s): this endpoint takes text only",
                   which_chat);
  char *flat = du_flat_prompt(req);
  json_t *s = flat ? json_string(flat) : NULL;
  free(flat);
  if (!s) *bad = 1;
  else *bad |= json_object_set_new(o, "prompt", s);
  return 0;
}
