/*
 * p2p.c - the point-to-point messages of collectives: matching, eager and
 * rendezvous protocols.
 *
 * A message is identified by (communicator id, sequence number, step, sender
 * world rank).  Sizes up to the eager limit travel in one EAGER message; a
 * receive posted before its message waits in ctx->posted_recvs, a message
 * arriving before its receive waits (copied) in ctx->unexpected.
 *
 * Larger messages are receiver-driven: the receiver registers its buffer for
 * remote write and sends RTR {address, length, packed key}; the sender checks
 * that the advertised length is exactly what it sends, writes with put(), and
 * once the write is visible at the target sends FIN; the receiver then
 * deregisters (no remote write can land after that) and completes.  A
 * sender whose length differs from the RTR's writes nothing and sends a FIN
 * carrying its own length, so both sides fail at once (TRUNCATED when the
 * sender has more).  A length mismatch across the eager limit (the sender
 * rendezvous, the receiver eager) is not detectable: both wait for their
 * deadlines.  The
 * choice of protocol depends only on the length and on whether the peer is
 * this process, so both sides always agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "wire.h"

typedef struct {
    rcoll_list_t     link;
    int              wpeer;
    rcoll_wire_hdr_t hdr;
    size_t           body_len;
    uint8_t          body[];
} unexpected_t;

static int use_rndv(const rcoll_context_t *ctx, int wpeer, size_t len)
{
    return len > ctx->eager_limit && wpeer != ctx->rank;
}

static int op_matches(const rcoll_p2p_op_t *op, int wpeer, const rcoll_wire_hdr_t *h)
{
    return op->wpeer == wpeer && op->step == h->step && op->task->seq == h->seq &&
           op->task->comm->id == h->comm_id;
}

static int unexp_matches(const unexpected_t *u, const rcoll_p2p_op_t *op, int type)
{
    return u->hdr.type == type && op_matches(op, u->wpeer, &u->hdr);
}

static void fill_hdr(rcoll_wire_hdr_t *h, const rcoll_p2p_op_t *op, int type)
{
    memset(h, 0, sizeof(*h));
    h->type = type;
    h->version = RCOLL_WIRE_VERSION;
    h->seq = op->task->seq;
    h->comm_id = op->task->comm->id;
    h->step = op->step;
    h->src = (uint32_t)op->task->comm->rank;
    h->len = op->len;
    h->sig = op->task->sig;
}

/* The peer sent h for another call than op's task (a different
 * collective, count, datatype, op or root; 0: the core's own protocols,
 * not checked): fail op with PROTOCOL and return 1. */
static void op_fail(rcoll_p2p_op_t *op, rcoll_status_t st, const char *why);

static int sig_mismatch(rcoll_p2p_op_t *op, const rcoll_wire_hdr_t *h)
{
    if (h->sig == op->task->sig || h->sig == 0 || op->task->sig == 0) {
        return 0;
    }
    char why[160];
    snprintf(why, sizeof(why), "the peer called a different collective, count, datatype, op or "
             "root (signature %08x, this rank %08x)", h->sig, op->task->sig);
    op_fail(op, RCOLL_ERR_PROTOCOL, why);
    return 1;
}

static const char *op_what(const rcoll_p2p_op_t *op)
{
    return op->kind == RCOLL_P2P_SEND ? "send to" : "receive from";
}

/* Mark op finished with status st; the first error of a task is kept. */
static void op_complete(rcoll_p2p_op_t *op, rcoll_status_t st)
{
    rcoll_task_t *task = op->task;
    if (op->mr != NULL) {
        op->tl_ops->mem_dereg(op->tl, op->mr);
        op->mr = NULL;
    }
    op->state = RCOLL_P2P_DONE;
    op->status = st;
    task->npending--;
    task->ctx->p2p_pending--;
    task->progress_count++;
    if (st != RCOLL_OK && task->op_error == RCOLL_OK) {
        task->op_error = st;
    }
}

static void op_fail(rcoll_p2p_op_t *op, rcoll_status_t st, const char *why)
{
    rcoll_task_t *task = op->task;
    rcoll_error("%s (algorithm %s, comm 0x%llx, seq %u): %s rank %d, step %u, %zu bytes: %s",
                rcoll_coll_name(task->args.type), task->alg ? task->alg->name : "?",
                (unsigned long long)task->comm->id, task->seq, op_what(op), op->peer, op->step,
                op->len, why);
    op_complete(op, st);
}

/* Deliver a message to this process (a collective that sends to itself). */
static rcoll_status_t send_self(rcoll_context_t *ctx, const rcoll_wire_hdr_t *h, const void *data)
{
    size_t total = RCOLL_WIRE_HDR_SIZE + h->len;
    uint8_t *msg = malloc(total);
    if (msg == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_wire_encode(h, msg);
    if (h->len) {
        memcpy(msg + RCOLL_WIRE_HDR_SIZE, data, h->len);
    }
    rcoll_p2p_recv_cb(ctx, ctx->rank, msg, total);
    free(msg);
    return RCOLL_OK;
}

static rcoll_status_t send_msg(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                               const void *body, size_t body_len)
{
    uint8_t hdr[RCOLL_WIRE_HDR_SIZE];
    if (wpeer == ctx->rank) {
        return send_self(ctx, h, body);
    }
    rcoll_wire_encode(h, hdr);
    return ctx->peer_ops[wpeer]->send(ctx->peer_tl[wpeer], wpeer, hdr, sizeof(hdr), body, body_len);
}

static void put_done(rcoll_tl_completion_t *comp, rcoll_status_t st)
{
    rcoll_p2p_op_t *op = rcoll_container_of(comp, rcoll_p2p_op_t, put_comp);
    rcoll_task_t *task = op->task;
    rcoll_context_t *ctx = task->ctx;

    task->inflight_tl--;
    if (task->zombie) {
        if (task->inflight_tl == 0) {
            rcoll_task_release(task);
        }
        return;
    }
    if (st != RCOLL_OK) {
        op_fail(op, st, "RDMA write failed");
        return;
    }
    rcoll_wire_hdr_t h;
    fill_hdr(&h, op, RCOLL_MSG_FIN);
    st = send_msg(ctx, op->wpeer, &h, NULL, 0);
    op_complete(op, st);
}

/* The sender has the receiver's RTR: check it and start the write. */
static void start_put(rcoll_p2p_op_t *op, const rcoll_wire_hdr_t *rtr, const void *rkey)
{
    if (sig_mismatch(op, rtr)) {
        return;
    }
    if (rtr->len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "the receiver advertised %llu bytes (RTR), this rank sends %zu",
                 (unsigned long long)rtr->len, op->len);
        /* Nothing is written; a FIN carrying this rank's length tells the
         * receiver, which would otherwise wait for its deadline. */
        rcoll_wire_hdr_t h;
        fill_hdr(&h, op, RCOLL_MSG_FIN);
        (void)send_msg(op->task->ctx, op->wpeer, &h, NULL, 0);
        op_fail(op, rtr->len < op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    op->state = RCOLL_P2P_PUTTING;
    op->put_comp.cb = put_done;
    op->task->inflight_tl++;
    rcoll_status_t st = op->tl_ops->put(op->tl, op->wpeer, op->buf, op->len, rtr->addr, rkey,
                                        rtr->rkey_len, &op->put_comp);
    if (st != RCOLL_OK) {
        op->task->inflight_tl--;
        op_fail(op, st, "could not start the RDMA write");
    }
}

static rcoll_p2p_op_t *new_op(rcoll_task_t *task, rcoll_p2p_kind_t kind, int peer, uint32_t step,
                              void *buf, size_t len, rcoll_status_t *st)
{
    rcoll_comm_t *comm = task->comm;
    rcoll_context_t *ctx = task->ctx;

    if (peer < 0 || peer >= comm->size || task->nops >= RCOLL_TASK_MAX_OPS) {
        rcoll_error("%s (algorithm %s): bad op: peer %d of %d, %d ops posted (max %d)",
                    rcoll_coll_name(task->args.type), task->alg->name, peer, comm->size,
                    task->nops, RCOLL_TASK_MAX_OPS);
        *st = RCOLL_ERR_INTERNAL;
        return NULL;
    }
    int wpeer = comm->world_ranks[peer];
    /* A receive from a failed peer may still match a message that arrived
     * before the failure (rcoll_task_recv checks); a send fails here. */
    if (kind == RCOLL_P2P_SEND && ctx->peer_failed[wpeer] != RCOLL_OK) {
        rcoll_error("%s (seq %u, step %u): peer rank %d (world %d) has failed earlier",
                    rcoll_coll_name(task->args.type), task->seq, step, peer, wpeer);
        *st = ctx->peer_failed[wpeer];
        return NULL;
    }
    rcoll_p2p_op_t *op = &rcoll_task_ops(task)[task->nops++];
    memset(op, 0, sizeof(*op));
    rcoll_list_init(&op->link);
    op->task = task;
    op->kind = kind;
    op->peer = peer;
    op->wpeer = wpeer;
    op->step = step;
    op->buf = buf;
    op->len = len;
    op->tl = ctx->peer_tl[wpeer];
    op->tl_ops = ctx->peer_ops[wpeer];
    op->rndv = use_rndv(ctx, wpeer, len);
    op->status = RCOLL_INPROGRESS;
    task->npending++;
    ctx->p2p_pending++;
    *st = RCOLL_OK;
    return op;
}

static unexpected_t *find_unexpected(rcoll_context_t *ctx, const rcoll_p2p_op_t *op, int type)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        unexpected_t *u = rcoll_container_of(pos, unexpected_t, link);
        if (unexp_matches(u, op, type)) {
            return u;
        }
    }
    return NULL;
}

static void drop_unexpected(rcoll_context_t *ctx, unexpected_t *u)
{
    rcoll_list_del(&u->link);
    ctx->unexpected_count--;
    free(u);
}

rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len)
{
    rcoll_context_t *ctx = task->ctx;
    rcoll_status_t st;
    rcoll_p2p_op_t *op = new_op(task, RCOLL_P2P_SEND, peer, step, (void *)buf, len, &st);
    if (op == NULL) {
        return st;
    }
    if (!op->rndv) {
        rcoll_wire_hdr_t h;
        fill_hdr(&h, op, RCOLL_MSG_EAGER);
        st = send_msg(ctx, op->wpeer, &h, buf, len);
        op_complete(op, st);
        return st;
    }
    unexpected_t *u = find_unexpected(ctx, op, RCOLL_MSG_RTR);
    if (u != NULL) {
        start_put(op, &u->hdr, u->body);
        drop_unexpected(ctx, u);
        return RCOLL_OK;
    }
    op->state = RCOLL_P2P_WAIT_RTR;
    rcoll_list_add_tail(&ctx->sends_wait_rtr, &op->link);
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len)
{
    rcoll_context_t *ctx = task->ctx;
    rcoll_status_t st;
    rcoll_p2p_op_t *op = new_op(task, RCOLL_P2P_RECV, peer, step, buf, len, &st);
    if (op == NULL) {
        return st;
    }
    unexpected_t *u = find_unexpected(ctx, op, RCOLL_MSG_EAGER);
    if (u != NULL) {
        if (sig_mismatch(op, &u->hdr)) {
            /* failed */
        } else if (op->rndv || u->hdr.len != len) {
            char why[128];
            snprintf(why, sizeof(why), "peer sent %llu bytes, %zu expected (mismatched counts or "
                     "RCOLL_EAGER_LIMIT?)", (unsigned long long)u->hdr.len, len);
            op_fail(op, u->hdr.len > len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        } else {
            if (len) {
                memcpy(buf, u->body, len);
            }
            op_complete(op, RCOLL_OK);
        }
        drop_unexpected(ctx, u);
        return RCOLL_OK;
    }
    if (ctx->peer_failed[op->wpeer] != RCOLL_OK) {
        /* Nothing more will come: it left (e.g. finished first and closed) or died. */
        st = ctx->peer_failed[op->wpeer];
        op_fail(op, st, "the peer has failed earlier");
        return st;
    }
    if (!op->rndv) {
        op->state = RCOLL_P2P_POSTED;
        rcoll_list_add_tail(&ctx->posted_recvs, &op->link);
        return RCOLL_OK;
    }

    /* Rendezvous: advertise the buffer, registered only until FIN. */
    uint8_t rkey[RCOLL_TL_RKEY_MAX];
    size_t rkey_len = sizeof(rkey);
    st = op->tl_ops->mem_reg(op->tl, buf, len, RCOLL_TL_ACCESS_REMOTE_WRITE, &op->mr);
    if (st == RCOLL_OK) {
        st = op->tl_ops->pack_rkey(op->tl, op->mr, rkey, &rkey_len);
    }
    if (st == RCOLL_OK) {
        rcoll_wire_hdr_t h;
        fill_hdr(&h, op, RCOLL_MSG_RTR);
        h.addr = (uint64_t)(uintptr_t)buf;
        h.rkey_len = (uint16_t)rkey_len;
        op->state = RCOLL_P2P_WAIT_FIN;
        rcoll_list_add_tail(&ctx->posted_recvs, &op->link);
        st = send_msg(ctx, op->wpeer, &h, rkey, rkey_len);
        if (st != RCOLL_OK) {
            rcoll_list_del(&op->link);
        }
    }
    if (st != RCOLL_OK) {
        op_fail(op, st, "could not advertise the receive buffer (RTR)");
    }
    return RCOLL_OK;
}

static rcoll_p2p_op_t *find_op(rcoll_list_t *list, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, list) {
        rcoll_p2p_op_t *op = rcoll_container_of(pos, rcoll_p2p_op_t, link);
        if (op_matches(op, wpeer, h)) {
            return op;
        }
    }
    return NULL;
}

static void keep_unexpected(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                            const void *body, size_t body_len)
{
    unexpected_t *u = malloc(sizeof(*u) + body_len);
    if (u == NULL) {
        rcoll_error("out of memory keeping a %s message of %zu bytes from rank %d; it is lost",
                    rcoll_msg_type_name(h->type), body_len, wpeer);
        return;
    }
    u->wpeer = wpeer;
    u->hdr = *h;
    u->body_len = body_len;
    if (body_len) {
        memcpy(u->body, body, body_len);
    }
    rcoll_list_add_tail(&ctx->unexpected, &u->link);
    ctx->unexpected_count++;
}

static void on_eager(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                     const void *body, size_t body_len)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, body, body_len);
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    if (op->state != RCOLL_P2P_POSTED || body_len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "peer sent %zu bytes eagerly, %zu expected%s", body_len, op->len,
                 op->state != RCOLL_P2P_POSTED ? " by rendezvous" : "");
        op_fail(op, body_len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    if (body_len) {
        memcpy(op->buf, body, body_len);
    }
    op_complete(op, RCOLL_OK);
}

static void on_rtr(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                   const void *body, size_t body_len)
{
    rcoll_p2p_op_t *op = find_op(&ctx->sends_wait_rtr, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, body, body_len);
        return;
    }
    rcoll_list_del(&op->link);
    start_put(op, h, body);
}

static void on_fin(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL || op->state != RCOLL_P2P_WAIT_FIN) {
        rcoll_warn("dropping FIN from rank %d for comm 0x%llx seq %u step %u: no rendezvous "
                   "receive is waiting for it", wpeer, (unsigned long long)h->comm_id, h->seq, h->step);
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    if (h->len != op->len) {
        /* The sender refused to write: it has h->len bytes, not op->len. */
        char why[128];
        snprintf(why, sizeof(why), "the sender has %llu bytes for the %zu advertised and wrote "
                 "nothing (mismatched counts?)", (unsigned long long)h->len, op->len);
        op_fail(op, h->len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    op_complete(op, RCOLL_OK);
}

void rcoll_p2p_recv_cb(void *arg, int peer, const void *msg, size_t len)
{
    rcoll_context_t *ctx = arg;
    rcoll_wire_hdr_t h;
    const void *body;
    size_t body_len;
    char err[160];

    if (peer < 0 || peer >= ctx->size) {
        rcoll_error("dropping a message from unknown rank %d", peer);
        return;
    }
    if (rcoll_wire_decode(msg, len, &h, &body, &body_len, err, sizeof(err)) != RCOLL_OK) {
        rcoll_error("dropping a malformed message from rank %d: %s", peer, err);
        return;
    }
    rcoll_trace("recv %s from %d comm 0x%llx seq %u step %u len %llu", rcoll_msg_type_name(h.type),
                peer, (unsigned long long)h.comm_id, h.seq, h.step, (unsigned long long)h.len);
    switch (h.type) {
    case RCOLL_MSG_EAGER: on_eager(ctx, peer, &h, body, body_len); break;
    case RCOLL_MSG_RTR:   on_rtr(ctx, peer, &h, body, body_len); break;
    case RCOLL_MSG_FIN:   on_fin(ctx, peer, &h); break;
    }
}

static void fail_peer_ops(rcoll_list_t *list, int wpeer, rcoll_status_t st, const char *reason)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, list) {
        rcoll_p2p_op_t *op = rcoll_container_of(pos, rcoll_p2p_op_t, link);
        if (op->wpeer == wpeer) {
            rcoll_list_del(&op->link);
            op_fail(op, st, reason);
        }
    }
}

void rcoll_p2p_peer_error_cb(void *arg, int peer, rcoll_status_t st, const char *reason)
{
    rcoll_context_t *ctx = arg;
    if (peer < 0 || peer >= ctx->size || ctx->peer_failed[peer] != RCOLL_OK) {
        return;
    }
    rcoll_error("rank %d failed: %s", peer, reason);
    ctx->peer_failed[peer] = st;
    fail_peer_ops(&ctx->posted_recvs, peer, st, reason);
    fail_peer_ops(&ctx->sends_wait_rtr, peer, st, reason);
}

void rcoll_p2p_cancel_task(rcoll_task_t *task)
{
    for (int i = 0; i < task->nops; i++) {
        rcoll_p2p_op_t *op = &rcoll_task_ops(task)[i];
        if (op->state == RCOLL_P2P_POSTED || op->state == RCOLL_P2P_WAIT_RTR ||
            op->state == RCOLL_P2P_WAIT_FIN) {
            rcoll_list_del(&op->link);
            op_complete(op, RCOLL_ERR_TIMEOUT);   /* deregisters a rendezvous buffer */
        }
    }
}

void rcoll_p2p_cleanup(rcoll_context_t *ctx)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        drop_unexpected(ctx, rcoll_container_of(pos, unexpected_t, link));
    }
}

const rcoll_p2p_op_t *rcoll_task_first_pending(const rcoll_task_t *task)
{
    for (int i = 0; i < task->nops; i++) {
        if (rcoll_task_ops_const(task)[i].state != RCOLL_P2P_DONE) {
            return &rcoll_task_ops_const(task)[i];
        }
    }
    return NULL;
}

const char *rcoll_p2p_state_name(const rcoll_p2p_op_t *op)
{
    switch (op->state) {
    case RCOLL_P2P_POSTED:   return "eager message not yet arrived";
    case RCOLL_P2P_WAIT_RTR: return "rendezvous: waiting for the receiver's ready-to-receive";
    case RCOLL_P2P_PUTTING:  return "rendezvous: RDMA write in flight";
    case RCOLL_P2P_WAIT_FIN: return "rendezvous: buffer advertised, waiting for the sender's data";
    case RCOLL_P2P_DONE:     return "done";
    }
    return "?";
}
