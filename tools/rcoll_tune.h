/*
 * rcoll_tune.h - what the parts of the calibration command share
 * (rcoll_tune.c: options, the crossovers and the file; rcoll_tune_model.c:
 * the model's figures; rcoll_tune_cma.c: the single-copy sizes;
 * rcoll_tune_stream.c: where streaming copies begin; rcoll_tune_flat.c:
 * the largest flat 2-rank allreduce; rcoll_tune_modes.c:
 * the shm algorithms timed under two values of a setting;
 * rcoll_tune_time.c: timing one call).  See docs/tuning.md.
 */
#ifndef RCOLL_TUNE_TOOL_H
#define RCOLL_TUNE_TOOL_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include "rcoll.h"
#include "coll.h"
#include "selector.h"

typedef struct {
    rcoll_context_t *ctx;
    rcoll_comm_t    *world;
    rcoll_comm_t    *comm;        /* where tune_call runs: world, unless a measure says */
    int              rank, size;
    int              ppn;         /* most ranks on one node (agreed) */
    int              nnodes;      /* 1 when every rank is on one node */
    int              quick;
    int              reps;        /* timed repetitions per point; the median is kept */
    size_t           target;      /* bytes a repetition moves at least (sets its calls) */
    int              verbose;
    void            *sbuf, *rbuf; /* large enough for every measured call */
    size_t           buf_bytes;
} tune_run_t;

double tune_now(void);
double tune_median(double *v, int n);

/* The max over ranks of v[0..n-1], in place (with the selector's own
 * choice of allreduce). */
rcoll_status_t tune_max(tune_run_t *r, double *v, int n);

/* Force coll's algorithm (name "" returns the choice to the selector); every
 * rank does the same. */
rcoll_status_t tune_force(tune_run_t *r, rcoll_coll_type_t coll, const char *name);

/* One collective of coll, bytes per rank as the cost model counts them
 * (float32 sum, root 0; bcast_root: the bcast's root). */
rcoll_status_t tune_call(tune_run_t *r, rcoll_coll_type_t coll, size_t bytes, int bcast_root);

/* Seconds per call of coll at bytes with the algorithm forced before: the
 * median of r->reps repetitions on this rank (the caller takes the max over
 * ranks).  A negative value: the call failed (status in *st). */
double tune_time_coll(tune_run_t *r, rcoll_coll_type_t coll, size_t bytes, rcoll_status_t *st);

/* The measured model figures: value[k] for each key k of rcoll_tune_key_t,
 * NAN where not measured; every rank gets the same values. */
rcoll_status_t tune_measure_model(tune_run_t *r, double value[RCOLL_TUNE_NKEYS]);

/* The shm single-copy sizes (rcoll_tune_cma.c): per path of
 * rcoll_tune_cma_t, the times with RCOLL_SHM_CMA=off ([0]) and on ([1])
 * and the range chosen (lo > hi: none). */
#define TUNE_CMA_MAX_SIZES 16
typedef struct {
    int    measured;
    char   why[128];                /* not measured: why */
    size_t size[RCOLL_TUNE_NCMA][TUNE_CMA_MAX_SIZES];
    int    nsizes[RCOLL_TUNE_NCMA];
    double t[RCOLL_TUNE_NCMA][2][TUNE_CMA_MAX_SIZES];
    size_t lo[RCOLL_TUNE_NCMA], hi[RCOLL_TUNE_NCMA];
} tune_cma_t;

/* Timing the shm algorithm under two values of a setting that segments take
 * at set-up (rcoll_tune_modes.c).  measurable: every rank on one node,
 * RCOLL_SHM=1, no more ranks than CPUs (else why_not says which).  open: two
 * duplicates of the world, comm[m]'s segment set up with var = value[m],
 * var restored after; time: coll's shm algorithm at size[0..n-1] on both,
 * alternating, t[m][i] the max over ranks of the median; close: frees them. */
int            tune_shm_measurable(const tune_run_t *r);
const char    *tune_shm_why_not(const tune_run_t *r);
rcoll_status_t tune_modes_open(tune_run_t *r, const char *var, const char *const value[2],
                               rcoll_comm_t *comm[2]);
rcoll_status_t tune_modes_time(tune_run_t *r, rcoll_coll_type_t coll, rcoll_comm_t *comm[2],
                               const size_t *size, int n, double *t[2]);
void           tune_modes_close(rcoll_comm_t *comm[2]);
/* open, time one collective, close: for a measure of one collective. */
rcoll_status_t tune_modes_measure(tune_run_t *r, const char *var, const char *const value[2],
                                  rcoll_coll_type_t coll, const size_t *size, int n, double *t[2]);

rcoll_status_t tune_measure_cma(tune_run_t *r, tune_cma_t *c);
void tune_write_cma(FILE *f, const tune_run_t *r, const tune_cma_t *c);

/* Where streaming copies into receive buffers begin to pay
 * (rcoll_tune_stream.c): the shm allreduce's times with
 * RCOLL_SHM_STREAM_MIN=off ([0]) and 0 ([1]) and the size chosen (min;
 * SIZE_MAX: off). */
#define TUNE_STREAM_MAX_SIZES 8
typedef struct {
    int    measured;
    char   why[128];                /* not measured: why */
    size_t size[TUNE_STREAM_MAX_SIZES];
    int    nsizes;
    double t[2][TUNE_STREAM_MAX_SIZES];
    size_t min;
} tune_stream_t;

rcoll_status_t tune_measure_stream(tune_run_t *r, tune_stream_t *s);
void tune_write_stream(FILE *f, const tune_run_t *r, const tune_stream_t *s);

/* The largest flat shm allreduce on 2 ranks (rcoll_tune_flat.c): its times
 * flat wherever it fits ([0]) and always pipelined ([1]), and the value
 * chosen (max). */
#define TUNE_FLAT_MAX_SIZES 12
typedef struct {
    int    measured;
    char   why[160];                /* not measured: why */
    size_t size[TUNE_FLAT_MAX_SIZES];
    int    nsizes;
    double t[2][TUNE_FLAT_MAX_SIZES];
    size_t max;
} tune_flat_t;

rcoll_status_t tune_measure_flat(tune_run_t *r, tune_flat_t *s);
void tune_write_flat(FILE *f, const tune_run_t *r, const tune_flat_t *s);
/* The value tune_measure_flat writes for the times flat[] and pipe[] at
 * size[0..n-1] (ascending): the cut (flat below, pipelined above) with the
 * smallest summed log-time, halfway (geometrically) between the last size
 * flat keeps and the next; every size flat: size[n - 1]; none: 0.  A time
 * that is not positive (a failed call) never wins. */
static inline size_t tune_flat_cut(const size_t *size, const double *flat, const double *pipe,
                                   int n)
{
    int best_i = 0;
    double best = INFINITY;

    for (int i = 0; i <= n; i++) {          /* flat for size[0..i-1], the pipeline above */
        double sum = 0;
        for (int j = 0; j < n; j++) {
            double t = j < i ? flat[j] : pipe[j];
            sum += t > 0 ? log(t) : INFINITY;
        }
        if (sum < best) {
            best = sum;
            best_i = i;
        }
    }
    if (best_i == 0)
        return 0;
    if (best_i == n)
        return size[n - 1];
    return (size_t)floor(sqrt((double)size[best_i - 1] * (double)size[best_i]));
}

#endif
