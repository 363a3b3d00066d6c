/* synth: writes a random-weight GGUF model of a given shape and file type that
 * llama.cpp can load and run (the tensor list and types of model/plan.h, the
 * metadata llama.cpp's loader requires), fast and deterministically.
 *
 * Contracts:
 *  - Same options and seed -> the same bytes, whatever the thread count: tensor
 *    data is generated in fixed chunks of whole rows (about SYNTH_CHUNK_ELEMS
 *    elements), each from its own generator seeded by (seed, tensor index, chunk
 *    index). Changing SYNTH_CHUNK_ELEMS changes every file.
 *  - The file appears atomically: written to "<path>.tmp.<pid>", renamed at the
 *    end, the temp file removed on any failure. Only a regular file is ever
 *    replaced (see force).
 *  - Weights: normal, per-tensor scale chosen so activations keep their size
 *    through every layer (see synth_tensor_init for the reasoning).
 *  - Vocabulary: tokenizer.ggml.model = "none" with {arch}.vocab_size, or every
 *    tokenizer.* key of another GGUF (vocab_from); token_embd (and output) rows
 *    always equal the vocabulary size. */
#ifndef TM_SYNTH_H
#define TM_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/ggml_types.h"
#include "model/plan.h"
#include "model/shape.h"
#include "util/err.h"

#define SYNTH_CHUNK_ELEMS (1u << 20)
#define SYNTH_DEFAULT_SEED 1u

struct synth_options {
  struct model_shape shape;
  int ftype;              /* enum model_ftype */
  uint64_t seed;          /* default SYNTH_DEFAULT_SEED */
  unsigned n_threads;     /* worker threads; 0 = online CPUs */
  const char *vocab_from; /* GGUF whose tokenizer.* keys to copy; NULL = "none" */
  const char *name;       /* general.name; NULL = "tokmeter-synth-<arch>" */
  bool force;             /* replace an existing regular file at the path; anything
                           * else there (directory, device, FIFO, socket, symbolic
                           * link) is refused with SYNTH_ERR_INPUT, force or not */
};

/* Defaults: seed 1, threads 0 (all CPUs), tokenizer none, no force. The shape
 * and ftype must still be set (shape is zeroed, ftype = Q8_0). */
void synth_options_init(struct synth_options *opt);

enum synth_err_kind {
  SYNTH_ERR_NONE = 0,
  SYNTH_ERR_INPUT = 1,   /* bad shape/type, unusable --vocab-from, file exists,
                          * path is not a regular file, its directory
                          * does not exist */
  SYNTH_ERR_RUNTIME = 2, /* I/O, memory, threads */
};

struct synth_result {
  uint64_t file_bytes;
  uint64_t data_bytes;   /* tensor data without header and padding */
  uint64_t n_params;     /* elements of every tensor */
  uint32_t n_vocab;      /* as written (from vocab_from when given) */
  size_t n_tensors;
  uint32_t type_tensors[GGML_TYPE_COUNT]; /* tensors per ggml type */
  uint64_t type_bytes[GGML_TYPE_COUNT];   /* data bytes per ggml type */
  double seconds;        /* wall time of the whole write */
  int err_kind;          /* enum synth_err_kind when synth_write failed */
};

/* Called from the writing thread after each chunk is on its way to the file. */
typedef void (*synth_progress_fn)(uint64_t done_bytes, uint64_t total_bytes, void *ctx);

/* Writes the model to path. res may be NULL. On failure returns -1 with err set
 * and res->err_kind saying whether the input or the run was at fault. */
int synth_write(const struct synth_options *opt, const char *path, synth_progress_fn progress,
                void *ctx, struct synth_result *res, struct tm_err *err);

/* The mean and standard deviation synth draws a plan tensor's values from. */
void synth_tensor_init(const struct model_shape *shape, const struct plan_tensor *t,
                       float *mean, float *std);

/* The cache path of a preset at a file type and seed:
 * <cache dir>/models/synth-<preset>-<TYPE>-s<seed>.gguf (directory created). */
int synth_cache_path(const char *preset, int ftype, uint64_t seed, char *buf, size_t n,
                     struct tm_err *err);

/* Ensures the cached model of a preset exists, writing it (atomically) only when
 * missing; *path receives its path, *written whether it was written now. Two
 * processes racing write identical bytes, so either rename is fine. */
int synth_cached(const char *preset, int ftype, uint64_t seed, unsigned n_threads,
                 synth_progress_fn progress, void *ctx, char *path, size_t n, bool *written,
                 struct tm_err *err);

#endif
