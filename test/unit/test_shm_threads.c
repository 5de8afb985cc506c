/*
 * test_shm_threads.c - shm reduces with the ranks as real threads over one
 * segment in ordinary memory.  test_shm's scheduler runs one progress call
 * at a time, so a slot is always either empty or full there; here the root
 * reads a slot while its writer is still filling it, piece by piece
 * (rcoll__shm_slot_write_pieces / rcoll__shm_slot_pieces_in), the way two
 * processes do.  A root that folds a piece before its writer raised the
 * slot's fill flag past it reads the previous reduce's bytes (every reduce
 * has other values) and fails the result check.  Pieces of 5 lines and
 * vectors of 1 to 47 pieces, 3 ranks, every rank the root in turn, in place
 * or not.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core.h"
#include "shm/shm.h"

extern const rcoll_alg_t rcoll_reduce_shm;

#define P      3
#define NITER  3000
#define PIECE  320
#define MAXN   (47 * PIECE / 4)      /* int32 elements: 47 pieces */

typedef struct {
    rcoll_context_t ctx;
    rcoll_comm_t    comm;
    int             world_ranks[P];
    rcoll__shm_t   *sh;
    int32_t        *send, *recv;
    _Alignas(64) rcoll_task_t task;
    char            failed[256];
} trank_t;

static trank_t ranks[P];
static _Atomic int stop;     /* a rank failed: the others give up too */

static int32_t val(int r, size_t i, int it)
{
    return (int32_t)(r * 1000003 + (int)i * 7 + it * 131);
}

/* The same sequence on every rank: iteration it's count, root and whether
 * the root is in place. */
static void shape_of(int it, size_t *count, int *root, int *in_place)
{
    uint64_t x = (uint64_t)it * 0x9E3779B97F4A7C15ULL;
    x ^= x >> 29;
    *count = 128 + (size_t)(x % (MAXN - 128 + 1));     /* 512 bytes: pieced from there */
    *root = it % P;
    *in_place = (int)(x >> 40) & 1;
}

static void *rank_main(void *arg)
{
    trank_t *t = arg;
    int r = t->comm.rank;
    for (int it = 0; it < NITER; it++) {
        size_t count;
        int root, in_place;
        shape_of(it, &count, &root, &in_place);
        in_place = in_place && r == root;
        int32_t *in = in_place ? t->recv : t->send + 1;    /* unaligned by 4 bytes */
        for (size_t i = 0; i < count; i++) {
            in[i] = val(r, i, it);
        }
        if (r == root && !in_place) {
            memset(t->recv, 0xee, count * 4);
        }
        rcoll_task_t *task = &t->task;
        memset(task, 0, sizeof(*task));
        task->ctx = &t->ctx;
        task->comm = &t->comm;
        task->wait_peer = -1;
        task->status = RCOLL_INPROGRESS;
        task->args.type = RCOLL_COLL_REDUCE;
        task->args.count = count;
        task->args.dtype = RCOLL_INT32;
        task->args.op = RCOLL_SUM;
        task->args.root = root;
        task->args.in_place = in_place;
        task->args.sendbuf = in;
        task->args.recvbuf = r == root ? t->recv : NULL;
        rcoll_status_t st;
        unsigned spins = 0;
        while ((st = rcoll_reduce_shm.progress(task)) == RCOLL_INPROGRESS) {
            if (stop) {
                return NULL;
            }
            if (++spins > 200000000u) {
                snprintf(t->failed, sizeof(t->failed), "rank %d reduce %d: no progress", r, it);
                stop = 1;
                return NULL;
            }
            if (spins % 64 == 0) {
                sched_yield();
            }
        }
        if (st != RCOLL_OK) {
            snprintf(t->failed, sizeof(t->failed), "rank %d reduce %d: status %d", r, it, st);
            stop = 1;
            return NULL;
        }
        if (r != root) {
            continue;
        }
        for (size_t i = 0; i < count; i++) {
            uint32_t want = 0;
            for (int q = 0; q < P; q++) {
                want += (uint32_t)val(q, i, it);
            }
            if ((uint32_t)t->recv[i] != want) {
                snprintf(t->failed, sizeof(t->failed),
                         "reduce %d (root %d, %zu elements, in place %d): element %zu "
                         "(piece %zu) is %d, expected %d", it, root, count, in_place, i,
                         i * 4 / PIECE, t->recv[i], (int32_t)want);
                stop = 1;
                return NULL;
            }
        }
    }
    return NULL;
}

static void test_pieced_reduce_threads(void **state)
{
    (void)state;
    memset(ranks, 0, sizeof(ranks));
    char *seg = NULL;
    for (int r = 0; r < P; r++) {
        trank_t *t = &ranks[r];
        t->ctx.config.shm = 1;
        t->comm.ctx = &t->ctx;
        t->comm.id = 42;
        t->comm.rank = r;
        t->comm.size = P;
        t->comm.local_size = P;
        t->comm.world_ranks = t->world_ranks;
        for (int q = 0; q < P; q++) {
            t->world_ranks[q] = q;
        }
        t->sh = rcoll__shm_new(&t->comm);
        assert_non_null(t->sh);
        rcoll__shm_layout(t->sh, 16384, 4096, 2, 0);
        t->sh->red_pieced_min = 512;
        t->sh->red_piece = PIECE;
        assert_true(rcoll__shm_flat(t->sh, MAXN * 4));
        t->send = malloc(MAXN * 4 + 8);
        t->recv = malloc(MAXN * 4 + 8);
        assert_true(t->send && t->recv);
    }
    assert_int_equal(posix_memalign((void **)&seg, 4096, ranks[0].sh->size), 0);
    memset(seg, 0, ranks[0].sh->size);
    for (int r = 0; r < P; r++) {
        ranks[r].sh->base = seg;
        ranks[r].sh->state = RCOLL__SHM_READY;
        rcoll_coll_comm(&ranks[r].comm)->shm = ranks[r].sh;
    }
    pthread_t th[P];
    for (int r = 0; r < P; r++) {
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &ranks[r]), 0);
    }
    for (int r = 0; r < P; r++) {
        assert_int_equal(pthread_join(th[r], NULL), 0);
    }
    for (int r = 0; r < P; r++) {
        if (ranks[r].failed[0] != '\0') {
            fail_msg("%s", ranks[r].failed);
        }
    }
    for (int r = 0; r < P; r++) {
        assert_int_equal(ranks[r].sh->completed, (uint64_t)NITER);
        free(ranks[r].send);
        free(ranks[r].recv);
        free(ranks[r].sh->fin);
        free(ranks[r].sh);
    }
    free(seg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieced_reduce_threads),
    };
    rcoll_log_set_level(RCOLL_LOG_ERROR);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
