/* tokenizer_internal: the tokenizer's tables, shared by its files:
 * tokenizer_load.c (from GGUF), tokenizer.c (special tokens, the entry),
 * tokenizer_bpe.c and tokenizer_spm.c (the two models). Not for other modules. */
#ifndef TM_TOKENIZER_INTERNAL_H
#define TM_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

enum tok_model { TOK_BPE = 0, TOK_SPM };
enum tok_pre { TOK_PRE_NONE = 0, TOK_PRE_QWEN2, TOK_PRE_LLAMA3 };

/* tokenizer.ggml.token_type values (llama.cpp's numbering, GGUF's). */
enum {
  TOK_TYPE_NORMAL = 1,
  TOK_TYPE_UNKNOWN = 2,
  TOK_TYPE_CONTROL = 3,
  TOK_TYPE_USER_DEFINED = 4,
  TOK_TYPE_UNUSED = 5,
  TOK_TYPE_BYTE = 6,
};

/* Open addressing, power-of-two slots, -1 = empty. */
struct tok_str_map {
  int32_t *slot; /* token id */
  uint64_t mask;
};
struct tok_pair_map {
  uint64_t *key;  /* (left << 32 | right) + 1; 0 = empty */
  int32_t *rank, *result;
  uint64_t mask;
};

struct tokenizer {
  enum tok_model model;
  enum tok_pre pre;
  char describe[64];
  uint32_t n_vocab;
  char *text;       /* every token's bytes, back to back */
  uint64_t *offset; /* n_vocab + 1 */
  int32_t *type;    /* n_vocab; TOK_TYPE_NORMAL when the file has none */
  float *score;     /* n_vocab (SentencePiece); NULL for BPE */
  struct tok_str_map by_text;
  struct tok_pair_map merges; /* BPE: (left id, right id) -> rank, merged id */
  int32_t bos, eos, unk;      /* -1 when none */
  bool add_bos, add_eos, add_space_prefix;
  /* Special tokens matched as whole tokens, longest text first. */
  int32_t *special;
  size_t n_special;
  int32_t byte_token[256]; /* SPM <0xXX>; BPE the mapped byte's token; -1 none */
};

static inline const char *tok_text(const struct tokenizer *t, int32_t id, size_t *len) {
  *len = (size_t)(t->offset[id + 1] - t->offset[id]);
  return t->text + t->offset[id];
}

static inline uint64_t tok_hash_pair(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

/* The token whose text is exactly s[0..n), or -1. */
int32_t tok_find(const struct tokenizer *t, const char *s, size_t n);

/* A growing id array. */
struct tok_out {
  int32_t *ids;
  size_t n, cap;
  bool failed; /* out of memory */
};
void tok_push(struct tok_out *o, int32_t id);

/* One UTF-8 sequence at s (n bytes left): its length (1..4) and code point,
 * or 0 when invalid (overlong, surrogate, beyond U+10FFFF, cut). */
size_t tok_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
size_t tok_utf8_put(uint32_t cp, char *out); /* 1..4 bytes written */

/* A candidate merge of the neighbours left and right (symbol indices): the
 * lowest key first, the leftmost on a tie. a, b: what the two symbols were
 * when it was found (ids for BPE, byte lengths for SentencePiece), so a
 * candidate whose symbols have changed since is recognised and dropped. */
struct tok_bigram {
  double key;
  uint32_t left, right;
  int32_t a, b, result;
};
struct tok_heap {
  struct tok_bigram *v;
  size_t n, cap;
  bool failed;
};
void tok_heap_push(struct tok_heap *h, struct tok_bigram x);
bool tok_heap_pop(struct tok_heap *h, struct tok_bigram *out);

/* The two models on one fragment of raw text (special tokens already cut
 * out). spm_prefix: SentencePiece's leading space for this fragment. */
void tok_bpe_encode(const struct tokenizer *t, const char *s, size_t n, struct tok_out *o);
void tok_spm_encode(const struct tokenizer *t, const char *s, size_t n, bool spm_prefix,
                    struct tok_out *o);

#endif
