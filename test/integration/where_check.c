/*
 * where_check - a timeout names the ranks that have not entered the
 * collective, and what they do instead (issue 14, "where is everyone").
 *
 * Launch with at least 2 ranks (8 is the scenario):
 *   rcollrun -n 8 [--nodes 2] test/integration/where_check [-v] [--only late,bcast]
 *
 * With RCOLL_TIMEOUT=3 and allreduce forced to recursive doubling:
 *  late: rank L (5, or the last rank if fewer) enters an allreduce 8 s late.
 *    Every other rank gets RCOLL_ERR_TIMEOUT (or PEER_FAILED: revoked by the
 *    first to time out), and its log (stderr, captured)
 *    must name rank L as not entered and not in rcoll, whichever neighbour
 *    it waited for, also where L is on another node (rcollrun --nodes 2 -n
 *    8, srun -N 2: the report asks L's node), and no rank as not visible.
 *  bcast: rank M (3, or the last rank) calls bcast where the others call
 *    allreduce.  Every rank that times out must name M's bcast (the others)
 *    or the others' allreduce (M itself), on any node; no rank may succeed.
 * The captured logs go on to stderr, so that rcollrun prints its summary
 * line (run.sh checks it).  Each scenario runs on a communicator of its own (a dup of the world); the
 * ranks then start the next together and agree on the outcome over the world.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define TIMEOUT_S 3.0
#define LATE_S    8.0

static int wrank, wsize, verbose;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL where_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define fatal(what, st) check_fatal("where_check", wrank, (what), (st))

typedef struct {
    int   saved_fd;
    FILE *file;
} captured_t;

static void capture_begin(captured_t *c)
{
    fflush(stderr);
    c->file = tmpfile();
    c->saved_fd = dup(2);
    if (c->file == NULL || c->saved_fd < 0 || dup2(fileno(c->file), 2) < 0) {
        perror("where_check: capturing stderr");
        _exit(3);
    }
}

static char *capture_end(captured_t *c)
{
    fflush(stderr);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    long len = ftell(c->file);
    char *text = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
    if (text == NULL)
        _exit(3);
    rewind(c->file);
    text[fread(text, 1, (size_t)(len > 0 ? len : 0), c->file)] = '\0';
    fclose(c->file);
    fputs(text, stderr);       /* the launcher sees it too (rcollrun's summary line) */
    return text;
}

/* The "where is everyone" line of log, or NULL. */
static const char *where_line(const char *log)
{
    return strstr(log, "where is everyone for ");
}

/* Does the where line name world rank r with phrase (e.g. "not entered")? */
static int names(const char *log, int r, const char *phrase)
{
    const char *w = where_line(log);
    if (w == NULL)
        return 0;
    char who[48];
    snprintf(who, sizeof(who), "(world rank %d) ", r);
    const char *p = strstr(w, who);
    const char *eol = strchr(w, '\n');
    if (p == NULL || (eol != NULL && p > eol))
        return 0;
    const char *end = strchr(p, ';');
    const char *q = strstr(p, phrase);
    return q != NULL && (end == NULL || q < end);
}

/* Ranks on other nodes are not in this node's table: the report asks
 * their node (src/whereis_remote.c).  Saying they are not visible is a
 * failure: some rank of each node waits in rcoll, so one answers. */
static int says_not_visible(const char *log)
{
    const char *w = where_line(log);
    const char *eol = w != NULL ? strchr(w, '\n') : NULL;
    const char *p = w != NULL ? strstr(w, "not visible") : NULL;
    return p != NULL && (eol == NULL || p < eol);
}

static void scenario_late(rcoll_comm_t *comm, int late, double t0)
{
    int64_t in = wrank, out = -1;
    if (wrank == late)
        check_sleep(LATE_S);
    captured_t cap;
    capture_begin(&cap);
    double ts = check_now();
    rcoll_status_t st = rcoll_allreduce(&in, &out, 1, RCOLL_INT64, RCOLL_SUM, comm);
    double el = check_now() - ts;
    char *log = capture_end(&cap);
    if (verbose)
        fprintf(stderr, "rank %d: late: %s after %.1f s\n", wrank, rcoll_strerror(st), el);
    if (wrank != late) {
        /* its own timeout, or another member's: the first to time out
         * revokes the communicator (RCOLL_REVOKE_ON_TIMEOUT), and a rank told
         * so ends with PEER_FAILED, naming the late rank all the same */
        if (st != RCOLL_ERR_TIMEOUT && st != RCOLL_ERR_PEER_FAILED)
            FAILF("late: rank %d was %.0f s late (RCOLL_TIMEOUT=%.0f), yet allreduce returned %s",
                  late, LATE_S, TIMEOUT_S, rcoll_strerror(st));
        else if (!names(log, late, "not entered: not in rcoll") || says_not_visible(log))
            FAILF("late: the timeout must name rank %d as not entered and not in rcoll, and "
                  "every rank of other nodes as visible; stderr was:\n%s", late, log);
    }
    free(log);
    /* the late rank's own allreduce may wait out the timeout: start the next together */
    check_sleep(t0 + LATE_S + TIMEOUT_S + 2.0 - check_now());
}

static void scenario_bcast(rcoll_comm_t *comm, int odd, double t0)
{
    int64_t in[3] = {wrank, wrank, wrank}, out[3];
    captured_t cap;
    capture_begin(&cap);
    rcoll_status_t st = wrank == odd ? rcoll_bcast(in, 3, RCOLL_INT64, 0, comm)
                                     : rcoll_allreduce(in, out, 1, RCOLL_INT64, RCOLL_SUM, comm);
    char *log = capture_end(&cap);
    if (verbose)
        fprintf(stderr, "rank %d: bcast: %s\n", wrank, rcoll_strerror(st));
    if (st == RCOLL_OK)
        FAILF("bcast: rank %d called bcast, the others allreduce, yet this rank's %s succeeded",
              odd, wrank == odd ? "bcast" : "allreduce");
    else if (st == RCOLL_ERR_TIMEOUT || st == RCOLL_ERR_PEER_FAILED) {
        int ok = !says_not_visible(log);
        if (wrank != odd)
            ok = names(log, odd, "called rcoll_bcast");
        else
            for (int r = 0; r < wsize && ok; r++)
                ok = r == odd || names(log, r, "called rcoll_allreduce");
        if (!ok)
            FAILF("bcast: the timeout must name %s (every rank visible); stderr was:\n%s",
                  wrank == odd ? "every other rank's allreduce" : "the rank that called bcast", log);
    }
    free(log);
    check_sleep(t0 + TIMEOUT_S * 2 + 2.0 - check_now());
}

int main(int argc, char **argv)
{
    const char *only = "";
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--only") == 0) {
            only = argv[i + 1];
            memmove(&argv[i], &argv[i + 2], sizeof(char *) * (size_t)(argc - i - 1));
            argc -= 2;
            break;
        }
    }
    const char *const config[] = {"RCOLL_TIMEOUT=3", "RCOLL_ALLREDUCE_ALGORITHM=recursive_doubling",
                                  "RCOLL_BCAST_ALGORITHM=binomial", NULL};
    rcoll_context_t *ctx;
    int rc = check_start("where_check", argc, argv, config, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0)
        return rc;
    rcoll_comm_t *world = rcoll_comm_world(ctx), *c1 = NULL, *c2 = NULL;
    if (wsize < 2) {
        fprintf(stderr, "where_check: needs at least 2 ranks (got %d)\n", wsize);
        rcoll_finalize(ctx);
        return 2;
    }
    rcoll_status_t st;
    if ((st = rcoll_comm_dup(world, &c1)) != RCOLL_OK || (st = rcoll_comm_dup(world, &c2)) != RCOLL_OK)
        fatal("rcoll_comm_dup", st);
    int late = wsize > 5 ? 5 : wsize - 1, odd = wsize > 3 ? 3 : wsize - 1;

    /* every scenario starts right after a collective that every rank leaves together */
    if ((st = rcoll_barrier(world)) != RCOLL_OK)
        fatal("barrier", st);
    if (check_list_has(only, "late"))
        scenario_late(c1, late, check_now());
    if ((st = rcoll_barrier(world)) != RCOLL_OK)
        fatal("barrier after late", st);
    if (check_list_has(only, "bcast"))
        scenario_bcast(c2, odd, check_now());

    int32_t mine = nfail != 0, any = 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal("summary allreduce", st);
    if (wrank == 0)
        printf("where_check: %d ranks %s\n", wsize, any == 0 ? "ok" : "FAILED");
    fflush(stdout);
    rcoll_comm_free(c1);
    rcoll_comm_free(c2);
    st = rcoll_finalize(ctx);
    (void)st;
    return any == 0 ? 0 : 1;
}
