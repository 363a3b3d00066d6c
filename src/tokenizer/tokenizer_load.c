/* tokenizer_load: the vocabulary out of a GGUF file's tokenizer.ggml.* keys
 * into the tables of tokenizer_internal.h (copied: the file may close). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer_internal.h"

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

static uint64_t slots_for(uint64_t n) {
  uint64_t s = 16;
  while (s < 2 * n) s <<= 1;
  return s;
}

int32_t tok_find(const struct tokenizer *t, const char *s, size_t n) {
  for (uint64_t i = hash_bytes(s, n) & t->by_text.mask;; i = (i + 1) & t->by_text.mask) {
    int32_t id = t->by_text.slot[i];
    if (id < 0) return -1;
    size_t len;
    const char *p = tok_text(t, id, &len);
    if (len == n && !memcmp(p, s, n)) return id;
  }
}

/* Element i of a numeric array as a double; 0 when the type is no number. */
static double arr_num(const struct gguf_kv *kv, uint64_t i) {
  const uint8_t *p = kv->v.arr.data;
  switch (kv->v.arr.elem_type) {
    case GGUF_VT_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case GGUF_VT_UINT32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case GGUF_VT_FLOAT32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case GGUF_VT_FLOAT64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case GGUF_VT_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
    case GGUF_VT_UINT8: return p[i];
    case GGUF_VT_INT8: return (int8_t)p[i];
    default: return 0;
  }
}

static bool numeric_array(const struct gguf_kv *kv, uint64_t count) {
  if (!kv || kv->type != GGUF_VT_ARRAY || kv->v.arr.count != count) return false;
  switch (kv->v.arr.elem_type) {
    case GGUF_VT_INT32: case GGUF_VT_UINT32: case GGUF_VT_FLOAT32: case GGUF_VT_FLOAT64:
    case GGUF_VT_INT64: case GGUF_VT_UINT8: case GGUF_VT_INT8: return true;
    default: return false;
  }
}

static int32_t optional_id(const struct gguf_file *f, const char *key, uint32_t n_vocab) {
  uint64_t v;
  if (gguf_get_u64(f, key, &v, NULL) != 0 || v >= n_vocab) return -1;
  return (int32_t)v;
}

static bool optional_bool(const struct gguf_file *f, const char *key, bool dflt) {
  bool v;
  return gguf_get_bool(f, key, &v, NULL) == 0 ? v : dflt;
}

static int load_tokens(struct tokenizer *t, const struct gguf_kv *kv, struct tm_err *err) {
  t->n_vocab = (uint32_t)kv->v.arr.count;
  t->offset = malloc(((size_t)t->n_vocab + 1) * sizeof *t->offset);
  t->text = malloc(kv->v.arr.data_bytes + 1);
  t->type = malloc((size_t)t->n_vocab * sizeof *t->type);
  uint64_t slots = slots_for(t->n_vocab);
  t->by_text.slot = malloc(slots * sizeof *t->by_text.slot);
  if (!t->offset || !t->text || !t->type || !t->by_text.slot)
    return tm_errf(err, "out of memory for a vocabulary of %u tokens", t->n_vocab);
  t->by_text.mask = slots - 1;
  memset(t->by_text.slot, 0xff, slots * sizeof *t->by_text.slot);
  uint64_t pos = 0, at = 0;
  struct gguf_str s;
  for (uint32_t id = 0; id < t->n_vocab; id++) {
    if (gguf_arr_next_str(kv, &pos, &s) != 0)
      return tm_errf(err, "tokenizer.ggml.tokens: token %u cannot be read", id);
    t->offset[id] = at;
    memcpy(t->text + at, s.ptr, s.len);
    at += s.len;
    t->type[id] = TOK_TYPE_NORMAL;
    /* the first token of a text wins, as a later duplicate is unreachable */
    if (tok_find(t, s.ptr, s.len) >= 0) continue;
    uint64_t i = hash_bytes(s.ptr, s.len) & t->by_text.mask;
    while (t->by_text.slot[i] >= 0) i = (i + 1) & t->by_text.mask;
    t->by_text.slot[i] = (int32_t)id;
  }
  t->offset[t->n_vocab] = at;
  return 0;
}

/* GPT-2's byte-level alphabet: the printable bytes stand for themselves,
 * the others (controls, space, DEL, 0x80-0xA0, 0xAD) for U+0100 onwards in
 * byte order. */
static uint32_t byte_char(unsigned b) {
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
  uint32_t n = 0;
  for (unsigned x = 0; x < b; x++)
    if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
  return 256 + n;
}

static int load_merges(struct tokenizer *t, const struct gguf_kv *kv, struct tm_err *err) {
  if (!kv || kv->type != GGUF_VT_ARRAY || kv->v.arr.elem_type != GGUF_VT_STRING)
    return tm_errf(err, "tokenizer.ggml.merges: missing or not a string array (a byte-pair "
                        "vocabulary needs its merges)");
  uint64_t n = kv->v.arr.count, slots = slots_for(n ? n : 1);
  struct tok_pair_map *m = &t->merges;
  m->key = calloc(slots, sizeof *m->key);
  m->rank = malloc(slots * sizeof *m->rank);
  m->result = malloc(slots * sizeof *m->result);
  if (!m->key || !m->rank || !m->result) return tm_errf(err, "out of memory for %llu merges",
                                                        (unsigned long long)n);
  m->mask = slots - 1;
  uint64_t pos = 0;
  struct gguf_str s;
  char buf[512];
  for (uint64_t r = 0; r < n; r++) {
    if (gguf_arr_next_str(kv, &pos, &s) != 0)
      return tm_errf(err, "tokenizer.ggml.merges: merge %llu cannot be read",
                     (unsigned long long)r);
    /* "left right": the byte-level alphabet has no plain space, so the one
     * space divides. A merge whose halves or result is no token can never
     * apply to token ids, and is left out. */
    const char *sp = memchr(s.ptr, ' ', s.len);
    if (!sp || s.len >= sizeof buf) continue;
    size_t nl = (size_t)(sp - s.ptr), nr = s.len - nl - 1;
    int32_t l = tok_find(t, s.ptr, nl), rt = tok_find(t, sp + 1, nr);
    memcpy(buf, s.ptr, nl);
    memcpy(buf + nl, sp + 1, nr);
    int32_t res = tok_find(t, buf, nl + nr);
    if (l < 0 || rt < 0 || res < 0) continue;
    uint64_t key = (((uint64_t)(uint32_t)l << 32) | (uint32_t)rt) + 1;
    uint64_t i = tok_hash_pair(key) & m->mask;
    while (m->key[i] && m->key[i] != key) i = (i + 1) & m->mask;
    if (m->key[i]) continue; /* a repeated merge keeps its first rank */
    m->key[i] = key;
    m->rank[i] = (int32_t)r;
    m->result[i] = res;
  }
  return 0;
}

static int by_length_desc(const void *a, const void *b, void *ctx) {
  const struct tokenizer *t = ctx;
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  size_t lx, ly;
  tok_text(t, x, &lx);
  tok_text(t, y, &ly);
  if (lx != ly) return lx > ly ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* Texts llama.cpp treats as end-of-generation tokens, and so as control
 * tokens whatever the file's token_type says (a Qwen2 vocabulary's "</s>" is
 * a normal token in the file, and one token in a llama.cpp prompt). */
static const char *const END_NAMES[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
    "<|tool_response>", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[",
};

static void promote_end_tokens(struct tokenizer *t) {
  for (size_t i = 0; i < sizeof END_NAMES / sizeof *END_NAMES; i++) {
    int32_t id = tok_find(t, END_NAMES[i], strlen(END_NAMES[i]));
    if (id >= 0) t->type[id] = TOK_TYPE_CONTROL;
  }
}

static int load_special(struct tokenizer *t, struct tm_err *err) {
  promote_end_tokens(t);
  t->special = malloc((size_t)t->n_vocab * sizeof *t->special);
  if (!t->special) return tm_errf(err, "out of memory");
  for (uint32_t id = 0; id < t->n_vocab; id++) {
    int32_t ty = t->type[id];
    size_t len;
    tok_text(t, (int32_t)id, &len);
    if (len && (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED || ty == TOK_TYPE_UNKNOWN))
      t->special[t->n_special++] = (int32_t)id;
  }
  qsort_r(t->special, t->n_special, sizeof *t->special, by_length_desc, t);
  return 0;
}

static void load_bytes(struct tokenizer *t) {
  for (unsigned b = 0; b < 256; b++) {
    char buf[8];
    size_t n;
    if (t->model == TOK_SPM) {
      n = (size_t)snprintf(buf, sizeof buf, "<0x%02X>", b);
    } else {
      n = tok_utf8_put(byte_char(b), buf);
    }
    t->byte_token[b] = tok_find(t, buf, n);
  }
}

struct tokenizer *tokenizer_from_gguf(const struct gguf_file *f, struct tm_err *err) {
  char model[64] = "", pre[64] = "";
  if (gguf_get_str(f, "tokenizer.ggml.model", model, sizeof model, NULL) != 0 ||
      !strcmp(model, "none")) {
    tm_errf(err, "the file has no vocabulary (tokenizer.ggml.model is %s; `tokmeter synth "
                 "--vocab-from FILE` copies one into a synthetic model)",
            model[0] ? "'none'" : "missing");
    return NULL;
  }
  gguf_get_str(f, "tokenizer.ggml.pre", pre, sizeof pre, NULL);
  struct tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    tm_errf(err, "out of memory");
    return NULL;
  }
  if (!strcmp(model, "gpt2")) {
    t->model = TOK_BPE;
    if (!strcmp(pre, "qwen2")) t->pre = TOK_PRE_QWEN2;
    else if (!strcmp(pre, "llama-bpe") || !strcmp(pre, "llama3") || !strcmp(pre, "llama-v3"))
      t->pre = TOK_PRE_LLAMA3;
    else {
      tm_errf(err, "tokenizer.ggml.pre '%s': not a pre-tokenizer tokmeter reads (qwen2, "
                   "llama-bpe)", pre[0] ? pre : "(missing)");
      goto fail;
    }
    snprintf(t->describe, sizeof t->describe, "gpt2 (%s)", pre);
  } else if (!strcmp(model, "llama")) {
    t->model = TOK_SPM;
    snprintf(t->describe, sizeof t->describe, "llama (SentencePiece)");
  } else {
    tm_errf(err, "tokenizer.ggml.model '%s': not a vocabulary tokmeter reads (gpt2, llama)",
            model);
    goto fail;
  }
  const struct gguf_kv *tokens = gguf_find_kv(f, "tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GGUF_VT_ARRAY || tokens->v.arr.elem_type != GGUF_VT_STRING ||
      tokens->v.arr.count == 0 || tokens->v.arr.count > INT32_MAX) {
    tm_errf(err, "tokenizer.ggml.tokens: missing, empty or not a string array");
    goto fail;
  }
  if (load_tokens(t, tokens, err) != 0) goto fail;
  const struct gguf_kv *types = gguf_find_kv(f, "tokenizer.ggml.token_type");
  if (types) {
    if (!numeric_array(types, t->n_vocab)) {
      tm_errf(err, "tokenizer.ggml.token_type: not %u numbers", t->n_vocab);
      goto fail;
    }
    for (uint32_t i = 0; i < t->n_vocab; i++) t->type[i] = (int32_t)arr_num(types, i);
  }
  if (t->model == TOK_SPM) {
    t->score = calloc(t->n_vocab, sizeof *t->score);
    if (!t->score) {
      tm_errf(err, "out of memory");
      goto fail;
    }
    const struct gguf_kv *scores = gguf_find_kv(f, "tokenizer.ggml.scores");
    if (scores && !numeric_array(scores, t->n_vocab)) {
      tm_errf(err, "tokenizer.ggml.scores: not %u numbers", t->n_vocab);
      goto fail;
    }
    for (uint32_t i = 0; scores && i < t->n_vocab; i++) t->score[i] = (float)arr_num(scores, i);
  } else if (load_merges(t, gguf_find_kv(f, "tokenizer.ggml.merges"), err) != 0) {
    goto fail;
  }
  t->bos = optional_id(f, "tokenizer.ggml.bos_token_id", t->n_vocab);
  t->eos = optional_id(f, "tokenizer.ggml.eos_token_id", t->n_vocab);
  t->unk = optional_id(f, "tokenizer.ggml.unknown_token_id", t->n_vocab);
  /* llama.cpp's defaults per model, then the file's own keys */
  t->add_bos = optional_bool(f, "tokenizer.ggml.add_bos_token", t->model == TOK_SPM);
  t->add_eos = optional_bool(f, "tokenizer.ggml.add_eos_token", false);
  t->add_space_prefix =
      optional_bool(f, "tokenizer.ggml.add_space_prefix", t->model == TOK_SPM);
  if (t->add_bos && t->bos < 0) t->add_bos = false;
  if (t->add_eos && t->eos < 0) t->add_eos = false;
  if (load_special(t, err) != 0) goto fail;
  load_bytes(t);
  return t;
fail:
  tokenizer_free(t);
  return NULL;
}

struct tokenizer *tokenizer_open(const char *path, struct tm_err *err) {
  struct gguf_file *f = gguf_open(path, err);
  if (!f) return NULL;
  struct tokenizer *t = tokenizer_from_gguf(f, err);
  if (!t) tm_err_prefix(err, "%s", path);
  gguf_close(f);
  return t;
}

void tokenizer_free(struct tokenizer *t) {
  if (!t) return;
  free(t->text);
  free(t->offset);
  free(t->type);
  free(t->score);
  free(t->by_text.slot);
  free(t->merges.key);
  free(t->merges.rank);
  free(t->merges.result);
  free(t->special);
  free(t);
}

const char *tokenizer_describe(const struct tokenizer *t) { return t->describe; }
uint32_t tokenizer_n_vocab(const struct tokenizer *t) { return t->n_vocab; }

const char *tokenizer_token_text(const struct tokenizer *t, int32_t id, size_t *len) {
  if (id < 0 || (uint32_t)id >= t->n_vocab) return NULL;
  return tok_text(t, id, len);
}
