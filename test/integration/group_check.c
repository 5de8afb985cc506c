/*
 * group_check - rcoll_comm_create_group: communicators over listed ranks,
 * made by those ranks only.
 *
 * Launch with any PMIx launcher:  rcollrun -n 5 test/integration/group_check [-v]
 *
 * Groups in given and reversed order, subsets, one-rank groups, the full
 * parent, the same group under two tags created in opposite orders,
 * overlapping groups (windows {k, k+1, k+2}, tag per k) created in
 * ascending order on odd ranks and descending on even ones, repeated
 * creation and free, nested creation from a group communicator, groups
 * made next to split and dup, invalid arguments, and a creation whose first
 * rank never calls (RCOLL_ERR_TIMEOUT).  Every group's members
 * and order are known locally, and every collective's data depends on the
 * world rank and a per-case salt, so a message that reached the wrong
 * communicator shows up as a wrong result (or an error), not as silence.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define MAXG 256

static rcoll_context_t *ctx;
static int wrank, wsize, verbose;
static long nfail;
static rcoll_comm_t *const sentinel = (rcoll_comm_t *)(uintptr_t)0x5eed;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL group_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

#define fatal(what, st) check_fatal("group_check", wrank, (what), (st))

/* Make g over parent ranks[0..n) of pg (tag), if this rank is listed;
 * check its size and rank.  g->comm NULL where not listed. */
static void make_group(check_group_t *g, const char *name, const check_group_t *pg,
                       const int *ranks, int n, int tag)
{
    memset(g, 0, sizeof(*g));
    g->name = name;
    g->n = n;
    g->wsize = wsize;
    g->me = -1;
    for (int i = 0; i < n; i++) {
        g->members[i] = pg->members[ranks[i]];
        if (ranks[i] == pg->me) {
            g->me = i;
        }
    }
    if (g->me < 0 || pg->comm == NULL) {
        g->comm = NULL;
        return;
    }
    rcoll_comm_t *nc = sentinel;
    rcoll_status_t st = rcoll_comm_create_group(pg->comm, ranks, n, tag, &nc);
    if (st != RCOLL_OK) {
        fatal(name, st);
    }
    if (nc == NULL || nc == sentinel) {
        FAILF("%s: no communicator", name);
        _exit(1);
    }
    g->comm = nc;
    if (rcoll_comm_size(nc) != n || rcoll_comm_rank(nc) != g->me) {
        FAILF("%s: rank %d of %d, expected rank %d of %d", name, rcoll_comm_rank(nc),
              rcoll_comm_size(nc), g->me, n);
    }
}

static void free_group(check_group_t *g)
{
    if (g->comm == NULL) {
        return;
    }
    rcoll_status_t st = rcoll_comm_free(g->comm);
    if (st != RCOLL_OK) {
        fatal("rcoll_comm_free", st);
    }
    g->comm = NULL;
}

/* Post ops[0..n) nonblocking (those on groups this rank is in), wait for
 * them in reverse order, verify. */
static void run_ops(check_op_t *ops, int n)
{
    char why[512];
    for (int i = 0; i < n; i++) {
        if (ops[i].g->comm == NULL) {
            continue;
        }
        ops[i].root %= ops[i].g->n;      /* roots are given as any number */
        rcoll_status_t st = check_op_post(&ops[i], 0);
        if (st != RCOLL_OK) {
            fatal(check_kind_name(ops[i].kind), st);
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        if (ops[i].g->comm == NULL) {
            continue;
        }
        rcoll_status_t st = rcoll_wait(ops[i].req);
        if (st != RCOLL_OK) {
            fatal(ops[i].g->name, st);
        }
        if (check_op_verify(&ops[i], why, sizeof(why)) != 0) {
            FAILF("%s: %s", ops[i].g->name, why);
        }
        check_op_free(&ops[i]);
    }
}

/* An allreduce and a bcast on each of gs[0..n): all posted at once. */
static void exercise(check_group_t *gs, int n, uint64_t salt)
{
    check_op_t ops[2 * 16];
    for (int i = 0; i < n; i++) {
        ops[2 * i] = (check_op_t){ CHECK_ALLREDUCE, &gs[i], RCOLL_INT32, RCOLL_SUM,
                                   100 + 7 * (size_t)i, 0, 0, salt + 2 * (uint64_t)i };
        ops[2 * i + 1] = (check_op_t){ CHECK_BCAST, &gs[i], RCOLL_UINT16, RCOLL_SUM,
                                       33 + (size_t)i, i + 1, 0, salt + 2 * (uint64_t)i + 1 };
    }
    run_ops(ops, 2 * n);
}

/* The whole menu on one group, blocking and nonblocking mixed. */
static void exercise_all(check_group_t *g, uint64_t salt)
{
    check_op_t ops[] = {
        { CHECK_ALLREDUCE, g, RCOLL_FLOAT32, RCOLL_SUM, 999, 0, 1, salt + 1 },
        { CHECK_BCAST, g, RCOLL_INT8, RCOLL_SUM, 70000, 1, 0, salt + 2 },
        { CHECK_REDUCE, g, RCOLL_INT64, RCOLL_MAX, 513, 2, 0, salt + 3 },
        { CHECK_ALLGATHER, g, RCOLL_FLOAT64, RCOLL_SUM, 17, 0, 0, salt + 4 },
        { CHECK_REDUCE_SCATTER, g, RCOLL_UINT32, RCOLL_BXOR, 65, 0, 0, salt + 5 },
        { CHECK_BARRIER, g, RCOLL_UINT8, RCOLL_SUM, 0, 0, 0, salt + 6 },
        { CHECK_ALLREDUCE, g, RCOLL_INT32, RCOLL_SUM, 200000, 0, 0, salt + 7 },
    };
    run_ops(ops, (int)(sizeof(ops) / sizeof(ops[0])));
}

/* Bad arguments: INVALID_ARG, *newcomm untouched, and nothing sent (the
 * collectives that follow would be disturbed otherwise). */
static void check_invalid(rcoll_comm_t *world)
{
    int dupl[2] = { wrank, wrank }, other = (wrank + 1) % wsize, out = wsize, neg = -1;
    int all[MAXG + 1];
    struct { const char *what; rcoll_comm_t *parent; const int *ranks; int n; } bad[] = {
        { "NULL parent", NULL, &wrank, 1 },
        { "NULL ranks", world, NULL, 1 },
        { "n = 0", world, &wrank, 0 },
        { "n > size", world, all, wsize + 1 },
        { "rank out of range", world, &out, 1 },
        { "negative rank", world, &neg, 1 },
        { "duplicate rank", world, dupl, 2 },
        { "caller not listed", world, &other, 1 },
    };
    for (int i = 0; i <= wsize; i++) {
        all[i] = i % wsize;
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bad[i].ranks == &other && wsize == 1) {
            continue;      /* one rank: the other is the caller */
        }
        rcoll_comm_t *nc = sentinel;
        rcoll_status_t st = rcoll_comm_create_group(bad[i].parent, bad[i].ranks, bad[i].n, 3, &nc);
        if (st != RCOLL_ERR_INVALID_ARG || nc != sentinel) {
            FAILF("invalid arguments (%s): returned %s, newcomm %s", bad[i].what,
                  rcoll_strerror(st), nc == sentinel ? "untouched" : "changed");
        }
    }
    if (rcoll_comm_create_group(world, &wrank, 1, 3, NULL) != RCOLL_ERR_INVALID_ARG) {
        FAILF("invalid arguments (NULL newcomm): not INVALID_ARG");
    }
}

int main(int argc, char **argv)
{
    int rc = check_start("group_check", argc, argv, NULL, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0) {
        return rc;
    }
    if (wsize > MAXG) {
        fprintf(stderr, "group_check: at most %d ranks\n", MAXG);
        return 2;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    rcoll_status_t st;
    double t0 = check_now();
    int ranks[MAXG], n;
    check_group_t gw = { .name = "world", .comm = world, .n = wsize, .me = wrank, .wsize = wsize };
    for (int r = 0; r < wsize; r++) {
        gw.members[r] = r;
    }

    check_invalid(world);

    /* the full parent, in order and reversed; one-rank groups, all at once */
    check_group_t full, rev, self;
    for (int r = 0; r < wsize; r++) {
        ranks[r] = r;
    }
    make_group(&full, "full", &gw, ranks, wsize, 0);
    for (int r = 0; r < wsize; r++) {
        ranks[r] = wsize - 1 - r;
    }
    make_group(&rev, "reversed", &gw, ranks, wsize, 0);
    make_group(&self, "self", &gw, &wrank, 1, 0);
    check_group_t basic[] = { full, rev, self, gw };
    exercise(basic, 4, 100);
    exercise_all(&rev, 200);

    /* subsets: the evens descending and the odds ascending, one tag */
    check_group_t evens, odds;
    n = 0;
    for (int r = (wsize - 1) / 2 * 2; r >= 0; r -= 2) {
        ranks[n++] = r;
    }
    make_group(&evens, "evens", &gw, ranks, n, 5);
    n = 0;
    for (int r = 1; r < wsize; r += 2) {
        ranks[n++] = r;
    }
    if (n > 0) {
        make_group(&odds, "odds", &gw, ranks, n, 5);
    } else {
        memset(&odds, 0, sizeof(odds));
        odds.name = "odds";
    }
    check_group_t parity[] = { evens, odds };
    exercise(parity, 2, 300);
    if (verbose && wrank == 0) {
        printf("group_check: full, reversed, self, subsets ok (%.1f s)\n", check_now() - t0);
    }

    /* one group under two tags, created in opposite orders on odd and even
     * ranks: only the tags tell the two creations apart */
    check_group_t t1, t2;
    n = wsize < 3 ? wsize : 3;
    for (int i = 0; i < n; i++) {
        ranks[i] = n - 1 - i;
    }
    if (wrank % 2) {
        make_group(&t1, "tag 1", &gw, ranks, n, 1);
        make_group(&t2, "tag 2", &gw, ranks, n, 2);
    } else {
        make_group(&t2, "tag 2", &gw, ranks, n, 2);
        make_group(&t1, "tag 1", &gw, ranks, n, 1);
    }
    check_group_t tags[] = { t1, t2 };
    exercise(tags, 2, 400);

    /* overlapping windows {k, k+1, k+2} (tag 100 + k), ascending on odd
     * ranks, descending on even ones; collectives on all of them at once */
    int nw = wsize >= 3 ? wsize - 2 : 0;
    static check_group_t win[MAXG];
    static char win_names[MAXG][32];
    for (int j = 0; j < nw; j++) {
        int k = wrank % 2 ? j : nw - 1 - j;
        int w[3] = { k, k + 1, k + 2 };
        snprintf(win_names[k], sizeof(win_names[k]), "window %d", k);
        make_group(&win[k], win_names[k], &gw, w, 3, 100 + k);
    }
    for (int k = 0; k < nw; k += 16) {
        exercise(&win[k], nw - k < 16 ? nw - k : 16, 500 + 50 * (uint64_t)k);
    }
    if (verbose && wrank == 0) {
        printf("group_check: tags and %d overlapping windows ok (%.1f s)\n", nw,
               check_now() - t0);
    }

    /* nested: from the reversed communicator, its ranks 1.. in reverse
     * order (or its only rank), then the first two of those */
    check_group_t nest, nest2;
    n = 0;
    for (int r = rev.n - 1; r >= (rev.n > 1 ? 1 : 0); r--) {
        ranks[n++] = r;
    }
    make_group(&nest, "nested", &rev, ranks, n, 9);
    int two[2] = { 0, 1 };
    make_group(&nest2, "nested twice", &nest, two, nest.n < 2 ? 1 : 2, 9);   /* listed: in nest */
    check_group_t nests[] = { nest, nest2, rev };
    exercise(nests, 3, 700);
    if (nest.comm != NULL) {
        exercise_all(&nest, 800);
    }

    /* groups made between split and dup, then all used at once; repeated
     * creation and free of one group under one tag */
    for (int it = 0; it < 6; it++) {
        check_group_t sp = gw, dp = gw, g;
        sp.name = "split";
        dp.name = "dup";
        if ((st = rcoll_comm_split(world, 0, -wrank, &sp.comm)) != RCOLL_OK) {
            fatal("rcoll_comm_split", st);
        }
        for (int r = 0; r < wsize; r++) {
            sp.members[r] = wsize - 1 - r;
        }
        sp.me = wsize - 1 - wrank;
        n = 0;
        for (int r = it % wsize; n < wsize; r = (r + 1) % wsize) {
            ranks[n++] = r;                 /* rotated by it */
        }
        n = wsize > 1 && it % 2 ? wsize - 1 : wsize;
        make_group(&g, "repeated", &gw, ranks, n, 42);
        if ((st = rcoll_comm_dup(world, &dp.comm)) != RCOLL_OK) {
            fatal("rcoll_comm_dup", st);
        }
        check_group_t all3[] = { sp, g, dp, full };
        exercise(all3, 4, 1000 + 100 * (uint64_t)it);
        free_group(&sp);
        free_group(&g);
        free_group(&dp);
    }

    /* a deadline: rank 1 creates {0, 1} but rank 0 never calls, so rank 1
     * fails with RCOLL_ERR_TIMEOUT (RCOLL_TIMEOUT set to 1 s here) */
    if (wsize >= 2) {
        const char *was = rcoll_config_get(ctx, "RCOLL_TIMEOUT");
        char saved[64];
        snprintf(saved, sizeof(saved), "%s", was ? was : "60");
        if ((st = rcoll_config_set(ctx, "RCOLL_TIMEOUT", "1")) != RCOLL_OK) {
            fatal("rcoll_config_set", st);
        }
        if (wrank == 1) {
            int pair[2] = { 0, 1 };
            rcoll_comm_t *nc = sentinel;
            double t = check_now();
            st = rcoll_comm_create_group(world, pair, 2, 77, &nc);
            if (st != RCOLL_ERR_TIMEOUT || nc != sentinel || check_now() - t > 30) {
                FAILF("creation without its first rank: returned %s after %.1f s, newcomm %s",
                      rcoll_strerror(st), check_now() - t, nc == sentinel ? "untouched" : "set");
            }
        }
        if ((st = rcoll_config_set(ctx, "RCOLL_TIMEOUT", saved)) != RCOLL_OK) {
            fatal("rcoll_config_set", st);
        }
    }

    free_group(&nest2);
    free_group(&nest);
    for (int k = 0; k < nw; k++) {
        free_group(&win[k]);
    }
    free_group(&t1);
    free_group(&t2);
    free_group(&evens);
    free_group(&odds);
    free_group(&self);
    free_group(&rev);
    free_group(&full);

    int32_t mine = nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK) {
        fatal("summary allreduce", st);
    }
    if (wrank == 0) {
        if (any == 0 && !mine) {
            printf("group_check: %d ranks ok (%.1f s)\n", wsize, check_now() - t0);
        } else {
            printf("group_check: %d ranks: FAILED on %d rank(s)\n", wsize, any ? any : 1);
        }
    }
    fflush(stdout);
    if ((st = rcoll_finalize(ctx)) != RCOLL_OK) {
        fprintf(stderr, "FAIL group_check rank %d: rcoll_finalize returned %s\n", wrank,
                rcoll_strerror(st));
        return 1;
    }
    return (any == 0 && !mine) ? 0 : 1;
}
