/* tokenizer: text -> token ids with the vocabulary a GGUF file stores, the
 * way llama.cpp reads that vocabulary, so a prompt counts the tokens a
 * llama.cpp server would count for it (tests/unit/tokenizer holds the
 * counts against `llama-tokenize` on the fixtures' vocabularies).
 *
 * Two models, as GGUF names them in tokenizer.ggml.model:
 *
 *   "gpt2"  byte-level byte-pair encoding (Qwen2/Qwen3, Llama 3): the text is
 *           split by the pre-tokenizer that tokenizer.ggml.pre names (the
 *           "qwen2" and "llama-bpe" families: contractions, letter runs with
 *           one leading non-letter, digits one at a time or up to three,
 *           punctuation runs, whitespace; tokenizer_bpe.c), each piece's bytes
 *           mapped to the printable characters the vocabulary is written in,
 *           then merged pair by pair in the order of tokenizer.ggml.merges
 *           (lowest rank first, leftmost on a tie).
 *   "llama" SentencePiece-style (Llama 2, Mistral): spaces become U+2581, a
 *           space is put before the text, and neighbouring pieces merge by
 *           the highest tokenizer.ggml.scores while the merged text is a
 *           token; a character that is no token is spelled in its bytes'
 *           <0xXX> tokens (tokenizer_spm.c).
 *
 * Special tokens (tokenizer.ggml.token_type): user-defined ones are always
 * matched in the text as whole tokens before anything else is split;
 * control and unknown ones only with parse_special (a server's prompt:
 * "<|im_start|>" typed in a prompt is one token there). add_special puts the
 * beginning-of-sequence token first where the vocabulary asks for it
 * (tokenizer.ggml.add_bos_token; SentencePiece vocabularies by default).
 *
 * Anything else (another model or pre-tokenizer, a vocabulary without its
 * arrays, tokens that are not valid UTF-8) is refused by tokenizer_from_gguf
 * with one line. The tokenizer copies what it needs: the file may be closed
 * afterwards. */
#ifndef TM_TOKENIZER_H
#define TM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

struct gguf_file;
struct tokenizer;

/* NULL with err set when the file has no usable vocabulary; the message
 * names what is missing or unsupported ("tokenizer.ggml.model is 'none': the
 * file has no vocabulary (tokmeter synth --vocab-from FILE copies one)"). */
struct tokenizer *tokenizer_from_gguf(const struct gguf_file *f, struct tm_err *err);
/* tokenizer_from_gguf on a path. */
struct tokenizer *tokenizer_open(const char *path, struct tm_err *err);
void tokenizer_free(struct tokenizer *t);

/* Encodes len bytes of UTF-8 text. On success returns 0 with *ids a malloc'd
 * array of *n ids (the caller frees it; *ids may be NULL when *n is 0).
 * -1 with err set on text that is not valid UTF-8 or on memory. */
int tokenizer_encode(const struct tokenizer *t, const char *text, size_t len, bool add_special,
                     bool parse_special, int32_t **ids, size_t *n, struct tm_err *err);

/* What the vocabulary is: "gpt2 (qwen2)", "llama (SentencePiece)". */
const char *tokenizer_describe(const struct tokenizer *t);
uint32_t tokenizer_n_vocab(const struct tokenizer *t);
/* The token's text as the vocabulary stores it (not NUL-terminated);
 * NULL for an id out of range. */
const char *tokenizer_token_text(const struct tokenizer *t, int32_t id, size_t *len);

#endif
