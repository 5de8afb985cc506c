/*
 * two_cores.h - what the bare memory benchmarks (xcore_bw.c, bcast_bound.c,
 * splice_bound.c, ...) share: a monotonic clock, pinning a process to a
 * core, an ordering of doubles and the medians of a two-process run.
 * Header-only; each program is one source file.
 */
#ifndef RCOLL_BENCH_TWO_CORES_H
#define RCOLL_BENCH_TWO_CORES_H

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static inline int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The medians of a two-process run's per-round times t0 (root) and t1
 * (reader), n rounds each (sorted in place), and of the two sides' average
 * per round, as OSU reports a collective: m[0] average, m[1] root,
 * m[2] reader. */
static inline void two_sides_medians(double *t0, double *t1, int n, double m[3])
{
    double *avg = malloc((size_t)n * sizeof(double));
    if (avg == NULL) {
        m[0] = m[1] = m[2] = 0;
        return;
    }
    for (int i = 0; i < n; i++)
        avg[i] = (t0[i] + t1[i]) / 2;
    qsort(avg, (size_t)n, sizeof(double), by_value);
    qsort(t0, (size_t)n, sizeof(double), by_value);
    qsort(t1, (size_t)n, sizeof(double), by_value);
    m[0] = avg[n / 2];
    m[1] = t0[n / 2];
    m[2] = t1[n / 2];
    free(avg);
}

static inline void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof(s), &s) != 0)
        perror("sched_setaffinity");
}

#endif
