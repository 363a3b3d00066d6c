/* engine: tokmeter's embedded CPU inference engine for GGUF models of the
 * architectures llama, qwen2, qwen3 (dense) and qwen3moe (mixture of experts).
 *
 * Weights stay memory-mapped (pointers into the file); the KV cache is F16,
 * sized from the context asked for. prefill() runs a batch of tokens through
 * the model at once (matrix-matrix), decode() one token (matrix-vector); both
 * append to the KV cache. Greedy next token = argmax of the logits.
 * Library code: errors are returned (one line naming the architecture, tensor
 * or type that cannot run), nothing is printed. */
#ifndef TM_ENGINE_H
#define TM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels.h"
#include "util/err.h"

struct engine;

struct engine_options {
  int n_threads;             /* 0 = online CPUs */
  uint32_t n_ctx;            /* KV cache capacity in tokens (default 4096, at
                                most the model's context_length) */
  enum kernel_path kernels;  /* KERNEL_AUTO by default; tests force KERNEL_SCALAR */
  uint32_t max_batch;        /* largest prefill batch (default 512); the engine
                                takes less when its buffers would break the
                                memory bound (engine_memory), down to 32 */
  bool hugepages;            /* copy the weights into transparent huge pages at
                                load instead of reading them through the file
                                mapping (off by default: weights then are NOT
                                memory-mapped; one copy of the file, resident
                                memory stays the file size). Without it the
                                mapping is read through 2 MiB page-cache folios
                                where the kernel has them (hugemap.c), which
                                gives the same speed without the copy */
  uint32_t n_seq;            /* sequences the KV cache holds (default 1, at most
                                ENGINE_MAX_SEQ), each with its own positions and
                                n_ctx tokens of cache: engine_decode_batch
                                advances several together */
  size_t decode_chunk_bytes; /* weight bytes per decode chunk (mm_layout.h);
                                0 (default): chosen for this CPU
                                (engine_auto_decode_chunk_bytes) */
};
void engine_options_init(struct engine_options *o);

/* Maps the file and builds the model. Fails with a clear message for an
 * architecture or weight type it cannot run, or a file whose tensors do not
 * match the architecture's shapes. */
struct engine *engine_load(const char *path, const struct engine_options *opt,
                           struct tm_err *err);
void engine_free(struct engine *e);

#define ENGINE_MAX_SEQ 1024u

struct engine_info {
  char arch[32];
  uint32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
  uint32_t n_expert, n_expert_used;
  uint32_t n_ctx;              /* KV capacity, per sequence */
  uint32_t n_seq;              /* sequences (engine_options.n_seq) */
  /* The largest prefill batch the engine runs (longer prompts go in batches
   * of it), and what engine_options asked (capped at n_ctx): smaller when
   * the buffers of the asked batch would break the memory bound (below). */
  uint32_t max_batch, max_batch_asked;
  int n_threads;
  const char *kernel_path;     /* "avx512_vnni", ... */
  const char *best_cpu_path;   /* what this CPU could run */
  /* "amx_int8" when the kernels run Q4_0 and Q8_0 prefill batches of
   * prefill_tiles_min_batch tokens and more on matrix tiles; NULL otherwise */
  const char *prefill_tiles;
  uint32_t prefill_tiles_min_batch;
  uint64_t file_bytes, kv_bytes;
  double load_ms;              /* map + first touch of every weight page */
  bool hugepages;              /* weights were copied into huge pages */
  size_t decode_chunk_bytes;   /* weight bytes per decode chunk (mm_layout.h) */
  double huge_share;           /* share (0..1) of the weights read through 2 MiB
                                  pages: memory-mapped, the page cache's 2 MiB
                                  folios (hugemap.c), or the anonymous copy's
                                  transparent huge pages with hugepages (below 1
                                  when the kernel gives fewer); -1 when the
                                  kernel does not say */
  const uint8_t *weights;      /* the tensor data as the engine reads it (the file
                                  mapping from the data section on) */
  uint64_t weights_bytes;
};
void engine_get_info(const struct engine *e, struct engine_info *out);
/* engine_info.prefill_tiles of an engine with the default kernels, before
 * any model is loaded (NULL: none on this CPU). */
const char *engine_default_prefill_tiles(void);
/* The smallest prefill batch the tile kernels take (= KERNEL_TILES_MIN_COLS;
 * the bench's table footnote says 16 in words). */
#define ENGINE_TILES_MIN_BATCH 16

/* What the engine holds in memory, against the bound it keeps: the weights
 * stay memory-mapped (one copy, the file's) and its resident memory stays
 * within the file size plus the KV cache plus 10% (ENGINE_MEMORY_SLACK).
 * Measured when asked (engine_mem.c): the resident bytes of the weights'
 * mapping and of the KV cache's mapping (mincore(2), page by page; -1 where
 * it fails), and the bytes the engine allocated for
 * activation buffers and per-thread state (allocated, so at least what of
 * them is resident). Not counted: the worker threads' stacks (the few pages
 * each touches) and the caller's own buffers (e.g. its logits). The KV
 * cache's pages become resident as positions are written, so a figure read
 * after the deepest run of a model is its peak. */
#define ENGINE_MEMORY_SLACK 0.10
struct engine_memory {
  int64_t weights_resident;  /* bytes; -1 unknown */
  int64_t kv_resident;       /* bytes; -1 unknown */
  uint64_t buffers;          /* bytes allocated */
  int64_t total;             /* the three summed; -1 when a part is unknown */
  uint64_t file_bytes, kv_bytes;
  uint64_t limit;            /* (file_bytes + kv_bytes) x (1 + ENGINE_MEMORY_SLACK) */
};
void engine_memory(const struct engine *e, struct engine_memory *out);
/* Resident bytes of [p, p + len) of this process's memory (mincore; pages cut
 * by the range's ends count by their part inside it); -1 when it cannot be
 * read (an unmapped range, out of memory). */
int64_t engine_resident_bytes(const void *p, size_t len);

/* The decode chunk budget engine_options.decode_chunk_bytes = 0 stands
 * for: 2 MiB on AMD CPUs, whose cores (measured on a Zen 5 EPYC) stream a
 * decode 5-14% faster through chunks of 1-2 MiB than of 256 KiB; 256 KiB
 * elsewhere (the team's Xeon streamed longer chunks slower). */
size_t engine_auto_decode_chunk_bytes(void);

/* Clears the KV cache (position 0 again, every sequence). */
void engine_reset(struct engine *e);
/* Tokens currently in the KV cache (of sequence 0). */
uint32_t engine_n_past(const struct engine *e);
/* Changes the thread count (rebuilds the pool). */
int engine_set_threads(struct engine *e, int n_threads, struct tm_err *err);

/* Runs n tokens as one batch at positions n_past..n_past+n-1. logits: NULL,
 * or n_vocab floats for the LAST token (all_logits: n x n_vocab, for tests).
 * Fails when the cache would overflow or a token id is out of range. */
int engine_prefill(struct engine *e, const int32_t *tokens, uint32_t n, float *logits,
                   struct tm_err *err);
int engine_prefill_all_logits(struct engine *e, const int32_t *tokens, uint32_t n,
                              float *all_logits, struct tm_err *err);
/* One token at position n_past; logits: n_vocab floats (required). */
int engine_decode(struct engine *e, int32_t token, float *logits, struct tm_err *err);

/* engine_decode, then *next = engine_argmax(logits, n_vocab), the greedy
 * pick, taken mostly inside the output head's job (each chunk of logits
 * compared while in its thread's cache): what a timed greedy step should
 * call. */
int engine_decode_greedy(struct engine *e, int32_t token, float *logits, int32_t *next,
                         struct tm_err *err);

/* ---- several sequences (engine_options.n_seq) ----
 * Each sequence has its own positions and its own region of the KV cache;
 * the single-sequence calls above act on sequence 0. A decode step of B
 * sequences computes B tokens with each weight read once for all of them
 * (the matrix products take B columns, as a prompt's do), attention per
 * sequence over its own cache; for qwen3moe each routed expert runs once
 * for the tokens routed to it. Any subset of sequences can step together,
 * so sequences join and leave between steps (continuous batching): reset
 * one, prefill its prompt, add it to the next step. */
uint32_t engine_n_seq(const struct engine *e);
void engine_seq_reset(struct engine *e, uint32_t seq);
uint32_t engine_seq_n_past(const struct engine *e, uint32_t seq);
/* Keeps the first n tokens of sequence seq (its cache cells below n are
 * never rewritten by later positions, so decoding on from n is as if the
 * rest had never run); n above its length changes nothing. */
void engine_seq_truncate(struct engine *e, uint32_t seq, uint32_t n);
/* engine_prefill into sequence seq. */
int engine_seq_prefill(struct engine *e, uint32_t seq, const int32_t *tokens, uint32_t n,
                       float *logits, struct tm_err *err);
/* One decode step of n distinct sequences: tokens[i] at the next position
 * of sequence seq[i]. logits: n x n_vocab floats (row i for seq[i]); next:
 * NULL or n greedy picks (engine_argmax of each row). More than max_batch
 * sequences run as several passes of max_batch rows (the weights read once
 * per pass). Fails, running nothing, on a sequence out of range or named
 * twice, a full cache, or a token id out of range. */
int engine_decode_batch(struct engine *e, const uint32_t *seq, const int32_t *tokens, uint32_t n,
                        float *logits, int32_t *next, struct tm_err *err);

/* Index of the largest logit (greedy sampling); -1 only when TOKMETER_KERNELS
 * names a kernel set this machine cannot run (no engine loads then either). */
int32_t engine_argmax(const float *logits, uint32_t n_vocab);

#endif
