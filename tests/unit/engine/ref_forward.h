/* ref_forward: a plain float64 reference forward pass over a GGUF file, written
 * separately from the engine so the two can check each other, plus the reader
 * of the llama.cpp reference fixtures (gguf/NAME.llama-cpp-reference.json) and the
 * teacher-forcing comparison the correctness tests share.
 *
 * Architectures: llama, qwen2, qwen3, qwen3moe, computed the way llama.cpp
 * computes them: token embedding, per layer RMSNorm -> Q/K/V (+ qwen2 biases)
 * -> qwen3 per-head RMSNorm of Q and K -> RoPE (NORM = adjacent pairs for
 * llama, NEOX = (i, i + n_rot/2) for the qwen family) -> causal GQA attention
 * scaled by 1/sqrt(head_dim) -> output projection -> residual -> RMSNorm ->
 * SwiGLU FFN, or for qwen3moe router softmax -> top-k -> weights renormalized
 * to sum 1 -> mixture of expert SwiGLUs -> residual; final RMSNorm and the
 * output head (token_embd when output.weight is absent).
 *
 * Every weight is dequantized once with ggml_dequantize_ref into doubles (fine
 * for the tiny fixtures: tens of MB), and activations stay float64: the
 * reference carries no activation quantization and no F16 KV cache, so its
 * differences from llama.cpp or the engine are theirs, not its own.
 * Test-only code (#include "ref_forward.c" from a test file). */
#ifndef TM_REF_FORWARD_H
#define TM_REF_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

struct ref_model;

/* Reads and dequantizes the whole model. NULL with err set for an unknown
 * architecture, a missing tensor or a type without a reference dequantizer. */
struct ref_model *ref_model_load(const char *path, struct tm_err *err);
void ref_model_free(struct ref_model *m);

uint32_t ref_n_vocab(const struct ref_model *m);
const char *ref_arch(const struct ref_model *m);
/* True when every weight matrix is F32, F16 or BF16 (no quantized type):
 * the tight tolerances apply. */
bool ref_all_float(const struct ref_model *m);
/* True when some matrix is a K-quant (Q2_K..Q6_K: 256-element activation blocks). */
bool ref_has_kquant(const struct ref_model *m);

/* Off by default (pure float64). On: emulate the roundings llama.cpp's CPU
 * backend applies, as values, still in float64: each activation row is rounded
 * to the format its weight type's dot product consumes (F16 for F16 weights,
 * Q8_0 blocks for Q4_0..Q8_0, Q8_K blocks for K-quants), K and V go through an
 * F16 cache, Q is rounded to F16 before it meets K, and attention runs as
 * llama.cpp's CPU flash attention (online softmax, V accumulator in F16).
 * RMSNorm and RoPE take ggml's f32 arithmetic (scale = 1.0f / sqrtf((float)
 * mean + eps); angles from an f32 theta_scale raised by repeated multiply,
 * FMA-contracted rotation): single ulps there decide 8-bit roundings on
 * quantized-embedding files. Used to tell an
 * architecture mistake (large errors either way) from activation-rounding
 * noise (errors that shrink with the emulation). */
void ref_set_llamacpp_rounding(struct ref_model *m, bool on);

/* Logits for every position of tokens[0..n): logits has n x n_vocab doubles,
 * row i = the next-token logits after tokens[0..i]. -1 on a bad token id or
 * out of memory. */
int ref_logits(const struct ref_model *m, const int32_t *tokens, int n, double *logits,
               struct tm_err *err);

/* In place: x[i] -= logsumexp(x). */
void ref_log_softmax(double *x, uint32_t n);

/* ------------------------------------------------------------ fixtures -- */
#define REF_FIX_TOP 5
struct ref_fixture {
  char model[256];       /* "tiny-llama-f16.gguf" */
  int n_prompt, n_gen;
  int32_t prompt[64];
  int32_t gen[64];
  /* step i: llama.cpp's top-5 after prompt + gen[:i] */
  int32_t top_id[64][REF_FIX_TOP];
  double top_lp[64][REF_FIX_TOP];
};
int ref_fixture_load(const char *json_path, struct ref_fixture *fx, struct tm_err *err);
/* Names (basename) of every *.llama-cpp-reference.json in dir, sorted; returns
 * the count (at most max), -1 when the directory cannot be read. */
int ref_fixture_list(const char *dir, char names[][128], int max);
/* The teacher-forcing token stream: prompt then gen[:n_gen-1]; returns its
 * length. Step i's logits are row n_prompt - 1 + i. */
int ref_fixture_tokens(const struct ref_fixture *fx, int32_t *out);

/* Comparison of log-softmaxed logits (n_steps rows of n_vocab, already the
 * rows for steps 0..n_steps) with llama.cpp's top-5. */
struct ref_cmp {
  double max_err;        /* largest |lp - llama.cpp lp| over every step's top-5 */
  int max_err_step, max_err_id;
  int n_clear;           /* steps with llama.cpp's top1-top2 margin > margin */
  int n_top_mismatch;    /* of those, steps whose argmax differs */
  int first_mismatch_step;
};
/* lp: the row of step i is lp + i * n_vocab (log-probabilities). */
void ref_compare_fixture(const struct ref_fixture *fx, const double *lp, uint32_t n_vocab,
                         int n_steps, double margin, struct ref_cmp *out);

#endif
