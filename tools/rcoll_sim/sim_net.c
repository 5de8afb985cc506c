/*
 * sim_net.c - the discrete-event fake network of rcoll_sim (sim.h): message
 * matching by (src, dst, tag), the per-rank send ports and per-node links
 * that give each message its time, and the event loop that runs the rank
 * with the earliest clock next.
 *
 * Order.  A rank runs from the heap at its clock; the sends it posts take
 * the ports and links in that order, so each resource is granted in time
 * order.  When rcoll_task_test finds every op done but the latest one
 * completes after the rank's clock, the rank moves its clock there and goes
 * back on the heap instead of going on, so no rank posts ahead of another
 * that is earlier.  A rank whose ops wait for their other end is off the
 * heap until the last one is matched.  An empty heap with ranks not done is
 * a deadlock of the schedule.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_int.h"

static __thread sim_t *sim_running;

sim_t *sim_current(void)
{
    return sim_running;
}

void sim_fail(sim_t *s, const char *fmt, ...)
{
    va_list ap;

    if (s->failed)
        return;
    s->failed = 1;
    va_start(ap, fmt);
    vsnprintf(s->res->failure, sizeof(s->res->failure), fmt, ap);
    va_end(ap);
}

/* ---- the heap of ready ranks ---- */

static int heap_less(const sim_t *s, int a, int b)
{
    double ta = s->ranks[a].clock, tb = s->ranks[b].clock;

    return ta < tb || (ta == tb && a < b);
}

static void heap_push(sim_t *s, int r)
{
    int i = s->nheap++;

    while (i > 0 && heap_less(s, r, s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = r;
}

static int heap_pop(sim_t *s)
{
    int top = s->heap[0], last = s->heap[--s->nheap], i = 0, c;

    while ((c = 2 * i + 1) < s->nheap) {
        if (c + 1 < s->nheap && heap_less(s, s->heap[c + 1], s->heap[c]))
            c++;
        if (!heap_less(s, s->heap[c], last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

/* ---- the rendezvous transfers to start ---- */

static int grant_less(const sim_grant_t *a, const sim_grant_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int grant_push(sim_t *s, sim_grant_t g)
{
    int i;

    if (s->ngrants == s->grants_cap) {
        int cap = s->grants_cap ? 2 * s->grants_cap : 1024;
        sim_grant_t *n = realloc(s->grants, (size_t)cap * sizeof(*n));
        if (n == NULL)
            return -1;
        s->grants = n;
        s->grants_cap = cap;
    }
    for (i = s->ngrants++; i > 0 && grant_less(&g, &s->grants[(i - 1) / 2]); i = (i - 1) / 2)
        s->grants[i] = s->grants[(i - 1) / 2];
    s->grants[i] = g;
    return 0;
}

static sim_grant_t grant_pop(sim_t *s)
{
    sim_grant_t top = s->grants[0], last = s->grants[--s->ngrants];
    int i = 0, c;

    while ((c = 2 * i + 1) < s->ngrants) {
        if (c + 1 < s->ngrants && grant_less(&s->grants[c + 1], &s->grants[c]))
            c++;
        if (!grant_less(&s->grants[c], &last))
            break;
        s->grants[i] = s->grants[c];
        i = c;
    }
    if (s->ngrants > 0)
        s->grants[i] = last;
    return top;
}

/* ---- the waiting message ends ---- */

static size_t msg_hash(const sim_t *s, int src, int dst, uint32_t tag)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xc2b2ae3d27d4eb4full) ^ ((uint64_t)tag * 0x165667b19e3779f9ull);

    return (size_t)(h ^ (h >> 29)) & (s->nbucket - 1);
}

/* Remove and return the waiting end (src, dst, tag), or -1. */
static int msg_take(sim_t *s, int src, int dst, uint32_t tag)
{
    int *link = &s->bucket[msg_hash(s, src, dst, tag)];

    for (int i = *link; i >= 0; link = &s->msgs[i].next, i = *link) {
        sim_msg_t *m = &s->msgs[i];
        if (m->src == src && m->dst == dst && m->tag == tag) {
            *link = m->next;
            m->next = s->free_msg;
            s->free_msg = i;
            s->inflight--;
            return i;
        }
    }
    return -1;
}

static int msg_put(sim_t *s, int src, int dst, uint32_t tag, int kind, size_t len, double t)
{
    int i = s->free_msg;
    size_t b = msg_hash(s, src, dst, tag);

    if (i < 0) {
        if (s->nmsgs == s->msgs_cap) {
            int cap = s->msgs_cap ? 2 * s->msgs_cap : 1024;
            sim_msg_t *n = realloc(s->msgs, (size_t)cap * sizeof(*n));
            if (n == NULL)
                return -1;
            s->msgs = n;
            s->msgs_cap = cap;
        }
        i = s->nmsgs++;
    } else {
        s->free_msg = s->msgs[i].next;
    }
    s->msgs[i] = (sim_msg_t){ src, dst, tag, kind, len, t, s->send_seq, s->bucket[b] };
    s->bucket[b] = i;
    if (++s->inflight > s->res->peak_inflight)
        s->res->peak_inflight = s->inflight;
    return 0;
}

/* ---- time ---- */

static int node_of(const sim_t *s, int r)
{
    return r / s->sp->ppn;
}

/* The arrival of len bytes from src to dst that may leave at t0 (the
 * rendezvous handshake already in t0); takes the port and links. */
static double transfer(sim_t *s, int src, int dst, size_t len, double t0)
{
    const rcoll_model_t *m = s->sp->model;
    sim_rank_t *R = &s->ranks[src];
    int ns = node_of(s, src), nd = node_of(s, dst);
    double b = (double)len, start = t0 > R->port ? t0 : R->port, wire, arrive;

    if (ns == nd) {
        R->port = start + m->alpha + b * m->beta;
        arrive = R->port;
    } else {
        R->port = start + m->alpha;
        wire = start;
        if (s->link_out[ns] > wire)
            wire = s->link_out[ns];
        if (s->link_in[nd] > wire)
            wire = s->link_in[nd];
        s->link_out[ns] = s->link_in[nd] = wire + b * m->beta_inter;
        arrive = wire + m->alpha_inter + b * m->beta_inter;
    }
    if (s->sp->trace != NULL)
        fprintf(s->sp->trace, "# msg %d -> %d %zu B %s: may leave %.3f us, leaves %.3f us, arrives %.3f us\n",
                src, dst, len, ns == nd ? "on node" : "between nodes", t0 * 1e6, start * 1e6, arrive * 1e6);
    return arrive;
}

/* Rank r's op completed at t (maybe while another rank runs). */
static void op_done(sim_t *s, int r, double t, int was_pending)
{
    sim_rank_t *R = &s->ranks[r];

    if (t > R->tdone)
        R->tdone = t;
    if (!was_pending)
        return;
    if (--R->pending == 0 && R->state == SIM_BLOCKED) {
        if (R->tdone > R->clock)
            R->clock = R->tdone;
        R->state = SIM_RUN;
        heap_push(s, r);
    }
}

rcoll_status_t sim_post(sim_t *s, int peer, uint32_t tag, size_t len, int is_send)
{
    int me = s->cur, p = s->comm.size, i;
    double now = s->ranks[me].clock, rndv = s->sp->model->rndv_extra;
    int eager = len <= s->sp->model->eager_limit;

    if (peer < 0 || peer >= p || peer == me) {
        sim_fail(s, "rank %d: %s to bad peer %d, tag %u", me, is_send ? "send" : "receive", peer, tag);
        return RCOLL_ERR_INVALID_ARG;
    }
    s->res->messages += is_send;
    i = is_send ? msg_take(s, me, peer, tag) : msg_take(s, peer, me, tag);
    if (i >= 0) {
        sim_msg_t m = s->msgs[i];
        if (m.kind == SIM_MSG_RECV) {
            if (!is_send) {
                sim_fail(s, "ranks %d and %d: two receives with tag %u", me, peer, tag);
                return RCOLL_ERR_INTERNAL;
            }
        } else if (is_send) {
            sim_fail(s, "rank %d: two sends to %d with tag %u", me, peer, tag);
            return RCOLL_ERR_INTERNAL;
        }
        if (m.len != len) {
            sim_fail(s, "rank %d -> %d tag %u: send of %zu B, receive of %zu B", is_send ? me : peer,
                     is_send ? peer : me, tag, is_send ? len : m.len, is_send ? m.len : len);
            return RCOLL_ERR_TRUNCATED;
        }
        if (is_send && eager) {     /* the receive was posted at m.t <= now */
            double t = transfer(s, me, peer, len, now);
            op_done(s, me, t, 0);
            op_done(s, peer, t, 1);
        } else if (m.kind == SIM_MSG_EAGER) {
            op_done(s, me, m.t > now ? m.t : now, 0);
        } else {                    /* rendezvous: both ends posted now */
            sim_grant_t g = { now + rndv, is_send ? s->send_seq++ : m.seq, is_send ? me : peer,
                              is_send ? peer : me, len };
            if (grant_push(s, g) != 0)
                return RCOLL_ERR_NO_MEMORY;
            s->ranks[me].pending++;
        }
        return RCOLL_OK;
    }
    if (is_send && eager) {
        double t = transfer(s, me, peer, len, now);
        if (msg_put(s, me, peer, tag, SIM_MSG_EAGER, len, t) != 0)
            return RCOLL_ERR_NO_MEMORY;
        op_done(s, me, t, 0);
        return RCOLL_OK;
    }
    if (msg_put(s, is_send ? me : peer, is_send ? peer : me, tag, is_send ? SIM_MSG_RNDV : SIM_MSG_RECV,
                len, now) != 0)
        return RCOLL_ERR_NO_MEMORY;
    s->send_seq += is_send;
    s->ranks[me].pending++;
    return RCOLL_OK;
}

/* ---- the run ---- */

static size_t pow2_at_least(size_t n)
{
    size_t b = 1024;

    while (b < n && b < ((size_t)1 << 22))
        b <<= 1;
    return b;
}

static void fill_args(rcoll_coll_args_t *a, const rcoll_alg_t *alg, size_t count, const sim_t *s)
{
    memset(a, 0, sizeof(*a));
    a->type = alg->coll;
    a->sendbuf = s->sendbuf;
    a->recvbuf = s->recvbuf;
    a->count = count;
    a->dtype = RCOLL_FLOAT64;
    a->op = RCOLL_SUM;
}

static int sim_setup(sim_t *s, const rcoll_sim_params_t *sp, const rcoll_alg_t *alg, size_t bytes,
                     rcoll_sim_result_t *res)
{
    int p = sp->nodes * sp->ppn;
    size_t count = bytes / 8 ? bytes / 8 : 1, vec = count * 8;
    size_t sendlen = alg->coll == RCOLL_COLL_REDUCE_SCATTER ? vec * (size_t)p : vec;
    size_t recvlen = alg->coll == RCOLL_COLL_ALLGATHER ? vec * (size_t)p : vec;

    memset(res, 0, sizeof(*res));
    s->sp = sp;
    s->res = res;
    s->ctx.cfg = *sp->cfg;
    s->ctx.sim = s;
    s->comm.ctx = &s->ctx;
    s->comm.size = p;
    s->comm.local_size = sp->ppn;
    s->comm.node_count = sp->nodes;
    s->comm.node_min = sp->ppn;
    s->comm.is_world = 1;
    s->nbucket = pow2_at_least(2 * (size_t)p);
    s->free_msg = -1;
    s->tasks = calloc((size_t)p, sizeof(*s->tasks));
    s->ranks = calloc((size_t)p, sizeof(*s->ranks));
    s->heap = malloc((size_t)p * sizeof(*s->heap));
    s->link_out = calloc((size_t)sp->nodes, sizeof(double));
    s->link_in = calloc((size_t)sp->nodes, sizeof(double));
    s->bucket = malloc(s->nbucket * sizeof(*s->bucket));
    s->sendbuf = malloc(sendlen);
    s->recvbuf = malloc(recvlen);
    if (!s->tasks || !s->ranks || !s->heap || !s->link_out || !s->link_in || !s->bucket ||
        !s->sendbuf || !s->recvbuf) {
        snprintf(res->failure, sizeof(res->failure), "out of memory for %d ranks", p);
        return -1;
    }
    memset(s->bucket, 0xff, s->nbucket * sizeof(*s->bucket));
    for (int r = 0; r < p; r++) {
        rcoll_task_t *t = &s->tasks[r];
        fill_args(&t->args, alg, count, s);
        t->comm = &s->comm;
        t->ctx = &s->ctx;
        t->alg = alg;
        t->status = RCOLL_INPROGRESS;
        t->wait_step = (uint32_t)-1;
        heap_push(s, r);
    }
    return 0;
}

static void sim_teardown(sim_t *s)
{
    for (int i = 0; i < s->nscratch; i++)
        free(s->scratch[i]);
    free(s->scratch);
    free(s->scratch_size);
    free(s->tasks);
    free(s->ranks);
    free(s->heap);
    free(s->link_out);
    free(s->link_in);
    free(s->bucket);
    free(s->msgs);
    free(s->grants);
    free(s->sendbuf);
    free(s->recvbuf);
}

/* Start the earliest rendezvous transfer: both its ends complete when it arrives. */
static void fire_grant(sim_t *s)
{
    sim_grant_t g = grant_pop(s);
    double t = transfer(s, g.src, g.dst, g.len, g.t);

    op_done(s, g.src, t, 1);
    op_done(s, g.dst, t, 1);
}

/* Run the rank on top of the heap once. */
static void step_rank(sim_t *s, const rcoll_alg_t *alg, int *ndone)
{
    int r = heap_pop(s);
    sim_rank_t *R = &s->ranks[r];
    rcoll_status_t st;

    s->cur = r;
    s->comm.rank = r;
    s->comm.local_rank = r % s->sp->ppn;
    R->state = SIM_RUN;
    st = alg->progress(&s->tasks[r]);
    if (s->failed)
        return;
    if (st == RCOLL_OK) {
        R->state = SIM_DONE;
        if (R->pending > 0 || R->tdone > R->clock) {
            sim_fail(s, "rank %d finished with ops pending", r);
            return;
        }
        if (R->clock > s->res->time)
            s->res->time = R->clock;
        (*ndone)++;
    } else if (st != RCOLL_INPROGRESS) {
        sim_fail(s, "rank %d: %s returned %s", r, alg->name, rcoll_strerror(st));
    } else if (R->state == SIM_REQUEUE) {
        R->state = SIM_RUN;
        heap_push(s, r);
    } else if (R->pending > 0) {
        R->state = SIM_BLOCKED;
    } else {
        sim_fail(s, "rank %d: %s waits for something other than its messages (not simulated)", r,
                 alg->name);
    }
}

int rcoll_sim_run(const rcoll_sim_params_t *sp, const rcoll_alg_t *alg, size_t bytes,
                  rcoll_sim_result_t *res)
{
    sim_t s;
    int ndone = 0, p = sp->nodes * sp->ppn, rc = 0;

    memset(&s, 0, sizeof(s));
    if (sim_setup(&s, sp, alg, bytes, res) != 0) {
        sim_teardown(&s);
        return -1;
    }
    sim_running = &s;
    while ((s.nheap > 0 || s.ngrants > 0) && !s.failed) {
        if (s.ngrants > 0 && (s.nheap == 0 || s.grants[0].t <= s.ranks[s.heap[0]].clock)) {
            fire_grant(&s);
            continue;
        }
        step_rank(&s, alg, &ndone);
        if (sp->max_tests > 0 && res->tests > sp->max_tests) {
            res->over_budget = 1;
            break;
        }
    }
    sim_running = NULL;
    if (res->over_budget) {
        rc = 1;
    } else if (s.failed) {
        rc = -1;
    } else if (ndone < p) {
        snprintf(res->failure, sizeof(res->failure), "deadlock: %d of %d ranks finished", ndone, p);
        rc = -1;
    } else if (s.inflight > 0) {
        sim_msg_t *m = NULL;
        for (size_t b = 0; b < s.nbucket && m == NULL; b++)
            if (s.bucket[b] >= 0)
                m = &s.msgs[s.bucket[b]];
        snprintf(res->failure, sizeof(res->failure), "%zu messages left unmatched, e.g. %d -> %d tag %u",
                 s.inflight, m->src, m->dst, m->tag);
        rc = -1;
    }
    sim_teardown(&s);
    return rc;
}
