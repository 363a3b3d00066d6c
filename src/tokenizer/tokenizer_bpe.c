/* tokenizer_bpe: byte-level byte-pair encoding (tokenizer.ggml.model
 * "gpt2") for the qwen2 and llama-bpe pre-tokenizers.
 *
 * The pre-tokenizer is the regular expression those vocabularies ship,
 *   (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
 *   |[^\r\n\p{L}\p{N}]?\p{L}+ |\p{N}{1,D} | ?[^\s\p{L}\p{N}]+[\r\n]*
 *   |\s*[\r\n]+ |\s+(?!\S) |\s+
 * (D = 1 for qwen2, 3 for llama-bpe), matched by hand alternative by
 * alternative at each position, leftmost first, on Unicode's categories as
 * utf8proc gives them (letters L*, numbers N*) and Unicode's White_Space
 * set. Each piece's bytes are then the symbols (the vocabulary spells byte b
 * as one printable character, so a byte is a token), merged by the lowest
 * merge rank, the leftmost on a tie, until no neighbouring pair has a merge. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"

enum { F_LETTER = 1, F_NUMBER = 2, F_SPACE = 4, F_ANY = 8 };

static bool white_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

static uint8_t flags_of(uint32_t c) {
  uint8_t f = F_ANY;
  switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: f |= F_LETTER; break;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      f |= F_NUMBER; break;
    default: break;
  }
  if (white_space(c)) f |= F_SPACE;
  return f;
}

static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

struct cpts {
  uint32_t *cp;
  uint8_t *fl;
  size_t *off; /* byte offset of each, n + 1 */
  size_t n;
};

static uint8_t F(const struct cpts *c, size_t i) { return i < c->n ? c->fl[i] : 0; }
static uint32_t C(const struct cpts *c, size_t i) { return i < c->n ? c->cp[i] : 0xFFFFFFFFu; }

/* The length in code points of the piece that starts at pos (>= 1). */
static size_t piece_at(const struct cpts *c, size_t pos, size_t max_digits) {
  uint32_t cp = C(c, pos);
  uint8_t f = F(c, pos);
  if (cp == '\'' && pos + 1 < c->n) {
    uint32_t a = ascii_lower(C(c, pos + 1));
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < c->n) {
      uint32_t b = ascii_lower(C(c, pos + 2));
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
  }
  if (!(cp == '\r' || cp == '\n' || (f & F_NUMBER)) &&
      ((f & F_LETTER) || (F(c, pos + 1) & F_LETTER))) {
    size_t p = pos + 1;
    while (F(c, p) & F_LETTER) p++;
    return p - pos;
  }
  if (f & F_NUMBER) {
    size_t p = pos;
    while (p - pos < max_digits && (F(c, p) & F_NUMBER)) p++;
    return p - pos;
  }
  size_t p = pos + (cp == ' ');
  uint8_t f2 = F(c, p);
  if ((f2 & F_ANY) && !(f2 & (F_SPACE | F_LETTER | F_NUMBER))) {
    while ((F(c, p) & F_ANY) && !(F(c, p) & (F_SPACE | F_LETTER | F_NUMBER))) p++;
    while (C(c, p) == '\r' || C(c, p) == '\n') p++;
    return p - pos;
  }
  size_t n_ws = 0, end_rn = 0;
  while (F(c, pos + n_ws) & F_SPACE) {
    if (C(c, pos + n_ws) == '\r' || C(c, pos + n_ws) == '\n') end_rn = n_ws + 1;
    n_ws++;
  }
  if (end_rn) return end_rn;                           /* \s*[\r\n]+ */
  if (n_ws > 1 && pos + n_ws < c->n) return n_ws - 1;  /* \s+(?!\S) */
  if (n_ws) return n_ws;                               /* \s+ */
  return 1;                                            /* nothing matched: alone */
}

static int32_t merge_of(const struct tokenizer *t, int32_t l, int32_t r, int32_t *result) {
  const struct tok_pair_map *m = &t->merges;
  uint64_t key = (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1;
  for (uint64_t i = tok_hash_pair(key) & m->mask;; i = (i + 1) & m->mask) {
    if (!m->key[i]) return -1;
    if (m->key[i] == key) {
      *result = m->result[i];
      return m->rank[i];
    }
  }
}

struct sym {
  int32_t id;
  uint32_t prev, next; /* UINT32_MAX: none */
  bool alive;
};

static void try_pair(const struct tokenizer *t, const struct sym *s, uint32_t l, uint32_t r,
                     struct tok_heap *h) {
  if (l == UINT32_MAX || r == UINT32_MAX) return;
  int32_t res;
  int32_t rank = merge_of(t, s[l].id, s[r].id, &res);
  if (rank < 0) return;
  tok_heap_push(h, (struct tok_bigram){rank, l, r, s[l].id, s[r].id, res});
}

/* One piece's bytes -> tokens. */
static void merge_piece(const struct tokenizer *t, const unsigned char *b, size_t n,
                        struct sym *s, struct tok_heap *h, struct tok_out *o) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = t->byte_token[b[i]];
    if (id < 0) continue; /* a vocabulary without this byte: nothing can stand for it */
    s[m] = (struct sym){id, m ? (uint32_t)(m - 1) : UINT32_MAX, UINT32_MAX, true};
    if (m) s[m - 1].next = (uint32_t)m;
    m++;
  }
  h->n = 0;
  for (size_t i = 1; i < m; i++) try_pair(t, s, (uint32_t)(i - 1), (uint32_t)i, h);
  struct tok_bigram g;
  while (tok_heap_pop(h, &g)) {
    struct sym *l = &s[g.left], *r = &s[g.right];
    if (!l->alive || !r->alive || l->next != g.right || l->id != g.a || r->id != g.b) continue;
    l->id = g.result;
    l->next = r->next;
    r->alive = false;
    if (r->next != UINT32_MAX) s[r->next].prev = g.left;
    try_pair(t, s, l->prev, g.left, h);
    try_pair(t, s, g.left, l->next, h);
  }
  for (size_t i = 0; i < m; i = s[i].next == UINT32_MAX ? m : s[i].next) tok_push(o, s[i].id);
}

void tok_bpe_encode(const struct tokenizer *t, const char *text, size_t len, struct tok_out *o) {
  struct cpts c = {0};
  c.cp = malloc((len + 1) * sizeof *c.cp);
  c.fl = malloc(len + 1);
  c.off = malloc((len + 1) * sizeof *c.off);
  struct sym *s = malloc((len + 1) * sizeof *s);
  struct tok_heap h = {0};
  if (!c.cp || !c.fl || !c.off || !s) {
    o->failed = true;
    goto done;
  }
  for (size_t i = 0; i < len;) { /* valid UTF-8: tokenizer_encode checked */
    uint32_t cp = 0;
    size_t k = tok_utf8_next((const unsigned char *)text + i, len - i, &cp);
    if (!k) k = 1;
    c.cp[c.n] = cp;
    c.fl[c.n] = flags_of(cp);
    c.off[c.n++] = i;
    i += k;
  }
  c.off[c.n] = len;
  size_t max_digits = t->pre == TOK_PRE_LLAMA3 ? 3 : 1;
  for (size_t pos = 0; pos < c.n;) {
    size_t k = piece_at(&c, pos, max_digits);
    size_t b0 = c.off[pos], b1 = c.off[pos + k];
    merge_piece(t, (const unsigned char *)text + b0, b1 - b0, s, &h, o);
    pos += k;
  }
  if (h.failed) o->failed = true;
done:
  free(c.cp);
  free(c.fl);
  free(c.off);
  free(s);
  free(h.v);
}
