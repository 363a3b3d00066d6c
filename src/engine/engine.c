/* engine: load (map, bind, first touch), buffers, the KV cache, and the public
 * API of engine.h. The forward pass itself is forward.c.
 *
 * Memory: weights are the file's map (never copied); the engine allocates the
 * F16 KV cache (2 x n_seq x n_layer x n_ctx x n_head_kv x head_dim x 2 bytes,
 * an anonymous mapping, so untouched pages cost nothing) and activation buffers for max_batch
 * tokens, which are small next to the weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine_impl.h"
#include "engine/hugemap.h"
#include "engine/mm_layout.h"
#include "util/clock.h"

void engine_options_init(struct engine_options *o) {
  memset(o, 0, sizeof *o);
  o->n_threads = 0;
  o->n_ctx = 4096;
  o->kernels = KERNEL_AUTO;
  o->max_batch = 512;
  o->n_seq = 1;
}

static int online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > 1024 ? 1024 : (int)n);
}

/* Touches one byte per page of the data section so that load_ms includes the
 * page faults and warm runs do not. Returns a value so the reads stay. */
static unsigned touch_pages(const struct gguf_file *f) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  unsigned acc = 0;
  if (f->data_offset >= f->file_size) return 0;
  const volatile uint8_t *p = f->base + f->data_offset;
  uint64_t n = f->file_size - f->data_offset;
  for (uint64_t i = 0; i < n; i += (uint64_t)page) acc += p[i];
  return acc + p[n - 1];
}

/* calloc that counts what it allocated into e->buffer_bytes; with
 * e->sizing it counts only, and allocates nothing (NULL). */
static void *xcalloc(struct engine *e, size_t n, size_t size, bool *ok) {
  if (n == 0) n = 1;
  if (e->sizing) {
    e->buffer_bytes += (uint64_t)n * size;
    return NULL;
  }
  void *p = calloc(n, size);
  if (!p) *ok = false;
  else e->buffer_bytes += (uint64_t)n * size;
  return p;
}

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* The K and V caches in one anonymous mapping at a 2 MiB-aligned address,
 * advised MADV_HUGEPAGE: attention reads n_layer x n_head_kv separate runs
 * of rows every token, and through 4 KiB pages each run cost TLB misses on
 * top of its memory latency (measured: attention 2.4-2.9 ms of a 1-thread
 * tg128 step on Qwen3-0.6B). Zeroed by the kernel (the cache starts empty). */
static int kv_map(struct engine *e) {
  const size_t align = (size_t)2 << 20;
  const size_t half = (size_t)(e->kv_bytes / 2);
  const size_t len = (size_t)e->kv_bytes + align;
  uint8_t *res = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return -1;
  uint8_t *base = (uint8_t *)(((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1));
#if defined(MADV_HUGEPAGE)
  madvise(base, (size_t)e->kv_bytes, MADV_HUGEPAGE);
#endif
  e->kv_map = res;
  e->kv_map_bytes = len;
  e->k_cache = (uint16_t *)base;
  e->v_cache = (uint16_t *)(base + half);
  return 0;
}

static int alloc_buffers(struct engine *e, struct tm_err *err) {
  const struct model *m = &e->m;
  const size_t B = e->max_batch, E = m->n_embd, hd = m->head_dim;
  const size_t Q = (size_t)m->n_head * hd, KV = (size_t)m->n_head_kv * hd;
  const bool moe = m->arch == ARCH_QWEN3MOE;
  const size_t K = moe ? m->n_expert_used : 1;
  const size_t F = moe ? m->n_ff_exp : m->n_ff;
  const size_t rows = B * K; /* moe groups B*K rows; dense uses B */
  bool ok = true;

  e->seq_cells = (size_t)m->n_layer * e->n_ctx * KV;
  e->kv_bytes = 2ull * e->n_seq * e->seq_cells * sizeof(uint16_t);
  if (!e->sizing && kv_map(e) != 0) ok = false;
  e->inv_freq = xcalloc(e, hd / 2, sizeof(float), &ok);
  e->rope_cs = xcalloc(e, B * hd, sizeof(float), &ok);
  e->row_seq = xcalloc(e, B, sizeof(uint32_t), &ok);
  e->row_pos = xcalloc(e, B, sizeof(uint32_t), &ok);
  e->seq_past = xcalloc(e, e->n_seq, sizeof(uint32_t), &ok);
  e->x = xcalloc(e, B * E, sizeof(float), &ok);
  e->xb = xcalloc(e, B * E, sizeof(float), &ok);
  e->q = xcalloc(e, B * Q, sizeof(float), &ok);
  e->k = xcalloc(e, B * KV, sizeof(float), &ok);
  e->v = xcalloc(e, B * KV, sizeof(float), &ok);
  e->att = xcalloc(e, B * Q, sizeof(float), &ok);
  e->hb = xcalloc(e, rows * F, sizeof(float), &ok);
  e->hb2 = xcalloc(e, rows * F, sizeof(float), &ok);
  e->logits_tmp = xcalloc(e, m->n_vocab, sizeof(float), &ok);
  size_t widest = max_sz(max_sz(E, Q), F);
  e->act_bytes = rows * max_sz(kernel_act_row_bytes(ACT_Q8, (int64_t)widest),
                               kernel_act_row_bytes(ACT_Q8K, (int64_t)widest) + 1024);
  e->act[ACT_Q8] = xcalloc(e, e->act_bytes, 1, &ok);
  e->act[ACT_Q8K] = xcalloc(e, e->act_bytes, 1, &ok);
  e->max_items = moe ? (int)(2 * m->n_expert) : 3;
  if (e->max_items < 3) e->max_items = 3;
  e->items = xcalloc(e, (size_t)e->max_items, sizeof(struct mm_item), &ok);
  if (moe) {
    e->ffn_out = xcalloc(e, B * E, sizeof(float), &ok);
    e->router = xcalloc(e, B * m->n_expert, sizeof(float), &ok);
    e->top_e = xcalloc(e, B * K, sizeof(int32_t), &ok);
    e->top_w = xcalloc(e, B * K, sizeof(float), &ok);
    e->moe_x = xcalloc(e, rows * E, sizeof(float), &ok);
    e->moe_o = xcalloc(e, rows * E, sizeof(float), &ok);
    e->moe_tok = xcalloc(e, rows, sizeof(int32_t), &ok);
    e->moe_w = xcalloc(e, rows, sizeof(float), &ok);
    e->moe_active = xcalloc(e, m->n_expert, sizeof(int32_t), &ok);
  }
  if (e->sizing) return 0;
  if (!ok)
    return tm_errf(err, "out of memory allocating the KV cache (%.1f MiB for %u x %u tokens) "
                   "and buffers", (double)e->kv_bytes / 1048576.0, e->n_seq, e->n_ctx);
  for (size_t i = 0; i < hd / 2; i++)
    e->inv_freq[i] = (float)pow((double)m->rope_base, -2.0 * (double)i / (double)hd);
  return 0;
}

/* What alloc_buffers allocates at a prefill batch of b tokens (the KV cache
 * not included). */
static uint64_t buffer_bytes_at(struct engine *e, uint32_t b) {
  const uint32_t keep = e->max_batch;
  struct tm_err ignored;
  e->max_batch = b;
  e->sizing = true;
  e->buffer_bytes = 0;
  alloc_buffers(e, &ignored);
  const uint64_t bytes = e->buffer_bytes;
  e->sizing = false;
  e->buffer_bytes = 0;
  e->max_batch = keep;
  return bytes;
}

/* The largest prefill batch, at most `want`, whose buffers keep the engine
 * within its memory bound (engine_memory: file + KV cache + 10%), less what
 * the model's own vectors and the threads' state take (ENGINE_THREAD_RESERVE
 * stands for the latter, allocated later). The buffers grow by a few KiB
 * per batch token (activations of every width, their 8-bit copies), a
 * Qwen3-0.6B's 33 MiB at 512 tokens within its 41 MiB of slack, but a 5 MiB
 * model's 4.2 MiB at 512 tokens was 7 times its slack (2026-12-01). Rounded
 * down to whole 16-row panels; never below ENGINE_MIN_BATCH, where the
 * bound gives way (and engine_memory says so) rather than the prefill. */
#define ENGINE_MIN_BATCH 32u
#define ENGINE_THREAD_RESERVE (256u << 10)
static uint32_t batch_within_bound(struct engine *e, uint32_t want) {
  const uint64_t at1 = buffer_bytes_at(e, 1), at2 = buffer_bytes_at(e, 2);
  const uint64_t per_token = at2 - at1, fixed = at1 - per_token;
  const double slack =
      (double)(e->file->file_size + e->kv_bytes) * ENGINE_MEMORY_SLACK -
      (double)e->m.owned_bytes - (double)ENGINE_THREAD_RESERVE - (double)fixed;
  if (per_token == 0 || want <= ENGINE_MIN_BATCH) return want;
  const double fits = slack / (double)per_token;
  if (fits >= (double)want) return want;
  uint32_t b = fits > 0 ? (uint32_t)fits / 16 * 16 : 0;
  return b < ENGINE_MIN_BATCH ? ENGINE_MIN_BATCH : b;
}

size_t engine_auto_decode_chunk_bytes(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_is("amd")) return MM_DECODE_CHUNK_BYTES_LARGE;
#endif
  return MM_DECODE_CHUNK_BYTES;
}

int engine_set_threads(struct engine *e, int n_threads, struct tm_err *err) {
  if (n_threads <= 0) n_threads = online_cpus();
  struct warm_cursor *w = aligned_alloc(64, (size_t)n_threads * sizeof *w);
  /* The head's chunk count depends on the thread count (mm_layout.h). */
  const struct mm_item head = {.w = &e->m.output, .ncols = 1};
  const int64_t head_chunks = mm_job_chunks(&head, 1, n_threads, e->decode_chunk_bytes);
  struct argmax_slot *amax = calloc((size_t)(head_chunks > 0 ? head_chunks : 1), sizeof *amax);
  if (!w || !amax) {
    free(w);
    free(amax);
    tm_errf(err, "out of memory for %d threads", n_threads);
    return -1;
  }
  memset(w, 0, (size_t)n_threads * sizeof *w);
  struct tpool *p = tpool_new(n_threads, err);
  if (!p) {
    free(w);
    free(amax);
    return -1;
  }
  tpool_free(e->pool);
  free(e->warm);
  free(e->head_amax);
  e->pool = p;
  e->warm = w;
  e->head_amax = amax;
  e->thread_state_bytes = (uint64_t)n_threads * sizeof *w +
                          (uint64_t)(head_chunks > 0 ? head_chunks : 1) * sizeof *amax;
  e->head_amax_n = 0;
  e->n_threads = n_threads;
  return 0;
}

/* Replaces the file mapping by an anonymous copy in transparent huge pages, at
 * the same address so every tensor pointer stays valid (mremap onto it). The
 * kernel only gives huge pages to 2 MiB-aligned runs inside the range; the
 * tail stays on 4 KiB pages. Returns true when the copy is in place. */
static bool move_to_hugepages(struct gguf_file *f) {
#if defined(MADV_HUGEPAGE) && defined(MREMAP_FIXED)
  const size_t align = (size_t)2 << 20;
  if (!f->mapped || f->file_size == 0 || ((uintptr_t)f->base & (align - 1)) != 0) return false;
  size_t n = (size_t)f->file_size;
  /* A 2 MiB-aligned anonymous region, so the pages are huge from the first
   * touch and stay huge when moved onto the (aligned) file mapping. */
  uint8_t *res = mmap(NULL, n + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return false;
  uint8_t *anon = (uint8_t *)(((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1));
  if (anon > res) munmap(res, (size_t)(anon - res));
  size_t tail = (size_t)(res + n + align - (anon + n));
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t keep = (n + page - 1) / page * page;
  if (tail > keep - n) munmap(anon + keep, tail - (keep - n));
  madvise(anon, n, MADV_HUGEPAGE);
  memcpy(anon, f->base, n);
  if (mprotect(anon, n, PROT_READ) != 0 ||
      mremap(anon, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)f->base) == MAP_FAILED) {
    munmap(anon, n);
    return false;
  }
  return true;
#else
  (void)f;
  return false;
#endif
}

struct engine *engine_load(const char *path, const struct engine_options *opt,
                           struct tm_err *err) {
  struct engine_options def;
  if (!opt) {
    engine_options_init(&def);
    opt = &def;
  }
  const struct kernel_ops *ops = kernels_get(opt->kernels);
  if (!ops) {
    const char *why = kernels_forced_unavailable();
    if (why) tm_errf(err, "%s", why);
    else
      tm_errf(err, "kernel path '%s' is not available on this CPU or in this build%s%s",
              kernel_path_name(opt->kernels), kernels_forced_name() ? ", or TOKMETER_KERNELS=" : "",
              kernels_forced_name() ? kernels_forced_name() : "");
    return NULL;
  }
  struct engine *e = calloc(1, sizeof *e);
  if (!e) {
    tm_errf(err, "out of memory loading %s", path);
    return NULL;
  }
  e->ops = ops;
  uint64_t t0 = tm_now_ns();
  e->file = gguf_open(path, err);
  if (!e->file || model_bind(&e->m, e->file, ops, err) != 0) {
    engine_free(e);
    return NULL;
  }
  if (opt->hugepages) e->hugepages = move_to_hugepages(e->file);
  volatile unsigned sink;
  if (!e->hugepages && e->file->mapped) {
    /* The first touch, in 2 MiB page-cache folios where the kernel can
     * (hugemap.c); the weights stay memory-mapped. */
    unsigned s = 0;
    e->huge_share = hugemap_prepare(e->file->path, e->file->base, (size_t)e->file->file_size, &s);
    sink = s;
  } else {
    sink = touch_pages(e->file);
    e->huge_share = e->hugepages ? hugemap_anon_share(e->file->base, (size_t)e->file->file_size) : 0.0;
  }
  (void)sink;
  e->load_ms = (double)(tm_now_ns() - t0) / 1e6;

  e->n_ctx = opt->n_ctx ? opt->n_ctx : 4096;
  if (e->m.n_ctx_train && e->n_ctx > e->m.n_ctx_train) e->n_ctx = e->m.n_ctx_train;
  e->n_seq = opt->n_seq ? opt->n_seq : 1;
  if (e->n_seq > ENGINE_MAX_SEQ) {
    tm_errf(err, "%u sequences asked; the engine holds at most %u", e->n_seq, ENGINE_MAX_SEQ);
    engine_free(e);
    return NULL;
  }
  e->max_batch = opt->max_batch ? opt->max_batch : 512;
  /* a prompt's batch fits one sequence; a decode step's, every sequence */
  const uint32_t batch_cap = e->n_ctx > e->n_seq ? e->n_ctx : e->n_seq;
  if (e->max_batch > batch_cap) e->max_batch = batch_cap;
  e->max_batch_asked = e->max_batch;
  e->max_batch = batch_within_bound(e, e->max_batch);
  e->decode_chunk_bytes =
      opt->decode_chunk_bytes ? opt->decode_chunk_bytes : engine_auto_decode_chunk_bytes();
  if (alloc_buffers(e, err) != 0 || engine_set_threads(e, opt->n_threads, err) != 0) {
    engine_free(e);
    return NULL;
  }
  return e;
}

void engine_free(struct engine *e) {
  if (!e) return;
  tpool_free(e->pool);
  free(e->warm);
  model_free(&e->m);
  gguf_close(e->file);
  if (e->kv_map) munmap(e->kv_map, e->kv_map_bytes);
  void *bufs[] = {e->inv_freq, e->rope_cs, e->row_seq, e->row_pos, e->seq_past, e->x, e->xb, e->q,
                  e->k, e->v, e->att, e->hb, e->hb2, e->ffn_out, e->logits_tmp,
                  e->act[0], e->act[1], e->act[2], e->router, e->top_e, e->top_w, e->moe_x,
                  e->moe_o, e->moe_tok, e->moe_w, e->moe_active, e->items, e->head_amax};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
  free(e);
}

_Static_assert(ENGINE_TILES_MIN_BATCH == KERNEL_TILES_MIN_COLS, "one tile batch size");

const char *engine_default_prefill_tiles(void) {
  const struct kernel_ops *ops = kernels_get(KERNEL_AUTO);
  return ops ? ops->prefill_tiles : NULL;
}

void engine_get_info(const struct engine *e, struct engine_info *out) {
  const struct model *m = &e->m;
  memset(out, 0, sizeof *out);
  snprintf(out->arch, sizeof out->arch, "%s", m->arch_name);
  out->n_layer = m->n_layer;
  out->n_embd = m->n_embd;
  out->n_head = m->n_head;
  out->n_head_kv = m->n_head_kv;
  out->head_dim = m->head_dim;
  out->n_ff = m->arch == ARCH_QWEN3MOE ? m->n_ff_exp : m->n_ff;
  out->n_vocab = m->n_vocab;
  out->n_expert = m->n_expert;
  out->n_expert_used = m->n_expert_used;
  out->n_ctx = e->n_ctx;
  out->n_seq = e->n_seq;
  out->max_batch = e->max_batch;
  out->max_batch_asked = e->max_batch_asked;
  out->n_threads = e->n_threads;
  out->kernel_path = e->ops->name;
  out->best_cpu_path = kernel_path_name(kernels_best_for_cpu());
  out->prefill_tiles = e->ops->prefill_tiles;
  out->prefill_tiles_min_batch = ENGINE_TILES_MIN_BATCH;
  out->file_bytes = e->file->file_size;
  out->kv_bytes = e->kv_bytes;
  out->load_ms = e->load_ms;
  out->hugepages = e->hugepages;
  out->decode_chunk_bytes = e->decode_chunk_bytes;
  out->huge_share = e->huge_share;
  const struct gguf_file *f = e->file;
  bool has_data = f->data_offset < f->file_size;
  out->weights = has_data ? f->base + f->data_offset : NULL;
  out->weights_bytes = has_data ? f->file_size - f->data_offset : 0;
}

void engine_reset(struct engine *e) {
  for (uint32_t s = 0; s < e->n_seq; s++) e->seq_past[s] = 0;
}

uint32_t engine_n_past(const struct engine *e) { return e->seq_past[0]; }

uint32_t engine_n_seq(const struct engine *e) { return e->n_seq; }

void engine_seq_reset(struct engine *e, uint32_t seq) {
  if (seq < e->n_seq) e->seq_past[seq] = 0;
}

void engine_seq_truncate(struct engine *e, uint32_t seq, uint32_t n) {
  if (seq < e->n_seq && n < e->seq_past[seq]) e->seq_past[seq] = n;
}

uint32_t engine_seq_n_past(const struct engine *e, uint32_t seq) {
  return seq < e->n_seq ? e->seq_past[seq] : 0;
}

static int check_ids(const struct engine *e, const int32_t *tokens, uint32_t n,
                     struct tm_err *err) {
  for (uint32_t i = 0; i < n; i++)
    if (tokens[i] < 0 || (uint32_t)tokens[i] >= e->m.n_vocab)
      return tm_errf(err, "token %u: id %d is out of range (vocabulary of %u)", i, tokens[i],
                     e->m.n_vocab);
  return 0;
}

static int check_tokens(const struct engine *e, uint32_t seq, const int32_t *tokens,
                        uint32_t n, struct tm_err *err) {
  if (n == 0) return tm_errf(err, "no tokens to run");
  if (seq >= e->n_seq)
    return tm_errf(err, "sequence %u: the engine holds %u (engine_options.n_seq)", seq, e->n_seq);
  if ((uint64_t)e->seq_past[seq] + n > e->n_ctx)
    return tm_errf(err, "context overflow: %u tokens in the cache + %u new > capacity %u "
                   "(raise n_ctx)", e->seq_past[seq], n, e->n_ctx);
  return check_ids(e, tokens, n, err);
}

/* Splits n tokens into batches of max_batch; only the last batch produces
 * logits unless all_logits. With logits NULL the head still runs (into a
 * scratch buffer) so a timed prefill includes it, as llama.cpp's does. */
static int run_tokens(struct engine *e, uint32_t seq, const int32_t *tokens, uint32_t n,
                      float *logits, bool all_logits, struct tm_err *err) {
  if (check_tokens(e, seq, tokens, n, err) != 0) return -1;
  for (uint32_t done = 0; done < n;) {
    uint32_t b = n - done < e->max_batch ? n - done : e->max_batch;
    bool last = done + b == n;
    for (uint32_t t = 0; t < b; t++) {
      e->row_seq[t] = seq;
      e->row_pos[t] = e->seq_past[seq] + t;
    }
    float *out = NULL;
    if (all_logits)
      out = logits + (size_t)done * e->m.n_vocab;
    else if (last)
      out = logits ? logits : e->logits_tmp;
    forward_batch(e, tokens + done, b, out, all_logits);
    done += b;
  }
  return 0;
}

int engine_prefill(struct engine *e, const int32_t *tokens, uint32_t n, float *logits,
                   struct tm_err *err) {
  return run_tokens(e, 0, tokens, n, logits, false, err);
}

int engine_seq_prefill(struct engine *e, uint32_t seq, const int32_t *tokens, uint32_t n,
                       float *logits, struct tm_err *err) {
  return run_tokens(e, seq, tokens, n, logits, false, err);
}

int engine_decode_batch(struct engine *e, const uint32_t *seq, const int32_t *tokens, uint32_t n,
                        float *logits, int32_t *next, struct tm_err *err) {
  if (n == 0) return tm_errf(err, "no sequences to step");
  if (!logits) return tm_errf(err, "engine_decode_batch needs a logits buffer");
  uint8_t seen[ENGINE_MAX_SEQ / 8] = {0};
  for (uint32_t i = 0; i < n; i++) {
    if (seq[i] >= e->n_seq)
      return tm_errf(err, "sequence %u: the engine holds %u (engine_options.n_seq)", seq[i],
                     e->n_seq);
    if (seen[seq[i] / 8] & (1u << (seq[i] % 8)))
      return tm_errf(err, "sequence %u is twice in one decode step", seq[i]);
    seen[seq[i] / 8] |= (uint8_t)(1u << (seq[i] % 8));
    if (e->seq_past[seq[i]] + 1 > e->n_ctx)
      return tm_errf(err, "context overflow: sequence %u holds %u tokens, its capacity (raise "
                     "n_ctx)", seq[i], e->seq_past[seq[i]]);
  }
  if (check_ids(e, tokens, n, err) != 0) return -1;
  const uint32_t nv = e->m.n_vocab;
  for (uint32_t done = 0; done < n;) {
    const uint32_t b = n - done < e->max_batch ? n - done : e->max_batch;
    for (uint32_t t = 0; t < b; t++) {
      e->row_seq[t] = seq[done + t];
      e->row_pos[t] = e->seq_past[seq[done + t]];
    }
    float *out = logits + (size_t)done * nv;
    if (b == 1) { /* the single-token path: the head's argmax candidates */
      forward_batch(e, tokens + done, 1, out, false);
      if (next) next[done] = (int32_t)argmax_of_chunks(e->ops, e->head_amax, e->head_amax_n, out, nv);
    } else {
      forward_batch(e, tokens + done, b, out, true);
      if (next)
        for (uint32_t t = 0; t < b; t++)
          next[done + t] = (int32_t)e->ops->argmax(out + (size_t)t * nv, nv);
    }
    done += b;
  }
  return 0;
}

int engine_prefill_all_logits(struct engine *e, const int32_t *tokens, uint32_t n,
                              float *all_logits, struct tm_err *err) {
  if (!all_logits) return tm_errf(err, "engine_prefill_all_logits needs a logits buffer");
  return run_tokens(e, 0, tokens, n, all_logits, true, err);
}

int engine_decode(struct engine *e, int32_t token, float *logits, struct tm_err *err) {
  if (!logits) return tm_errf(err, "engine_decode needs a logits buffer");
  return run_tokens(e, 0, &token, 1, logits, false, err);
}

int engine_decode_greedy(struct engine *e, int32_t token, float *logits, int32_t *next,
                         struct tm_err *err) {
  if (!next) return tm_errf(err, "engine_decode_greedy needs a place for the next token");
  if (engine_decode(e, token, logits, err) != 0) return -1;
  *next = (int32_t)argmax_of_chunks(e->ops, e->head_amax, e->head_amax_n, logits, e->m.n_vocab);
  return 0;
}

int32_t engine_argmax(const float *logits, uint32_t n_vocab) {
  /* Every path returns the same index (kernels.h); the best one is fastest. */
  const struct kernel_ops *ops = kernels_get(KERNEL_AUTO);
  if (!ops) ops = kernels_get(KERNEL_SCALAR); /* NULL only when TOKMETER_KERNELS is unusable */
  if (!ops) return -1;
  return (int32_t)ops->argmax(logits, n_vocab);
}
