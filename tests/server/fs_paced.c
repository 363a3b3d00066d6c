/* fs_paced: FS_PACED / FS_BUFFERED / FS_BREAK, a synthetic LLM server whose
 * timing and counts are known exactly.
 *
 * A generation request (see route()) is answered like this:
 *   prompt      the last user message's content (chat) or "prompt" (completion);
 *               words = whitespace-separated pieces of it.
 *   tokens      P = template_tokens + (fixed_prompt_tokens ? fixed_prompt_tokens
 *               : words). template_tokens count on every generation endpoint.
 *   cache       with prompt_cache (and not "cache_prompt": false, llama.cpp),
 *               once at least one earlier prompt was seen: cached = template_tokens
 *               + the longest common word prefix with any of the last 64 prompts
 *               (all of the user tokens when the prompt is identical), at most
 *               P - 1 (a server always evaluates one token). A fresh nonce as
 *               the first word thus shares only the template.
 *   prefill     a_ms + b_ms x (P - cached); the first token is sent then.
 *   length      n_max = max_tokens / max_completion_tokens / n_predict /
 *               options.num_predict (default 16); with stop_early, n = n_max/4
 *               (at least 1, finish "stop") unless the flavor's exact-length
 *               knob was sent: llama.cpp "ignore_eos": true, OpenAI (vLLM)
 *               "min_tokens" >= n_max, Ollama any num_predict / max_tokens;
 *               LM Studio has none. Else n = n_max, finish "length".
 *   decode      token i (0-based) at prefill + i x c_ms; each is one event in
 *               one send(); token text = one word + a space.
 *   reasoning   the first n/2 tokens as reasoning_content (OpenAI-style) or
 *               thinking (Ollama); think_tags instead: content "<think>", words,
 *               "</think>" over the first n/2 tokens (n/2 >= 2), then answer.
 *   timers      prompt_ms = b x (P - cached): the runtime's own prompt timer
 *               covers the prompt work, not the fixed a (request parsing,
 *               queueing: a fixed cost outside the runtime, as in llama.cpp),
 *               so a client recovers the server prefill rate 1/b exactly and
 *               sees a as the client/server gap; predicted_ms = (n-1) x c =
 *               the time from the first token to the last; per-token figures
 *               as llama.cpp's fixture shows them (predicted_ms / (n-1)).
 *               Ollama: prompt_eval_count = P - cached, *_duration in ns of
 *               the same values, load_duration 0, total_duration measured.
 * Wire formats: llama.cpp from the captured fixtures; OpenAI/vLLM, Ollama and
 * LM Studio written from their public API documentation. NO capture of vLLM,
 * Ollama or LM Studio exists here: those shapes are documented, not recorded.
 * FS_BREAK breaks generation requests only (info endpoints answer normally),
 * except close-on-accept, which closes every connection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fs_internal.h"

enum ep { EP_NONE = 0, EP_CHAT, EP_COMPLETION, EP_NATIVE, EP_OLLAMA_CHAT, EP_OLLAMA_GENERATE };

struct gen {
  enum fs_flavor flavor;
  enum ep ep;
  bool lmstudio_v0;     /* /api/v0/...: LM Studio "stats" */
  bool stream, include_usage;
  char model[160], id[48];
  long long created;
  uint32_t prompt_tokens, cached, n_gen, n_reason;
  bool stopped_early, think_tags, reasoning;
  const char *answer;   /* cfg.answer: the answer's words */
  bool usage_every;     /* cfg.usage_every_chunk */
  double prefill_ms, c_ms;
  double runtime_prompt_ms; /* b x uncached tokens: what the runtime's timer says */
  uint64_t t0, t_first;
};

static const char *const words[16] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
                                      "golf",  "hotel", "india",   "juliet", "kilo", "lima",
                                      "mike",  "november", "oscar", "papa"};

static const char *default_model(enum fs_flavor f) {
  switch (f) {
  case FS_FLAVOR_LLAMACPP: return "models/fake-Q4_0.gguf";
  case FS_FLAVOR_OLLAMA: return "fake:latest";
  default: return "fake-model";
  }
}

/* ---------------------------------------------------------------- prompts */

static const char *prompt_text(enum ep ep, json_t *body) {
  if (ep == EP_CHAT || ep == EP_OLLAMA_CHAT) {
    json_t *msgs = json_object_get(body, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
      json_t *m = json_array_get(msgs, i);
      const char *role = json_string_value(json_object_get(m, "role"));
      if (!role || strcmp(role, "user") != 0) continue;
      json_t *c = json_object_get(m, "content");
      if (json_is_string(c)) return json_string_value(c);
      for (size_t k = 0; k < json_array_size(c); k++) { /* content parts */
        const char *t = json_string_value(json_object_get(json_array_get(c, k), "text"));
        if (t) return t;
      }
      return "";
    }
    return "";
  }
  json_t *p = json_object_get(body, "prompt");
  if (json_is_array(p)) p = json_array_get(p, 0);
  if (!json_is_string(p)) p = json_object_get(body, "content"); /* llama.cpp /tokenize */
  return json_is_string(p) ? json_string_value(p) : "";
}

/* Splits text into words (malloc'd copies). -1 on OOM. */
static int split_words(const char *text, struct fs_prompt *out) {
  out->words = NULL;
  out->n = 0;
  uint32_t cap = 0;
  for (const char *p = text; *p;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    const char *e = p;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r') e++;
    if (out->n == cap) {
      cap = cap ? cap * 2 : 32;
      char **w = realloc(out->words, cap * sizeof *w);
      if (!w) return -1;
      out->words = w;
    }
    out->words[out->n] = strndup(p, (size_t)(e - p));
    if (!out->words[out->n]) return -1;
    out->n++;
    p = e;
  }
  return 0;
}

static void prompt_free(struct fs_prompt *p) {
  for (uint32_t i = 0; i < p->n; i++) free(p->words[i]);
  free(p->words);
  p->words = NULL;
  p->n = 0;
}

void fs_cache_free(struct fakeserver *s) {
  for (uint32_t i = 0; i < FS_CACHE_PROMPTS; i++) prompt_free(&s->cache[i]);
  s->n_cache = 0;
}

static uint32_t count_words(const char *text) {
  struct fs_prompt p;
  uint32_t n = split_words(text, &p) == 0 ? p.n : 0;
  prompt_free(&p);
  return n;
}

/* Counts prompt tokens and cached tokens, and remembers the prompt. */
static void count_prompt(struct fakeserver *s, const char *text, bool use_cache, struct gen *g) {
  struct fs_prompt p;
  if (split_words(text, &p) != 0) {
    prompt_free(&p);
    p.n = 0;
  }
  uint32_t user = s->cfg.fixed_prompt_tokens ? s->cfg.fixed_prompt_tokens : p.n;
  g->prompt_tokens = s->cfg.template_tokens + user;
  g->cached = 0;
  if (s->cfg.prompt_cache && use_cache && s->n_cache > 0) {
    uint32_t best = 0;
    for (uint32_t k = 0; k < s->n_cache; k++) {
      const struct fs_prompt *q = &s->cache[k];
      uint32_t i = 0;
      while (i < p.n && i < q->n && strcmp(p.words[i], q->words[i]) == 0) i++;
      uint32_t shared = (i == p.n && i == q->n) ? user : (i < user ? i : user);
      if (shared > best) best = shared;
    }
    g->cached = s->cfg.template_tokens + best;
    if (g->prompt_tokens > 0 && g->cached > g->prompt_tokens - 1) g->cached = g->prompt_tokens - 1;
  }
  /* remember (ring of FS_CACHE_PROMPTS) */
  struct fs_prompt *slot = &s->cache[s->cache_next];
  prompt_free(slot);
  *slot = p;
  s->cache_next = (s->cache_next + 1) % FS_CACHE_PROMPTS;
  if (s->n_cache < FS_CACHE_PROMPTS) s->n_cache++;
}

/* ---------------------------------------------------------------- events */

static int add_json(struct fs_buf *b, const char *prefix, json_t *o, const char *suffix) {
  if (!o) return -1;
  char *t = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15));
  json_decref(o);
  if (!t) return -1;
  int rc = fs_buf_printf(b, "%s%s%s", prefix, t, suffix);
  free(t);
  return rc;
}
static int add_sse(struct fs_buf *b, json_t *o) { return add_json(b, "data: ", o, "\n\n"); }
static int add_line(struct fs_buf *b, json_t *o) { return add_json(b, "", o, "\n"); }

static bool is_ollama(const struct gen *g) {
  return g->ep == EP_OLLAMA_CHAT || g->ep == EP_OLLAMA_GENERATE;
}

/* Token i's text and whether it is reasoning. */
static const char *token_text(const struct gen *g, uint32_t i, char *buf, size_t n,
                              bool *reasoning) {
  *reasoning = false;
  if (g->think_tags && i < g->n_reason) {
    if (i == 0) return "<think>";
    if (i == g->n_reason - 1) return "</think>";
  } else if (g->reasoning && i < g->n_reason) {
    *reasoning = true;
  }
  if (g->answer && i >= g->n_reason) { /* word i - n_reason of the answer */
    const char *p = g->answer;
    for (uint32_t k = 0;; k++) {
      p += strspn(p, " ");
      size_t len = strcspn(p, " ");
      if (k == i - g->n_reason || !p[len]) {
        snprintf(buf, n, "%.*s ", (int)len, p);
        return buf;
      }
      p += len;
    }
  }
  snprintf(buf, n, "%s ", words[i % 16]);
  return buf;
}

/* Words of an answer text. */
static uint32_t answer_words(const char *a) {
  uint32_t n = 0;
  for (const char *p = a; *p;) {
    p += strspn(p, " ");
    if (!*p) break;
    n++;
    p += strcspn(p, " ");
  }
  return n;
}

/* Images in a request: OpenAI image_url content parts, Ollama "images". */
static uint32_t count_images(json_t *body) {
  uint32_t n = (uint32_t)json_array_size(json_object_get(body, "images"));
  json_t *msgs = json_object_get(body, "messages");
  for (size_t i = 0; i < json_array_size(msgs); i++) {
    json_t *m = json_array_get(msgs, i);
    n += (uint32_t)json_array_size(json_object_get(m, "images"));
    json_t *c = json_object_get(m, "content");
    for (size_t k = 0; k < json_array_size(c); k++)
      n += json_object_get(json_array_get(c, k), "image_url") != NULL;
  }
  return n;
}

static void ollama_time(char *out, size_t n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, n, "%s.%09ldZ", base, ts.tv_nsec);
}

/* The OpenAI chunk envelope around `choices`. */
static json_t *oai_chunk(const struct gen *g, json_t *choices) {
  bool chat = g->ep == EP_CHAT;
  json_t *o = json_pack("{s:o,s:I,s:s,s:s}", "choices", choices, "created", (json_int_t)g->created,
                        "id", g->id, "model", g->model);
  if (!o) return NULL;
  if (g->flavor == FS_FLAVOR_LLAMACPP)
    json_object_set_new(o, "system_fingerprint", json_string("b1-fakeserver"));
  json_object_set_new(o, "object", json_string(chat ? "chat.completion.chunk" : "text_completion"));
  return o;
}

/* A token event's chunk, with the counts so far when usage_every (token i is
 * the (i+1)-th). */
static json_t *with_usage(const struct gen *g, json_t *o, uint32_t i) {
  if (o && g->usage_every)
    json_object_set_new(o, "usage",
                        json_pack("{s:i,s:i,s:i}", "prompt_tokens", (int)g->prompt_tokens,
                                  "completion_tokens", (int)(i + 1), "total_tokens",
                                  (int)(g->prompt_tokens + i + 1)));
  return o;
}

static int add_token_event(struct fs_buf *b, const struct gen *g, uint32_t i) {
  char wb[32];
  bool rsn;
  const char *text = token_text(g, i, wb, sizeof wb, &rsn);
  if (g->ep == EP_CHAT) {
    json_t *delta = json_object();
    json_object_set_new(delta, rsn ? "reasoning_content" : "content", json_string(text));
    return add_sse(b, with_usage(g, oai_chunk(g, json_pack("[{s:n,s:i,s:o}]", "finish_reason",
                                                           "index", 0, "delta", delta)), i));
  }
  if (g->ep == EP_COMPLETION)
    return add_sse(b, oai_chunk(g, json_pack("[{s:s,s:i,s:n,s:n}]", "text", text, "index", 0,
                                             "logprobs", "finish_reason")));
  if (g->ep == EP_NATIVE)
    return add_sse(b, json_pack("{s:i,s:s,s:[i],s:b,s:i,s:i,s:i}", "index", 0, "content", text,
                                "tokens", 1000 + (int)i, "stop", 0, "id_slot", -1,
                                "tokens_predicted", (int)i + 1, "tokens_evaluated",
                                (int)g->prompt_tokens));
  char ts[64];
  ollama_time(ts, sizeof ts);
  json_t *o = json_pack("{s:s,s:s}", "model", g->model, "created_at", ts);
  if (g->ep == EP_OLLAMA_CHAT) {
    json_t *m = json_pack("{s:s,s:s}", "role", "assistant", "content", rsn ? "" : text);
    if (rsn) json_object_set_new(m, "thinking", json_string(text));
    json_object_set_new(o, "message", m);
  } else {
    json_object_set_new(o, "response", json_string(rsn ? "" : text));
    if (rsn) json_object_set_new(o, "thinking", json_string(text));
  }
  json_object_set_new(o, "done", json_false());
  return add_line(b, o);
}

static double predicted_ms(const struct gen *g) {
  return g->n_gen > 1 ? (g->n_gen - 1) * g->c_ms : 0.0;
}

static json_t *llama_timings(const struct fakeserver *s, const struct gen *g) {
  uint32_t pn = g->prompt_tokens - g->cached;
  double pm = g->runtime_prompt_ms, dm = predicted_ms(g);
  if (s->cfg.lie_prompt_ms) pm = atof(s->cfg.lie_prompt_ms); /* hostile: a timer */
  double per_tok = g->n_gen > 1 ? dm / (g->n_gen - 1) : 0.0;
  return json_pack("{s:i,s:i,s:f,s:f,s:f,s:i,s:f,s:f,s:f}", "cache_n", (int)g->cached, "prompt_n",
                   (int)pn, "prompt_ms", pm, "prompt_per_token_ms", pn ? pm / pn : 0.0,
                   "prompt_per_second", pm > 0 ? 1e3 * pn / pm : 0.0, "predicted_n",
                   (int)g->n_gen, "predicted_ms", dm, "predicted_per_token_ms", per_tok,
                   "predicted_per_second", per_tok > 0 ? 1e3 / per_tok : 0.0);
}

static json_t *oai_usage(const struct fakeserver *s, const struct gen *g) {
  json_t *u = json_pack("{s:i,s:i,s:i}", "completion_tokens", (int)g->n_gen, "prompt_tokens",
                        (int)g->prompt_tokens, "total_tokens",
                        (int)(g->prompt_tokens + g->n_gen));
  if (g->flavor == FS_FLAVOR_LLAMACPP || s->cfg.prompt_cache)
    json_object_set_new(u, "prompt_tokens_details",
                        json_pack("{s:i}", "cached_tokens", (int)g->cached));
  if (g->flavor == FS_FLAVOR_OPENAI || g->flavor == FS_FLAVOR_LMSTUDIO)
    json_object_set_new(u, "completion_tokens_details",
                        json_pack("{s:i}", "reasoning_tokens", (int)g->n_reason));
  if (s->cfg.lie_completion) { /* hostile: a count that cannot be */
    json_t *lie = json_loads(s->cfg.lie_completion, JSON_DECODE_ANY, NULL);
    if (lie) json_object_set_new(u, "completion_tokens", lie);
  }
  if (s->cfg.lie_prompt) {
    json_t *lie = json_loads(s->cfg.lie_prompt, JSON_DECODE_ANY, NULL);
    if (lie) json_object_set_new(u, "prompt_tokens", lie);
  }
  if (s->cfg.lie_cached) {
    json_t *lie = json_loads(s->cfg.lie_cached, JSON_DECODE_ANY, NULL);
    if (lie) json_object_set_new(u, "prompt_tokens_details", json_pack("{s:o}", "cached_tokens", lie));
  }
  return u;
}

/* LM Studio REST v0 "stats" (seconds), from its documentation. */
static json_t *lmstudio_stats(const struct gen *g) {
  double gen_s = predicted_ms(g) / 1e3;
  return json_pack("{s:f,s:f,s:f,s:s}", "tokens_per_second",
                   gen_s > 0 ? (g->n_gen - 1) / gen_s : 0.0, "time_to_first_token",
                   g->prefill_ms / 1e3, "generation_time", gen_s, "stop_reason",
                   g->stopped_early ? "eosFound" : "maxPredictedTokensReached");
}

static const char *finish_reason(const struct gen *g) {
  return g->stopped_early ? "stop" : "length";
}

static json_t *ollama_final(const struct gen *g, const char *text, const char *thinking) {
  char ts[64];
  ollama_time(ts, sizeof ts);
  json_t *o = json_pack("{s:s,s:s}", "model", g->model, "created_at", ts);
  if (g->ep == EP_OLLAMA_CHAT) {
    json_t *m = json_pack("{s:s,s:s}", "role", "assistant", "content", text);
    if (thinking && *thinking) json_object_set_new(m, "thinking", json_string(thinking));
    json_object_set_new(o, "message", m);
  } else {
    json_object_set_new(o, "response", json_string(text));
    if (thinking && *thinking) json_object_set_new(o, "thinking", json_string(thinking));
  }
  json_int_t total = (json_int_t)(fs_now_ns() - g->t0);
  json_t *tail = json_pack("{s:b,s:s,s:I,s:I,s:i,s:I,s:i,s:I}", "done", 1, "done_reason",
                           finish_reason(g), "total_duration", total, "load_duration",
                           (json_int_t)0, "prompt_eval_count",
                           (int)(g->prompt_tokens - g->cached), "prompt_eval_duration",
                           (json_int_t)(g->runtime_prompt_ms * 1e6), "eval_count", (int)g->n_gen,
                           "eval_duration", (json_int_t)(predicted_ms(g) * 1e6));
  json_object_update(o, tail);
  json_decref(tail);
  return o;
}

/* Everything after the last token: finish + usage + [DONE], the native stop
 * event, or Ollama's done line. */
static int add_final_events(struct fs_buf *b, const struct fakeserver *s, const struct gen *g) {
  if (is_ollama(g)) return add_line(b, ollama_final(g, "", NULL));
  if (g->ep == EP_NATIVE) {
    json_t *o = json_pack("{s:i,s:s,s:[],s:i,s:b,s:s,s:i,s:i,s:s,s:s,s:i,s:b}", "index", 0,
                          "content", "", "tokens", "id_slot", 0, "stop", 1, "model", g->model,
                          "tokens_predicted", (int)g->n_gen, "tokens_evaluated",
                          (int)g->prompt_tokens, "stop_type", g->stopped_early ? "eos" : "limit",
                          "stopping_word", "", "tokens_cached",
                          (int)(g->prompt_tokens + g->n_gen - 1), "truncated", 0);
    if (o) json_object_set_new(o, "timings", llama_timings(s, g));
    return add_sse(b, o);
  }
  json_t *fin = g->ep == EP_CHAT
                    ? json_pack("[{s:s,s:i,s:{}}]", "finish_reason", finish_reason(g), "index",
                                0, "delta")
                    : json_pack("[{s:s,s:i,s:n,s:s}]", "text", "", "index", 0, "logprobs",
                                "finish_reason", finish_reason(g));
  json_t *fo = oai_chunk(g, fin);
  if (fo && g->lmstudio_v0) json_object_set_new(fo, "stats", lmstudio_stats(g));
  int rc = add_sse(b, fo);
  if (g->flavor == FS_FLAVOR_LLAMACPP || g->include_usage) {
    json_t *u = oai_chunk(g, json_array());
    if (u) {
      json_object_set_new(u, "usage", oai_usage(s, g));
      if (g->flavor == FS_FLAVOR_LLAMACPP) json_object_set_new(u, "timings", llama_timings(s, g));
    }
    rc |= add_sse(b, u);
  }
  rc |= fs_buf_printf(b, "data: [DONE]\n\n");
  return rc ? -1 : 0;
}

/* A whole non-streamed answer. */
static json_t *nonstream_body(const struct fakeserver *s, const struct gen *g) {
  struct fs_buf text = {0}, thinking = {0};
  fs_buf_add(&text, NULL, 0);
  fs_buf_add(&thinking, NULL, 0);
  for (uint32_t i = 0; i < g->n_gen; i++) {
    char wb[32];
    bool rsn;
    const char *t = token_text(g, i, wb, sizeof wb, &rsn);
    fs_buf_add(rsn ? &thinking : &text, t, strlen(t));
  }
  json_t *o = NULL;
  if (is_ollama(g)) {
    o = ollama_final(g, text.p ? text.p : "", thinking.p);
  } else if (g->ep == EP_NATIVE) {
    o = json_pack("{s:i,s:s,s:i,s:b,s:s,s:i,s:i,s:s}", "index", 0, "content", text.p ? text.p : "",
                  "id_slot", 0, "stop", 1, "model", g->model, "tokens_predicted", (int)g->n_gen,
                  "tokens_evaluated", (int)g->prompt_tokens, "stop_type",
                  g->stopped_early ? "eos" : "limit");
    if (o) json_object_set_new(o, "timings", llama_timings(s, g));
  } else {
    json_t *choice;
    if (g->ep == EP_CHAT) {
      json_t *m = json_pack("{s:s,s:s}", "role", "assistant", "content", text.p ? text.p : "");
      if (thinking.len) json_object_set_new(m, "reasoning_content", json_string(thinking.p));
      choice = json_pack("{s:s,s:i,s:o}", "finish_reason", finish_reason(g), "index", 0,
                         "message", m);
    } else {
      choice = json_pack("{s:s,s:i,s:s,s:n}", "finish_reason", finish_reason(g), "index", 0,
                         "text", text.p ? text.p : "", "logprobs");
    }
    o = json_pack("{s:[o],s:I,s:s,s:s,s:s}", "choices", choice, "created",
                  (json_int_t)g->created, "id", g->id, "model", g->model, "object",
                  g->ep == EP_CHAT ? "chat.completion" : "text_completion");
    if (o) {
      json_object_set_new(o, "usage", oai_usage(s, g));
      if (g->flavor == FS_FLAVOR_LLAMACPP) json_object_set_new(o, "timings", llama_timings(s, g));
      if (g->lmstudio_v0) json_object_set_new(o, "stats", lmstudio_stats(g));
    }
  }
  fs_buf_free(&text);
  fs_buf_free(&thinking);
  return o;
}

/* ---------------------------------------------------------------- routing */

static enum ep route(enum fs_flavor f, const char *method, const char *path, bool *v0) {
  *v0 = false;
  if (strcmp(method, "POST") != 0) return EP_NONE;
  if (strcmp(path, "/v1/chat/completions") == 0) return EP_CHAT;
  if (strcmp(path, "/v1/completions") == 0) return EP_COMPLETION;
  switch (f) {
  case FS_FLAVOR_LLAMACPP:
    if (strcmp(path, "/chat/completions") == 0) return EP_CHAT;
    if (strcmp(path, "/completions") == 0) return EP_COMPLETION;
    if (strcmp(path, "/completion") == 0) return EP_NATIVE;
    break;
  case FS_FLAVOR_OLLAMA:
    if (strcmp(path, "/api/chat") == 0) return EP_OLLAMA_CHAT;
    if (strcmp(path, "/api/generate") == 0) return EP_OLLAMA_GENERATE;
    break;
  case FS_FLAVOR_LMSTUDIO:
    *v0 = true;
    if (strcmp(path, "/api/v0/chat/completions") == 0) return EP_CHAT;
    if (strcmp(path, "/api/v0/completions") == 0) return EP_COMPLETION;
    *v0 = false;
    break;
  default: break;
  }
  return EP_NONE;
}

static int uint_field(json_t *o, const char *key, uint32_t *out) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) <= 0) return 0;
  json_int_t x = json_integer_value(v);
  *out = x > 1000000 ? 1000000 : (uint32_t)x;
  return 1;
}

/* Fills g from the request: model, counts, length, timing. */
static void gen_setup(struct fakeserver *s, const struct fs_request *req, enum ep ep, bool v0,
                      struct gen *g) {
  const struct fs_config *cfg = &s->cfg;
  json_t *body = req->json;
  memset(g, 0, sizeof *g);
  g->flavor = cfg->flavor;
  g->ep = ep;
  g->lmstudio_v0 = v0;
  g->t0 = req->t_read_ns;
  g->created = (long long)time(NULL);
  snprintf(g->id, sizeof g->id, "%s%06llu", ep == EP_CHAT ? "chatcmpl-fake" : "cmpl-fake",
           (unsigned long long)++s->seq);
  const char *m = json_string_value(json_object_get(body, "model"));
  /* llama.cpp answers with its own model; the others echo the request's. */
  snprintf(g->model, sizeof g->model, "%s",
           cfg->flavor != FS_FLAVOR_LLAMACPP && m && *m ? m : default_model(cfg->flavor));
  json_t *st = json_object_get(body, "stream");
  g->stream = is_ollama(g) ? !json_is_false(st) : json_is_true(st); /* Ollama streams by default */
  g->include_usage =
      json_is_true(json_object_get(json_object_get(body, "stream_options"), "include_usage"));

  bool use_cache = !(cfg->flavor == FS_FLAVOR_LLAMACPP &&
                     json_is_false(json_object_get(body, "cache_prompt")));
  count_prompt(s, prompt_text(ep, body), use_cache, g);
  g->prompt_tokens += cfg->image_tokens * count_images(body);

  uint32_t n_max = 16;
  bool given = false, exact = false;
  if (is_ollama(g)) {
    given = uint_field(json_object_get(body, "options"), "num_predict", &n_max);
  } else if (ep == EP_NATIVE) {
    given = uint_field(body, "n_predict", &n_max);
  } else {
    given = uint_field(body, "max_completion_tokens", &n_max) ||
            uint_field(body, "max_tokens", &n_max);
  }
  switch (cfg->flavor) {
  case FS_FLAVOR_LLAMACPP: exact = json_is_true(json_object_get(body, "ignore_eos")); break;
  case FS_FLAVOR_OPENAI: {
    uint32_t mt = 0;
    exact = uint_field(body, "min_tokens", &mt) && mt >= n_max;
    break;
  }
  case FS_FLAVOR_OLLAMA: exact = given; break;
  default: exact = false; break;
  }
  g->n_gen = n_max;
  if (cfg->stop_early && !exact) {
    g->n_gen = n_max / 4 ? n_max / 4 : 1;
    g->stopped_early = g->n_gen < n_max;
  }
  if (cfg->mode == FS_BREAK && g->n_gen < 2) g->n_gen = 2; /* stages need a second token */
  bool text_only = ep == EP_COMPLETION || ep == EP_NATIVE || ep == EP_OLLAMA_GENERATE;
  g->think_tags = cfg->think_tags && g->n_gen / 2 >= 2;
  g->reasoning = cfg->reasoning && !cfg->think_tags &&
                 (!text_only || ep == EP_OLLAMA_GENERATE);
  g->n_reason = (g->think_tags || g->reasoning) ? g->n_gen / 2 : 0;
  /* an answer ends the generation unless ignore_eos / min_tokens asked to go
   * on (Ollama has no such knob: num_predict is only a budget there) */
  if (cfg->answer && (!exact || is_ollama(g)) && answer_words(cfg->answer) > 0) {
    g->answer = cfg->answer;
    const uint32_t want = g->n_reason + answer_words(cfg->answer);
    if (want < g->n_gen) {
      g->n_gen = want;
      g->stopped_early = true;
    }
  }
  const double heat = pow(1.0 + cfg->heat, (double)s->n_generations++);
  g->prefill_ms = cfg->a_ms + heat * cfg->b_ms * (double)(g->prompt_tokens - g->cached);
  g->runtime_prompt_ms = heat * cfg->b_ms * (double)(g->prompt_tokens - g->cached);
  g->c_ms = heat * cfg->c_ms;
  g->usage_every = cfg->usage_every_chunk;
  g->t_first = g->t0 + (uint64_t)(g->prefill_ms * 1e6);

  struct fs_timing t = {.prompt_tokens = g->prompt_tokens,
                        .generated_tokens = g->n_gen,
                        .prefill_ms = g->prefill_ms,
                        .token_interval_ms = g->c_ms};
  fs_set_timing(s, &t);
}

static uint64_t token_deadline(const struct gen *g, uint32_t i) {
  return g->t_first + (uint64_t)((double)i * g->c_ms * 1e6);
}

/* ---------------------------------------------------------------- errors */

static int send_error(struct fakeserver *s, int fd, const struct fs_request *req, int status,
                      const char *type, const char *msg) {
  json_t *o = s->cfg.flavor == FS_FLAVOR_OLLAMA
                  ? json_pack("{s:s}", "error", msg)
                  : json_pack("{s:{s:i,s:s,s:s}}", "error", "code", status, "message", msg,
                              "type", type);
  int rc = fs_send_json(s, fd, status, o, req->client_close);
  return rc != 0 ? -1 : (req->client_close ? 1 : 0);
}

static int send_context_overflow(struct fakeserver *s, int fd, const struct fs_request *req,
                                 const struct gen *g) {
  char msg[200];
  uint32_t n_ctx = 4096, n = g->prompt_tokens > n_ctx ? g->prompt_tokens : n_ctx + 1;
  snprintf(msg, sizeof msg,
           "request (%u tokens) exceeds the available context size (%u tokens), try "
           "increasing it",
           n, n_ctx);
  json_t *o = json_pack("{s:{s:i,s:s,s:s,s:i,s:i}}", "error", "code", 400, "message", msg, "type",
                        "exceed_context_size_error", "n_prompt_tokens", (int)n, "n_ctx",
                        (int)n_ctx);
  int rc = fs_send_json(s, fd, 400, o, req->client_close);
  return rc != 0 ? -1 : (req->client_close ? 1 : 0);
}

/* ---------------------------------------------------------------- serving */

static const char *stream_type(const struct gen *g) {
  return is_ollama(g) ? "application/x-ndjson" : "text/event-stream";
}
static const char *server_headers(const struct fakeserver *s) {
  return s->cfg.flavor == FS_FLAVOR_LLAMACPP
             ? "Server: llama.cpp\r\nAccess-Control-Allow-Origin: \r\nX-Accel-Buffering: no\r\n"
             : NULL;
}

/* One HTTP chunk at `deadline`. */
static int chunk_at(struct fakeserver *s, int fd, uint64_t deadline, struct fs_buf *b, bool final) {
  int rc = fs_sleep_until(s, deadline);
  if (rc == 0) rc = fs_send_chunk(s, fd, b->p, b->len, final);
  b->len = 0;
  if (b->p) b->p[0] = '\0';
  return rc;
}

static int serve_generation(struct fakeserver *s, int fd, const struct fs_request *req, enum ep ep,
                            bool v0) {
  struct gen g;
  gen_setup(s, req, ep, v0, &g);
  int stage = s->cfg.mode == FS_BREAK ? (int)s->cfg.break_stage : -1;
  if (stage >= 0 && s->n_generations <= s->cfg.break_after) stage = -1; /* served as paced */
  bool buffered = s->cfg.mode == FS_BUFFERED;

  switch (stage) {
  case FS_BREAK_HALF_HEADERS: fs_send_all(s, fd, "HTTP/1.1 20", 11); return 1;
  case FS_BREAK_STALL_BEFORE_HEADERS: fs_wait_silent(s, fd); return 1;
  case FS_BREAK_HTTP_500:
    return send_error(s, fd, req, 500, "server_error", "fakeserver: internal error (http-500)");
  case FS_BREAK_HTTP_404:
    return send_error(s, fd, req, 404, "not_found_error",
                      s->cfg.flavor == FS_FLAVOR_OLLAMA ? "model \"fake\" not found, try pulling it first"
                                                        : "File Not Found");
  case FS_BREAK_CONTEXT_OVERFLOW: return send_context_overflow(s, fd, req, &g);
  case FS_BREAK_GARBAGE: {
    static const char junk[] = "\x16\x03\x01\x02\x00 SSH-2.0-garbage \xff\xfe not http\r\n\r\n";
    fs_send_all(s, fd, junk, sizeof junk - 1);
    return 1;
  }
  default: break;
  }

  if (!g.stream && stage < 0) { /* whole answer once the last token is done */
    if (fs_sleep_until(s, token_deadline(&g, g.n_gen - 1)) != 0) return -1;
    json_t *o = nonstream_body(s, &g);
    if (!o) return -1;
    int rc = fs_send_json(s, fd, 200, o, req->client_close);
    return rc != 0 ? -1 : (req->client_close ? 1 : 0);
  }

  /* Stages that end by closing announce it. */
  bool closes = req->client_close || stage == FS_BREAK_AFTER_HEADERS ||
                stage == FS_BREAK_MID_EVENT || stage == FS_BREAK_AFTER_FIRST_TOKEN ||
                stage == FS_BREAK_NO_DONE_NO_USAGE || stage == FS_BREAK_STALL;
  if (fs_send_head(s, fd, 200, stream_type(&g), server_headers(s), true, 0, closes) != 0) return -1;
  if (stage == FS_BREAK_AFTER_HEADERS) return 1;

  struct fs_buf b = {0};
  int rc = 0;
  if (stage == FS_BREAK_ERROR_EVENT) {
    if (is_ollama(&g))
      rc = fs_buf_printf(&b, "{\"error\":\"fakeserver: error event\"}\n");
    else
      rc = fs_buf_printf(&b, "data: {\"error\":{\"code\":500,\"message\":\"fakeserver: error "
                             "event\",\"type\":\"server_error\"}}\n\n");
    if (rc == 0) rc = chunk_at(s, fd, g.t_first, &b, true);
    fs_buf_free(&b);
    return rc != 0 ? -1 : (req->client_close ? 1 : 0);
  }

  for (uint32_t i = 0; i < g.n_gen && rc == 0; i++) {
    if (i == 0 && g.ep == EP_CHAT) { /* the role chunk travels with the first token */
      json_t *d = json_pack("{s:s,s:o}", "role", "assistant", "content",
                            g.flavor == FS_FLAVOR_LLAMACPP ? json_null() : json_string(""));
      rc = add_sse(&b, oai_chunk(&g, json_pack("[{s:n,s:i,s:o}]", "finish_reason", "index", 0,
                                               "delta", d)));
    }
    if (i == 1 && stage == FS_BREAK_MID_EVENT) { /* half of token 1's line, then close */
      struct fs_buf ev = {0};
      rc = add_token_event(&ev, &g, i);
      if (rc == 0) rc = fs_buf_add(&b, ev.p, ev.len / 2);
      fs_buf_free(&ev);
      if (rc == 0) chunk_at(s, fd, token_deadline(&g, i), &b, false);
      fs_buf_free(&b);
      return 1;
    }
    if (i == 1 && stage == FS_BREAK_MALFORMED_JSON) /* token 1 replaced by broken JSON */
      rc = fs_buf_printf(&b, is_ollama(&g) ? "{\"model\":\"x\",\"message\":{\"content\":\n"
                                           : "data: {\"choices\":[{\"delta\":{\"content\":\n\n");
    else
      rc |= add_token_event(&b, &g, i);
    if (rc != 0) break;
    if (buffered) continue; /* everything goes in one send at the end */
    rc = chunk_at(s, fd, token_deadline(&g, i), &b, false);
    if (rc == 0 && i == 0 && stage == FS_BREAK_AFTER_FIRST_TOKEN) {
      fs_buf_free(&b);
      return 1;
    }
    if (rc == 0 && i == 0 && stage == FS_BREAK_STALL) {
      fs_wait_silent(s, fd);
      fs_buf_free(&b);
      return 1;
    }
  }
  if (rc == 0) {
    if (stage == FS_BREAK_NO_DONE_NO_USAGE) {
      /* the transfer ends cleanly (terminating chunk), without the counters */
      rc = chunk_at(s, fd, token_deadline(&g, g.n_gen - 1), &b, true);
      fs_buf_free(&b);
      return rc != 0 ? -1 : 1;
    }
    rc = add_final_events(&b, s, &g);
    if (rc == 0) rc = chunk_at(s, fd, token_deadline(&g, g.n_gen - 1), &b, true);
  }
  fs_buf_free(&b);
  return rc != 0 ? -1 : (closes ? 1 : 0);
}

/* The bearer key of a request's Authorization header ("" when none). */
static void bearer_of(const struct fs_request *req, char *out, size_t n) {
  out[0] = 0;
  for (const char *h = req->headers; h && *h;) {
    const char *eol = strstr(h, "\r\n");
    size_t len = eol ? (size_t)(eol - h) : strlen(h);
    static const char pre[] = "authorization: bearer ";
    if (len > sizeof pre - 1 && strncasecmp(h, pre, sizeof pre - 1) == 0) {
      snprintf(out, n, "%.*s", (int)(len - (sizeof pre - 1)), h + sizeof pre - 1);
      return;
    }
    h = eol ? eol + 2 : h + len;
  }
}

/* The hostile behaviours of fs_config (echo_key, tokenize_hang, tokenize_404, fail_unload);
 * -2 when none applies to this request. */
static int hostile(struct fakeserver *s, int fd, const struct fs_request *req, const char *path,
                   enum ep ep) {
  char key[512];
  bearer_of(req, key, sizeof key);
  if (s->cfg.echo_key == FS_ECHO_401) {
    struct fs_buf m = {0};
    for (uint32_t i = 0; i < s->cfg.echo_pad; i++) fs_buf_add(&m, "x", 1);
    fs_buf_printf(&m, " token %s", key);
    int rc = send_error(s, fd, req, 401, "auth", m.p ? m.p : "");
    fs_buf_free(&m);
    return rc;
  }
  if (s->cfg.echo_key == FS_ECHO_MODEL && strcmp(req->method, "GET") == 0 &&
      strcmp(path, "/v1/models") == 0) {
    char id[600];
    snprintf(id, sizeof id, "m %s", key);
    json_t *o = json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "object", "list", "data", "id", id,
                          "object", "model", "owned_by", "me");
    int rc = o ? fs_send_json(s, fd, 200, o, req->client_close) : -1;
    return rc != 0 ? -1 : (req->client_close ? 1 : 0);
  }
  if (s->cfg.tokenize_hang && strcmp(path, "/tokenize") == 0) {
    fs_wait_silent(s, fd);
    return -1;
  }
  if (s->cfg.tokenize_404 && strcmp(path, "/tokenize") == 0)
    return send_error(s, fd, req, 404, "not_found_error", "File Not Found");
  if (s->cfg.rate_limit && ep != EP_NONE && s->rate_limited < s->cfg.rate_limit) {
    s->rate_limited++;
    char extra[160] = "";
    if (s->cfg.retry_after) snprintf(extra, sizeof extra, "Retry-After: %.120s\r\n", s->cfg.retry_after);
    static const char body[] =
        "{\"error\":{\"code\":429,\"message\":\"fakeserver: too many requests\","
        "\"type\":\"rate_limit_error\"}}";
    if (fs_send_head(s, fd, 429, "application/json", extra, false, sizeof body - 1,
                     req->client_close) != 0 ||
        fs_send_all(s, fd, body, sizeof body - 1) != 0)
      return -1;
    return req->client_close ? 1 : 0;
  }
  if (s->cfg.fail_unload && ep != EP_NONE) {
    json_t *ka = json_object_get(req->json, "keep_alive");
    if (ka && json_is_number(ka) && json_number_value(ka) == 0)
      return send_error(s, fd, req, 500, "server_error", "fakeserver: failed to load the model");
  }
  return -2;
}

int fs_paced_handle(struct fakeserver *s, int fd, const struct fs_request *req) {
  char path[2048];
  snprintf(path, sizeof path, "%s", req->target);
  char *q = strchr(path, '?');
  if (q) *q = '\0';
  bool v0;
  enum ep ep = route(s->cfg.flavor, req->method, path, &v0);
  int hrc = hostile(s, fd, req, path, ep);
  if (hrc != -2) return hrc;
  if (ep != EP_NONE) {
    if (!json_is_object(req->json))
      return send_error(s, fd, req, 400, "invalid_request_error", "fakeserver: body is not JSON");
    if (s->cfg.reject_images && count_images(req->json) > 0)
      return send_error(s, fd, req, 400, "invalid_request_error",
                        "image input is not supported by this model");
    return serve_generation(s, fd, req, ep, v0);
  }
  int rc = fs_info_handle(s, fd, req, path);
  if (rc != -2) return rc;
  return send_error(s, fd, req, 404, "not_found_error",
                    s->cfg.flavor == FS_FLAVOR_OLLAMA ? "404 page not found" : "File Not Found");
}

/* Shared with fs_info.c. */
uint32_t fs_count_words(const char *text) { return count_words(text); }
const char *fs_prompt_text_chat(json_t *body) { return prompt_text(EP_CHAT, body); }
const char *fs_default_model(enum fs_flavor f) { return default_model(f); }
