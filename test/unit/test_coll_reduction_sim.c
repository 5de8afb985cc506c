/*
 * test_coll_reduction_sim.c - runs the reduction algorithms themselves
 * (allreduce, reduce, reduce_scatter) for p = 2..17 simulated ranks in one
 * process, over a fake point-to-point layer that delivers messages in a
 * random order and reads a send buffer only when the message is delivered
 * (as rendezvous does).  It checks the results against locally computed
 * expectations and checks the algorithms' use of the task interface: the
 * sender's and receiver's lengths agree, (peer, step) is never reused within
 * a collective, at most RCOLL_TASK_MAX_OPS ops between two successful tests,
 * and a send buffer is not written while its message is in flight.
 *
 * The fake layer replaces rcoll_task_send/recv/test/scratch and logging, so
 * this test is linked from the algorithm sources, not from librcoll.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core.h"
#include "reduce.h"

#define PMAX 17
#define MAXMSG 65536

/* ---- the fake point-to-point layer ---- */

typedef struct {
    int src, dst;
    uint32_t step;
    const void *buf;
    size_t len;
    uint64_t sum;        /* checksum of buf at post time */
    int done;
} sim_send_t;

typedef struct {
    int src, dst;
    uint32_t step;
    void *buf;
    size_t len;
    int done;
} sim_recv_t;

static sim_send_t sends[MAXMSG];
static sim_recv_t recvs[MAXMSG];
static int nsends, nrecvs;
static int pending[PMAX], nops_since_ok[PMAX];
static unsigned rng = 12345;
static char failure[512];

static unsigned rnd(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
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

static void sim_fail(const char *fmt, ...)
{
    va_list ap;

    if (failure[0]) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(failure, sizeof(failure), fmt, ap);
    va_end(ap);
}

static int check_op(rcoll_task_t *task, int peer, size_t len)
{
    int me = task->comm->rank;

    if (peer < 0 || peer >= task->comm->size || peer == me) {
        sim_fail("rank %d: bad peer %d", me, peer);
        return -1;
    }
    if (len == 0) {
        sim_fail("rank %d: zero-length message to/from %d", me, peer);
    }
    if (++nops_since_ok[me] > RCOLL_TASK_MAX_OPS) {
        sim_fail("rank %d: more than %d ops between two tests", me, RCOLL_TASK_MAX_OPS);
        return -1;
    }
    if (nsends >= MAXMSG || nrecvs >= MAXMSG) {
        sim_fail("too many messages");
        return -1;
    }
    pending[me]++;
    return 0;
}

rcoll_status_t rcoll_task_send(rcoll_task_t *task, int peer, uint32_t step, const void *buf, size_t len)
{
    int me = task->comm->rank;

    if (check_op(task, peer, len) != 0) {
        return RCOLL_ERR_INTERNAL;
    }
    for (int i = 0; i < nsends; i++) {
        if (sends[i].src == me && sends[i].dst == peer && sends[i].step == step) {
            sim_fail("rank %d: second send to %d with step %u", me, peer, step);
        }
    }
    sends[nsends++] = (sim_send_t){ me, peer, step, buf, len, checksum(buf, len), 0 };
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_recv(rcoll_task_t *task, int peer, uint32_t step, void *buf, size_t len)
{
    int me = task->comm->rank;

    if (check_op(task, peer, len) != 0) {
        return RCOLL_ERR_INTERNAL;
    }
    for (int i = 0; i < nrecvs; i++) {
        if (recvs[i].dst == me && recvs[i].src == peer && recvs[i].step == step) {
            sim_fail("rank %d: second receive from %d with step %u", me, peer, step);
        }
    }
    recvs[nrecvs++] = (sim_recv_t){ peer, me, step, buf, len, 0 };
    return RCOLL_OK;
}

rcoll_status_t rcoll_task_test(rcoll_task_t *task)
{
    int me = task->comm->rank;

    if (pending[me] > 0) {
        return RCOLL_INPROGRESS;
    }
    nops_since_ok[me] = 0;
    return RCOLL_OK;
}

void *rcoll_task_scratch(rcoll_task_t *task, size_t size)
{
    if (task->scratch_size >= size && task->scratch != NULL) {
        return task->scratch;
    }
    free(task->scratch);
    task->scratch = malloc(size ? size : 1);
    task->scratch_size = size;
    return task->scratch;
}

__thread rcoll_log_state_t rcoll__log = { .level = RCOLL_LOG_ERROR, .rank = -1 };

void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    (void)level;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Deliver one random matching pair; 0 if none can be delivered. */
static int deliver_one(void)
{
    int cand[MAXMSG], n = 0;

    for (int r = 0; r < nrecvs; r++) {
        if (!recvs[r].done) {
            cand[n++] = r;
        }
    }
    while (n > 0) {
        int k = (int)(rnd() % (unsigned)n), r = cand[k];
        sim_recv_t *rv = &recvs[r];
        for (int s = 0; s < nsends; s++) {
            sim_send_t *sd = &sends[s];
            if (sd->done || sd->src != rv->src || sd->dst != rv->dst || sd->step != rv->step) {
                continue;
            }
            if (sd->len != rv->len) {
                sim_fail("rank %d -> %d step %u: sent %zu bytes, receive posted for %zu", sd->src,
                     sd->dst, sd->step, sd->len, rv->len);
            }
            if (checksum(sd->buf, sd->len) != sd->sum) {
                sim_fail("rank %d -> %d step %u: send buffer changed while in flight", sd->src,
                     sd->dst, sd->step);
            }
            memcpy(rv->buf, sd->buf, sd->len < rv->len ? sd->len : rv->len);
            sd->done = rv->done = 1;
            pending[sd->src]--;
            pending[sd->dst]--;
            return 1;
        }
        cand[k] = cand[--n];
    }
    return 0;
}

/* ---- running one collective on p simulated ranks ---- */

static rcoll_context_t ctxs[PMAX];
static rcoll_comm_t comms[PMAX];
static rcoll_task_t *tasks[PMAX];

static int run_sim(const rcoll_alg_t *alg, int p, const rcoll_coll_args_t *args, size_t segsize)
{
    int done[PMAX] = { 0 }, ndone = 0, idle = 0;

    nsends = nrecvs = 0;
    failure[0] = 0;
    for (int r = 0; r < p; r++) {
        memset(&ctxs[r], 0, sizeof(ctxs[r]));
        ctxs[r].config.segment_size = segsize;
        comms[r] = (rcoll_comm_t){ .ctx = &ctxs[r], .rank = r, .size = p };
        tasks[r] = calloc(1, sizeof(rcoll_task_t));
        tasks[r]->ctx = &ctxs[r];
        tasks[r]->comm = &comms[r];
        tasks[r]->args = args[r];
        tasks[r]->alg = alg;
        pending[r] = nops_since_ok[r] = 0;
    }
    while (ndone < p && !failure[0]) {
        int progressed = 0;
        for (int i = 0; i < p; i++) {
            int r = (int)(rnd() % (unsigned)p);
            if (done[r]) {
                continue;
            }
            rcoll_status_t st = alg->progress(tasks[r]);
            if (st == RCOLL_OK) {
                if (pending[r] != 0) {
                    sim_fail("rank %d finished with %d ops pending", r, pending[r]);
                }
                done[r] = 1;
                ndone++;
                progressed = 1;
            } else if (st != RCOLL_INPROGRESS) {
                sim_fail("rank %d: progress returned %s", r, rcoll_strerror(st));
            }
        }
        int k = (int)(rnd() % 4);
        for (int i = 0; i <= k; i++) {
            progressed |= deliver_one();
        }
        idle = progressed ? 0 : idle + 1;
        if (idle > 50) {
            sim_fail("deadlock: %d of %d ranks finished, nothing deliverable", ndone, p);
        }
    }
    for (int s = 0; s < nsends && !failure[0]; s++) {
        if (!sends[s].done) {
            sim_fail("rank %d -> %d step %u: message never received", sends[s].src, sends[s].dst,
                 sends[s].step);
        }
    }
    for (int r = 0; r < p; r++) {
        free(tasks[r]->scratch);
        free(tasks[r]);
    }
    if (failure[0]) {
        print_error("%s p=%d count=%zu: %s\n", alg->name, p, args[0].count, failure);
        return -1;
    }
    return 0;
}

/* Input element i of rank r: small integers, so any order gives the same sum. */
static int32_t input(int r, size_t i)
{
    return (int32_t)((r * 7 + i * 13) % 101) - 50;
}

static const size_t counts[] = { 1, 2, 3, 7, 16, 17, 100, 1023 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
static const size_t segsizes[] = { 0, 4, 12, 64 };

/* The algorithms under test (the tables in collectives/ also list algorithms
 * that need real processes, such as shm, so the test keeps its own). */
extern const rcoll_alg_t rcoll_allreduce_recursive_doubling, rcoll_allreduce_ring,
    rcoll_allreduce_rabenseifner, rcoll_allreduce_reduce_bcast, rcoll_reduce_binomial,
    rcoll_reduce_reduce_scatter_gather, rcoll_reduce_scatter_recursive_halving,
    rcoll_reduce_scatter_ring;
static const rcoll_alg_t *const allreduce_algs[] = {
    &rcoll_allreduce_recursive_doubling, &rcoll_allreduce_ring, &rcoll_allreduce_rabenseifner,
    &rcoll_allreduce_reduce_bcast, NULL
};
static const rcoll_alg_t *const reduce_algs[] = {
    &rcoll_reduce_binomial, &rcoll_reduce_reduce_scatter_gather, NULL
};
static const rcoll_alg_t *const reduce_scatter_algs[] = {
    &rcoll_reduce_scatter_recursive_halving, &rcoll_reduce_scatter_ring, NULL
};

static const rcoll_alg_t *find(const rcoll_alg_t *const *table, const char *name)
{
    for (; *table != NULL; table++) {
        if (strcmp((*table)->name, name) == 0) {
            return *table;
        }
    }
    fail_msg("algorithm %s not in its table", name);
    return NULL;
}

static void allreduce_case(const char *name)
{
    const rcoll_alg_t *alg = find(allreduce_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                size_t n = counts[c];
                int32_t *in[PMAX], *out[PMAX];
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(n * 4);
                    out[r] = malloc(n * 4);
                    for (size_t i = 0; i < n; i++) {
                        in[r][i] = input(r, i);
                        out[r][i] = inplace ? in[r][i] : 0x55555555;
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLREDUCE,
                        .sendbuf = inplace ? out[r] : in[r], .recvbuf = out[r], .count = n,
                        .dtype = RCOLL_INT32, .op = RCOLL_SUM, .in_place = inplace };
                }
                assert_int_equal(run_sim(alg, p, args, segsizes[(p + c) % 4]), 0);
                for (int r = 0; r < p; r++) {
                    for (size_t i = 0; i < n; i++) {
                        int32_t e = 0;
                        for (int q = 0; q < p; q++) {
                            e += input(q, i);
                        }
                        if (out[r][i] != e) {
                            fail_msg("allreduce %s p=%d n=%zu inplace=%d: rank %d elem %zu = %d, expected %d",
                                     name, p, n, inplace, r, i, out[r][i], e);
                        }
                        if (!inplace && in[r][i] != input(r, i)) {
                            fail_msg("allreduce %s: sendbuf changed", name);
                        }
                    }
                    free(in[r]);
                    free(out[r]);
                }
            }
        }
    }
}

static void test_allreduce_recursive_doubling(void **s) { (void)s; allreduce_case("recursive_doubling"); }
static void test_allreduce_ring(void **s)               { (void)s; allreduce_case("ring"); }
static void test_allreduce_rabenseifner(void **s)       { (void)s; allreduce_case("rabenseifner"); }
static void test_allreduce_reduce_bcast(void **s)       { (void)s; allreduce_case("reduce_bcast"); }

static void reduce_case(const char *name)
{
    const rcoll_alg_t *alg = find(reduce_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < NCOUNTS; c++) {
            for (int root = 0; root < p; root++) {
                size_t n = counts[c];
                int inplace = (root + (int)c) % 2;
                int32_t *in[PMAX], *out = malloc(n * 4);
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(n * 4);
                    for (size_t i = 0; i < n; i++) {
                        in[r][i] = input(r, i);
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_REDUCE, .sendbuf = in[r],
                        .recvbuf = NULL, .count = n, .dtype = RCOLL_INT32, .op = RCOLL_SUM,
                        .root = root };
                }
                for (size_t i = 0; i < n; i++) {
                    out[i] = inplace ? in[root][i] : 0x55555555;
                }
                args[root].recvbuf = out;
                if (inplace) {
                    args[root].sendbuf = out;
                    args[root].in_place = 1;
                }
                assert_int_equal(run_sim(alg, p, args, 0), 0);
                for (size_t i = 0; i < n; i++) {
                    int32_t e = 0;
                    for (int q = 0; q < p; q++) {
                        e += input(q, i);
                    }
                    if (out[i] != e) {
                        fail_msg("reduce %s p=%d n=%zu root=%d: elem %zu = %d, expected %d",
                                 name, p, n, root, i, out[i], e);
                    }
                }
                for (int r = 0; r < p; r++) {
                    free(in[r]);
                }
                free(out);
            }
        }
    }
}

static void test_reduce_binomial(void **s)              { (void)s; reduce_case("binomial"); }
static void test_reduce_reduce_scatter_gather(void **s) { (void)s; reduce_case("reduce_scatter_gather"); }

static void reduce_scatter_case(const char *name)
{
    const rcoll_alg_t *alg = find(reduce_scatter_algs, name);

    for (int p = 2; p <= PMAX; p++) {   /* the core runs no algorithm on 1 rank (src/task.c) */
        for (size_t c = 0; c < 5; c++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                size_t rc = counts[c], tot = rc * (size_t)p;
                int32_t *in[PMAX], *out[PMAX];
                rcoll_coll_args_t args[PMAX];
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(tot * 4);
                    out[r] = malloc(tot * 4);
                    for (size_t i = 0; i < tot; i++) {
                        in[r][i] = input(r, i);
                        out[r][i] = inplace ? in[r][i] : 0x55555555;
                    }
                    args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_REDUCE_SCATTER,
                        .sendbuf = inplace ? out[r] : in[r], .recvbuf = out[r], .count = rc,
                        .dtype = RCOLL_INT32, .op = RCOLL_SUM, .in_place = inplace };
                }
                assert_int_equal(run_sim(alg, p, args, segsizes[(p + c) % 4]), 0);
                for (int r = 0; r < p; r++) {
                    for (size_t i = 0; i < rc; i++) {
                        int32_t e = 0;
                        for (int q = 0; q < p; q++) {
                            e += input(q, (size_t)r * rc + i);
                        }
                        if (out[r][i] != e) {
                            fail_msg("reduce_scatter %s p=%d rc=%zu inplace=%d: rank %d elem %zu = %d, expected %d",
                                     name, p, rc, inplace, r, i, out[r][i], e);
                        }
                    }
                    free(in[r]);
                    free(out[r]);
                }
            }
        }
    }
}

static void test_reduce_scatter_recursive_halving(void **s) { (void)s; reduce_scatter_case("recursive_halving"); }
static void test_reduce_scatter_ring(void **s)              { (void)s; reduce_scatter_case("ring"); }

/* Floats reduced by several ranks must come out bitwise equal everywhere.
 * MIN over +0 and -0 returns whichever operand comes second when they tie,
 * so it exposes ranks that apply the operands in different orders. */
static void bitwise_case(rcoll_op_t op)
{
    for (const rcoll_alg_t *const *a = allreduce_algs; *a != NULL; a++) {
        for (int p = 2; p <= 9; p++) {
            size_t n = 37;
            float *in[PMAX], *out[PMAX];
            rcoll_coll_args_t args[PMAX];
            for (int r = 0; r < p; r++) {
                in[r] = malloc(n * 4);
                out[r] = malloc(n * 4);
                for (size_t i = 0; i < n; i++) {
                    if (op == RCOLL_MIN) {
                        in[r][i] = ((r * 5 + (int)i) % 3) ? 0.0f : -0.0f;
                    } else {
                        in[r][i] = 1.0f / (float)(r * 3 + (int)i + 1) + 1e7f * (float)(r % 2);
                    }
                }
                args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLREDUCE, .sendbuf = in[r],
                    .recvbuf = out[r], .count = n, .dtype = RCOLL_FLOAT32, .op = op };
            }
            assert_int_equal(run_sim(*a, p, args, 8), 0);
            for (int r = 1; r < p; r++) {
                if (memcmp(out[r], out[0], n * 4) != 0) {
                    fail_msg("allreduce %s p=%d %s: rank %d's float result differs from rank 0's",
                             (*a)->name, p, rcoll_op_name(op), r);
                }
            }
            for (int r = 0; r < p; r++) {
                free(in[r]);
                free(out[r]);
            }
        }
    }
}

static void test_allreduce_bitwise_equal(void **state)
{
    (void)state;
    bitwise_case(RCOLL_SUM);
    bitwise_case(RCOLL_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_recursive_doubling),
        cmocka_unit_test(test_allreduce_ring),
        cmocka_unit_test(test_allreduce_rabenseifner),
        cmocka_unit_test(test_allreduce_reduce_bcast),
        cmocka_unit_test(test_allreduce_bitwise_equal),
        cmocka_unit_test(test_reduce_binomial),
        cmocka_unit_test(test_reduce_reduce_scatter_gather),
        cmocka_unit_test(test_reduce_scatter_recursive_halving),
        cmocka_unit_test(test_reduce_scatter_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
