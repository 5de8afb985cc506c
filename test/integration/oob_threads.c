/*
 * oob_threads - N threads in one process, each with its own context made by
 * rcoll_init_oob over an in-process all-gather (a pthread barrier and a
 * shared buffer), run the integration checks (check_suites.h: coll_check's
 * and comm_check's cases) as if they were N processes under a launcher.  This proves that contexts share no
 * mutable state: each thread's selector, log and configuration are its own.
 *
 *   oob_threads [--threads N] [--nodes K] [--checks coll,comm] [--quick] [-v]
 *
 * Without --nodes it runs twice: once with node = NULL (all threads on the
 * host's node) and once with K = 2 node strings ("node0", "node1"), each
 * shared by N/K threads.  It first checks rcoll_init_oob's argument checks
 * and its reaction to a failing all-gather.  Exit status 0 only if all passed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"
#include "check_suites.h"

#define MAX_THREADS 64

/* The "runtime" the threads share: what an MPI program's all-gather would be. */
typedef struct {
    pthread_barrier_t bar;
    int               n;
    unsigned char    *buf;
    size_t            cap;
    int               ncalls;      /* all-gathers made (counted by rank 0) */
} world_t;

typedef struct {
    world_t    *w;
    int         rank, nodes, quick, verbose;
    const char *checks;            /* "coll,comm" or a part */
    char        node[32];
    int         result;            /* 0 passed */
    int         after_init;        /* all-gathers seen after rcoll_init_oob returned */
    int         done_init;
} thread_t;

static void barrier(world_t *w)
{
    int rc = pthread_barrier_wait(&w->bar);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        fprintf(stderr, "FAIL oob_threads: pthread_barrier_wait returned %d\n", rc);
        _exit(1);
    }
}

static int thread_allgather(const void *in, void *out, size_t len, void *arg)
{
    thread_t *t = arg;
    world_t *w = t->w;
    if (t->done_init)
        t->after_init++;
    barrier(w);                     /* the previous call's readers are done */
    if (t->rank == 0) {
        w->ncalls++;
        if (w->cap < (size_t)w->n * len) {
            free(w->buf);
            w->cap = (size_t)w->n * len;
            w->buf = malloc(w->cap ? w->cap : 1);
        }
    }
    barrier(w);
    if (w->buf == NULL)
        return -1;
    memcpy(w->buf + (size_t)t->rank * len, in, len);
    barrier(w);
    memcpy(out, w->buf, (size_t)w->n * len);
    return 0;
}

static void *thread_main(void *arg)
{
    thread_t *t = arg;
    int n = t->w->n;
    rcoll_oob_t oob = { .rank = t->rank, .size = n, .allgather = thread_allgather, .arg = t,
                        .node = NULL };
    if (t->nodes > 0) {
        snprintf(t->node, sizeof(t->node), "node%d", t->rank * t->nodes / n);
        oob.node = t->node;
    }
    rcoll_context_t *ctx = NULL;
    rcoll_status_t st = rcoll_init_oob(&oob, NULL, &ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL oob_threads thread %d: rcoll_init_oob: %s\n", t->rank,
                rcoll_strerror(st));
        _exit(1);     /* the other threads would wait for this one forever */
    }
    t->done_init = 1;
    int fails = 0;
    int want_local = t->nodes > 0 ? n / t->nodes : n;
    if (rcoll_context_rank(ctx) != t->rank || rcoll_context_size(ctx) != n ||
        rcoll_context_local_size(ctx) != want_local) {
        fprintf(stderr, "FAIL oob_threads thread %d: context says rank %d of %d, %d on the node; "
                "expected rank %d of %d, %d on the node\n", t->rank, rcoll_context_rank(ctx),
                rcoll_context_size(ctx), rcoll_context_local_size(ctx), t->rank, n, want_local);
        fails++;
    }
    coll_check_opts_t copt = { .quick = t->quick, .verbose = t->verbose };
    if (check_list_has(t->checks, "coll"))
        fails += coll_check_run(ctx, &copt) != 0;
    if (check_list_has(t->checks, "comm"))
        fails += comm_check_run(ctx, t->verbose) != 0;
    st = rcoll_finalize(ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL oob_threads thread %d: rcoll_finalize: %s\n", t->rank,
                rcoll_strerror(st));
        fails++;
    }
    if (t->after_init != 0) {
        fprintf(stderr, "FAIL oob_threads thread %d: rcoll called the all-gather %d time(s) after "
                "rcoll_init_oob returned\n", t->rank, t->after_init);
        fails++;
    }
    t->result = fails;
    return NULL;
}

/* N threads, one context each; 0 if every thread passed. */
static int run_threads(int n, int nodes, const char *checks, int quick, int verbose)
{
    world_t w = { .n = n };
    thread_t t[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_init(&w.bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        t[i] = (thread_t){ .w = &w, .rank = i, .nodes = nodes, .checks = checks, .quick = quick,
                           .verbose = verbose };
        if (pthread_create(&tid[i], NULL, thread_main, &t[i]) != 0) {
            fprintf(stderr, "FAIL oob_threads: pthread_create failed\n");
            _exit(1);
        }
    }
    int fails = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        fails += t[i].result != 0;
    }
    pthread_barrier_destroy(&w.bar);
    free(w.buf);
    printf("oob_threads: %d threads, %s: %s (%d all-gathers)\n", n,
           nodes > 0 ? (nodes == 1 ? "one named node" : "named nodes") : "node = host name",
           fails ? "FAILED" : "ok", w.ncalls);
    fflush(stdout);
    return fails != 0;
}

/* ---- rcoll_init_oob's checks at the API edge ---- */

static int ag_fail(const void *in, void *out, size_t len, void *arg)
{
    (void)in; (void)out; (void)len; (void)arg;
    return -7;
}

/* Puts every rank's data at index 0: wrong for rank 1. */
static int ag_misplace(const void *in, void *out, size_t len, void *arg)
{
    (void)arg;
    memcpy(out, in, len);
    memset((char *)out + len, 0xee, len);
    return 0;
}

static int expect_init(const char *what, const rcoll_oob_t *oob, rcoll_status_t want)
{
    rcoll_context_t *ctx = (rcoll_context_t *)&ctx;     /* must stay untouched */
    rcoll_status_t st = rcoll_init_oob(oob, NULL, &ctx);
    if (st != want || ctx != (rcoll_context_t *)&ctx) {
        fprintf(stderr, "FAIL oob_threads: %s: rcoll_init_oob returned %s, expected %s%s\n",
                what, rcoll_strerror(st), rcoll_strerror(want),
                ctx != (rcoll_context_t *)&ctx ? " (and wrote *ctx)" : "");
        return 1;
    }
    return 0;
}

static int edge_checks(void)
{
    int fails = 0;
    rcoll_oob_t ok = { .rank = 0, .size = 2, .allgather = ag_fail };
    rcoll_oob_t o;
    fails += expect_init("NULL oob", NULL, RCOLL_ERR_INVALID_ARG);
    o = ok; o.size = 0;
    fails += expect_init("size 0", &o, RCOLL_ERR_INVALID_ARG);
    o = ok; o.rank = 2;
    fails += expect_init("rank == size", &o, RCOLL_ERR_INVALID_ARG);
    o = ok; o.rank = -1;
    fails += expect_init("rank -1", &o, RCOLL_ERR_INVALID_ARG);
    o = ok; o.allgather = NULL;
    fails += expect_init("NULL allgather", &o, RCOLL_ERR_INVALID_ARG);
    fails += expect_init("failing allgather", &ok, RCOLL_ERR_BOOTSTRAP);
    o = ok; o.rank = 1; o.allgather = ag_misplace;
    fails += expect_init("allgather out of rank order", &o, RCOLL_ERR_BOOTSTRAP);
    if (rcoll_init_oob(&ok, NULL, NULL) != RCOLL_ERR_INVALID_ARG) {
        fprintf(stderr, "FAIL oob_threads: NULL ctx: not RCOLL_ERR_INVALID_ARG\n");
        fails++;
    }
    /* size 1 needs no exchange: a context of one */
    rcoll_context_t *ctx = NULL;
    o = ok; o.size = 1;
    if (rcoll_init_oob(&o, NULL, &ctx) != RCOLL_OK || rcoll_context_size(ctx) != 1 ||
        rcoll_finalize(ctx) != RCOLL_OK) {
        fprintf(stderr, "FAIL oob_threads: a context of size 1 did not work\n");
        fails++;
    }
    printf("oob_threads: argument and all-gather failure checks: %s\n", fails ? "FAILED" : "ok");
    fflush(stdout);
    return fails != 0;
}

int main(int argc, char **argv)
{
    int n = 4, nodes = -1, quick = 0, verbose = 0;
    const char *checks = "coll,comm";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
            nodes = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--checks") && i + 1 < argc) {
            checks = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--nodes K] [--checks coll,comm] [--quick] "
                    "[-v]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || n > MAX_THREADS || nodes > n || (nodes > 0 && n % nodes != 0)) {
        fprintf(stderr, "oob_threads: need 1 <= threads <= %d and nodes dividing threads\n",
                MAX_THREADS);
        return 2;
    }
    int fails = edge_checks();
    if (nodes >= 0) {
        fails += run_threads(n, nodes, checks, quick, verbose);
    } else {
        fails += run_threads(n, 0, checks, quick, verbose);
        fails += run_threads(n, n >= 2 ? 2 : 1, checks, quick, verbose);
    }
    printf("oob_threads: %s\n", fails ? "FAILED" : "all ok");
    return fails ? 1 : 0;
}
