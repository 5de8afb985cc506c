/*
 * comm_cases.c - the body of comm_check (sub-communicators: split and dup,
 * collectives on several communicators at once, no cross-talk, free and
 * re-create) over a context it is given, so that the process check
 * (comm_check.c) and the in-process thread check (oob_threads.c) run the
 * same cases.
 *
 * Every communicator's membership and order is computed locally from the
 * same (color, key) formulas the ranks pass to rcoll_comm_split, and every
 * collective's data depends on the world rank and a per-communicator salt,
 * so a message delivered to the wrong communicator or collective shows up
 * as a wrong result (or an error), not as silence.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"
#include "check_suites.h"

/* One run's state: a thread may run it over its own context. */
typedef struct {
    rcoll_context_t *ctx;
    int              wrank, wsize, verbose;
    long             nfail;
} run_t;

#define FAILF(R, ...) do { (R)->nfail++; fprintf(stderr, "FAIL comm_check rank %d: ", (R)->wrank); \
                           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

#define fatal(R, what, st) check_fatal("comm_check", (R)->wrank, (what), (st))

/* Split world with the given per-rank colors/keys and check the result. */
static int split(run_t *R, check_group_t *g, const char *name, const int *colors, const int *keys,
                 rcoll_comm_t *parent, const check_group_t *pg)
{
    /* colors/keys are indexed by rank in the parent; expected members are
     * world ranks, mapped through the parent's members */
    int pn = pg ? pg->n : R->wsize, pme = pg ? pg->me : R->wrank;
    rcoll_comm_t *nc = (rcoll_comm_t *)R;   /* a sentinel: must be overwritten */
    rcoll_status_t st = rcoll_comm_split(parent, colors[pme], keys[pme], &nc);
    if (st != RCOLL_OK)
        fatal(R, name, st);
    int has = check_group_expect(g, name, pn, pme, colors, keys) == 0;
    if (pg) {   /* parent ranks -> world ranks */
        for (int i = 0; i < g->n; i++)
            g->members[i] = pg->members[g->members[i]];
    }
    g->wsize = R->wsize;
    if (!has) {
        if (nc != NULL)
            FAILF(R, "%s: color %d < 0 must give a NULL communicator, got %p", name, colors[pme],
                  (void *)nc);
        g->comm = NULL;
        return 0;
    }
    if (nc == NULL || nc == (rcoll_comm_t *)R) {
        FAILF(R, "%s: split with color %d gave no communicator", name, colors[pme]);
        _exit(1);
    }
    g->comm = nc;
    if (rcoll_comm_size(nc) != g->n || rcoll_comm_rank(nc) != g->me)
        FAILF(R, "%s: rank %d of %d, expected rank %d of %d", name, rcoll_comm_rank(nc),
              rcoll_comm_size(nc), g->me, g->n);
    return 1;
}

static void free_group(run_t *R, check_group_t *g)
{
    if (g->comm == NULL)
        return;
    rcoll_status_t st = rcoll_comm_free(g->comm);
    if (st != RCOLL_OK)
        fatal(R, "rcoll_comm_free", st);
    g->comm = NULL;
}

static void verify(run_t *R, check_op_t *o)
{
    char why[512];
    if (check_op_verify(o, why, sizeof(why)) != 0)
        FAILF(R, "%s", why);
    check_op_free(o);
}

/* Post ops[0..n) nonblocking, wait for them in reverse order, verify. */
static void post_all_wait_reverse(run_t *R, check_op_t *ops, int n)
{
    for (int i = 0; i < n; i++) {
        if (ops[i].g->comm == NULL)
            continue;
        rcoll_status_t st = check_op_post(&ops[i], 0);
        if (st != RCOLL_OK)
            fatal(R, check_kind_name(ops[i].kind), st);
    }
    for (int i = n - 1; i >= 0; i--) {
        if (ops[i].g->comm == NULL)
            continue;
        rcoll_status_t st = rcoll_wait(ops[i].req);
        if (st != RCOLL_OK)
            fatal(R, "rcoll_wait", st);
        verify(R, &ops[i]);
    }
}

static void run_blocking(run_t *R, check_op_t *o)
{
    if (o->g->comm == NULL)
        return;
    rcoll_status_t st = check_op_post(o, 1);
    if (st != RCOLL_OK)
        fatal(R, check_kind_name(o->kind), st);
    verify(R, o);
}

int comm_check_run(rcoll_context_t *ctx, int verbose)
{
    run_t run = { .ctx = ctx, .verbose = verbose }, *R = &run;
    R->wrank = rcoll_context_rank(ctx);
    R->wsize = rcoll_context_size(ctx);
    rcoll_comm_t *world = rcoll_comm_world(R->ctx);
    rcoll_status_t st;
    if (R->wsize > 256) {
        fprintf(stderr, "comm_check: at most 256 ranks\n");
        return 2;
    }
    double t0 = check_now();
    int colors[256], keys[256];
    check_group_t gw, halves, rev, undef, ties, dup;

    /* world as a group */
    for (int r = 0; r < R->wsize; r++) { colors[r] = 0; keys[r] = r; }
    check_group_expect(&gw, "world", R->wsize, R->wrank, colors, keys);
    gw.comm = world;

    /* odd/even halves, by rank */
    for (int r = 0; r < R->wsize; r++) { colors[r] = r % 2; keys[r] = r; }
    split(R, &halves, "halves", colors, keys, world, NULL);
    /* everyone, in reverse order */
    for (int r = 0; r < R->wsize; r++) { colors[r] = 0; keys[r] = R->wsize - r; }
    split(R, &rev, "reverse", colors, keys, world, NULL);
    /* ranks 1, 4, 7 undefined (color < 0), two groups ordered by negative keys */
    for (int r = 0; r < R->wsize; r++) { colors[r] = r % 3 == 1 ? -1 : r % 3; keys[r] = -r; }
    split(R, &undef, "undefined", colors, keys, world, NULL);
    /* equal keys: order falls back to world rank */
    for (int r = 0; r < R->wsize; r++) { colors[r] = r < R->wsize / 2; keys[r] = 7; }
    split(R, &ties, "ties", colors, keys, world, NULL);
    /* dup of world */
    gw.name = "world";
    dup = gw;
    dup.name = "dup";
    dup.comm = NULL;
    if ((st = rcoll_comm_dup(world, &dup.comm)) != RCOLL_OK)
        fatal(R, "rcoll_comm_dup", st);
    if (dup.comm == NULL || dup.comm == world || rcoll_comm_size(dup.comm) != R->wsize ||
        rcoll_comm_rank(dup.comm) != R->wrank)
        FAILF(R, "dup: bad communicator (%p, rank %d size %d)", (void *)dup.comm,
              rcoll_comm_rank(dup.comm), rcoll_comm_size(dup.comm));
    if (R->verbose && R->wrank == 0)
        printf("comm_check: splits and dup ok (%.1f s)\n", check_now() - t0);

    /* Phase A: nonblocking on every communicator at once, waited in reverse
     * order.  Counts and salts differ per communicator. */
    for (int round = 0; round < 3; round++) {
        uint64_t s = 1000 + 100 * (uint64_t)round;
        check_op_t ops[] = {
            {CHECK_ALLREDUCE, &halves, RCOLL_INT32, RCOLL_SUM, 1000 + 7 * (size_t)(R->wrank % 2), 0, 0, s + 1},
            {CHECK_ALLREDUCE, &dup, RCOLL_FLOAT32, RCOLL_SUM, 999, 0, 1, s + 2},
            {CHECK_BCAST, &rev, RCOLL_UINT16, RCOLL_SUM, 4097, 1 % R->wsize, 0, s + 3},
            {CHECK_ALLGATHER, &halves, RCOLL_FLOAT64, RCOLL_SUM, 33, 0, round % 2, s + 4},
            {CHECK_REDUCE_SCATTER, &dup, RCOLL_INT64, RCOLL_BXOR, 65, 0, round % 2, s + 5},
            {CHECK_REDUCE, &rev, RCOLL_BFLOAT16, RCOLL_MAX, 5000, 0, 0, s + 6},
            {CHECK_ALLREDUCE, &ties, RCOLL_UINT8, RCOLL_BOR, 70000, 0, 0, s + 7},
            {CHECK_ALLREDUCE, &gw, RCOLL_FLOAT16, RCOLL_SUM, 257, 0, 0, s + 8},
            {CHECK_BARRIER, &undef, RCOLL_UINT8, RCOLL_SUM, 0, 0, 0, s + 9},
            {CHECK_ALLREDUCE, &undef, RCOLL_INT16, RCOLL_MIN, 3001, 0, 0, s + 10},
            {CHECK_BCAST, &halves, RCOLL_INT8, RCOLL_SUM, 100000, 0, 0, s + 11},
            {CHECK_ALLREDUCE, &halves, RCOLL_FLOAT64, RCOLL_PROD, 20000, 0, 1, s + 12},
        };
        post_all_wait_reverse(R, ops, (int)(sizeof(ops) / sizeof(ops[0])));
    }
    if (R->verbose && R->wrank == 0)
        printf("comm_check: concurrent nonblocking ok (%.1f s)\n", check_now() - t0);

    /* Phase B: blocking collectives interleaved over the communicators */
    for (int it = 0; it < 10; it++) {
        uint64_t s = 5000 + 20 * (uint64_t)it;
        check_op_t a = {CHECK_ALLREDUCE, &halves, RCOLL_INT64, RCOLL_SUM, 17 + (size_t)it, 0, 0, s + 1};
        check_op_t b = {CHECK_ALLREDUCE, &dup, RCOLL_INT64, RCOLL_SUM, 17 + (size_t)it, 0, 0, s + 2};
        check_op_t c = {CHECK_BCAST, &rev, RCOLL_INT64, RCOLL_SUM, 17 + (size_t)it, it % R->wsize, 0, s + 3};
        check_op_t d = {CHECK_ALLGATHER, &undef, RCOLL_INT64, RCOLL_SUM, 3, 0, 0, s + 4};
        check_op_t e = {CHECK_REDUCE, &ties, RCOLL_INT64, RCOLL_MAX, 9, it % ties.n, 0, s + 5};
        check_op_t f = {CHECK_ALLREDUCE, &gw, RCOLL_INT64, RCOLL_SUM, 17 + (size_t)it, 0, 0, s + 6};
        run_blocking(R, &a);
        run_blocking(R, &b);
        run_blocking(R, &c);
        run_blocking(R, &d);
        run_blocking(R, &e);
        run_blocking(R, &f);
    }
    if (R->verbose && R->wrank == 0)
        printf("comm_check: interleaved blocking ok (%.1f s)\n", check_now() - t0);

    /* Phase C: split of a split (quarters of the halves) */
    {
        int qc[256], qk[256];
        for (int i = 0; i < halves.n; i++) { qc[i] = i % 2; qk[i] = -i; }
        check_group_t quarter;
        split(R, &quarter, "quarter", qc, qk, halves.comm, &halves);
        check_op_t q1 = {CHECK_ALLREDUCE, &quarter, RCOLL_UINT32, RCOLL_PROD, 77, 0, 0, 9001};
        check_op_t q2 = {CHECK_ALLREDUCE, &halves, RCOLL_UINT32, RCOLL_SUM, 77, 0, 0, 9002};
        check_op_t q3 = {CHECK_ALLGATHER, &quarter, RCOLL_UINT32, RCOLL_SUM, 5, 0, 1, 9003};
        check_op_t qs[] = {q1, q2, q3};
        post_all_wait_reverse(R, qs, 3);
        free_group(R, &quarter);
    }

    /* Phase D: free, then re-create and free repeatedly (ids get reused) */
    free_group(R, &halves);
    free_group(R, &rev);
    free_group(R, &undef);
    free_group(R, &ties);
    free_group(R, &dup);
    for (int it = 0; it < 10; it++) {
        check_group_t h, d = gw;
        for (int r = 0; r < R->wsize; r++) { colors[r] = (r + it) % 2; keys[r] = r; }
        split(R, &h, "halves again", colors, keys, world, NULL);
        d.name = "dup again";
        if ((st = rcoll_comm_dup(world, &d.comm)) != RCOLL_OK)
            fatal(R, "rcoll_comm_dup", st);
        check_op_t ops[] = {
            {CHECK_ALLREDUCE, &h, RCOLL_INT32, RCOLL_SUM, 100 + (size_t)it, 0, 0, 20000 + (uint64_t)it},
            {CHECK_ALLREDUCE, &d, RCOLL_INT32, RCOLL_SUM, 100 + (size_t)it, 0, 0, 30000 + (uint64_t)it},
            {CHECK_ALLREDUCE, &gw, RCOLL_INT32, RCOLL_SUM, 100 + (size_t)it, 0, 0, 40000 + (uint64_t)it},
        };
        post_all_wait_reverse(R, ops, 3);
        free_group(R, &h);
        free_group(R, &d);
    }
    check_op_t last = {CHECK_ALLREDUCE, &gw, RCOLL_FLOAT64, RCOLL_SUM, 1023, 0, 0, 99999};
    run_blocking(R, &last);

    int32_t mine = R->nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal(R, "summary allreduce", st);
    if (R->wrank == 0) {
        if (any == 0 && !mine)
            printf("comm_check: %d ranks ok (%.1f s)\n", R->wsize, check_now() - t0);
        else
            printf("comm_check: %d ranks: FAILED on %d rank(s)\n", R->wsize, any ? any : 1);
    }
    fflush(stdout);
    return (any == 0 && !mine) ? 0 : 1;
}
