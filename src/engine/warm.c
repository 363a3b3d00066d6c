/* warm: see warm.h. */
#include "engine/warm.h"

#include "engine/engine_impl.h"
#include "engine/mm_layout.h"

/* How much a thread prefetches at most per target, for the weights and
 * for the KV cache each: well inside its 2 MiB L2 (this machine), beside the
 * kernels' own working set. -DWARM_BYTES=... for experiments. */
#ifndef WARM_BYTES
#define WARM_BYTES (512u << 10)
#endif

/* Lines between two checks for work: 4 KiB of prefetches, well under a
 * microsecond of issue when the lines are already close. */
#define WARM_POLL_LINES 64

/* target: bits 0-2 the stage, 3-18 the layer, the rest the step. */
uintptr_t warm_target(uint32_t step, uint32_t layer, enum warm_stage s) {
  return (uintptr_t)s | (uintptr_t)(layer & 0xffff) << 3 | (uintptr_t)step << 19;
}

/* The matrices of the job a target names, as that job's items (their
 * weights at wdata, one activation column): at most WARM_MAX_ITEMS. */
#define WARM_MAX_ITEMS 64 /* n_expert_used <= 64 (model.c) */
static int target_items(const struct engine *e, enum warm_stage s, uint32_t layer,
                        struct mm_item *it) {
  const struct model *m = &e->m;
  const struct mat *w[3];
  int n = 0;
  if (s == WARM_HEAD) {
    w[n++] = &m->output;
  } else if (layer < m->n_layer) {
    const struct layer_weights *L = &m->layers[layer];
    const bool moe = m->arch == ARCH_QWEN3MOE;
    switch (s) {
      case WARM_QKV:
        w[0] = &L->wq, w[1] = &L->wk, w[2] = &L->wv, n = 3;
        break;
      case WARM_WO:
        w[n++] = &L->wo;
        break;
      case WARM_GATE_UP:
        if (moe)
          w[n++] = &L->gate_inp; /* the router: the experts are not chosen yet */
        else
          w[0] = &L->ffn_gate, w[1] = &L->ffn_up, n = 2;
        break;
      case WARM_DOWN:
        if (!moe) w[n++] = &L->ffn_down;
        break;
      case WARM_MOE_DOWN: { /* as moe_ffn lays out its down job */
        const struct mat *d = &L->down_exps;
        uint32_t k = 0;
        for (; moe && k < e->moe_n_active && k < WARM_MAX_ITEMS; k++)
          it[k] = (struct mm_item){
              .w = d, .wdata = d->data + (int64_t)e->moe_active[k] * m->n_embd * d->row_bytes,
              .ncols = 1};
        return (int)k;
      }
      default:
        break;
    }
  }
  for (int i = 0; i < n; i++) it[i] = (struct mm_item){.w = w[i], .wdata = w[i]->data, .ncols = 1};
  return n;
}

struct span {
  const uint8_t *p;
  uint64_t len;
};
#define MAX_SPANS 8

/* Thread ith's region of a decode job of items[0..n): one contiguous run of
 * rows per matrix it meets (mm_layout.h), at most MAX_SPANS. Returns the
 * spans written. */
static int weight_spans(const struct mm_item *items, int n, int ith, int nth, struct span *sp) {
  const int nr = mm_regions(nth);
  if (ith >= nr) return 0;
  struct mm_bound b[MM_MAX_REGIONS + 1];
  mm_bounds(items, n, nr, b);
  int ns = 0;
  for (int i = b[ith].item; i < n && i <= b[ith + 1].item && ns < MAX_SPANS; i++) {
    int64_t r0, r1;
    if (!mm_region_rows(items, b, ith, i, &r0, &r1)) continue;
    const size_t rb = items[i].w->row_bytes;
    sp[ns++] = (struct span){items[i].wdata + (size_t)r0 * rb, (uint64_t)(r1 - r0) * rb};
  }
  return ns;
}

/* Prefetches spans[0..n) from byte `skip` of their concatenation on, up to
 * `budget` bytes in all; returns how far it got (a resume point), or
 * UINT64_MAX when done. */
static uint64_t prefetch_spans(const struct span *sp, int n, uint64_t skip, uint64_t budget,
                               struct tpool *p, int ith) {
  uint64_t done = 0;
  unsigned lines = 0;
  for (int i = 0; i < n; i++) {
    if (done + sp[i].len <= skip) {
      done += sp[i].len;
      continue;
    }
    uint64_t off = skip > done ? (skip - done) / 64 * 64 : 0;
    for (; off < sp[i].len; off += 64) {
      if (done + off >= budget) return UINT64_MAX;
      __builtin_prefetch(sp[i].p + off, 0, 2); /* to L2 */
      if (++lines == WARM_POLL_LINES) {
        lines = 0;
        if (tpool_idle_over(p, ith)) return done + off + 64;
      }
    }
    done += sp[i].len;
  }
  return UINT64_MAX;
}

void warm_idle(void *ctx, uintptr_t target, struct tpool *p, int ith, int nth) {
  struct engine *e = ctx;
  const struct model *m = &e->m;
  const enum warm_stage s = (enum warm_stage)(target & 7);
  const uint32_t layer = (uint32_t)(target >> 3) & 0xffff;
  struct warm_cursor *cur = &e->warm[ith];
  if (cur->target != target) {
    cur->target = target;
    cur->kv_bytes = cur->bytes = 0;
  }
  struct span sp[MAX_SPANS];
  /* Before the output projection comes the attention: its K and V rows of
   * the positions already cached are read latency-bound when cold (the
   * weight stream evicted them since the last token). Thread ith takes KV
   * heads ith, ith + nth, ... first (attn_worker hands items out in that
   * order when the threads keep pace). Warming runs in single-token steps
   * only: the one row's position (the positions already cached) and
   * sequence are stable while any job of this step runs. */
  const uint32_t cached = e->row_pos[0];
  if (s == WARM_WO && cur->kv_bytes != UINT64_MAX && layer < m->n_layer && cached > 0) {
    const size_t head_cells = (size_t)e->n_ctx * m->head_dim;
    const uint64_t head_bytes = (uint64_t)cached * m->head_dim * sizeof(uint16_t);
    int n = 0;
    for (uint32_t h = (uint32_t)ith; h < m->n_head_kv && n + 2 <= MAX_SPANS; h += (uint32_t)nth) {
      size_t off = (size_t)e->row_seq[0] * e->seq_cells +
                   ((size_t)layer * m->n_head_kv + h) * head_cells;
      sp[n++] = (struct span){(const uint8_t *)(e->k_cache + off), head_bytes};
      sp[n++] = (struct span){(const uint8_t *)(e->v_cache + off), head_bytes};
    }
    cur->kv_bytes = prefetch_spans(sp, n, cur->kv_bytes, WARM_BYTES, p, ith);
    if (cur->kv_bytes != UINT64_MAX) return;
  }
  if (cur->bytes == UINT64_MAX) return;
  struct mm_item items[WARM_MAX_ITEMS];
  const int ni = target_items(e, s, layer, items);
  const int n = weight_spans(items, ni, ith, nth, sp);
  cur->bytes = prefetch_spans(sp, n, cur->bytes, WARM_BYTES, p, ith);
}
