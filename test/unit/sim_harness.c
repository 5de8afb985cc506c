/*
 * sim_harness.c - the fake point-to-point layer under the simulated ranks
 * (sim_harness.h).  No global state: every task's ctx points into the run's
 * sim_t, which the replaced core functions recover from it.
 *
 * Every posted op gets an entry in one open-addressing table keyed by
 * (kind, src, dst, step); it stays there for the whole collective, which is
 * how a reused (peer, step) is caught.  When a post finds its counterpart
 * unmatched, the pair goes to the ready list, from which deliveries are
 * drawn at random.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_harness.h"
#include "log.h"

#define GUARD      256
#define GUARD_BYTE 0x5A

typedef struct {
    int         kind;              /* RCOLL_P2P_SEND / RECV; 0: free table slot */
    int         src, dst;
    uint32_t    step;
    int         open;              /* posted and not yet paired */
    const void *sbuf;
    void       *rbuf;
    void       *copy;              /* eager send: the data when posted */
    size_t      len;
    uint64_t    sum;               /* rendezvous send: checksum when posted */
} sim_op_t;

typedef struct {
    int pending;                   /* ops that block its next test */
    int since_ok;                  /* ops posted since its last successful test */
    int done;
} sim_rank_t;

typedef struct {
    rcoll_context_t      ctx;      /* first: the tasks' ctx points here */
    const sim_config_t  *cfg;
    sim_result_t        *res;
    sim_rank_t          *ranks;
    sim_op_t            *table;    /* open addressing, tsize a power of two */
    size_t               tsize, tused;
    size_t              *ready;    /* pairs of table indices: send, receive */
    size_t               nready, ready_cap;
    size_t               nopen;    /* ops not yet paired */
    unsigned             rng;
    long                 events;
} sim_t;

static sim_t *sim_of(const rcoll_task_t *task)
{
    return (sim_t *)(void *)task->ctx;
}

static unsigned sim_rand(sim_t *s)
{
    s->rng = s->rng * 1103515245u + 12345u;
    return (s->rng >> 8) & 0xffffff;
}

static rcoll_status_t sim_fail(sim_t *s, const char *fmt, ...)
{
    va_list ap;
    if (s->res->failure[0] == '\0') {
        va_start(ap, fmt);
        vsnprintf(s->res->failure, sizeof(s->res->failure), fmt, ap);
        va_end(ap);
    }
    return RCOLL_ERR_INTERNAL;
}

static uint64_t checksum(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

static size_t slot_of(const sim_t *s, int kind, int src, int dst, uint32_t step)
{
    uint64_t h = ((uint64_t)(uint32_t)src * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uint32_t)dst * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)step * 0x165667B19E3779F9ull) ^ (uint64_t)kind;
    h ^= h >> 29;
    size_t i = (size_t)h & (s->tsize - 1);
    while (s->table[i].kind != 0 && !(s->table[i].kind == kind && s->table[i].src == src &&
                                      s->table[i].dst == dst && s->table[i].step == step)) {
        i = (i + 1) & (s->tsize - 1);
    }
    return i;
}

static int table_grow(sim_t *s)
{
    sim_op_t *old = s->table;
    size_t oldsize = s->tsize;
    size_t *moved = malloc(sizeof(size_t) * (oldsize ? oldsize : 1));
    s->tsize = oldsize ? oldsize * 2 : 1024;
    s->table = calloc(s->tsize, sizeof(*s->table));
    if (s->table == NULL || moved == NULL) {
        free(moved);
        free(s->table);
        s->table = old;
        s->tsize = oldsize;
        return -1;
    }
    for (size_t i = 0; i < oldsize; i++) {
        moved[i] = (size_t)-1;
        if (old[i].kind != 0) {
            size_t j = slot_of(s, old[i].kind, old[i].src, old[i].dst, old[i].step);
            s->table[j] = old[i];
            moved[i] = j;
        }
    }
    for (size_t i = 0; i < 2 * s->nready; i++) {
        s->ready[i] = moved[s->ready[i]];
    }
    free(moved);
    free(old);
    return 0;
}

static int ready_push(sim_t *s, size_t send, size_t recv)
{
    if (s->nready == s->ready_cap) {
        size_t cap = s->ready_cap ? s->ready_cap * 2 : 256;
        size_t *r = realloc(s->ready, 2 * cap * sizeof(size_t));
        if (r == NULL) {
            return -1;
        }
        s->ready = r;
        s->ready_cap = cap;
    }
    s->ready[2 * s->nready] = send;
    s->ready[2 * s->nready + 1] = recv;
    s->nready++;
    return 0;
}

static const char *kind_name(int kind)
{
    return kind == RCOLL_P2P_SEND ? "send" : "recv";
}

static rcoll_status_t sim_post(rcoll_task_t *task, int kind, int peer, uint32_t step,
                               const void *sbuf, void *rbuf, size_t len)
{
    sim_t *s = sim_of(task);
    int me = task->comm->rank;
    int src = kind == RCOLL_P2P_SEND ? me : peer, dst = kind == RCOLL_P2P_SEND ? peer : me;

    if (s->res->failure[0] != '\0') {
        return RCOLL_ERR_INTERNAL;
    }
    if (peer < 0 || peer >= s->cfg->p || peer == me) {
        return sim_fail(s, "rank %d posts a %s with bad peer %d (step %u)", me, kind_name(kind),
                        peer, step);
    }
    if (s->ranks[me].since_ok >= RCOLL_TASK_MAX_OPS) {
        return sim_fail(s, "rank %d: more than %d ops between two tests", me, RCOLL_TASK_MAX_OPS);
    }
    if (len == 0 && s->cfg->forbid_empty) {
        return sim_fail(s, "rank %d: zero-length %s with rank %d (step %u)", me, kind_name(kind),
                        peer, step);
    }
    if (len > 0 && (kind == RCOLL_P2P_SEND ? sbuf == NULL : rbuf == NULL)) {
        return sim_fail(s, "rank %d: NULL buffer with %zu bytes", me, len);
    }
    if (2 * (s->tused + 1) > s->tsize && table_grow(s) != 0) {
        return sim_fail(s, "simulator out of memory");
    }
    size_t i = slot_of(s, kind, src, dst, step);
    if (s->table[i].kind != 0) {
        return sim_fail(s, "rank %d: second %s with peer %d step %u", me, kind_name(kind), peer,
                        step);
    }
    sim_op_t *op = &s->table[i];
    *op = (sim_op_t){ .kind = kind, .src = src, .dst = dst, .step = step, .open = 1,
                      .sbuf = sbuf, .rbuf = rbuf, .len = len };
    s->tused++;
    s->nopen++;
    s->ranks[me].since_ok++;
    s->events++;
    if (kind == RCOLL_P2P_SEND && !s->cfg->rndv) {
        op->copy = malloc(len ? len : 1);
        if (op->copy == NULL) {
            return sim_fail(s, "simulator out of memory");
        }
        if (len) {
            memcpy(op->copy, sbuf, len);
        }
    } else {
        if (kind == RCOLL_P2P_SEND) {
            op->sum = checksum(sbuf, len);
        }
        s->ranks[me].pending++;
    }
    int other = kind == RCOLL_P2P_SEND ? RCOLL_P2P_RECV : RCOLL_P2P_SEND;
    size_t j = slot_of(s, other, src, dst, step);
    if (s->table[j].kind != 0 && s->table[j].open) {
        s->table[i].open = s->table[j].open = 0;
        s->nopen -= 2;
        if (ready_push(s, kind == RCOLL_P2P_SEND ? i : j, kind == RCOLL_P2P_SEND ? j : i) != 0) {
            return sim_fail(s, "simulator out of memory");
        }
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len)
{
    return sim_post(task, RCOLL_P2P_SEND, peer, step, buf, NULL, len);
}

rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len)
{
    return sim_post(task, RCOLL_P2P_RECV, peer, step, NULL, buf, len);
}

rcoll_status_t rcoll_task_test(rcoll_task_t *task)
{
    sim_t *s = sim_of(task);
    sim_rank_t *r = &s->ranks[task->comm->rank];
    if (s->res->failure[0] != '\0') {
        return RCOLL_ERR_INTERNAL;
    }
    if (r->pending > 0) {
        return RCOLL_INPROGRESS;
    }
    r->since_ok = 0;
    return RCOLL_OK;
}

void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    if (task->scratch == NULL || task->scratch_size < size) {
        free(task->scratch);
        size_t total = (size + GUARD + 63) & ~(size_t)63;
        task->scratch = aligned_alloc(64, total);
        task->scratch_size = task->scratch ? size : 0;
        if (task->scratch) {
            memset((char *)task->scratch + size, GUARD_BYTE, GUARD);
        }
    }
    return task->scratch;
}

static int scratch_guard_ok(const rcoll_task_t *task)
{
    const unsigned char *g = (const unsigned char *)task->scratch + task->scratch_size;
    for (int i = 0; task->scratch && i < GUARD; i++) {
        if (g[i] != GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}

__thread rcoll_log_state_t rcoll__log = { .level = RCOLL_LOG_ERROR, .rank = -1 };

void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[sim] %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Deliver one random ready pair. */
static void deliver_one(sim_t *s, long sweep)
{
    size_t k = sim_rand(s) % s->nready;
    sim_op_t *sd = &s->table[s->ready[2 * k]], *rv = &s->table[s->ready[2 * k + 1]];
    s->nready--;
    s->ready[2 * k] = s->ready[2 * s->nready];
    s->ready[2 * k + 1] = s->ready[2 * s->nready + 1];
    if (sd->len != rv->len) {
        sim_fail(s, "rank %d -> %d step %u: send of %zu bytes, receive of %zu", sd->src, sd->dst,
                 sd->step, sd->len, rv->len);
        return;
    }
    if (sd->copy == NULL && checksum(sd->sbuf, sd->len) != sd->sum) {
        sim_fail(s, "rank %d -> %d step %u: send buffer changed while in flight", sd->src,
                 sd->dst, sd->step);
        return;
    }
    if (sd->len) {
        memcpy(rv->rbuf, sd->copy ? sd->copy : sd->sbuf, sd->len);
    }
    if (sd->copy != NULL) {
        free(sd->copy);
        sd->copy = NULL;
    } else {
        s->ranks[sd->src].pending--;
    }
    s->ranks[rv->dst].pending--;
    s->res->messages++;
    s->events++;
    if (s->cfg->trace != NULL) {
        s->cfg->trace(s->cfg->trace_arg, sd->src, sd->dst, sd->step, sd->len, sweep);
    }
}

static int unmatched_report(sim_t *s)
{
    for (size_t i = 0; i < s->tsize; i++) {
        sim_op_t *o = &s->table[i];
        if (o->kind != 0 && o->open) {
            return sim_fail(s, "rank %d -> %d step %u (%zu bytes): a %s never matched", o->src,
                            o->dst, o->step, o->len, kind_name(o->kind)), -1;
        }
    }
    return 0;
}

/* One sweep: every started rank that is not done progresses once, in random order. */
static int sweep_ranks(sim_t *s, rcoll_task_t *tasks, int *order, long sweep, int *ndone,
                       int *all_started)
{
    const sim_config_t *cfg = s->cfg;
    *all_started = 1;
    for (int r = cfg->p - 1; r > 0; r--) {
        int k = (int)(sim_rand(s) % (unsigned)(r + 1)), t = order[r];
        order[r] = order[k];
        order[k] = t;
    }
    for (int i = 0; i < cfg->p; i++) {
        int r = order[i];
        if (s->ranks[r].done) {
            continue;
        }
        long start = cfg->start_sweep ? cfg->start_sweep[r] : 0;
        if (start > sweep) {
            *all_started = 0;
            continue;
        }
        if (start == sweep && start > s->res->last_start) {
            s->res->last_start = start;
            s->events++;
        }
        rcoll_status_t st = tasks[r].alg->progress(&tasks[r]);
        if (st == RCOLL_OK) {
            if (s->ranks[r].pending != 0) {
                sim_fail(s, "rank %d finished with %d ops pending", r, s->ranks[r].pending);
                return -1;
            }
            s->ranks[r].done = 1;
            (*ndone)++;
            s->events++;
            if (s->res->first_done < 0) {
                s->res->first_done = sweep;
            }
        } else if (st != RCOLL_INPROGRESS) {
            sim_fail(s, "rank %d: progress returned %s in phase %d", r, rcoll_strerror(st),
                     tasks[r].phase);
            return -1;
        }
        if (s->res->failure[0] != '\0') {
            return -1;
        }
    }
    return 0;
}

static int drive(sim_t *s, rcoll_task_t *tasks, int *order)
{
    int ndone = 0, idle = 0, all_started;
    for (long sweep = 0; ndone < s->cfg->p; sweep++) {
        long before = s->events;
        s->res->sweeps = sweep + 1;
        if (sweep_ranks(s, tasks, order, sweep, &ndone, &all_started) != 0) {
            return -1;
        }
        /* a random number of deliveries, sometimes none; more when many are ready */
        size_t k = sim_rand(s) % 4;
        if (s->nready > 16) {
            k += sim_rand(s) % (s->nready / 4);
        }
        for (; k > 0 && s->nready > 0 && s->res->failure[0] == '\0'; k--) {
            deliver_one(s, sweep);
        }
        if (s->events == before && s->nready > 0) {
            deliver_one(s, sweep);
        }
        if (s->res->failure[0] != '\0') {
            return -1;
        }
        idle = s->events == before && all_started ? idle + 1 : 0;
        if (idle > 2) {
            return sim_fail(s, "deadlock: %d of %d ranks done, nothing can move", ndone,
                            s->cfg->p), -1;
        }
    }
    return unmatched_report(s);
}

int sim_run(const sim_config_t *cfg, const rcoll_alg_t *alg, const rcoll_coll_args_t *args,
            sim_result_t *res)
{
    sim_t *s = calloc(1, sizeof(*s));
    rcoll_comm_t *comms = calloc((size_t)cfg->p, sizeof(*comms));
    rcoll_task_t *tasks = calloc((size_t)cfg->p, sizeof(*tasks));
    int *order = calloc((size_t)cfg->p, sizeof(int));
    memset(res, 0, sizeof(*res));
    res->first_done = -1;
    if (s == NULL || comms == NULL || tasks == NULL || order == NULL ||
        (s->ranks = calloc((size_t)cfg->p, sizeof(*s->ranks))) == NULL) {
        snprintf(res->failure, sizeof(res->failure), "simulator out of memory for %d ranks", cfg->p);
        free(s); free(comms); free(tasks); free(order);
        return -1;
    }
    s->cfg = cfg;
    s->res = res;
    s->rng = cfg->seed;
    s->ctx.config.segment_size = cfg->segment_size;
    s->ctx.size = cfg->p;
    for (int r = 0; r < cfg->p; r++) {
        comms[r] = (rcoll_comm_t){ .ctx = &s->ctx, .rank = r, .size = cfg->p };
        tasks[r].ctx = &s->ctx;
        tasks[r].comm = &comms[r];
        tasks[r].args = args[r];
        tasks[r].alg = alg;
        order[r] = r;
    }
    int rc = drive(s, tasks, order);
    for (size_t i = 0; i < s->tsize; i++) {
        free(s->table[i].copy);
    }
    for (int r = 0; r < cfg->p; r++) {
        if (rc == 0 && !scratch_guard_ok(&tasks[r])) {
            sim_fail(s, "%s: rank %d wrote past the end of its scratch buffer", alg->name, r);
            rc = -1;
        }
        free(tasks[r].scratch);
    }
    free(s->table);
    free(s->ready);
    free(s->ranks);
    free(s);
    free(comms);
    free(tasks);
    free(order);
    return rc;
}
