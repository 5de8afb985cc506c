/*
 * test_coll_sim.c - runs the bcast, allgather and barrier algorithms on p
 * simulated ranks in one process, over a fake point-to-point layer that
 * replaces core's rcoll_task_send/recv/test/scratch.
 *
 * The fake checks what the real transport relies on: a receive's length
 * equals the matching send's, (peer, step) names one message per direction,
 * at most RCOLL_TASK_MAX_OPS ops between successful tests, no message to
 * oneself or to a rank outside the communicator, and nothing left unmatched
 * at the end.  Messages are delivered in random order after random delays,
 * in two modes: eager (data copied when posted, the send completes at once)
 * and rendezvous (data read from the sender's buffer when matched, the send
 * completes then).  Ranks are progressed in random order; a round in which
 * nothing can happen is a deadlock.  Results are compared byte for byte with
 * expectations computed locally.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core.h"

#define MAXP    17
#define MAXOPS  4096

extern const rcoll_alg_t *const rcoll_bcast_algs[];
extern const rcoll_alg_t *const rcoll_allgather_algs[];
extern const rcoll_alg_t *const rcoll_barrier_algs[];

/* The shared-memory algorithms need real processes sharing a segment; the
 * integration tests run them.  Here they are placeholders that are skipped. */
const rcoll_alg_t rcoll_bcast_shm = { .name = "shm", .coll = RCOLL_COLL_BCAST };
const rcoll_alg_t rcoll_barrier_shm = { .name = "shm", .coll = RCOLL_COLL_BARRIER };
const rcoll_alg_t rcoll_allgather_shm = { .name = "shm", .coll = RCOLL_COLL_ALLGATHER };
#define SIMULATED(_a) ((_a)->progress != NULL)

/* ---- fake core ---- */

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

size_t rcoll_datatype_size(rcoll_datatype_t dtype)
{
    static const size_t sz[] = { 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8 };
    return (unsigned)dtype < sizeof(sz) / sizeof(sz[0]) ? sz[dtype] : 0;
}

typedef struct {
    int           kind;       /* RCOLL_P2P_SEND / RECV */
    int           src, dst;   /* ranks */
    uint32_t      step;
    const void   *sbuf;
    void         *rbuf;
    void         *copy;       /* eager send: the data at post time */
    size_t        len;
    int           done, matched;
    int           batch;      /* the posting task's test batch */
} sim_op_t;

static struct {
    int          p;
    int          rndv;          /* 1: sends read their buffer at match time */
    unsigned     seed;
    sim_op_t     ops[MAXOPS];
    int          nops;
    int          batch_ops[MAXP];   /* ops posted since the last OK test */
    int          batch[MAXP];
    long         events;
    char         failure[512];
} sim;

static rcoll_task_t      tasks[MAXP];
static rcoll_comm_t      comms[MAXP];
static rcoll_context_t   ctxs[MAXP];

static unsigned sim_rand(void)
{
    sim.seed = sim.seed * 1103515245u + 12345u;
    return (sim.seed >> 16) & 0x7fff;
}

static rcoll_status_t sim_fail(const char *fmt, ...)
{
    va_list ap;
    if (sim.failure[0] == '\0') {
        va_start(ap, fmt);
        vsnprintf(sim.failure, sizeof(sim.failure), fmt, ap);
        va_end(ap);
    }
    return RCOLL_ERR_INTERNAL;
}

static rcoll_status_t sim_post(rcoll_task_t *task, int kind, int peer, uint32_t step,
                               const void *sbuf, void *rbuf, size_t len)
{
    int me = task->comm->rank;
    sim_op_t *op;

    if (peer < 0 || peer >= sim.p || peer == me)
        return sim_fail("rank %d posts a %s with bad peer %d (step %u)", me,
                        kind == RCOLL_P2P_SEND ? "send" : "recv", peer, step);
    if (sim.batch_ops[me] >= RCOLL_TASK_MAX_OPS)
        return sim_fail("rank %d: more than %d ops between tests", me, RCOLL_TASK_MAX_OPS);
    if (sim.nops >= MAXOPS)
        return sim_fail("simulator op table full");
    if (len > 0 && (kind == RCOLL_P2P_SEND ? sbuf == NULL : rbuf == NULL))
        return sim_fail("rank %d: NULL buffer with %zu bytes", me, len);
    for (int i = 0; i < sim.nops; i++) {
        sim_op_t *o = &sim.ops[i];
        if (o->kind == kind && o->src == (kind == RCOLL_P2P_SEND ? me : peer) &&
            o->dst == (kind == RCOLL_P2P_SEND ? peer : me) && o->step == step)
            return sim_fail("rank %d: second %s with peer %d step %u", me,
                            kind == RCOLL_P2P_SEND ? "send" : "recv", peer, step);
    }
    op = &sim.ops[sim.nops++];
    memset(op, 0, sizeof(*op));
    op->kind = kind;
    op->src = kind == RCOLL_P2P_SEND ? me : peer;
    op->dst = kind == RCOLL_P2P_SEND ? peer : me;
    op->step = step;
    op->sbuf = sbuf;
    op->rbuf = rbuf;
    op->len = len;
    op->batch = sim.batch[me];
    if (kind == RCOLL_P2P_SEND && !sim.rndv) {
        op->copy = malloc(len ? len : 1);
        if (len)
            memcpy(op->copy, sbuf, len);
        op->done = 1;
    }
    sim.batch_ops[me]++;
    sim.events++;
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
    int me = task->comm->rank;
    if (sim.failure[0] != '\0')
        return RCOLL_ERR_INTERNAL;
    for (int i = 0; i < sim.nops; i++) {
        sim_op_t *o = &sim.ops[i];
        int mine = (o->kind == RCOLL_P2P_SEND ? o->src : o->dst) == me;
        if (mine && o->batch == sim.batch[me] && !o->done)
            return RCOLL_INPROGRESS;
    }
    sim.batch[me]++;
    sim.batch_ops[me] = 0;
    return RCOLL_OK;
}

/* Scratch with a guard zone behind it, checked when the collective ends. */
#define GUARD 256

void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    if (task->scratch_size < size) {
        free(task->scratch);
        task->scratch = malloc(size + GUARD);
        task->scratch_size = task->scratch ? size : 0;
        if (task->scratch)
            memset((char *)task->scratch + size, 0x5A, GUARD);
    }
    return task->scratch;
}

static int scratch_guard_ok(const rcoll_task_t *task)
{
    const unsigned char *g = (const unsigned char *)task->scratch + task->scratch_size;
    for (int i = 0; task->scratch && i < GUARD; i++)
        if (g[i] != 0x5A)
            return 0;
    return 1;
}

/* Match one random pending send with its receive; returns 1 if it did. */
static int sim_deliver(void)
{
    int cand[MAXOPS], n = 0;

    for (int i = 0; i < sim.nops; i++)
        if (sim.ops[i].kind == RCOLL_P2P_SEND && !sim.ops[i].matched)
            cand[n++] = i;
    while (n > 0) {
        int k = (int)(sim_rand() % (unsigned)n);
        sim_op_t *s = &sim.ops[cand[k]];
        for (int j = 0; j < sim.nops; j++) {
            sim_op_t *r = &sim.ops[j];
            if (r->kind != RCOLL_P2P_RECV || r->matched || r->src != s->src || r->dst != s->dst ||
                r->step != s->step)
                continue;
            if (r->len != s->len) {
                sim_fail("rank %d -> %d step %u: send of %zu bytes, receive of %zu", s->src,
                         s->dst, s->step, s->len, r->len);
                return 0;
            }
            if (s->len)
                memcpy(r->rbuf, s->copy ? s->copy : s->sbuf, s->len);
            r->matched = r->done = 1;
            s->matched = s->done = 1;
            free(s->copy);
            s->copy = NULL;
            sim.events++;
            return 1;
        }
        cand[k] = cand[--n];
    }
    return 0;
}

static void sim_setup(int p, const rcoll_coll_args_t *args, const rcoll_alg_t *alg,
                      size_t segment, int rndv, unsigned seed)
{
    memset(&sim, 0, sizeof(sim));
    sim.p = p;
    sim.rndv = rndv;
    sim.seed = seed;
    for (int r = 0; r < p; r++) {
        memset(&ctxs[r], 0, sizeof(ctxs[r]));
        ctxs[r].config.segment_size = segment;
        ctxs[r].rank = r;
        ctxs[r].size = p;
        memset(&comms[r], 0, sizeof(comms[r]));
        comms[r].ctx = &ctxs[r];
        comms[r].rank = r;
        comms[r].size = p;
        memset(&tasks[r], 0, sizeof(tasks[r]));
        tasks[r].ctx = &ctxs[r];
        tasks[r].comm = &comms[r];
        tasks[r].args = args[r];
        tasks[r].alg = alg;
    }
}

/* Run until every rank returns OK.  start_sweep[r]: the sweep at which rank r
 * enters the collective (NULL: all at once).  Returns 0, or -1 with
 * sim.failure set.  *last_start / first_done: sweeps, for the barrier. */
static int sim_run(const int *start_sweep, int *last_start, int *first_done)
{
    int done[MAXP] = { 0 }, ndone = 0, idle = 0;

    *last_start = 0;
    *first_done = -1;
    for (int sweep = 0; ndone < sim.p; sweep++) {
        long before = sim.events;
        int order[MAXP], started = 0;

        for (int r = 0; r < sim.p; r++)
            order[r] = r;
        for (int r = sim.p - 1; r > 0; r--) {
            int k = (int)(sim_rand() % (unsigned)(r + 1)), t = order[r];
            order[r] = order[k];
            order[k] = t;
        }
        for (int i = 0; i < sim.p; i++) {
            int r = order[i];
            rcoll_status_t st;
            if (done[r])
                continue;
            if (start_sweep && start_sweep[r] > sweep)
                continue;
            if (start_sweep && start_sweep[r] == sweep) {
                *last_start = sweep;
                started = 1;
            }
            st = tasks[r].alg->progress(&tasks[r]);
            if (st == RCOLL_OK) {
                done[r] = 1;
                ndone++;
                sim.events++;
                if (*first_done < 0)
                    *first_done = sweep;
            } else if (st != RCOLL_INPROGRESS) {
                sim_fail("rank %d: progress returned %d in phase %d", r, st, tasks[r].phase);
                return -1;
            }
        }
        if (sim.failure[0])
            return -1;
        /* deliver a random number of messages, sometimes none */
        for (int k = (int)(sim_rand() % 4); k > 0; k--)
            sim_deliver();
        if (sim.failure[0])
            return -1;
        if (sim.events == before && !started) {
            int more = sim_deliver();
            if (sim.failure[0])
                return -1;
            if (!more && (start_sweep == NULL || sweep > 64 * MAXP) && ++idle > 2)
                return sim_fail("deadlock: %d of %d ranks done, nothing can move", ndone, sim.p), -1;
        } else {
            idle = 0;
        }
    }
    for (int i = 0; i < sim.nops; i++)
        if (!sim.ops[i].matched)
            return sim_fail("rank %d -> %d step %u (%zu bytes) never matched", sim.ops[i].src,
                            sim.ops[i].dst, sim.ops[i].step, sim.ops[i].len), -1;
    return 0;
}

static void sim_cleanup(void)
{
    for (int i = 0; i < sim.nops; i++)
        free(sim.ops[i].copy);
    for (int r = 0; r < sim.p; r++) {
        if (!scratch_guard_ok(&tasks[r]))
            fail_msg("%s: rank %d wrote past the end of its scratch buffer", tasks[r].alg->name, r);
        free(tasks[r].scratch);
        tasks[r].scratch = NULL;
    }
}

static unsigned char pattern(int rank, size_t i)
{
    return (unsigned char)((i * 131u + (size_t)rank * 7u + 1u) & 0xff);
}

/* ---- bcast ---- */

static void run_bcast(const rcoll_alg_t *alg, int p, int root, size_t count,
                      rcoll_datatype_t dtype, size_t segment, int rndv, unsigned seed)
{
    size_t n = count * rcoll_datatype_size(dtype);
    rcoll_coll_args_t args[MAXP];
    unsigned char *buf[MAXP];
    int a, b;

    memset(args, 0, sizeof(args));

    for (int r = 0; r < p; r++) {
        buf[r] = malloc(n);
        assert_non_null(buf[r]);
        for (size_t i = 0; i < n; i++)
            buf[r][i] = r == root ? pattern(root, i) : 0xEE;
        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BCAST, .sendbuf = buf[r],
                                       .recvbuf = buf[r], .count = count, .dtype = dtype,
                                       .root = root, .in_place = 1 };
    }
    sim_setup(p, args, alg, segment, rndv, seed);
    if (sim_run(NULL, &a, &b) != 0)
        fail_msg("bcast %s p=%d root=%d count=%zu seg=%zu %s: %s", alg->name, p, root, count,
                 segment, rndv ? "rndv" : "eager", sim.failure);
    for (int r = 0; r < p; r++) {
        for (size_t i = 0; i < n; i++)
            if (buf[r][i] != pattern(root, i))
                fail_msg("bcast %s p=%d root=%d count=%zu seg=%zu: rank %d byte %zu is %u, "
                         "expected %u", alg->name, p, root, count, segment, r, i, buf[r][i],
                         pattern(root, i));
        free(buf[r]);
    }
    sim_cleanup();
}

static void test_bcast(void **state)
{
    const size_t counts[] = { 1, 2, 3, 7, 16, 17, 1023, 4099 };
    const size_t segs[] = { 0, 1, 5, 64, 1000 };
    unsigned seed = 1;

    for (const rcoll_alg_t *const *a = rcoll_bcast_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (int root = 0; root < p; root++)
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                    size_t seg = segs[(seed / 2) % (sizeof(segs) / sizeof(segs[0]))];
                    if (seg && counts[c] / seg > 100)   /* keeps the op table small */
                        seg = counts[c] / 100 + 1;
                    run_bcast(*a, p, root, counts[c], RCOLL_UINT8, seg, (int)(seed & 1), seed);
                    seed++;
                }
}

/* count < p (empty scatter blocks), wide types, every segment size */
static void test_bcast_edges(void **state)
{
    unsigned seed = 99;
    for (const rcoll_alg_t *const *a = rcoll_bcast_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 2; p <= MAXP; p += 3)
            for (size_t count = 1; count <= (size_t)p + 1; count++)
                for (int rndv = 0; rndv < 2; rndv++) {
                    run_bcast(*a, p, (int)(count % (size_t)p), count, RCOLL_FLOAT64,
                              (size_t)(count % 3) * 8, rndv, seed++);
                    run_bcast(*a, p, p - 1, count, RCOLL_UINT8, 1, rndv, seed++);
                }
}

/* ---- allgather ---- */

static void run_allgather(const rcoll_alg_t *alg, int p, size_t count, rcoll_datatype_t dtype,
                          int in_place, int rndv, unsigned seed)
{
    size_t blk = count * rcoll_datatype_size(dtype);
    rcoll_coll_args_t args[MAXP];
    unsigned char *send[MAXP], *recv[MAXP];
    int a, b;

    memset(args, 0, sizeof(args));

    for (int r = 0; r < p; r++) {
        send[r] = malloc(blk);
        recv[r] = malloc(blk * (size_t)p);
        assert_true(send[r] && recv[r]);
        memset(recv[r], 0xEE, blk * (size_t)p);
        for (size_t i = 0; i < blk; i++) {
            send[r][i] = pattern(r, i);
            if (in_place)
                recv[r][(size_t)r * blk + i] = pattern(r, i);
        }
        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLGATHER,
                                       .sendbuf = in_place ? recv[r] : send[r],
                                       .recvbuf = recv[r], .count = count, .dtype = dtype,
                                       .in_place = in_place };
    }
    sim_setup(p, args, alg, 0, rndv, seed);
    if (sim_run(NULL, &a, &b) != 0)
        fail_msg("allgather %s p=%d count=%zu %s %s: %s", alg->name, p, count,
                 in_place ? "in place" : "", rndv ? "rndv" : "eager", sim.failure);
    for (int r = 0; r < p; r++) {
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < blk; i++)
                if (recv[r][(size_t)j * blk + i] != pattern(j, i))
                    fail_msg("allgather %s p=%d count=%zu%s: rank %d block %d byte %zu is %u, "
                             "expected %u", alg->name, p, count, in_place ? " in place" : "", r,
                             j, i, recv[r][(size_t)j * blk + i], pattern(j, i));
        for (size_t i = 0; i < blk; i++)
            if (send[r][i] != pattern(r, i))
                fail_msg("allgather %s: rank %d's send buffer was modified", alg->name, r);
        free(send[r]);
        free(recv[r]);
    }
    sim_cleanup();
}

static void test_allgather(void **state)
{
    const size_t counts[] = { 1, 3, 100, 1025 };
    unsigned seed = 7;

    for (const rcoll_alg_t *const *a = rcoll_allgather_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int in_place = 0; in_place < 2; in_place++)
                    for (int rndv = 0; rndv < 2; rndv++) {
                        run_allgather(*a, p, counts[c], c % 2 ? RCOLL_INT32 : RCOLL_UINT8,
                                      in_place, rndv, seed);
                        seed++;
                    }
}

/* ---- barrier ---- */

static void test_barrier(void **state)
{
    unsigned seed = 3;
    for (const rcoll_alg_t *const *a = rcoll_barrier_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (int late = 0; late < p; late++)
                for (int rndv = 0; rndv < 2; rndv++) {
                    rcoll_coll_args_t args[MAXP];
                    int start[MAXP], last_start, first_done;
                    for (int r = 0; r < p; r++) {
                        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BARRIER };
                        start[r] = r == late ? 40 : (int)(r % 3);
                    }
                    sim_setup(p, args, *a, 0, rndv, seed++);
                    if (sim_run(start, &last_start, &first_done) != 0)
                        fail_msg("barrier %s p=%d late rank %d: %s", (*a)->name, p, late,
                                 sim.failure);
                    if (first_done < last_start)
                        fail_msg("barrier %s p=%d: a rank left at sweep %d before rank %d "
                                 "entered at sweep %d", (*a)->name, p, first_done, late,
                                 last_start);
                    sim_cleanup();
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcast),
        cmocka_unit_test(test_bcast_edges),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
