/*
 * line_rtt.c - the round trip of one cache line between two cores, sampled
 * over time: the latency every shared-memory flag hand-over pays, and the
 * one that moves a VM's shm collectives between "phases" (docs/shm.md,
 * "Latency phases on a VM").
 *
 *   bench/line_rtt [-n SAMPLES] [-g GAP_MS] [CPU_A CPU_B]
 *                  (default: 20 samples, no gap, cores 0 and 1)
 *
 * Two processes share an anonymous mapping and take turns raising a
 * counter in one cache line; a sample is the mean round trip of 20000
 * turns (~3-10 ms).  With -g each sample is followed by GAP_MS of sleep on
 * CPU_A (its vCPU idles, and a hypervisor may move it to another host core).
 * Prints every sample in ns, then min, median and max.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "two_cores.h"

#define TURNS 20000
#define MAX_SAMPLES 1000

struct line {
    _Alignas(64) _Atomic long turn;   /* odd: the partner's move; < 0: stop */
    char pad[56];
};

static void nap(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    int samples = 20, gap_ms = 0, cpu[2] = { 0, 1 }, ncpu = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            samples = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-g") && i + 1 < argc) {
            gap_ms = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && ncpu < 2) {
            cpu[ncpu++] = atoi(argv[i]);
        } else {
            fprintf(stderr, "usage: line_rtt [-n SAMPLES] [-g GAP_MS] [CPU_A CPU_B]\n");
            return 2;
        }
    }
    if (samples < 1 || samples > MAX_SAMPLES || gap_ms < 0 || ncpu == 1) {
        fprintf(stderr, "line_rtt: 1..%d samples, a gap >= 0 ms, and two CPUs or none\n",
                MAX_SAMPLES);
        return 2;
    }
    struct line *l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
    if (l == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    atomic_store(&l->turn, 0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {                 /* the partner: answers every odd value */
        pin(cpu[1]);
        for (;;) {
            long t;
            while (((t = atomic_load_explicit(&l->turn, memory_order_acquire)) & 1) == 0 && t >= 0)
                ;
            if (t < 0)
                _exit(0);
            atomic_store_explicit(&l->turn, t + 1, memory_order_release);
        }
    }
    pin(cpu[0]);
    double ns[MAX_SAMPLES], sorted[MAX_SAMPLES];
    long t = 0;
    printf("# cache-line round trip, CPU %d <-> CPU %d, mean of %d turns per sample%s\n", cpu[0],
           cpu[1], TURNS, gap_ms ? ", then a sleep" : "");
    for (int s = 0; s < samples; s++) {
        double t0 = now_s();
        for (int i = 0; i < TURNS; i++) {
            atomic_store_explicit(&l->turn, ++t, memory_order_release);
            while (atomic_load_explicit(&l->turn, memory_order_acquire) != t + 1)
                ;
            t++;
        }
        ns[s] = (now_s() - t0) * 1e9 / TURNS;
        printf("%d %.0f\n", s, ns[s]);
        fflush(stdout);
        if (gap_ms > 0)
            nap(gap_ms);        /* the partner spins meanwhile */
    }
    atomic_store(&l->turn, -2);
    waitpid(pid, NULL, 0);
    memcpy(sorted, ns, (size_t)samples * sizeof(*ns));
    qsort(sorted, (size_t)samples, sizeof(*sorted), by_value);
    printf("# ns min %.0f median %.0f max %.0f\n", sorted[0], sorted[samples / 2],
           sorted[samples - 1]);
    return 0;
}
