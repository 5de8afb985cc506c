/*
 * splice_bound.c - a bare single-copy broadcast between two cores through a
 * pipe, with nothing of rcoll in it: the root hands its buffer's pages to
 * the kernel with vmsplice(2) (references, no copy) and the reader read(2)s
 * them into its own buffer (the one copy, done by the kernel).  Unlike
 * process_vm_readv it needs no ptrace permission, only a pipe both ranks
 * hold.  Compare with bench/bcast_bound (two copies through shared memory)
 * and bench/xcore_bw (one cross-core memcpy) at the same size.
 *
 *   bench/splice_bound [BYTES [CHUNK [PIPE_BYTES]]]  (default 1048576 262144 1048576)
 *
 * Per round (after a two-sided flag barrier) the root vmsplices BYTES in
 * CHUNK pieces and waits for the reader's done flag (its buffer must not
 * change while the pipe holds references to it); the reader reads until it
 * has BYTES and raises the flag.  The figure is the median over the rounds
 * of the two sides' average, as bcast_bound reports.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "two_cores.h"

#define ROUNDS 1000
#define WARMUP 100

typedef struct {
    _Atomic long v;
    char         pad[64 - sizeof(long)];
} line_flag_t;

typedef struct {
    line_flag_t arrived[2], done;
    double      t[2][ROUNDS];
} shared_t;

static int send_all(int fd, char *buf, size_t bytes, size_t chunk)
{
    for (size_t off = 0; off < bytes;) {
        struct iovec iov = { buf + off, bytes - off < chunk ? bytes - off : chunk };
        ssize_t n = vmsplice(fd, &iov, 1, 0);
        if (n <= 0) {
            perror("vmsplice");
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

static int recv_all(int fd, char *buf, size_t bytes)
{
    for (size_t off = 0; off < bytes;) {
        ssize_t n = read(fd, buf + off, bytes - off);
        if (n <= 0) {
            perror("read");
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 1048576;
    size_t chunk = argc > 2 ? strtoul(argv[2], NULL, 0) : 262144;
    long psz = argc > 3 ? strtol(argv[3], NULL, 0) : 1048576;
    int fds[2];
    if (bytes == 0 || chunk == 0 || pipe(fds) != 0) {
        fprintf(stderr, "usage: %s [BYTES [CHUNK [PIPE_BYTES]]]  (all > 0)\n", argv[0]);
        return 1;
    }
    long got = fcntl(fds[1], F_SETPIPE_SZ, psz);
    shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pid_t pid = fork();
    int me = pid == 0;   /* 0: root, 1: reader */
    pin(me);
    char *buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    memset(buf, me + 1, bytes);
    for (int round = -WARMUP; round < ROUNDS; round++) {
        long b = round + WARMUP + 1;
        atomic_store(&sh->arrived[me].v, b);
        while (atomic_load(&sh->arrived[!me].v) < b)
            ;
        double t0 = now_s();
        if (me == 0) {
            if (send_all(fds[1], buf, bytes, chunk) != 0)
                return 1;
            while (atomic_load_explicit(&sh->done.v, memory_order_acquire) < b)
                sched_yield();
        } else {
            if (recv_all(fds[0], buf, bytes) != 0)
                _exit(1);
            atomic_store_explicit(&sh->done.v, b, memory_order_release);
        }
        if (round >= 0)
            sh->t[me][round] = now_s() - t0;
    }
    if (me == 1) {
        if (buf[0] != 1 || buf[bytes - 1] != 1)
            fprintf(stderr, "reader's buffer does not hold the root's bytes\n");
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    double m[3];
    two_sides_medians(sh->t[0], sh->t[1], ROUNDS, m);
    printf("splice bcast %zu B, %zu B vmsplices, pipe %ld B: %.2f us (root %.2f, reader %.2f), "
           "%.1f GB/s\n",
           bytes, chunk, got, m[0] * 1e6, m[1] * 1e6, m[2] * 1e6, bytes / m[0] / 1e9);
    return 0;
}
