/* plan: the tensor list of a shape at a file type, with the tensor types
 * llama.cpp's quantizer (llama-quantize) would choose for that file type, so a
 * synthetic file and a llama.cpp-quantized one of the same shape hold the same
 * types and the same bytes. Used by synth (to write a file) and by ceiling
 * --preset (to analyse a shape without writing one). */
#ifndef TM_PLAN_H
#define TM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "model/shape.h"
#include "util/err.h"

/* File types: the values of llama.cpp's llama_ftype (general.file_type). */
enum model_ftype {
  MODEL_FTYPE_F32 = 0,
  MODEL_FTYPE_F16 = 1,
  MODEL_FTYPE_Q4_0 = 2,
  MODEL_FTYPE_Q4_1 = 3,
  MODEL_FTYPE_Q8_0 = 7,
  MODEL_FTYPE_Q5_0 = 8,
  MODEL_FTYPE_Q5_1 = 9,
  MODEL_FTYPE_Q4_K_S = 14,
  MODEL_FTYPE_Q4_K_M = 15,
  MODEL_FTYPE_Q5_K_S = 16,
  MODEL_FTYPE_Q5_K_M = 17,
  MODEL_FTYPE_Q6_K = 18,
  MODEL_FTYPE_BF16 = 32,
};

/* "Q4_K_M" (case-insensitive) -> ftype; -1 when unknown. */
int model_ftype_from_name(const char *name);
/* "Q4_K_M"; NULL for a value not listed above. */
const char *model_ftype_name(int ftype);
/* Comma-separated names of every supported file type, for messages. */
const char *model_ftype_names(void);

struct plan_tensor {
  char name[64];     /* GGUF tensor name, e.g. "blk.3.ffn_down_exps.weight" */
  uint32_t n_dims;
  uint64_t ne[4];    /* ne[0] = row length; unused dims are 1 */
  uint32_t type;     /* enum ggml_type */
  uint32_t layer;    /* block index, or UINT32_MAX for global tensors */
};

struct model_plan {
  struct model_shape shape;
  int ftype;
  size_t n_tensors;
  struct plan_tensor *tensors; /* in the order a GGUF file would hold them */
};

/* Builds the plan; the shape is validated first. */
int model_plan_make(const struct model_shape *shape, int ftype, struct model_plan *plan,
                    struct tm_err *err);
void model_plan_free(struct model_plan *plan);
/* Total bytes of tensor data (without header or padding). */
uint64_t model_plan_data_bytes(const struct model_plan *plan);

#endif
