/*
 * allgather_bound.c - what the copies of a 2-rank allgather cost on this
 * machine, without rcoll: each rank needs the other's n-byte block.
 *
 *   bench/allgather_bound [CPU_A CPU_B] [--warm]
 *
 * Two processes (pinned to CPU_A and CPU_B, default 0 and 1), each with a
 * private block and a block in a shared mapping.  Per size, the median of
 * REPS calls, each started by both at once and timed as the slower one's
 * (µs):
 *   cma-one    one rank reads the other's private block (process_vm_readv)
 *   cma-both   both read each other's private block at once
 *   cma-rw     one rank reads the other's block and writes its own into
 *              the other (process_vm_readv + process_vm_writev)
 *   mem-one    one rank copies the other's shared block (memcpy)
 *   mem-both   both copy each other's shared block at once
 *   two-copy   both copy their private block into their shared one, meet,
 *              and copy the other's shared block out: the bare two-copy
 *              allgather, unpipelined (the copy-in writes over lines the
 *              other core read in the call before)
 * Between calls each owner rewrites its blocks (two-copy: its private
 * one), as an application writes its send buffer (--warm: not, so the
 * lines stay shared in both caches).  cma-*: single copy; mem-both: the
 * second half of two copies alone.
 * Needs process_vm_readv between the two (ptrace rules: both processes
 * allow it with PR_SET_PTRACER).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "two_cores.h"

#define REPS 200
#define WARMUP 20
#define MAX_BYTES (4u << 20)
#define NMODES 6

struct shared {
    _Atomic long arrived[2];
    pid_t        pid[2];
    char        *priv[2], *recv[2];      /* each rank's, in its own address space */
    double       t[2][REPS];
    char         seg[2][MAX_BYTES];      /* each rank's shared block */
};

static void meet(struct shared *s, int me, long *gen)
{
    ++*gen;
    atomic_store(&s->arrived[me], *gen);
    while (atomic_load(&s->arrived[!me]) < *gen)
        ;
}

static int cma(pid_t pid, void *local, void *remote, size_t n, int write)
{
    struct iovec l = { local, n }, r = { remote, n };
    ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                        : process_vm_readv(pid, &l, 1, &r, 1, 0);
    return got == (ssize_t)n ? 0 : -1;
}

/* One call of mode m on rank me; -1 if a single-copy call failed. */
static int one_call(struct shared *s, int me, int m, size_t n, long *gen)
{
    int o = !me;
    switch (m) {
    case 0: return me == 1 ? cma(s->pid[0], s->recv[1], s->priv[0], n, 0) : 0;
    case 1: return cma(s->pid[o], s->recv[me], s->priv[o], n, 0);
    case 2: return me == 0 ? cma(s->pid[1], s->recv[0], s->priv[1], n, 0) |
                             cma(s->pid[1], s->priv[0], s->recv[1], n, 1) : 0;
    case 3: if (me == 1) memcpy(s->recv[1], s->seg[0], n); return 0;
    case 4: memcpy(s->recv[me], s->seg[o], n); return 0;
    case 5:
        memcpy(s->seg[me], s->priv[me], n);
        meet(s, me, gen);
        memcpy(s->recv[me], s->seg[o], n);
        return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    static const char *const mode[NMODES] = { "cma-one", "cma-both", "cma-rw", "mem-one",
                                              "mem-both", "two-copy" };
    static const size_t sizes[] = { 65536, 131072, 262144, 1048576, 4194304 };
    int warm = argc > 1 && strcmp(argv[argc - 1], "--warm") == 0;
    int cpu[2] = { argc > 2 + warm ? atoi(argv[1]) : 0, argc > 2 + warm ? atoi(argv[2]) : 1 };
    struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
    if (s == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pid_t child = fork();
    int me = child == 0, failed = 0;
    long gen = 0;
    pin(cpu[me]);
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    s->pid[me] = getpid();
    s->priv[me] = aligned_alloc(4096, MAX_BYTES);
    s->recv[me] = aligned_alloc(4096, MAX_BYTES);
    if (s->priv[me] == NULL || s->recv[me] == NULL) {
        perror("aligned_alloc");
        return 1;
    }
    memset(s->priv[me], me + 1, MAX_BYTES);
    memset(s->recv[me], 0, MAX_BYTES);
    memset(s->seg[me], me + 1, MAX_BYTES);
    meet(s, me, &gen);
    if (me == 0) {
        printf("# 2-rank allgather copies, cores %d and %d, blocks %s between calls; "
               "median of %d, us\n# size  ", cpu[0], cpu[1], warm ? "not rewritten" : "rewritten",
               REPS);
        for (int m = 0; m < NMODES; m++)
            printf(" %10s", mode[m]);
        printf("\n");
    }
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        if (me == 0)
            printf("%8zu", n);
        for (int m = 0; m < NMODES; m++) {
            for (int r = -WARMUP; r < REPS; r++) {
                meet(s, me, &gen);
                double t0 = now_s();
                failed |= one_call(s, me, m, n, &gen);
                double dt = (now_s() - t0) * 1e6;
                if (r >= 0)
                    s->t[me][r] = dt;
                meet(s, me, &gen);
                if (!warm) {
                    memset(s->priv[me], r & 0xff, n);
                    if (m != 5)
                        memset(s->seg[me], r & 0xff, n);
                }
            }
            meet(s, me, &gen);
            if (me == 0) {
                double a[REPS];
                for (int r = 0; r < REPS; r++)
                    a[r] = s->t[0][r] > s->t[1][r] ? s->t[0][r] : s->t[1][r];
                qsort(a, REPS, sizeof(a[0]), by_value);
                printf(" %10.2f", a[REPS / 2]);
            }
            meet(s, me, &gen);
        }
        if (me == 0) {
            printf("\n");
            fflush(stdout);
        }
    }
    if (failed)
        fprintf(stderr, "allgather_bound: rank %d: process_vm_readv/writev failed (ptrace rules?): "
                        "its cma-* columns are not copies\n", me);
    if (me == 0)
        waitpid(child, NULL, 0);
    return failed;
}
