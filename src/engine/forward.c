/* forward: the transformer forward pass of the embedded engine, written top to
 * bottom in the order the math happens (forward_batch at the end of the file),
 * with the parallel building blocks above it.
 *
 * Threads: every matrix product is one tpool_run over chunks of output rows
 * (each thread streams its own contiguous region first, then helps with the
 * others' leftovers: see mm_job); several matrices that read the same input
 * (Q/K/V, gate/up, all active experts) share one run. Chunk sizes depend on
 * the matrix, on decode vs prefill, and in decode on the CPU and the thread
 * count (mm_layout.h), but each output element is computed by one kernel
 * call over the whole row, so any chunking, and 1 or N threads, give
 * bit-identical logits. Attention runs one
 * (token, KV head) per work item, with the query heads that share it. In
 * decode, threads waiting between jobs prefetch the next job's weights
 * (warm.h; e->warm_next names it).
 *
 * Activations are quantized once per matrix input and weight format (see
 * kernels.h); decode is the same code with a batch of one. */
#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/engine_impl.h"
#include "engine/mm_layout.h"
#include "engine/step_prof.h"
#include "engine/warm.h"
#include "util/fp16.h"

/* ----------------------------------------------------- matrix products -- */


/* Work split of one parallel matrix job: the job's matrices laid end to end
 * are cut into one contiguous region per thread, of equal bytes (mm_bounds),
 * and each region into chunks. A thread takes its own region's chunks in
 * address order (its weight reads form one sequential stream, which the
 * hardware and software prefetchers follow across chunk boundaries), then
 * takes what is left of the other regions (the busy thread's tail), so a
 * thread slowed by other load on the machine is not waited for. Every chunk
 * is taken exactly once (fetch_add on the region's counter, checked against
 * its chunk count) and computed the same way whoever takes it, so results do
 * not depend on the thread count. In decode a region is often one chunk (2
 * MiB chunks on AMD CPUs), so its last chunk is shared at row granularity
 * where the kernel path can (gemv_share, kernels.h): a thread done with
 * everything else takes the back half of what its owner has left. */
struct mm_region {
  alignas(64) atomic_long next; /* next chunk of this region: alone on its cache line */
  long end;                     /* its chunk count */
  long first_slot;              /* its first chunk's index in the whole job (amax) */
  /* Its last chunk, when the kernel path can share it (decode, no argmax):
   * whoever takes it computes it as its owner, and a thread done with
   * everything else takes the back half of what is left (gemv_share). */
  const struct mm_item *share_item; /* NULL: not shared */
  int64_t share_r0, share_r1;
  struct gemv_share share;
};

struct mm_job {
  alignas(64) const struct kernel_ops *ops;
  struct mm_item *items;
  int n_items;
  int n_regions;
  size_t decode_bytes;
  struct mm_bound bound[MM_MAX_REGIONS + 1];
  struct mm_region region[MM_MAX_REGIONS];
};

/* Chunk j of region k: its item and rows [*r0, *r1); NULL past the region's
 * end. Walks the items the region meets, in order (few: <= 2 * n_expert). */
static const struct mm_item *mm_chunk_at(const struct mm_job *job, int k, long j, int64_t *r0,
                                         int64_t *r1) {
  const struct mm_bound *b = job->bound;
  for (int i = b[k].item; i < job->n_items && i <= b[k + 1].item; i++) {
    int64_t s, e;
    if (!mm_region_rows(job->items, b, k, i, &s, &e)) continue;
    const struct mm_item *it = &job->items[i];
    const int64_t cr = mm_chunk_rows(it->w, e - s, it->ncols, job->decode_bytes);
    const long cnt = (long)((e - s + cr - 1) / cr);
    if (j >= cnt) {
      j -= cnt;
      continue;
    }
    *r0 = s + j * cr;
    *r1 = *r0 + cr < e ? *r0 + cr : e;
    return it;
  }
  return NULL;
}

/* Computes chunk j of region k. */
static void mm_chunk(struct mm_job *job, int k, long j, int ith) {
  STEP_PROF_BEGIN(prof_t0);
  int64_t r0, r1;
  const struct mm_item *it = mm_chunk_at(job, k, j, &r0, &r1);
  if (!it) return;
  struct mm_region *rg = &job->region[k];
  int64_t rows = r1 - r0; /* computed here: a shared chunk's helpers count their own */
  if (rg->share_item == it && rg->share_r0 == r0)
    rows = job->ops->gemv_share[it->w->type](it->w->n, it->wdata, it->w->row_bytes, r0, r1,
                                             it->act, it->out, &rg->share, true);
  else if (it->ncols > 1 && it->ncols < MM_SMALL_BATCH_COLS && job->ops->gemm_few[it->w->type])
    /* A few columns (a batched decode step, an expert's few tokens), each
     * weight block unpacked once for all; each column's outputs have the
     * bits of its single decode (kernels.h). */
    job->ops->gemm_few[it->w->type](it->w->n, it->wdata, it->w->row_bytes, r0, r1, it->act,
                                    it->a_stride, it->ncols, it->out, it->out_stride);
  else if (it->ncols > 1 && it->ncols < MM_SMALL_BATCH_COLS && mm_small_batch_type(it->w->type))
    /* No such kernel: the decode kernel once per column over this chunk,
     * whose rows stay in L2 after the first; each column then equals its
     * single decode. */
    for (int64_t c = 0; c < it->ncols; c++)
      job->ops->gemm[it->w->type](it->w->n, it->wdata, it->w->row_bytes, r0, r1,
                                  (const uint8_t *)it->act + (size_t)c * it->a_stride,
                                  it->a_stride, 1, it->out + c * it->out_stride, it->out_stride);
  else
    job->ops->gemm[it->w->type](it->w->n, it->wdata, it->w->row_bytes, r0, r1, it->act,
                                it->a_stride, it->ncols, it->out, it->out_stride);
  (void)rows;
  if (it->amax) { /* a one-matrix job (the head): slot = the chunk's index in it */
    const float *o = it->out + r0;
    const int64_t a = job->ops->argmax(o, r1 - r0);
    it->amax[rg->first_slot + j] = (struct argmax_slot){o[a], (int32_t)(r0 + a)};
  }
  STEP_PROF_END(STEP_PROF_CHUNK, ith, prof_t0, (uint64_t)rows * it->w->row_bytes);
}

static void mm_worker(void *ctx, int ith, int nth) {
  struct mm_job *job = ctx;
  (void)nth;
  int nr = job->n_regions;
  for (int k = 0; k < nr; k++) {
    const int r = (ith + k) % nr;
    struct mm_region *rg = &job->region[r];
    for (;;) {
      long j = atomic_fetch_add_explicit(&rg->next, 1, memory_order_relaxed);
      if (j >= rg->end) break;
      mm_chunk(job, r, j, ith);
    }
  }
  /* Nothing left to take whole: help with the shared last chunks, so the
   * threads finish the job together (twentieth session: the threads' last
   * chunks ended 6-12 us apart in a 20-55 us job, 2-3 us with this; step
   * A/B at 2 threads +0.8% Q4_0, +1.2% Q8_0 against A/A, bench/RESULTS.md). */
  for (int k = 1; k <= nr; k++) {
    struct mm_region *rg = &job->region[(ith + k) % nr];
    const struct mm_item *it = rg->share_item;
    if (!it) continue;
    for (;;) {
      STEP_PROF_BEGIN(prof_t0);
      int64_t rows = job->ops->gemv_share[it->w->type](it->w->n, it->wdata, it->w->row_bytes,
                                                       rg->share_r0, rg->share_r1, it->act,
                                                       it->out, &rg->share, false);
      if (!rows) break;
      STEP_PROF_END(STEP_PROF_CHUNK, ith, prof_t0, (uint64_t)rows * it->w->row_bytes);
    }
  }
}

/* Sets region k's shared last chunk, when its kernel can share one. */
static void mm_share_last(struct mm_job *job, int k) {
  struct mm_region *rg = &job->region[k];
  rg->share_item = NULL;
  int64_t r0, r1;
  const struct mm_item *it = rg->end > 0 ? mm_chunk_at(job, k, rg->end - 1, &r0, &r1) : NULL;
  if (!it || it->ncols != 1 || it->amax || !job->ops->gemv_share[it->w->type] ||
      it->w->n % 256 != 0 || it->w->n > job->ops->gemv_share_max_n || r1 - r0 < 4)
    return;
  rg->share_item = it;
  rg->share_r0 = r0;
  rg->share_r1 = r1;
  gemv_share_init(&rg->share, r0, r1);
}

/* Runs items[0..n) as one parallel job. Each item's act/a_stride is set. */
static void mm_run(struct engine *e, struct mm_item *items, int n) {
  struct mm_job job;
  job.ops = e->ops;
  job.items = items;
  job.n_items = n;
  job.decode_bytes = e->decode_chunk_bytes;
  const int nr = mm_regions(tpool_threads(e->pool));
  job.n_regions = nr;
  mm_bounds(items, n, nr, job.bound);
  long slots = 0;
  for (int k = 0; k < nr; k++) {
    atomic_init(&job.region[k].next, 0);
    job.region[k].end = (long)mm_region_chunks(items, n, job.bound, k, e->decode_chunk_bytes);
    job.region[k].first_slot = slots;
    slots += job.region[k].end;
    if (nr > 1) mm_share_last(&job, k);
    else job.region[k].share_item = NULL;
  }
  STEP_PROF_BEGIN(prof_t0);
  tpool_run_idle(e->pool, mm_worker, &job, e->warm_next ? warm_idle : NULL, e, e->warm_next);
#ifdef TM_STEP_PROFILE
  uint64_t job_bytes = 0;
  for (int i = 0; i < n; i++) job_bytes += (uint64_t)items[i].w->rows * items[i].w->row_bytes;
  STEP_PROF_END(STEP_PROF_MM_JOB, 0, prof_t0, job_bytes);
#endif
}

struct quant_job {
  const struct kernel_ops *ops;
  enum act_format fmt;
  const float *x;
  int64_t n, rows;
  uint8_t *out;
  size_t stride;
};

static void quant_rows(const struct quant_job *q, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; r++) {
    const float *x = q->x + r * q->n;
    void *y = q->out + (size_t)r * q->stride;
    if (q->fmt == ACT_Q8)
      q->ops->quantize_q8(x, y, q->n);
    else
      q->ops->quantize_q8k(x, y, q->n);
  }
}

static void quant_worker(void *ctx, int ith, int nth) {
  const struct quant_job *q = ctx;
  quant_rows(q, q->rows * ith / nth, q->rows * (ith + 1) / nth);
}

/* x: (rows, n) f32 -> activation rows in format fmt. Returns the rows and sets
 * *stride; ACT_F32 hands back x itself. */
static const void *prepare_act(struct engine *e, const float *x, int64_t rows, int64_t n,
                               enum act_format fmt, size_t *stride) {
  if (fmt == ACT_F32) {
    *stride = (size_t)n * sizeof(float);
    return x;
  }
  struct quant_job q = {e->ops, fmt, x, n, rows, e->act[fmt], kernel_act_row_bytes(fmt, n)};
  *stride = q.stride;
  if (rows * n < 16384)
    quant_rows(&q, 0, rows);
  else
    tpool_run(e->pool, quant_worker, &q);
  return q.out;
}

/* out_i = W_i x for matrices that all read the same input x (rows, n). */
static void matmul_shared(struct engine *e, const float *x, int64_t rows, int n_mats,
                          const struct mat *const *w, float *const *out) {
  struct mm_item *it = e->items;
  const void *act[3] = {NULL, NULL, NULL};
  size_t stride[3] = {0, 0, 0};
  for (int i = 0; i < n_mats; i++) {
    enum act_format f = kernel_act_format(w[i]->type);
    if (!act[f]) act[f] = prepare_act(e, x, rows, w[i]->n, f, &stride[f]);
    it[i] = (struct mm_item){.w = w[i], .wdata = w[i]->data, .act = act[f],
                             .a_stride = stride[f], .ncols = rows, .out = out[i],
                             .out_stride = w[i]->rows, .amax = NULL};
  }
  mm_run(e, it, n_mats);
}

static void matmul(struct engine *e, const struct mat *w, const float *x, int64_t rows,
                   float *out) {
  matmul_shared(e, x, rows, 1, &w, &out);
}

/* logits (n_vocab) = output x for one row, with each chunk's greedy
 * candidate recorded (e->head_amax): the argmax then reads a few hundred
 * candidates instead of n_vocab logits, half of them in the other core's
 * cache (measured: ~55 us of a 12 ms step at 2 threads). */
static void head_one_row(struct engine *e, const float *x, float *logits) {
  const struct mat *w = &e->m.output;
  size_t stride = 0;
  const void *act = prepare_act(e, x, 1, w->n, kernel_act_format(w->type), &stride);
  e->items[0] = (struct mm_item){.w = w, .wdata = w->data, .act = act, .a_stride = stride,
                                 .ncols = 1, .out = logits, .out_stride = w->rows,
                                 .amax = e->head_amax};
  mm_run(e, e->items, 1);
  e->head_amax_n = mm_job_chunks(e->items, 1, tpool_threads(e->pool), e->decode_chunk_bytes);
}

int64_t argmax_of_chunks(const struct kernel_ops *ops, const struct argmax_slot *slots,
                         int64_t n_slots, const float *x, int64_t n) {
  if (n_slots <= 0) return ops->argmax(x, n);
  struct argmax_slot best = slots[0];
  for (int64_t c = 0; c < n_slots; c++) {
    if (isnan(slots[c].v)) return ops->argmax(x, n);
    if (slots[c].v > best.v) best = slots[c];
  }
  return best.i;
}

/* ------------------------------------------------- row-wise operations -- */

typedef void (*row_fn)(struct engine *e, int64_t t, void *ctx);
struct rows_job {
  struct engine *e;
  row_fn fn;
  void *ctx;
  int64_t n;
};

static void rows_worker(void *ctx, int ith, int nth) {
  const struct rows_job *j = ctx;
  for (int64_t t = j->n * ith / nth; t < j->n * (ith + 1) / nth; t++) j->fn(j->e, t, j->ctx);
}

/* fn(t) for t in [0, n): on the caller alone for a few rows (decode), else
 * split over the pool. Each row is computed the same way either way. */
static void for_rows(struct engine *e, int64_t n, row_fn fn, void *ctx) {
  if (n < 4) {
    for (int64_t t = 0; t < n; t++) fn(e, t, ctx);
    return;
  }
  struct rows_job j = {e, fn, ctx, n};
  tpool_run(e->pool, rows_worker, &j);
}

/* y = x / sqrt(mean(x^2) + eps) * w, n elements; the sum of squares in
 * double (as llama.cpp sums it), by the path's kernel, then the mean and the
 * scale in float, as llama.cpp's CPU rms_norm rounds them. The last ulp of
 * the scale matters: after a Q6_K embedding many normalized values sit
 * exactly on a rounding tie of the 8-bit activation quantization, and a
 * scale computed in double moved kq-llama-Q4_K_M 0.22 nats away from
 * llama.cpp's log-probabilities (0.000 with this rounding). */
static void rmsnorm(const struct kernel_ops *ops, float *y, const float *x, const float *w,
                    int64_t n, float eps) {
  double ss = ops->sumsq(x, n);
  const float mean = (float)(ss / (double)n);
  const float scale = 1.0f / sqrtf(mean + eps);
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * w[i];
}

struct norm_ctx {
  float *y;
  const float *x, *w;
};
static void norm_row(struct engine *e, int64_t t, void *ctx) {
  const struct norm_ctx *c = ctx;
  int64_t E = e->m.n_embd;
  rmsnorm(e->ops, c->y + t * E, c->x + t * E, c->w, E, e->m.rms_eps);
}

/* Rotates pairs of one head by the angles of its position. NORM style pairs
 * (2i, 2i+1) (llama); NEOX style pairs (i, i + d/2) (qwen2, qwen3, qwen3moe). */
static void rope_head(float *h, const float *cs, uint32_t d, bool neox) {
  uint32_t half = d / 2;
  for (uint32_t i = 0; i < half; i++) {
    float c = cs[2 * i], s = cs[2 * i + 1];
    uint32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    float x0 = h[a], x1 = h[b];
    h[a] = x0 * c - x1 * s;
    h[b] = x0 * s + x1 * c;
  }
}

/* Per token after the Q/K/V projections: biases (qwen2), per-head RMSNorm of
 * Q and K (qwen3), RoPE, and K, V stored into the F16 cache at the row's
 * sequence and position;
 * per head, so a decode step can do each KV head's share inside its
 * attention item (attn_worker) instead of on one thread before it. */
struct qkv_ctx {
  const struct layer_weights *L;
  uint32_t layer;
};

/* The first cache cell of layer `layer`, KV head kvh of sequence seq (K; V
 * is at the same offset in v_cache). */
static size_t kv_head_base(const struct engine *e, uint32_t seq, uint32_t layer, uint32_t kvh) {
  return (size_t)seq * e->seq_cells +
         ((size_t)layer * e->m.n_head_kv + kvh) * (size_t)e->n_ctx * e->m.head_dim;
}

/* KV head kvh of token t: bias, norm, RoPE of k; bias of v; both stored.
 * Cache layout (layer, kv head, position, hd): one head's rows are
 * contiguous, so attention streams them in address order (with all heads
 * of a position side by side, the 256-byte rows sat 2 KiB apart and arrived
 * from DRAM one miss at a time). */
static void qkv_kv_head(struct engine *e, const struct qkv_ctx *c, int64_t t, uint32_t kvh) {
  const struct model *m = &e->m;
  const uint32_t hd = m->head_dim, KV = m->n_head_kv * hd;
  float *k = e->k + t * KV + (size_t)kvh * hd, *v = e->v + t * KV + (size_t)kvh * hd;
  if (c->L->bk) {
    for (uint32_t i = 0; i < hd; i++) k[i] += c->L->bk[(size_t)kvh * hd + i];
    for (uint32_t i = 0; i < hd; i++) v[i] += c->L->bv[(size_t)kvh * hd + i];
  }
  if (c->L->k_norm) rmsnorm(e->ops, k, k, c->L->k_norm, hd, m->rms_eps);
  rope_head(k, e->rope_cs + t * hd, hd, m->rope_neox);
  size_t slot = kv_head_base(e, e->row_seq[t], c->layer, kvh) + (size_t)e->row_pos[t] * hd;
  e->ops->f32_to_f16(k, e->k_cache + slot, hd);
  e->ops->f32_to_f16(v, e->v_cache + slot, hd);
}

/* Query head h of token t: bias, norm, RoPE. */
static void qkv_q_head(struct engine *e, const struct qkv_ctx *c, int64_t t, uint32_t h) {
  const struct model *m = &e->m;
  const uint32_t hd = m->head_dim, Q = m->n_head * hd;
  float *q = e->q + t * Q + (size_t)h * hd;
  if (c->L->bq)
    for (uint32_t i = 0; i < hd; i++) q[i] += c->L->bq[(size_t)h * hd + i];
  if (c->L->q_norm) rmsnorm(e->ops, q, q, c->L->q_norm, hd, m->rms_eps);
  rope_head(q, e->rope_cs + t * hd, hd, m->rope_neox);
}

static void qkv_row(struct engine *e, int64_t t, void *ctx) {
  const struct qkv_ctx *c = ctx;
  for (uint32_t h = 0; h < e->m.n_head; h++) qkv_q_head(e, c, t, h);
  for (uint32_t h = 0; h < e->m.n_head_kv; h++) qkv_kv_head(e, c, t, h);
}

/* hb = silu(hb) * hb2 over F columns. */
struct swiglu_ctx {
  int64_t F;
};
static void swiglu_row(struct engine *e, int64_t t, void *ctx) {
  int64_t F = ((const struct swiglu_ctx *)ctx)->F;
  float *g = e->hb + t * F;
  const float *u = e->hb2 + t * F;
  e->ops->swiglu(g, u, F);
}

/* ----------------------------------------------------------- attention -- */

struct attn_job {
  alignas(64) atomic_long next;
  alignas(64) struct engine *e;
  uint32_t layer;
  long n_items; /* tokens x KV heads */
  /* The rows are one prompt's tokens (one sequence): items go head by head
   * so a thread's next item reads rows still in its caches. Else (one token
   * of each of several sequences) token by token, each from memory. */
  bool one_seq;
  /* Single-token step: each item first does its heads' qkv work (a KV
   * head's cache row is written and read by the same item, so no item
   * waits for another). NULL when qkv_row already ran for every token. */
  const struct qkv_ctx *qkv;
};

/* Causal grouped-query attention of row t, head h over its sequence's cache
 * positions [0, row_pos[t]]: softmax(q.k / sqrt(hd)) weighted sum of v, in
 * f32. */
static void attn_worker(void *ctx, int ith, int nth) {
  struct attn_job *j = ctx;
  struct engine *e = j->e;
  const struct model *m = &e->m;
  const uint32_t hd = m->head_dim, Q = m->n_head * hd;
  const uint32_t group = m->n_head / m->n_head_kv;
  const float scale = 1.0f / sqrtf((float)hd);
  const size_t head_cells = (size_t)e->n_ctx * hd; /* one kv head's cache */
  for (;;) {
    long item = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (item >= j->n_items) return;
    STEP_PROF_BEGIN(prof_t0);
    /* One item = one token x one KV head and the `group` query heads that
     * share it, so those heads read its cache rows from this core's caches
     * (split over threads, each would fetch them from memory: measured, the
     * attention's CPU time doubled at 2 threads). A prompt's items go head
     * by head, token after token, so a thread's next item reads the same
     * head's rows, still in its caches: attn_rows_cached. */
    const long n_tok = j->n_items / (long)m->n_head_kv;
    const bool batch = j->qkv == NULL && j->one_seq;
    uint32_t t, kvh;
    if (batch) {
      kvh = (uint32_t)(item / n_tok), t = (uint32_t)(item % n_tok);
    } else {
      t = (uint32_t)(item / m->n_head_kv), kvh = (uint32_t)(item % m->n_head_kv);
    }
    const uint32_t pos = e->row_pos[t], n_pos = pos + 1;
    const size_t off = kv_head_base(e, e->row_seq[t], j->layer, kvh);
    const uint16_t *kc = e->k_cache, *vc = e->v_cache;
    if (j->qkv) {
      qkv_kv_head(e, j->qkv, t, kvh);
      for (uint32_t h = kvh * group; h < (kvh + 1) * group; h++) qkv_q_head(e, j->qkv, t, h);
    }
    const size_t h0 = (size_t)kvh * group * hd; /* the group's first query head */
    const float *qh = e->q + (size_t)t * Q + h0;
    float *oh = e->att + (size_t)t * Q + h0;
    if (batch) {
      e->ops->attn_rows_cached(qh, hd, (int)group, kc + off, vc + off, hd, n_pos, hd, scale, oh,
                               hd);
    } else if (j->qkv && e->ops->attn_rows_next && kvh + (uint32_t)nth < m->n_head_kv && pos > 0) {
      /* Decode: this thread's likely next item is KV head kvh + nth (items
       * go out in order while the threads keep pace); its K rows already
       * cached stream in beside this item's rows, so the two items' misses
       * overlap (a wrong guess costs only the prefetch). */
      const uint16_t *next_k = kc + off + (size_t)nth * head_cells;
      e->ops->attn_rows_next(qh, hd, (int)group, kc + off, vc + off, hd, n_pos, hd, scale, oh,
                             hd, next_k, (size_t)pos * hd * sizeof(uint16_t));
    } else {
      e->ops->attn_rows(qh, hd, (int)group, kc + off, vc + off, hd, n_pos, hd, scale, oh, hd);
    }
    STEP_PROF_END(STEP_PROF_ATTN, ith, prof_t0, 0);
  }
}

/* ----------------------------------------------------------------- moe -- */

/* Router of token t: softmax over experts, top-k, weights renormalized to
 * sum 1 (qwen3moe normalizes the top-k probabilities). */
static void route_row(struct engine *e, int64_t t, void *ctx) {
  const struct model *m = &e->m;
  const uint32_t NE = m->n_expert, K = m->n_expert_used;
  float *p = e->router + t * NE;
  float mx = -INFINITY, sum = 0.0f;
  for (uint32_t i = 0; i < NE; i++) mx = p[i] > mx ? p[i] : mx;
  for (uint32_t i = 0; i < NE; i++) sum += (p[i] = expf(p[i] - mx));
  for (uint32_t i = 0; i < NE; i++) p[i] /= sum;
  int32_t *te = e->top_e + t * K;
  float *tw = e->top_w + t * K;
  float wsum = 0.0f;
  for (uint32_t k = 0; k < K; k++) { /* selection: K is small (<= 64) */
    int32_t best = -1;
    for (uint32_t i = 0; i < NE; i++) {
      bool taken = false;
      for (uint32_t j = 0; j < k; j++) taken |= te[j] == (int32_t)i;
      if (!taken && (best < 0 || p[i] > p[best])) best = (int32_t)i;
    }
    te[k] = best;
    tw[k] = p[best];
    wsum += p[best];
  }
  for (uint32_t k = 0; k < K; k++) tw[k] /= wsum;
}

/* ffn_out (B, E) = sum over each token's experts of w * down(silu(gate x) * up x),
 * x = xb. Tokens are grouped by expert so each expert's matrices run once with
 * all its tokens as columns (decode: one column per chosen expert). Sums run
 * in expert order for every token, so prefill and decode add alike.
 * warm_down, warm_after: what idle threads prefetch during the gate/up job
 * (the chosen experts' down slices) and during the down job (what follows
 * the layer), or 0 (warm.h). */
static void moe_ffn(struct engine *e, const struct layer_weights *L, uint32_t B,
                    uintptr_t warm_down, uintptr_t warm_after) {
  const struct model *m = &e->m;
  const uint32_t NE = m->n_expert, K = m->n_expert_used, E = m->n_embd, F = m->n_ff_exp;
  e->warm_next = 0; /* the experts are not chosen yet */
  matmul(e, &L->gate_inp, e->xb, B, e->router); /* (B, NE) */
  for_rows(e, B, route_row, NULL);

  /* Group rows by expert: off[x] = first grouped row of expert x. */
  uint32_t n_rows = 0, n_active = 0;
  int32_t *active = e->moe_active;
  uint32_t off[513];
  for (uint32_t x = 0; x < NE; x++) {
    uint32_t start = n_rows;
    for (uint32_t t = 0; t < B; t++)
      for (uint32_t k = 0; k < K; k++)
        if (e->top_e[t * K + k] == (int32_t)x) {
          if (B > 1) /* one token: every row would be xb itself (below) */
            memcpy(e->moe_x + (size_t)n_rows * E, e->xb + (size_t)t * E, E * sizeof(float));
          e->moe_tok[n_rows] = (int32_t)t;
          e->moe_w[n_rows] = e->top_w[t * K + k];
          n_rows++;
        }
    if (n_rows > start) {
      active[n_active] = (int32_t)x;
      off[n_active++] = start;
    }
  }
  off[n_active] = n_rows;
  e->moe_n_active = n_active;

  /* gate and up of every active expert: one job. (B*K, F) each. With one
   * token every grouped row is xb: it is quantized once and every expert
   * reads that row (the same bytes K copies would give). */
  const float *gu_x = B > 1 ? e->moe_x : e->xb;
  const int64_t gu_rows = B > 1 ? n_rows : 1;
  size_t st_gu = 0;
  const void *a_gu = prepare_act(e, gu_x, gu_rows, E, kernel_act_format(L->gate_exps.type),
                                 &st_gu);
  size_t st_u = st_gu;
  const void *a_u = a_gu;
  if (kernel_act_format(L->up_exps.type) != kernel_act_format(L->gate_exps.type))
    a_u = prepare_act(e, gu_x, gu_rows, E, kernel_act_format(L->up_exps.type), &st_u);
  struct mm_item *it = e->items;
  for (uint32_t a = 0; a < n_active; a++) {
    int64_t x = active[a], r0 = off[a], nc = off[a + 1] - off[a];
    const int64_t ar = B > 1 ? r0 : 0; /* the item's first activation row */
    it[2 * a] = (struct mm_item){
        .w = &L->gate_exps, .wdata = L->gate_exps.data + x * F * L->gate_exps.row_bytes,
        .act = (const uint8_t *)a_gu + ar * st_gu, .a_stride = st_gu, .ncols = nc,
        .out = e->hb + r0 * F, .out_stride = F};
    it[2 * a + 1] = (struct mm_item){
        .w = &L->up_exps, .wdata = L->up_exps.data + x * F * L->up_exps.row_bytes,
        .act = (const uint8_t *)a_u + ar * st_u, .a_stride = st_u, .ncols = nc,
        .out = e->hb2 + r0 * F, .out_stride = F};
  }
  e->warm_next = warm_down;
  mm_run(e, it, (int)(2 * n_active));
  struct swiglu_ctx sw = {F};
  if (B == 1) /* K rows of F: less than a hand-off to the pool costs */
    for (uint32_t r = 0; r < n_rows; r++) swiglu_row(e, r, &sw);
  else
    for_rows(e, n_rows, swiglu_row, &sw);

  /* down of every active expert: (B*K, E). */
  size_t st_d = 0;
  const void *a_d = prepare_act(e, e->hb, n_rows, F, kernel_act_format(L->down_exps.type),
                                &st_d);
  for (uint32_t a = 0; a < n_active; a++) {
    int64_t x = active[a], r0 = off[a], nc = off[a + 1] - off[a];
    it[a] = (struct mm_item){
        .w = &L->down_exps, .wdata = L->down_exps.data + x * (int64_t)E * L->down_exps.row_bytes,
        .act = (const uint8_t *)a_d + r0 * st_d, .a_stride = st_d, .ncols = nc,
        .out = e->moe_o + r0 * E, .out_stride = E};
  }
  e->warm_next = warm_after;
  mm_run(e, it, (int)n_active);
  e->warm_next = 0;

  memset(e->ffn_out, 0, (size_t)B * E * sizeof(float));
  for (uint32_t r = 0; r < n_rows; r++) {
    float *y = e->ffn_out + (size_t)e->moe_tok[r] * E;
    const float *o = e->moe_o + (size_t)r * E;
    float w = e->moe_w[r];
    for (uint32_t i = 0; i < E; i++) y[i] += w * o[i];
  }
}

/* -------------------------------------------------------- forward pass -- */

void forward_batch(struct engine *e, const int32_t *tokens, uint32_t B, float *logits,
                   bool all_logits) {
  const struct model *m = &e->m;
  const uint32_t E = m->n_embd, hd = m->head_dim;
  bool one_seq = true;
  for (uint32_t t = 1; t < B; t++) one_seq &= e->row_seq[t] == e->row_seq[0];
  e->head_amax_n = 0; /* set again by head_one_row */

  /* x (B, E) = token_embd[tokens] */
  for (uint32_t t = 0; t < B; t++)
    e->ops->get_row(m->token_embd.type,
                    m->token_embd.data + (size_t)tokens[t] * m->token_embd.row_bytes,
                    e->x + (size_t)t * E, E);

  /* RoPE angles (B, hd/2): row_pos[t] * base^(-2i/hd), shared by all layers and heads. */
  for (uint32_t t = 0; t < B; t++)
    for (uint32_t i = 0; i < hd / 2; i++) {
      float th = (float)e->row_pos[t] * e->inv_freq[i];
      e->rope_cs[(size_t)t * hd + 2 * i] = cosf(th);
      e->rope_cs[(size_t)t * hd + 2 * i + 1] = sinf(th);
    }

  /* Decode: what idle threads prefetch during each job (warm.h). */
  const bool warm = B == 1;
  const uint32_t step = e->n_steps++;
#define WARM_NEXT(layer, stage) (e->warm_next = warm ? warm_target(step, layer, stage) : 0)

  for (uint32_t l = 0; l < m->n_layer; l++) {
    const struct layer_weights *L = &m->layers[l];

    /* ---- attention block ---- */
    struct norm_ctx nc = {e->xb, e->x, L->attn_norm};
    for_rows(e, B, norm_row, &nc);                       /* xb (B, E) */
    const struct mat *wqkv[3] = {&L->wq, &L->wk, &L->wv};
    float *oqkv[3] = {e->q, e->k, e->v};
    WARM_NEXT(l, WARM_WO); /* during qkv and attention */
    matmul_shared(e, e->xb, B, 3, wqkv, oqkv);           /* q (B, Q), k, v (B, KV) */
    struct qkv_ctx qc = {L, l};
    /* bias, q/k norm, RoPE, cache: per head inside the attention items for
     * one token (decode); for a batch, every token first, because token t's
     * attention reads the K/V rows of tokens before it. */
    if (B > 1) for_rows(e, B, qkv_row, &qc);

    struct attn_job aj;
    atomic_init(&aj.next, 0);
    aj.e = e;
    aj.layer = l;
    aj.one_seq = one_seq;
    aj.n_items = (long)B * m->n_head_kv;
    aj.qkv = B == 1 ? &qc : NULL;
    STEP_PROF_BEGIN(prof_attn_t0);
    tpool_run_idle(e->pool, attn_worker, &aj, e->warm_next ? warm_idle : NULL, e,
                   e->warm_next);                        /* att (B, Q) */
    STEP_PROF_END(STEP_PROF_ATTN_JOB, 0, prof_attn_t0, 0);

    WARM_NEXT(l, WARM_GATE_UP);
    matmul(e, &L->wo, e->att, B, e->xb);                 /* xb (B, E) */
    for (size_t i = 0; i < (size_t)B * E; i++) e->x[i] += e->xb[i];

    /* ---- feed-forward block ---- */
    struct norm_ctx nf = {e->xb, e->x, L->ffn_norm};
    for_rows(e, B, norm_row, &nf);                       /* xb (B, E) */
    if (m->arch == ARCH_QWEN3MOE) {
      uintptr_t down = 0, after = 0; /* warm targets inside the layer */
      if (warm) {
        down = warm_target(step, l, WARM_MOE_DOWN);
        after = l + 1 < m->n_layer ? warm_target(step, l + 1, WARM_QKV)
                                   : warm_target(step, 0, logits ? WARM_HEAD : WARM_QKV);
      }
      moe_ffn(e, L, B, down, after);                     /* ffn_out (B, E) */
      for (size_t i = 0; i < (size_t)B * E; i++) e->x[i] += e->ffn_out[i];
    } else {
      const struct mat *wgu[2] = {&L->ffn_gate, &L->ffn_up};
      float *ogu[2] = {e->hb, e->hb2};
      WARM_NEXT(l, WARM_DOWN);
      matmul_shared(e, e->xb, B, 2, wgu, ogu);           /* hb, hb2 (B, F) */
      struct swiglu_ctx sw = {m->n_ff};
      for_rows(e, B, swiglu_row, &sw);                   /* hb = silu(hb) * hb2 */
      if (l + 1 < m->n_layer)
        WARM_NEXT(l + 1, WARM_QKV);
      else
        WARM_NEXT(0, logits ? WARM_HEAD : WARM_QKV);
      matmul(e, &L->ffn_down, e->hb, B, e->xb);          /* xb (B, E) */
      for (size_t i = 0; i < (size_t)B * E; i++) e->x[i] += e->xb[i];
    }
  }

  /* Final norm and the output head: every row, or the last one only;
   * meanwhile idle threads warm the next step's first job. */
  e->warm_next = warm ? warm_target(step + 1, 0, WARM_QKV) : 0;
#undef WARM_NEXT
  if (!logits) {
    /* not the last batch of a prompt: no head */
  } else if (all_logits) {
    struct norm_ctx no = {e->xb, e->x, m->output_norm};
    for_rows(e, B, norm_row, &no);
    matmul(e, &m->output, e->xb, B, logits);             /* logits (B, n_vocab) */
  } else {
    rmsnorm(e->ops, e->xb, e->x + (size_t)(B - 1) * E, m->output_norm, E, m->rms_eps);
    head_one_row(e, e->xb, logits);                      /* logits (n_vocab) */
  }
  e->warm_next = 0;
  for (uint32_t t = 0; t < B; t++)
    if (e->row_pos[t] + 1 > e->seq_past[e->row_seq[t]]) e->seq_past[e->row_seq[t]] = e->row_pos[t] + 1;
}
