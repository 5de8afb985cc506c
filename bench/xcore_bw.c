/*
 * xcore_bw.c - the memory figures that bound a shared-memory collective on
 * this machine: single-core memcpy bandwidth, and the bandwidth at which
 * one core copies data that another core has just written (the cross-core
 * transfer every shm collective pays once per byte it moves between ranks).
 *
 *   bench/xcore_bw [CPU_A CPU_B]     (default: cores 0 and 1)
 *
 * Two processes share an anonymous mapping.  For each size, the writer
 * (on CPU_A) copies its private buffer into the shared one and raises a
 * flag; the reader (on CPU_B) copies the shared buffer into a private one
 * and lowers the flag.  Columns, GB/s = 1e9 bytes per second of data
 * copied, medians of 50 repetitions:
 *   local memcpy        the reader copying its own private buffer
 *   cross-core copy     the reader's copy out of the shared buffer
 *   copy over a reader's lines
 *                       the writer's copy into the shared buffer, whose
 *                       lines the reader holds from the previous round:
 *                       what a two-copy collective's copy-in pays
 *   single copy         the reader's process_vm_readv of the writer's
 *                       private buffer (what the shm single-copy paths
 *                       pay; "n/a" where ptrace rules forbid it)
 * The copy-over column used to time a memset, which on the AMD EPYC Zen 4
 * VM ran at 5.3-6.7 GB/s at 32-256 KiB in a phase where the memcpy the
 * collectives make ran at 24-30: it overstated what they pay.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "two_cores.h"

#define REPS 50
#define MAX_BYTES (16u << 20)

struct shared {
    _Atomic int turn;     /* 0: writer fills, 1: reader copies, -1: stop */
    size_t      bytes;
    double      wtime;    /* the writer's last fill, seconds */
    char        pad[40];
    char        buf[];
};

int main(int argc, char **argv)
{
    int cpu_a = argc > 2 ? atoi(argv[1]) : 0, cpu_b = argc > 2 ? atoi(argv[2]) : 1;
    struct shared *sh = mmap(NULL, sizeof(*sh) + MAX_BYTES, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(sh->buf, 1, MAX_BYTES);
    char *src = malloc(MAX_BYTES);         /* the writer's private buffer (same address in both) */
    if (src == NULL) {
        perror("malloc");
        return 1;
    }
    memset(src, 4, MAX_BYTES);
    pid_t pid = fork();
    if (pid == 0) {                         /* writer */
        pin(cpu_a);
        for (;;) {
            int t;
            while ((t = atomic_load(&sh->turn)) == 1)
                ;
            if (t < 0)
                _exit(0);
            double t0 = now_s();
            src[0]++;                       /* new data each round */
            memcpy(sh->buf, src, sh->bytes);
            sh->wtime = now_s() - t0;
            atomic_store(&sh->turn, 1);
        }
    }
    pin(cpu_b);
    char *local = malloc(MAX_BYTES), *dst = malloc(MAX_BYTES);
    memset(local, 2, MAX_BYTES);
    memset(dst, 3, MAX_BYTES);
    printf("# size        local memcpy GB/s   cross-core copy GB/s   copy over a reader's lines GB/s"
           "   single copy GB/s   (cores %d -> %d)\n", cpu_a, cpu_b);
    int cma_ok = 1;
    for (size_t n = 4 << 10; n <= MAX_BYTES; n *= 2) {
        double tl[REPS], tx[REPS], tw[REPS], tc[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = now_s();
            memcpy(dst, local, n);
            tl[r] = now_s() - t0;
            sh->bytes = n;
            atomic_store(&sh->turn, 0);
            while (atomic_load(&sh->turn) != 1)
                ;
            tw[r] = sh->wtime;
            t0 = now_s();
            memcpy(dst, sh->buf, n);
            tx[r] = now_s() - t0;
            struct iovec here = { dst, n }, there = { src, n };
            t0 = now_s();
            cma_ok = cma_ok && process_vm_readv(pid, &here, 1, &there, 1, 0) == (ssize_t)n;
            tc[r] = now_s() - t0;
        }
        qsort(tl, REPS, sizeof(double), by_value);
        qsort(tx, REPS, sizeof(double), by_value);
        qsort(tw, REPS, sizeof(double), by_value);
        qsort(tc, REPS, sizeof(double), by_value);
        printf("%-12zu %18.1f %22.1f %33.1f", n, n / tl[REPS / 2] / 1e9, n / tx[REPS / 2] / 1e9,
               n / tw[REPS / 2] / 1e9);
        if (cma_ok) {
            printf(" %18.1f\n", n / tc[REPS / 2] / 1e9);
        } else {
            printf(" %18s\n", "n/a");
        }
    }
    atomic_store(&sh->turn, -1);
    waitpid(pid, NULL, 0);
    return 0;
}
