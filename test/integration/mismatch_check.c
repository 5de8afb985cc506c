/*
 * mismatch_check - ranks that call different collectives, counts,
 * datatypes, ops or roots never get success with wrong data (issue 12,
 * item 3).
 *
 * Every collective with a shm algorithm (bcast, allgather, allreduce,
 * reduce, barrier) is covered, small (the shm slots, single messages) and
 * large (1 MiB and more: the shm chunk pipeline, segmented and rendezvous
 * messages), and a barrier against another collective.  On the shm path
 * every peer can read the odd rank's call signature, so there the odd rank
 * must fail with PROTOCOL or TRUNCATED, never by its deadline.
 *
 * Launch with at least 2 ranks:  rcollrun -n 3 test/integration/mismatch_check [--no-shm] [-v]
 *
 * For each case every rank but the last calls one collective and the last
 * rank (the odd one) another, on a fresh duplicate of the world (a
 * mismatch may leave a communicator unusable), twice: with the shm
 * algorithms forced (when all ranks share a node) and with point-to-point
 * algorithms forced.  With --no-shm, rcoll_init gets RCOLL_SHM=0 and only
 * the point-to-point round runs.  A rank that gets RCOLL_OK must hold the
 * data its own call implies (had every rank called the same); the odd rank
 * must get an error where its call is bound to reach it; errors are
 * PROTOCOL, TRUNCATED, TIMEOUT (a rank left waiting for a peer that gave
 * up; RCOLL_TIMEOUT is 2 s during a case) or PEER_FAILED.  Exit status 0
 * only if every rank passed every case.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcoll.h"
#include "check_common.h"

enum { BCAST, ALLGATHER, ALLREDUCE, REDUCE, BARRIER };

#define L (256 * 1024)          /* 1 MiB of int32: the shm pipeline */
#define MAXC (2 * L)            /* the largest count of any case */

typedef struct {
    int              type;
    size_t           count;
    rcoll_datatype_t dtype;
    rcoll_op_t       op;
    int              root;
} call_t;

typedef struct {
    const char *what;
    call_t      all, odd;
    int         odd_fails;    /* 1: the odd rank must return an error; 2: it need not, but
                               * the others may (a reduce's leaf only sends) */
} case_t;

#define B(_c, _r)         { BCAST, _c, RCOLL_INT32, RCOLL_SUM, _r }
#define G(_c)             { ALLGATHER, _c, RCOLL_INT32, RCOLL_SUM, 0 }
#define R(_c, _dt, _op)   { ALLREDUCE, _c, _dt, _op, 0 }
#define RD(_c, _op)       { REDUCE, _c, RCOLL_INT32, _op, 0 }
#define BAR               { BARRIER, 0, RCOLL_INT32, RCOLL_SUM, 0 }

static const case_t cases[] = {
    { "same calls (control)", R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM), 0 },
    { "bcast, smaller count", B(16, 0), B(8, 0), 1 },
    { "bcast, larger count", B(12, 0), B(100, 0), 1 },
    { "allgather, another count", G(16), G(4), 1 },
    { "allreduce, another op", R(16, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_MAX), 1 },
    { "allreduce, another datatype of equal bytes", R(16, RCOLL_INT32, RCOLL_SUM),
      R(8, RCOLL_INT64, RCOLL_SUM), 1 },
    { "allreduce, another count", R(16, RCOLL_INT32, RCOLL_SUM), R(4, RCOLL_INT32, RCOLL_SUM), 1 },
    { "another collective", B(16, 0), R(16, RCOLL_INT32, RCOLL_SUM), 1 },
    { "bcast, another root", B(16, 0), B(16, 1), 0 },
    { "large: same calls (control)", R(L, RCOLL_INT32, RCOLL_SUM), R(L, RCOLL_INT32, RCOLL_SUM), 0 },
    { "large: bcast, smaller count", B(L, 0), B(L / 2, 0), 1 },
    { "large: bcast, larger count", B(L, 0), B(2 * L, 0), 1 },
    { "large: bcast, a small count", B(L, 0), B(16, 0), 1 },
    { "large: allgather, another count", G(L), G(L / 2), 1 },
    { "large: allreduce, another op", R(L, RCOLL_INT32, RCOLL_SUM), R(L, RCOLL_INT32, RCOLL_MAX), 1 },
    { "large: allreduce, another datatype of equal bytes", R(L, RCOLL_INT32, RCOLL_SUM),
      R(L / 2, RCOLL_INT64, RCOLL_SUM), 1 },
    { "large: allreduce, another count", R(L, RCOLL_INT32, RCOLL_SUM), R(L / 4, RCOLL_INT32, RCOLL_SUM), 1 },
    { "large: allreduce, a small count", R(L, RCOLL_INT32, RCOLL_SUM), R(16, RCOLL_INT32, RCOLL_SUM), 1 },
    { "large: another collective", B(L, 0), R(L, RCOLL_INT32, RCOLL_SUM), 1 },
    { "large: reduce, another op", RD(L, RCOLL_SUM), RD(L, RCOLL_MAX), 1 },
    { "large: reduce, another count", RD(L, RCOLL_SUM), RD(L / 2, RCOLL_SUM), 1 },
    { "reduce, another count (the odd rank only sends)", RD(16, RCOLL_SUM), RD(4, RCOLL_SUM), 2 },
    { "barrier, the odd rank an allreduce", BAR, R(16, RCOLL_INT32, RCOLL_SUM), 1 },
    { "barrier, the odd rank a bcast", BAR, B(16, 0), 1 },
    { "allreduce, the odd rank a barrier", R(16, RCOLL_INT32, RCOLL_SUM), BAR, 1 },
    { "large allreduce, the odd rank a barrier", R(L, RCOLL_INT32, RCOLL_SUM), BAR, 1 },
};

static int wrank, wsize, verbose;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL mismatch_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

static int64_t val(int r, size_t i) { return (int64_t)r * 1000 + (int64_t)i + 1; }

static void put(void *buf, rcoll_datatype_t dt, size_t i, int64_t v)
{
    if (dt == RCOLL_INT64)
        ((int64_t *)buf)[i] = v;
    else
        ((int32_t *)buf)[i] = (int32_t)v;
}

static int64_t get(const void *buf, rcoll_datatype_t dt, size_t i)
{
    return dt == RCOLL_INT64 ? ((const int64_t *)buf)[i] : ((const int32_t *)buf)[i];
}

static int64_t expected(const call_t *c, size_t i)
{
    if (c->type == BCAST)
        return val(c->root, i);
    if (c->type == ALLGATHER)
        return val((int)(i / c->count), i % c->count);
    if (c->op == RCOLL_MAX)
        return val(wsize - 1, i);
    int64_t sum = 0;
    for (int q = 0; q < wsize; q++)
        sum += val(q, i);
    return sum;
}

static void force(rcoll_context_t *ctx, const char *bcast, const char *allgather, const char *allreduce,
                  const char *reduce, const char *barrier)
{
    if (rcoll_config_set(ctx, "RCOLL_BCAST_ALGORITHM", bcast) != RCOLL_OK ||
        rcoll_config_set(ctx, "RCOLL_ALLGATHER_ALGORITHM", allgather) != RCOLL_OK ||
        rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", allreduce) != RCOLL_OK ||
        rcoll_config_set(ctx, "RCOLL_REDUCE_ALGORITHM", reduce) != RCOLL_OK ||
        rcoll_config_set(ctx, "RCOLL_BARRIER_ALGORITHM", barrier) != RCOLL_OK)
        check_fatal("mismatch_check", wrank, "rcoll_config_set of an algorithm", RCOLL_ERR_INVALID_ARG);
}

static void run_case(rcoll_context_t *ctx, const case_t *k, const char *path)
{
    int shm_path = strcmp(path, "shm") == 0;
    rcoll_comm_t *world = rcoll_comm_world(ctx), *comm = NULL;
    rcoll_status_t st = rcoll_comm_dup(world, &comm);
    if (st != RCOLL_OK)
        check_fatal("mismatch_check", wrank, "rcoll_comm_dup", st);
    /* a matching collective first, so that on the shm path the segment is
     * set up (its set-up messages would catch the mismatch themselves) and
     * the case exercises the slot words */
    int32_t one = 1, n = 0;
    st = rcoll_allreduce(&one, &n, 1, RCOLL_INT32, RCOLL_SUM, comm);
    if (st != RCOLL_OK || n != wsize)
        FAILF("%s (%s): the matching allreduce before the case: %s", k->what, path, rcoll_strerror(st));
    int odd = wrank == wsize - 1;
    const call_t *c = odd ? &k->odd : &k->all;
    int64_t *sbuf = calloc(MAXC, sizeof(int64_t)), *rbuf = malloc(MAXC * sizeof(int64_t) * (size_t)wsize);
    if (sbuf == NULL || rbuf == NULL)
        check_fatal("mismatch_check", wrank, "malloc", RCOLL_ERR_NO_MEMORY);
    memset(rbuf, 0x5a, MAXC * sizeof(int64_t) * (size_t)wsize);     /* "stale" bytes */
    for (size_t i = 0; i < c->count; i++)
        put(sbuf, c->dtype, i, val(wrank, i));
    rcoll_config_set(ctx, "RCOLL_TIMEOUT", "2");
    if (c->type == BCAST) {
        if (wrank == c->root)
            memcpy(rbuf, sbuf, MAXC * sizeof(int64_t));
        st = c->root < wsize ? rcoll_bcast(rbuf, c->count, c->dtype, c->root, comm) : RCOLL_OK;
    } else if (c->type == ALLGATHER) {
        st = rcoll_allgather(sbuf, rbuf, c->count, c->dtype, comm);
    } else if (c->type == REDUCE) {
        st = rcoll_reduce(sbuf, rbuf, c->count, c->dtype, c->op, c->root, comm);
    } else if (c->type == BARRIER) {
        st = rcoll_barrier(comm);
    } else {
        st = rcoll_allreduce(sbuf, rbuf, c->count, c->dtype, c->op, comm);
    }
    rcoll_config_set(ctx, "RCOLL_TIMEOUT", "60");
    size_t total = c->count * (c->type == ALLGATHER ? (size_t)wsize : 1);
    if (c->type == BARRIER || (c->type == REDUCE && wrank != c->root))
        total = 0;                                   /* no data to check */
    for (size_t i = 0; st == RCOLL_OK && i < total; i++) {
        if (get(rbuf, c->dtype, i) != expected(c, i)) {
            FAILF("%s (%s): success with wrong data at element %zu: %lld, expected %lld", k->what,
                  path, i, (long long)get(rbuf, c->dtype, i), (long long)expected(c, i));
            break;
        }
    }
    if (odd && k->odd_fails == 1 && st == RCOLL_OK)
        FAILF("%s (%s): the odd rank got success", k->what, path);
    if (odd && k->odd_fails == 1 && shm_path && st != RCOLL_OK && st != RCOLL_ERR_PROTOCOL &&
        st != RCOLL_ERR_TRUNCATED)
        FAILF("%s (%s): the odd rank got %s, not PROTOCOL or TRUNCATED", k->what, path,
              rcoll_strerror(st));
    if (st != RCOLL_OK && st != RCOLL_ERR_PROTOCOL && st != RCOLL_ERR_TRUNCATED &&
        st != RCOLL_ERR_TIMEOUT && st != RCOLL_ERR_PEER_FAILED)
        FAILF("%s (%s): unexpected status %s", k->what, path, rcoll_strerror(st));
    if (st != RCOLL_OK && !k->odd_fails && k->odd.root == k->all.root)
        FAILF("%s (%s): error %s on a matching call", k->what, path, rcoll_strerror(st));
    if (verbose)
        printf("mismatch_check rank %d: %s (%s): %s\n", wrank, k->what, path, rcoll_strerror(st));
    free(sbuf);
    free(rbuf);
    /* comm is not used again (after a mismatch it may be unusable), but it
     * is freed: freeing is local, and a leak would fail the ASan stage */
    rcoll_comm_free(comm);
    st = rcoll_barrier(world);
    if (st != RCOLL_OK)
        check_fatal("mismatch_check", wrank, "the barrier after a case", st);
}

int main(int argc, char **argv)
{
    int no_shm = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--no-shm") == 0)
            no_shm = 1;
    }
    const char *const cfg_shm[] = { "RCOLL_TIMEOUT=60", NULL };
    const char *const cfg_no_shm[] = { "RCOLL_TIMEOUT=60", "RCOLL_SHM=0", NULL };
    rcoll_context_t *ctx = NULL;
    rcoll_status_t st = rcoll_init(no_shm ? cfg_no_shm : cfg_shm, &ctx);
    if (st != RCOLL_OK)
        check_fatal("mismatch_check", -1, "rcoll_init", st);
    wrank = rcoll_context_rank(ctx);
    wsize = rcoll_context_size(ctx);
    if (wsize < 2) {
        printf("mismatch_check: needs at least 2 ranks; nothing to do\n");
        rcoll_finalize(ctx);
        return 0;
    }
    int one_node = rcoll_context_local_size(ctx) == wsize;
    for (int round = 0; round < 2; round++) {
        int shm = round == 0;
        if (shm && (no_shm || !one_node))
            continue;
        if (shm)
            force(ctx, "shm", "shm", "shm", "shm", "shm");
        else
            force(ctx, "binomial", "ring", "recursive_doubling", "binomial", "dissemination");
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            run_case(ctx, &cases[i], shm ? "shm" : "point-to-point");
    }
    force(ctx, "", "", "", "", "");
    long total = 0;
    st = rcoll_allreduce(&nfail, &total, 1, RCOLL_INT64, RCOLL_SUM, rcoll_comm_world(ctx));
    if (st != RCOLL_OK)
        check_fatal("mismatch_check", wrank, "the final allreduce", st);
    if (wrank == 0)
        printf("mismatch_check: %d ranks%s: %s (%ld failures)\n", wsize, no_shm ? ", RCOLL_SHM=0" : "",
               total ? "FAILED" : "ok", total);
    rcoll_finalize(ctx);
    return total != 0;
}
