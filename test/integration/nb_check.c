/*
 * nb_check - nonblocking collectives: several outstanding on two
 * communicators, completed in reverse order, by rcoll_test polling in a
 * different order on every rank, overlapped with computation, and mixed
 * with blocking calls on the same communicator.
 *
 * Launch with any PMIx launcher:  rcollrun -n 4 test/integration/nb_check [-v]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define MAXOPS 32

static rcoll_context_t *ctx;
static int wrank, wsize, verbose;
static long nfail;

#define fatal(what, st) check_fatal("nb_check", wrank, (what), (st))

static void verify(check_op_t *o)
{
    char why[512];
    if (check_op_verify(o, why, sizeof(why)) != 0) {
        nfail++;
        fprintf(stderr, "FAIL nb_check rank %d: %s\n", wrank, why);
    }
    check_op_free(o);
}

static void post_all(check_op_t *ops, int n)
{
    for (int i = 0; i < n; i++) {
        rcoll_status_t st = check_op_post(&ops[i], 0);
        if (st != RCOLL_OK)
            fatal(check_kind_name(ops[i].kind), st);
        if (ops[i].req == NULL)
            fatal("nonblocking post gave no request", RCOLL_ERR_INTERNAL);
    }
}

static void wait_reverse(check_op_t *ops, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        rcoll_status_t st = rcoll_wait(ops[i].req);
        if (st != RCOLL_OK)
            fatal("rcoll_wait", st);
        verify(&ops[i]);
    }
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Poll every request with rcoll_test, starting at a rank-dependent index
 * and stepping by a rank-dependent stride, until all are done. */
static void test_all(check_op_t *ops, int n, int round)
{
    int done[MAXOPS] = {0}, left = n;
    int start = (wrank * 5 + round) % n, stride = 1 + (wrank + round) % n;
    while (gcd(stride, n) != 1)   /* coprime with n, so every index is visited */
        stride++;
    double t_end = check_now() + 300;
    while (left > 0) {
        for (int j = 0; j < n; j++) {
            int i = (start + j * stride) % n;
            if (done[i])
                continue;
            int d = 0;
            rcoll_status_t st = rcoll_test(ops[i].req, &d);
            if (st != RCOLL_OK)
                fatal("rcoll_test", st);
            if (d) {
                done[i] = 1;
                left--;
                verify(&ops[i]);
            }
        }
        if (check_now() > t_end)
            fatal("rcoll_test polling (300 s)", RCOLL_ERR_TIMEOUT);
    }
}

int main(int argc, char **argv)
{
    int rc = check_start("nb_check", argc, argv, NULL, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0) {
        return rc;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    rcoll_status_t st;
    if (wsize > 256) {
        fprintf(stderr, "nb_check: at most 256 ranks\n");
        return 2;
    }
    double t0 = check_now();
    int colors[256], keys[256];
    check_group_t gw, dup;
    for (int r = 0; r < wsize; r++) { colors[r] = 0; keys[r] = r; }
    check_group_expect(&gw, "world", wsize, wrank, colors, keys);
    gw.comm = world;
    dup = gw;
    dup.name = "dup";
    if ((st = rcoll_comm_dup(world, &dup.comm)) != RCOLL_OK)
        fatal("rcoll_comm_dup", st);

    /* 1-2: different collectives on two communicators; reverse waits, then
     * rcoll_test polling in a rank-dependent order */
    for (int round = 0; round < 4; round++) {
        uint64_t s = 100 * (uint64_t)(round + 1);
        int last = wsize - 1;
        check_op_t ops[] = {
            {CHECK_ALLREDUCE, &gw, RCOLL_INT32, RCOLL_SUM, 1000, 0, 0, s + 1},
            {CHECK_BCAST, &dup, RCOLL_FLOAT64, RCOLL_SUM, 777, last, 0, s + 2},
            {CHECK_ALLGATHER, &gw, RCOLL_UINT16, RCOLL_SUM, 333, 0, round % 2, s + 3},
            {CHECK_REDUCE, &dup, RCOLL_FLOAT32, RCOLL_MAX, 4099, 0, round % 2, s + 4},
            {CHECK_REDUCE_SCATTER, &gw, RCOLL_INT64, RCOLL_BXOR, 129, 0, round % 2, s + 5},
            {CHECK_BARRIER, &dup, RCOLL_UINT8, RCOLL_SUM, 0, 0, 0, s + 6},
            {CHECK_ALLREDUCE, &dup, RCOLL_BFLOAT16, RCOLL_SUM, 65537, 0, 0, s + 7},
            {CHECK_ALLREDUCE, &gw, RCOLL_UINT8, RCOLL_BAND, 1, 0, 1, s + 8},
            {CHECK_BCAST, &gw, RCOLL_INT8, RCOLL_SUM, 300000, 0, 0, s + 9},
            {CHECK_REDUCE, &gw, RCOLL_FLOAT16, RCOLL_PROD, 70000, last / 2, 0, s + 10},
            {CHECK_ALLGATHER, &dup, RCOLL_FLOAT64, RCOLL_SUM, 20000, 0, 0, s + 11},
            {CHECK_REDUCE_SCATTER, &dup, RCOLL_FLOAT32, RCOLL_SUM, 30000, 0, 0, s + 12},
        };
        int n = (int)(sizeof(ops) / sizeof(ops[0]));
        post_all(ops, n);
        if (round % 2 == 0)
            wait_reverse(ops, n);
        else
            test_all(ops, n, round);
    }
    if (verbose && wrank == 0)
        printf("nb_check: mixed collectives on two communicators ok (%.1f s)\n", check_now() - t0);

    /* 3: many outstanding on one communicator */
    for (int round = 0; round < 2; round++) {
        check_op_t ops[MAXOPS];
        int n = 24;
        for (int i = 0; i < n; i++) {
            ops[i] = (check_op_t){CHECK_ALLREDUCE, &gw, (rcoll_datatype_t)(i % RCOLL_DATATYPE_LAST),
                                  RCOLL_SUM, 1 + (size_t)i * 97, 0, i % 2,
                                  10000 + 100 * (uint64_t)round + (uint64_t)i};
            if (i % 5 == 4)
                ops[i].count = 9000 + (size_t)i;   /* crosses the eager limit */
        }
        post_all(ops, n);
        if (round == 0)
            wait_reverse(ops, n);
        else
            test_all(ops, n, round);
    }
    if (verbose && wrank == 0)
        printf("nb_check: 24 outstanding on one communicator ok (%.1f s)\n", check_now() - t0);

    /* 4: overlap with computation, driving progress with rcoll_progress */
    {
        check_op_t o = {CHECK_ALLREDUCE, &gw, RCOLL_FLOAT32, RCOLL_SUM, 1 << 20, 0, 0, 55555};
        post_all(&o, 1);
        volatile double sink = 0;
        int done = 0;
        long iters = 0;
        double t_end = check_now() + 300;
        while (!done) {
            for (int k = 0; k < 20000; k++)
                sink += k * 0.5;
            if ((st = rcoll_progress(ctx)) != RCOLL_OK)
                fatal("rcoll_progress", st);
            if (++iters % 8 == 0 && (st = rcoll_test(o.req, &done)) != RCOLL_OK)
                fatal("rcoll_test", st);
            if (check_now() > t_end)
                fatal("overlap loop (300 s)", RCOLL_ERR_TIMEOUT);
        }
        verify(&o);
    }

    /* 5: blocking calls while nonblocking ones are outstanding on the same
     * and on another communicator */
    for (int round = 0; round < 3; round++) {
        uint64_t s = 70000 + 100 * (uint64_t)round;
        check_op_t a = {CHECK_ALLREDUCE, &gw, RCOLL_INT64, RCOLL_SUM, 5000, 0, 0, s + 1};
        check_op_t b = {CHECK_ALLREDUCE, &gw, RCOLL_INT64, RCOLL_MIN, 4000, 0, 0, s + 2};
        check_op_t c = {CHECK_BCAST, &dup, RCOLL_UINT32, RCOLL_SUM, 3000, round % wsize, 0, s + 3};
        check_op_t d = {CHECK_BARRIER, &gw, RCOLL_UINT8, RCOLL_SUM, 0, 0, 0, s + 4};
        check_op_t e = {CHECK_ALLGATHER, &dup, RCOLL_INT16, RCOLL_SUM, 50, 0, 0, s + 5};
        post_all(&a, 1);
        if ((st = check_op_post(&b, 1)) != RCOLL_OK)
            fatal("blocking allreduce with a nonblocking one outstanding", st);
        verify(&b);
        post_all(&c, 1);
        if ((st = check_op_post(&d, 1)) != RCOLL_OK)
            fatal("blocking barrier with nonblocking ones outstanding", st);
        if ((st = check_op_post(&e, 1)) != RCOLL_OK)
            fatal("blocking allgather with nonblocking ones outstanding", st);
        verify(&e);
        check_op_t rest[] = {a, c};
        wait_reverse(rest, 2);
    }

    if ((st = rcoll_comm_free(dup.comm)) != RCOLL_OK)
        fatal("rcoll_comm_free", st);
    int32_t mine = nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal("summary allreduce", st);
    if (wrank == 0) {
        if (any == 0 && !mine)
            printf("nb_check: %d ranks ok (%.1f s)\n", wsize, check_now() - t0);
        else
            printf("nb_check: %d ranks: FAILED on %d rank(s)\n", wsize, any ? any : 1);
    }
    fflush(stdout);
    if ((st = rcoll_finalize(ctx)) != RCOLL_OK) {
        fprintf(stderr, "FAIL nb_check rank %d: rcoll_finalize returned %s\n", wrank,
                rcoll_strerror(st));
        return 1;
    }
    return (any == 0 && !mine) ? 0 : 1;
}
