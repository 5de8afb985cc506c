/*
 * verbs_mr.c - memory registrations.
 *
 * Rendezvous destinations (mem_reg with REMOTE_WRITE; on iWARP also
 * REMOTE_READ, for the writer's closing READ) are registered per
 * operation for exactly the advertised range, and mem_dereg deregisters at
 * once: after it returns the key is invalid in the device and no remote
 * write can land (a cached remote-writable registration would stay valid).
 * Put sources are local-only and go through the registration cache
 * (RCOLL_RCACHE, RCOLL_RCACHE_MAX), validated by page fingerprints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "verbs_int.h"

struct ibv_mr *rcoll__verbs_reg(rcoll_tl_t *tl, void *addr, size_t len, int access, const char *what)
{
    struct ibv_mr *mr = ibv_reg_mr(tl->pd, addr, len, access);

    if (mr == NULL && access == IBV_ACCESS_LOCAL_WRITE) {
        /* A read-only buffer (a const send buffer): a source needs no write access. */
        mr = ibv_reg_mr(tl->pd, addr, len, 0);
    }
    if (mr == NULL) {
        rcoll_error("verbs: registering %s (%zu bytes at %p, access 0x%x) on %s failed: %s%s",
                    what, len, addr, access, tl->port.dev, strerror(errno),
                    errno == ENOMEM || errno == EAGAIN ? " (check `ulimit -l`: locked memory)" : "");
    }
    return mr;
}

static int rc_reg(void *arg, void *start, size_t len, void **handle)
{
    struct ibv_mr *mr = rcoll__verbs_reg(arg, start, len, IBV_ACCESS_LOCAL_WRITE, "a put source");

    *handle = mr;
    return mr != NULL ? 0 : -1;
}

static void rc_dereg(void *arg, void *handle)
{
    rcoll_tl_t *tl = arg;
    int rc = ibv_dereg_mr(handle);

    if (rc != 0) {
        rcoll_warn("verbs: ibv_dereg_mr on %s failed: %s", tl->port.dev, strerror(rc));
    }
}

static int rc_fingerprint(void *arg, uintptr_t start, uintptr_t end, uint64_t *fp)
{
    return rcoll__verbs_pagemap_fingerprint(((rcoll_tl_t *)arg)->pagemap_fd, start, end, fp);
}

rcoll_status_t rcoll__verbs_mr_init(rcoll_tl_t *tl)
{
    rcoll_verbs_rcache_ops_t ops = { tl, rc_reg, rc_dereg, NULL };

    tl->pagemap_fd = tl->config.rcache ? rcoll__verbs_pagemap_open() : -1;
    if (tl->pagemap_fd >= 0) {
        ops.fingerprint = rc_fingerprint;
    }
    rcoll__verbs_rcache_init(&tl->rcache, &ops, tl->config.rcache, tl->config.rcache_max);
    if (!tl->config.rcache) {
        rcoll_info("verbs: registration cache off (RCOLL_RCACHE=0): put sources registered per put");
    } else if (tl->pagemap_fd < 0) {
        rcoll_info("verbs: registration cache bypassed: page frame numbers are not visible to this "
                   "process (needs CAP_SYS_ADMIN), so a reused address could not be told from the "
                   "registered one; put sources registered per put");
    } else {
        rcoll_info("verbs: registration cache on, up to %zu bytes, hits validated by page frame numbers",
                   tl->config.rcache_max);
    }
    return RCOLL_OK;
}

void rcoll__verbs_mr_cleanup(rcoll_tl_t *tl)
{
    const rcoll_verbs_rcache_stats_t *s = &tl->rcache.stats;
    size_t busy = rcoll__verbs_rcache_cleanup(&tl->rcache);

    rcoll_debug("verbs: rcache: %lu hits, %lu misses, %lu stale, %lu evictions, %lu uncached",
                s->hits, s->misses, s->stale, s->evictions, s->bypass);
    if (busy > 0) {
        rcoll_warn("verbs: %zu cached registrations were still in use at close", busy);
    }
    if (tl->pagemap_fd >= 0) {
        close(tl->pagemap_fd);
        tl->pagemap_fd = -1;
    }
}

rcoll_status_t rcoll__verbs_mem_reg(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                                    rcoll_tl_mr_t **mr)
{
    int va = IBV_ACCESS_LOCAL_WRITE;
    rcoll_tl_mr_t *m;

    if (mr == NULL || (addr == NULL && len > 0) ||
        (access & ~(unsigned)(RCOLL_TL_ACCESS_LOCAL | RCOLL_TL_ACCESS_REMOTE_WRITE | RCOLL_TL_ACCESS_REMOTE_READ))) {
        rcoll_error("verbs: mem_reg(%p, %zu, access 0x%x) refused: bad arguments", addr, len, access);
        return RCOLL_ERR_INVALID_ARG;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        rcoll_error("verbs: no memory for a registration");
        return RCOLL_ERR_NO_MEMORY;
    }
    if (access & RCOLL_TL_ACCESS_REMOTE_WRITE) {
        va |= IBV_ACCESS_REMOTE_WRITE;
    }
    if ((access & RCOLL_TL_ACCESS_REMOTE_READ) ||
        ((access & RCOLL_TL_ACCESS_REMOTE_WRITE) && tl->port.kind == RCOLL_VERBS_KIND_IWARP)) {
        /* iWARP: the writer ends each put with a 1-byte READ of the region (verbs_put.c) */
        va |= IBV_ACCESS_REMOTE_READ;
    }
    if (len > 0) {
        m->mr = rcoll__verbs_reg(tl, addr, len, va, "a rendezvous buffer");
        if (m->mr == NULL) {
            free(m);
            return RCOLL_ERR_NO_MEMORY;
        }
    }
    m->addr = addr;
    m->len = len;
    m->access = access;
    *mr = m;
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_pack_rkey(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len)
{
    rcoll_verbs_rkey_t k;

    if (mr == NULL || buf == NULL || len == NULL || *len < RCOLL_VERBS_RKEY_SIZE ||
        !(mr->access & RCOLL_TL_ACCESS_REMOTE_WRITE)) {
        rcoll_error("verbs: pack_rkey refused: %s",
                    mr != NULL && !(mr->access & RCOLL_TL_ACCESS_REMOTE_WRITE)
                        ? "the region is not registered for remote write"
                        : "bad arguments or a buffer smaller than 24 bytes");
        return RCOLL_ERR_INVALID_ARG;
    }
    k.rkey = mr->mr != NULL ? mr->mr->rkey : 0;
    k.addr = (uintptr_t)mr->addr;
    k.len = mr->len;
    rcoll__verbs_rkey_pack(&k, buf);
    *len = RCOLL_VERBS_RKEY_SIZE;
    return RCOLL_OK;
}

void rcoll__verbs_mem_dereg(rcoll_tl_t *tl, rcoll_tl_mr_t *mr)
{
    if (mr == NULL) {
        return;
    }
    if (mr->mr != NULL) {
        int rc = ibv_dereg_mr(mr->mr);
        if (rc != 0) {
            rcoll_warn("verbs: ibv_dereg_mr of %zu bytes at %p on %s failed: %s", mr->len, mr->addr,
                       tl->port.dev, strerror(rc));
        }
    }
    free(mr);
}
