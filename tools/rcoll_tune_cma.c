/*
 * rcoll_tune_cma.c - the sizes at which the shared-memory bcast, allgather
 * and reduce should read the owner's buffer directly (process_vm_readv,
 * RCOLL_SHM_CMA) instead of copying through the segment twice.
 *
 * For each of the three, the shm algorithm forced: the time per call at
 * sizes from 1 KiB (allgather blocks) or 4 KiB up to 16 MiB, every 2x
 * (--quick: every 4x), once with RCOLL_SHM_CMA=off and once with =on, each
 * on a communicator duplicated after the setting (its segment, and so its
 * choice of path, is set up under it).  The modes alternate size by size,
 * so a change of load hits both.  The range written is the run of adjacent
 * sizes whose summed log-ratio off/on is largest, if that run's sizes all
 * favour `on` by more than CMA_MARGIN on the whole; else `none`.  Its ends
 * lie halfway (geometrically) to the next measured size; a run that reaches
 * the largest size is open ("MIN-*").
 *
 * Measured only where it means something: every rank on one node, no more
 * ranks than CPUs (RCOLL_SHM_CMA=auto stays off when oversubscribed), and
 * RCOLL_SHM=1.  Where the ranks cannot read each other's memory both
 * modes run the same two-copy path; the ratios are then noise and no
 * range passes the margin except by chance, so the file says that
 * RCOLL_LOG_LEVEL=debug tells whether single copy is possible at all
 * ("cannot read comm rank N's memory").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rcoll_tune.h"

#define CMA_MARGIN 0.10            /* `on` must win by this much over the run */

static const rcoll_coll_type_t cma_coll[RCOLL_TUNE_NCMA] = {
    [RCOLL_TUNE_CMA_BCAST]     = RCOLL_COLL_BCAST,
    [RCOLL_TUNE_CMA_ALLGATHER] = RCOLL_COLL_ALLGATHER,
    [RCOLL_TUNE_CMA_REDUCE]    = RCOLL_COLL_REDUCE,
};

static void cma_sizes(const tune_run_t *r, int w, tune_cma_t *c)
{
    size_t max = (size_t)16 << 20, step = r->quick ? 4 : 2;
    size_t b = w == RCOLL_TUNE_CMA_ALLGATHER ? 1024 : 4096;

    c->nsizes[w] = 0;
    for (; b <= max && c->nsizes[w] < TUNE_CMA_MAX_SIZES; b *= step) {
        /* every rank's block in the receive buffer (sbuf/rbuf sizes) */
        if (w == RCOLL_TUNE_CMA_ALLGATHER && b * (size_t)r->size > r->buf_bytes)
            break;
        c->size[w][c->nsizes[w]++] = b;
    }
}

/* The winning run of sizes (see the top), as a range; lo > hi: none. */
static void cma_range(const tune_cma_t *c, int w, size_t *lo, size_t *hi)
{
    int n = c->nsizes[w], best_i = -1, best_j = -1;
    double best = 0;

    *lo = SIZE_MAX;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int j = i; j < n; j++) {
            double off = c->t[w][0][j], on = c->t[w][1][j];
            if (!(off > 0) || !(on > 0))
                break;
            sum += log(off / on);
            /* the run must pay on the whole, by the margin per size */
            if (sum > best && sum > (double)(j - i + 1) * log(1 + CMA_MARGIN) &&
                c->t[w][0][i] > c->t[w][1][i] && off > on) {
                best = sum;
                best_i = i;
                best_j = j;
            }
        }
    }
    if (best_i < 0)
        return;
    *lo = best_i == 0 ? c->size[w][0]
                      : (size_t)ceil(sqrt((double)c->size[w][best_i - 1] * (double)c->size[w][best_i]));
    *hi = best_j == n - 1 ? SIZE_MAX
                          : (size_t)ceil(sqrt((double)c->size[w][best_j] * (double)c->size[w][best_j + 1])) - 1;
}

rcoll_status_t tune_measure_cma(tune_run_t *r, tune_cma_t *c)
{
    static const char *const mode[2] = { "off", "on" };
    rcoll_comm_t *comm[2];

    memset(c, 0, sizeof(*c));
    if (!tune_shm_measurable(r)) {
        snprintf(c->why, sizeof(c->why), "%s (auto keeps single copy off there)",
                 tune_shm_why_not(r));
        return RCOLL_OK;
    }
    /* one communicator per mode, its segment set up under that mode */
    rcoll_status_t st = tune_modes_open(r, "RCOLL_SHM_CMA", mode, comm);
    for (int w = 0; w < RCOLL_TUNE_NCMA && st == RCOLL_OK; w++) {
        double *t[2] = { c->t[w][0], c->t[w][1] };
        cma_sizes(r, w, c);
        st = tune_modes_time(r, cma_coll[w], comm, c->size[w], c->nsizes[w], t);
        if (st == RCOLL_OK)
            cma_range(c, w, &c->lo[w], &c->hi[w]);
    }
    if (st != RCOLL_OK)
        fprintf(stderr, "rcoll_tune: rank %d: single-copy sizes: %s\n", r->rank, rcoll_strerror(st));
    tune_modes_close(comm);
    c->measured = st == RCOLL_OK;
    return st;
}

void tune_write_cma(FILE *f, const tune_run_t *r, const tune_cma_t *c)
{
    fprintf(f, "\n# shared-memory single copy (RCOLL_SHM_CMA=auto; docs/tuning.md)\n");
    if (!c->measured) {
        fprintf(f, "# not measured: %s; the defaults apply\n", c->why[0] ? c->why : "failed");
        return;
    }
    fprintf(f, "# us per call with the shm algorithm, RCOLL_SHM_CMA=off / on (max over ranks, "
            "median of %d); if the ranks cannot read each other's memory both are the two-copy "
            "path (RCOLL_LOG_LEVEL=debug says)\n", r->reps);
    for (int w = 0; w < RCOLL_TUNE_NCMA; w++) {
        char range[48];
        fprintf(f, "#   %s:", rcoll_tune_cma_name(w));
        for (int s = 0; s < c->nsizes[w]; s++)
            fprintf(f, " %zu %.2f/%.2f", c->size[w][s], c->t[w][0][s] * 1e6, c->t[w][1][s] * 1e6);
        fputc('\n', f);
        rcoll_tune_cma_format(c->lo[w], c->hi[w], range, sizeof(range));
        fprintf(f, "shm %-14s %s\n", rcoll_tune_cma_name(w), range);
    }
}
