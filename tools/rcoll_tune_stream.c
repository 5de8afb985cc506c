/*
 * rcoll_tune_stream.c - the receive-buffer size from which the shm
 * collectives copy into receive buffers with streaming (non-temporal)
 * stores: RCOLL_SHM_STREAM_MIN=auto's value (collectives/shm/shm_copy.h).
 *
 * Whether streaming pays depends on how the CPU's caches take a buffer that
 * is rewritten call after call, not on the L2 size alone: half the L2 was
 * right on the Intel Xeon VM of issue 15 (streaming 6-18% faster at 2-16
 * MiB), and 10-20% slower at 1-8 MiB on the AMD EPYC Zen 5 VM
 * (docs/shm.md, "Streaming copies into large receive buffers").
 *
 * Timed on the shm allreduce, whose copy of the result slices out is the
 * copy the setting steers most: sizes from 256 KiB to 16 MiB, every 2x
 * (--quick: every 4x), once with RCOLL_SHM_STREAM_MIN=off and once with 0
 * (streaming at every size), each on a communicator duplicated after the
 * setting (its segment takes it at set-up); the modes alternate size by
 * size, so a change of load hits both.  The value written is where the run
 * of sizes up to the largest begins whose summed log-ratio off / streaming
 * is largest, if streaming wins at that size and on the whole by
 * STREAM_MARGIN per size (halfway, geometrically, from the size before);
 * else off.  Measured where the shm allreduce runs: every rank on one node,
 * no more ranks than CPUs (a time there would measure the scheduler),
 * RCOLL_SHM=1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rcoll_tune.h"

#define STREAM_MARGIN 0.05      /* streaming must win by this much per size */

static void stream_sizes(const tune_run_t *r, tune_stream_t *s)
{
    size_t step = r->quick ? 4 : 2;

    s->nsizes = 0;
    for (size_t b = (size_t)256 << 10; b <= ((size_t)16 << 20) && b <= r->buf_bytes &&
                                       s->nsizes < TUNE_STREAM_MAX_SIZES;
         b *= step) {
        s->size[s->nsizes++] = b;
    }
}

/* The start of the winning run (see the top); SIZE_MAX: off. */
static size_t stream_from(const tune_stream_t *s)
{
    int n = s->nsizes, best_i = -1;
    double best = 0;

    for (int i = n - 1; i >= 0; i--) {
        double sum = 0;
        int ok = 1;
        for (int j = i; j < n; j++) {
            double off = s->t[0][j], on = s->t[1][j];
            if (!(off > 0) || !(on > 0)) {
                ok = 0;
                break;
            }
            sum += log(off / on);
        }
        if (ok && sum > best && sum > (double)(n - i) * log(1 + STREAM_MARGIN) &&
            s->t[0][i] > s->t[1][i]) {
            best = sum;
            best_i = i;
        }
    }
    if (best_i < 0)
        return SIZE_MAX;
    if (best_i == 0)
        return s->size[0];
    return (size_t)ceil(sqrt((double)s->size[best_i - 1] * (double)s->size[best_i]));
}

rcoll_status_t tune_measure_stream(tune_run_t *r, tune_stream_t *s)
{
    static const char *const mode[2] = { "off", "0" };

    memset(s, 0, sizeof(*s));
    s->min = SIZE_MAX;
    if (!tune_shm_measurable(r)) {
        snprintf(s->why, sizeof(s->why), "%s", tune_shm_why_not(r));
        return RCOLL_OK;
    }
    double *t[2] = { s->t[0], s->t[1] };
    stream_sizes(r, s);
    rcoll_status_t st = tune_modes_measure(r, "RCOLL_SHM_STREAM_MIN", mode, RCOLL_COLL_ALLREDUCE,
                                           s->size, s->nsizes, t);
    if (st == RCOLL_OK)
        s->min = stream_from(s);
    else
        fprintf(stderr, "rcoll_tune: rank %d: streaming copies: %s\n", r->rank, rcoll_strerror(st));
    s->measured = st == RCOLL_OK;
    return st;
}

void tune_write_stream(FILE *f, const tune_run_t *r, const tune_stream_t *s)
{
    fprintf(f, "\n# streaming copies into receive buffers (RCOLL_SHM_STREAM_MIN=auto; "
            "docs/tuning.md)\n");
    if (!s->measured) {
        fprintf(f, "# not measured: %s; auto is half the L2 cache\n", s->why[0] ? s->why : "failed");
        return;
    }
    fprintf(f, "# us per shm allreduce, RCOLL_SHM_STREAM_MIN=off / 0 (max over ranks, median of "
            "%d):", r->reps);
    for (int i = 0; i < s->nsizes; i++)
        fprintf(f, " %zu %.1f/%.1f", s->size[i], s->t[0][i] * 1e6, s->t[1][i] * 1e6);
    fputc('\n', f);
    if (s->min == SIZE_MAX)
        fprintf(f, "shm stream_min     off\n");
    else
        fprintf(f, "shm stream_min     %zu\n", s->min);
}
