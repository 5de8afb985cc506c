/*
 * loop_mr.c - registrations and put for the in-memory backend.
 *
 * A registration lives in its owner's port list under the port's mutex, with
 * an id never reused within that port.  The packed key names the port, its
 * nonce, the id and the advertised range.  put() checks the key against the
 * peer it is aimed at and the range against the advertised one, then, under
 * the target port's mutex, finds the live registration, checks its access and
 * copies: so once mem_dereg() (which takes the same mutex) returns, no write
 * can land.  get() is the same copy the other way, from a registration that
 * grants remote read.  The copy is complete when put() or get() returns; the
 * completion is reported from the next progress().
 */
#include <stdlib.h>
#include <string.h>
#include "loop_int.h"
#include "log.h"

rcoll_status_t rcoll__loop_mem_reg(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                                   rcoll_tl_mr_t **out)
{
    const unsigned known = RCOLL_TL_ACCESS_LOCAL | RCOLL_TL_ACCESS_REMOTE_WRITE |
                           RCOLL_TL_ACCESS_REMOTE_READ;
    if ((access & ~known) != 0 || (addr == NULL && len != 0) ||
        (uintptr_t)addr + len < (uintptr_t)addr) {
        rcoll_error("loop: cannot register %zu bytes at %p with access 0x%x", len, addr, access);
        return RCOLL_ERR_INVALID_ARG;
    }
    struct rcoll_tl_mr *mr = malloc(sizeof(*mr));
    if (mr == NULL) {
        rcoll_error("loop: out of memory registering %zu bytes", len);
        return RCOLL_ERR_NO_MEMORY;
    }
    mr->addr = addr;
    mr->len = len;
    mr->access = access;
    loop_port_t *port = tl->port;
    pthread_mutex_lock(&port->lock);
    mr->id = port->next_mr_id++;
    mr->next = port->mrs;
    port->mrs = mr;
    pthread_mutex_unlock(&port->lock);
    *out = mr;
    return RCOLL_OK;
}

rcoll_status_t rcoll__loop_pack_rkey(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len)
{
    loop_rkey_t k = { .magic = LOOP_MAGIC, .port = (uint64_t)(uintptr_t)tl->port,
                      .nonce = tl->port->nonce, .id = mr->id,
                      .addr = (uint64_t)(uintptr_t)mr->addr, .len = mr->len };
    if (*len < sizeof(k)) {
        rcoll_error("loop: a packed remote key needs %zu bytes, the buffer has %zu", sizeof(k), *len);
        return RCOLL_ERR_INVALID_ARG;
    }
    memcpy(buf, &k, sizeof(k));
    *len = sizeof(k);
    return RCOLL_OK;
}

void rcoll__loop_mem_dereg(rcoll_tl_t *tl, rcoll_tl_mr_t *mr)
{
    loop_port_t *port = tl->port;
    pthread_mutex_lock(&port->lock);
    for (struct rcoll_tl_mr **pp = &port->mrs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == mr) {
            *pp = mr->next;
            break;
        }
    }
    pthread_mutex_unlock(&port->lock);
    free(mr);
}

void rcoll__loop_mr_free_all(struct rcoll_tl_mr *mr)
{
    while (mr != NULL) {
        struct rcoll_tl_mr *next = mr->next;
        free(mr);
        mr = next;
    }
}

/* Under the port's lock: the live registration the key names, granting
 * `access`; NULL (logged) if there is none. */
static struct rcoll_tl_mr *find_mr(loop_port_t *port, int peer, const loop_rkey_t *k,
                                   unsigned access, size_t len, const char *what)
{
    struct rcoll_tl_mr *mr = port->mrs;
    while (mr != NULL && mr->id != k->id) {
        mr = mr->next;
    }
    if (mr == NULL) {
        rcoll_error("loop: refusing a %s of %zu bytes with rank %d: its key %llu was revoked "
                    "(mem_dereg)", what, len, peer, (unsigned long long)k->id);
        return NULL;
    }
    if (!(mr->access & access) || (uint64_t)(uintptr_t)mr->addr != k->addr || mr->len != k->len) {
        rcoll_error("loop: refusing a %s of %zu bytes with rank %d: key %llu %s", what, len, peer,
                    (unsigned long long)k->id, (mr->access & access) ?
                    "advertises a range it does not register" : "does not grant that access");
        return NULL;
    }
    return mr;
}

/* Under the port's lock: copy between laddr and the live registration the
 * key names (into it for a put, out of it for a get). */
static rcoll_status_t copy_locked(loop_port_t *port, int peer, const loop_rkey_t *k, uint64_t raddr,
                                  void *laddr, size_t len, int is_get)
{
    const char *what = is_get ? "read" : "write";
    if (port->dead) {
        rcoll_error("loop: RDMA %s of %zu bytes with rank %d failed: the peer closed its "
                    "transport", what, len, peer);
        return RCOLL_ERR_PEER_FAILED;
    }
    struct rcoll_tl_mr *mr = find_mr(port, peer, k, is_get ? RCOLL_TL_ACCESS_REMOTE_READ :
                                     RCOLL_TL_ACCESS_REMOTE_WRITE, len, what);
    if (mr == NULL) {
        return RCOLL_ERR_PROTOCOL;
    }
    if (len && is_get) {
        memcpy(laddr, mr->addr + (raddr - k->addr), len);
    } else if (len) {
        memcpy(mr->addr + (raddr - k->addr), laddr, len);
    }
    return RCOLL_OK;
}

/* A put or a get: check the key and the range, copy under the target
 * port's lock, queue the completion for progress(). */
static rcoll_status_t transfer(rcoll_tl_t *tl, int peer, void *laddr, size_t len, uint64_t raddr,
                               const void *rkey, size_t rkey_len, rcoll_tl_completion_t *comp,
                               int is_get)
{
    loop_rkey_t k;
    const char *what = is_get ? "read" : "write";
    if (peer < 0 || peer >= tl->port->size || tl->peers[peer] == NULL) {
        rcoll_error("loop: %s with rank %d, which is not connected", what, peer);
        return RCOLL_ERR_INVALID_ARG;
    }
    loop_port_t *port = tl->peers[peer];
    if (rkey_len != sizeof(k)) {
        rcoll_error("loop: remote key from rank %d is %zu bytes: malformed", peer, rkey_len);
        return RCOLL_ERR_PROTOCOL;
    }
    memcpy(&k, rkey, sizeof(k));
    if (k.magic != LOOP_MAGIC || k.port != (uint64_t)(uintptr_t)port || k.nonce != port->nonce) {
        rcoll_error("loop: refusing a %s with rank %d with a key that is not one of its keys",
                    what, peer);
        return RCOLL_ERR_PROTOCOL;
    }
    if (raddr < k.addr || len > k.len || raddr - k.addr > k.len - len) {
        rcoll_error("loop: refusing a %s of %zu bytes at 0x%llx with rank %d: outside the region "
                    "it advertised (0x%llx, %llu bytes)", what, len, (unsigned long long)raddr,
                    peer, (unsigned long long)k.addr, (unsigned long long)k.len);
        return RCOLL_ERR_PROTOCOL;
    }
    loop_done_t *d = malloc(sizeof(*d));
    if (d == NULL) {
        rcoll_error("loop: out of memory for a %s with rank %d", what, peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&port->lock);
    rcoll_status_t st = copy_locked(port, peer, &k, raddr, laddr, len, is_get);
    pthread_mutex_unlock(&port->lock);
    if (st != RCOLL_OK) {
        free(d);
        if (st == RCOLL_ERR_PEER_FAILED) {
            rcoll__loop_peer_failed(tl, peer);
        }
        return st;
    }
    d->next = NULL;
    d->comp = comp;
    d->status = RCOLL_OK;
    *tl->done_tail = d;
    tl->done_tail = &d->next;
    return RCOLL_OK;
}

rcoll_status_t rcoll__loop_put(rcoll_tl_t *tl, int peer, const void *laddr, size_t len,
                               uint64_t raddr, const void *rkey, size_t rkey_len,
                               rcoll_tl_completion_t *comp)
{
    return transfer(tl, peer, (void *)laddr, len, raddr, rkey, rkey_len, comp, 0);
}

rcoll_status_t rcoll__loop_get(rcoll_tl_t *tl, int peer, void *laddr, size_t len,
                               uint64_t raddr, const void *rkey, size_t rkey_len,
                               rcoll_tl_completion_t *comp)
{
    return transfer(tl, peer, laddr, len, raddr, rkey, rkey_len, comp, 1);
}

/* A get is over when get() returns (the copy is done under the lock), so
 * there is nothing in flight to stop: the peer is only reported failed. */
void rcoll__loop_abort_peer(rcoll_tl_t *tl, int peer, const char *why)
{
    if (peer >= 0 && peer < tl->port->size) {
        rcoll_error("loop: giving up on rank %d: %s", peer, why);
        rcoll__loop_peer_failed(tl, peer);
    }
}
