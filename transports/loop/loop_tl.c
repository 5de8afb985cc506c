/*
 * loop_tl.c - the in-memory backend: ranks are instances in one process,
 * each driven by its own thread (see README.md).
 *
 * send() copies hdr + data into one heap message and appends it to the
 * peer's inbox; progress() takes its own inbox and hands each message to
 * callbacks->recv() in the order it arrived.  close() marks the port dead
 * and posts a "dead" notice to every peer it was connected to, so they call
 * peer_error() from their next progress(); sends and puts to a dead port
 * fail with RCOLL_ERR_PEER_FAILED (and are reported the same way).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "loop_int.h"
#include "log.h"

static rcoll_status_t loop_open(const rcoll_tl_params_t *p, rcoll_tl_t **out)
{
    struct rcoll_tl *tl = calloc(1, sizeof(*tl));
    if (tl == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->peers = calloc((size_t)p->size, sizeof(*tl->peers));
    tl->state = calloc((size_t)p->size, 1);
    tl->port = rcoll__loop_port_create(p->rank, p->size);
    if (tl->peers == NULL || tl->state == NULL || tl->port == NULL) {
        rcoll_error("loop: out of memory opening rank %d of %d", p->rank, p->size);
        if (tl->port != NULL) {
            rcoll__loop_port_unref(tl->port);
        }
        free(tl->peers);
        free(tl->state);
        free(tl);
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->cb = p->cb;
    tl->done_tail = &tl->done_head;
    tl->addr = (loop_addr_t){ .magic = LOOP_MAGIC, .pid = (uint64_t)getpid(),
                              .port = (uint64_t)(uintptr_t)tl->port, .nonce = tl->port->nonce,
                              .rank = p->rank, .size = p->size };
    *out = tl;
    return RCOLL_OK;
}

static void loop_close(rcoll_tl_t *tl)
{
    int me = tl->port->rank;
    rcoll__loop_port_kill(tl->port);
    for (int r = 0; r < tl->port->size; r++) {
        loop_port_t *peer = tl->peers[r];
        if (peer == NULL) {
            continue;
        }
        if (peer != tl->port) {
            loop_msg_t *m = malloc(sizeof(*m));
            if (m != NULL) {
                m->src = me;
                m->kind = LOOP_MSG_DEAD;
                m->len = 0;
                if (rcoll__loop_port_post(peer, m) != RCOLL_OK) {
                    free(m);      /* it is gone too */
                }
            }
        }
        rcoll__loop_port_unref(peer);
    }
    while (tl->done_head != NULL) {   /* completions nobody will progress */
        loop_done_t *d = tl->done_head;
        tl->done_head = d->next;
        free(d);
    }
    rcoll__loop_port_unref(tl->port);
    free(tl->peers);
    free(tl->state);
    free(tl);
}

static rcoll_status_t loop_address(rcoll_tl_t *tl, const void **addr, size_t *len)
{
    *addr = &tl->addr;
    *len = sizeof(tl->addr);
    return RCOLL_OK;
}

/* The peer's port must still be open (rcoll_init connects while every rank
 * is inside it); magic and nonce catch a blob that is not a live loop port. */
static rcoll_status_t loop_connect(rcoll_tl_t *tl, int peer, const void *addr, size_t len)
{
    loop_addr_t a;
    if (peer < 0 || peer >= tl->port->size || len != sizeof(a)) {
        rcoll_error("loop: rank %d's address is %zu bytes (expected %zu) or the rank is out of "
                    "range: not a loop address", peer, len, sizeof(a));
        return RCOLL_ERR_TRANSPORT;
    }
    memcpy(&a, addr, sizeof(a));
    if (a.magic != LOOP_MAGIC) {
        rcoll_error("loop: rank %d's address is not a loop address", peer);
        return RCOLL_ERR_TRANSPORT;
    }
    if (a.pid != (uint64_t)getpid()) {
        rcoll_error("loop: rank %d is in process %llu, this rank in %d: the loop transport "
                    "connects only ranks that are contexts in one process (use ucx or verbs "
                    "across processes)", peer, (unsigned long long)a.pid, (int)getpid());
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    loop_port_t *port = (loop_port_t *)(uintptr_t)a.port;
    if (port->magic != LOOP_MAGIC || port->nonce != a.nonce || a.rank != peer ||
        port->rank != peer || a.size != tl->port->size || port->size != a.size) {
        rcoll_error("loop: rank %d's address names no open loop instance of rank %d in a world "
                    "of %d (stale address, or a different world)", peer, peer, tl->port->size);
        return RCOLL_ERR_TRANSPORT;
    }
    rcoll__loop_port_ref(port);
    if (tl->peers[peer] != NULL) {
        rcoll__loop_port_unref(tl->peers[peer]);
    }
    tl->peers[peer] = port;
    tl->state[peer] = LOOP_PEER_OK;
    return RCOLL_OK;
}

void rcoll__loop_peer_failed(struct rcoll_tl *tl, int peer)
{
    if (tl->state[peer] == LOOP_PEER_OK) {
        tl->state[peer] = LOOP_PEER_FAILED;
        tl->to_report = 1;
    }
}

static rcoll_status_t loop_send(rcoll_tl_t *tl, int peer, const void *hdr, size_t hdr_len,
                                const void *data, size_t len)
{
    if (peer < 0 || peer >= tl->port->size || tl->peers[peer] == NULL) {
        rcoll_error("loop: send to rank %d, which is not connected", peer);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (hdr_len + len > LOOP_MAX_MSG || hdr_len + len < hdr_len) {
        rcoll_error("loop: a %zu+%zu-byte message to rank %d exceeds the %u-byte limit", hdr_len,
                    len, peer, LOOP_MAX_MSG);
        return RCOLL_ERR_INVALID_ARG;
    }
    loop_msg_t *m = malloc(sizeof(*m) + hdr_len + len);
    if (m == NULL) {
        rcoll_error("loop: out of memory for a %zu-byte message to rank %d", hdr_len + len, peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    m->src = tl->port->rank;
    m->kind = LOOP_MSG_DATA;
    m->len = hdr_len + len;
    memcpy(m->data, hdr, hdr_len);
    if (len) {
        memcpy(m->data + hdr_len, data, len);
    }
    rcoll_status_t st = rcoll__loop_port_post(tl->peers[peer], m);
    if (st != RCOLL_OK) {
        free(m);
        rcoll_error("loop: send of %zu bytes to rank %d failed: the peer closed its transport",
                    hdr_len + len, peer);
        rcoll__loop_peer_failed(tl, peer);
    }
    return st;
}

static void report(struct rcoll_tl *tl, int peer, const char *reason)
{
    if (tl->state[peer] == LOOP_PEER_REPORTED) {
        return;
    }
    tl->state[peer] = LOOP_PEER_REPORTED;
    tl->cb.peer_error(tl->cb.arg, peer, RCOLL_ERR_PEER_FAILED, reason);
}

static int loop_progress(rcoll_tl_t *tl)
{
    int n = 0;
    /* Put completions first (a snapshot: callbacks may start more puts). */
    loop_done_t *d = tl->done_head;
    tl->done_head = NULL;
    tl->done_tail = &tl->done_head;
    while (d != NULL) {
        loop_done_t *next = d->next;
        d->comp->cb(d->comp, d->status);
        free(d);
        d = next;
        n++;
    }
    for (loop_msg_t *m = rcoll__loop_port_take(tl->port), *next; m != NULL; m = next) {
        next = m->next;
        if (m->kind == LOOP_MSG_DEAD) {
            report(tl, m->src, "loop: the peer closed its transport");
        } else {
            tl->cb.recv(tl->cb.arg, m->src, m->data, m->len);
        }
        free(m);
        n++;
    }
    if (tl->to_report) {
        tl->to_report = 0;
        for (int r = 0; r < tl->port->size; r++) {
            if (tl->state[r] == LOOP_PEER_FAILED) {
                report(tl, r, "loop: the peer closed its transport (seen on send or put)");
                n++;
            }
        }
    }
    return n;
}

static unsigned loop_caps(rcoll_tl_t *tl)
{
    return (RCOLL_TL_CAP_PUT | RCOLL_TL_CAP_GET) & ~tl->caps_off;
}

static size_t loop_max_msg_size(rcoll_tl_t *tl)
{
    return LOOP_MAX_MSG;
}

const rcoll_tl_ops_t rcoll_tl_loop_ops = {
    .name = "loop",
    .open = loop_open,
    .close = loop_close,
    .address = loop_address,
    .connect = loop_connect,
    .send = loop_send,
    .mem_reg = rcoll__loop_mem_reg,
    .pack_rkey = rcoll__loop_pack_rkey,
    .mem_dereg = rcoll__loop_mem_dereg,
    .put = rcoll__loop_put,
    .get = rcoll__loop_get,
    .abort_peer = rcoll__loop_abort_peer,
    .progress = loop_progress,
    .caps = loop_caps,
    .max_msg_size = loop_max_msg_size,
};
