/*
 * comm_shrink.c - rcoll_comm_shrink: the survivors of a communicator agree
 * on who failed and make a new communicator of the others, in the same
 * order (docs/reliability.md, "Revoke and shrink", states the guarantees).
 *
 * The agreement runs on its own messages (RCOLL_MSG_SHRINK, kept aside by
 * rcoll__shrink_recv until consumed here), not on collectives of the comm,
 * which may be revoked.  Each message carries the comm id, the epoch (how
 * many shrinks this rank began on the comm before: the same on every member
 * that calls them in the same order), the round (the coordinator's comm
 * rank), its kind, a new comm id (DECIDE, ACK, COMMIT) and a failed set, one
 * byte per comm rank.  Each rank keeps F, the members it knows failed
 * (rcoll_comm_failed, then transport reports as they come, then what the
 * agreement adds); it is never taken back.
 *
 *   round c: c = the lowest rank not in F.
 *   a rank other than c sends PROPOSE(F) to c, then waits (4 T) for
 *     DECIDE(D, id) from c: adopts it, answers ACK(id), waits (3 T) for
 *     the commit; c in F or its wait expired: c joins F, next round.
 *   c collects PROPOSE from every rank not in F (F grows by each one's F;
 *     a rank whose proposal does not come within 2 T joins F), decides
 *     D = F with a fresh id, sends DECIDE to every rank not in D and waits
 *     (T) for their ACKs; a rank that fails or does not answer joins F and
 *     c decides again (a new id).  With every ACK in, c sends COMMIT(D, id)
 *     to every member not known dead (so an excluded but living rank learns
 *     it) and returns.
 *   COMMIT from anyone, at any time, ends the agreement: the rank forwards
 *     it to every member not known dead, then returns D.
 *
 * T is RCOLL_TIMEOUT (0: no deadline; then only reported deaths move the
 * agreement on).  The agreement is no task, so its loop asks for deaths
 * itself: the launcher's events and the node's processes
 * (rcoll_liveness_poll), the transports' reports, and a probe of the
 * members not in F when nothing came for RCOLL_PROBE_S.  A rank in D
 * (declared failed) gets RCOLL_ERR_PEER_FAILED and no communicator;
 * survivors note the ranks of D as failed peers (rcoll_p2p_peer_error_cb),
 * so none is ever readmitted.
 * The new communicator's shared-memory segment, if a shm algorithm needs
 * one, is set up afresh among its members by its first shm collective,
 * like any new communicator's; the old one's is never touched.
 */
#include <stdlib.h>
#include <string.h>
#include "ft.h"
#include "liveness.h"

enum { K_PROPOSE = 0, K_DECIDE = 1, K_ACK = 2, K_COMMIT = 3 };
enum { S_PROPOSED, S_ACKED, S_COLLECT, S_ACKS, S_DONE };

typedef struct {
    rcoll_comm_t    *comm;
    rcoll_context_t *ctx;
    int              n, me;
    uint32_t         epoch;
    double           T;              /* RCOLL_TIMEOUT; 0: none */
    int              state, c;       /* phase, this round's coordinator */
    double           deadline;       /* 0: none */
    double           heard;          /* last message of this agreement (or its start) */
    double           next_probe;     /* when the silent peers may be probed again */
    uint8_t         *F, *D, *got;    /* known failed; decision; coordinator: answered */
    uint64_t         d_id;
} shrink_t;

static void send_kind(shrink_t *S, int r, int kind, int round, const uint8_t *set, uint64_t id)
{
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_SHRINK, .version = RCOLL_WIRE_VERSION,
                           .seq = S->epoch, .comm_id = S->comm->id,
                           .step = (uint32_t)round << 2 | (uint32_t)kind,
                           .src = (uint32_t)S->me, .len = (uint64_t)S->n, .addr = id };
    (void)rcoll__ft_send(S->ctx, S->comm->world_ranks[r], &h, set, (size_t)S->n);
}

/* This rank takes a message of the agreement (before acting on it):
 * RCOLL_FAULT=<rank>:shrink:<n> kills it at its n-th.  Taken, not sent: a
 * message taken proves the one it answers arrived (a decision: the
 * proposal; an acknowledgement: the decision), so the fault point places
 * the death exactly, whatever the transport still had queued. */
static void taken(shrink_t *S)
{
    RCOLL_FAULT_AT(S->ctx, RCOLL_FAULT_SHRINK, 0);
}

/* A living member may enter the shrink up to T later than another: its
 * failed collective first waits (at most T, p2p.c) for a read in flight
 * from, or an answer to a withdrawn send to, a silent peer.  So the
 * coordinator collects for 2 T, and a member waits 4 T for its decision
 * (the coordinator may come T late, then collect for 2 T).  The other
 * waits are the original ones: the coordinator waits T for acknowledgements,
 * a member that acknowledged waits 3 T for the commit. */
#define COLLECT_T 2
#define DECIDE_T  4
#define ACKS_T    1
#define COMMIT_T  3

static void set_deadline(shrink_t *S, double mult)
{
    S->deadline = S->T > 0 ? rcoll_time_now() + mult * S->T : 0;
}

static int lowest_alive(const shrink_t *S)
{
    for (int r = 0; r < S->n; r++) {
        if (!S->F[r]) {
            return r;
        }
    }
    return S->me;
}

static void begin_round(shrink_t *S)
{
    S->c = lowest_alive(S);
    memset(S->got, 0, (size_t)S->n);
    if (S->c == S->me) {
        S->state = S_COLLECT;
        set_deadline(S, COLLECT_T);
    } else {
        send_kind(S, S->c, K_PROPOSE, S->c, S->F, 0);
        S->state = S_PROPOSED;
        set_deadline(S, DECIDE_T);
    }
    rcoll_debug("rcoll_comm_shrink 0x%llx epoch %u: round %d", (unsigned long long)S->comm->id,
                S->epoch, S->c);
}

static void decide(shrink_t *S)
{
    memcpy(S->D, S->F, (size_t)S->n);
    S->d_id = rcoll__comm_id_next(S->ctx);
    memset(S->got, 0, (size_t)S->n);
    for (int r = 0; r < S->n; r++) {
        if (r != S->me && !S->D[r]) {
            send_kind(S, r, K_DECIDE, S->me, S->D, S->d_id);
        }
    }
    S->state = S_ACKS;
    set_deadline(S, ACKS_T);
}

/* The agreement is over with (D, id): tell every member not known dead. */
static void commit(shrink_t *S, const uint8_t *D, uint64_t id, int from)
{
    if (D != S->D) {
        memcpy(S->D, D, (size_t)S->n);
    }
    S->d_id = id;
    for (int r = 0; r < S->n; r++) {
        if (r != S->me && r != from) {
            send_kind(S, r, K_COMMIT, S->c, S->D, id);
        }
    }
    S->state = S_DONE;
}

/* Everyone the coordinator waits for has answered (or is in F). */
static int all_in(const shrink_t *S, const uint8_t *set)
{
    for (int r = 0; r < S->n; r++) {
        if (r != S->me && !set[r] && !S->got[r]) {
            return 0;
        }
    }
    return 1;
}

/* One message m of this agreement, from comm rank s: 1 consumed (or
 * stale: dropped), 0 kept for a later round. */
static int handle(shrink_t *S, const rcoll_ft_msg_t *m, int s)
{
    int kind = (int)(m->hdr.step & 3), round = (int)(m->hdr.step >> 2);
    const uint8_t *set = m->body;
    if (kind == K_COMMIT) {
        taken(S);
        commit(S, set, m->hdr.addr, s);
        return 1;
    }
    if (kind == K_PROPOSE) {
        if (round != S->me) {
            return 1;                      /* not ours to take */
        }
        if (S->state != S_COLLECT) {
            return S->state == S_ACKS;     /* late for this decision; else keep for our round */
        }
        if (!S->F[s]) {                    /* a rank in F is never readmitted */
            taken(S);
            for (int r = 0; r < S->n; r++) {
                S->F[r] |= (uint8_t)(set[r] && r != S->me);
            }
            S->got[s] = 1;
        }
        return 1;
    }
    if (kind == K_DECIDE) {
        if (round == S->c && S->c != S->me && (S->state == S_PROPOSED || S->state == S_ACKED)) {
            taken(S);
            memcpy(S->D, set, (size_t)S->n);
            S->d_id = m->hdr.addr;
            send_kind(S, S->c, K_ACK, S->c, S->D, S->d_id);
            rcoll_debug("rcoll_comm_shrink 0x%llx epoch %u: acknowledged round %d's decision "
                        "0x%llx", (unsigned long long)S->comm->id, S->epoch, S->c,
                        (unsigned long long)S->d_id);
            S->state = S_ACKED;
            set_deadline(S, COMMIT_T);
            return 1;
        }
        return round < S->c || S->F[round] || round == S->me;
    }
    /* K_ACK */
    if (S->state == S_ACKS && round == S->me && m->hdr.addr == S->d_id) {
        taken(S);
        S->got[s] = 1;
    }
    return 1;
}

/* Take this agreement's messages in arrival order. */
static void scan(shrink_t *S)
{
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &S->ctx->ft->msgs) {
        rcoll_ft_msg_t *m = rcoll_container_of(pos, rcoll_ft_msg_t, link);
        if (S->state == S_DONE) {
            return;
        }
        if (m->hdr.comm_id != S->comm->id || m->hdr.seq > S->epoch) {
            continue;
        }
        int s = rcoll__ft_comm_rank(S->comm, m->wpeer);
        if (m->hdr.seq < S->epoch) {
            rcoll__ft_msg_drop(S->ctx, m);
        } else if (s < 0 || m->hdr.src != (uint32_t)s || m->body_len != (size_t)S->n ||
                   (m->hdr.step >> 2) >= (uint32_t)S->n) {
            rcoll_warn("dropping a SHRINK message from rank %d for communicator 0x%llx: the "
                       "sender is not the member it claims, or its failed set or round does "
                       "not fit the communicator", m->wpeer, (unsigned long long)S->comm->id);
            rcoll__ft_msg_drop(S->ctx, m);
        } else if (handle(S, m, s)) {
            S->heard = rcoll_time_now();
            rcoll__ft_msg_drop(S->ctx, m);
        }
    }
}

/* No message for RCOLL_PROBE_S: ask the transport of every member not in F
 * to probe it (liveness.h; where the transport cannot tell otherwise, e.g. a
 * Soft-RoCE receiver whose sender died), at most once per RCOLL_PROBE_S. */
static void probe_silent(shrink_t *S, double now)
{
    rcoll_context_t *ctx = S->ctx;
    double every = ctx->config.probe_s;
    if (every <= 0 || now - S->heard < every || now < S->next_probe) {
        return;
    }
    S->next_probe = now + every;
    for (int r = 0; r < S->n; r++) {
        int wr = S->comm->world_ranks[r];
        if (r != S->me && !S->F[r] && ctx->peer_failed[wr] == RCOLL_OK &&
            ctx->peer_ops[wr] != NULL && ctx->peer_ops[wr]->probe_peer != NULL &&
            ctx->peer_tl[wr] != NULL) {
            ctx->peer_ops[wr]->probe_peer(ctx->peer_tl[wr], wr);
        }
    }
}

/* Failures reported meanwhile (by the transports, the launcher's events,
 * the node's processes: the agreement is no task, so it asks liveness
 * itself); an expired wait. */
static void check_failures(shrink_t *S)
{
    int changed = 0;
    double now = rcoll_time_now();
    rcoll_liveness_poll(S->ctx, now);
    probe_silent(S, now);
    for (int r = 0; r < S->n; r++) {
        if (r != S->me && !S->F[r] && S->ctx->peer_failed[S->comm->world_ranks[r]] != RCOLL_OK) {
            S->F[r] = 1;
            changed = 1;
        }
    }
    int expired = S->deadline > 0 && now > S->deadline;
    switch (S->state) {
    case S_PROPOSED:
    case S_ACKED:
        if (S->F[S->c] || expired) {
            if (!S->F[S->c]) {
                rcoll_warn("rcoll_comm_shrink: coordinator rank %d did not answer within %.1f s; "
                           "it is excluded", S->c,
                           (S->state == S_PROPOSED ? DECIDE_T : COMMIT_T) * S->T);
            }
            S->F[S->c] = 1;
            begin_round(S);
        }
        break;
    case S_COLLECT:
        for (int r = 0; expired && r < S->n; r++) {
            if (r != S->me && !S->F[r] && !S->got[r]) {
                rcoll_warn("rcoll_comm_shrink: rank %d sent nothing within %.1f s; it is excluded",
                           r, COLLECT_T * S->T);
                S->F[r] = 1;
            }
        }
        if (all_in(S, S->F)) {
            decide(S);
        }
        break;
    case S_ACKS:
        for (int r = 0; r < S->n; r++) {
            if (r != S->me && !S->D[r] && !S->got[r] && (S->F[r] || expired)) {
                rcoll_warn("rcoll_comm_shrink: rank %d %s during the agreement; deciding again",
                           r, S->F[r] ? "failed" : "did not acknowledge");
                S->F[r] = 1;
                changed = 2;
            }
        }
        if (changed == 2) {
            decide(S);
        } else if (all_in(S, S->D)) {
            commit(S, S->D, S->d_id, -1);
        }
        break;
    }
}

static rcoll_status_t agree(shrink_t *S)
{
    S->F[S->me] = 0;
    S->heard = rcoll_time_now();
    begin_round(S);
    while (S->state != S_DONE) {
        int events = rcoll_context_progress(S->ctx);
        scan(S);
        if (S->state != S_DONE) {
            check_failures(S);
        }
        rcoll_context_backoff(S->ctx, events);
    }
    return RCOLL_OK;
}

/* The survivors of D as a new communicator with id; or, if this rank is
 * in D, PEER_FAILED. */
static rcoll_status_t make_comm(shrink_t *S, rcoll_comm_t **newcomm)
{
    if (S->D[S->me]) {
        rcoll_error("rcoll_comm_shrink: the survivors of communicator 0x%llx declared this rank "
                    "(rank %d) failed; it is not a member of the new communicator",
                    (unsigned long long)S->comm->id, S->me);
        return RCOLL_ERR_PEER_FAILED;
    }
    int m = 0, me = -1;
    int *wr = malloc(sizeof(int) * (size_t)S->n);
    if (wr == NULL) {
        rcoll_error("rcoll_comm_shrink: out of memory");
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int r = 0; r < S->n; r++) {
        if (S->D[r]) {
            rcoll_p2p_peer_error_cb(S->ctx, S->comm->world_ranks[r], RCOLL_ERR_PEER_FAILED,
                                    "declared failed by rcoll_comm_shrink");
            continue;
        }
        me = r == S->me ? m : me;
        wr[m++] = S->comm->world_ranks[r];
    }
    rcoll_status_t st = rcoll_comm_create(S->ctx, S->d_id, me, m, wr, newcomm);
    if (st != RCOLL_OK) {
        free(wr);
        return st;
    }
    rcoll_info("rcoll_comm_shrink: communicator 0x%llx of %d ranks -> 0x%llx of %d (this rank %d)",
               (unsigned long long)S->comm->id, S->n, (unsigned long long)S->d_id, m, me);
    return RCOLL_OK;
}

RCOLL_API rcoll_status_t rcoll_comm_shrink(rcoll_comm_t *comm, rcoll_comm_t **newcomm)
{
    if (comm == NULL || newcomm == NULL) {
        rcoll_error("rcoll_comm_shrink: invalid argument: %s is NULL", comm ? "newcomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_context_t *ctx = comm->ctx;
    rcoll_log_enter(&ctx->log);
    rcoll_ft_comm_t *fc = rcoll__ft_find(ctx, comm->id);
    if (fc == NULL || fc->comm != comm) {
        rcoll_error("rcoll_comm_shrink: communicator 0x%llx is not known here",
                    (unsigned long long)comm->id);
        return RCOLL_ERR_INVALID_ARG;
    }
    shrink_t S = { .comm = comm, .ctx = ctx, .n = comm->size, .me = comm->rank,
                   .epoch = fc->shrinks++, .T = ctx->config.timeout };
    uint8_t *sets = calloc(3, (size_t)comm->size);
    if (sets == NULL) {
        rcoll_error("rcoll_comm_shrink: out of memory");
        return RCOLL_ERR_NO_MEMORY;
    }
    S.F = sets;
    S.D = sets + comm->size;
    S.got = sets + 2 * comm->size;
    for (int r = 0; r < S.n; r++) {
        S.F[r] = (uint8_t)(r != S.me && rcoll__comm_rank_failed(comm, r));
    }
    rcoll_status_t st = agree(&S);
    if (st == RCOLL_OK) {
        st = make_comm(&S, newcomm);
    }
    free(sets);
    return st;
}

void rcoll__shrink_recv(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                        const void *body, size_t body_len)
{
    /* Checked against the communicator when consumed (scan): it may not be
     * made here yet (this rank is still finishing the shrink that makes it). */
    struct rcoll_ft *ft = ctx->ft;
    const char *bad = NULL;
    if (h->comm_id != 1 && !rcoll__comm_id_valid(h->comm_id)) {
        bad = "no communicator has that id";
    } else if (body_len > (size_t)ctx->size || body_len != h->len) {
        bad = "its failed set is larger than the job";
    } else if (ft == NULL || ft->nmsgs >= RCOLL_FT_MAX_MSGS) {
        bad = "too many shrink messages are waiting";
    }
    if (bad != NULL) {
        rcoll_warn("dropping a SHRINK message from rank %d for communicator 0x%llx: %s", wpeer,
                   (unsigned long long)h->comm_id, bad);
        return;
    }
    rcoll_ft_msg_t *m = malloc(sizeof(*m) + body_len);
    if (m == NULL) {
        rcoll_error("out of memory keeping a SHRINK message from rank %d; it is lost", wpeer);
        return;
    }
    m->wpeer = wpeer;
    m->hdr = *h;
    m->body_len = body_len;
    for (size_t i = 0; i < body_len; i++) {
        m->body[i] = ((const uint8_t *)body)[i] != 0;
    }
    rcoll_list_add_tail(&ft->msgs, &m->link);
    ft->nmsgs++;
}
