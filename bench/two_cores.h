/*
 * two_cores.h - what the bare memory benchmarks (xcore_bw.c, bcast_bound.c)
 * share: a monotonic clock, pinning a process to a core, and an ordering of
 * doubles for medians.  Header-only; each program is one source file.
 */
#ifndef RCOLL_BENCH_TWO_CORES_H
#define RCOLL_BENCH_TWO_CORES_H

#include <sched.h>
#include <stdio.h>
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

static inline void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof(s), &s) != 0)
        perror("sched_setaffinity");
}

#endif
