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
#include <math.h>
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

/* ---- the heap of ready ranks, on (due, rank) ---- */

static int heap_less(const sim_t *s, int a, int b)
{
    double ta = s->ranks[a].due, tb = s->ranks[b].due;

    return ta < tb || (ta == tb && a < b);
}

static void heap_set(sim_t *s, int i, int r)
{
    s->heap[i] = r;
    s->ranks[r].hpos = i;
}

static void heap_up(sim_t *s, int i, int r)
{
    while (i > 0 && heap_less(s, r, s->heap[(i - 1) / 2])) {
        heap_set(s, i, s->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(s, i, r);
}

/* Queue rank r to run at t. */
static void heap_push(sim_t *s, int r, double t)
{
    s->ranks[r].due = t;
    s->ranks[r].state = SIM_QUEUED;
    heap_up(s, s->nheap++, r);
}

/* Rank r, queued, runs at t instead if that is earlier. */
static void heap_earlier(sim_t *s, int r, double t)
{
    if (t < s->ranks[r].due) {
        s->ranks[r].due = t;
        heap_up(s, s->ranks[r].hpos, r);
    }
}

static int heap_pop(sim_t *s)
{
    int top = s->heap[0], last = s->heap[--s->nheap], i = 0, c;

    while ((c = 2 * i + 1) < s->nheap) {
        if (c + 1 < s->nheap && heap_less(s, s->heap[c + 1], s->heap[c]))
            c++;
        if (!heap_less(s, s->heap[c], last))
            break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    if (s->nheap > 0)
        heap_set(s, i, last);
    s->ranks[top].hpos = -1;
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

static size_t msg_hash(const sim_t *s, int src, int dst, uint64_t key)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xc2b2ae3d27d4eb4full) ^ (key * 0x165667b19e3779f9ull);

    return (size_t)(h ^ (h >> 29)) & (s->nbucket - 1);
}

/* Remove and return the waiting end (src, dst, key), or -1. */
static int msg_take(sim_t *s, int src, int dst, uint64_t key)
{
    int *link = &s->bucket[msg_hash(s, src, dst, key)];

    for (int i = *link; i >= 0; link = &s->msgs[i].next, i = *link) {
        sim_msg_t *m = &s->msgs[i];
        if (m->src == src && m->dst == dst && m->key == key) {
            *link = m->next;
            m->next = s->free_msg;
            s->free_msg = i;
            s->inflight--;
            return i;
        }
    }
    return -1;
}

static int msg_put(sim_t *s, int src, int dst, uint64_t key, int kind, size_t len, double t,
                   rcoll_task_t *task)
{
    int i = s->free_msg;
    size_t b = msg_hash(s, src, dst, key);

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
    s->msgs[i] = (sim_msg_t){ src, dst, key, kind, len, t, s->send_seq, task, s->bucket[b] };
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

/* An op of rank r's task completed at t (maybe while another rank runs). */
static void op_done(sim_t *s, int r, rcoll_task_t *task, double t, int was_pending)
{
    sim_rank_t *R = &s->ranks[r];

    if (t > SIM_TASK_TDONE(task))
        SIM_TASK_TDONE(task) = t;
    if (!was_pending)
        return;
    SIM_TASK_PENDING(task)--;
    R->pending--;
    if (R->composed) {             /* any completion may let one of its children go on */
        double at = t > R->clock ? t : R->clock;
        if (R->state == SIM_BLOCKED)
            heap_push(s, r, at);
        else if (R->state == SIM_QUEUED)
            heap_earlier(s, r, at);
    } else if (R->pending == 0 && R->state == SIM_BLOCKED) {
        heap_push(s, r, SIM_TASK_TDONE(task) > R->clock ? SIM_TASK_TDONE(task) : R->clock);
    }
}

int sim_global_rank(const sim_t *s, const rcoll_comm_t *comm, int r)
{
    if (comm->sub_kind == RCOLL_SUB_NODE)
        return (int)(comm - s->node_comms) * s->sp->ppn + r;
    if (comm->sub_kind == RCOLL_SUB_RAIL)
        return r * s->sp->ppn + (int)(comm - s->rail_comms);
    return r;
}

rcoll_status_t sim_post(sim_t *s, rcoll_task_t *task, int peer, uint32_t step, size_t len, int is_send)
{
    int me = s->cur, i, gp;
    double now = s->ranks[me].clock, rndv = s->sp->model->rndv_extra;
    int eager = len <= s->sp->model->eager_limit;
    uint64_t key = (uint64_t)task->seq << 32 | step;

    if (peer < 0 || peer >= task->comm->size || peer == task->comm->rank) {
        sim_fail(s, "rank %d: %s to bad peer %d of %d, step %u", me, is_send ? "send" : "receive", peer,
                 task->comm->size, step);
        return RCOLL_ERR_INVALID_ARG;
    }
    gp = sim_global_rank(s, task->comm, peer);
    s->res->messages += is_send;
    i = is_send ? msg_take(s, me, gp, key) : msg_take(s, gp, me, key);
    if (i >= 0) {
        sim_msg_t m = s->msgs[i];
        if (m.kind == SIM_MSG_RECV) {
            if (!is_send) {
                sim_fail(s, "ranks %d and %d: two receives, step %u (channel %#x)", me, gp, step, task->seq);
                return RCOLL_ERR_INTERNAL;
            }
        } else if (is_send) {
            sim_fail(s, "rank %d: two sends to %d, step %u (channel %#x)", me, gp, step, task->seq);
            return RCOLL_ERR_INTERNAL;
        }
        if (m.len != len) {
            sim_fail(s, "rank %d -> %d step %u: send of %zu B, receive of %zu B", is_send ? me : gp,
                     is_send ? gp : me, step, is_send ? len : m.len, is_send ? m.len : len);
            return RCOLL_ERR_TRUNCATED;
        }
        if (is_send && eager) {     /* the receive was posted at m.t <= now */
            double t = transfer(s, me, gp, len, now);
            op_done(s, me, task, t, 0);
            op_done(s, gp, m.task, t, 1);
        } else if (m.kind == SIM_MSG_EAGER) {
            op_done(s, me, task, m.t > now ? m.t : now, 0);
        } else {                    /* rendezvous: both ends posted now */
            sim_grant_t g = { now + rndv, is_send ? s->send_seq++ : m.seq, is_send ? me : gp,
                              is_send ? gp : me, len, is_send ? task : m.task, is_send ? m.task : task };
            if (grant_push(s, g) != 0)
                return RCOLL_ERR_NO_MEMORY;
            SIM_TASK_PENDING(task)++;
            s->ranks[me].pending++;
        }
        return RCOLL_OK;
    }
    if (is_send && eager) {
        double t = transfer(s, me, gp, len, now);
        if (msg_put(s, me, gp, key, SIM_MSG_EAGER, len, t, NULL) != 0)
            return RCOLL_ERR_NO_MEMORY;
        op_done(s, me, task, t, 0);
        return RCOLL_OK;
    }
    if (msg_put(s, is_send ? me : gp, is_send ? gp : me, key, is_send ? SIM_MSG_RNDV : SIM_MSG_RECV,
                len, now, task) != 0)
        return RCOLL_ERR_NO_MEMORY;
    s->send_seq += is_send;
    SIM_TASK_PENDING(task)++;
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
    s->comm.subcomms_made = 1;
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
    s->node_comms = calloc((size_t)sp->nodes, sizeof(*s->node_comms));
    s->rail_comms = calloc((size_t)sp->ppn, sizeof(*s->rail_comms));
    if (alg->flags & RCOLL_ALG_COMPOSED)
        s->coll_states = calloc((size_t)p, sizeof(s->comm.coll_state));
    if (((alg->flags & RCOLL_ALG_COMPOSED) && s->coll_states == NULL) || !s->tasks || !s->ranks || !s->heap || !s->link_out || !s->link_in || !s->bucket ||
        !s->sendbuf || !s->recvbuf || !s->node_comms || !s->rail_comms) {
        snprintf(res->failure, sizeof(res->failure), "out of memory for %d ranks", p);
        return -1;
    }
    memset(s->bucket, 0xff, s->nbucket * sizeof(*s->bucket));
    /* the sub-communicators of the node-aware algorithms (coll.h): every
     * node has sp->ppn ranks, so every local rank has a rail */
    for (int n = 0; n < sp->nodes; n++) {
        rcoll_comm_t *c = &s->node_comms[n];
        c->ctx = &s->ctx;
        c->id = 0x100000000ull | (uint64_t)n;
        c->size = c->local_size = c->node_min = sp->ppn;
        c->node_count = 1;
        c->sub_kind = RCOLL_SUB_NODE;
    }
    for (int l = 0; l < sp->ppn; l++) {
        rcoll_comm_t *c = &s->rail_comms[l];
        c->ctx = &s->ctx;
        c->id = 0x200000000ull | (uint64_t)l;
        c->size = c->node_count = sp->nodes;
        c->local_size = c->node_min = 1;
        c->sub_kind = RCOLL_SUB_RAIL;
    }
    for (int r = 0; r < p; r++) {
        rcoll_task_t *t = &s->tasks[r];
        fill_args(&t->args, alg, count, s);
        t->comm = &s->comm;
        t->ctx = &s->ctx;
        t->alg = alg;
        t->status = RCOLL_INPROGRESS;
        t->wait_step = (uint32_t)-1;
        heap_push(s, r, 0);
    }
    return 0;
}

static void sim_teardown(sim_t *s)
{
    int p = s->sp != NULL ? s->sp->nodes * s->sp->ppn : 0;

    for (int r = 0; r < p && s->ranks != NULL; r++)
        for (int i = 0; i < s->ranks[r].nlive; i++) {
            free(s->ranks[r].live[i]->scratch);
            free(s->ranks[r].live[i]);
        }
    if (s->ctx.sim != NULL)
        rcoll_selector_fini(&s->ctx);   /* what the algorithms' selector calls cached */
    free(s->node_comms);
    free(s->rail_comms);
    free(s->coll_states);
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

    op_done(s, g.src, g.src_task, t, 1);
    op_done(s, g.dst, g.dst_task, t, 1);
}

/* One run of a rank at its clock, as the progress engine runs a context:
 * its children in the order they were posted, then the top-level task
 * (which reaps the children that ended and posts new ones), again until a
 * pass ends no child and posts none. */
static rcoll_status_t run_rank(sim_t *s, sim_rank_t *R, const rcoll_alg_t *alg, rcoll_task_t *top)
{
    for (;;) {
        uint32_t posted = R->nchild[RCOLL_SUB_NODE] + R->nchild[RCOLL_SUB_RAIL];
        int ended = 0;
        rcoll_status_t st;

        for (int i = 0; i < R->nlive; i++) {
            rcoll_task_t *c = R->live[i];
            if (c->done)
                continue;
            st = c->alg->progress(c);
            if (s->failed)
                return RCOLL_ERR_INTERNAL;
            if (st != RCOLL_INPROGRESS) {
                c->status = st;
                c->done = 1;
                ended++;
            }
        }
        st = alg->progress(top);
        if (s->failed || st != RCOLL_INPROGRESS ||
            (ended == 0 && R->nchild[RCOLL_SUB_NODE] + R->nchild[RCOLL_SUB_RAIL] == posted))
            return st;
    }
}

/* Run the rank on top of the heap once. */
static void step_rank(sim_t *s, const rcoll_alg_t *alg, int *ndone)
{
    int r = heap_pop(s), ppn = s->sp->ppn, node = r / ppn, lr = r % ppn;
    sim_rank_t *R = &s->ranks[r];
    uint64_t *state = s->coll_states != NULL ? s->coll_states + (size_t)r * SIM_COLL_STATE_WORDS : NULL;
    rcoll_task_t *top = &s->tasks[r];
    rcoll_status_t st;

    if (R->due > R->clock)
        R->clock = R->due;
    s->cur = r;
    s->comm.rank = r;
    s->comm.local_rank = lr;
    s->comm.node_comm = &s->node_comms[node];
    s->comm.rail_comm = &s->rail_comms[lr];
    s->node_comms[node].rank = lr;
    s->rail_comms[lr].rank = node;
    if (state != NULL)
        memcpy(s->comm.coll_state, state, sizeof(s->comm.coll_state));
    R->state = SIM_RUN;
    R->wake = INFINITY;
    st = run_rank(s, R, alg, top);
    if (state != NULL)
        memcpy(state, s->comm.coll_state, sizeof(s->comm.coll_state));
    if (s->failed)
        return;
    if (st == RCOLL_OK) {
        R->state = SIM_DONE;
        if (R->pending > 0 || R->nlive > 0 || SIM_TASK_TDONE(top) > R->clock) {
            sim_fail(s, "rank %d finished with ops pending or children in flight", r);
            return;
        }
        if (R->clock > s->res->time)
            s->res->time = R->clock;
        (*ndone)++;
    } else if (st != RCOLL_INPROGRESS) {
        sim_fail(s, "rank %d: %s returned %s", r, alg->name, rcoll_strerror(st));
    } else if (R->wake < INFINITY) {
        heap_push(s, r, R->wake);
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
        if (s.ngrants > 0 && (s.nheap == 0 || s.grants[0].t <= s.ranks[s.heap[0]].due)) {
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
        snprintf(res->failure, sizeof(res->failure), "%zu messages left unmatched, e.g. %d -> %d step %u "
                 "(channel %#x)", s.inflight, m->src, m->dst, (uint32_t)m->key, (uint32_t)(m->key >> 32));
        rc = -1;
    }
    sim_teardown(&s);
    return rc;
}
