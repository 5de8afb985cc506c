/* verbs_rcache.c - registration cache; see verbs_rcache.h. */
#include <stdlib.h>
#include <unistd.h>
#include "verbs_rcache.h"

void rcoll__verbs_rcache_init(rcoll_verbs_rcache_t *rc, const rcoll_verbs_rcache_ops_t *ops,
                              int enabled, size_t max_bytes)
{
    long page = sysconf(_SC_PAGESIZE);

    rc->ops = *ops;
    rc->enabled = enabled && ops->fingerprint != NULL;
    rc->max_bytes = max_bytes;
    rc->bytes = rc->max_len = 0;
    rc->index = NULL;
    rc->n = rc->cap = 0;
    rcoll_list_init(&rc->lru);
    rc->page = page > 0 ? (size_t)page : 4096;
    rc->stats = (rcoll_verbs_rcache_stats_t){0};
}

/* Position of the first entry whose start is > addr. */
static size_t index_upper(const rcoll_verbs_rcache_t *rc, uintptr_t addr)
{
    size_t lo = 0, hi = rc->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rc->index[mid]->start <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void index_remove(rcoll_verbs_rcache_t *rc, rcoll_verbs_rcache_entry_t *e)
{
    for (size_t i = index_upper(rc, e->start); i-- > 0 && rc->index[i]->start == e->start;) {
        if (rc->index[i] == e) {
            for (size_t j = i; j + 1 < rc->n; j++) {
                rc->index[j] = rc->index[j + 1];
            }
            rc->n--;
            break;
        }
    }
    rc->bytes -= e->end - e->start;
    e->cached = 0;
    if (e->refs == 0) {
        rcoll_list_del(&e->lru);
    }
}

static int index_insert(rcoll_verbs_rcache_t *rc, rcoll_verbs_rcache_entry_t *e)
{
    if (rc->n == rc->cap) {
        size_t cap = rc->cap ? 2 * rc->cap : 64;
        void *p = realloc(rc->index, cap * sizeof(*rc->index));
        if (p == NULL) {
            return -1;
        }
        rc->index = p;
        rc->cap = cap;
    }
    size_t pos = index_upper(rc, e->start);
    for (size_t j = rc->n; j > pos; j--) {
        rc->index[j] = rc->index[j - 1];
    }
    rc->index[pos] = e;
    rc->n++;
    rc->bytes += e->end - e->start;
    if (e->end - e->start > rc->max_len) {
        rc->max_len = e->end - e->start;
    }
    e->cached = 1;
    return 0;
}

static void entry_free(rcoll_verbs_rcache_t *rc, rcoll_verbs_rcache_entry_t *e)
{
    rc->ops.dereg(rc->ops.arg, e->handle);
    free(e);
}

/* A cached entry covering [start, end) whose pages are still the registered ones. */
static rcoll_verbs_rcache_entry_t *lookup(rcoll_verbs_rcache_t *rc, uintptr_t start, uintptr_t end)
{
    size_t i = index_upper(rc, start);

    while (i-- > 0) {
        rcoll_verbs_rcache_entry_t *e = rc->index[i];
        uint64_t fp;

        if (e->start + rc->max_len < start) {
            break;                      /* no earlier entry can reach start */
        }
        if (e->end < end) {
            continue;
        }
        if (rc->ops.fingerprint(rc->ops.arg, e->start, e->end, &fp) == 0 && fp == e->fp) {
            return e;
        }
        rc->stats.stale++;              /* the memory behind it changed */
        index_remove(rc, e);
        if (e->refs == 0) {
            entry_free(rc, e);
        }
        i = index_upper(rc, start);     /* the index shifted: rescan */
    }
    return NULL;
}

static void evict(rcoll_verbs_rcache_t *rc, size_t need)
{
    while (rc->bytes + need > rc->max_bytes && !rcoll_list_empty(&rc->lru)) {
        rcoll_verbs_rcache_entry_t *e =
            rcoll_container_of(rc->lru.next, rcoll_verbs_rcache_entry_t, lru);
        index_remove(rc, e);
        entry_free(rc, e);
        rc->stats.evictions++;
    }
}

int rcoll__verbs_rcache_get(rcoll_verbs_rcache_t *rc, const void *addr, size_t len,
                            rcoll_verbs_rcache_entry_t **entry)
{
    uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(rc->page - 1);
    uintptr_t end = ((uintptr_t)addr + (len ? len : 1) + rc->page - 1) & ~(uintptr_t)(rc->page - 1);
    rcoll_verbs_rcache_entry_t *e;

    if (rc->enabled && (e = lookup(rc, start, end)) != NULL) {
        if (e->refs++ == 0) {
            rcoll_list_del(&e->lru);
        }
        rc->stats.hits++;
        *entry = e;
        return 0;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return -1;
    }
    rcoll_list_init(&e->lru);
    e->start = start;
    e->end = end;
    e->refs = 1;
    if (rc->enabled) {
        evict(rc, end - start);
    }
    if (rc->ops.reg(rc->ops.arg, (void *)start, end - start, &e->handle) != 0) {
        free(e);
        return -1;
    }
    /* Cache it only if it fits and its pages can be fingerprinted now that
     * the registration has made them present. */
    if (rc->enabled && end - start <= rc->max_bytes &&
        rc->ops.fingerprint(rc->ops.arg, start, end, &e->fp) == 0 &&
        index_insert(rc, e) == 0) {
        rc->stats.misses++;
    } else {
        rc->stats.bypass++;
    }
    *entry = e;
    return 0;
}

void rcoll__verbs_rcache_put(rcoll_verbs_rcache_t *rc, rcoll_verbs_rcache_entry_t *e)
{
    if (--e->refs > 0) {
        return;
    }
    if (e->cached) {
        rcoll_list_add_tail(&rc->lru, &e->lru);
        evict(rc, 0);
    } else {
        entry_free(rc, e);
    }
}

size_t rcoll__verbs_rcache_cleanup(rcoll_verbs_rcache_t *rc)
{
    size_t busy = 0;

    while (rc->n > 0) {
        rcoll_verbs_rcache_entry_t *e = rc->index[rc->n - 1];
        if (e->refs > 0) {
            busy++;
        }
        index_remove(rc, e);
        entry_free(rc, e);
    }
    free(rc->index);
    rc->index = NULL;
    rc->cap = 0;
    return busy;
}
