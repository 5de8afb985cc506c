/*
 * shrink_check - survivors of a dead or silent rank shrink and go on.
 *
 * Launch with 6 ranks under rcollrun --enable-recovery (so rcollrun lets the
 * survivors run):  rcollrun --enable-recovery -n 6 test/integration/shrink_check MODE
 *
 *   kill   rank 2 raises SIGKILL in the middle of an allreduce (after posting
 *          it and progressing it a few times: a fixed point, no sleep).  The
 *          5 others see an error (PEER_FAILED; TIMEOUT where nothing reports
 *          the death before RCOLL_TIMEOUT), shrink, and their next allreduce
 *          and bcast on the new communicator of 5 are right.
 *   kill2  as kill, and rank 4 raises SIGKILL as it is about to join the
 *          shrink: the survivors exclude it too (communicator of 4).
 *   stop   rank 3 raises SIGSTOP in the middle of an allreduce.  The others
 *          time out (RCOLL_TIMEOUT=3), shrink without it and check the new
 *          communicator; then rank 0 sends it SIGCONT: its allreduce and a
 *          new one on the old world fail, and its shrink returns
 *          PEER_FAILED: it is not readmitted.  Exits 0 everywhere.
 *
 * Every rank that finishes its part prints "shrink_check rank R: ok ..." and
 * exits 0; a failed check prints "FAIL shrink_check ..." and exits 1.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rcoll.h"

#define NRANKS 6
#define BIG    (256 * 1024)    /* elements: a pipelined allreduce */

static int wrank;

#define FAIL(...) do { fprintf(stderr, "FAIL shrink_check rank %d: ", wrank); \
                       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Post a large allreduce, progress it a few times, then raise sig. */
static void die_mid_allreduce(rcoll_comm_t *world, int sig, int64_t *buf)
{
    rcoll_request_t *req;
    int done = 0;
    for (int i = 0; i < BIG; i++)
        buf[i] = wrank;
    if (rcoll_iallreduce(RCOLL_IN_PLACE, buf, BIG, RCOLL_INT64, RCOLL_SUM, world, &req) != RCOLL_OK)
        FAIL("could not post the allreduce");
    for (int i = 0; i < 20 && !done; i++)
        rcoll_test(req, &done);
    fflush(NULL);
    raise(sig);
    /* only a stopped rank gets here, once continued */
    rcoll_status_t st = rcoll_wait(req);
    /* The allreduce in flight may still complete: a read it had started
     * before the stop finishes, and the sender keeps its source readable
     * until then (docs/protocols.md).  The next call on the old world must
     * fail: the others revoked it and excluded this rank. */
    if (st == RCOLL_OK &&
        rcoll_allreduce(RCOLL_IN_PLACE, buf, BIG, RCOLL_INT64, RCOLL_SUM, world) == RCOLL_OK)
        FAIL("two allreduces on the old world succeeded after it was excluded");
}

/* Large allreduces on comm until one fails (one may complete if all a rank
 * needed had arrived before the death); its status. */
static rcoll_status_t until_fails(rcoll_comm_t *comm, int64_t *buf, double *took)
{
    double t0 = now();
    rcoll_status_t st = RCOLL_OK;
    for (int k = 0; k < 3 && st == RCOLL_OK; k++) {
        for (int i = 0; i < BIG; i++)
            buf[i] = wrank;
        st = rcoll_allreduce(RCOLL_IN_PLACE, buf, BIG, RCOLL_INT64, RCOLL_SUM, comm);
    }
    *took = now() - t0;
    return st;
}

/* The new communicator holds exactly the world ranks not in gone, in order,
 * and computes right. */
static void check_new(rcoll_comm_t *nc, unsigned gone, int64_t *buf)
{
    int want = 0;
    int64_t sum = 0;
    for (int r = 0; r < NRANKS; r++)
        if (!(gone & (1u << r))) {
            want++;
            sum += r;
        }
    if (rcoll_comm_size(nc) != want)
        FAIL("the new communicator has %d ranks, expected %d", rcoll_comm_size(nc), want);
    for (int i = 0; i < BIG; i++)
        buf[i] = wrank + i;
    if (rcoll_allreduce(RCOLL_IN_PLACE, buf, BIG, RCOLL_INT64, RCOLL_SUM, nc) != RCOLL_OK)
        FAIL("allreduce on the new communicator failed");
    for (int i = 0; i < BIG; i++)
        if (buf[i] != sum + (int64_t)want * i)
            FAIL("allreduce on the new communicator: element %d is %lld, expected %lld", i,
                 (long long)buf[i], (long long)(sum + (int64_t)want * i));
    int64_t b[4] = { 0, 0, 0, 0 };
    int root = want - 1;
    if (rcoll_comm_rank(nc) == root)
        for (int i = 0; i < 4; i++)
            b[i] = 1000 + i;
    if (rcoll_bcast(b, 4, RCOLL_INT64, root, nc) != RCOLL_OK)
        FAIL("bcast on the new communicator failed");
    for (int i = 0; i < 4; i++)
        if (b[i] != 1000 + i)
            FAIL("bcast on the new communicator: element %d is %lld", i, (long long)b[i]);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "kill";
    int stop = strcmp(mode, "stop") == 0, kill2 = strcmp(mode, "kill2") == 0;
    if (!stop && !kill2 && strcmp(mode, "kill") != 0) {
        fprintf(stderr, "usage: shrink_check [kill|kill2|stop]\n");
        return 2;
    }
    const char *config[] = { stop ? "RCOLL_TIMEOUT=3" : "RCOLL_TIMEOUT=5", NULL };
    rcoll_context_t *ctx;
    if (rcoll_init(config, &ctx) != RCOLL_OK)
        FAIL("rcoll_init failed");
    wrank = rcoll_context_rank(ctx);
    if (rcoll_context_size(ctx) != NRANKS)
        FAIL("needs %d ranks, has %d", NRANKS, rcoll_context_size(ctx));
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int64_t *buf = malloc(sizeof(int64_t) * BIG);
    int64_t pids[NRANKS], mypid = getpid();
    if (buf == NULL || rcoll_allgather(&mypid, pids, 1, RCOLL_INT64, world) != RCOLL_OK)
        FAIL("set-up failed");

    int victim = stop ? 3 : 2;
    unsigned gone = 1u << victim | (kill2 ? 1u << 4 : 0);
    if (wrank == victim) {
        die_mid_allreduce(world, stop ? SIGSTOP : SIGKILL, buf);
        /* continued after SIGSTOP: never readmitted */
        int64_t x = 1;
        if (rcoll_allreduce(RCOLL_IN_PLACE, &x, 1, RCOLL_INT64, RCOLL_SUM, world) == RCOLL_OK)
            FAIL("an allreduce on the old world succeeded after it was excluded");
        rcoll_comm_t *nc = NULL;
        rcoll_status_t st = rcoll_comm_shrink(world, &nc);
        if (st != RCOLL_ERR_PEER_FAILED || nc != NULL)
            FAIL("its shrink returned %s, expected %s and no communicator", rcoll_strerror(st),
                 rcoll_strerror(RCOLL_ERR_PEER_FAILED));
        printf("shrink_check rank %d: ok (stopped, continued, excluded)\n", wrank);
        rcoll_finalize(ctx);
        return 0;
    }
    double took;
    rcoll_status_t st = until_fails(world, buf, &took);
    if (st == RCOLL_OK)
        FAIL("three allreduces succeeded although rank %d is gone", victim);
    if (kill2 && wrank == 4) {
        fflush(NULL);
        raise(SIGKILL);
    }
    int failed[NRANKS], nf = rcoll_comm_failed(world, failed, NRANKS);
    rcoll_comm_t *nc;
    double t0 = now();
    rcoll_status_t sst = rcoll_comm_shrink(world, &nc);
    if (sst != RCOLL_OK)
        FAIL("rcoll_comm_shrink returned %s", rcoll_strerror(sst));
    double shrink_s = now() - t0;
    check_new(nc, gone, buf);
    int64_t x = 1;
    if (rcoll_allreduce(RCOLL_IN_PLACE, &x, 1, RCOLL_INT64, RCOLL_SUM, world) == RCOLL_OK)
        FAIL("an allreduce on the revoked world succeeded");
    printf("shrink_check rank %d: ok (first error %s after %.1f s; %d known failed before the "
           "shrink; shrink %.1f s; new communicator of %d)\n", wrank, rcoll_strerror(st), took, nf,
           shrink_s, rcoll_comm_size(nc));
    rcoll_comm_free(nc);
    if (stop && wrank == 0)
        kill((pid_t)pids[victim], SIGCONT);
    rcoll_finalize(ctx);      /* the world is revoked: returns an error at once */
    free(buf);
    return 0;
}
