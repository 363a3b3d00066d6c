/* engine_mem: engine_memory (engine.h), the engine's resident memory held
 * against its bound. Measured, not derived from sizes: a copy of the weights
 * made by mistake, or a KV cache touched beyond the positions written, shows
 * in these figures.
 *
 * Residency is read with mincore(2), page by page over exactly the engine's
 * ranges: /proc/self/smaps gives it per mapping, and the kernel merges
 * adjacent anonymous mappings, so a mapping's figure can include a
 * neighbour's pages. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine_impl.h"

int64_t engine_resident_bytes(const void *p, size_t len) {
  if (len == 0) return 0;
  long page_l = sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_l > 0 ? (uintptr_t)page_l : 4096;
  const uintptr_t lo = (uintptr_t)p, hi = lo + len;
  const uintptr_t first = lo & ~(page - 1);
  const size_t n_pages = (size_t)((hi - first + page - 1) / page);
  unsigned char *vec = malloc(n_pages);
  if (!vec) return -1;
  if (mincore((void *)first, n_pages * page, vec) != 0) {
    free(vec);
    return -1;
  }
  int64_t bytes = 0;
  for (size_t i = 0; i < n_pages; i++) {
    if (!(vec[i] & 1)) continue;
    /* The first and last pages count only their part inside the range. */
    uintptr_t a = first + i * page, b = a + page;
    bytes += (int64_t)((b < hi ? b : hi) - (a > lo ? a : lo));
  }
  free(vec);
  return bytes;
}

void engine_memory(const struct engine *e, struct engine_memory *out) {
  const struct gguf_file *f = e->file;
  out->file_bytes = f->file_size;
  out->kv_bytes = e->kv_bytes;
  out->limit = (uint64_t)((double)(f->file_size + e->kv_bytes) * (1.0 + ENGINE_MEMORY_SLACK));
  out->buffers = e->buffer_bytes + e->thread_state_bytes + e->m.owned_bytes;
  out->weights_resident = engine_resident_bytes(f->base, (size_t)f->file_size);
  out->kv_resident = e->kv_map ? engine_resident_bytes(e->kv_map, e->kv_map_bytes) : 0;
  out->total = out->weights_resident < 0 || out->kv_resident < 0
                   ? -1
                   : out->weights_resident + out->kv_resident + (int64_t)out->buffers;
}
