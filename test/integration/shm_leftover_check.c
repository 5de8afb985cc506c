/*
 * shm_leftover_check - one rank of a job dies by SIGKILL while the shm
 * segment of a communicator is being set up, or after (issue 12 item 4);
 * test/integration/shm_leftover.sh runs it under rcollrun in a private
 * /dev/shm and checks that no rcoll file is left there, whichever rank
 * died when.
 *
 * Launch with at least 2 ranks:
 *   rcollrun -n 3 test/integration/shm_leftover_check --kill WHEN [-v]
 *
 * WHEN:
 *   none        no kill: an allreduce through shm on a duplicate of the
 *               world, checked, then rcoll_finalize (exit status 0);
 *   setup-root  comm rank 0 posts the first shm allreduce on the duplicate,
 *               progresses it once (it creates the segment then, and has
 *               not yet told anyone its name), and kills itself;
 *   setup-leaf  the last rank kills itself 0.3 s after the duplicate is
 *               made, without calling the allreduce the others are setting
 *               the segment up in (rank 0 has created it, the others have
 *               attached, the last never will);
 *   after       every rank completes an shm allreduce (checked), then the
 *               last rank kills itself while the others wait in a barrier;
 *   init-root, init-leaf
 *               a rank dies inside rcoll_init, after the address exchange
 *               and before the node's where-is-everyone table is set up
 *               (which no RCOLL_FAULT point reaches): every rank starts a
 *               second context with rcoll_init_oob, whose allgather runs over
 *               the first context's world; in the address exchange (its
 *               second call) every rank gathers and all meet in a barrier
 *               (so all have the addresses); then comm rank 0 (init-root) or
 *               the last (init-leaf) stays in it for 2 s, while the others
 *               connect and set up the node's table and wait for it in the
 *               rest of their init, and kills itself before returning.
 * The ranks that do not kill themselves ignore SIGTERM, so rcollrun ends
 * them with SIGKILL after its grace period: no exit path of rcoll runs
 * anywhere.  Exit status: 0 for WHEN = none if the result was right; the
 * others never exit normally (a rank that does, prints why and exits 1).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define PROG "shm_leftover_check"

static void die_now(int rank, const char *when)
{
    printf(PROG ": rank %d kills itself (%s)\n", rank, when);
    fflush(stdout);
    raise(SIGKILL);
}

/* rcoll_init_oob's allgather over the first context's world; the victim
 * dies in the address exchange (the second call) once all have gathered. */
typedef struct {
    rcoll_comm_t *world;
    int           rank, victim, calls;
    const char   *when;
} oob_over_world_t;

static int allgather_over_world(const void *in, void *out, size_t len, void *arg)
{
    oob_over_world_t *o = arg;
    if (rcoll_allgather(in, out, len, RCOLL_UINT8, o->world) != RCOLL_OK) {
        return 1;
    }
    if (++o->calls == 2) {
        if (rcoll_barrier(o->world) != RCOLL_OK) {
            return 1;
        }
        if (o->rank == o->victim) {
            check_sleep(2.0);              /* the others go on meanwhile */
            die_now(o->rank, o->when);
        }
    }
    return 0;
}

/* --kill init-root / init-leaf: never returns normally. */
static int die_in_init(rcoll_context_t *ctx, int rank, int size, const char *when)
{
    oob_over_world_t o = { .world = rcoll_comm_world(ctx), .rank = rank, .calls = 0,
                           .victim = !strcmp(when, "init-root") ? 0 : size - 1, .when = when };
    if (rank != o.victim) {
        signal(SIGTERM, SIG_IGN);          /* rcollrun must SIGKILL this rank */
    }
    rcoll_oob_t oob = { .rank = rank, .size = size, .allgather = allgather_over_world, .arg = &o };
    const char *const cfg[] = { "RCOLL_TIMEOUT=30", NULL };
    rcoll_context_t *second = NULL;
    rcoll_status_t st = rcoll_init_oob(&oob, cfg, &second);
    fprintf(stderr, "FAIL " PROG " rank %d: rcoll_init_oob returned %d (%s) without rank %d; "
            "%d allgather call(s)\n", rank, (int)st, rcoll_strerror(st), o.victim, o.calls);
    return 1;
}

/* The allreduce (sum of rank + 1 over count int64) through shm, checked. */
static void allreduce_checked(rcoll_comm_t *comm, int rank, int size, size_t count)
{
    int64_t *in = malloc(count * sizeof(*in)), *out = malloc(count * sizeof(*out));
    if (in == NULL || out == NULL) {
        fprintf(stderr, "FAIL " PROG " rank %d: out of memory\n", rank);
        exit(1);
    }
    for (size_t i = 0; i < count; i++) {
        in[i] = rank + 1 + (int64_t)i;
    }
    rcoll_status_t st = rcoll_allreduce(in, out, count, RCOLL_INT64, RCOLL_SUM, comm);
    if (st != RCOLL_OK) {
        check_fatal(PROG, rank, "rcoll_allreduce", st);
    }
    for (size_t i = 0; i < count; i++) {
        int64_t want = (int64_t)size * (size + 1) / 2 + (int64_t)size * (int64_t)i;
        if (out[i] != want) {
            fprintf(stderr, "FAIL " PROG " rank %d: element %zu is %lld, expected %lld\n", rank, i,
                    (long long)out[i], (long long)want);
            exit(1);
        }
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const char *when = NULL;
    int verbose = 0, rank = 0, size = 0;
    char *rest[3] = { argv[0], NULL, NULL };
    int nrest = 1;
    rcoll_context_t *ctx = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kill") && i + 1 < argc) {
            when = argv[++i];
        } else if (nrest < 2) {
            rest[nrest++] = argv[i];
        }
    }
    if (when == NULL || (strcmp(when, "none") && strcmp(when, "setup-root") &&
                         strcmp(when, "setup-leaf") && strcmp(when, "after") &&
                         strcmp(when, "init-root") && strcmp(when, "init-leaf"))) {
        fprintf(stderr, "usage: %s --kill none|setup-root|setup-leaf|after|init-root|init-leaf "
                "[-v]\n", argv[0]);
        return 2;
    }
    const char *const cfg[] = { "RCOLL_TIMEOUT=30", NULL };
    int rc = check_start(PROG, nrest, rest, cfg, &ctx, &rank, &size, &verbose);
    if (rc != 0) {
        return rc;
    }
    if (size < 2) {
        printf(PROG ": needs 2 ranks or more, skipped\n");
        rcoll_finalize(ctx);
        return 0;
    }
    if (!strncmp(when, "init-", 5)) {
        return die_in_init(ctx, rank, size, when);
    }
    rcoll_status_t st = rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", "shm");
    rcoll_comm_t *dup = NULL;
    if (st != RCOLL_OK || (st = rcoll_comm_dup(rcoll_comm_world(ctx), &dup)) != RCOLL_OK) {
        check_fatal(PROG, rank, "set-up", st);
    }
    int victim = !strcmp(when, "setup-root") ? 0 : size - 1;
    if (strcmp(when, "none") && rank != victim) {
        signal(SIGTERM, SIG_IGN);          /* rcollrun must SIGKILL this rank */
    }

    if (!strcmp(when, "setup-root") || !strcmp(when, "setup-leaf")) {
        if (rank == victim && victim == 0) {
            int64_t in = 1, out = 0;
            rcoll_request_t *req = NULL;
            int done = 0;
            st = rcoll_iallreduce(&in, &out, 1, RCOLL_INT64, RCOLL_SUM, dup, &req);
            if (st != RCOLL_OK) {
                check_fatal(PROG, rank, "rcoll_iallreduce", st);
            }
            rcoll_test(req, &done);                  /* rank 0 creates the segment here */
            die_now(rank, when);
        } else if (rank == victim) {
            check_sleep(0.3);
            die_now(rank, when);
        }
        allreduce_checked(dup, rank, size, 1);        /* waits for the victim */
        /* Rank 0 may have delivered its part before it died (its
         * rcoll_test): then that allreduce rightly succeeds, and the next
         * must fail (PEER_FAILED: check_fatal exits 1) or be killed. */
        allreduce_checked(dup, rank, size, 1);
        fprintf(stderr, "FAIL " PROG " rank %d: two allreduces completed without rank %d\n", rank,
                victim);
        return 1;
    }
    allreduce_checked(dup, rank, size, 1);
    allreduce_checked(dup, rank, size, 1 << 17);      /* the pipeline too (1 MiB) */
    if (!strcmp(when, "after")) {
        if (rank == victim) {
            die_now(rank, when);
        }
        st = rcoll_barrier(dup);
        fprintf(stderr, "FAIL " PROG " rank %d: the barrier returned %d without rank %d\n", rank,
                (int)st, victim);
        return 1;
    }
    if (verbose) {
        printf(PROG ": rank %d ok\n", rank);
    }
    rcoll_comm_free(dup);
    rcoll_finalize(ctx);
    return 0;
}
