/* hugemap: memory-mapped weights in 2 MiB pages without a copy (see
 * hugemap.c for why and how). Private to the engine. */
#ifndef TM_ENGINE_HUGEMAP_H
#define TM_ENGINE_HUGEMAP_H

#include <stddef.h>
#include <stdint.h>

/* Touches every page of the file mapping [base, base + size) of path (the
 * load's first touch), re-reading the file's cached pages in 2 MiB folios
 * when fewer than 98% of them are mapped that way. Returns the share (0..1)
 * of the 2 MiB-mappable part mapped by 2 MiB entries afterwards, or -1 when
 * the kernel does not say (no /proc). *sink keeps the reads. */
double hugemap_prepare(const char *path, const uint8_t *base, size_t size, unsigned *sink);
/* The same share for an anonymous copy at base (engine_options.hugepages):
 * what the kernel gave, which is not 1 when transparent huge pages are off
 * ("never") or memory is fragmented; -1 when the kernel does not say. */
double hugemap_anon_share(const uint8_t *base, size_t size);

#endif
