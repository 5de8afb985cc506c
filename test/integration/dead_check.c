/*
 * dead_check - a rank that dies is named within 5 s (issue 14 item 1).
 *
 *   RCOLLRUN_KEEP_GOING=1 rcollrun -n 4 test/integration/dead_check [--bytes B] [--after N]
 *                                  [--stamp FILE] [--bound S] [-v] [--no-capture]
 *
 * RCOLL_TIMEOUT is given to rcoll_init as 300 (the default), so no deadline
 * can be what ends the wait.  Every rank runs allreduces of B bytes (default
 * 8) on the world; before its N-th (default 20) the victim, world rank 2
 * (the last rank with fewer than 3), writes the time (CLOCK_REALTIME) to
 * FILE, posts the allreduce with rcoll_iallreduce, so it is in the middle of
 * it (its first messages or shared-memory slot written), and SIGKILLs itself.
 * Each survivor must then see its N-th allreduce return RCOLL_ERR_PEER_FAILED
 * (or, where the victim delivered its part before the kill, succeed with the
 * right result, and the next one fail so) within S s (--bound, default 5)
 * of the death (from FILE; without it, of its own entry), its log
 * (stderr, captured) must name world rank 2, and a later allreduce on the
 * world must also return RCOLL_ERR_PEER_FAILED within S s.  In the
 * soft-RDMA guest S is 30 (the emulated machine is 10-25x slower, and with
 * RCOLL_LIVENESS=transport a Soft-RoCE receiver learns of the death from a
 * probe's retries: docs/reliability.md).  Each survivor
 * prints "dead_check: rank R ok: ..." with the times measured, or FAIL lines,
 * then waits for the others to get there (files FILE.done.R) and exits 0
 * only if all held.  rcollrun must let the survivors run on after
 * the death (RCOLLRUN_KEEP_GOING=1); its exit status is then the victim's
 * (137).  test/integration/run.sh --only dead runs it over the modes.
 * --no-capture (debugging) leaves the log on stderr as it comes (a crash's
 * message is kept) and skips the check that it names the victim.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

static double bound_s = 5.0;     /* --bound: 5 s on the host, more in the emulated guest */
static int wrank, wsize, verbose, no_capture;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL dead_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int   saved_fd;
    FILE *file;
} captured_t;

static void capture_begin(captured_t *c)
{
    fflush(stderr);
    if (no_capture) {
        c->file = NULL;
        return;
    }
    c->file = tmpfile();
    c->saved_fd = dup(2);
    if (c->file == NULL || c->saved_fd < 0 || dup2(fileno(c->file), 2) < 0) {
        perror("dead_check: capturing stderr");
        _exit(3);
    }
}

/* Restore stderr; returns what was written meanwhile (malloc'd). */
static char *capture_end(captured_t *c)
{
    fflush(stderr);
    if (c->file == NULL)
        return calloc(1, 1);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    long len = ftell(c->file);
    char *text = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
    if (text == NULL)
        _exit(3);
    rewind(c->file);
    size_t got = fread(text, 1, (size_t)(len > 0 ? len : 0), c->file);
    text[got] = '\0';
    fclose(c->file);
    return text;
}

/* The victim's time of death from file, or 0. */
static double read_stamp(const char *file)
{
    double t = 0;
    FILE *f = file ? fopen(file, "r") : NULL;
    if (f != NULL) {
        if (fscanf(f, "%lf", &t) != 1)
            t = 0;
        fclose(f);
    }
    return t;
}

/*
 * The survivors leave together: a survivor that exits while another still
 * waits on it is, to that one, a second failure (its endpoint errors), and
 * could be named first.  Each creates FILE.done.R and waits (progressing,
 * at most 30 s) until every survivor has; run.sh removes the files.
 */
static void leave_together(rcoll_context_t *ctx, const char *stamp)
{
    char path[4096];
    if (stamp == NULL)
        return;
    snprintf(path, sizeof(path), "%s.done.%d", stamp, wrank);
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
    double end = check_now() + 30;
    while (check_now() < end) {
        int seen = 0;
        for (int r = 0; r < wsize; r++) {
            snprintf(path, sizeof(path), "%s.done.%d", stamp, r);
            seen += access(path, F_OK) == 0;
        }
        if (seen >= wsize - 1)
            return;
        for (int i = 0; i < 1000; i++)
            rcoll_progress(ctx);
        usleep(1000);
    }
    FAILF("not every survivor reached the end within 30 s");
}

static void die_now(const char *stamp, const void *in, void *out, size_t n, rcoll_comm_t *world)
{
    if (stamp != NULL) {
        FILE *f = fopen(stamp, "w");
        if (f != NULL) {
            fprintf(f, "%.6f\n", wall_now());
            fclose(f);
        }
    }
    rcoll_request_t *req;
    if (rcoll_iallreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world, &req) != RCOLL_OK)
        fprintf(stderr, "dead_check rank %d: rcoll_iallreduce failed before the kill\n", wrank);
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    size_t bytes = 8;
    int after = 20;
    const char *stamp = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
            bytes = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--after") == 0 && i + 1 < argc)
            after = atoi(argv[++i]);
        else if (strcmp(argv[i], "--stamp") == 0 && i + 1 < argc)
            stamp = argv[++i];
        else if (strcmp(argv[i], "--bound") == 0 && i + 1 < argc)
            bound_s = atof(argv[++i]);
        else if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--no-capture") == 0)
            no_capture = 1;
        else {
            fprintf(stderr, "usage: dead_check [--bytes B] [--after N] [--stamp FILE] [--bound S] "
                    "[-v] [--no-capture]\n");
            return 2;
        }
    }
    const char *const config[] = {"RCOLL_TIMEOUT=300", NULL};
    rcoll_context_t *ctx;
    rcoll_status_t st = rcoll_init(config, &ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "dead_check: rcoll_init: %s\n", rcoll_strerror(st));
        return 1;
    }
    wrank = rcoll_context_rank(ctx);
    wsize = rcoll_context_size(ctx);
    int victim = wsize > 2 ? 2 : wsize - 1;
    if (wsize < 2) {
        printf("dead_check: needs 2 ranks or more; nothing to do\n");
        rcoll_finalize(ctx);
        return 0;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    size_t n = bytes / sizeof(int32_t) ? bytes / sizeof(int32_t) : 1;
    int32_t *in = calloc(n, sizeof(int32_t)), *out = calloc(n, sizeof(int32_t));
    if (in == NULL || out == NULL)
        return 3;
    for (size_t i = 0; i < n; i++)
        in[i] = wrank + 1;

    /* A survivor may still be in allreduce N - 1 when the victim, done with
     * it, dies: then that one may fail (every pending collective on a
     * communicator with a dead member does) instead of the N-th. */
    captured_t cap = { 0 };
    double t_enter = 0;
    int early = 0;
    for (int it = 0; it < after; it++) {
        if (it == after - 1 && wrank != victim) {
            capture_begin(&cap);
            t_enter = wall_now();
        }
        st = rcoll_allreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world);
        if (st == RCOLL_ERR_PEER_FAILED && it == after - 1 && wrank != victim) {
            early = 1;
            break;
        }
        if (st != RCOLL_OK || out[0] != wsize * (wsize + 1) / 2) {
            FAILF("allreduce %d before the death: %s, result %d", it, rcoll_strerror(st), out[0]);
            return 1;
        }
    }
    if (wrank == victim)
        die_now(stamp, in, out, n, world);    /* never returns */

    /* The allreduce the victim died in may still succeed where the victim
     * had delivered its part (a shared-memory slot written before the
     * kill): then with the right result, and the next one must fail. */
    int completed = 0;
    if (!early)
        st = rcoll_allreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world);
    if (st == RCOLL_OK) {
        completed = out[0] == wsize * (wsize + 1) / 2 ? 1 : -1;
        st = rcoll_allreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world);
    }
    double t_ret = wall_now();
    rcoll_status_t st2 = rcoll_allreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world);
    double t_later = wall_now() - t_ret;
    char *log = capture_end(&cap);

    double t_death = read_stamp(stamp);
    double from = t_death > 0 ? t_death : t_enter;
    double took = t_ret - from;
    char name[32];
    snprintf(name, sizeof(name), "rank %d", victim);
    char wname[32];
    snprintf(wname, sizeof(wname), "world rank %d", victim);
    if (verbose)
        fprintf(stderr, "dead_check rank %d: its log:\n%s", wrank, log);
    if (completed < 0)
        FAILF("the allreduce the victim died in returned success with a wrong result %d", out[0]);
    if (st != RCOLL_ERR_PEER_FAILED)
        FAILF("the allreduce %s returned %s, expected %s",
              completed ? "after the one the victim died in" : "the victim died in",
              rcoll_strerror(st), rcoll_strerror(RCOLL_ERR_PEER_FAILED));
    if (took > bound_s)
        FAILF("it returned %.3f s after the death: more than %.0f s", took, bound_s);
    if (!no_capture && strstr(log, wname) == NULL && strstr(log, name) == NULL)
        FAILF("the log does not name %s:\n%s", wname, log);
    if (st2 != RCOLL_ERR_PEER_FAILED)
        FAILF("the allreduce after it returned %s, expected %s", rcoll_strerror(st2),
              rcoll_strerror(RCOLL_ERR_PEER_FAILED));
    if (t_later > bound_s)
        FAILF("the allreduce after it took %.3f s", t_later);
    if (nfail == 0)
        printf("dead_check: rank %d ok: %s%s after %.3f s (from %s), the next allreduce %s after "
               "%.3f s\n", wrank, early ? "the allreduce before the victim's (still in "
               "flight here) " : completed ? "the allreduce in flight completed, the next " : "",
               rcoll_strerror(st), took, t_death > 0 ? "the death" : "its entry",
               rcoll_strerror(st2), t_later);
    else
        fprintf(stderr, "dead_check rank %d: its log:\n%s", wrank, log);
    fflush(stdout);
    free(log);
    leave_together(ctx, stamp);
    rcoll_finalize(ctx);        /* its barrier fails on the dead rank; the context goes */
    free(in);
    free(out);
    return nfail ? 1 : 0;
}
