/*
 * verbs_rcache.h - registration cache (pure data structure; the device
 * calls are pluggable, so the unit tests run without one).
 *
 * Entries are page-aligned registered ranges kept in an array sorted by
 * start address (binary search, then a short backward scan bounded by the
 * longest entry: an interval lookup).  Each entry has a reference count;
 * unreferenced entries sit on an LRU list and are evicted, oldest first,
 * to keep the cached bytes under a limit.
 *
 * Staleness: the user may free a buffer and get the same address back
 * (munmap + mmap), and a registration pins the *old* pages.  Each entry
 * records a fingerprint of the physical pages behind its range, taken just
 * after registration; a hit is used only if the fingerprint still matches
 * (see verbs_pagemap.c).  When no fingerprint can be taken (the platform
 * hides page frame numbers), the cache is bypassed: every get registers
 * and every put deregisters.  Correctness first.
 */
#ifndef RCOLL_VERBS_RCACHE_H
#define RCOLL_VERBS_RCACHE_H

#include <stddef.h>
#include <stdint.h>
#include "list.h"

typedef struct rcoll_verbs_rcache_ops {
    void *arg;
    /* Register [start, start+len); 0 and *handle on success. */
    int  (*reg)(void *arg, void *start, size_t len, void **handle);
    void (*dereg)(void *arg, void *handle);
    /* Fingerprint of the pages behind [start, end); 0 on success.  NULL:
     * no fingerprint is possible, the cache is bypassed. */
    int  (*fingerprint)(void *arg, uintptr_t start, uintptr_t end, uint64_t *fp);
} rcoll_verbs_rcache_ops_t;

typedef struct rcoll_verbs_rcache_entry {
    uintptr_t    start, end;   /* page-aligned registered range */
    void        *handle;       /* from ops.reg */
    unsigned     refs;
    uint64_t     fp;
    int          cached;       /* in the index; else freed at the last put */
    rcoll_list_t lru;          /* on the LRU list while cached and refs == 0 */
} rcoll_verbs_rcache_entry_t;

typedef struct rcoll_verbs_rcache_stats {
    unsigned long hits, misses, stale, evictions, bypass;
} rcoll_verbs_rcache_stats_t;

typedef struct rcoll_verbs_rcache {
    rcoll_verbs_rcache_ops_t     ops;
    int                          enabled;
    size_t                       max_bytes, bytes;
    size_t                       max_len;     /* longest entry ever indexed */
    rcoll_verbs_rcache_entry_t **index;       /* sorted by start */
    size_t                       n, cap;
    rcoll_list_t                 lru;         /* oldest first */
    size_t                       page;
    rcoll_verbs_rcache_stats_t   stats;
} rcoll_verbs_rcache_t;

/* enabled = 0 (RCOLL_RCACHE=0) or a NULL fingerprint makes every get a fresh registration. */
void rcoll__verbs_rcache_init(rcoll_verbs_rcache_t *rc, const rcoll_verbs_rcache_ops_t *ops,
                              int enabled, size_t max_bytes);

/* A registration covering [addr, addr+len) with one reference; 0 or -1 (ops.reg failed). */
int  rcoll__verbs_rcache_get(rcoll_verbs_rcache_t *rc, const void *addr, size_t len,
                             rcoll_verbs_rcache_entry_t **entry);

/* Drop a reference taken by get. */
void rcoll__verbs_rcache_put(rcoll_verbs_rcache_t *rc, rcoll_verbs_rcache_entry_t *e);

/* Deregister everything; returns how many entries were still referenced. */
size_t rcoll__verbs_rcache_cleanup(rcoll_verbs_rcache_t *rc);

/* Page fingerprints from /proc/self/pagemap (verbs_pagemap.c). */
/* Open it; -1 if page frame numbers are not visible to this process. */
int rcoll__verbs_pagemap_open(void);
/* Hash of the frame numbers of [start, end); -1 if a page is not present. */
int rcoll__verbs_pagemap_fingerprint(int fd, uintptr_t start, uintptr_t end, uint64_t *fp);

#endif
