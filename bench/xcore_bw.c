/*
 * xcore_bw.c - the memory figures that bound a shared-memory collective on
 * this machine: single-core memcpy bandwidth, and the bandwidth at which
 * one core copies data that another core has just written (the cross-core
 * transfer every shm collective pays once per byte it moves between ranks).
 *
 *   bench/xcore_bw [CPU_A CPU_B]     (default: cores 0 and 1)
 *
 * Two processes share an anonymous mapping.  For each size, the writer
 * (on CPU_A) fills the shared buffer and raises a flag; the reader (on
 * CPU_B) copies it into a private buffer and lowers the flag; the reader's
 * copy time is the cross-core figure, the writer's fill time (over lines
 * the reader holds from the previous round) the cross-core write figure.
 * The local figure is the reader copying its own private buffer.  Medians of 50 repetitions, GB/s = 1e9
 * bytes per second of data copied.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
    pid_t pid = fork();
    if (pid == 0) {                         /* writer */
        pin(cpu_a);
        unsigned char v = 0;
        for (;;) {
            int t;
            while ((t = atomic_load(&sh->turn)) == 1)
                ;
            if (t < 0)
                _exit(0);
            double t0 = now_s();
            memset(sh->buf, ++v, sh->bytes);
            sh->wtime = now_s() - t0;
            atomic_store(&sh->turn, 1);
        }
    }
    pin(cpu_b);
    char *local = malloc(MAX_BYTES), *dst = malloc(MAX_BYTES);
    memset(local, 2, MAX_BYTES);
    memset(dst, 3, MAX_BYTES);
    printf("# size        local memcpy GB/s   cross-core copy GB/s   write over a reader's lines GB/s"
           "   (cores %d -> %d)\n", cpu_a, cpu_b);
    for (size_t n = 4 << 10; n <= MAX_BYTES; n *= 2) {
        double tl[REPS], tx[REPS], tw[REPS];
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
        }
        qsort(tl, REPS, sizeof(double), by_value);
        qsort(tx, REPS, sizeof(double), by_value);
        qsort(tw, REPS, sizeof(double), by_value);
        printf("%-12zu %18.1f %22.1f %34.1f\n", n, n / tl[REPS / 2] / 1e9, n / tx[REPS / 2] / 1e9,
               n / tw[REPS / 2] / 1e9);
    }
    atomic_store(&sh->turn, -1);
    waitpid(pid, NULL, 0);
    return 0;
}
