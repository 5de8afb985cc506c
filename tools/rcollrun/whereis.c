/*
 * The job's one-line "where is everyone" summary.  When a collective times
 * out, each rank logs a line "where is everyone for rcoll_<coll> sequence
 * S on communicator C: rank q (world rank w) <what>; ..." (librcoll,
 * src/whereis.c).  iofwd.c shows every forwarded line to
 * rcollrun_where_scan; at the end rcollrun_where_summary prints, for the
 * first collective reported (the first to time out is the likely cause;
 * the later ones are counted), which world ranks the reports named, and by
 * how many ranks, e.g.
 *   rcollrun: where is everyone: 7 ranks timed out in rcoll_allreduce
 *   sequence 4 on communicator 0x1; named as not there: world rank 5 (by 7:
 *   not entered, not in rcoll)
 * Under --nodes the ranks' reports name the ranks of other nodes too (each
 * asks the other nodes, src/whereis_remote.c), so nothing here depends on
 * where a rank runs: only the forwarded lines are read.
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARK "where is everyone for "

typedef struct {
    uint8_t reported[RCOLLRUN_MAX_RANKS];                  /* rank r logged a report */
    uint8_t named[RCOLLRUN_MAX_RANKS][RCOLLRUN_MAX_RANKS / 8];   /* [w] bit r: r named w */
    uint8_t why[RCOLLRUN_MAX_RANKS];                       /* bit 0 not entered, 1 not in rcoll,
                                                            * 2 called another collective */
    int     any;
    char    key[160];     /* "rcoll_allreduce sequence 4 on communicator 0x1": the first */
    int     later;        /* reports about other collectives */
} where_t;

static where_t *W;

void rcollrun_where_scan(int rank, const char *line, size_t len)
{
    const char *m = memmem(line, len, MARK, sizeof(MARK) - 1);
    if (m == NULL || rank < 0 || rank >= RCOLLRUN_MAX_RANKS)
        return;
    if (W == NULL && (W = calloc(1, sizeof(*W))) == NULL)
        return;
    const char *end = line + len, *k = m + sizeof(MARK) - 1;
    const char *colon = memchr(k, ':', (size_t)(end - k));
    size_t klen = colon ? (size_t)(colon - k) : 0;
    if (klen == 0 || klen >= sizeof(W->key))
        return;
    if (!W->any) {
        memcpy(W->key, k, klen);
        W->key[klen] = '\0';
    } else if (strlen(W->key) != klen || memcmp(W->key, k, klen) != 0) {
        W->later++;
        return;
    }
    W->any = 1;
    W->reported[rank] = 1;
    static const char key[] = "(world rank ";
    for (const char *p = m; (p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1)) != NULL;) {
        p += sizeof(key) - 1;
        /* the line is not NUL-terminated: read the digits within it */
        int w = 0, digits = 0;
        for (; p < end && *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
            w = w * 10 + (*p - '0');
        if (digits == 0)
            continue;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        size_t n = (size_t)((semi ? semi : end) - p);
        if (w < 0 || w >= RCOLLRUN_MAX_RANKS)
            continue;
        W->named[w][rank / 8] |= (uint8_t)(1u << (rank % 8));
        W->why[w] |= memmem(p, n, "not entered", 11) ? 1 : 0;
        W->why[w] |= memmem(p, n, "not in rcoll", 12) ? 2 : 0;
        W->why[w] |= memmem(p, n, "called rcoll_", 13) ? 4 : 0;
    }
}

void rcollrun_where_summary(int nranks)
{
    if (W == NULL || !W->any)
        return;
    char buf[1000];
    size_t off = 0;
    int reporters = 0, listed = 0;
    for (int r = 0; r < nranks && r < RCOLLRUN_MAX_RANKS; r++)
        reporters += W->reported[r];
    off += (size_t)snprintf(buf + off, sizeof(buf) - off,
                            "where is everyone: %d rank%s timed out in %s", reporters,
                            reporters == 1 ? "" : "s", W->key);
    /* most named first: a rank named by every reporter is the likely cause */
    for (int want = reporters; want >= 1 && off < sizeof(buf); want--) {
        for (int w = 0; w < nranks && w < RCOLLRUN_MAX_RANKS && off < sizeof(buf); w++) {
            int by = 0;
            for (int r = 0; r < nranks; r++)
                by += (W->named[w][r / 8] >> (r % 8)) & 1;
            if (by != want)
                continue;
            if (listed++ == 8) {
                off += (size_t)snprintf(buf + off, sizeof(buf) - off, "; more");
                break;
            }
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s world rank %d (by %d:%s%s%s%s)",
                                    listed == 1 ? "; named as not there:" : ",", w, by,
                                    W->why[w] & 1 ? " not entered" : "",
                                    (W->why[w] & 3) == 3 ? "," : "",
                                    W->why[w] & 2 ? " not in rcoll" : "",
                                    W->why[w] & 4 ? " called another collective" : "");
        }
    }
    if (listed == 0 && off < sizeof(buf))
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "; every rank they see had entered it");
    if (W->later > 0 && off < sizeof(buf))
        snprintf(buf + off, sizeof(buf) - off, " (and %d report%s of later timeouts)", W->later,
                 W->later == 1 ? "" : "s");
    rcollrun_msg("%s", buf);
    free(W);
    W = NULL;
}
