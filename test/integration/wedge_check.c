/*
 * wedge_check - a failed or long collective must not wedge the ones after it
 * on the same communicator (issue 14, "deadlines that mean no progress").
 *
 * Launch with at least 2 ranks:
 *   rcollrun -n 2 test/integration/wedge_check [-v] [--big BYTES] [--only queued,late]
 *
 * With RCOLL_TIMEOUT=1 (given to rcoll_init):
 *  queued: every rank posts an allreduce of --big bytes (default 512 MiB,
 *    which takes longer than the timeout here, or less where the machine's
 *    MemAvailable over 4 x the ranks is less: a 2 GiB guest OOM-killed a rank
 *    at 512 MiB; the ranks agree on the least), then a small one queued
 *    behind it, and waits for the small one first.  The small one's clock
 *    must not run while the big one ahead of it progresses: both succeed, with
 *    the right sums, and so does the allreduce after them.  The check says
 *    when the big one was too quick to prove anything (then it proves less,
 *    but still fails on a wedge).
 *  late: rank 1 enters two allreduces 2.6 s late (timeout 1 s).  The others
 *    time out on both, one after the other (two collectives abandoned in a
 *    row; the late rank may or may not time out, depending on what they left
 *    behind); then, once the late rank has come, three allreduces must each
 *    succeed at once (well under the timeout) with the right sums on every
 *    rank.
 * The ranks then agree on the outcome with one more allreduce.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcoll.h"
#include "check_common.h"

#define TIMEOUT_S 1.0
#define LATE      1
#define LATE_S    2.6
#define NLATE     2   /* allreduces the others call before the late rank comes */
#define NAFTER    3

static int wrank, wsize, verbose;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL wedge_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define fatal(what, st) check_fatal("wedge_check", wrank, (what), (st))

/* An 8-byte allreduce of (rank + salt); its sum must be right. */
static rcoll_status_t small_allreduce(rcoll_comm_t *comm, int64_t salt, const char *what)
{
    int64_t in = wrank + salt, out = -1;
    int64_t want = (int64_t)wsize * (wsize - 1) / 2 + (int64_t)wsize * salt;
    rcoll_status_t st = rcoll_allreduce(&in, &out, 1, RCOLL_INT64, RCOLL_SUM, comm);
    if (st == RCOLL_OK && out != want)
        FAILF("%s: sum %lld, expected %lld", what, (long long)out, (long long)want);
    return st;
}

static void queued(rcoll_comm_t *world, size_t big)
{
    size_t n = big / sizeof(int32_t);
    int32_t *bin = malloc(n * sizeof(int32_t)), *bout = malloc(n * sizeof(int32_t));
    if (bin == NULL || bout == NULL)
        fatal("malloc of the big buffers", RCOLL_ERR_NO_MEMORY);
    for (size_t i = 0; i < n; i++)
        bin[i] = (int32_t)(i & 0xff) + wrank;
    int64_t sin = wrank + 7, sout = -1;
    rcoll_request_t *rbig, *rsmall;
    rcoll_status_t st;

    double t0 = check_now();
    if ((st = rcoll_iallreduce(bin, bout, n, RCOLL_INT32, RCOLL_SUM, world, &rbig)) != RCOLL_OK)
        fatal("big iallreduce", st);
    if ((st = rcoll_iallreduce(&sin, &sout, 1, RCOLL_INT64, RCOLL_SUM, world, &rsmall)) != RCOLL_OK)
        fatal("small iallreduce", st);
    rcoll_status_t ss = rcoll_wait(rsmall);
    double tsmall = check_now() - t0;
    rcoll_status_t sb = rcoll_wait(rbig);
    double tbig = check_now() - t0;
    if (ss != RCOLL_OK)
        FAILF("queued: the small allreduce behind a %zu-byte one returned %s after %.2f s "
              "(RCOLL_TIMEOUT=%.0f): its clock ran while the one ahead progressed", big,
              rcoll_strerror(ss), tsmall, TIMEOUT_S);
    else if (sout != (int64_t)wsize * (wsize - 1) / 2 + 7 * (int64_t)wsize)
        FAILF("queued: small sum %lld is wrong", (long long)sout);
    if (sb != RCOLL_OK)
        FAILF("queued: the %zu-byte allreduce returned %s after %.2f s", big, rcoll_strerror(sb), tbig);
    int64_t base = (int64_t)wsize * (wsize - 1) / 2;
    for (size_t i = 0; sb == RCOLL_OK && i < n; i += 4093) {
        if (bout[i] != (int32_t)((int64_t)wsize * (int64_t)(i & 0xff) + base)) {
            FAILF("queued: big result [%zu] = %d is wrong", i, bout[i]);
            break;
        }
    }
    if ((st = small_allreduce(world, 11, "queued: the allreduce after them")) != RCOLL_OK)
        FAILF("queued: the allreduce after them returned %s: the communicator is wedged",
              rcoll_strerror(st));
    if (wrank == 0)
        printf("wedge_check: queued: big %zu bytes took %.2f s (RCOLL_TIMEOUT=%.0f)%s\n", big, tbig,
               TIMEOUT_S, tbig > TIMEOUT_S * 1.5 ? "" : "; too quick to prove the deadline");
    free(bin);
    free(bout);
}

static void late(rcoll_comm_t *world)
{
    rcoll_status_t st = small_allreduce(world, 99, "late: the allreduce before");
    if (st != RCOLL_OK)
        FAILF("late: the allreduce before returned %s", rcoll_strerror(st));
    double tsync = check_now();     /* every rank leaves it within moments */
    if (wrank == LATE)
        check_sleep(LATE_S);
    /* the others time out on both (the first at 1 s, the second at 2 s),
     * so each has two collectives abandoned in a row */
    for (int j = 0; j < NLATE; j++) {
        double t0 = check_now();
        st = small_allreduce(world, 100 + j, "late: an allreduce entered late");
        double el = check_now() - t0;
        if (verbose)
            fprintf(stderr, "rank %d: late allreduce %d: %s after %.2f s\n", wrank, j + 1,
                    rcoll_strerror(st), el);
        if (wrank != LATE && st != RCOLL_ERR_TIMEOUT)
            FAILF("late: rank %d was %.1f s late, RCOLL_TIMEOUT=%.0f, yet allreduce %d returned %s",
                  LATE, LATE_S, TIMEOUT_S, j + 1, rcoll_strerror(st));
    }
    /* let everyone's late ones end (the late rank's may time out too), and
     * start the next ones together */
    check_sleep(tsync + LATE_S + TIMEOUT_S + 0.5 - check_now());
    for (int k = 0; k < NAFTER; k++) {
        char what[64];
        snprintf(what, sizeof(what), "late: allreduce %d after it", k + 1);
        double t0 = check_now();
        st = small_allreduce(world, 200 + k, what);
        double el = check_now() - t0;
        if (st != RCOLL_OK)
            FAILF("%s returned %s after %.2f s: the communicator is wedged", what,
                  rcoll_strerror(st), el);
        else if (el > TIMEOUT_S / 2)
            FAILF("%s took %.2f s: it waited out (part of) a timeout", what, el);
    }
}

/* The default big size: 512 MiB, or MemAvailable / (4 x ranks) where that is
 * less (every rank holds an input and an output of that size, and the
 * transport may pin both), in whole MiB, at least 1 MiB. */
static size_t default_big(int nranks)
{
    size_t big = (size_t)512 << 20;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kib;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
            unsigned long long cap = kib * 1024ULL / (4ULL * (unsigned)nranks);
            if (cap < big)
                big = cap < (1ULL << 20) ? (size_t)1 << 20 : (size_t)(cap >> 20) << 20;
            break;
        }
    }
    if (f != NULL)
        fclose(f);
    return big;
}

int main(int argc, char **argv)
{
    size_t big = 0;
    const char *only = "";
    for (int i = 1; i + 1 < argc;) {
        if (strcmp(argv[i], "--big") == 0 && check_parse_size(argv[i + 1], &big) == 0) {
        } else if (strcmp(argv[i], "--only") == 0) {
            only = argv[i + 1];
        } else {
            i++;
            continue;
        }
        memmove(&argv[i], &argv[i + 2], sizeof(char *) * (size_t)(argc - i - 1));
        argc -= 2;
    }
    const char *const config[] = {"RCOLL_TIMEOUT=1", "RCOLL_REVOKE_ON_TIMEOUT=0", NULL};
    rcoll_context_t *ctx;
    int rc = check_start("wedge_check", argc, argv, config, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0)
        return rc;
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    if (wsize < 2) {
        fprintf(stderr, "wedge_check: needs at least 2 ranks (got %d)\n", wsize);
        rcoll_finalize(ctx);
        return 2;
    }
    rcoll_status_t st;
    if ((st = small_allreduce(world, 1, "warm-up")) != RCOLL_OK)
        fatal("warm-up allreduce", st);
    if (big == 0) {     /* every rank must use the same size: the least */
        uint64_t mine_big = default_big(wsize), least = 0;
        if ((st = rcoll_allreduce(&mine_big, &least, 1, RCOLL_UINT64, RCOLL_MIN, world)) != RCOLL_OK)
            fatal("big-size allreduce", st);
        big = (size_t)least;
    }
    if (check_list_has(only, "queued"))
        queued(world, big);
    if (check_list_has(only, "late"))
        late(world);

    int32_t mine = nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal("summary allreduce", st);
    if (wrank == 0)
        printf("wedge_check: %d ranks %s\n", wsize, any == 0 ? "ok" : "FAILED");
    fflush(stdout);
    st = rcoll_finalize(ctx);
    return any == 0 && st == RCOLL_OK ? 0 : 1;
}
