/*
 * fault_check - the workload of the fault matrix (issue 14 item 4;
 * test/integration/fault_matrix.sh runs it, docs/reliability.md "Fault
 * matrix" has the results).
 *
 *   RCOLL_FAULT=V:POINT[:N] rcollrun --enable-recovery -n 4 test/integration/fault_check
 *       [--bytes B] [--stamp PREFIX] [--bound S] [-v] [--no-capture]
 *
 * Every rank runs: rcoll_init (RCOLL_TIMEOUT=300, the default, so no
 * deadline ends a wait), three 8-byte allreduces on the world (the first
 * sets up its shared-memory segment), one allreduce of B bytes (default
 * 16 MiB: the shm pipeline, or rendezvous messages), two 8-byte allreduces,
 * rcoll_finalize.  (rcoll_init sets up the world's shared-memory segment:
 * shm-setup is inside it.)  World rank V kills itself inside rcoll where RCOLL_FAULT
 * says (src/fault.c).  Just before the part of the workload holding that
 * point it writes the time (CLOCK_REALTIME) to PREFIX.stamp, so the time a
 * survivor measures from it is an upper bound on the time from the death.
 * (Before rcoll_init the victim knows its rank only from the launcher's
 * environment: PMIX_RANK; without it a survivor measures from its own call
 * to rcoll_init.)
 *
 * Each survivor stops at its first error, tries one more allreduce (it must
 * fail at once too), waits for the other survivors (files PREFIX.done.R, at
 * most 10 s or the bound), finalizes and prints one line:
 *   fault_check: rank R result ok=1 phase=P status=S secs=T named=1 then=S2
 * ok=1 when the first error is RCOLL_ERR_PEER_FAILED (at fence: any error
 * of rcoll_init; at shm-setup either), came within S s of the stamp (--bound,
 * default 5; the soft-RDMA guest passes 30), and the rank's rcoll log
 * (stderr, captured) names world rank V.  A run with no RCOLL_FAULT must
 * pass every step (ok=1 phase=none).  Exit status 0 only if ok.
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
#include "check_common.h"

static double bound_s = 5.0;     /* --bound: 5 s on the host, 30 in the emulated guest */
static int verbose, no_capture;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void write_stamp(const char *prefix)
{
    char path[4096];
    if (prefix == NULL)
        return;
    snprintf(path, sizeof(path), "%s.stamp", prefix);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%.6f\n", wall_now());
        fclose(f);
    }
}

static double read_stamp(const char *prefix)
{
    char path[4096];
    double t = 0;
    if (prefix == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s.stamp", prefix);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &t) != 1)
            t = 0;
        fclose(f);
    }
    return t;
}

/* The rank's stderr goes to a file from the start, so its log can be searched. */
static FILE *cap_file;
static int cap_saved = -1;

static void capture_begin(void)
{
    if (no_capture)
        return;
    fflush(stderr);
    cap_file = tmpfile();
    cap_saved = dup(2);
    if (cap_file == NULL || cap_saved < 0 || dup2(fileno(cap_file), 2) < 0) {
        perror("fault_check: capturing stderr");
        _exit(3);
    }
}

static char *capture_end(void)
{
    fflush(stderr);
    if (cap_file == NULL)
        return calloc(1, 1);
    dup2(cap_saved, 2);
    close(cap_saved);
    long len = ftell(cap_file);
    char *text = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
    if (text == NULL)
        _exit(3);
    rewind(cap_file);
    size_t got = fread(text, 1, (size_t)(len > 0 ? len : 0), cap_file);
    text[got] = '\0';
    fclose(cap_file);
    cap_file = NULL;
    return text;
}

/* The survivors leave together (see dead_check.c): a survivor that exits
 * while another still waits on it would be a second failure to that one. */
static void leave_together(rcoll_context_t *ctx, const char *prefix, int wrank, int wsize)
{
    char path[4096];
    if (prefix == NULL || wrank < 0)
        return;
    snprintf(path, sizeof(path), "%s.done.%d", prefix, wrank);
    FILE *f = fopen(path, "w");
    if (f != NULL)
        fclose(f);
    double wait = bound_s > 10 ? bound_s : 10;     /* the guest's survivors may be far apart */
    double end = check_now() + wait;
    while (check_now() < end) {
        int seen = 0;
        for (int r = 0; r < wsize; r++) {
            snprintf(path, sizeof(path), "%s.done.%d", prefix, r);
            seen += access(path, F_OK) == 0;
        }
        if (seen >= wsize - 1)
            return;
        if (ctx != NULL)
            for (int i = 0; i < 1000; i++)
                rcoll_progress(ctx);
        usleep(1000);
    }
    fprintf(stderr, "fault_check rank %d: not every survivor reached the end within %.0f s\n", wrank,
            wait);
}

typedef struct {
    const char    *phase;      /* where the first error came; NULL: none */
    rcoll_status_t st;
    double         when;
} first_err_t;

static void note(first_err_t *e, const char *phase, rcoll_status_t st)
{
    if (e->phase == NULL && st != RCOLL_OK) {
        e->phase = phase;
        e->st = st;
        e->when = wall_now();
    }
}

static rcoll_status_t allreduce(rcoll_comm_t *world, int32_t *in, int32_t *out, size_t n,
                                int wsize, int *wrong)
{
    rcoll_status_t st = rcoll_allreduce(in, out, n, RCOLL_INT32, RCOLL_SUM, world);
    int32_t want = wsize * (wsize + 1) / 2;
    if (st == RCOLL_OK && (out[0] != want || out[n - 1] != want))
        *wrong = 1;
    return st;
}

int main(int argc, char **argv)
{
    size_t bytes = 16u << 20;
    const char *prefix = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc)
            bytes = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--stamp") == 0 && i + 1 < argc)
            prefix = argv[++i];
        else if (strcmp(argv[i], "--bound") == 0 && i + 1 < argc)
            bound_s = atof(argv[++i]);
        else if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--no-capture") == 0)
            no_capture = 1;
        else {
            fprintf(stderr, "usage: fault_check [--bytes B] [--stamp PREFIX] [--bound S] [-v] "
                            "[--no-capture]\n");
            return 2;
        }
    }
    /* What RCOLL_FAULT asks (the library checks the setting itself). */
    const char *fault = getenv("RCOLL_FAULT");
    int victim = -1;
    char point[32] = "";
    if (fault != NULL && fault[0] != '\0' && sscanf(fault, "%d:%31[a-z-]", &victim, point) != 2) {
        fprintf(stderr, "fault_check: cannot read RCOLL_FAULT=%s\n", fault);
        return 2;
    }
    const char *pmix_rank = getenv("PMIX_RANK");
    int pre_rank = pmix_rank != NULL ? atoi(pmix_rank) : -1;
#define AT(_p) (strcmp(point, (_p)) == 0)

    capture_begin();
    first_err_t e = { 0 };
    double t_init = wall_now();
    if ((AT("fence") || AT("shm-setup")) && pre_rank == victim)   /* both inside rcoll_init */
        write_stamp(prefix);
    const char *const config[] = {"RCOLL_TIMEOUT=300", NULL};
    rcoll_context_t *ctx = NULL;
    rcoll_status_t st = rcoll_init(config, &ctx);
    note(&e, "init", st);
    int wrank = ctx ? rcoll_context_rank(ctx) : pre_rank;
    int wsize = ctx ? rcoll_context_size(ctx) : 0;
    rcoll_status_t then = RCOLL_OK, fin = RCOLL_OK;
    int wrong = 0;
    int32_t *in = NULL, *out = NULL;
    if (ctx != NULL) {
        rcoll_comm_t *world = rcoll_comm_world(ctx);
        size_t nbig = bytes / sizeof(int32_t) ? bytes / sizeof(int32_t) : 1;
        in = malloc(nbig * sizeof(int32_t));
        out = malloc(nbig * sizeof(int32_t));
        if (in == NULL || out == NULL)
            return 3;
        for (size_t i = 0; i < nbig; i++)
            in[i] = wrank + 1;
        static const struct { const char *phase; size_t n; } steps[] = {
            { "small-1", 2 }, { "small-2", 2 }, { "small-3", 2 },
            { "large", 0 }, { "small-4", 2 }, { "small-5", 2 },
        };
        for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]) && e.phase == NULL; s++) {
            size_t n = steps[s].n ? steps[s].n : nbig;
            if (wrank == victim && s == 3 && (AT("pipeline") || AT("rndv")))
                write_stamp(prefix);
            note(&e, steps[s].phase, allreduce(world, in, out, n, wsize, &wrong));
        }
        if (e.phase != NULL)      /* a later collective must fail at once too */
            then = allreduce(world, in, out, 2, wsize, &wrong);
        if (wrank == victim && AT("finalize"))
            write_stamp(prefix);
        if (wrank != victim || victim < 0)
            leave_together(ctx, prefix, wrank, wsize);
        fin = rcoll_finalize(ctx);
        if (e.phase == NULL && fin != RCOLL_OK) {
            e.phase = "finalize";
            e.st = fin;
            e.when = wall_now();
        }
    } else if (wrank != victim) {
        leave_together(NULL, prefix, wrank, 0);
    }
    char *log = capture_end();

    double t_death = read_stamp(prefix);
    double from = t_death > 0 ? t_death : t_init;
    double secs = e.phase ? e.when - from : 0;
    char wname[32], name[32];
    snprintf(wname, sizeof(wname), "world rank %d", victim);
    snprintf(name, sizeof(name), "rank %d", victim);
    int named = victim >= 0 && (strstr(log, wname) != NULL || strstr(log, name) != NULL);
    int ok;
    if (victim < 0) {
        ok = e.phase == NULL && !wrong;
    } else {
        /* A kill inside rcoll_init (fence; shm-setup, which init runs for the
         * world) may meet a survivor still setting up its endpoint to the
         * victim: any error of init naming it counts (UCX posix: "cannot create
         * an endpoint to rank 0", a transport error), as at the fence. */
        int in_init = e.phase != NULL && strcmp(e.phase, "init") == 0;
        int want_err = strcmp(point, "fence") == 0 ? in_init
                     : e.st == RCOLL_ERR_PEER_FAILED || (in_init && strcmp(point, "shm-setup") == 0);
        ok = e.phase != NULL && want_err && secs <= bound_s && (named || no_capture) && !wrong &&
             (then == RCOLL_OK || then == RCOLL_ERR_PEER_FAILED || strcmp(e.phase, "init") == 0);
        if (e.phase != NULL && strcmp(e.phase, "init") != 0 && strcmp(e.phase, "finalize") != 0 &&
            then != RCOLL_ERR_PEER_FAILED)
            ok = 0;     /* after a failure on the world, the next collective fails too */
    }
    printf("fault_check: rank %d result ok=%d phase=%s status=%s secs=%.3f named=%d then=%s "
           "finalize=%s%s (from %s)\n", wrank, ok, e.phase ? e.phase : "none",
           e.phase ? rcoll_strerror(e.st) : "none", secs, named,
           rcoll_strerror(then), rcoll_strerror(fin), wrong ? " WRONG RESULT" : "",
           t_death > 0 ? "the stamp" : "its rcoll_init");
    if (!ok || verbose)
        fprintf(stderr, "fault_check rank %d: its log:\n%s", wrank, log);
    fflush(stdout);
    free(log);
    free(in);
    free(out);
    return ok ? 0 : 1;
}
