/*
 * stream_min.h - RCOLL_SHM_STREAM_MIN=auto: the receive-buffer size from
 * which the shm collectives copy into it with streaming stores
 * (collectives/shm/shm_copy.h), here so that rcoll_info can print it.
 */
#ifndef RCOLL_STREAM_MIN_H
#define RCOLL_STREAM_MIN_H

#include <stddef.h>
#include <unistd.h>

/* This core's L2 cache in bytes (sysconf), 0 where it is not known. */
static inline size_t rcoll_l2_bytes(void)
{
    long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return l2 > 0 ? (size_t)l2 : 0;
}

/* Half of this core's L2 cache, 512 KiB where it is not known: a copy's
 * source and destination together then no longer fit it. */
static inline size_t rcoll_stream_min_auto(void)
{
    size_t l2 = rcoll_l2_bytes();
    return l2 > 0 ? l2 / 2 : (size_t)512 * 1024;
}

#endif
