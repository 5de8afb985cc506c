/*
 * coll_check - every collective x algorithm x dtype x op x count x in-place
 * x alignment x root, checked against results each rank computes locally.
 *
 * Launch with any PMIx launcher, e.g.  rcollrun -n 5 test/integration/coll_check --quick
 *
 *   --quick        fewer sizes and combinations (CI sanity run)
 *   --coll LIST    comma-separated collectives (allreduce,iallreduce,bcast,ibcast,
 *                  barrier,ibarrier,reduce,ireduce,allgather,iallgather,
 *                  reduce_scatter,ireduce_scatter); default all
 *   --algs LIST    comma-separated algorithm names; "auto" = the selector's choice
 *   --counts LIST  use exactly these counts (elements) with every dtype x op
 *   -v             per-algorithm progress lines from rank 0
 *
 * Each rank fills its buffers from a formula of (rank, index, case), so the
 * expected result is computed without communication and compared exactly
 * (see check_common.c for why floats are exact too).  Besides the result it
 * checks guard bytes before and after every buffer, that sendbuf is not
 * modified, and that reduce leaves a non-root's recvbuf alone.  A non-OK
 * status from the library ends the run at once (peers would otherwise wait
 * for this rank); data mismatches are counted and the run goes on.  Rank 0
 * prints one line per collective; exit status 0 only if every rank passed.
 * The cases are in coll_cases.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "rcoll.h"
#include "check_common.h"
#include "check_suites.h"

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--quick] [--coll LIST] [--algs LIST] [--counts LIST] [-v]\n"
            "  collectives:", prog);
    coll_check_print_names(stderr);
    fprintf(stderr, "\n  algorithms: names from rcoll_algorithms(), \"auto\" = selector\n");
}

int main(int argc, char **argv)
{
    coll_check_opts_t opt = { 0 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            opt.quick = 1;
        } else if (!strcmp(argv[i], "-v")) {
            opt.verbose = 1;
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            opt.coll_list = argv[++i];
        } else if (!strcmp(argv[i], "--algs") && i + 1 < argc) {
            opt.alg_list = argv[++i];
        } else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
            opt.count_list = argv[++i];
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    if (opt.coll_list) {   /* reject unknown names before starting */
        char *copy = strdup(opt.coll_list);
        for (char *w = strtok(copy, ","); w; w = strtok(NULL, ",")) {
            if (!coll_check_known(w)) {
                fprintf(stderr, "unknown collective '%s'\n", w);
                usage(argv[0]);
                return 2;
            }
        }
        free(copy);
    }

    rcoll_context_t *ctx;
    rcoll_status_t st = rcoll_init(NULL, &ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rcoll_init: %s\n", rcoll_strerror(st));
        return 1;
    }
    int rank = rcoll_context_rank(ctx);
    /* a bcast reader that sleeps (oversubscribed, RCOLL_WAIT_SLEEP_MIN)
     * lowers its thread's timer slack for the wait only: the caller's
     * must be back afterwards */
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    int rc = coll_check_run(ctx, &opt);
    int slack_after = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (slack_after != slack) {
        fprintf(stderr, "FAIL rank=%d: the thread's timer slack was %d ns before the "
                "collectives and is %d ns after\n", rank, slack, slack_after);
        rc = 1;
    }
    st = rcoll_finalize(ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rank=%d: rcoll_finalize returned %s\n", rank, rcoll_strerror(st));
        rc = 1;
    }
    return rc;
}
