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
 * deadlines.
 *
 * That protocol is safe only where mem_dereg revokes the key (verbs, loop:
 * RCOLL_TL_CAP_PUT).  With a transport that cannot revoke (UCX) a write the
 * sender starts late would land in whatever lives at the address after the
 * receive gave up, so there the rendezvous is pulled by the receiver
 * (docs/protocols.md): the sender registers its buffer for remote read and
 * sends RTS {address, length, key}; the receiver, once its receive is
 * posted, checks the length, reads with get() into its own buffer and sends
 * DONE; the sender then deregisters and completes.  Every write into the
 * receive buffer is the receiver's own get, so it decides when writes stop:
 * a receive that fails while its get is in flight waits (bounded) for the
 * get, then closes the endpoint (abort_peer) before it returns.  A receive
 * that fails before reading sends DECLINE (the sender fails at once); a
 * send that fails sends WITHDRAW (the receiver fails instead of reading).
 * A length mismatch: the receiver reads nothing and answers DONE with its
 * own length.  The choice of protocol depends only on the length, on
 * whether the peer is this process and on the backend both ranks use for
 * the pair, so both sides agree.
 *
 * Eager messages are flow-controlled (p2p_flow.h): a sender out of credit
 * with a peer sends HOLD (the header alone) and keeps the message; the
 * receiver, once the receive is posted, answers PULL and the sender sends
 * the payload as PULLED, which matches only a receive that pulled it.  The
 * receiver keeps a HOLD unexpected (a header, not charged), never a PULLED.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "p2p_flow.h"
#include "wire.h"
#include "liveness.h"
#include "whereis.h"

typedef struct {
    rcoll_list_t     link;
    int              wpeer;
    rcoll_wire_hdr_t hdr;
    size_t           body_len;
    uint8_t          body[];
} unexpected_t;

/* The charge of a kept copy covers its header and malloc's own (p2p_flow.h). */
_Static_assert(sizeof(unexpected_t) + 2 * sizeof(size_t) <= RCOLL__FLOW_ENTRY,
               "RCOLL__FLOW_ENTRY must cover an unexpected_t");

static int use_rndv(const rcoll_context_t *ctx, int wpeer, size_t len)
{
    return len > ctx->eager_limit && wpeer != ctx->rank;
}

/* Rendezvous by put where the backend's keys are revocable, else by get. */
static int rndv_protocol(const rcoll_tl_ops_t *ops, rcoll_tl_t *tl)
{
    return (ops->caps(tl) & RCOLL_TL_CAP_PUT) ? RCOLL_P2P_RNDV_PUT : RCOLL_P2P_RNDV_GET;
}

static int op_matches(const rcoll_p2p_op_t *op, int wpeer, const rcoll_wire_hdr_t *h)
{
    return op->wpeer == wpeer && op->step == h->step && op->task->seq == h->seq &&
           op->task->comm->id == h->comm_id;
}

/* A set of message types; a type beyond 63 is in none. */
#define TYPE_BIT(t) ((unsigned)(t) < 64 ? (uint64_t)1 << (t) : 0)

/* types: a set of TYPE_BITs. */
static int unexp_matches(const unexpected_t *u, const rcoll_p2p_op_t *op, uint64_t types)
{
    return (TYPE_BIT(u->hdr.type) & types) && op_matches(op, u->wpeer, &u->hdr);
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

/* Deliver a message to this process (a collective that sends to itself, or
 * an answer to a message that claimed to come from this rank).  The body is
 * body_len bytes: h->len is not always the body's length (HOLD, PULL,
 * CREDIT, DONE carry other lengths there and no body). */
static rcoll_status_t send_self(rcoll_context_t *ctx, const rcoll_wire_hdr_t *h, const void *data,
                                size_t body_len)
{
    size_t total = RCOLL_WIRE_HDR_SIZE + body_len;
    uint8_t *msg = malloc(total);
    if (msg == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_wire_encode(h, msg);
    if (body_len) {
        memcpy(msg + RCOLL_WIRE_HDR_SIZE, data, body_len);
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
        return send_self(ctx, h, body, body_len);
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
    h.addr = op->raddr;                 /* names the transfer: the advertised buffer */
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
        h.addr = rtr->addr;
        (void)send_msg(op->task->ctx, op->wpeer, &h, NULL, 0);
        op_fail(op, rtr->len < op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    op->state = RCOLL_P2P_PUTTING;
    op->raddr = rtr->addr;
    op->put_comp.cb = put_done;
    op->task->inflight_tl++;
    rcoll_status_t st = op->tl_ops->put(op->tl, op->wpeer, op->buf, op->len, rtr->addr, rkey,
                                        rtr->rkey_len, &op->put_comp);
    if (st != RCOLL_OK) {
        op->task->inflight_tl--;
        op_fail(op, st, "could not start the RDMA write");
        return;
    }
    RCOLL_FAULT_AT(op->task->ctx, RCOLL_FAULT_RNDV, 0);
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
    op->rndv = use_rndv(ctx, wpeer, len) ? rndv_protocol(op->tl_ops, op->tl) : 0;
    op->status = RCOLL_INPROGRESS;
    task->npending++;
    ctx->p2p_pending++;
    *st = RCOLL_OK;
    return op;
}

/* The first kept message for op whose type is in the set types (TYPE_BITs). */
static unexpected_t *find_unexpected_of(rcoll_context_t *ctx, const rcoll_p2p_op_t *op,
                                        uint64_t types)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        unexpected_t *u = rcoll_container_of(pos, unexpected_t, link);
        if (unexp_matches(u, op, types)) {
            return u;
        }
    }
    return NULL;
}

static unexpected_t *find_unexpected(rcoll_context_t *ctx, const rcoll_p2p_op_t *op, int type)
{
    return find_unexpected_of(ctx, op, TYPE_BIT(type));
}

/* Is u an eager copy charged to its sender's credit? */
static int unexp_charged(const rcoll_context_t *ctx, const unexpected_t *u)
{
    return u->hdr.type == RCOLL_MSG_EAGER && u->wpeer != ctx->rank;
}

static void free_unexpected(rcoll_context_t *ctx, unexpected_t *u)
{
    rcoll_list_del(&u->link);
    ctx->unexpected_count--;
    if (unexp_charged(ctx, u)) {
        rcoll__flow_unkeep(ctx, u->wpeer, u->body_len);
    } else if (u->hdr.type == RCOLL_MSG_HOLD) {
        ctx->unexpected_held--;
    }
    free(u);
}

/* u has been taken (or refused) by its op: free it, its charge goes back to the sender. */
static void drop_unexpected(rcoll_context_t *ctx, unexpected_t *u)
{
    int wpeer = u->wpeer, charged = unexp_charged(ctx, u);
    size_t len = u->body_len;
    free_unexpected(ctx, u);
    if (charged) {
        rcoll__flow_consumed(ctx, wpeer, len);
    }
}

/* ---- rendezvous by get ---- */

static void send_ctl(rcoll_p2p_op_t *op, int type, size_t len)
{
    rcoll_wire_hdr_t h;
    fill_hdr(&h, op, type);
    h.len = len;
    (void)send_msg(op->task->ctx, op->wpeer, &h, NULL, 0);   /* best effort: a notice */
}

/* Send: advertise the source (read-only) in an RTS, unless the receiver has
 * declined already. */
static void send_rts(rcoll_p2p_op_t *op)
{
    rcoll_context_t *ctx = op->task->ctx;
    unexpected_t *u = find_unexpected(ctx, op, RCOLL_MSG_DECLINE);
    if (u != NULL) {
        drop_unexpected(ctx, u);
        op_fail(op, RCOLL_ERR_TIMEOUT, "the receiver gave up on this message before it was sent "
                "(its collective failed or timed out); nothing was read");
        return;
    }
    uint8_t rkey[RCOLL_TL_RKEY_MAX];
    size_t rkey_len = sizeof(rkey);
    rcoll_status_t st = op->tl_ops->mem_reg(op->tl, op->buf, op->len, RCOLL_TL_ACCESS_REMOTE_READ,
                                            &op->mr);
    if (st == RCOLL_OK) {
        st = op->tl_ops->pack_rkey(op->tl, op->mr, rkey, &rkey_len);
    }
    if (st == RCOLL_OK) {
        rcoll_wire_hdr_t h;
        fill_hdr(&h, op, RCOLL_MSG_RTS);
        h.addr = (uint64_t)(uintptr_t)op->buf;
        h.rkey_len = (uint16_t)rkey_len;
        op->state = RCOLL_P2P_WAIT_DONE;
        rcoll_list_add_tail(&ctx->sends_wait_rtr, &op->link);
        st = send_msg(ctx, op->wpeer, &h, rkey, rkey_len);
        if (st != RCOLL_OK) {
            rcoll_list_del(&op->link);
        }
    }
    if (st != RCOLL_OK) {
        op_fail(op, st, "could not advertise the send buffer (RTS)");
        return;
    }
    RCOLL_FAULT_AT(ctx, RCOLL_FAULT_RNDV, 0);      /* the receiver's get reads a dead rank */
}

static void get_done(rcoll_tl_completion_t *comp, rcoll_status_t st)
{
    rcoll_p2p_op_t *op = rcoll_container_of(comp, rcoll_p2p_op_t, put_comp);
    rcoll_task_t *task = op->task;

    task->inflight_tl--;
    if (task->zombie) {
        if (task->inflight_tl == 0) {
            rcoll_task_release(task);
        }
        return;
    }
    if (op->state == RCOLL_P2P_DONE) {
        return;                 /* cancelled after abort_peer: nothing landed since */
    }
    if (op->state == RCOLL_P2P_GETTING_VOID) {
        send_ctl(op, RCOLL_MSG_DONE, op->len);     /* the withdrawn sender may free its source */
        op_fail(op, RCOLL_ERR_TIMEOUT, "the sender withdrew its message (its collective failed "
                "or timed out) while it was being read: the data does not count");
        return;
    }
    if (st != RCOLL_OK) {
        send_ctl(op, RCOLL_MSG_DECLINE, op->len);
        op_fail(op, st, "RDMA read failed");
        return;
    }
    send_ctl(op, RCOLL_MSG_DONE, op->len);
    op_complete(op, RCOLL_OK);
}

/* The receiver has the sender's RTS: check it and start reading. */
static void start_get(rcoll_p2p_op_t *op, const rcoll_wire_hdr_t *rts, const void *rkey)
{
    if (rts->sig != op->task->sig && rts->sig != 0 && op->task->sig != 0) {
        send_ctl(op, RCOLL_MSG_DECLINE, op->len);  /* carries our signature: the sender fails too */
        (void)sig_mismatch(op, rts);
        return;
    }
    if (rts->len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "the sender advertised %llu bytes (RTS), this rank receives %zu",
                 (unsigned long long)rts->len, op->len);
        send_ctl(op, RCOLL_MSG_DONE, op->len);     /* refuses: our length, nothing read */
        op_fail(op, rts->len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    op->state = RCOLL_P2P_GETTING;
    op->put_comp.cb = get_done;
    op->task->inflight_tl++;
    rcoll_status_t st = op->tl_ops->get(op->tl, op->wpeer, op->buf, op->len, rts->addr, rkey,
                                        rts->rkey_len, &op->put_comp);
    if (st != RCOLL_OK) {
        op->task->inflight_tl--;
        send_ctl(op, RCOLL_MSG_DECLINE, op->len);
        op_fail(op, st, "could not start the RDMA read");
    }
}

/* Receive: read at once if the RTS is here, fail if it was withdrawn, else wait. */
static void post_get_recv(rcoll_p2p_op_t *op)
{
    rcoll_context_t *ctx = op->task->ctx;
    unexpected_t *u = find_unexpected(ctx, op, RCOLL_MSG_RTS);
    if (u != NULL) {
        start_get(op, &u->hdr, u->body);
        drop_unexpected(ctx, u);
        return;
    }
    u = find_unexpected(ctx, op, RCOLL_MSG_WITHDRAW);
    if (u != NULL) {
        drop_unexpected(ctx, u);
        op_fail(op, RCOLL_ERR_TIMEOUT, "the sender withdrew its message (its collective failed "
                "or timed out)");
        return;
    }
    op->state = RCOLL_P2P_WAIT_RTS;
    rcoll_list_add_tail(&ctx->posted_recvs, &op->link);
}

/* ---- eager messages held by the sender for lack of credit (p2p_flow.h) ---- */

/* Send: no credit with the peer: announce the message (HOLD) and keep it
 * until the receiver asks for it. */
static void send_hold(rcoll_p2p_op_t *op)
{
    rcoll_context_t *ctx = op->task->ctx;
    rcoll_wire_hdr_t h;
    fill_hdr(&h, op, RCOLL_MSG_HOLD);
    op->state = RCOLL_P2P_WAIT_PULL;
    rcoll_list_add_tail(&ctx->sends_wait_rtr, &op->link);
    rcoll_status_t st = send_msg(ctx, op->wpeer, &h, NULL, 0);
    if (st != RCOLL_OK) {
        rcoll_list_del(&op->link);
        op_fail(op, st, "could not announce the held eager message (HOLD)");
    }
}

/* Receive (not in a list): the sender holds its message (HOLD hold); ask
 * for it, or refuse with our own length or signature. */
static void pull(rcoll_p2p_op_t *op, const rcoll_wire_hdr_t *hold)
{
    rcoll_context_t *ctx = op->task->ctx;
    if (hold->sig != op->task->sig && hold->sig != 0 && op->task->sig != 0) {
        send_ctl(op, RCOLL_MSG_DECLINE, op->len);  /* carries our signature: the sender fails too */
        (void)sig_mismatch(op, hold);
        return;
    }
    if (hold->len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "peer holds %llu bytes for this eager receive of %zu "
                 "(mismatched counts?)", (unsigned long long)hold->len, op->len);
        send_ctl(op, RCOLL_MSG_PULL, op->len);     /* our length: the sender fails, sends nothing */
        op_fail(op, hold->len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    rcoll_wire_hdr_t h;
    fill_hdr(&h, op, RCOLL_MSG_PULL);
    op->state = RCOLL_P2P_PULLING;
    rcoll_list_add_tail(&ctx->posted_recvs, &op->link);
    rcoll_status_t st = send_msg(ctx, op->wpeer, &h, NULL, 0);
    if (st != RCOLL_OK) {
        rcoll_list_del(&op->link);
        op_fail(op, st, "could not ask for the held eager message (PULL)");
    }
}

/* Receive being posted: a HOLD (pull it) or a WITHDRAW (fail) was kept for it. */
static void take_held(rcoll_p2p_op_t *op, unexpected_t *u)
{
    rcoll_wire_hdr_t h = u->hdr;
    drop_unexpected(op->task->ctx, u);
    if (h.type == RCOLL_MSG_WITHDRAW) {
        op_fail(op, RCOLL_ERR_TIMEOUT, "the sender withdrew its message (its collective failed "
                "or timed out)");
        return;
    }
    pull(op, &h);
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
        if (op->wpeer != ctx->rank && !rcoll__flow_take(ctx, op->wpeer, len)) {
            send_hold(op);                /* no credit: the receiver pulls it when posted */
            return RCOLL_OK;
        }
        rcoll_wire_hdr_t h;
        fill_hdr(&h, op, RCOLL_MSG_EAGER);
        st = send_msg(ctx, op->wpeer, &h, buf, len);
        op_complete(op, st);
        return st;
    }
    if (op->rndv == RCOLL_P2P_RNDV_GET) {
        send_rts(op);
        return RCOLL_OK;
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
    unexpected_t *u = find_unexpected_of(ctx, op, op->rndv ? TYPE_BIT(RCOLL_MSG_EAGER) :
                                         TYPE_BIT(RCOLL_MSG_EAGER) | TYPE_BIT(RCOLL_MSG_HOLD) |
                                         TYPE_BIT(RCOLL_MSG_WITHDRAW));
    if (u != NULL && u->hdr.type != RCOLL_MSG_EAGER) {
        take_held(op, u);                 /* HOLD: pull it; WITHDRAW: fail */
        return RCOLL_OK;
    }
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
    if (op->rndv == RCOLL_P2P_RNDV_GET) {
        post_get_recv(op);
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

/* A message of h's type and key from wpeer is kept already? */
static int kept_already(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        unexpected_t *u = rcoll_container_of(pos, unexpected_t, link);
        if (u->hdr.type == h->type && u->wpeer == wpeer && u->hdr.seq == h->seq &&
            u->hdr.step == h->step && u->hdr.comm_id == h->comm_id) {
            return 1;
        }
    }
    return 0;
}

/*
 * Keep a message that arrived before its op.  An eager copy from a peer is
 * charged to the peer's credit and refused beyond it (a correct peer never
 * gets there: p2p_flow.h); any other type is a header (and a key), kept
 * once per key: a duplicate (a broken or hostile peer) is dropped, so
 * repeated control messages do not grow memory.
 */
static void keep_unexpected(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                            const void *body, size_t body_len)
{
    int charged = h->type == RCOLL_MSG_EAGER && wpeer != ctx->rank;
    if (charged && !rcoll__flow_keep(ctx, wpeer, body_len)) {
        rcoll_error("dropping an EAGER message of %zu bytes from rank %d (comm 0x%llx seq %u "
                    "step %u): the rank exceeded its eager credit of %zu bytes (a broken peer?)",
                    body_len, wpeer, (unsigned long long)h->comm_id, h->seq, h->step,
                    ctx->flow_share);
        return;
    }
    if (!charged && h->type != RCOLL_MSG_EAGER && kept_already(ctx, wpeer, h)) {
        rcoll_debug("dropping a duplicate %s from rank %d (comm 0x%llx seq %u step %u)",
                    rcoll_msg_type_name(h->type), wpeer, (unsigned long long)h->comm_id, h->seq,
                    h->step);
        return;
    }
    unexpected_t *u = malloc(sizeof(*u) + body_len);
    if (u == NULL) {
        rcoll_error("out of memory keeping a %s message of %zu bytes from rank %d; it is lost",
                    rcoll_msg_type_name(h->type), body_len, wpeer);
        if (charged) {
            rcoll__flow_unkeep(ctx, wpeer, body_len);
        }
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
    if (h->type == RCOLL_MSG_HOLD) {
        ctx->unexpected_held++;
    }
}

static void on_eager(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                     const void *body, size_t body_len)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, body, body_len);
        return;
    }
    if (wpeer != ctx->rank) {
        rcoll__flow_consumed(ctx, wpeer, body_len);    /* taken at once: the charge goes back */
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
    if (op->state != RCOLL_P2P_WAIT_RTR) {
        op_fail(op, RCOLL_ERR_PROTOCOL, "the receiver sent an RTR (rendezvous by put), this rank "
                "advertised its buffer for get (RTS): the ranks use different transports");
        return;
    }
    start_put(op, h, body);
}

/* ---- rendezvous by get: the messages ---- */

static void on_rts(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                   const void *body, size_t body_len)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, body, body_len);
        return;
    }
    rcoll_list_del(&op->link);
    if (op->state != RCOLL_P2P_WAIT_RTS) {
        char why[160];
        snprintf(why, sizeof(why), "peer advertised %llu bytes for get (RTS), this rank expected "
                 "%zu bytes %s", (unsigned long long)h->len, op->len, op->rndv ?
                 "by put (RTR): the ranks use different transports" : "eagerly (mismatched counts "
                 "or RCOLL_EAGER_LIMIT?)");
        send_ctl(op, RCOLL_MSG_DONE, op->len);      /* refuses: the sender fails at once */
        op_fail(op, h->len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    start_get(op, h, body);
}

/*
 * The notice that ends a rendezvous, to the op waiting for it in list in
 * state want: FIN (put: the sender wrote, to the receive) or DONE (get: the
 * receiver read, to the send).  A length other than the op's is the other
 * side's own, sent when it refused: nothing moved.  TRUNCATED when the send
 * is the longer, PROTOCOL otherwise.
 */
static void on_rndv_end(rcoll_context_t *ctx, rcoll_list_t *list, rcoll_p2p_state_t want,
                        int wpeer, const rcoll_wire_hdr_t *h)
{
    int fin = h->type == RCOLL_MSG_FIN;
    rcoll_p2p_op_t *op = find_op(list, wpeer, h);
    if (!fin && op != NULL && op->state == RCOLL_P2P_WITHDRAWN) {
        rcoll_list_del(&op->link);       /* the receiver is done with the source */
        op->state = RCOLL_P2P_WAIT_DONE; /* answered: drain_withdrawn completes it */
        return;
    }
    if (op == NULL || op->state != want) {
        rcoll_warn("dropping %s from rank %d for comm 0x%llx seq %u step %u: no %s is waiting "
                   "for it", fin ? "FIN" : "DONE", wpeer, (unsigned long long)h->comm_id, h->seq,
                   h->step, fin ? "rendezvous receive" : "send");
        return;
    }
    if (fin && h->addr != (uint64_t)(uintptr_t)op->buf) {
        /* not the transfer this receive advertised (RTR): a stale or forged
         * FIN; the receive keeps waiting for its own (or its deadline) */
        rcoll_warn("dropping FIN from rank %d for comm 0x%llx seq %u step %u: it names buffer "
                   "0x%llx, the receive advertised %p", wpeer, (unsigned long long)h->comm_id,
                   h->seq, h->step, (unsigned long long)h->addr, op->buf);
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    if (h->len != op->len) {
        char why[128];
        if (fin)
            snprintf(why, sizeof(why), "the sender has %llu bytes for the %zu advertised and wrote "
                     "nothing (mismatched counts?)", (unsigned long long)h->len, op->len);
        else
            snprintf(why, sizeof(why), "the receiver expects %llu bytes and read nothing "
                     "(mismatched counts?)", (unsigned long long)h->len);
        size_t send_len = fin ? (size_t)h->len : op->len, recv_len = fin ? op->len : (size_t)h->len;
        op_fail(op, send_len > recv_len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    op_complete(op, RCOLL_OK);       /* a send's: deregisters the source */
}

/* The receiver gave up before reading: fail the send now (or when it is posted). */
static void on_decline(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_p2p_op_t *op = find_op(&ctx->sends_wait_rtr, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, NULL, 0);
        return;
    }
    if (op->state == RCOLL_P2P_WITHDRAWN) {
        rcoll_list_del(&op->link);       /* the receiver will not read the source */
        op->state = RCOLL_P2P_WAIT_DONE; /* answered: drain_withdrawn completes it */
        return;
    }
    if (op->state != RCOLL_P2P_WAIT_DONE && op->state != RCOLL_P2P_WAIT_PULL) {
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    op_fail(op, RCOLL_ERR_TIMEOUT, "the receiver gave up on this message (its collective failed or "
            "timed out) and read nothing");
}

/* The sender's send failed: its RTS is void.  A read in flight finishes but
 * does not count; a receive not yet posted fails when it is. */
static void on_withdraw(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op != NULL && (op->state == RCOLL_P2P_WAIT_RTS || op->state == RCOLL_P2P_POSTED ||
                       op->state == RCOLL_P2P_PULLING)) {   /* POSTED: the HOLD is late */
        send_ctl(op, RCOLL_MSG_DECLINE, op->len);    /* nothing will be read: the sender lets go */
        rcoll_list_del(&op->link);
        op_fail(op, RCOLL_ERR_TIMEOUT, "the sender withdrew its message (its collective failed "
                "or timed out)");
        return;
    }
    if (op != NULL) {
        return;
    }
    rcoll_task_t *task = NULL;
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->active) {       /* a read in flight is in no list */
        rcoll_task_t *t = rcoll_container_of(pos, rcoll_task_t, link);
        if (t->seq == h->seq && t->comm->id == h->comm_id) {
            task = t;
            break;
        }
    }
    for (int i = 0; task != NULL && i < task->nops; i++) {
        rcoll_p2p_op_t *o = &rcoll_task_ops(task)[i];
        if (o->state == RCOLL_P2P_GETTING && o->kind == RCOLL_P2P_RECV && op_matches(o, wpeer, h)) {
            o->state = RCOLL_P2P_GETTING_VOID;
            return;
        }
    }
    unexpected_t *u = NULL;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        unexpected_t *c = rcoll_container_of(pos, unexpected_t, link);
        if ((c->hdr.type == RCOLL_MSG_RTS || c->hdr.type == RCOLL_MSG_HOLD) && c->wpeer == wpeer && c->hdr.seq == h->seq &&
            c->hdr.step == h->step && c->hdr.comm_id == h->comm_id) {
            u = c;
            break;
        }
    }
    if (u != NULL) {
        drop_unexpected(ctx, u);
    }
    if (task == NULL || u != NULL) {
        /* No read of it here (never started, or over): let the sender go. */
        rcoll_wire_hdr_t d = *h;
        d.type = RCOLL_MSG_DECLINE;
        d.src = 0;
        (void)send_msg(ctx, wpeer, &d, NULL, 0);
    }
    keep_unexpected(ctx, wpeer, h, NULL, 0);      /* fails the receive when it is posted */
}

/* ---- held eager messages: the messages ---- */

static void on_hold(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL) {
        keep_unexpected(ctx, wpeer, h, NULL, 0);   /* pulled when the receive is posted */
        return;
    }
    if (op->state == RCOLL_P2P_PULLING) {
        return;                                    /* a duplicate: asked for already */
    }
    rcoll_list_del(&op->link);
    if (op->state != RCOLL_P2P_POSTED) {
        char why[160];
        snprintf(why, sizeof(why), "peer holds %llu bytes as an eager message (HOLD), this rank "
                 "expected %zu bytes by rendezvous (mismatched counts or RCOLL_EAGER_LIMIT?)",
                 (unsigned long long)h->len, op->len);
        send_ctl(op, RCOLL_MSG_PULL, op->len);     /* our length: the sender fails */
        op_fail(op, h->len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    pull(op, h);
}

/* The receiver asks for a held message: send it, or fail on its length. */
static void on_pull(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h)
{
    rcoll_p2p_op_t *op = find_op(&ctx->sends_wait_rtr, wpeer, h);
    if (op == NULL || op->state != RCOLL_P2P_WAIT_PULL) {
        rcoll_debug("dropping PULL from rank %d for comm 0x%llx seq %u step %u: no held send",
                    wpeer, (unsigned long long)h->comm_id, h->seq, h->step);
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    if (h->len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "the receiver expects %llu bytes; nothing was sent "
                 "(mismatched counts?)", (unsigned long long)h->len);
        op_fail(op, op->len > h->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    rcoll_wire_hdr_t d;
    fill_hdr(&d, op, RCOLL_MSG_PULLED);
    op_complete(op, send_msg(ctx, op->wpeer, &d, op->buf, op->len));
}

/* The payload of a held message: only a receive that pulled it takes it;
 * anything else (its receive failed meanwhile, a duplicate) is dropped. */
static void on_pulled(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                      const void *body, size_t body_len)
{
    rcoll_p2p_op_t *op = find_op(&ctx->posted_recvs, wpeer, h);
    if (op == NULL || op->state != RCOLL_P2P_PULLING) {
        rcoll_debug("dropping PULLED (%zu bytes) from rank %d for comm 0x%llx seq %u step %u: "
                    "no receive asked for it", body_len, wpeer, (unsigned long long)h->comm_id,
                    h->seq, h->step);
        return;
    }
    rcoll_list_del(&op->link);
    if (sig_mismatch(op, h)) {
        return;
    }
    if (body_len != op->len) {
        char why[128];
        snprintf(why, sizeof(why), "peer sent %zu bytes when asked for %zu", body_len, op->len);
        op_fail(op, body_len > op->len ? RCOLL_ERR_TRUNCATED : RCOLL_ERR_PROTOCOL, why);
        return;
    }
    if (body_len) {
        memcpy(op->buf, body, body_len);
    }
    op_complete(op, RCOLL_OK);
}

static void on_flow_msg(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                        const void *body, size_t body_len)
{
    switch (h->type) {
    case RCOLL_MSG_HOLD:   on_hold(ctx, wpeer, h); break;
    case RCOLL_MSG_PULL:   on_pull(ctx, wpeer, h); break;
    case RCOLL_MSG_PULLED: on_pulled(ctx, wpeer, h, body, body_len); break;
    case RCOLL_MSG_CREDIT:
        if (wpeer != ctx->rank) {
            rcoll__flow_on_credit(ctx, wpeer, (size_t)h->len);
        }
        break;
    }
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
    if (h.type >= RCOLL_MSG_HOLD && h.type <= RCOLL_MSG_CREDIT) {   /* flow control */
        on_flow_msg(ctx, peer, &h, body, body_len);
        return;
    }
    switch (h.type) {
    case RCOLL_MSG_EAGER: on_eager(ctx, peer, &h, body, body_len); break;
    case RCOLL_MSG_RTR:   on_rtr(ctx, peer, &h, body, body_len); break;
    case RCOLL_MSG_FIN:   on_rndv_end(ctx, &ctx->posted_recvs, RCOLL_P2P_WAIT_FIN, peer, &h); break;
    case RCOLL_MSG_RTS:   on_rts(ctx, peer, &h, body, body_len); break;
    case RCOLL_MSG_DONE:  on_rndv_end(ctx, &ctx->sends_wait_rtr, RCOLL_P2P_WAIT_DONE, peer, &h); break;
    case RCOLL_MSG_DECLINE:  on_decline(ctx, peer, &h); break;
    case RCOLL_MSG_WITHDRAW: on_withdraw(ctx, peer, &h); break;
    case RCOLL_MSG_WHERE_Q: case RCOLL_MSG_WHERE_A: rcoll__whereis_on_msg(ctx, peer, &h, body, body_len);
        break;
    case RCOLL_MSG_REVOKE:   rcoll__revoke_recv(ctx, peer, &h); break;
    case RCOLL_MSG_SHRINK:   rcoll__shrink_recv(ctx, peer, &h, body, body_len); break;
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
    ctx->nfailed++;
    fail_peer_ops(&ctx->posted_recvs, peer, st, reason);
    fail_peer_ops(&ctx->sends_wait_rtr, peer, st, reason);
}

/* How long a failed receive waits for its read in flight before it closes
 * the endpoint: RCOLL_TIMEOUT, at most this. */
#define RCOLL_GET_DRAIN_MAX_S 10.0

static bool op_getting(const rcoll_p2p_op_t *op)
{
    return op->state == RCOLL_P2P_GETTING || op->state == RCOLL_P2P_GETTING_VOID;
}

static bool op_withdrawn(const rcoll_p2p_op_t *op)
{
    return op->state == RCOLL_P2P_WITHDRAWN;
}

/* The bound of a drain: RCOLL_TIMEOUT, at most RCOLL_GET_DRAIN_MAX_S. */
static double drain_bound(const rcoll_context_t *ctx)
{
    double t = ctx->config.timeout;
    return t > 0 && t < RCOLL_GET_DRAIN_MAX_S ? t : RCOLL_GET_DRAIN_MAX_S;
}

typedef enum { DRAIN_ENDED, DRAIN_PEER_FAILED, DRAIN_PEER_GONE, DRAIN_EXPIRED } drain_end_t;

/* Progress op's transport while busy(op) holds, for at most bound seconds,
 * looking every 10 ms whether the peer's process is gone.  Says why it
 * stopped. */
static drain_end_t drain_wait(rcoll_p2p_op_t *op, bool (*busy)(const rcoll_p2p_op_t *),
                              double bound)
{
    rcoll_context_t *ctx = op->task->ctx;
    double now = rcoll_time_now(), end = now + bound, next_look = now;
    while (busy(op)) {
        if (ctx->peer_failed[op->wpeer] != RCOLL_OK) {
            return DRAIN_PEER_FAILED;
        }
        if (now >= next_look) {
            next_look = now + 0.01;
            if (rcoll_liveness_gone(ctx, op->wpeer)) {
                return DRAIN_PEER_GONE;
            }
        }
        if (now >= end) {
            return DRAIN_EXPIRED;
        }
        op->tl_ops->progress(op->tl);
        now = rcoll_time_now();
    }
    return DRAIN_ENDED;
}

/* A receive whose read is in flight may not return before the read has
 * finished or the endpoint is closed: wait for it (bounded), else abort.
 * A failed (or exited) peer's memory: the read may never end, so no wait. */
static void drain_get(rcoll_p2p_op_t *op)
{
    if (!op_getting(op)) {
        return;
    }
    double bound = drain_bound(op->task->ctx);
    drain_end_t why_end = drain_wait(op, op_getting, bound);
    if (why_end == DRAIN_ENDED) {
        return;
    }
    char why[160];
    if (why_end != DRAIN_EXPIRED) {
        snprintf(why, sizeof(why), "a failed receive's read of %zu bytes from the failed or "
                 "exited peer is in flight", op->len);
    } else {
        snprintf(why, sizeof(why), "a failed receive's read of %zu bytes is still in flight "
                 "after %.1f s", op->len, bound);
    }
    op->tl_ops->abort_peer(op->tl, op->wpeer, why);
    op_complete(op, RCOLL_ERR_TIMEOUT);      /* nothing lands now; get_done ignores it */
}

/* A failed send whose source a receiver may be reading (RCOLL_P2P_WITHDRAWN)
 * may not return before the receiver answered (DONE, DECLINE) or the
 * endpoint is closed: else the user frees the buffer while the read is
 * served from it (UCX's emulated get reads it in this process). */
static void drain_withdrawn(rcoll_p2p_op_t *op)
{
    /* After rcoll_p2p_cancel_task's first pass an op of the task in
     * WAIT_DONE was withdrawn and has been answered already. */
    if (op->state != RCOLL_P2P_WITHDRAWN && op->state != RCOLL_P2P_WAIT_DONE) {
        return;
    }
    rcoll_context_t *ctx = op->task->ctx;
    double bound = drain_bound(ctx);
    if (drain_wait(op, op_withdrawn, bound) == DRAIN_PEER_GONE) {
        /* A dead reader never answers; the failure ends the op (it is on
         * sends_wait_rtr). */
        rcoll_p2p_peer_error_cb(ctx, op->wpeer, RCOLL_ERR_PEER_FAILED, "its process has "
                                "exited (seen while a withdrawn send waited for it)");
    }
    if (op->state == RCOLL_P2P_WAIT_DONE) {
        op_complete(op, RCOLL_ERR_TIMEOUT);    /* answered; deregisters the source */
        return;
    }
    if (op->state != RCOLL_P2P_WITHDRAWN) {    /* a peer failure ended it already */
        return;
    }
    rcoll_list_del(&op->link);
    if (ctx->peer_failed[op->wpeer] == RCOLL_OK) {
        char why[160];
        snprintf(why, sizeof(why), "no answer to a withdrawn send of %zu bytes after %.1f s "
                 "(its reader may still read it)", op->len, bound);
        op->tl_ops->abort_peer(op->tl, op->wpeer, why);
    }
    rcoll_status_t st = ctx->peer_failed[op->wpeer];
    op_fail(op, st != RCOLL_OK ? st : RCOLL_ERR_TIMEOUT, "a withdrawn send's reader did not "
            "answer (failed, gone or silent): its endpoint is closed");
}

void rcoll_p2p_cancel_task(rcoll_task_t *task)
{
    /* First withdraw every op still waiting for a message, so that no read
     * can start for this task; then wait for the reads in flight. */
    for (int i = 0; i < task->nops; i++) {
        rcoll_p2p_op_t *op = &rcoll_task_ops(task)[i];
        switch (op->state) {
        case RCOLL_P2P_WAIT_DONE:
            /* The receiver may be reading the source now: it stays
             * registered (and the user's buffer in use) until the receiver
             * answers DONE or DECLINE; drain_withdrawn waits (bounded). */
            send_ctl(op, RCOLL_MSG_WITHDRAW, op->len);
            op->state = RCOLL_P2P_WITHDRAWN;
            continue;
        case RCOLL_P2P_WAIT_PULL:
            send_ctl(op, RCOLL_MSG_WITHDRAW, op->len);
            break;
        case RCOLL_P2P_WAIT_RTS:
            send_ctl(op, RCOLL_MSG_DECLINE, op->len);
            break;
        case RCOLL_P2P_POSTED:
        case RCOLL_P2P_PULLING:           /* a PULLED that comes later is dropped */
        case RCOLL_P2P_WAIT_RTR:
        case RCOLL_P2P_WAIT_FIN:
            break;
        default:
            continue;
        }
        rcoll_list_del(&op->link);
        op_complete(op, RCOLL_ERR_TIMEOUT);   /* deregisters a rendezvous buffer */
    }
    for (int i = 0; i < task->nops; i++) {
        drain_get(&rcoll_task_ops(task)[i]);
        drain_withdrawn(&rcoll_task_ops(task)[i]);
    }
}

void rcoll_p2p_cleanup(rcoll_context_t *ctx)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->unexpected) {
        free_unexpected(ctx, rcoll_container_of(pos, unexpected_t, link));   /* no CREDIT sent */
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
    case RCOLL_P2P_WAIT_DONE: return "rendezvous by get: source advertised, waiting for the receiver to read it";
    case RCOLL_P2P_WAIT_RTS: return "rendezvous by get: waiting for the sender's ready-to-send";
    case RCOLL_P2P_GETTING:  return "rendezvous by get: RDMA read in flight";
    case RCOLL_P2P_GETTING_VOID: return "rendezvous by get: RDMA read in flight, sender withdrew";
    case RCOLL_P2P_WITHDRAWN:    return "rendezvous by get: send withdrawn, waiting for the reader's answer";
    case RCOLL_P2P_WAIT_PULL: return "eager message held for lack of credit: waiting for the receiver to ask for it (PULL)";
    case RCOLL_P2P_PULLING:  return "held eager message asked for (PULL sent), waiting for its data";
    case RCOLL_P2P_DONE:     return "done";
    }
    return "?";
}
