/* tokenizer: the entry (tokenizer.h): UTF-8 checked, special tokens cut out
 * of the text as whole tokens (longest first), each stretch of text between
 * them handed to its model, the beginning and end tokens added. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

size_t tok_utf8_next(const unsigned char *s, size_t n, uint32_t *cp) {
  if (!n) return 0;
  unsigned char c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (!len || len > n || c > 0xF4) return 0;
  uint32_t v = c & (0x7F >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (s[i] & 0x3F);
  }
  static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min_of[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

size_t tok_utf8_put(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

void tok_push(struct tok_out *o, int32_t id) {
  if (o->failed) return;
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 64;
    int32_t *ids = realloc(o->ids, cap * sizeof *ids);
    if (!ids) {
      o->failed = true;
      return;
    }
    o->ids = ids;
    o->cap = cap;
  }
  o->ids[o->n++] = id;
}

static bool bigram_before(const struct tok_bigram *x, const struct tok_bigram *y) {
  return x->key < y->key || (x->key == y->key && x->left < y->left);
}

void tok_heap_push(struct tok_heap *h, struct tok_bigram x) {
  if (h->failed) return;
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 64;
    struct tok_bigram *v = realloc(h->v, cap * sizeof *v);
    if (!v) {
      h->failed = true;
      return;
    }
    h->v = v;
    h->cap = cap;
  }
  size_t i = h->n++;
  while (i > 0 && bigram_before(&x, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
}

bool tok_heap_pop(struct tok_heap *h, struct tok_bigram *out) {
  if (!h->n) return false;
  *out = h->v[0];
  struct tok_bigram last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && bigram_before(&h->v[c + 1], &h->v[c])) c++;
    if (!bigram_before(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return true;
}

/* A stretch of the text: raw text (token < 0) or one special token. */
struct frag {
  size_t off, len;
  int32_t token;
};

struct frags {
  struct frag *v;
  size_t n, cap;
};

static int frags_insert(struct frags *f, size_t at, struct frag x) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? 2 * f->cap : 16;
    struct frag *v = realloc(f->v, cap * sizeof *v);
    if (!v) return -1;
    f->v = v;
    f->cap = cap;
  }
  memmove(f->v + at + 1, f->v + at, (f->n - at) * sizeof *f->v);
  f->v[at] = x;
  f->n++;
  return 0;
}

/* Cuts every occurrence of each special token (longest first) out of the
 * raw fragments, left to right within each. */
static int partition(const struct tokenizer *t, const char *text, struct frags *f,
                     bool parse_special) {
  for (size_t si = 0; si < t->n_special; si++) {
    int32_t id = t->special[si];
    int32_t ty = t->type[id];
    if (!parse_special && (ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_UNKNOWN)) continue;
    size_t tl;
    const char *tt = tok_text(t, id, &tl);
    for (size_t i = 0; i < f->n; i++) {
      struct frag fr = f->v[i];
      if (fr.token >= 0 || fr.len < tl) continue;
      const char *base = text + fr.off;
      const char *hit = NULL;
      for (size_t k = 0; k + tl <= fr.len; k++)
        if (base[k] == tt[0] && !memcmp(base + k, tt, tl)) {
          hit = base + k;
          break;
        }
      if (!hit) continue;
      size_t before = (size_t)(hit - base), after = fr.len - before - tl;
      /* [before][token][after]; the after part is scanned next (i + 1/2) */
      size_t at = i;
      if (before) {
        f->v[at].len = before;
        at++;
        if (frags_insert(f, at, (struct frag){fr.off + before, tl, id}) != 0) return -1;
      } else {
        f->v[at] = (struct frag){fr.off, tl, id};
      }
      if (after &&
          frags_insert(f, at + 1, (struct frag){fr.off + before + tl, after, -1}) != 0)
        return -1;
      i = at; /* the loop's i++ moves to the after part */
    }
  }
  return 0;
}

int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t **ids, size_t *n, struct tm_err *err) {
  *ids = NULL;
  *n = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t k = tok_utf8_next((const unsigned char *)text + i, len - i, &cp);
    if (!k) return tm_errf(err, "the text is not valid UTF-8 (byte %zu)", i);
    i += k;
  }
  struct frags f = {0};
  struct tok_out o = {0};
  if (len && (frags_insert(&f, 0, (struct frag){0, len, -1}) != 0 ||
              partition(t, text, &f, parse_special) != 0)) {
    free(f.v);
    return tm_errf(err, "out of memory");
  }
  if (add_special && t->add_bos) tok_push(&o, t->bos);
  bool prev_special = true; /* SentencePiece: a space before the first text */
  for (size_t i = 0; i < f.n; i++) {
    if (f.v[i].token >= 0) {
      tok_push(&o, f.v[i].token);
      prev_special = true;
      continue;
    }
    if (t->model == TOK_SPM) {
      tok_spm_encode(t, text + f.v[i].off, f.v[i].len, t->add_space_prefix && prev_special, &o);
    } else {
      tok_bpe_encode(t, text + f.v[i].off, f.v[i].len, &o);
    }
    prev_special = false;
  }
  if (add_special && t->add_eos) tok_push(&o, t->eos);
  free(f.v);
  if (o.failed) {
    free(o.ids);
    return tm_errf(err, "out of memory");
  }
  *ids = o.ids;
  *n = o.n;
  return 0;
}
