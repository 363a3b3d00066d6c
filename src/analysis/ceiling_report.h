/* ceiling_report: `tokmeter ceiling`'s figures for one model (a GGUF file, a
 * preset at a type, or a napkin size) on one machine (the probe's rates or
 * the user's): decode at each depth, the practical range, the dense bound,
 * prefill on the vector path and on the int8 tiles, the context that fits,
 * and verdicts on measured rates; and its --json document. The ceilings
 * themselves come from model/ceiling.h ceiling_of_workload, as in every
 * command. Library code: nothing printed. */
#ifndef TM_ANALYSIS_CEILING_REPORT_H
#define TM_ANALYSIS_CEILING_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/analysis.h"
#include "model/ceiling.h"
#include "util/err.h"

#define CEILING_REPORT_MAX_DEPTHS 16

/* The machine side: the rates and where they came from. */
struct ceiling_machine {
  double bandwidth;        /* B/s */
  uint32_t bw_threads;     /* 0 = given */
  double compute;          /* op/s on the chosen path; 0 = unknown */
  uint32_t compute_threads;
  char compute_path[48];   /* "int8 (avx512_vnni)", "f32 (avx512f)", "given", "" */
  /* On a probe with int8 tiles (AMX), their rate, for runtimes whose kernels
   * use them (the int8 path only); 0 otherwise. */
  double tile_compute;
  char tile_path[24];
  struct ceiling_rates rates; /* for ceiling_of_workload (tiles off) */
  bool probed, quick;
  double memory_bytes;     /* 0 = unknown */
};

struct ceiling_query {
  const struct model_cost *cost; /* NULL: the napkin (size_bytes x active_fraction) */
  double size_bytes, active_fraction;
  const char *file, *preset, *type_name; /* what the model is (JSON) */
  uint32_t kv_type;
  uint32_t prompt_tokens;
  uint64_t depths[CEILING_REPORT_MAX_DEPTHS];
  size_t n_depths;
  double overhead_bytes;
  double measured_decode, measured_prefill; /* < 0: not given */
  /* --batch: aggregate decode ceilings of B streams at depths[0] (0 when
   * none), model/ceiling.h ceiling_batch */
  uint32_t batches[CEILING_REPORT_MAX_DEPTHS];
  size_t n_batches;
};

struct ceiling_depth_row {
  uint64_t depth;
  double bytes_per_token, kv_bytes, tok_s;
  bool known; /* the KV cache read at this depth is known */
};

struct ceiling_report {
  bool napkin, kv_known, has_compute, moe_like;
  double bytes_total, bpt0, decode0, dense;
  double prefill_flops, prefill, prefill_bound, prefill_tiles;
  bool fits_known, fits_capped;
  uint64_t fits;
  struct ceiling_depth_row by_depth[CEILING_REPORT_MAX_DEPTHS];
  size_t n_by_depth;
  struct ceiling_verdict verdicts[2];
  size_t n_verdicts;
  char prefill_verdict_missing[160]; /* --measured-prefill with no ceiling: why; "" */
  struct ceiling_batch_point by_batch[CEILING_REPORT_MAX_DEPTHS];
  size_t n_by_batch;
  uint32_t batch_turn;     /* the smallest batch (to 65536) whose step is compute
                              bound; 0: none, or no compute rate */
};

/* The machine side from a probe: at exactly `threads` threads (0: each
 * figure's best over the thread counts, and the count it came from), the
 * compute on the path model/ceiling.h chooses for a model with this share of
 * quantized bytes and a prompt of prompt_tokens (unless m->compute was
 * given: kept), the tiles' rate where the probe has them, memory from the
 * probe unless given. m's given figures (compute, memory) are set by the
 * caller first. 0; -2 with err when the probe did not measure `threads`
 * (the user's value); -1 with err when it has no bandwidth. */
struct machine_probe;
int ceiling_machine_from_probe(const struct machine_probe *p, uint32_t threads,
                               double quantized_fraction, uint32_t prompt_tokens,
                               struct ceiling_machine *m, struct tm_err *err);

/* The figures; 0, or -1 with err when a result is not a finite number
 * (inputs far outside any real model or machine), naming the inputs. */
int ceiling_report_make(const struct ceiling_query *q, const struct ceiling_machine *m,
                        struct ceiling_report *r, struct tm_err *err);
/* The --json document (docs/ceiling.md); NULL when out of memory. */
json_t *ceiling_report_json(const struct ceiling_query *q, const struct ceiling_machine *m,
                            const struct ceiling_report *r);

#endif
