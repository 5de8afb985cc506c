/*
 * whereis_remote.c - "where is everyone" for ranks on other nodes
 * (whereis.h, docs/reliability.md).
 *
 * A node's table is in its own shared memory, so a timeout's report asks
 * the other nodes that hold members of the communicator over the transport:
 * one WHERE_Q per node (per RCOLL_WHERE_UNIT_MAX of its members) listing the
 * world ranks asked, to one rank of that node: the asked ranks first, in
 * order, then the node's other ranks, the next one every RCOLL_WHERE_TRY_S
 * until one answers (a rank stuck in its own computation never progresses,
 * but its neighbours that wait in rcoll do), all within RCOLL_WHERE_ASK_S.
 * The rank asked answers from its progress loop (p2p.c's dispatch) with a
 * WHERE_A holding, per rank asked, what its node's table says: the
 * (sequence, collective) last posted on the communicator, up to
 * RCOLL_WHERE_OTHERS of its other communicators' slots, whether it waits in
 * rcoll, how long ago it was last seen waiting, and whether its process is
 * alive.  Both messages are hostile input: sizes, counts, ranks, nonce and
 * node are checked, anything else is dropped (the report then says "no
 * answer").
 *
 * While it asks, the report keeps polling the transports (never the
 * collectives: it runs inside the deadline check) and so answers the other
 * ranks' queries; it keeps doing so until RCOLL_WHERE_ASK_S has passed even
 * when its own answers are in, because the ranks of one collective time
 * out within a moment of each other and a rank that has already left rcoll
 * answers nobody.  A timeout on a communicator that spans nodes therefore
 * costs RCOLL_WHERE_ASK_S more; nothing here is on the per-collective path.
 *
 * WHERE_Q:  header {comm_id, seq, step: nonce, src: asker's comm rank,
 *           addr: unit number, len}, then len / 4 world ranks (u32 LE).
 * WHERE_A:  the same header fields echoed, then per rank asked, in order,
 *           RCOLL_WHERE_REC bytes (LE): u32 world rank, u32 flags (REC_*),
 *           u64 ns since last seen waiting, u64 entered on the communicator,
 *           RCOLL_WHERE_OTHERS x (u64 communicator id, u64 entered).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "whereis.h"

#define RCOLL_WHERE_UNIT_MAX 64      /* ranks asked in one WHERE_Q */
#define RCOLL_WHERE_OTHERS   3       /* other communicators' slots per record */
#define RCOLL_WHERE_REC      (24 + 16 * RCOLL_WHERE_OTHERS)
#define RCOLL_WHERE_TRY_S    0.25    /* then the node's next rank is asked */

_Static_assert(RCOLL_WHERE_UNIT_MAX * RCOLL_WHERE_REC <= RCOLL_WIRE_WHERE_MAX, "an answer fits");

enum { REC_KNOWN = 1, REC_ALIVE = 2, REC_INSIDE = 4, REC_SEEN = 8 };

/* per comm rank: what the report knows of it */
enum { ST_NONE = 0, ST_ANSWERED, ST_NOT_KNOWN };

typedef struct {
    uint32_t flags;
    uint64_t seen_ns;                     /* on this node's clock; 0: never */
    uint64_t entered;
    uint64_t other_id[RCOLL_WHERE_OTHERS];
    uint64_t other_e[RCOLL_WHERE_OTHERS];
} rec_t;

typedef struct {
    int    node;
    int    first, count;                  /* rem->order[first .. first + count - 1] */
    int    next_cand;                     /* the next candidate to ask (cand_at) */
    int    tries;
    int    answered;
    double sent_at;
} unit_t;

struct rcoll_where_remote {
    const rcoll_context_t *ctx;
    const rcoll_comm_t    *comm;
    uint8_t *state;                       /* per comm rank: ST_* */
    rec_t   *recs;                        /* per comm rank */
    int     *order;                       /* comm ranks on other nodes, node by node */
    unit_t  *units;
    int      nunits;
};

/* The fetch in flight is the remote state itself (whereis.h names it so). */
struct rcoll_where_fetch {
    struct rcoll_where_remote rem;
    uint32_t nonce;
};

static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, sizeof(v)); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, sizeof(v)); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, sizeof(v)); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, sizeof(v)); return le64toh(v); }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int reachable(const rcoll_context_t *ctx, int wr)
{
    return wr >= 0 && wr < ctx->size && wr != ctx->rank && ctx->peer_ops[wr] != NULL &&
           ctx->peer_failed[wr] == RCOLL_OK;
}

static rcoll_status_t send_where(rcoll_context_t *ctx, int wr, const rcoll_wire_hdr_t *h,
                                 const void *body)
{
    uint8_t hdr[RCOLL_WIRE_HDR_SIZE];
    rcoll_wire_encode(h, hdr);
    return ctx->peer_ops[wr]->send(ctx->peer_tl[wr], wr, hdr, sizeof(hdr), body, h->len);
}

/* ---- the rank asked ---- */

static void fill_record(const rcoll_context_t *ctx, uint64_t comm_id, int wr, uint8_t *out)
{
    memset(out, 0, RCOLL_WHERE_REC);
    put32(out, (uint32_t)wr);
    const rcoll_where_rank_t *r = NULL;
    if (wr >= 0 && wr < ctx->size && ctx->node_of[wr] == ctx->node_of[ctx->rank]) {
        r = rcoll__whereis_local(ctx, wr);
    }
    if (r == NULL) {
        return;                                     /* flags 0: not known here */
    }
    uint32_t flags = REC_KNOWN;
    int64_t pid = atomic_load(&r->pid);
    if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
        flags |= REC_ALIVE;
    }
    flags |= atomic_load(&r->inside) ? REC_INSIDE : 0;
    uint64_t seen = atomic_load(&r->seen_ns), now = now_ns();
    if (seen != 0) {
        flags |= REC_SEEN;
        put64(out + 8, now > seen ? now - seen : 0);
    }
    put32(out + 4, flags);
    int others = 0;
    for (int i = 0; i < RCOLL_WHERE_NCOMM && comm_id != 0; i++) {
        uint64_t id = atomic_load(&r->comms[i].comm_id), e = atomic_load(&r->comms[i].entered);
        if (id == comm_id) {
            put64(out + 16, e);
        } else if (id != 0 && e != 0 && others < RCOLL_WHERE_OTHERS) {
            put64(out + 24 + 16 * others, id);
            put64(out + 32 + 16 * others, e);
            others++;
        }
    }
}

static void on_query(rcoll_context_t *ctx, int peer, const rcoll_wire_hdr_t *h, const uint8_t *body,
                     size_t body_len)
{
    size_t n = body_len / 4;
    if (body_len % 4 != 0 || n == 0 || n > RCOLL_WHERE_UNIT_MAX || !reachable(ctx, peer)) {
        rcoll_debug("whereis: dropping a WHERE_Q of %zu bytes from rank %d", body_len, peer);
        return;
    }
    uint8_t out[RCOLL_WHERE_UNIT_MAX * RCOLL_WHERE_REC];
    for (size_t k = 0; k < n; k++) {
        uint32_t wr = get32(body + 4 * k);
        fill_record(ctx, h->comm_id, wr > INT32_MAX ? -1 : (int)wr, out + k * RCOLL_WHERE_REC);
    }
    rcoll_wire_hdr_t a = *h;
    a.type = RCOLL_MSG_WHERE_A;
    a.len = n * RCOLL_WHERE_REC;
    a.src = (uint32_t)ctx->rank;
    if (send_where(ctx, peer, &a, out) != RCOLL_OK) {
        rcoll_debug("whereis: could not answer rank %d's query", peer);
    }
}

/* ---- the asking rank ---- */

static void on_answer(rcoll_context_t *ctx, int peer, const rcoll_wire_hdr_t *h, const uint8_t *body,
                      size_t body_len)
{
    struct rcoll_where_fetch *f = ctx->whereis != NULL ? ctx->whereis->fetch : NULL;
    if (f == NULL || h->step != f->nonce || h->comm_id != f->rem.comm->id ||
        h->addr >= (uint64_t)f->rem.nunits) {
        rcoll_debug("whereis: dropping a stale or stray WHERE_A from rank %d", peer);
        return;
    }
    struct rcoll_where_remote *rem = &f->rem;
    unit_t *u = &rem->units[h->addr];
    if (u->answered) {
        return;                                      /* a slower candidate's: the first counts */
    }
    if (ctx->node_of[peer] != u->node || body_len != (size_t)u->count * RCOLL_WHERE_REC) {
        rcoll_error("whereis: dropping a malformed WHERE_A from rank %d (%zu bytes)", peer, body_len);
        return;
    }
    for (int k = 0; k < u->count; k++) {
        int q = rem->order[u->first + k];
        if (get32(body + (size_t)k * RCOLL_WHERE_REC) != (uint32_t)rem->comm->world_ranks[q]) {
            rcoll_error("whereis: dropping a WHERE_A from rank %d: its records name other ranks",
                        peer);
            return;
        }
    }
    uint64_t now = now_ns();
    for (int k = 0; k < u->count; k++) {
        const uint8_t *p = body + (size_t)k * RCOLL_WHERE_REC;
        int q = rem->order[u->first + k];
        rec_t *r = &rem->recs[q];
        r->flags = get32(p + 4);
        uint64_t age = get64(p + 8);
        r->seen_ns = (r->flags & REC_SEEN) ? (age < now ? now - age : 1) : 0;
        r->entered = get64(p + 16);
        for (int i = 0; i < RCOLL_WHERE_OTHERS; i++) {
            r->other_id[i] = get64(p + 24 + 16 * i);
            r->other_e[i] = get64(p + 32 + 16 * i);
        }
        rem->state[q] = (r->flags & REC_KNOWN) ? ST_ANSWERED : ST_NOT_KNOWN;
    }
    u->answered = 1;
}

void rcoll__whereis_on_msg(rcoll_context_t *ctx, int peer, const rcoll_wire_hdr_t *h,
                           const void *body, size_t body_len)
{
    if (h->type == RCOLL_MSG_WHERE_Q) {
        on_query(ctx, peer, h, body, body_len);
    } else {
        on_answer(ctx, peer, h, body, body_len);
    }
}

/* World rank of unit u's candidate k: its own ranks, then its node's others. */
static int cand_at(const struct rcoll_where_remote *rem, const unit_t *u, int k)
{
    if (k < u->count) {
        return rem->comm->world_ranks[rem->order[u->first + k]];
    }
    int seen = 0;
    for (int r = 0; r < rem->ctx->size; r++) {
        if (rem->ctx->node_of[r] == u->node && seen++ == k - u->count) {
            return r;
        }
    }
    return -1;
}

/* Ask unit u's next reachable candidate; 0 if none is left. */
static int ask_next(rcoll_context_t *ctx, struct rcoll_where_fetch *f, unit_t *u, uint32_t seq,
                    double now)
{
    struct rcoll_where_remote *rem = &f->rem;
    uint32_t ranks[RCOLL_WHERE_UNIT_MAX];
    for (int k = 0; k < u->count; k++) {
        put32((uint8_t *)&ranks[k], (uint32_t)rem->comm->world_ranks[rem->order[u->first + k]]);
    }
    while (u->next_cand < u->count + ctx->size) {
        int wr = cand_at(rem, u, u->next_cand++);
        if (wr < 0) {
            break;
        }
        if (!reachable(ctx, wr)) {
            continue;
        }
        rcoll_wire_hdr_t h = {
            .type = RCOLL_MSG_WHERE_Q, .version = RCOLL_WIRE_VERSION, .seq = seq,
            .comm_id = rem->comm->id, .step = f->nonce, .src = (uint32_t)rem->comm->rank,
            .len = (uint64_t)u->count * 4, .addr = (uint64_t)(u - rem->units),
        };
        u->tries++;
        u->sent_at = now;
        if (send_where(ctx, wr, &h, ranks) == RCOLL_OK) {
            return 1;
        }
    }
    u->next_cand = u->count + ctx->size;
    return 0;
}

/* The members of comm on other nodes, node by node, in units; 0 if none. */
static int plan(rcoll_context_t *ctx, struct rcoll_where_remote *rem)
{
    const rcoll_comm_t *comm = rem->comm;
    int mine = ctx->node_of[ctx->rank], n = 0, nunits = 0;
    for (int node = 0; node < ctx->nnodes; node++) {
        if (node == mine) {
            continue;
        }
        int start = n;
        for (int q = 0; q < comm->size; q++) {
            if (ctx->node_of[comm->world_ranks[q]] == node) {
                rem->order[n++] = q;
            }
        }
        for (int first = start; first < n; first += RCOLL_WHERE_UNIT_MAX) {
            unit_t *u = &rem->units[nunits++];
            u->node = node;
            u->first = first;
            u->count = n - first < RCOLL_WHERE_UNIT_MAX ? n - first : RCOLL_WHERE_UNIT_MAX;
        }
    }
    rem->nunits = nunits;
    return nunits;
}

rcoll_where_remote_t *rcoll__whereis_ask(rcoll_context_t *ctx, const rcoll_comm_t *comm,
                                         uint32_t seq)
{
    struct rcoll_whereis *w = ctx->whereis;
    if (w == NULL || w->fetch != NULL || ctx->nnodes < 2) {
        return NULL;
    }
    struct rcoll_where_fetch *f = calloc(1, sizeof(*f));
    size_t n = (size_t)comm->size;
    if (f == NULL || (f->rem.state = calloc(n, 1)) == NULL ||
        (f->rem.recs = calloc(n, sizeof(rec_t))) == NULL ||
        (f->rem.order = calloc(n, sizeof(int))) == NULL ||
        (f->rem.units = calloc(n, sizeof(unit_t))) == NULL) {
        rcoll__whereis_remote_free(f != NULL ? &f->rem : NULL);
        return NULL;
    }
    f->rem.ctx = ctx;
    f->rem.comm = comm;
    if (plan(ctx, &f->rem) == 0) {
        rcoll__whereis_remote_free(&f->rem);
        return NULL;
    }
    f->nonce = ++w->nonce;
    w->fetch = f;
    double t0 = rcoll_time_now(), now = t0;
    while (now - t0 < RCOLL_WHERE_ASK_S) {
        for (int i = 0; i < f->rem.nunits; i++) {
            unit_t *u = &f->rem.units[i];
            if (!u->answered && (u->tries == 0 || now - u->sent_at >= RCOLL_WHERE_TRY_S)) {
                (void)ask_next(ctx, f, u, seq, now);
            }
        }
        int events = 0;
        for (int i = 0; i < ctx->ntls; i++) {
            events += ctx->tls_ops[i]->progress(ctx->tls[i]);
        }
        if (events == 0) {
            sched_yield();
        }
        now = rcoll_time_now();
    }
    w->fetch = NULL;
    return &f->rem;
}

const rcoll_where_rank_t *rcoll__whereis_remote(const rcoll_where_remote_t *rem, int q,
                                                rcoll_where_rank_t *tmp, char *why, size_t len)
{
    if (rem == NULL) {
        snprintf(why, len, "not asked: no memory, or a query already in flight");
        return NULL;
    }
    int node = rem->ctx->node_of[rem->comm->world_ranks[q]];
    if (rem->state[q] == ST_NONE) {
        snprintf(why, len, "no answer from node %d in %.0f s", node, RCOLL_WHERE_ASK_S);
        return NULL;
    }
    if (rem->state[q] == ST_NOT_KNOWN) {
        snprintf(why, len, "node %d has no table of its ranks", node);
        return NULL;
    }
    const rec_t *r = &rem->recs[q];
    memset(tmp, 0, sizeof(*tmp));
    atomic_store(&tmp->pid, (r->flags & REC_ALIVE) ? 1 : 0);
    atomic_store(&tmp->world_rank, rem->comm->world_ranks[q]);
    atomic_store(&tmp->inside, (r->flags & REC_INSIDE) ? 1 : 0);
    atomic_store(&tmp->seen_ns, r->seen_ns);
    atomic_store(&tmp->comms[0].comm_id, rem->comm->id);
    atomic_store(&tmp->comms[0].entered, r->entered);
    for (int i = 0; i < RCOLL_WHERE_OTHERS; i++) {
        atomic_store(&tmp->comms[1 + i].comm_id, r->other_id[i]);
        atomic_store(&tmp->comms[1 + i].entered, r->other_e[i]);
    }
    return tmp;
}

void rcoll__whereis_remote_free(rcoll_where_remote_t *rem)
{
    if (rem == NULL) {
        return;
    }
    free(rem->state);
    free(rem->recs);
    free(rem->order);
    free(rem->units);
    free(rcoll_container_of(rem, struct rcoll_where_fetch, rem));
}
