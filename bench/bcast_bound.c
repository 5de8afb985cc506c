/*
 * bcast_bound.c - the bare two-copy pipelined broadcast between two cores,
 * with nothing of rcoll in it: the floor under a shared-memory bcast on
 * this machine for a given chunk size and number of chunk buffers.
 *
 *   bench/bcast_bound [BYTES [CHUNK [NBUF]]]   (default 262144 65536 24)
 *
 * Two processes pinned to cores 0 and 1 share NBUF buffers of CHUNK bytes.
 * Per round (after a two-sided flag barrier), the root copies BYTES from
 * its private buffer chunk by chunk into buffer g mod NBUF and raises a
 * ready count; the reader waits for each chunk, copies it into its private
 * buffer and raises a done count, which lets the root reuse the buffer
 * NBUF chunks later.  Each side times its own part; the figure is the
 * median over 2000 rounds of the two sides' average, as OSU reports a
 * collective (plus each side's median).  Compare with rcoll's bcast at the
 * same size: the difference is rcoll's own overhead.
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

#define ROUNDS 2000
#define WARMUP 200

typedef struct {
    _Atomic long v;
    char         pad[64 - sizeof(long)];
} line_flag_t;

typedef struct {
    line_flag_t arrived[2], ready, done;
    double      t[2][ROUNDS];
} shared_t;

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 262144;
    size_t chunk = argc > 2 ? strtoul(argv[2], NULL, 0) : 65536;
    long nbuf = argc > 3 ? strtol(argv[3], NULL, 0) : 24;
    if (bytes == 0 || chunk == 0 || nbuf < 1) {
        fprintf(stderr, "usage: %s [BYTES [CHUNK [NBUF]]]  (all > 0)\n", argv[0]);
        return 1;
    }
    shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *ring = mmap(NULL, chunk * (size_t)nbuf, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || ring == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(ring, 0, chunk * (size_t)nbuf);
    pid_t pid = fork();
    int me = pid == 0;                       /* 0: root, 1: reader */
    pin(me);
    char *buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    memset(buf, me + 1, bytes);
    long g = 0, nchunks = (long)((bytes + chunk - 1) / chunk);
    for (int round = -WARMUP; round < ROUNDS; round++) {
        long b = round + WARMUP + 1;
        atomic_store(&sh->arrived[me].v, b);
        while (atomic_load(&sh->arrived[!me].v) < b)
            ;
        double t0 = now_s();
        for (long c = 0; c < nchunks; c++, g++) {
            size_t off = (size_t)c * chunk, len = bytes - off < chunk ? bytes - off : chunk;
            char *piece = ring + (size_t)(g % nbuf) * chunk;
            if (me == 0) {
                while (atomic_load_explicit(&sh->done.v, memory_order_acquire) < g - nbuf + 1)
                    ;
                memcpy(piece, buf + off, len);
                atomic_store_explicit(&sh->ready.v, g + 1, memory_order_release);
            } else {
                while (atomic_load_explicit(&sh->ready.v, memory_order_acquire) < g + 1)
                    ;
                memcpy(buf + off, piece, len);
                atomic_store_explicit(&sh->done.v, g + 1, memory_order_release);
            }
        }
        if (round >= 0)
            sh->t[me][round] = now_s() - t0;
    }
    if (me == 1)
        _exit(0);
    waitpid(pid, NULL, 0);
    double m[3];
    two_sides_medians(sh->t[0], sh->t[1], ROUNDS, m);
    printf("bcast %zu B, %zu B chunks, %ld buffers: %.2f us (root %.2f, reader %.2f)\n", bytes,
           chunk, nbuf, m[0] * 1e6, m[1] * 1e6, m[2] * 1e6);
    return 0;
}
