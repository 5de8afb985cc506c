/*
 * shm_copy.h - copies into a collective's receive buffer.
 *
 * A shared-memory collective writes its receive buffer and never reads it
 * back.  For a buffer that fits this core's caches a plain memcpy is the
 * fastest way; for one that does not, every line memcpy writes is first
 * read from memory (read for ownership) only to be overwritten, and
 * non-temporal ("streaming") stores that write whole lines straight to
 * memory move a third fewer bytes (a bare copy: 1.15-1.7x faster from
 * 1 MiB on the Xeon VM of bench/results/2026-12-03-*, 2x slower at 512 KiB,
 * where source and destination still fit its 1.25 MiB L2).  Where the line
 * lies is a property of the machine: RCOLL_SHM_STREAM_MIN=auto takes half
 * of this core's L2 cache.
 *
 * Used where measured faster (2 ranks, medians of 4 alternating runs,
 * 2026-12-03): the allreduce's result copy-out (2-16 MiB 6-18% faster) and
 * the pipelined bcast's copy-out (16 MiB 20%, 1-8 MiB unchanged).  Also,
 * chosen at run time, the flat allreduce's copy into its slot, for another
 * reason: the peers then read the lines from memory instead of from this
 * core's cache, which the VMs' slow phase makes 3x dearer (shm_adapt.h).  Not the
 * allgather: its receive buffer is rewritten by the next call's reads of
 * the peers' blocks, which then miss the cache the streamed lines left
 * (1-4 MiB blocks 1.3-1.5x slower).
 */
#ifndef RCOLL_SHM_COPY_H
#define RCOLL_SHM_COPY_H

#include <stddef.h>
#include <string.h>
#include "config.h"

/* The receive-buffer size from which copies into it stream, as set by
 * RCOLL_SHM_STREAM_MIN (auto: rcoll_stream_min_auto, half the L2 cache; off: SIZE_MAX). */
size_t rcoll__shm_stream_min(const rcoll_config_t *cfg);

/* Copy len bytes to dst with non-temporal stores (memcpy for the unaligned
 * head and tail; a store fence at the end, so that whatever the caller
 * publishes afterwards is ordered after the data).  memcpy where the CPU
 * has none. */
void rcoll__shm_copy_stream(void *dst, const void *src, size_t len);

/* Copy len bytes into the segment with streaming stores (fenced) where
 * `stream`, else memcpy: a store kind chosen at run time (shm_adapt.h). */
static inline void rcoll__shm_copy_kind(void *dst, const void *src, size_t len, int stream)
{
    if (stream) {
        rcoll__shm_copy_stream(dst, src, len);
    } else {
        memcpy(dst, src, len);
    }
}

/* Copy len bytes from src both into the segment (`seg`: streaming stores
 * where `stream`, fenced, as rcoll__shm_copy_kind) and into a private
 * buffer (`priv`, plain stores), reading src once: 128 bytes at a time
 * with AVX2 where the CPU has it, else the two copies one after the other.
 * The allgather's copy of its block into the segment and into its own
 * place in its receive buffer (docs/shm.md, "The allgather's two copies
 * in one pass"). */
void rcoll__shm_copy_two(void *seg, void *priv, const void *src, size_t len, int stream);

/* Copy len bytes into a receive buffer of `total` bytes: streaming from
 * stream_min on, else memcpy. */
static inline void rcoll__shm_copy_out(size_t stream_min, void *dst, const void *src,
                                       size_t len, size_t total)
{
    if (total >= stream_min) {
        rcoll__shm_copy_stream(dst, src, len);
    } else {
        memcpy(dst, src, len);
    }
}

#endif
