/* hugemap: memory-mapped weights in 2 MiB pages, without copying them.
 *
 * Why: decode streams every weight once per token; through 4 KiB pages a
 * core walks a page table entry every 4 KiB and, on this VM host, one core
 * then reads 10-12 GB/s instead of the 14-15 GB/s it gets through 2 MiB
 * pages (bench/RESULTS.md, 2026-11-29). Linux maps a file with 2 MiB page
 * table entries when the page cache holds the file in 2 MiB folios and the
 * mapping is 2 MiB aligned with the file offset (gguf_open maps at a 2 MiB
 * aligned address, offset 0). Whether the cache holds 2 MiB folios depends
 * on how the pages got there: read through a mapping advised MADV_HUGEPAGE
 * they are 2 MiB; written by `tokmeter synth`, or read back piecemeal under
 * memory pressure, they are mostly small (measured: 35% of a freshly
 * synthesized Qwen3-0.6B Q4_0 file, 100% after a re-read).
 *
 * What engine_load does (hugemap_prepare), all best effort (any failure
 * leaves ordinary 4 KiB mappings, which are correct, only slower):
 *   1. madvise(MADV_HUGEPAGE) on the weight mapping, then touch every page;
 *   2. read this mapping's FilePmdMapped from /proc/self/smaps;
 *   3. if under 98% of the file: drop this process's page table entries
 *      (MADV_DONTNEED: the mapping stays, pointers stay valid), write back
 *      any dirty pages (a file just written), ask the kernel to drop the
 *      file's cached pages (POSIX_FADV_DONTNEED: only clean pages nobody
 *      maps; another process's mapping keeps its pages),
 *      and touch again: the pages are read back through the advised mapping,
 *      in 2 MiB folios;
 *   4. read FilePmdMapped again: what engine_info reports.
 * The weights stay memory-mapped (one copy, in the shared page cache;
 * resident memory is the file), unlike --hugepages, which copies them into
 * anonymous huge pages. The re-read is part of the load time, reported apart
 * from every rate. */
#include "engine/hugemap.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Bytes of the mapping starting at base that are mapped by PMD (2 MiB)
 * entries, from /proc/self/smaps: `field` is "FilePmdMapped" for a file
 * mapping, "AnonHugePages" for anonymous memory; -1 when unreadable. */
static int64_t pmd_mapped_bytes(const void *base, const char *field) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  bool in_vma = false;
  int64_t kb = -1;
  uintptr_t want = (uintptr_t)base;
  while (fgets(line, sizeof line, f)) {
    uintptr_t lo, hi;
    /* VMA header lines start with "lo-hi perms"; field lines with a name
     * and a colon, which never parses as two hex numbers around a dash. */
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
      if (in_vma) break;
      in_vma = lo == want;
      continue;
    }
    long long v;
    size_t fl = strlen(field);
    if (in_vma && strncmp(line, field, fl) == 0 && line[fl] == ':' &&
        sscanf(line + fl + 1, " %lld kB", &v) == 1)
      kb = v;
  }
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

static unsigned touch_all(const uint8_t *p, size_t n) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  unsigned acc = 0;
  const volatile uint8_t *v = p;
  for (size_t i = 0; i < n; i += (size_t)page) acc += v[i];
  return n ? acc + v[n - 1] : acc;
}

double hugemap_prepare(const char *path, const uint8_t *base, size_t size, unsigned *sink) {
  const size_t huge = (size_t)2 << 20;
  *sink = 0;
  if (size < huge || ((uintptr_t)base & (huge - 1)) != 0) {
    *sink = touch_all(base, size);
    return 0.0;
  }
#if defined(MADV_HUGEPAGE)
  madvise((void *)base, size, MADV_HUGEPAGE);
#endif
  *sink = touch_all(base, size);
  const double whole = (double)(size / huge * huge); /* the PMD-mappable part */
  int64_t pmd = pmd_mapped_bytes(base, "FilePmdMapped");
  if (pmd < 0) return -1.0;
  if ((double)pmd >= 0.98 * whole) return (double)pmd / whole;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    /* Dirty pages (a file just written) are not dropped: write them first. */
    if (madvise((void *)base, size, MADV_DONTNEED) == 0 && fdatasync(fd) == 0)
      (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  *sink += touch_all(base, size);
  pmd = pmd_mapped_bytes(base, "FilePmdMapped");
  return pmd < 0 ? -1.0 : (double)pmd / whole;
}

double hugemap_anon_share(const uint8_t *base, size_t size) {
  const size_t huge = (size_t)2 << 20;
  if (size < huge) return 0.0;
  int64_t b = pmd_mapped_bytes(base, "AnonHugePages");
  return b < 0 ? -1.0 : (double)b / (double)(size / huge * huge);
}
