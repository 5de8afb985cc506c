/*
 * rcoll_tune_flat.c - the largest shm allreduce on a 2-rank segment that
 * takes the flat path: RCOLL_SHM_PAIR_FLAT_MAX=auto's value
 * (collectives/shm/shm.h, rcoll__shm_ar_flat).
 *
 * The flat path hands each rank's whole vector to the other (one hand-over,
 * every rank reduces everything); the pipeline has each rank reduce half,
 * so half the bytes cross between cores, at the price of more hand-overs.
 * Where one overtakes the other is a property of the machine and, on a VM,
 * of its phase (AMD EPYC Zen 4 VM, 2026-12-07: about 3 KB in its fast phase,
 * about 12 KB in its slow one; docs/shm.md, "The 2-rank allreduce's flat
 * limit").
 *
 * Timed on the shm allreduce at 8 B and from 512 B to 256 KiB (the slot),
 * every 2x (--quick: every 4x), once with RCOLL_SHM_PAIR_FLAT_MAX at the
 * slot (flat wherever it fits) and once with 0 (always the pipeline), each
 * on a duplicate of the world set up under that value, the two alternating
 * size by size.  The value written is the cut that makes the summed
 * log-time of flat below it and pipelined above it smallest: halfway
 * (geometrically) between the last size flat keeps and the next; every size
 * flat: the largest measured; none (the pipeline wins at 8 B too): 0.
 * Measured only where the world is 2 ranks on one node (with more ranks no
 * segment is a pair), no more ranks than CPUs, RCOLL_SHM=1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rcoll_tune.h"

static void flat_sizes(const tune_run_t *r, tune_flat_t *s)
{
    size_t step = r->quick ? 4 : 2;

    s->nsizes = 0;
    s->size[s->nsizes++] = 8;
    for (size_t b = 512; b <= ((size_t)256 << 10) && b <= r->buf_bytes &&
                         s->nsizes < TUNE_FLAT_MAX_SIZES;
         b *= step) {
        s->size[s->nsizes++] = b;
    }
}

rcoll_status_t tune_measure_flat(tune_run_t *r, tune_flat_t *s)
{
    static const char *const mode[2] = { "262144", "0" };

    memset(s, 0, sizeof(*s));
    if (!tune_shm_measurable(r)) {
        snprintf(s->why, sizeof(s->why), "%s", tune_shm_why_not(r));
        return RCOLL_OK;
    }
    if (r->size != 2) {
        snprintf(s->why, sizeof(s->why), "the world has %d ranks, and only a segment of 2 takes "
                 "the setting (run rcoll_tune on 2 ranks of one node to measure it)", r->size);
        return RCOLL_OK;
    }
    double *t[2] = { s->t[0], s->t[1] };
    flat_sizes(r, s);
    rcoll_status_t st = tune_modes_measure(r, "RCOLL_SHM_PAIR_FLAT_MAX", mode, RCOLL_COLL_ALLREDUCE,
                                           s->size, s->nsizes, t);
    if (st == RCOLL_OK)
        s->max = tune_flat_cut(s->size, s->t[0], s->t[1], s->nsizes);
    else
        fprintf(stderr, "rcoll_tune: rank %d: the 2-rank flat allreduce: %s\n", r->rank,
                rcoll_strerror(st));
    s->measured = st == RCOLL_OK;
    return st;
}

void tune_write_flat(FILE *f, const tune_run_t *r, const tune_flat_t *s)
{
    fprintf(f, "\n# the largest flat shm allreduce on 2 ranks (RCOLL_SHM_PAIR_FLAT_MAX=auto; "
            "docs/tuning.md)\n");
    if (!s->measured) {
        fprintf(f, "# not measured: %s; auto is %d\n", s->why[0] ? s->why : "failed",
                RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT);
        return;
    }
    fprintf(f, "# us per shm allreduce, flat / pipelined (max over ranks, median of %d):",
            r->reps);
    for (int i = 0; i < s->nsizes; i++)
        fprintf(f, " %zu %.2f/%.2f", s->size[i], s->t[0][i] * 1e6, s->t[1][i] * 1e6);
    fputc('\n', f);
    fprintf(f, "shm pair_flat_max  %zu\n", s->max);
}
