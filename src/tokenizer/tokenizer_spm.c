/* tokenizer_spm: SentencePiece-style encoding (tokenizer.ggml.model
 * "llama"), as llama.cpp applies such a vocabulary: every space becomes
 * U+2581 ("▁"), one is put before the text where add_space_prefix asks,
 * the text's characters are the first symbols, and the neighbouring pair
 * whose joined text is the token of the highest score merges first (the
 * leftmost on a tie), again and again. A symbol left that is no token (a
 * character outside the vocabulary: an emoji, a rare letter) is spelled as
 * its bytes' <0xXX> tokens, or the unknown token where the vocabulary has no
 * byte tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

struct sym {
  size_t off, n; /* bytes of the escaped text; n = 0 once merged away */
  uint32_t prev, next;
};

static void try_pair(const struct tokenizer *t, const char *s, const struct sym *y, uint32_t l,
                     uint32_t r, struct tok_heap *h) {
  if (l == UINT32_MAX || r == UINT32_MAX) return;
  int32_t id = tok_find(t, s + y[l].off, y[l].n + y[r].n);
  if (id < 0) return;
  tok_heap_push(h, (struct tok_bigram){-(double)t->score[id], l, r, (int32_t)y[l].n,
                                       (int32_t)y[r].n, id});
}

void tok_spm_encode(const struct tokenizer *t, const char *text, size_t len, bool prefix,
                    struct tok_out *o) {
  /* the escaped text: U+2581 (3 bytes) for each space */
  size_t spaces = 0;
  for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
  size_t n = len + 2 * spaces + (prefix ? 3 : 0);
  char *s = malloc(n + 1);
  struct sym *y = malloc((n + 1) * sizeof *y);
  struct tok_heap h = {0};
  if (!s || !y) {
    o->failed = true;
    goto done;
  }
  size_t w = 0;
  if (prefix) {
    memcpy(s, "\xE2\x96\x81", 3);
    w = 3;
  }
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') {
      memcpy(s + w, "\xE2\x96\x81", 3);
      w += 3;
    } else {
      s[w++] = text[i];
    }
  }
  uint32_t m = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t k = tok_utf8_next((const unsigned char *)s + i, n - i, &cp);
    if (!k) k = 1;
    y[m] = (struct sym){i, k, m ? m - 1 : UINT32_MAX, UINT32_MAX};
    if (m) y[m - 1].next = m;
    m++;
    i += k;
  }
  for (uint32_t i = 1; i < m; i++) try_pair(t, s, y, i - 1, i, &h);
  struct tok_bigram g;
  while (tok_heap_pop(&h, &g)) {
    struct sym *l = &y[g.left], *r = &y[g.right];
    if (!l->n || !r->n || l->next != g.right || (int32_t)l->n != g.a || (int32_t)r->n != g.b)
      continue;
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next != UINT32_MAX) y[r->next].prev = g.left;
    try_pair(t, s, y, l->prev, g.left, &h);
    try_pair(t, s, y, g.left, l->next, &h);
  }
  for (uint32_t i = 0; m && i != UINT32_MAX; i = y[i].next) {
    int32_t id = tok_find(t, s + y[i].off, y[i].n);
    if (id >= 0) {
      tok_push(o, id);
      continue;
    }
    /* only a single character can be no token: merges make tokens */
    for (size_t b = 0; b < y[i].n; b++) {
      int32_t bt = t->byte_token[(unsigned char)s[y[i].off + b]];
      tok_push(o, bt >= 0 ? bt : t->unk);
    }
  }
  if (h.failed) o->failed = true;
done:
  free(s);
  free(y);
  free(h.v);
}
