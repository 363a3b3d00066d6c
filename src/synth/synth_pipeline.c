/* synth_pipeline: generate -> convert -> write, in parallel, deterministic.
 *
 * Work unit: a chunk = whole rows of one tensor, about SYNTH_CHUNK_ELEMS
 * elements, numbered globally in file order. Worker threads take chunk numbers
 * from a shared counter, draw the values from a generator seeded by
 * (seed, tensor, chunk), convert them to the tensor's type into one slot of a
 * ring of output buffers, and mark the slot ready. The calling thread writes the
 * slots to the file strictly in chunk order. A worker may run at most ring-size
 * chunks ahead of the writer (it waits for its slot to be free), so memory stays
 * bounded: ring x largest chunk. Because each chunk's bytes depend only on its
 * own seed, the file is the same for any number of threads. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/ggml_types.h"
#include "synth/synth_internal.h"
#include "util/fp16.h"
#include "util/rng.h"

struct chunk {
  uint32_t tensor;   /* index in the plan */
  uint32_t index;    /* chunk number within the tensor */
  uint64_t n_elems;  /* whole rows */
  uint64_t n_bytes;  /* after conversion */
};

struct pipeline {
  const struct synth_options *opt;
  const struct model_shape *shape;
  const struct model_plan *plan;
  struct chunk *chunks;
  size_t n_chunks;
  size_t ring;       /* slots */
  uint8_t **slot_buf;
  int64_t *slot_ready; /* chunk number held ready in the slot, or -1 */
  size_t max_elems;

  pthread_mutex_t mu;
  pthread_cond_t cv_ready; /* a slot became ready (writer waits) */
  pthread_cond_t cv_free;  /* the writer advanced (workers wait) */
  size_t next;             /* next chunk to hand out */
  size_t written;          /* chunks written so far */
  int failed;              /* a worker failed (message in fail_msg) */
  int abort;               /* the writer failed: workers stop */
  char fail_msg[256];
};

uint64_t synth_chunk_seed(uint64_t seed, uint64_t tensor_index, uint64_t chunk_index) {
  uint64_t st = seed;
  uint64_t a = tm_splitmix64(&st);
  st = a ^ (tensor_index * 0xd1342543de82ef95ull);
  uint64_t b = tm_splitmix64(&st);
  st = b ^ (chunk_index * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
  return tm_splitmix64(&st);
}

/* Converts n floats to the tensor type. Returns 0, or -1 when the type has no
 * converter (the gguf module's reference quantizers decide). K-quants take
 * synth's one-pass quantizers (synth_quant_fast.c): the reference's scale search
 * runs at ~80 M elements/s per core, too slow for the 200 MB/s target, and
 * random weights gain nothing from it. */
static int convert(uint32_t type, const float *x, uint8_t *y, uint64_t n) {
  switch (type) {
  case GGML_TYPE_F32: memcpy(y, x, n * sizeof(float)); return 0;
  case GGML_TYPE_F16: {
    uint16_t *h = (uint16_t *)(void *)y;
    for (uint64_t i = 0; i < n; i++) h[i] = tm_fp32_to_fp16(x[i]);
    return 0;
  }
  case GGML_TYPE_BF16: {
    uint16_t *h = (uint16_t *)(void *)y;
    for (uint64_t i = 0; i < n; i++) h[i] = tm_fp32_to_bf16(x[i]);
    return 0;
  }
  case GGML_TYPE_Q4_K: synth_quantize_q4_k_fast(x, y, n); return 0;
  case GGML_TYPE_Q5_K: synth_quantize_q5_k_fast(x, y, n); return 0;
  case GGML_TYPE_Q6_K: synth_quantize_q6_k_fast(x, y, n); return 0;
  default: return ggml_quantize_ref(type, x, y, (int64_t)n);
  }
}

static void *worker_main(void *arg) {
  struct pipeline *p = arg;
  float *x = malloc(p->max_elems * sizeof(float));
  pthread_mutex_lock(&p->mu);
  if (!x) {
    p->failed = 1;
    snprintf(p->fail_msg, sizeof p->fail_msg, "out of memory for a %zu-element chunk",
             p->max_elems);
    pthread_cond_broadcast(&p->cv_ready);
  }
  while (x && !p->failed && !p->abort && p->next < p->n_chunks) {
    size_t c = p->next++;
    while (c >= p->written + p->ring && !p->abort && !p->failed)
      pthread_cond_wait(&p->cv_free, &p->mu);
    if (p->abort || p->failed) break;
    pthread_mutex_unlock(&p->mu);

    const struct chunk *ch = &p->chunks[c];
    const struct plan_tensor *t = &p->plan->tensors[ch->tensor];
    float mean, std;
    synth_tensor_init(p->shape, t, &mean, &std);
    struct tm_rng rng;
    tm_rng_seed(&rng, synth_chunk_seed(p->opt->seed, ch->tensor, ch->index));
    tm_rng_fill_normal(&rng, x, ch->n_elems, mean, std);
    int rc = convert(t->type, x, p->slot_buf[c % p->ring], ch->n_elems);

    pthread_mutex_lock(&p->mu);
    if (rc != 0) {
      p->failed = 1;
      snprintf(p->fail_msg, sizeof p->fail_msg, "tensor %s: no converter for ggml type %u",
               t->name, t->type);
    } else {
      p->slot_ready[c % p->ring] = (int64_t)c;
    }
    pthread_cond_broadcast(&p->cv_ready);
  }
  pthread_mutex_unlock(&p->mu);
  free(x);
  return NULL;
}

static unsigned online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1;
}

int synth_pipeline_run(const struct synth_options *opt, const struct model_shape *shape,
                       const struct model_plan *plan, struct gguf_writer *w,
                       synth_progress_fn progress, void *ctx, struct tm_err *err) {
  struct pipeline p;
  memset(&p, 0, sizeof p);
  p.opt = opt;
  p.shape = shape;
  p.plan = plan;
  unsigned n_threads = opt->n_threads ? opt->n_threads : online_cpus();
  if (n_threads > 256) n_threads = 256;

  /* The chunk list (fixed by the plan alone, never by the thread count). */
  size_t cap = 0;
  for (size_t i = 0; i < plan->n_tensors; i++) {
    const struct plan_tensor *t = &plan->tensors[i];
    uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    uint64_t rows_per = t->ne[0] >= SYNTH_CHUNK_ELEMS ? 1 : SYNTH_CHUNK_ELEMS / t->ne[0];
    cap += (size_t)((rows + rows_per - 1) / rows_per);
  }
  p.chunks = calloc(cap ? cap : 1, sizeof *p.chunks);
  if (!p.chunks) return tm_errf(err, "out of memory for %zu chunks", cap);
  uint64_t total_bytes = 0, max_bytes = 0;
  for (size_t i = 0; i < plan->n_tensors; i++) {
    const struct plan_tensor *t = &plan->tensors[i];
    uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
    uint64_t rows_per = t->ne[0] >= SYNTH_CHUNK_ELEMS ? 1 : SYNTH_CHUNK_ELEMS / t->ne[0];
    uint64_t row_bytes;
    if (ggml_row_bytes(t->type, t->ne[0], &row_bytes) != 0) {
      free(p.chunks);
      return tm_errf(err, "tensor %s: ggml type %u cannot hold rows of %llu", t->name, t->type,
                     (unsigned long long)t->ne[0]);
    }
    for (uint64_t r = 0, ci = 0; r < rows; r += rows_per, ci++) {
      uint64_t nr = rows - r < rows_per ? rows - r : rows_per;
      struct chunk *ch = &p.chunks[p.n_chunks++];
      ch->tensor = (uint32_t)i;
      ch->index = (uint32_t)ci;
      ch->n_elems = nr * t->ne[0];
      ch->n_bytes = nr * row_bytes;
      if (ch->n_elems > p.max_elems) p.max_elems = ch->n_elems;
      if (ch->n_bytes > max_bytes) max_bytes = ch->n_bytes;
      total_bytes += ch->n_bytes;
    }
  }

  p.ring = 2 * (size_t)n_threads + 2;
  p.slot_buf = calloc(p.ring, sizeof *p.slot_buf);
  p.slot_ready = malloc(p.ring * sizeof *p.slot_ready);
  int rc = -1;
  pthread_t *threads = calloc(n_threads, sizeof *threads);
  unsigned started = 0;
  if (!p.slot_buf || !p.slot_ready || !threads) {
    tm_errf(err, "out of memory");
    goto out;
  }
  for (size_t s = 0; s < p.ring; s++) {
    p.slot_ready[s] = -1;
    p.slot_buf[s] = malloc(max_bytes ? max_bytes : 1);
    if (!p.slot_buf[s]) {
      tm_errf(err, "out of memory for %zu buffers of %llu bytes", p.ring,
              (unsigned long long)max_bytes);
      goto out;
    }
  }
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv_ready, NULL);
  pthread_cond_init(&p.cv_free, NULL);
  for (; started < n_threads; started++)
    if (pthread_create(&threads[started], NULL, worker_main, &p) != 0) break;
  if (started == 0) {
    tm_errf(err, "cannot start worker threads");
    goto sync_out;
  }

  uint64_t done_bytes = 0;
  for (size_t c = 0; c < p.n_chunks; c++) {
    size_t s = c % p.ring;
    pthread_mutex_lock(&p.mu);
    while (p.slot_ready[s] != (int64_t)c && !p.failed) pthread_cond_wait(&p.cv_ready, &p.mu);
    int failed = p.failed;
    pthread_mutex_unlock(&p.mu);
    if (failed) {
      tm_errf(err, "%s", p.fail_msg);
      goto stop;
    }
    if (gguf_w_data(w, p.slot_buf[s], (size_t)p.chunks[c].n_bytes, err) != 0) goto stop;
    done_bytes += p.chunks[c].n_bytes;
    pthread_mutex_lock(&p.mu);
    p.slot_ready[s] = -1;
    p.written = c + 1;
    pthread_cond_broadcast(&p.cv_free);
    pthread_mutex_unlock(&p.mu);
    if (progress) progress(done_bytes, total_bytes, ctx);
  }
  rc = 0;

stop:
  pthread_mutex_lock(&p.mu);
  if (rc != 0) p.abort = 1;
  pthread_cond_broadcast(&p.cv_free);
  pthread_mutex_unlock(&p.mu);
  for (unsigned i = 0; i < started; i++) pthread_join(threads[i], NULL);
sync_out:
  pthread_cond_destroy(&p.cv_free);
  pthread_cond_destroy(&p.cv_ready);
  pthread_mutex_destroy(&p.mu);
out:
  if (p.slot_buf)
    for (size_t s = 0; s < p.ring; s++) free(p.slot_buf[s]);
  free(p.slot_buf);
  free(p.slot_ready);
  free(threads);
  free(p.chunks);
  return rc;
}
