/*
 * timeout_check - a rank that never arrives must not hang the others.
 *
 * Launch with at least 2 ranks:  rcollrun -n 4 test/integration/timeout_check [-v]
 *
 * With RCOLL_TIMEOUT=2 (set through rcoll_init's config, so it overrides the
 * environment), rank 1 skips a barrier, an allreduce (the selector's
 * algorithms) and an allreduce with the first algorithm rcoll_algorithms()
 * lists (a point-to-point one) that every other rank enters, sleeps until they are done, and exits.  Every other rank must
 * get RCOLL_ERR_TIMEOUT after about 2 s (not hang, not succeed), and the
 * error it logs on stderr (captured here) must name the collective, the
 * algorithm step and the peer it was waiting for.  At least one rank must
 * name rank 1: with dissemination-style algorithms only rank 1's direct
 * partners wait on it, the others wait on a partner that is itself stuck.
 * Each skipped collective runs on a duplicate of the world of its own (see
 * main).  The survivors then agree on the outcome over a communicator
 * without rank 1 (which must still work after the timeouts).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"

#define TIMEOUT_S 2.0
#define SKIPPER   1
#define NSKIP     3   /* collectives rank SKIPPER skips */

static int wrank, wsize, verbose;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL timeout_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)

#define fatal(what, st) check_fatal("timeout_check", wrank, (what), (st))

/* Does text mention "rank N" or "peer N" (N a whole number)?  want < 0: any N. */
static int names_peer(const char *text, int want)
{
    static const char *const words[] = {"rank ", "peer ", "rank=", "peer="};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        for (const char *p = strstr(text, words[w]); p; p = strstr(p + 1, words[w])) {
            const char *q = p + strlen(words[w]);
            if (!isdigit((unsigned char)*q))
                continue;
            int n = atoi(q);
            if (want < 0 || n == want)
                return 1;
        }
    }
    return 0;
}

static int names_step(const char *text)
{
    for (const char *p = strstr(text, "step"); p; p = strstr(p + 1, "step")) {
        const char *q = p + 4;
        while (*q == ' ' || *q == '=' || *q == ':')
            q++;
        if (isdigit((unsigned char)*q))
            return 1;
    }
    return 0;
}

typedef struct captured {
    int  saved_fd;
    FILE *file;
} captured_t;

static void capture_begin(captured_t *c)
{
    fflush(stderr);
    c->file = tmpfile();
    c->saved_fd = dup(2);
    if (c->file == NULL || c->saved_fd < 0 || dup2(fileno(c->file), 2) < 0) {
        perror("timeout_check: capturing stderr");
        _exit(3);
    }
}

/* Restore stderr; returns what was written meanwhile (malloc'd). */
static char *capture_end(captured_t *c)
{
    fflush(stderr);
    dup2(c->saved_fd, 2);
    close(c->saved_fd);
    long len = ftell(c->file);
    if (len < 0)
        len = 0;
    char *text = calloc(1, (size_t)len + 1);
    if (text == NULL)
        _exit(3);
    rewind(c->file);
    size_t got = fread(text, 1, (size_t)len, c->file);
    text[got] = '\0';
    fclose(c->file);
    return text;
}

/* One skipped collective on the survivors' side, with the selector's
 * algorithm (alg "") or a forced one; returns 1 if this rank's log named
 * SKIPPER. */
static int expect_timeout(rcoll_context_t *ctx, const char *coll, const char *alg,
                          rcoll_comm_t *world)
{
    char key[64];
    snprintf(key, sizeof(key), "RCOLL_%s_ALGORITHM", strcmp(coll, "barrier") ? "ALLREDUCE" : "BARRIER");
    rcoll_status_t cst = rcoll_config_set(ctx, key, alg);
    if (cst != RCOLL_OK)
        fatal("rcoll_config_set", cst);
    int32_t in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = wrank + i;
    captured_t cap;
    capture_begin(&cap);
    double t0 = check_now();
    rcoll_status_t st = strcmp(coll, "barrier") == 0
                            ? rcoll_barrier(world)
                            : rcoll_allreduce(in, out, 1000, RCOLL_INT32, RCOLL_SUM, world);
    double el = check_now() - t0;
    char *log = capture_end(&cap);
    const char *an = alg[0] ? alg : "auto";

    if (verbose)
        fprintf(stderr, "rank %d: %s alg=%s returned %s after %.2f s; its log:\n%s", wrank, coll,
                an, rcoll_strerror(st), el, log);
    if (st != RCOLL_ERR_TIMEOUT)
        FAILF("%s alg=%s with rank %d absent returned %d (%s) after %.2f s, expected "
              "RCOLL_ERR_TIMEOUT", coll, an, SKIPPER, (int)st, rcoll_strerror(st), el);
    if (el < TIMEOUT_S * 0.75 || el > TIMEOUT_S * 10 + 10)
        FAILF("%s alg=%s timed out after %.2f s with RCOLL_TIMEOUT=%.0f", coll, an, el,
              TIMEOUT_S);
    int ok_text = strstr(log, coll) != NULL && names_step(log) && names_peer(log, -1);
    if (!ok_text)
        FAILF("%s alg=%s: the timeout log must name the collective ('%s'), the step ('step N') "
              "and the peer waited for ('rank N'); stderr was:\n%s", coll, an, coll, log);
    int named = names_peer(log, SKIPPER);
    free(log);
    return named;
}

int main(int argc, char **argv)
{
    const char *const config[] = {"RCOLL_TIMEOUT=2", "RCOLL_REVOKE_ON_TIMEOUT=0", NULL};
    rcoll_context_t *ctx;
    int rc = check_start("timeout_check", argc, argv, config, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0) {
        return rc;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    rcoll_status_t st;
    if (wsize < 2) {
        fprintf(stderr, "timeout_check: needs at least 2 ranks (got %d)\n", wsize);
        rcoll_finalize(ctx);
        return 2;
    }
    const char *tv = rcoll_config_get(ctx, "RCOLL_TIMEOUT");
    if (tv == NULL || atof(tv) != TIMEOUT_S)
        FAILF("RCOLL_TIMEOUT given to rcoll_init as 2 reads back as '%s'", tv ? tv : "(null)");

    /* the survivors' communicator, made while everyone is still there */
    rcoll_comm_t *surv = NULL;
    if ((st = rcoll_comm_split(world, wrank == SKIPPER ? -1 : 0, wrank, &surv)) != RCOLL_OK)
        fatal("rcoll_comm_split", st);
    /* A communicator of its own for each skipped collective: a node-aware
     * (composed) collective that times out leaves its node and rail
     * sub-communicators out of step (its members had posted different
     * numbers of children), so a later composed collective on the same
     * communicator may fail with a protocol error instead of timing out
     * (docs/algorithms-node-aware.md, "Not done"). */
    rcoll_comm_t *own[NSKIP];
    for (int k = 0; k < NSKIP; k++)
        if ((st = rcoll_comm_dup(world, &own[k])) != RCOLL_OK)
            fatal("rcoll_comm_dup", st);
    /* everyone is connected and in step */
    int32_t one = 1, n = 0;
    if ((st = rcoll_allreduce(&one, &n, 1, RCOLL_INT32, RCOLL_SUM, world)) != RCOLL_OK)
        fatal("warm-up allreduce", st);
    if (n != wsize)
        FAILF("warm-up allreduce gave %d, expected %d", (int)n, wsize);
    if ((st = rcoll_barrier(world)) != RCOLL_OK)
        fatal("warm-up barrier", st);

    if (wrank == SKIPPER) {
        /* skip them all, stay alive until the others have timed out and
         * agreed, then leave (finalize cannot complete its barrier: ignore) */
        check_sleep(TIMEOUT_S * (NSKIP + 2) + 3);
        for (int k = 0; k < NSKIP; k++)
            rcoll_comm_free(own[k]);
        rcoll_finalize(ctx);
        return 0;
    }

    double t0 = check_now();
    /* the selector's choices, then allreduce with its first listed algorithm */
    const char *algs[8];
    if (rcoll_algorithms("allreduce", algs, 8) < 1)
        fatal("rcoll_algorithms(allreduce)", RCOLL_ERR_INTERNAL);
    static const char *const what[NSKIP] = {"barrier", "allreduce", "allreduce"};
    const char *alg_of[NSKIP] = {"", "", algs[0]};
    int32_t named[NSKIP];
    for (int k = 0; k < NSKIP; k++)
        named[k] = expect_timeout(ctx, what[k], alg_of[k], own[k]);
    rcoll_config_set(ctx, "RCOLL_BARRIER_ALGORITHM", "");
    rcoll_config_set(ctx, "RCOLL_ALLREDUCE_ALGORITHM", "");

    /* agree among the survivors */
    int32_t sum[NSKIP] = {0}, mine = nfail != 0, any = 0;
    if ((st = rcoll_allreduce(named, sum, NSKIP, RCOLL_INT32, RCOLL_SUM, surv)) != RCOLL_OK)
        fatal("survivors' allreduce after the timeouts", st);
    for (int k = 0; k < NSKIP; k++)
        if (sum[k] < 1 && wrank == 0)
            FAILF("%s alg=%s: no rank's timeout log named rank %d, the one that never came",
                  what[k], alg_of[k][0] ? alg_of[k] : "auto", SKIPPER);
    mine = nfail != 0;
    if ((st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, surv)) != RCOLL_OK)
        fatal("survivors' summary allreduce", st);
    if (wrank == 0) {
        if (any == 0)
            printf("timeout_check: %d ranks ok: barrier, allreduce, allreduce alg=%s timed out "
                   "naming rank %d (%.1f s)\n", wsize, algs[0], SKIPPER, check_now() - t0);
        else
            printf("timeout_check: %d ranks: FAILED on %d rank(s)\n", wsize, any);
    }
    fflush(stdout);
    for (int k = 0; k < NSKIP; k++)
        rcoll_comm_free(own[k]);
    rcoll_comm_free(surv);
    /* finalize's barrier cannot complete without rank 1: its status is not
     * part of the check, but it must return (bounded by the timeout) */
    captured_t cap;
    capture_begin(&cap);
    rcoll_finalize(ctx);
    free(capture_end(&cap));
    return any == 0 ? 0 : 1;
}
