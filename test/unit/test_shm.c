/*
 * test_shm.c - the shared-memory algorithms (collectives/shm/) in one
 * process: p simulated ranks share one segment in ordinary memory, and a
 * seeded random scheduler calls their progress functions in arbitrary
 * interleavings (one rank may run many collectives ahead of another).  A
 * rank that overwrote a slot or buffer too early, or finished a barrier
 * before all had arrived, shows up as a wrong result or a failed check;
 * a protocol that waits on the wrong flag shows up as a deadlock.
 * Also: the segment layout, and the cost the selector sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "core.h"
#include "shm/shm.h"
#include "shm/shm_cma.h"
#include "shm/shm_adapt.h"
#include "shm/shm_reduction.h"
#include "stream_min.h"
#include "selector.h"

extern const rcoll_alg_t rcoll_allreduce_shm;
extern const rcoll_alg_t rcoll_bcast_shm;
extern const rcoll_alg_t rcoll_barrier_shm;
extern const rcoll_alg_t rcoll_reduce_shm;
extern const rcoll_alg_t rcoll_allgather_shm;
extern const rcoll_alg_t rcoll_reduce_scatter_shm;

#define PMAX  7
#define NOPS  48

/* C11 aligned_alloc wants a size that is a multiple of the alignment
 * (glibc lets it pass; ASan does not). */
static void *alloc_aligned(size_t align, size_t size)
{
    return aligned_alloc(align, (size + align - 1) / align * align);
}

typedef struct {
    rcoll_coll_type_t type;
    size_t            count;
    rcoll_datatype_t  dtype;
    int               root, in_place;
} script_op_t;

typedef struct {
    rcoll_context_t ctx;
    rcoll_comm_t    comm;
    int             world_ranks[PMAX];
    rcoll_task_t   *task;
    int             cur;           /* index of the op in progress */
    char           *send, *recv;
} frank_t;

static uint64_t rng;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33) % n;
}

static int32_t ival(int r, size_t i, int op)
{
    return (int32_t)(r * 1000003 + (int)i * 7 + op);
}

static float fval(int r, size_t i, int op)
{
    return (float)((r + 1) * 0.1 + (double)i * 1e-3 + op * 0.37);
}

static void start_op(frank_t *f, const script_op_t *o, int r)
{
    rcoll_task_t *t = f->task;
    size_t es = 4;     /* int32 and float32 */

    memset(t, 0, sizeof(*t));
    t->ctx = &f->ctx;
    t->comm = &f->comm;
    t->wait_peer = -1;
    t->status = RCOLL_INPROGRESS;
    t->args.type = o->type;
    t->args.count = o->count;
    t->args.dtype = o->dtype;
    t->args.op = RCOLL_SUM;
    t->args.root = o->root;
    t->args.in_place = o->in_place;
    t->args.recvbuf = f->recv;
    t->args.sendbuf = o->in_place ? f->recv : f->send + 1;    /* unaligned */
    if (o->type == RCOLL_COLL_REDUCE && r != o->root) {
        t->args.recvbuf = NULL;                               /* not significant */
        t->args.sendbuf = f->send + 1;
        t->args.in_place = 0;
    } else if (o->type == RCOLL_COLL_ALLGATHER && o->in_place) {
        t->args.sendbuf = f->recv + (size_t)r * o->count * 4;
    }
    char *in = o->type == RCOLL_COLL_BCAST ? f->recv : (char *)t->args.sendbuf;
    /* reduce_scatter: p blocks of input */
    size_t nin = o->count * (o->type == RCOLL_COLL_REDUCE_SCATTER ? (size_t)f->comm.size : 1);
    for (size_t i = 0; i < nin; i++) {
        if (o->dtype == RCOLL_INT32) {
            int32_t v = ival(r, i, f->cur);
            memcpy(in + i * es, &v, es);
        } else {
            float v = fval(r, i, f->cur);
            memcpy(in + i * es, &v, es);
        }
    }
    if (o->type == RCOLL_COLL_BCAST && r != o->root) {
        memset(f->recv, 0xee, o->count * es);
    } else if ((o->type == RCOLL_COLL_ALLREDUCE || o->type == RCOLL_COLL_REDUCE ||
                o->type == RCOLL_COLL_REDUCE_SCATTER) && !o->in_place) {
        memset(f->recv, 0xee, o->count * es);
    } else if (o->type == RCOLL_COLL_ALLGATHER) {
        for (int q = 0; q < f->comm.size; q++) {
            if (!o->in_place || q != r) {
                memset(f->recv + (size_t)q * o->count * es, 0xee, o->count * es);
            }
        }
    }
}

static const rcoll_alg_t *alg_of(const script_op_t *o)
{
    switch (o->type) {
    case RCOLL_COLL_ALLREDUCE: return &rcoll_allreduce_shm;
    case RCOLL_COLL_BCAST:     return &rcoll_bcast_shm;
    case RCOLL_COLL_REDUCE:    return &rcoll_reduce_shm;
    case RCOLL_COLL_ALLGATHER: return &rcoll_allgather_shm;
    case RCOLL_COLL_REDUCE_SCATTER: return &rcoll_reduce_scatter_shm;
    default:                   return &rcoll_barrier_shm;
    }
}

/* Integer results are checked against the formula; float allreduce
 * results are compared bitwise across ranks after the run of the op. */
static void check_op(frank_t *f, const script_op_t *o, int r, int p)
{
    if (o->type == RCOLL_COLL_ALLREDUCE && o->dtype == RCOLL_FLOAT32) {
        for (size_t i = 0; i < o->count; i++) {
            double want = 0;
            float v;
            for (int q = 0; q < p; q++) {
                want += fval(q, i, f->cur);
            }
            memcpy(&v, f->recv + 4 * i, 4);
            if (fabs(v - want) > 1e-5 * fabs(want) + 1e-6) {
                fail_msg("rank %d op %d float allreduce count %zu: element %zu is %g, expected %g",
                         r, f->cur, o->count, i, v, want);
            }
        }
    } else if (o->type == RCOLL_COLL_BCAST && o->dtype == RCOLL_INT32) {
        for (size_t i = 0; i < o->count; i++) {
            int32_t v;
            memcpy(&v, f->recv + 4 * i, 4);
            if (v != ival(o->root, i, f->cur)) {
                fail_msg("rank %d op %d bcast root %d count %zu: element %zu is %d, expected %d",
                         r, f->cur, o->root, o->count, i, v, ival(o->root, i, f->cur));
            }
        }
    } else if (o->type == RCOLL_COLL_ALLGATHER) {
        for (int q = 0; q < p; q++) {
            for (size_t i = 0; i < o->count; i++) {
                int32_t v;
                memcpy(&v, f->recv + 4 * ((size_t)q * o->count + i), 4);
                if (v != ival(q, i, f->cur)) {
                    fail_msg("rank %d op %d allgather count %zu in_place %d: block %d element %zu "
                             "is %d, expected %d", r, f->cur, o->count, o->in_place, q, i, v,
                             ival(q, i, f->cur));
                }
            }
        }
    } else if (o->type == RCOLL_COLL_REDUCE_SCATTER) {
        for (size_t i = 0; i < o->count; i++) {
            uint32_t want = 0;
            int32_t v;
            for (int q = 0; q < p; q++) {
                want += (uint32_t)ival(q, (size_t)r * o->count + i, f->cur);
            }
            memcpy(&v, f->recv + 4 * i, 4);
            if ((uint32_t)v != want) {
                fail_msg("rank %d op %d reduce_scatter count %zu in_place %d: element %zu is %d, "
                         "expected %d", r, f->cur, o->count, o->in_place, i, v, (int32_t)want);
            }
        }
    } else if ((o->type == RCOLL_COLL_ALLREDUCE || (o->type == RCOLL_COLL_REDUCE && r == o->root))
               && o->dtype == RCOLL_INT32) {
        for (size_t i = 0; i < o->count; i++) {
            uint32_t want = 0;
            int32_t v;
            for (int q = 0; q < p; q++) {
                want += (uint32_t)ival(q, i, f->cur);
            }
            memcpy(&v, f->recv + 4 * i, 4);
            if ((uint32_t)v != want) {
                fail_msg("rank %d op %d allreduce count %zu in_place %d: element %zu is %d, "
                         "expected %d", r, f->cur, o->count, o->in_place, i, v, (int32_t)want);
            }
        }
    }
}

static void make_script(script_op_t *s, int p, size_t chunk_elems, size_t small_elems)
{
    for (int j = 0; j < NOPS; j++) {
        script_op_t *o = &s[j];
        memset(o, 0, sizeof(*o));
        o->type = (rcoll_coll_type_t[]){ RCOLL_COLL_ALLREDUCE, RCOLL_COLL_BCAST,
                                         RCOLL_COLL_BARRIER, RCOLL_COLL_REDUCE,
                                         RCOLL_COLL_ALLGATHER, RCOLL_COLL_REDUCE_SCATTER }[rnd(6)];
        o->dtype = rnd(4) == 0 ? RCOLL_FLOAT32 : RCOLL_INT32;
        switch (rnd(4)) {
        case 0:  o->count = 1 + rnd(3); break;
        case 1:  o->count = small_elems - 1 + rnd(3); break;         /* around the slot size */
        case 2:  o->count = chunk_elems * (1 + rnd(3)) + rnd(5); break;
        default: o->count = 1 + rnd((unsigned)(3 * chunk_elems)); break;
        }
        if (o->type != RCOLL_COLL_ALLREDUCE) {
            o->dtype = RCOLL_INT32;    /* float results are compared for allreduce */
        }
        o->root = (int)rnd((unsigned)p);
        o->in_place = (int)rnd(2);
    }
}

static int script_has(const script_op_t *script, rcoll_coll_type_t type)
{
    for (int j = 0; j < NOPS; j++) {
        if (script[j].type == type) {
            return 1;
        }
    }
    return 0;
}

/* Run the script on p simulated ranks; bias > 0 lets one rank run ahead.
 * cma 1: single-copy reads above the slot size; 2: also every other op an
 * allgather whose path rank 0 picks at random at run time (shm_adapt.h),
 * and the bcasts' paths picked so too,
 * fixed only 2 collectives ahead (ranks wait for its choice) or 16 (it
 * waits to overwrite entries a lagging rank may still need). */
static void run_world(int p, uint64_t seed, int bias, int cma)
{
    frank_t fr[PMAX];
    script_op_t script[NOPS];
    rcoll__shm_t *sh[PMAX];
    size_t maxcount;
    char *seg;

    rng = seed;
    memset(fr, 0, sizeof(fr));
    for (int r = 0; r < p; r++) {
        frank_t *f = &fr[r];
        f->ctx.config.shm = 1;
        f->ctx.config.timeout = 0;
        f->comm.ctx = &f->ctx;
        f->comm.id = 42;
        f->comm.rank = r;
        f->comm.size = p;
        f->comm.local_size = p;
        f->comm.world_ranks = f->world_ranks;
        for (int q = 0; q < p; q++) {
            f->world_ranks[q] = q;
        }
        sh[r] = rcoll__shm_new(&f->comm);
        assert_non_null(sh[r]);
        /* small pieces: many chunks; 4 buffers for half the seeds, so that
         * 2-rank allreduces move pair pieces (two chunks to a piece, in
         * half as many input and result buffers) and the cut changes
         * between them and every other pipelined collective */
        /* for a quarter of the seeds a pipeline area larger than the
         * buffers and not a whole number of chunks (a bcast's ring,
         * rcoll__shm_bc_ring_bytes), which the bcasts' pieces run over */
        int nbuf = seed & 2 ? 4 : 2;
        size_t pipe_min = (seed & 12) == 4 ? 2 * (size_t)nbuf * ((size_t)p + 1) * 4096 + 3 * RCOLL__SHM_LINE
                                           : 0;
        rcoll__shm_layout(sh[r], 256, 4096, nbuf, pipe_min);
        /* medium bcasts cut the buffers into pieces smaller than a chunk
         * (1 KiB, ring of 8 (p + 1)), so that switching between the two
         * cuts (the fence) happens often */
        sh[r]->bc_piece = 1024;
        /* 2-rank allgathers of 512 B up to a chunk (8 KiB) rotate their
         * pieces over the whole area, changing cut at every new size */
        sh[r]->ag_rotate_min = 512;
        /* so do 2-rank reduces, in 10-line pieces (the last one short) */
        sh[r]->red_rotate_min = 512;
        sh[r]->red_rotate_piece = 640;
        /* flat reduces from 512 bytes fill their slots in 5-line pieces (the
         * last one short), so the root folds pieces while they land */
        sh[r]->red_pieced_min = 512;
        sh[r]->red_piece = 320;
    }
    seg = alloc_aligned(4096, sh[0]->size);
    assert_non_null(seg);
    memset(seg, 0, sh[0]->size);
    for (int r = 0; r < p; r++) {
        sh[r]->base = seg;
        sh[r]->state = RCOLL__SHM_READY;
        rcoll_coll_comm(&fr[r].comm)->shm = sh[r];
        if (cma) {
            /* single-copy reads (one process here: every rank's pid is ours)
             * above the slot size, so both paths interleave */
            for (int q = 0; q < p; q++) {
                sh[r]->pid[q] = (int64_t)getpid();
            }
            sh[r]->cma_bc_min = sh[r]->cma_ag_min = sh[r]->cma_red_min = sh[r]->small_max;
            sh[r]->cma_bc_max = sh[r]->cma_ag_max = sh[r]->cma_red_max = SIZE_MAX;
            sh[r]->cma_share_min = RCOLL__SHM_LINE;   /* the root writes a share of most bcasts */
            sh[r]->cma_scratch = alloc_aligned(64, 2 * RCOLL__SHM_CMA_PIECE);
            assert_non_null(sh[r]->cma_scratch);
        }
        if (cma == 2) {
            sh[r]->adapt.min = 1;
            sh[r]->adapt.ahead = seed & 1 ? 2 : 16;   /* 16: more entries than the ring holds
                                                        * are ahead of a lagging rank */
            sh[r]->adapt.chaos = r == 0 ? seed | 1 : 0;
            sh[r]->bpath.ad.min = 1;                    /* the bcasts' paths too */
            sh[r]->bpath.ad.ahead = sh[r]->adapt.ahead;
            sh[r]->bpath.ad.salt = 32;
            sh[r]->bpath.ad.chaos = r == 0 ? (seed * 0x9E3779B97F4A7C15ull) | 1 : 0;
            sh[r]->rpath.min = 1;                       /* and the reduces' */
            sh[r]->rpath.ahead = sh[r]->adapt.ahead;
            sh[r]->rpath.salt = 64;
            sh[r]->rpath.chaos = r == 0 ? (seed * 0xD6E8FEB86659FD93ull) | 1 : 0;
            sh[r]->rspath.min = 1;                      /* and the reduce_scatters' */
            sh[r]->rspath.ahead = sh[r]->adapt.ahead;
            sh[r]->rspath.salt = 96;
            sh[r]->rspath.chaos = r == 0 ? (seed * 0xBF58476D1CE4E5B9ull) | 1 : 0;
            sh[r]->bstore.min = 1;                      /* bcast roots stream at random */
            sh[r]->bstore.chaos = (seed + (uint64_t)r) * 2654435761u | 1;
            sh[r]->agstore.min = 1;                     /* so do the allgathers' slot writers */
            sh[r]->agstore.chaos = (seed + (uint64_t)r) * 0xD6E8FEB86659FD93ull | 1;
            sh[r]->rstore.min = 1;                      /* and the reduces' writers, every path */
            sh[r]->rstore.chaos = (seed + (uint64_t)r) * 0x94D049BB133111EBull | 1;
            sh[r]->rsstore.min = 1;                     /* and the reduce_scatters' */
            sh[r]->rsstore.chaos = (seed + (uint64_t)r) * 0xBF58476D1CE4E5B9ull | 1;
        }
    }
    make_script(script, p, sh[0]->chunk / 4, sh[0]->small_max / 4);
    for (int j = 0; cma == 2 && j < NOPS; j += 2) {
        script[j].type = RCOLL_COLL_ALLGATHER;
        script[j].dtype = RCOLL_INT32;
    }
    maxcount = 0;
    for (int j = 0; j < NOPS; j++) {
        maxcount = script[j].count > maxcount ? script[j].count : maxcount;
    }
    for (int r = 0; r < p; r++) {
        fr[r].task = alloc_aligned(64, sizeof(rcoll_task_t));
        fr[r].send = malloc(4 * maxcount * (size_t)p + 8);    /* reduce_scatter: p blocks */
        fr[r].recv = malloc(4 * maxcount * (size_t)p + 8);    /* allgather: p blocks */
        assert_true(fr[r].task && fr[r].send && fr[r].recv);
        start_op(&fr[r], &script[0], r);
    }
    /* results of float allreduces, [op][rank], compared across ranks at the end */
    char *fres[NOPS][PMAX];
    memset(fres, 0, sizeof(fres));
    int idle = 0, finished = 0;
    while (finished < p) {
        int r = bias > 0 && rnd(bias + 1) != 0 ? 0 : (int)rnd((unsigned)p);
        frank_t *f = &fr[r];
        if (f->cur >= NOPS) {
            continue;
        }
        const script_op_t *o = &script[f->cur];
        rcoll_status_t st = alg_of(o)->progress(f->task);
        if (st == RCOLL_INPROGRESS) {
            if (++idle > 2000000) {
                fail_msg("deadlock: p %d seed %llu: rank %d in op %d waits for rank %d step %u",
                         p, (unsigned long long)seed, r, f->cur, f->task->wait_peer,
                         f->task->wait_step);
            }
            continue;
        }
        idle = 0;
        assert_int_equal(st, RCOLL_OK);
        if (o->type == RCOLL_COLL_BARRIER) {
            for (int q = 0; q < p; q++) {
                if (fr[q].cur < f->cur) {
                    fail_msg("rank %d left barrier (op %d) before rank %d entered it", r, f->cur, q);
                }
            }
        }
        check_op(f, o, r, p);
        if (cma == 2 && (o->type == RCOLL_COLL_BCAST || o->type == RCOLL_COLL_ALLGATHER) &&
            4 * o->count > rcoll__shm_copy_slot_max(sh[r])) {
            /* a pipelined-size call whose path is chosen at run time, on
             * either path, leaves this rank with the pipeline pages a try
             * of two copies touches (its own area; the allgather's: every
             * rank's) faulted in, so that no later call, timed, pays them
             * (on a VM: milliseconds in one call) */
            for (int q = 0; q < p; q++) {
                if ((q == r || o->type == RCOLL_COLL_ALLGATHER) && !sh[r]->pipe_faulted[q]) {
                    fail_msg("p %d seed %llu: rank %d op %d (%s of %zu bytes): pipeline area of "
                             "rank %d not faulted in", p, (unsigned long long)seed, r, f->cur,
                             o->type == RCOLL_COLL_BCAST ? "bcast" : "allgather", 4 * o->count, q);
                }
            }
        }
        if (o->type == RCOLL_COLL_ALLREDUCE && o->dtype == RCOLL_FLOAT32) {
            fres[f->cur][r] = malloc(4 * o->count);
            assert_non_null(fres[f->cur][r]);
            memcpy(fres[f->cur][r], f->recv, 4 * o->count);
        }
        if (++f->cur < NOPS) {
            start_op(f, &script[f->cur], r);
        } else {
            finished++;
        }
    }
    for (int j = 0; j < NOPS; j++) {
        for (int r = 0; r < p && fres[j][0] != NULL; r++) {
            assert_memory_equal(fres[j][0], fres[j][r], 4 * script[j].count);   /* bitwise */
        }
        for (int r = 0; r < p; r++) {
            free(fres[j][r]);
        }
    }
    if (cma == 2) {
        assert_true(sh[0]->adapt.changes > 2);    /* the paths did change under the ranks */
        assert_true(sh[0]->bpath.ad.changes > 0 || !script_has(script, RCOLL_COLL_BCAST));
        assert_true(sh[0]->rpath.changes > 0 || !script_has(script, RCOLL_COLL_REDUCE));
        /* (it starts on the slots, so a short script may switch nothing) */
        int rs_slot = 0;
        for (int j = 0; j < NOPS; j++) {
            rs_slot |= script[j].type == RCOLL_COLL_REDUCE_SCATTER &&
                       (size_t)p * script[j].count * rcoll_datatype_size(script[j].dtype) <=
                           rcoll__shm_copy_slot_max(sh[0]);
        }
        assert_true(sh[0]->rspath.started || !rs_slot);
    }
    /* a rank that ran a pipelined allgather on two copies mapped every
     * rank's pipeline area then, not over the calls after it */
    for (int j = 0; j < NOPS && cma == 0; j++) {
        if (script[j].type == RCOLL_COLL_ALLGATHER && 4 * script[j].count > sh[0]->small_max) {
            for (int r = 0; r < p; r++) {
                for (int q = 0; q < p; q++) {
                    assert_int_equal(sh[r]->pipe_faulted[q], 1);
                }
            }
            break;
        }
    }
    /* every rank's flags agree at the end */
    for (int r = 0; r < p; r++) {
        assert_int_equal(sh[r]->completed, (uint64_t)NOPS);
        assert_int_equal(sh[r]->chunk_next, sh[0]->chunk_next);
    }
    for (int r = 0; r < p; r++) {
        free(fr[r].task);
        free(fr[r].send);
        free(fr[r].recv);
        free(sh[r]->cma_scratch);
        free(sh[r]->fin);
        free(sh[r]);
    }
    free(seg);
}

/* run_world for 2..PMAX ranks and nseeds seeds each, every one once with
 * fair scheduling and once with rank 0 running ahead. */
static void run_worlds(int cma, uint64_t nseeds)
{
    for (int p = 2; p <= PMAX; p++) {
        for (uint64_t seed = 1; seed <= nseeds; seed++) {
            run_world(p, seed * 7919 + (uint64_t)p, 0, cma);
            run_world(p, seed * 104729 + (uint64_t)p, 20, cma);
        }
    }
}

static void test_interleavings(void **state)
{
    (void)state;
    run_worlds(0, 6);
}

/* The same with single-copy (CMA) bcast, allgather and reduce above the
 * slot size (shm_cma.c), mixed with the two-copy path below it. */
static void test_interleavings_cma(void **state)
{
    (void)state;
    run_worlds(1, 6);
}

/* The allgather's run-time path choice (shm_adapt.h) changing at random
 * under every interleaving: every rank must take the same path for each
 * call (else the ranks wait for each other forever or read a slot word of
 * the other path: a deadlock or a protocol error fails the run). */
static void test_interleavings_adapt(void **state)
{
    (void)state;
    run_worlds(2, 10);
}

/* Rank 0's estimates: the first call of a class on a path after calls on
 * the other is cold and not timed; once a class has 3 timed calls and the
 * other path none, rank 0 switches to the other path (a first try that
 * lasts); the other path takes over once its estimate is 15% faster (a
 * try's estimate: the mean of its timed calls), a preempted call on the
 * current path moves the estimate by 6% at most (so it does not flip the
 * choice to a path that is not faster), tries that are slower change
 * nothing, and once it is 1.6x slower it is tried less often (until a try
 * finds it within 1.4x). */
static void test_adapt_estimates(void **state)
{
    (void)state;
    rcoll__shm_t sh;
    memset(&sh, 0, sizeof(sh));
    size_t n = 64 * 1024;              /* class 3 */
    uint32_t bit = 1u << 3, rare = 1u << (RCOLL__SHM_ADAPT_NB + 3);
    sh.adapt.want = 0;                 /* two copies */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 90000);       /* the class's first call: cold */
    assert_int_equal(sh.adapt.nsamp[3][0], 0);
    for (int i = 0; i < 3; i++) {
        rcoll__shm_adapt_sample(&sh, n, 0, 0, 10000);
    }
    assert_true(sh.adapt.est[3][0] > 9999 && sh.adapt.est[3][0] < 10001);
    assert_int_equal(sh.adapt.want, bit);                /* single copy never timed: its turn */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 10000);       /* calls before the switch applies */
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 50000);       /* the first on single copy: cold */
    assert_int_equal(sh.adapt.nsamp[3][1], 0);
    assert_int_equal(sh.adapt.want, bit);
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 12500);       /* 25% slower: back to two copies */
    assert_int_equal(sh.adapt.want, 0);
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 12500);       /* (the switch applies later) */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 30000);       /* back on two copies: cold */
    assert_true(sh.adapt.est[3][0] > 9999 && sh.adapt.est[3][0] < 10001);
    for (int i = 0; i < 4; i++) {
        rcoll__shm_adapt_sample(&sh, n, 0, 0, 10000);
    }
    /* a try of 3 calls: cold, then 9000 and 9400, mean 9200: only 8% faster */
    rcoll__shm_adapt_sample(&sh, n, 1, 1, 40000);
    rcoll__shm_adapt_sample(&sh, n, 1, 1, 9000);
    rcoll__shm_adapt_sample(&sh, n, 1, 1, 9400);
    assert_true(sh.adapt.est[3][1] > 9199 && sh.adapt.est[3][1] < 9201);
    assert_int_equal(sh.adapt.want & bit, 0);
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 30000);       /* back: cold, not timed */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 1000000);     /* preempted: 10000 -> 10625 */
    assert_true(sh.adapt.est[3][0] > 10600 && sh.adapt.est[3][0] < 10700);
    assert_int_equal(sh.adapt.want & bit, 0);            /* 9200 > 0.85 x 10625 */
    rcoll__shm_adapt_sample(&sh, n, 1, 1, 30000);       /* a try: cold, */
    rcoll__shm_adapt_sample(&sh, n, 1, 1, 8000);        /* then 25% faster: switch */
    assert_int_equal(sh.adapt.want, bit);
    rcoll__shm_adapt_sample(&sh, n, 0, 1, 30000);       /* the old path tried: cold, */
    rcoll__shm_adapt_sample(&sh, n, 0, 1, 20000);       /* then 2.5x slower: */
    assert_int_equal(sh.adapt.want, bit | rare);         /* tried 1 group in 512 from now on */
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 8000);        /* back on single copy: cold */
    rcoll__shm_adapt_sample(&sh, n, 0, 1, 30000);       /* tried again: cold, */
    rcoll__shm_adapt_sample(&sh, n, 0, 1, 9000);        /* then not 15% faster, */
    assert_int_equal(sh.adapt.want, bit);                /* but no longer 1.4x slower */
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 8000);        /* back: cold */
    for (int i = 0; i < 8; i++) {                        /* single copy slows down (phase) */
        rcoll__shm_adapt_sample(&sh, n, 1, 0, 40000);
    }
    assert_int_equal(sh.adapt.want & bit, 0);            /* back to two copies */
    assert_int_equal(sh.adapt.want & ~bit, 0);           /* no other class moved */
}

/* The first timed calls of a class on a path count by their least, not
 * their first: the first call of a size may fault its buffers' pages in
 * (a 16 MiB bcast's first timed call on this VM), and an estimate that
 * starts there decays by 1/4 a call.  Once a path switched within a few
 * calls (RCOLL__SHM_AHEAD_LARGE), such an estimate kept the 16 MiB bcast
 * on two copies (1.19 ms) against single copy's true 0.80 (estimated 1.30
 * from its first calls).  Here the class starts on two copies (10 us, the
 * first timed call 500 us); single copy, tried first, is 20% slower, and
 * the class goes back to two copies. */
static void test_adapt_first_calls(void **state)
{
    (void)state;
    rcoll__shm_t sh;
    memset(&sh, 0, sizeof(sh));
    size_t n = 64 * 1024;              /* class 3 */
    uint32_t bit = 1u << 3;
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 900000);      /* cold, not timed */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 500000);      /* faults pages in */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 10000);
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 10400);
    assert_true(sh.adapt.est[3][0] > 9999 && sh.adapt.est[3][0] < 10001);
    assert_int_equal(sh.adapt.want, bit);                /* its first try: single copy */
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 50000);       /* cold */
    rcoll__shm_adapt_sample(&sh, n, 1, 0, 12000);
    assert_int_equal(sh.adapt.want, 0);                  /* back: 10000 < 0.85 x 12000 */
    rcoll__shm_adapt_sample(&sh, n, 0, 0, 30000);       /* cold */
    for (int i = 0; i < 3; i++) {                        /* from the 3rd on: moving average */
        rcoll__shm_adapt_sample(&sh, n, 0, 0, 14000);
    }
    assert_true(sh.adapt.est[3][0] > 10000 && sh.adapt.est[3][0] < 14000);
}

/* Sizes of one class differ up to 2x (the OSU list: 64 KiB and 100000 B
 * share class 3): rank 0 scales each time to the class's least size, so a
 * loop moving on to the larger size does not read as the path in use
 * getting slower and switch to a path that is not faster. */
static void test_adapt_mixed_sizes(void **state)
{
    (void)state;
    rcoll__shm_t sh;
    memset(&sh, 0, sizeof(sh));
    uint32_t bit = 1u << 3;
    sh.adapt.want = 0;                                    /* two copies */
    for (int i = 0; i < 5; i++) {                         /* cold, 3 timed: first try */
        rcoll__shm_adapt_sample(&sh, 65536, 0, 0, 10000);
    }
    assert_int_equal(sh.adapt.want, bit);
    for (int i = 0; i < 3; i++) {                         /* single copy: cold, 13000 x2 */
        rcoll__shm_adapt_sample(&sh, 65536, 1, 0, i == 0 ? 50000 : 13000);
    }
    assert_int_equal(sh.adapt.want, 0);                   /* back to two copies */
    rcoll__shm_adapt_sample(&sh, 65536, 0, 0, 30000);    /* cold */
    for (int i = 0; i < 16; i++) {                        /* 131071 B: twice the bytes, time */
        rcoll__shm_adapt_sample(&sh, 131071, 0, 0, 20000);
    }
    assert_true(sh.adapt.est[3][0] > 9900 && sh.adapt.est[3][0] < 10100);
    assert_int_equal(sh.adapt.want, 0);                   /* 13000 is not faster */
    rcoll__shm_adapt_sample(&sh, 131071, 1, 1, 60000);   /* a try: cold, */
    rcoll__shm_adapt_sample(&sh, 131071, 1, 1, 16000);   /* then 20% faster (8000 at 64 KiB) */
    assert_int_equal(sh.adapt.want, bit);
}

/* A store choice (shm_adapt.h, "store" and "agstore"): rank 0 decides
 * and publishes, another rank follows its word (plain until rank 0 has
 * published), both take the 1-in-64 try on the same calls, and rank 0
 * switches class n to streaming once a try is 15% faster; n_other (another
 * class) stays plain. */
static void check_store_choice(rcoll__shm_store_choose_fn choose, rcoll__shm_store_sample_fn sample,
                               size_t store_off, size_t n, size_t n_other)
{
    static _Alignas(64) char page[4096];
    rcoll__shm_t sh0, sh1;
    memset(page, 0, sizeof(page));
    memset(&sh0, 0, sizeof(sh0));
    memset(&sh1, 0, sizeof(sh1));
    sh0.base = sh1.base = page;
    sh0.me = 0;
    sh1.me = 1;
    sh0.p = sh1.p = 2;
    const rcoll__shm_store_t *st0 = (const void *)((const char *)&sh0 + store_off);
    const rcoll__shm_store_t *st1 = (const void *)((const char *)&sh1 + store_off);
    int e0, e1;

    assert_int_equal(choose(&sh1, 1, n, &e1), 0);
    assert_int_equal(e1, 0);           /* rank 0 not choosing yet: plain, no try */
    uint64_t k = 1, tried = 0;
    for (; k < 4096; k++) {
        int s0 = choose(&sh0, k, n, &e0);
        int s1 = choose(&sh1, k, n, &e1);
        assert_int_equal(s0, s1);
        assert_int_equal(e0, e1);
        assert_int_equal(s0, e0);      /* plain, streaming only on a try */
        tried += (uint64_t)e0;
    }
    assert_true(tried > 4096 / 64 / 2 && tried < 4096 / 64 * 2);
    for (int i = 0; i < 8; i++) {
        sample(&sh0, n, 0, 0, 30000);    /* plain, slow phase */
    }
    sample(&sh0, n, 1, 1, 18000);        /* a try: 40% faster */
    assert_int_equal(st0->changes, 1);
    for (k = 4096; k < 4096 + 64; k++) {
        int s0 = choose(&sh0, k, n, &e0);
        int s1 = choose(&sh1, k, n, &e1);
        assert_int_equal(s0, s1);
        assert_int_equal(s0, !e0);     /* streaming now, plain on a try */
        s1 = choose(&sh1, k, n_other, &e1);
        assert_int_equal(s1, e1);      /* other classes plain */
    }
    sample(&sh1, n, 0, 1, 1);            /* only rank 0's timings count */
    assert_int_equal(st1->changes, 0);
}

/* Two ranks' private state over one header page (zeroed). */
static void two_ranks(rcoll__shm_t *sh0, rcoll__shm_t *sh1, char *page)
{
    memset(page, 0, 4096);
    memset(sh0, 0, sizeof(*sh0));
    memset(sh1, 0, sizeof(*sh1));
    sh0->base = sh1->base = page;
    sh1->me = 1;
    sh0->p = sh1->p = 2;
}

/* The words apart: rank 0 switches the 16 KiB class of `switched` to
 * streaming (its store at store_off); rank 1 then streams there, except on
 * tries, and stays plain on the `nother` other choices. */
static void check_words_apart(rcoll__shm_store_choose_fn switched, rcoll__shm_store_sample_fn sample,
                              size_t store_off, const rcoll__shm_store_choose_fn *other, int nother)
{
    static _Alignas(64) char page[4096];
    rcoll__shm_t sh0, sh1;
    int e;
    two_ranks(&sh0, &sh1, page);
    (void)switched(&sh0, 1, 16384, &e);
    for (int i = 0; i < nother; i++) {
        (void)other[i](&sh0, 1, 16384, &e);
    }
    for (int i = 0; i < 8; i++) {
        sample(&sh0, 16384, 0, 0, 30000);
    }
    sample(&sh0, 16384, 1, 1, 18000);
    assert_int_equal(((const rcoll__shm_store_t *)(const void *)((const char *)&sh0 + store_off))->changes, 1);
    for (uint64_t k = 2; k < 66; k++) {
        int s = switched(&sh1, k, 16384, &e);
        assert_int_equal(s, !e);
        for (int i = 0; i < nother; i++) {
            s = other[i](&sh1, k, 16384, &e);
            assert_int_equal(s, e);
        }
    }
}

/* The flat allreduce's copy-in. */
static void test_store_choice(void **state)
{
    (void)state;
    check_store_choice(rcoll__shm_store_choose, rcoll__shm_store_sample,
                       offsetof(rcoll__shm_t, store), 100000 /* class 3 */, 16384);
}

/* The two-copy allgather's stores into the segment: classes from 2 KiB, its own word (a
 * switch of the allreduce's class leaves the allgather's plain). */
static void test_agstore_choice(void **state)
{
    (void)state;
    check_store_choice(rcoll__shm_agstore_choose, rcoll__shm_agstore_sample,
                       offsetof(rcoll__shm_t, agstore), 4096 /* [4, 8) KiB */, 2048);
    /* the words apart: rank 0's allreduce switch is not the allgather's */
    static const rcoll__shm_store_choose_fn ag[] = { rcoll__shm_agstore_choose };
    check_words_apart(rcoll__shm_store_choose, rcoll__shm_store_sample,
                      offsetof(rcoll__shm_t, store), ag, 1);
    static _Alignas(64) char page[4096];
    rcoll__shm_t sh0, sh1;
    int e;
    two_ranks(&sh0, &sh1, page);
    (void)rcoll__shm_store_choose(&sh0, 1, 16384, &e);     /* rank 0 publishes both words */
    (void)rcoll__shm_agstore_choose(&sh0, 1, 16384, &e);
    /* streaming found 2x slower on plain stores (a fast phase): the
     * allgather tries it 1 call in 512 from then on (rank 1 too, from the
     * word), the allreduce still 1 in 64; back to 1 in 64 once a try is
     * within 1.4x */
    for (int i = 0; i < 8; i++) {
        rcoll__shm_agstore_sample(&sh0, 8192, 0, 0, 500);
        rcoll__shm_store_sample(&sh0, 32768, 0, 0, 2000);
    }
    rcoll__shm_agstore_sample(&sh0, 8192, 1, 1, 1000);
    rcoll__shm_store_sample(&sh0, 32768, 1, 1, 4000);
    uint64_t ag_tries = 0, ar_tries = 0, calls = 64 * 512;
    for (uint64_t k = 100; k < 100 + calls; k++) {
        int e0, s0 = rcoll__shm_agstore_choose(&sh0, k, 8192, &e0);
        int s1 = rcoll__shm_agstore_choose(&sh1, k, 8192, &e);
        assert_int_equal(s0, e0);      /* plain, streaming on a try */
        assert_int_equal(s1, e);
        assert_int_equal(e, e0);
        ag_tries += (uint64_t)e;
        (void)rcoll__shm_store_choose(&sh1, k, 32768, &e);
        ar_tries += (uint64_t)e;
    }
    assert_true(ag_tries > calls / 512 / 2 && ag_tries < calls / 512 * 2);
    assert_true(ar_tries > calls / 64 / 2 && ar_tries < calls / 64 * 2);
    rcoll__shm_agstore_sample(&sh0, 8192, 1, 1, 600);   /* a try within 1.4x */
    ag_tries = 0;
    for (uint64_t k = 100; k < 100 + calls; k++) {
        (void)rcoll__shm_agstore_choose(&sh1, k, 8192, &e);
        ag_tries += (uint64_t)e;
    }
    assert_true(ag_tries > calls / 64 / 2 && ag_tries < calls / 64 * 2);
    /* a class's first call (page faults, 20x its steady time) does not
     * count: a streaming try 2x slower than the steady plain calls after it
     * switches nothing */
    uint64_t before = sh0.agstore.changes;
    rcoll__shm_agstore_sample(&sh0, 65536, 0, 0, 600000);
    for (int i = 0; i < 4; i++) {
        rcoll__shm_agstore_sample(&sh0, 65536, 0, 0, 30000);
    }
    rcoll__shm_agstore_sample(&sh0, 65536, 1, 1, 60000);
    assert_int_equal(sh0.agstore.changes, before);
    assert_true(sh0.agstore.want & RCOLL__SHM_RARE(5));    /* [64, 128) KiB: tried rarely */
}

/* The reduce's stores into the segment: classes from 8 KiB, its own word
 * (rank 0's reduce switch is neither the allreduce's nor the allgather's),
 * and streaming tried 1 call in 512 once found 1.6x slower, as the
 * allgather's. */
static void test_rstore_choice(void **state)
{
    (void)state;
    check_store_choice(rcoll__shm_rstore_choose, rcoll__shm_rstore_sample,
                       offsetof(rcoll__shm_t, rstore), 65536 /* [64, 128) KiB */, 8192);
    static const rcoll__shm_store_choose_fn others[] = { rcoll__shm_store_choose, rcoll__shm_agstore_choose };
    check_words_apart(rcoll__shm_rstore_choose, rcoll__shm_rstore_sample,
                      offsetof(rcoll__shm_t, rstore), others, 2);
    static _Alignas(64) char page[4096];
    rcoll__shm_t sh0, sh1;
    int e;
    two_ranks(&sh0, &sh1, page);
    (void)rcoll__shm_rstore_choose(&sh0, 1, 262144, &e);   /* rank 0 publishes its word */
    for (int i = 0; i < 8; i++) {
        rcoll__shm_rstore_sample(&sh0, 262144, 0, 0, 20000);
    }
    rcoll__shm_rstore_sample(&sh0, 262144, 1, 1, 40000);   /* streaming 2x slower */
    uint64_t tries = 0, calls = 64 * 512;
    for (uint64_t k = 100; k < 100 + calls; k++) {
        int s = rcoll__shm_rstore_choose(&sh1, k, 262144, &e);
        assert_int_equal(s, e);
        tries += (uint64_t)e;
    }
    assert_true(tries > calls / 512 / 2 && tries < calls / 512 * 2);
}

/* From RCOLL__SHM_STORE_TIME_ALL (every call timed there), a store
 * chooser reacts within a few calls, as a VM's slow phase needs (a 4 MiB
 * reduce's plain stores 10x slower, ~20 calls in an OSU size):
 * - the other kind, never measured, is tried after RCOLL__SHM_ADAPT_FIRST
 *   timed calls (a job may start in the slow phase);
 * - a jump of the kind in use: a slow call or two are preempted ones and
 *   change nothing; RCOLL__SHM_STORE_JUMP_RUN in a row switch to the other
 *   kind at once and measure it afresh; a try of the old kind that finds
 *   it fast again switches back.  Slow tries are no jump.
 * Below, neither: the classes there see hundreds of calls and their tries. */
static void test_store_jump(void **state)
{
    (void)state;
    static _Alignas(64) char page[4096];
    rcoll__shm_t sh0, sh1;
    const size_t n = 4194304, small = RCOLL__SHM_STORE_TIME_ALL / 2;
    int e;
    two_ranks(&sh0, &sh1, page);
    const rcoll__shm_store_t *st = &sh0.rstore;

    assert_int_equal(RCOLL__SHM_STORE_JUMP_RUN, 3);
    assert_int_equal(RCOLL__SHM_ADAPT_FIRST, 3);
    (void)rcoll__shm_rstore_choose(&sh0, 1, n, &e);       /* rank 0 publishes its word */
    for (int i = 0; i < 16; i++) {                        /* 256 KiB: no first try, no jump */
        rcoll__shm_rstore_sample(&sh0, small, 0, 0, i < 8 ? 10000 : 100000);
    }
    assert_int_equal(st->changes, 0);
    for (int i = 0; i < 3; i++) {
        rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);  /* plain, 200 us (the first dropped) */
    }
    assert_int_equal(st->changes, 0);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);      /* the third timed: a first try */
    assert_int_equal(st->changes, 1);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, 2, n, &e), !e);   /* streaming */
    rcoll__shm_rstore_sample(&sh0, n, 1, 0, 300000);      /* slower: back to plain */
    assert_int_equal(st->changes, 2);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, 2, n, &e), e);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);     /* two slow calls */
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    rcoll__shm_rstore_sample(&sh0, n, 1, 1, 3000000);     /* a slow try of streaming */
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 300000);      /* under 2x: no jump */
    assert_int_equal(st->changes, 2);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    assert_int_equal(st->changes, 2);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2100000);     /* the third in a row */
    assert_int_equal(st->changes, 3);
    assert_int_equal(st->jumps, 1);
    uint64_t k = 1000;
    for (; k < 1000 + 256; k++) {
        int s = rcoll__shm_rstore_choose(&sh1, k, n, &e);
        assert_int_equal(s, !e);                           /* streaming, plain on a try */
    }
    /* both measured afresh: streaming's 3 ms try is forgotten, and after
     * 3 calls of it plain is tried again: still slow, so back to streaming */
    rcoll__shm_rstore_sample(&sh0, n, 1, 0, 400000);
    rcoll__shm_rstore_sample(&sh0, n, 1, 0, 410000);
    assert_int_equal(st->changes, 3);
    rcoll__shm_rstore_sample(&sh0, n, 1, 0, 420000);
    assert_int_equal(st->changes, 4);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, k, n, &e), e);   /* plain */
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 2000000);
    assert_int_equal(st->changes, 5);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, k, n, &e), !e);  /* streaming */
    /* the phase is over: a try of plain finds 200 us and switches back */
    rcoll__shm_rstore_sample(&sh0, n, 0, 1, 200000);
    assert_int_equal(st->changes, 6);
    assert_int_equal(st->jumps, 1);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, k, n, &e), e);   /* plain */

    /* a spell of 3 slow calls, then fast again: after the jump and 3 calls
     * of streaming, plain's first try finds it fast and stays */
    for (int i = 0; i < 3; i++) {
        rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);
    }
    for (int i = 0; i < 3; i++) {
        rcoll__shm_rstore_sample(&sh0, n, 0, 0, 900000);
    }
    assert_int_equal(st->jumps, 2);
    assert_int_equal(st->changes, 7);
    for (int i = 0; i < 3; i++) {
        rcoll__shm_rstore_sample(&sh0, n, 1, 0, 300000);
    }
    assert_int_equal(st->changes, 8);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);
    rcoll__shm_rstore_sample(&sh0, n, 0, 0, 200000);
    assert_int_equal(st->changes, 8);
    assert_int_equal(rcoll__shm_rstore_choose(&sh1, k, n, &e), e);   /* plain */

    /* every call timed from RCOLL__SHM_STORE_TIME_ALL, one in 8 below */
    uint64_t timed_big = 0, timed_small = 0, calls = 4096;
    for (k = 1; k <= calls; k++) {
        rcoll__shm_store_call_t c;
        rcoll__shm_store_call_begin(&sh0, &c, k, RCOLL__SHM_STORE_TIME_ALL,
                                    rcoll__shm_rstore_choose);
        timed_big += c.t0 != 0;
        rcoll__shm_store_call_begin(&sh0, &c, k, RCOLL__SHM_STORE_TIME_ALL - 1,
                                    rcoll__shm_rstore_choose);
        timed_small += c.t0 != 0;
        rcoll__shm_store_call_begin(&sh1, &c, k, RCOLL__SHM_STORE_TIME_ALL,
                                    rcoll__shm_rstore_choose);
        assert_int_equal(c.t0, 0);                          /* only rank 0 times */
    }
    assert_int_equal(timed_big, calls);
    assert_true(timed_small > calls / 8 / 2 && timed_small < calls / 8 * 2);
}

/* The reduce_scatter's: classes of the whole input from 8 KiB, its own word. */
static void test_rsstore_choice(void **state)
{
    (void)state;
    check_store_choice(rcoll__shm_rsstore_choose, rcoll__shm_rsstore_sample,
                       offsetof(rcoll__shm_t, rsstore), 1048576 /* [1, 2) MiB */, 8192);
    static const rcoll__shm_store_choose_fn others[] = { rcoll__shm_rstore_choose };
    check_words_apart(rcoll__shm_rsstore_choose, rcoll__shm_rsstore_sample,
                      offsetof(rcoll__shm_t, rsstore), others, 1);
}

/* The bcast's path choice (shm_adapt.h, "bpath"), 3 ranks: every rank
 * takes the same path and try for each call; rank 0 feeds its estimator the
 * ranks' mean time of its previous call (a two-copy root's own time is
 * short, its leaves' long: the mean, not rank 0's time, must decide), starts
 * from the fixed single-copy sizes and leaves them for two copies where
 * those are faster; a rank that never publishes its time costs rank 0 its
 * samples, not a wait. */
static void bpath_calls(rcoll__shm_t *sh[], int p, rcoll_task_t *task, uint64_t *k, int calls,
                        size_t n, const uint64_t two[], const uint64_t one[], int silent)
{
    for (int c = 0; c < calls; c++, (*k)++) {
        int cma0 = -1, exp0 = -1;
        for (int r = 0; r < p; r++) {
            rcoll__shm_op_t op = { .sh = sh[r], .k = *k };
            int cma = 0, explore = 0;
            assert_int_equal(rcoll__shm_bpath_choose(task, &op, n, &cma, &explore), 1);
            if (r == 0) {
                cma0 = cma;
                exp0 = explore;
            }
            assert_int_equal(cma, cma0);
            assert_int_equal(explore, exp0);
        }
        for (int r = 0; r < p; r++) {
            if (r != silent && rcoll__shm_bpath_timed(sh[r], *k, n, exp0)) {
                rcoll__shm_bpath_called(sh[r], *k, n, cma0, exp0, cma0 ? one[r] : two[r]);
            }
        }
    }
}

static void test_bcast_path_choice(void **state)
{
    (void)state;
    enum { P = 3 };
    frank_t fr[P];
    rcoll__shm_t *sh[P];
    memset(fr, 0, sizeof(fr));
    for (int r = 0; r < P; r++) {
        fr[r].ctx.config.shm = 1;
        fr[r].comm.ctx = &fr[r].ctx;
        fr[r].comm.id = 44;
        fr[r].comm.rank = r;
        fr[r].comm.size = fr[r].comm.local_size = P;
        fr[r].comm.world_ranks = fr[r].world_ranks;
        for (int q = 0; q < P; q++) {
            fr[r].world_ranks[q] = q;
        }
        sh[r] = rcoll__shm_new(&fr[r].comm);
        assert_non_null(sh[r]);
        rcoll__shm_layout(sh[r], 256, 4096, 2, 0);
    }
    char *seg = alloc_aligned(4096, sh[0]->size);
    rcoll_task_t *task = alloc_aligned(64, sizeof(rcoll_task_t));
    assert_true(seg != NULL && task != NULL);
    memset(seg, 0, sh[0]->size);
    memset(task, 0, sizeof(*task));
    for (int r = 0; r < P; r++) {
        sh[r]->base = seg;
        sh[r]->cma_bc_min = 64 * 1024;           /* the fixed sizes: single copy from 64 KiB */
        sh[r]->cma_bc_max = SIZE_MAX;
    }
    rcoll__shm_adapt_offer(sh[0], 0, 1, 0, 0);  /* the bcast adapts, the allgather not */
    for (int r = 0; r < P; r++) {
        rcoll__shm_adapt_ready(sh[r]);
        assert_int_equal(sh[r]->bpath.ad.min, RCOLL__SHM_BPATH_MIN);
        assert_int_equal(sh[r]->adapt.min, SIZE_MAX);
        assert_true(rcoll__shm_bpath_covers(sh[r], RCOLL__SHM_BPATH_MIN) &&
                    !rcoll__shm_bpath_covers(sh[r], RCOLL__SHM_BPATH_MIN - 1));
    }
    size_t n = 65536;                            /* class 3 */
    uint32_t bit = 1u << 3;
    uint64_t k = 1;
    /* two copies: the root (rank 0) 1 us, its leaves 5 us: mean 3.67 us;
     * single copy 6 us everywhere, rank 0's own time shorter than that */
    const uint64_t two[P] = { 1000, 5000, 5000 }, one[P] = { 6000, 6000, 6000 };

    bpath_calls(sh, P, task, &k, 1, n, two, one, -1);
    assert_int_equal(sh[0]->bpath.ad.bits & bit, bit);   /* the fixed sizes first */
    bpath_calls(sh, P, task, &k, 200, n, two, one, 2);   /* rank 2 silent: no samples */
    assert_int_equal(sh[0]->bpath.ad.nsamp[3][0] + sh[0]->bpath.ad.nsamp[3][1], 0);
    bpath_calls(sh, P, task, &k, 3000, n, two, one, -1);
    assert_int_equal(sh[0]->bpath.ad.want & bit, 0);     /* two copies won */
    assert_true(sh[0]->bpath.ad.nsamp[3][0] > 0 && sh[0]->bpath.ad.nsamp[3][1] > 0);
    assert_true(sh[0]->bpath.ad.est[3][0] > 3665 && sh[0]->bpath.ad.est[3][0] < 3668);
    assert_true(sh[0]->bpath.ad.est[3][1] > 5999 && sh[0]->bpath.ad.est[3][1] < 6001);
    /* no other class moved: single copy from 128 KiB (classes 4-11), as fixed */
    assert_int_equal(sh[0]->bpath.ad.want & ~(bit | RCOLL__SHM_RARE(3)), 0xff0);
    /* the phase changes: single copy 2x faster than two copies */
    const uint64_t two_slow[P] = { 9000, 15000, 15000 };
    bpath_calls(sh, P, task, &k, 20000, n, two_slow, one, -1);
    assert_int_equal(sh[0]->bpath.ad.want & bit, bit);
    /* From 512 KiB every call is timed: a 16 MiB class (11) that starts on
     * single copy tries two copies after its first few calls, not after
     * ~30 (3 calls timed 1 in 8), which at 1.6 ms a call took most of an
     * OSU size's time.  The calls start where neither the hash nor a try
     * would time any of the next 8. */
    size_t big = (size_t)16 << 20;
    const uint32_t bigbit = 1u << 11;
    const uint64_t two_big[P] = { 400000, 1100000, 1100000 }, one_big[P] = { 1600000, 1600000,
                                                                             1600000 };
    assert_int_equal(sh[0]->bpath.ad.want & bigbit, bigbit);   /* single copy, as fixed */
    for (int clear = 0; !clear; k++) {
        clear = 1;
        for (uint64_t j = 0; j < 8; j++) {
            clear &= !rcoll__shm_timed_k(k + j, 0) &&
                     !rcoll__shm_explore_k((k + j) / RCOLL__SHM_ADAPT_BURST + sh[0]->bpath.ad.salt, 0);
        }
    }
    k--;
    assert_int_equal(rcoll__shm_bpath_timed(sh[1], k, big, 0), 1);
    assert_int_equal(rcoll__shm_bpath_timed(sh[1], k, n, 0), 0);   /* 64 KiB: not this k */
    bpath_calls(sh, P, task, &k, 6, big, two_big, one_big, -1);
    assert_int_equal(sh[0]->bpath.ad.want & bigbit, 0);           /* two copies, taken */
    for (int r = 0; r < P; r++) {
        free(sh[r]->fin);
        free(sh[r]);
    }
    free(task);
    free(seg);
}

/* Two ranks' private state over one segment in local memory (communicator
 * id), store choices offered as under RCOLL_SHM_ADAPT=auto; the bcast store
 * tests' fixture.  pair_free releases it. */
static char *pair_fixture(frank_t fr[2], rcoll__shm_t *sh[2], uint64_t id)
{
    memset(fr, 0, 2 * sizeof(*fr));
    for (int r = 0; r < 2; r++) {
        fr[r].ctx.config.shm = 1;
        fr[r].comm.ctx = &fr[r].ctx;
        fr[r].comm.id = id;
        fr[r].comm.rank = r;
        fr[r].comm.size = fr[r].comm.local_size = 2;
        fr[r].comm.world_ranks = fr[r].world_ranks;
        fr[r].world_ranks[0] = 0;
        fr[r].world_ranks[1] = 1;
        sh[r] = rcoll__shm_new(&fr[r].comm);
        assert_non_null(sh[r]);
        rcoll__shm_layout(sh[r], 256, 4096, 2, 0);
    }
    char *seg = alloc_aligned(4096, sh[0]->size);
    assert_non_null(seg);
    memset(seg, 0, sh[0]->size);
    for (int r = 0; r < 2; r++) {
        sh[r]->base = seg;
        rcoll__shm_store_offer(sh[r], "auto", 0);
    }
    return seg;
}

static void pair_free(rcoll__shm_t *sh[2], char *seg)
{
    for (int r = 0; r < 2; r++) {
        free(sh[r]->fin);
        free(sh[r]);
    }
    free(seg);
}

/* A task for calls that only wait on flags (the choosers' waits). */
static rcoll_task_t *zeroed_task(void)
{
    rcoll_task_t *task = alloc_aligned(64, sizeof(rcoll_task_t));
    assert_non_null(task);
    memset(task, 0, sizeof(*task));
    return task;
}

/* pair_fixture with the bcast's path chosen at run time from 64 KiB
 * (single copy fixed from there at first). */
static char *bpath_pair(frank_t fr[2], rcoll__shm_t *sh[2], uint64_t id)
{
    char *seg = pair_fixture(fr, sh, id);
    for (int r = 0; r < 2; r++) {
        sh[r]->cma_bc_min = 64 * 1024;
        sh[r]->cma_bc_max = SIZE_MAX;
    }
    rcoll__shm_adapt_offer(sh[0], 0, 1, 0, 0);
    rcoll__shm_adapt_ready(sh[0]);
    rcoll__shm_adapt_ready(sh[1]);
    return seg;
}

/* Rank 0 keeps the horizon (the last collective its published choices
 * cover) 16 collectives ahead, 4 (RCOLL__SHM_AHEAD_LARGE) on entering a
 * call from RCOLL__SHM_STORE_TIME_ALL bytes, so that a switch there (a
 * try's start or end) applies within a few calls; it never lowers it (the
 * others may have chosen up to it).  The bcast's chooser here. */
static void test_adapt_horizon(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    char *seg = bpath_pair(fr, sh, 45);
    rcoll_task_t *task = zeroed_task();
    const rcoll__shm_adapt_line_t *L = rcoll__shm_bpath_line(sh[0]);
    size_t small = 64 * 1024, big = (size_t)16 << 20;
    int cma, explore;
    rcoll__shm_op_t op = { .sh = sh[0], .k = 1 };
    assert_int_equal(rcoll__shm_bpath_choose(task, &op, small, &cma, &explore), 1);
    assert_int_equal(atomic_load(&L->horizon), 1 + 16);
    op.k = 2;
    assert_int_equal(rcoll__shm_bpath_choose(task, &op, big, &cma, &explore), 1);
    assert_int_equal(atomic_load(&L->horizon), 1 + 16);            /* never back */
    op.k = 40;
    assert_int_equal(rcoll__shm_bpath_choose(task, &op, big, &cma, &explore), 1);
    assert_int_equal(atomic_load(&L->horizon), 40 + RCOLL__SHM_AHEAD_LARGE);
    op.k = 41;
    assert_int_equal(rcoll__shm_bpath_choose(task, &op, big, &cma, &explore), 1);
    assert_int_equal(atomic_load(&L->horizon), 40 + RCOLL__SHM_AHEAD_LARGE);
    /* rank 1 follows up to the horizon, and waits for rank 0 beyond it */
    rcoll__shm_op_t op1 = { .sh = sh[1], .k = 40 + RCOLL__SHM_AHEAD_LARGE };
    assert_int_equal(rcoll__shm_bpath_choose(task, &op1, big, &cma, &explore), 1);
    op1.k++;
    assert_int_equal(rcoll__shm_bpath_choose(task, &op1, big, &cma, &explore), 0);
    /* a switch rank 0 makes at k applies from the horizon on: within
     * RCOLL__SHM_AHEAD_LARGE + 1 calls of k */
    uint32_t bigbit = 1u << rcoll__shm_size_class(big);
    sh[0]->bpath.ad.want ^= bigbit;
    op.k = 42;
    assert_int_equal(rcoll__shm_bpath_choose(task, &op, big, &cma, &explore), 1);
    int before = cma;
    uint64_t k = 43;
    for (; k < 43 + 16; k++) {
        op.k = k;
        assert_int_equal(rcoll__shm_bpath_choose(task, &op, big, &cma, &explore), 1);
        if (!explore && cma != before) {
            break;
        }
    }
    assert_true(k <= 42 + RCOLL__SHM_AHEAD_LARGE + 1);
    free(task);
    pair_free(sh, seg);
}

/* Ranks whose paths for a call disagree (a bug in the path choice, or
 * fixed sizes that differ) fail it with RCOLL_ERR_PROTOCOL: here rank 1
 * reduces 128 B through single copy while the root, rank 0, takes the
 * slots.  The root used to read rank 1's single-copy descriptor as its
 * vector, fold it in and return RCOLL_OK. */
static void test_paths_disagree(void **state)
{
    (void)state;
    static frank_t fr[2];
    rcoll__shm_t *sh[2];
    char *seg = pair_fixture(fr, sh, 47);
    for (int r = 0; r < 2; r++) {
        sh[r]->state = RCOLL__SHM_READY;
        rcoll_coll_comm(&fr[r].comm)->shm = sh[r];
        sh[r]->pid[0] = sh[r]->pid[1] = (int64_t)getpid();
    }
    sh[1]->cma_red_min = 64;             /* rank 1 alone: single copy from 64 B */
    sh[1]->cma_red_max = SIZE_MAX;
    sh[1]->cma_scratch = alloc_aligned(64, 2 * RCOLL__SHM_CMA_PIECE);
    assert_non_null(sh[1]->cma_scratch);
    script_op_t o = { .type = RCOLL_COLL_REDUCE, .count = 32, .dtype = RCOLL_INT32, .root = 0 };
    rcoll_status_t st[2] = { RCOLL_INPROGRESS, RCOLL_INPROGRESS };
    for (int r = 0; r < 2; r++) {
        fr[r].task = alloc_aligned(64, sizeof(rcoll_task_t));
        fr[r].send = malloc(4 * o.count + 8);
        fr[r].recv = malloc(4 * o.count + 8);
        assert_true(fr[r].task && fr[r].send && fr[r].recv);
        start_op(&fr[r], &o, r);
    }
    for (int i = 0; i < 100000 && st[0] == RCOLL_INPROGRESS; i++) {
        int r = i & 1;
        if (st[r] == RCOLL_INPROGRESS) {
            st[r] = rcoll_reduce_shm.progress(fr[r].task);
        }
    }
    assert_int_equal(st[0], RCOLL_ERR_PROTOCOL);
    assert_true(st[1] == RCOLL_ERR_PROTOCOL || st[1] == RCOLL_INPROGRESS);
    for (int r = 0; r < 2; r++) {
        free(fr[r].task);
        free(fr[r].send);
        free(fr[r].recv);
    }
    free(sh[1]->cma_scratch);
    pair_free(sh, seg);
}

/* Rank 0 switches a size's path and back before its horizon moves (a call
 * of less than RCOLL__SHM_STORE_TIME_ALL bytes set it 16 ahead, larger ones
 * keep it 4 ahead): both entries take effect at the same call, and the
 * later one is in force there, for both ranks, before and after rank 0
 * reuses the ring's other entries.  Two entries of one eff once let the
 * pick follow their places in the ring: the earlier switch won until its
 * entry was overwritten, and ranks that picked on either side of that took
 * different paths (coll_check's 2-rank reduces with RCOLL_SHM_ADAPT=random
 * timed out or returned wrong data). */
static void test_adapt_switch_twice(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    char *seg = bpath_pair(fr, sh, 46);
    rcoll_task_t *task = zeroed_task();
    size_t small = 64 * 1024, n = (size_t)16 << 20;
    uint32_t bit = 1u << rcoll__shm_size_class(n);
    int cma, explore, path[2][48];
    rcoll__shm_op_t op = { .sh = sh[0] }, op1 = { .sh = sh[1] };
    /* rank 1 one call ahead of rank 0 (it picks k before rank 0 does, as
     * far as the horizon lets it), through k - 2 when rank 0 picks k */
    for (uint64_t k = 1; k < 48; k++) {
        op1.k = k;
        if (k > 1) {
            assert_int_equal(rcoll__shm_bpath_choose(task, &op1, k == 1 ? small : n, &cma, &explore), 1);
            path[1][k] = explore ? -1 : cma;
            rcoll__shm_publish(&rcoll__shm_ctl(sh[1], 1)->done, &sh[1]->fin[1], k - 1);
        }
        /* rank 0 switches at k 2 and back at k 3, the horizon (1 + 16,
         * from the small call) unmoved: both take effect at 18; then
         * three more switches, which reuse the ring's entries */
        if (k == 2 || k == 3 || k == 25 || k == 30 || k == 35) {
            sh[0]->bpath.ad.want ^= bit;
        }
        op.k = k;
        assert_int_equal(rcoll__shm_bpath_choose(task, &op, k == 1 ? small : n, &cma, &explore), 1);
        path[0][k] = explore ? -1 : cma;
        if (k > 1 && path[0][k] != path[1][k]) {
            fail_msg("call %d: rank 0 took path %d, rank 1 path %d", (int)k, path[0][k], path[1][k]);
        }
    }
    /* the switch and back left the path where it was before them (up to
     * the next switch's eff, 27) */
    for (int k = 18; k < 27; k++) {
        if (path[0][k] >= 0 && path[0][4] >= 0) {
            assert_int_equal(path[0][k], path[0][4]);
        }
    }
    free(task);
    pair_free(sh, seg);
}

typedef int (*path_choose_fn)(rcoll_task_t *task, rcoll__shm_op_t *op, size_t n, int *path,
                              int *explore);

/* Calls k.. of a 2-rank path chooser (rank 0's state: ad0): both ranks take
 * the same path and try; rank 0 times path 0 at t0 ns, path 1 at t1. */
static void path_calls(rcoll__shm_t *sh[2], rcoll_task_t *task, uint64_t *k, int calls, size_t n,
                       path_choose_fn choose, rcoll__shm_adapt_t *ad0, uint64_t t0, uint64_t t1)
{
    for (int c = 0; c < calls; c++, (*k)++) {
        int path[2], explore[2];
        for (int r = 0; r < 2; r++) {
            rcoll__shm_op_t op = { .sh = sh[r], .k = *k };
            assert_int_equal(choose(task, &op, n, &path[r], &explore[r]), 1);
        }
        assert_int_equal(path[0], path[1]);
        assert_int_equal(explore[0], explore[1]);
        rcoll__shm_chooser_sample(ad0, n, path[0], explore[0], path[0] ? t1 : t0);
    }
}

static void rpath_calls(rcoll__shm_t *sh[2], rcoll_task_t *task, uint64_t *k, int calls, size_t n,
                        uint64_t two, uint64_t one)
{
    path_calls(sh, task, k, calls, n, rcoll__shm_rpath_choose, &sh[0]->rpath, two, one);
}

/* The reduce's path (shm_adapt.h, "rpath"): offered alone, it covers
 * vectors from RCOLL__SHM_RPATH_MIN; both ranks take the same path and try
 * for each call; rank 0 starts from the fixed sizes (none: two copies),
 * takes single copy where its root times say it is faster (the Xeon VM,
 * 64 KiB: 4.3 us against 8.2) and goes back when the machine changes. */
static void test_reduce_path_choice(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    rcoll_task_t *task = zeroed_task();
    char *seg = pair_fixture(fr, sh, 46);

    rcoll__shm_adapt_offer(sh[0], 0, 0, 1, 0);   /* the reduce adapts, nothing else */
    for (int r = 0; r < 2; r++) {
        rcoll__shm_adapt_ready(sh[r]);
        assert_int_equal(sh[r]->rpath.min, RCOLL__SHM_RPATH_MIN);
        assert_int_equal(sh[r]->adapt.min, SIZE_MAX);
        assert_int_equal(sh[r]->bpath.ad.min, SIZE_MAX);
        assert_true(rcoll__shm_rpath_covers(sh[r], RCOLL__SHM_RPATH_MIN) &&
                    !rcoll__shm_rpath_covers(sh[r], RCOLL__SHM_RPATH_MIN - 1));
    }
    size_t n = 65536;                             /* class 3 */
    uint32_t bit = 1u << 3;
    uint64_t k = 1;
    rpath_calls(sh, task, &k, 1, n, 8000, 4000);
    assert_int_equal(sh[0]->rpath.bits & bit, 0);  /* the fixed sizes first: two copies */
    rpath_calls(sh, task, &k, 3000, n, 8000, 4000);
    assert_int_equal(sh[0]->rpath.want & bit, bit);   /* single copy won */
    assert_true(sh[0]->rpath.est[3][1] > 3999 && sh[0]->rpath.est[3][1] < 4001);
    assert_true(sh[0]->rpath.est[3][0] > 7999 && sh[0]->rpath.est[3][0] < 8001);
    assert_int_equal(sh[0]->rpath.want & 0xfff & ~bit, 0);   /* no other class moved */
    rpath_calls(sh, task, &k, 20000, n, 8000, 12000);        /* single copy turns slow */
    assert_int_equal(sh[0]->rpath.want & bit, 0);
    free(task);
    pair_free(sh, seg);
}

/* The reduce_scatter's path (shm_adapt.h, "rspath"): offered on its own,
 * it covers inputs from RCOLL__SHM_RSPATH_MIN; it starts on the slots,
 * takes the pipeline where rank 0's calls say it is faster (the Xeon VM,
 * 64 KiB: 4.3 us against 6.9) and goes back to the slots. */
static void test_reduce_scatter_path_choice(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    rcoll_task_t *task = zeroed_task();
    char *seg = pair_fixture(fr, sh, 47);

    for (int r = 0; r < 2; r++) {
        assert_int_equal(sh[r]->rspath.min, SIZE_MAX);   /* none before the set-up agrees */
    }
    rcoll__shm_rspath_offer(sh[0], 1, 0);
    for (int r = 0; r < 2; r++) {
        rcoll__shm_rspath_ready(sh[r]);
        assert_true(rcoll__shm_rspath_covers(sh[r], RCOLL__SHM_RSPATH_MIN) &&
                    !rcoll__shm_rspath_covers(sh[r], RCOLL__SHM_RSPATH_MIN - 1));
    }
    size_t n = 49152;                             /* class 2 */
    uint32_t bit = 1u << 2;
    uint64_t k = 1;
    path_calls(sh, task, &k, 1, n, rcoll__shm_rspath_choose, &sh[0]->rspath, 5500, 3600);
    assert_int_equal(sh[0]->rspath.bits, 0);     /* the slots first, every class */
    path_calls(sh, task, &k, 3000, n, rcoll__shm_rspath_choose, &sh[0]->rspath, 5500, 3600);
    assert_int_equal(sh[0]->rspath.want & bit, bit);   /* the pipeline won */
    assert_int_equal(sh[0]->rspath.want & 0xfff & ~bit, 0);
    path_calls(sh, task, &k, 20000, n, rcoll__shm_rspath_choose, &sh[0]->rspath, 5500, 9000);
    assert_int_equal(sh[0]->rspath.want & bit, 0);
    /* off: no offer, nothing covered */
    rcoll__shm_rspath_offer(sh[0], 0, 0);
    rcoll__shm_rspath_ready(sh[1]);
    assert_false(rcoll__shm_rspath_covers(sh[1], (size_t)1 << 30));
    free(task);
    pair_free(sh, seg);
}

/* The small bcast root's store choice (shm_adapt.h, "bstore"): leaves time
 * their copy-out on the calls the root times (a function of k), the root
 * adds the slowest leaf's time to its own for that k, and chooses per class
 * the kind whose sum is lower: streaming where its plain writes and the
 * leaves' reads of them are slow (the VMs' slow phase), plain again once
 * they are fast.  A leaf that never reports leaves the root without
 * samples (plain); a leaf word with a later k drops the sample. */
/* One bcast k through the root's slot: the root's kind and, where timed,
 * its write time w[kind] and the leaf's copy-out r[kind]; the kind. */
static int bstore_call(rcoll__shm_t *root, rcoll__shm_t *leaf, uint64_t k, size_t n, int path_try,
                       const uint64_t w[2], const uint64_t r[2])
{
    int timed;
    int stream = rcoll__shm_bstore_root(root, k, n, path_try, &timed);
    if (timed) {
        rcoll__shm_bstore_wrote(root, k, w[stream]);
    }
    if (leaf != NULL && rcoll__shm_bstore_timed(leaf, k, path_try)) {
        rcoll__shm_bstore_copied(leaf, k, r[stream]);
    }
    return stream;
}

static void bstore_calls(rcoll__shm_t *root, rcoll__shm_t *leaf, uint64_t *k, uint64_t ncalls,
                         size_t n, const uint64_t w[2], const uint64_t r[2], uint64_t *nstream)
{
    for (uint64_t end = *k + ncalls; *k < end; (*k)++) {
        *nstream += (uint64_t)bstore_call(root, leaf, *k, n, 0, w, r);
    }
}

static void test_bcast_store_choice(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    char *seg = pair_fixture(fr, sh, 43);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(sh[r]->bstore.min, RCOLL__SHM_BSTORE_MIN);
    }
    size_t n = 8192;                               /* class 2 */
    uint32_t bit = 1u << 2;
    uint64_t k = 1, nstream = 0;
    const uint64_t slow_w[2] = { 1000, 190 }, slow_r[2] = { 1600, 1600 };   /* sums 2600, 1790 */
    const uint64_t fast_w[2] = { 275, 190 }, fast_r[2] = { 570, 1600 };     /* 845, 1790 */

    bstore_calls(sh[0], NULL, &k, 4000, n, slow_w, slow_r, &nstream);      /* a silent leaf */
    assert_int_equal(sh[0]->bstore.nsamp[2][0] + sh[0]->bstore.nsamp[2][1], 0);
    assert_int_equal(sh[0]->bstore.want & bit, 0);                  /* plain, no samples */
    /* and it is asked twice, not at every call from then on */
    while (!rcoll__shm_bstore_timed(sh[0], k, 0) || rcoll__shm_bstore_timed(sh[0], k + 1, 0) ||
           rcoll__shm_bstore_timed(sh[0], k + 2, 0)) {
        k++;
    }
    bstore_calls(sh[0], NULL, &k, 2, n, slow_w, slow_r, &nstream);
    assert_int_not_equal(sh[0]->bstore.pend.k, 0);                  /* asked once */
    bstore_calls(sh[0], NULL, &k, 1, n, slow_w, slow_r, &nstream);
    assert_int_equal(sh[0]->bstore.pend.k, 0);                      /* twice: given up */
    bstore_calls(sh[0], sh[1], &k, 4000, n, slow_w, slow_r, &nstream);     /* slow phase */
    assert_int_equal(sh[0]->bstore.want & bit, bit);                /* streaming */
    assert_true(sh[0]->bstore.est[2][1] > 1789 && sh[0]->bstore.est[2][1] < 1791);
    assert_true(sh[0]->bstore.nsamp[2][0] >= 3);                    /* both kinds timed */
    nstream = 0;
    bstore_calls(sh[0], sh[1], &k, 8000, n, fast_w, fast_r, &nstream);     /* fast phase */
    assert_int_equal(sh[0]->bstore.want & bit, 0);                  /* plain again */
    assert_true(nstream > 0 && nstream < 8000 / 2);
    assert_int_equal(sh[0]->bstore.want & ~(bit | RCOLL__SHM_RARE(2)), 0);  /* no other class */
    /* a leaf word with a later k: the root's pending sample is dropped */
    uint32_t before = sh[0]->bstore.nsamp[2][0] + sh[0]->bstore.nsamp[2][1];
    int timed = 0;
    for (; !timed; k++) {
        (void)rcoll__shm_bstore_root(sh[0], k, n, 0, &timed);
        if (timed) {
            rcoll__shm_bstore_wrote(sh[0], k, 300);
            rcoll__shm_bstore_copied(sh[1], k + 1, 1);
        }
    }
    (void)rcoll__shm_bstore_root(sh[0], k, n, 0, &timed);
    assert_int_equal(sh[0]->bstore.nsamp[2][0] + sh[0]->bstore.nsamp[2][1], before);
    assert_int_equal(sh[0]->bstore.pend.k, timed ? k : 0);
    assert_int_equal(sh[1]->over_stream_min, SIZE_MAX);             /* a choice, no rule */
    rcoll__shm_store_offer(sh[1], "off", 0);                        /* off: plain only */
    assert_int_equal(sh[1]->bstore.min, SIZE_MAX);
    assert_int_equal(sh[1]->over_stream_min, SIZE_MAX);
    /* oversubscribed: no choice (a time there measures the scheduler), the
     * bcast root and the flat allreduce's copy-in stream from 2 KiB
     * (docs/shm.md, "Waiting when ranks outnumber the CPUs"); off keeps
     * plain stores even there */
    rcoll__shm_store_offer(sh[1], "auto", 1);
    assert_int_equal(sh[1]->bstore.min, SIZE_MAX);
    assert_int_equal(sh[1]->store.min, SIZE_MAX);
    assert_int_equal(sh[1]->over_stream_min, 2048);
    rcoll__shm_store_offer(sh[1], "random", 1);
    assert_int_equal(sh[1]->over_stream_min, 2048);
    rcoll__shm_store_offer(sh[1], "off", 1);
    assert_int_equal(sh[1]->over_stream_min, SIZE_MAX);
    pair_free(sh, seg);
}

/* Where single copy is the bcast's path, only the path chooser's tries of
 * two copies (bursts of RCOLL__SHM_ADAPT_BURST consecutive k, one group in
 * 64 or 512) write the root's slot.  The store choice used to time those
 * calls only where k alone picked them (1 in 32), so it had no samples,
 * kept its first kind (plain), and every try timed two copies with plain
 * stores: on the Zen 4 VM 11 us at 64 KiB against 4 with streaming, and the
 * path stayed on single copy (6 us).  A call the path tries is now timed
 * whatever k: a burst or two measure both kinds and take the faster.
 * Here the bursts fall only on k that the store choice does not time by
 * itself, so without the path_try argument nothing is ever measured. */
static void bstore_path_bursts(rcoll__shm_t *root, rcoll__shm_t *leaf, uint64_t *k, int nbursts,
                               size_t n, const uint64_t w[2], const uint64_t r[2])
{
    for (int b = 0; b < nbursts; b++) {
        int clean;
        do {        /* the next group of BURST k that the choice would not time itself */
            *k = (*k / RCOLL__SHM_ADAPT_BURST + 1) * RCOLL__SHM_ADAPT_BURST;
            clean = 1;
            for (uint64_t j = 0; j < RCOLL__SHM_ADAPT_BURST; j++) {
                clean &= !rcoll__shm_bstore_timed(root, *k + j, 0);
            }
        } while (!clean);
        for (uint64_t j = 0; j < RCOLL__SHM_ADAPT_BURST; j++, (*k)++) {
            (void)bstore_call(root, leaf, *k, n, 1, w, r);
        }
        *k += 500;  /* single copy in between: nothing through the slot */
    }
}

static void test_bcast_store_in_path_tries(void **state)
{
    (void)state;
    frank_t fr[2];
    rcoll__shm_t *sh[2];
    char *seg = pair_fixture(fr, sh, 45);
    size_t n = 65536;                              /* class 5 */
    int b = 5;
    uint32_t bit = 1u << b;
    uint64_t k = 1;
    /* the Zen 4 VM at 64 KiB: plain 11.5 us (root + slowest leaf), streaming 4 */
    const uint64_t w[2] = { 5500, 1500 }, r[2] = { 6000, 2500 };

    /* the k that time themselves are not the path's tries */
    assert_int_equal(rcoll__shm_bstore_timed(sh[1], 40, 1), 1);
    bstore_path_bursts(sh[0], sh[1], &k, 2, n, w, r);
    assert_true(sh[0]->bstore.nsamp[b][0] >= 3);            /* plain measured */
    assert_true(sh[0]->bstore.nsamp[b][1] >= 1);            /* then streaming */
    assert_int_equal(sh[0]->bstore.want & bit, bit);        /* and kept */
    assert_true(sh[0]->bstore.est[b][1] < sh[0]->bstore.est[b][0]);
    pair_free(sh, seg);
}

/* The CMA tests' fixture: a p-rank segment of communicator id in local
 * memory (this process is rank 1; RCOLL_SHM_CMA as given) and *gone, the pid
 * of a child that exited and was reaped. */
static rcoll__shm_t *cma_fixture_p(frank_t *f, uint64_t id, const char *shm_cma, int p,
                                   char **seg, pid_t *gone)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->ctx.config.shm_cma, sizeof(f->ctx.config.shm_cma), "%s", shm_cma);
    f->comm.ctx = &f->ctx;
    f->comm.id = id;
    f->comm.size = p;
    f->comm.rank = 1;
    f->comm.local_size = p;
    f->comm.world_ranks = f->world_ranks;
    for (int r = 0; r < p; r++) {
        f->world_ranks[r] = r;
    }
    rcoll__shm_t *sh = rcoll__shm_new(&f->comm);
    assert_non_null(sh);
    rcoll__shm_layout(sh, 256, 4096, 2, 0);
    *seg = alloc_aligned(4096, sh->size);
    assert_non_null(*seg);
    memset(*seg, 0, sh->size);
    sh->base = *seg;
    *gone = fork();
    assert_true(*gone >= 0);
    if (*gone == 0) {
        _exit(0);
    }
    assert_int_equal(waitpid(*gone, NULL, 0), *gone);
    return sh;
}

/* The same with 2 ranks. */
static rcoll__shm_t *cma_fixture(frank_t *f, uint64_t id, const char *shm_cma, char **seg,
                                 pid_t *gone)
{
    return cma_fixture_p(f, id, shm_cma, 2, seg, gone);
}

/* A task of that collective on the fixture's communicator (free() it). */
static rcoll_task_t *cma_task(frank_t *f, rcoll_coll_type_t type)
{
    rcoll_task_t *t = alloc_aligned(64, sizeof(rcoll_task_t));
    assert_non_null(t);
    memset(t, 0, sizeof(*t));
    t->ctx = &f->ctx;
    t->comm = &f->comm;
    t->wait_peer = -1;
    t->args.type = type;
    return t;
}

/* What cma_fixture and cma_task made. */
static void cma_teardown(rcoll__shm_t *sh, char *seg, rcoll_task_t *t)
{
    free(t);
    free(seg);
    free(sh->fin);
    free(sh);
}

/* Single-copy reads (shm_cma.c): a published buffer is read with this
 * call's length; a descriptor of another length, an address the owner has
 * not mapped and an owner that is gone each fail the read with the error
 * of docs/shm.md ("Single copy"), and nothing is read before the
 * descriptor is there.  The set-up probe accepts a readable rank and
 * refuses a gone one. */
static void test_cma_read_errors(void **state)
{
    (void)state;
    static frank_t f;
    char *seg;
    pid_t gone;
    rcoll__shm_t *sh = cma_fixture(&f, 7, "on", &seg, &gone);   /* on: the probe, whatever
                                                                    the CPU count */

    /* the probe: rank 0's ident, then a gone rank 0 */
    sh->me = 0;
    rcoll__shm_cma_ident(&f.comm, sh);
    sh->me = 1;
    assert_int_equal(rcoll__shm_cma_probe(&f.comm, sh, 0), 1);
    rcoll__shm_ctl(sh, 0)->ident.pid = gone;
    assert_int_equal(rcoll__shm_cma_probe(&f.comm, sh, 0), 0);

    rcoll_task_t *t = cma_task(&f, RCOLL_COLL_BCAST);
    rcoll__shm_op_t op = { .sh = sh, .k = 3, .word = rcoll__shm_slot_word(3, 0x1234) };
    sh->pid[0] = (int64_t)getpid();
    char src[3000], dst[3000];
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (char)(i * 7 + 1);
    }
    uint64_t d[2] = { (uint64_t)(uintptr_t)src, sizeof(src) };
    /* not published yet: wait for rank 0 */
    assert_int_equal(rcoll__shm_cma_pull(t, &op, 0, dst, sizeof(dst)), RCOLL_INPROGRESS);
    assert_int_equal(t->wait_peer, 0);
    memcpy(rcoll__shm_slot_data(sh, 0, 3, sizeof(d)), d, sizeof(d));
    atomic_store(rcoll__shm_slot_seq(sh, 0, 3), op.word);
    memset(dst, 0, sizeof(dst));
    assert_int_equal(rcoll__shm_cma_pull(t, &op, 0, dst, sizeof(dst)), RCOLL_OK);
    assert_memory_equal(dst, src, sizeof(src));
    /* a part */
    memset(dst, 0, sizeof(dst));
    assert_int_equal(rcoll__shm_cma_pull_part(t, &op, 0, dst, sizeof(dst), 1000, 24), RCOLL_OK);
    assert_memory_equal(dst, src + 1000, 24);
    /* another length: never read, whatever the descriptor says */
    memset(dst, 0, sizeof(dst));
    assert_int_equal(rcoll__shm_cma_pull(t, &op, 0, dst, sizeof(dst) - 1), RCOLL_ERR_PROTOCOL);
    assert_int_equal(dst[0], 0);
    op.error = RCOLL_OK;
    /* an address rank 0 has not mapped */
    char *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(hole != MAP_FAILED);
    munmap(hole, 4096);
    d[0] = (uint64_t)(uintptr_t)hole;
    memcpy(rcoll__shm_slot_data(sh, 0, 3, sizeof(d)), d, sizeof(d));
    assert_int_equal(rcoll__shm_cma_pull(t, &op, 0, dst, sizeof(dst)), RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    /* rank 0 gone */
    d[0] = (uint64_t)(uintptr_t)src;
    memcpy(rcoll__shm_slot_data(sh, 0, 3, sizeof(d)), d, sizeof(d));
    sh->pid[0] = gone;
    assert_int_equal(rcoll__shm_cma_pull(t, &op, 0, dst, sizeof(dst)), RCOLL_ERR_PEER_FAILED);

    /* the owner's wait: rank 0 neither read (cma_read) nor left (done) k */
    op.error = RCOLL_OK;
    t->wait_peer = -1;
    assert_int_equal(rcoll__shm_cma_reader_gone(t, &op, 0), 0);
    assert_int_equal(t->wait_peer, 0);
    atomic_store(&rcoll__shm_ctl(sh, 0)->done.v, 3);
    assert_int_equal(rcoll__shm_cma_reader_gone(t, &op, 0), 1);
    cma_teardown(sh, seg, t);
}

/* Ranks outnumber the CPUs (p = online CPUs + 1): with RCOLL_SHM_CMA=auto
 * the ranks still probe each other, but nothing starts on single copy; the
 * bcast alone chooses its path at run time (the allgather's and the
 * reduce's choosers stay off: their owners would wait for ranks that are
 * not running), a single-copy bcast root copies no share of its own
 * (it would wait for each reader's buffer, readers that may sleep: 3-5 ms a
 * call at 256 KiB on 4 ranks, 2 vCPUs), and slot lines are not handed to
 * L3 (rcoll__shm_demote).  RCOLL_SHM_ADAPT=off there: no single copy at
 * all, as before.  With a CPU per rank the share and the hand-over stay. */
static void test_cma_oversubscribed(void **state)
{
    (void)state;
    static frank_t f;
    char *seg;
    pid_t gone;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1 || ncpu + 1 > PMAX) {
        printf("test_cma_oversubscribed: %ld CPUs: more ranks than the fixture holds, skipped\n",
               ncpu);
        skip();
    }
    rcoll__shm_t *sh = cma_fixture_p(&f, 9, "auto", (int)ncpu + 1, &seg, &gone);
    snprintf(f.ctx.config.shm_adapt, sizeof(f.ctx.config.shm_adapt), "auto");
    assert_int_equal(rcoll__shm_oversubscribed(sh), 1);
    assert_int_equal(sh->cma_share_min, SIZE_MAX);
    assert_int_equal(sh->demote, 0);      /* slot lines stay in the cores' caches */
    sh->me = 0;
    rcoll__shm_cma_ident(&f.comm, sh);
    const rcoll__shm_ident_t *id = &rcoll__shm_ctl(sh, 0)->ident;
    for (int w = 0; w < RCOLL_TUNE_NCMA; w++) {
        assert_true(id->cma_lo[w] > id->cma_hi[w]);                 /* none fixed */
    }
    assert_int_equal(atomic_load(&rcoll__shm_bpath_line(sh)->min), RCOLL__SHM_BPATH_MIN);
    assert_int_equal(atomic_load(&rcoll__shm_adapt_line(sh)->min), 0);
    assert_int_equal(atomic_load(&rcoll__shm_rpath_line(sh)->min), 0);
    sh->me = 1;
    assert_int_equal(rcoll__shm_cma_probe(&f.comm, sh, 0), 1);     /* wanted: probed */
    snprintf(f.ctx.config.shm_adapt, sizeof(f.ctx.config.shm_adapt), "off");
    assert_int_equal(rcoll__shm_cma_probe(&f.comm, sh, 0), 0);     /* off: not wanted */
    cma_teardown(sh, seg, NULL);

    if (ncpu >= 2) {                    /* a CPU per rank: the root's share */
        sh = cma_fixture(&f, 10, "auto", &seg, &gone);
        assert_int_equal(rcoll__shm_oversubscribed(sh), 0);
        assert_int_equal(sh->cma_share_min, RCOLL__SHM_CMA_SHARE_MIN);
        assert_int_equal(sh->demote, 1);  /* handed to L3 (rcoll__shm_demote) */
        cma_teardown(sh, seg, NULL);
    }
}

/* Single-copy writes into a reduce root's receive buffer (shm_cma.c): only
 * into the buffer it published (rcoll__shm_cma_post_rw), with this call's
 * length, which both of its lengths must equal; a bad address and a gone
 * root fail the write with the errors of a read; the root's wait for a
 * writer fails if the writer left without raising cma_read. */
static void test_cma_write_errors(void **state)
{
    (void)state;
    static frank_t f;
    char *seg;
    pid_t gone;
    rcoll__shm_t *sh = cma_fixture(&f, 8, "", &seg, &gone);

    rcoll_task_t *t = cma_task(&f, RCOLL_COLL_REDUCE);
    sh->pid[0] = sh->pid[1] = (int64_t)getpid();
    static char sendb[3000], recvb[3000], part[3000];
    for (size_t i = 0; i < sizeof(part); i++) {
        sendb[i] = (char)(i * 3 + 2);
        part[i] = (char)(i * 7 + 1);
    }
    /* k = 1: rank 0 (the root) publishes both buffers; rank 1 reads the
     * send buffer and writes a part of the receive buffer */
    rcoll__shm_op_t op = { .sh = sh, .k = 1, .word = rcoll__shm_slot_word(1, 0x4321) };
    sh->me = 1;
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part), 0, 10),
                     RCOLL_INPROGRESS);
    assert_int_equal(t->wait_peer, 0);
    sh->me = 0;
    assert_int_equal(rcoll__shm_cma_post_rw(t, &op, sendb, recvb, sizeof(recvb)), 1);
    sh->me = 1;
    char got[3000];
    assert_int_equal(rcoll__shm_cma_pull_part(t, &op, 0, got, sizeof(got), 7, 100), RCOLL_OK);
    assert_memory_equal(got, sendb + 7, 100);
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part + 1000, sizeof(part), 1000, 64),
                     RCOLL_OK);
    assert_memory_equal(recvb + 1000, part + 1000, 64);
    assert_int_equal(recvb[999], 0);
    assert_int_equal(recvb[1064], 0);
    /* another length, or past the end: nothing written */
    memset(recvb, 0, sizeof(recvb));
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part) - 1, 0, 10),
                     RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part), 2990, 11),
                     RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    /* a plain 16-byte descriptor (no receive buffer): never written to */
    uint64_t d[4] = { (uint64_t)(uintptr_t)sendb, sizeof(sendb), 0, 0 };
    memcpy(rcoll__shm_slot_data(sh, 0, 1, sizeof(d)), d, sizeof(d));
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part), 0, 10),
                     RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    for (size_t i = 0; i < sizeof(recvb); i++) {
        assert_int_equal(recvb[i], 0);
    }
    /* an address rank 0 has not mapped */
    char *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(hole != MAP_FAILED);
    munmap(hole, 4096);
    uint64_t dh[4] = { (uint64_t)(uintptr_t)sendb, sizeof(sendb), (uint64_t)(uintptr_t)hole,
                       sizeof(recvb) };
    memcpy(rcoll__shm_slot_data(sh, 0, 1, sizeof(dh)), dh, sizeof(dh));
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part), 0, 10),
                     RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    /* rank 0 gone */
    sh->me = 0;
    op.word = rcoll__shm_slot_word(1, 0x4322);   /* a fresh publish of k = 1 */
    assert_int_equal(rcoll__shm_cma_post_rw(t, &op, sendb, recvb, sizeof(recvb)), 1);
    sh->me = 1;
    sh->pid[0] = gone;
    assert_int_equal(rcoll__shm_cma_push_part(t, &op, 0, part, sizeof(part), 0, 10),
                     RCOLL_ERR_PEER_FAILED);
    op.error = RCOLL_OK;

    /* the root's wait for writer 1: neither wrote (cma_read) nor left */
    sh->me = 0;
    atomic_store(rcoll__shm_slot_seq(sh, 1, 1), op.word);
    t->wait_peer = -1;
    assert_int_equal(rcoll__shm_cma_wrote(t, &op, 1), 0);
    assert_int_equal(t->wait_peer, 1);
    assert_int_equal(op.error, RCOLL_OK);
    /* left k without raising cma_read: the reduce fails */
    atomic_store(&rcoll__shm_ctl(sh, 1)->done.v, 1);
    assert_int_equal(rcoll__shm_cma_wrote(t, &op, 1), 0);
    assert_int_equal(op.error, RCOLL_ERR_PEER_FAILED);
    op.error = RCOLL_OK;
    /* raised it, then left */
    atomic_store(&rcoll__shm_ctl(sh, 1)->cma_read.v, 1);
    assert_int_equal(rcoll__shm_cma_wrote(t, &op, 1), 1);
    cma_teardown(sh, seg, t);
}

/* The single-copy reduce's split (shm_reduce_cma.c): a root publishes
 * its share with its buffers; any other rank gets exactly that share back;
 * a share over the whole, another length or a 16-byte descriptor fail the
 * reduce before anything is read or written. */
static void test_cma_split_descriptor(void **state)
{
    (void)state;
    static frank_t f;
    char *seg;
    pid_t gone;
    rcoll__shm_t *sh = cma_fixture(&f, 8, "", &seg, &gone);
    rcoll_task_t *t = cma_task(&f, RCOLL_COLL_REDUCE);
    static char sendb[3000], recvb[3000];
    rcoll__shm_op_t op = { .sh = sh, .k = 1, .word = rcoll__shm_slot_word(1, 0x4321) };
    unsigned split = 12345;

    sh->me = 1;
    t->wait_peer = -1;
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_INPROGRESS);
    assert_int_equal(t->wait_peer, 0);
    assert_int_equal(split, 12345);
    sh->me = 0;
    assert_int_equal(rcoll__shm_cma_post_split(t, &op, sendb, recvb, sizeof(recvb), 777), 1);
    sh->me = 1;
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_OK);
    assert_int_equal(split, 777);
    /* a plain post_rw (the bcast's) says 0 */
    sh->me = 0;
    op.word = rcoll__shm_slot_word(1, 0x4322);
    assert_int_equal(rcoll__shm_cma_post_rw(t, &op, sendb, recvb, sizeof(recvb)), 1);
    sh->me = 1;
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_OK);
    assert_int_equal(split, 0);
    /* hostile or different: over the whole, another length, no receive buffer */
    uint64_t d[5] = { (uint64_t)(uintptr_t)sendb, sizeof(sendb), (uint64_t)(uintptr_t)recvb,
                      sizeof(recvb), RCOLL__SHM_SPLIT_ONE + 1 };
    memcpy(rcoll__shm_slot_data(sh, 0, 1, sizeof(d)), d, sizeof(d));
    split = 12345;
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_ERR_PROTOCOL);
    assert_int_equal(split, 12345);
    op.error = RCOLL_OK;
    d[4] = RCOLL__SHM_SPLIT_ONE;
    memcpy(rcoll__shm_slot_data(sh, 0, 1, sizeof(d)), d, sizeof(d));
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_OK);
    assert_int_equal(split, RCOLL__SHM_SPLIT_ONE);
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb) - 1, &split),
                     RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    d[3] = 0;
    d[4] = 1;
    memcpy(rcoll__shm_slot_data(sh, 0, 1, sizeof(d)), d, sizeof(d));
    assert_int_equal(rcoll__shm_cma_split_of(t, &op, 0, sizeof(recvb), &split), RCOLL_ERR_PROTOCOL);
    op.error = RCOLL_OK;
    cma_teardown(sh, seg, t);
}

/* The slices of a single-copy reduce: in rank order, back to back, over
 * the whole vector and nothing else, whole elements, each non-empty one
 * starting at a multiple of lcm(dsize, line) bytes; the root's is its
 * split of the groups (within one group). */
static void test_reduce_slices(void **state)
{
    (void)state;
    static const size_t dsizes[] = { 1, 2, 4, 8, 12, 16 };
    static const unsigned splits[] = { 0, 1, 8, 341, 512, 600, 1000, 1023, RCOLL__SHM_SPLIT_ONE };
    static const size_t counts[] = { 0, 1, 2, 15, 16, 17, 63, 64, 65, 1000, 4097, 65537, 1000003 };

    for (int p = 1; p <= 8; p++) {
        for (int root = 0; root < p; root++) {
            for (size_t di = 0; di < sizeof(dsizes) / sizeof(dsizes[0]); di++) {
                size_t ds = dsizes[di], lcm = ds;
                while (lcm % RCOLL__SHM_LINE != 0) {
                    lcm += ds;
                }
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
                    size_t n = counts[ci] * ds, groups = (n + lcm - 1) / lcm;
                    for (size_t si = 0; si < sizeof(splits) / sizeof(splits[0]); si++) {
                        unsigned split = splits[si];
                        size_t at = 0;
                        for (int r = 0; r < p; r++) {
                            size_t off, len;
                            rcoll__shm_reduce_slice(n, ds, p, root, split, r, &off, &len);
                            assert_int_equal(off, at);
                            assert_true(len == 0 || off % lcm == 0);
                            assert_int_equal(len % ds, 0);
                            at += len;
                            if (r == root && p > 1) {
                                double want = (double)groups * split / RCOLL__SHM_SPLIT_ONE;
                                double got = (double)((len + lcm - 1) / lcm);
                                assert_true(fabs(got - want) <= 1.0);
                            }
                        }
                        assert_int_equal(at, n);
                        if (p == 1) {
                            size_t off, len;
                            rcoll__shm_reduce_slice(n, ds, 1, 0, split, 0, &off, &len);
                            assert_int_equal(len, n);
                        }
                    }
                }
            }
        }
    }
}

/* The root's split, balanced at run time: even to begin with; a call in
 * which it waited for the others gives its next call of that size class a
 * step more, one in which it did not a step less, within [0, the whole];
 * classes apart; RCOLL_SHM_ADAPT=off keeps even slices, random any split. */
static void test_split_balance(void **state)
{
    (void)state;
    static rcoll__shm_t sh;
    const unsigned one = RCOLL__SHM_SPLIT_ONE, step = RCOLL__SHM_SPLIT_STEP;

    memset(&sh, 0, sizeof(sh));
    sh.p = 2;
    rcoll__shm_split_offer(&sh, 1);
    assert_int_equal(rcoll__shm_split_choose(&sh, 65536), one / 2);
    rcoll__shm_split_learn(&sh, 65536, one / 2, 1);
    assert_int_equal(rcoll__shm_split_choose(&sh, 65536), one / 2 + step);
    assert_int_equal(rcoll__shm_split_choose(&sh, 100000), one / 2 + step);   /* same class */
    assert_int_equal(rcoll__shm_split_choose(&sh, 32768), one / 2);           /* another */
    assert_int_equal(rcoll__shm_split_choose(&sh, 131072), one / 2);
    rcoll__shm_split_learn(&sh, 65536, one / 2 + step, 0);
    assert_int_equal(rcoll__shm_split_choose(&sh, 65536), one / 2);
    for (int i = 0; i < 200; i++) {
        rcoll__shm_split_learn(&sh, 8192, rcoll__shm_split_choose(&sh, 8192), 1);
        rcoll__shm_split_learn(&sh, 16384, rcoll__shm_split_choose(&sh, 16384), 0);
    }
    assert_int_equal(rcoll__shm_split_choose(&sh, 8192), one);
    assert_int_equal(rcoll__shm_split_choose(&sh, 16384), 0);
    /* a root that waits every other call stays within a step of where it was */
    unsigned at = rcoll__shm_split_choose(&sh, 1 << 20);
    for (int i = 0; i < 100; i++) {
        rcoll__shm_split_learn(&sh, 1 << 20, rcoll__shm_split_choose(&sh, 1 << 20), i & 1);
    }
    assert_true(rcoll__shm_split_choose(&sh, 1 << 20) + step >= at &&
                rcoll__shm_split_choose(&sh, 1 << 20) <= at + step);
    /* 3 ranks: a third */
    sh.p = 3;
    rcoll__shm_split_offer(&sh, 1);
    assert_int_equal(rcoll__shm_split_choose(&sh, 65536), (one + 1) / 3);
    /* off: even, whatever it learns */
    rcoll__shm_split_offer(&sh, 0);
    rcoll__shm_split_learn(&sh, 65536, 500, 1);
    assert_int_equal(rcoll__shm_split_choose(&sh, 65536), (one + 1) / 3);
    /* random: within the whole, not all the same */
    rcoll__shm_split_offer(&sh, 2);
    unsigned lo = one, hi = 0;
    for (int i = 0; i < 1000; i++) {
        unsigned v = rcoll__shm_split_choose(&sh, 65536);
        assert_true(v <= one);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    assert_true(lo < one / 8 && hi > one - one / 8);
}

static void test_flat_limits(void **state)
{
    (void)state;
    /* 2 ranks: flat up to the pair slot; more: p * bytes <= the total */
    assert_true(rcoll__shm_flat_fits(RCOLL__SHM_SMALL_PAIR, 2));
    assert_false(rcoll__shm_flat_fits(RCOLL__SHM_SMALL_PAIR + 1, 2));
    assert_true(rcoll__shm_flat_fits(RCOLL__SHM_FLAT_TOTAL / 4, 4));
    assert_false(rcoll__shm_flat_fits(RCOLL__SHM_FLAT_TOTAL / 4 + 1, 4));
    assert_false(rcoll__shm_flat_fits(RCOLL__SHM_SMALL + 1, 3));
    assert_int_equal(rcoll__shm_slot_size(2), RCOLL__SHM_SMALL_PAIR);
    assert_int_equal(rcoll__shm_slot_size(3), RCOLL__SHM_SMALL);
}

static void test_layout(void **state)
{
    (void)state;
    for (int p = 1; p <= 300; p += (p < 10 ? 1 : 37)) {
        rcoll_comm_t comm = { .size = p, .rank = 0 };
        rcoll__shm_t *sh = rcoll__shm_new(&comm);
        assert_non_null(sh);
        rcoll__shm_default_layout(sh);
        sh->base = NULL;     /* offsets only */
        assert_true(sh->chunk == sh->slice * (size_t)p);
        assert_true(sh->slice % RCOLL__SHM_LINE == 0 && sh->slice >= RCOLL__SHM_LINE);
        assert_true(sh->chunk <= RCOLL__SHM_CHUNK_MAX);
        assert_true(sh->size == 4096 + (size_t)p * sh->rank_stride);
        assert_true(sh->rank_stride % 4096 == 0);
        for (int r = 0; r < p; r++) {
            char *lo = rcoll__shm_region(sh, r), *hi = lo + sh->rank_stride;
            assert_true((uintptr_t)lo >= 4096);
            assert_ptr_equal(rcoll__shm_ctl(sh, r), lo);
            /* each flag on its own line */
            assert_true((char *)&rcoll__shm_ctl(sh, r)->in_ready - (char *)&rcoll__shm_ctl(sh, r)->done
                        == RCOLL__SHM_LINE);
            for (uint64_t k = 0; k < 2; k++) {
                char *seq = (char *)rcoll__shm_slot_seq(sh, r, k);
                assert_true((uintptr_t)seq % RCOLL__SHM_LINE == 0);
                assert_true(seq >= lo + sizeof(rcoll__shm_ctl_t));
                assert_true(rcoll__shm_slot_data(sh, r, k, sh->small_max) + sh->small_max <=
                            seq + sh->slot_stride);
                assert_true((uintptr_t)rcoll__shm_slot_data(sh, r, k, RCOLL__SHM_INLINE + 1) %
                            RCOLL__SHM_LINE == 0);
                assert_true(rcoll__shm_slot_data(sh, r, k, RCOLL__SHM_INLINE) + RCOLL__SHM_INLINE ==
                            seq + RCOLL__SHM_LINE);
            }
            for (uint64_t g = 0; g < (uint64_t)sh->nbuf; g++) {
                char *in = rcoll__shm_in(sh, r, g), *res = rcoll__shm_res(sh, r, g);
                assert_true((uintptr_t)in % RCOLL__SHM_LINE == 0 && (uintptr_t)res % RCOLL__SHM_LINE == 0);
                assert_true(in >= (char *)rcoll__shm_slot_seq(sh, r, 1) + sh->slot_stride);
                assert_true(res >= rcoll__shm_in(sh, r, (uint64_t)sh->nbuf - 1) + sh->chunk);
                assert_true(res + sh->slice <= hi);
            }
            assert_ptr_equal(rcoll__shm_in(sh, r, 0), rcoll__shm_in(sh, r, (uint64_t)sh->nbuf));
        }
        free(sh->fin);
        free(sh);
    }
}

/* The memory formula of docs/shm.md ("Memory") and its bound: at most
 * 64 MiB per communicator up to 256 ranks, the measured geometry unchanged
 * up to 8 ranks, and slots never smaller than the flat allreduce needs. */
static void test_memory_bound(void **state)
{
    (void)state;
    for (int p = 1; p <= 1024; p++) {
        rcoll_comm_t comm = { .size = p, .rank = 0 };
        rcoll__shm_t *sh = rcoll__shm_new(&comm);
        assert_non_null(sh);
        rcoll__shm_default_layout(sh);
        size_t slot = p <= 2 ? RCOLL__SHM_SMALL_PAIR : (size_t)(8u << 20) / (2 * (size_t)p) / 64 * 64;
        if (p > 2) {
            slot = slot > 65536 ? 65536 : slot < 4096 ? 4096 : slot;
        }
        size_t slice = 131072;
        slice = slice * (size_t)p > 524288 ? 524288 / (size_t)p : slice;
        if (slice * (size_t)p * (size_t)p * 4 > (48u << 20)) {
            slice = (48u << 20) / ((size_t)p * (size_t)p * 4);
        }
        slice = slice / 64 * 64 < 64 ? 64 : slice / 64 * 64;
        /* a bcast's ring: 4 L2 caches (1 MiB if not known), at most 8 MiB
         * and 24 MiB / p */
        size_t ring = 4 * (rcoll_l2_bytes() > 0 ? rcoll_l2_bytes() : (size_t)1 << 20);
        ring = ring > (8u << 20) ? (8u << 20) : ring;
        ring = ring > (24u << 20) / (size_t)p ? (24u << 20) / (size_t)p : ring;
        ring = ring / 64 * 64;
        size_t pipe = 4 * ((size_t)p + 1) * slice;
        pipe = pipe < ring ? ring : pipe;
        /* 4 flag lines, cma_read, slot_fill, bc_read, bc_call, the ident line */
        size_t stride = (576 + 2 * (64 + slot) + pipe + 4095) / 4096 * 4096;
        assert_int_equal(sh->small_max, slot);
        assert_int_equal(sh->slice, slice);
        assert_int_equal(sh->size, 4096 + (size_t)p * stride);
        if (p <= 8) {   /* the geometry measured in docs/shm.md */
            assert_int_equal(sh->small_max, p <= 2 ? RCOLL__SHM_SMALL_PAIR : RCOLL__SHM_SMALL);
            assert_int_equal(sh->slice, p <= 4 ? RCOLL__SHM_SLICE : RCOLL__SHM_CHUNK_MAX / (size_t)p / 64 * 64);
            assert_int_equal(sh->nbuf, RCOLL__SHM_NBUF);
        }
        if (p <= 256) {
            assert_true(sh->size <= ((size_t)64 << 20));
        }
        /* the largest flat allreduce fits the slot */
        size_t flat = p <= 2 ? RCOLL__SHM_SMALL_PAIR : RCOLL__SHM_FLAT_TOTAL / (size_t)p;
        flat = flat > RCOLL__SHM_SMALL ? RCOLL__SHM_SMALL : flat;
        assert_true(rcoll__shm_flat_fits(flat, p) && flat <= sh->small_max);
        free(sh->fin);
        free(sh);
    }
}

/* The bcast's ring: four L2 caches within its caps, whatever this
 * machine's L2 (rcoll__shm_bc_ring_bytes). */
static void test_bc_ring_bytes(void **state)
{
    (void)state;
    assert_int_equal(rcoll__shm_bc_ring_bytes(2, 0), 4u << 20);            /* L2 unknown: 1 MiB */
    assert_int_equal(rcoll__shm_bc_ring_bytes(2, 1u << 20), 4u << 20);
    assert_int_equal(rcoll__shm_bc_ring_bytes(2, 1280u << 10), 5u << 20);  /* 1.25 MiB L2 */
    assert_int_equal(rcoll__shm_bc_ring_bytes(2, 4u << 20), RCOLL__SHM_BC_RING_MAX);
    assert_int_equal(rcoll__shm_bc_ring_bytes(8, 1u << 20), 3u << 20);     /* 24 MiB / 8 */
    assert_int_equal(rcoll__shm_bc_ring_bytes(1000, 1u << 20), (24u << 20) / 1000 / 64 * 64);
    assert_int_equal(rcoll__shm_bc_ring_bytes(0, 1u << 20), 4u << 20);
}

/* A bcast's cut runs whole chunks over the whole pipeline area, the
 * others' over the input buffers; changing between them fences off every
 * earlier chunk, and each cut's pieces stay inside the area. */
static void test_bc_ring_cut(void **state)
{
    (void)state;
    rcoll_comm_t comm = { .size = 2, .rank = 0 };
    rcoll__shm_t *sh = rcoll__shm_new(&comm);
    assert_non_null(sh);
    size_t pipe_min = 10 * 8192 + 3 * RCOLL__SHM_LINE;
    rcoll__shm_layout(sh, 256, 4096, 4, pipe_min);   /* chunk 8 KiB, 4 x (8 + 4) KiB of buffers */
    size_t area = rcoll__shm_pipe_bytes(sh);
    assert_true(area >= pipe_min && area < pipe_min + 4096);
    sh->pipe_faulted[0] = 1;                   /* no segment: no fault-in */
    sh->chunk_next = 1;

    uint64_t g = rcoll__shm_pipe_start(sh, sh->chunk, 3, 0);     /* an allgather's cut */
    assert_int_equal(g, 1);
    assert_int_equal(sh->ring, 4);
    assert_int_equal(sh->fence, 0);
    g = rcoll__shm_pipe_start(sh, sh->chunk, 5, 1);              /* a large bcast's */
    assert_int_equal(g, 4);
    assert_int_equal(sh->ring, area / sh->chunk);
    assert_true(sh->ring > 4 && sh->ring * sh->chunk <= area);
    assert_int_equal(sh->fence, 3);
    assert_int_equal(sh->res_stride, 0);
    g = rcoll__shm_pipe_start(sh, sh->chunk, 2, 1);              /* the same cut: no fence */
    assert_int_equal(g, 9);
    assert_int_equal(sh->fence, 3);
    g = rcoll__shm_pipe_start(sh, 1024, 2, 0);                   /* a medium bcast's: over all */
    assert_int_equal(sh->ring, area / 1024);
    assert_int_equal(sh->fence, 10);
    g = rcoll__shm_pipe_start(sh, 2 * sh->chunk, 2, 0);          /* pair pieces */
    assert_int_equal(sh->ring, 2);
    assert_int_equal(sh->res_stride, 2 * sh->slice);
    assert_int_equal(sh->fence, 12);
    /* the last piece of every cut ends inside this rank's region */
    assert_true((size_t)(sh->ring - 1) * sh->piece + sh->piece <= area);
    free(sh->fin);
    free(sh);
}

/* A real segment: created and at once gone from /dev/shm, attached through
 * rank 0's descriptor (here this process's own), and a malformed or wrong
 * name refused without a crash. */
static void test_segment_unlinked(void **state)
{
    (void)state;
    static rcoll_context_t ctx;     /* an all-zero job secret: the shm token needs one */
    rcoll_comm_t comm = { .ctx = &ctx, .size = 3, .rank = 0 };
    rcoll__shm_t *sh0 = rcoll__shm_new(&comm);
    comm.rank = 1;
    rcoll__shm_t *sh1 = rcoll__shm_new(&comm);
    assert_non_null(sh0);
    assert_non_null(sh1);
    if (rcoll__shm_segment_create(&comm, sh0) != RCOLL_OK) {
        skip();     /* no /dev/shm here */
    }
    char path[64];
    unsigned long long token = 0;
    long pid = 0;
    int fd = -1;
    assert_int_equal(sscanf(sh0->name, "/proc/%ld/fd/%d %llx", &pid, &fd, &token), 3);
    assert_int_equal(pid, (long)getpid());
    snprintf(path, sizeof(path), "/rcoll-%ld-%016llx", pid, token);
    errno = 0;
    assert_true(shm_open(path, O_RDONLY, 0) < 0 && errno == ENOENT);    /* unlinked already */

    const char *bad[] = { "", "/proc/x", "/proc/1/fd/-3 0", "/proc/0/fd/3 1", "garbage 1 2" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(sh1->name, sizeof(sh1->name), "%s", bad[i]);
        assert_int_not_equal(rcoll__shm_segment_attach(&comm, sh1), RCOLL_OK);
        assert_null(sh1->base);
    }
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    snprintf(sh1->name, sizeof(sh1->name), "/proc/%ld/fd/%d %llx", pid, pfd[0], token);
    assert_int_not_equal(rcoll__shm_segment_attach(&comm, sh1), RCOLL_OK);   /* not a file */
    assert_null(sh1->base);
    close(pfd[0]);
    close(pfd[1]);
    snprintf(sh1->name, sizeof(sh1->name), "/proc/%ld/fd/%d %llx", pid, fd, token ^ 1);
    assert_int_not_equal(rcoll__shm_segment_attach(&comm, sh1), RCOLL_OK);   /* wrong token */
    assert_null(sh1->base);
    memcpy(sh1->name, sh0->name, sizeof(sh1->name));
    assert_int_equal(rcoll__shm_segment_attach(&comm, sh1), RCOLL_OK);
    assert_int_equal(sh1->size, sh0->size);
    assert_int_equal(sh1->slice, sh0->slice);
    *(volatile char *)rcoll__shm_region(sh0, 2) = 42;          /* one memory */
    assert_int_equal(*(volatile char *)rcoll__shm_region(sh1, 2), 42);
    rcoll__shm_segment_close_fd(sh0);
    assert_int_equal(sh0->fd, -1);
    rcoll__shm_segment_drop(sh1);
    rcoll__shm_segment_drop(sh0);
    free(sh0->fin);
    free(sh0);
    free(sh1->fin);
    free(sh1);
}

static void test_cost(void **state)
{
    (void)state;
    rcoll_model_t m = *rcoll_selector_model();
    const rcoll_alg_t *a;
    size_t sizes[] = { 1, 8, 4096, 1 << 16, 1 << 22 };   /* count 0 never reaches the selector */

    assert_int_equal(m.shm, 1);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int p = 2; p <= 64; p *= 2) {
            /* one node: shm wins every collective it has */
            a = rcoll_select_by_cost(RCOLL_COLL_ALLREDUCE, &m, sizes[i], p, p);
            assert_string_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_BCAST, &m, sizes[i], p, p);
            assert_string_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_BARRIER, &m, 0, p, p);
            assert_string_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_REDUCE, &m, sizes[i], p, p);
            assert_string_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_ALLGATHER, &m, sizes[i], p, p);
            assert_string_equal(a->name, "shm");
            /* two nodes: never */
            assert_true(isinf(rcoll_allreduce_shm.cost(&m, sizes[i], p, p / 2)));
            a = rcoll_select_by_cost(RCOLL_COLL_ALLREDUCE, &m, sizes[i], p, p / 2);
            assert_string_not_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_BCAST, &m, sizes[i], p, p / 2);
            assert_string_not_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_REDUCE, &m, sizes[i], p, p / 2);
            assert_string_not_equal(a->name, "shm");
            a = rcoll_select_by_cost(RCOLL_COLL_ALLGATHER, &m, sizes[i], p, p / 2);
            assert_string_not_equal(a->name, "shm");
        }
    }
    m.shm = 0;     /* RCOLL_SHM=0 */
    assert_true(isinf(rcoll_bcast_shm.cost(&m, 8, 4, 4)));
    a = rcoll_select_by_cost(RCOLL_COLL_BARRIER, &m, 0, 4, 4);
    assert_string_not_equal(a->name, "shm");
}

/* Forced on a communicator that is not all on one node: a clean
 * RCOLL_ERR_NOT_SUPPORTED, nothing set up. */
static void test_not_supported(void **state)
{
    (void)state;
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    rcoll_comm_t comm = { .ctx = ctx, .size = 4, .rank = 1, .local_size = 2, .id = 7 };
    rcoll_task_t *t = alloc_aligned(64, sizeof(*t));
    int wr[4] = { 0, 1, 2, 3 };
    const rcoll_alg_t *algs[] = { &rcoll_allreduce_shm, &rcoll_bcast_shm, &rcoll_barrier_shm,
                                  &rcoll_reduce_shm, &rcoll_allgather_shm };

    assert_true(ctx && t);
    comm.world_ranks = wr;
    ctx->config.shm = 1;
    for (int i = 0; i < 5; i++) {
        memset(t, 0, sizeof(*t));
        t->ctx = ctx;
        t->comm = &comm;
        t->args.type = algs[i]->coll;
        t->args.count = 1;
        t->args.dtype = RCOLL_INT32;
        assert_int_equal(algs[i]->progress(t), RCOLL_ERR_NOT_SUPPORTED);
        assert_null(rcoll_coll_comm(&comm)->shm);
    }
    free(t);
    rcoll_selector_fini(ctx);      /* its caches: the selection ran on this context */
    free(ctx);
}

/* The ranks agreed at the first shm collective that there is no segment
 * (e.g. /dev/shm full), on a communicator whose creation did not agree
 * (create_group, node sub-communicators): forced to shm, every collective
 * fails with the cause; chosen by the selector, each switches to a
 * point-to-point algorithm of its collective before it runs, the
 * communicator stops offering shm and stays without a segment. */
static void test_no_segment(void **state)
{
    (void)state;
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    rcoll_comm_t comm = { .ctx = ctx, .size = 2, .rank = 1, .local_size = 2, .id = 9,
                          .shm_usable = 1 };
    rcoll_task_t *t = alloc_aligned(64, sizeof(*t));
    int wr[2] = { 0, 1 };
    const rcoll_alg_t *algs[] = { &rcoll_allreduce_shm, &rcoll_bcast_shm, &rcoll_barrier_shm,
                                  &rcoll_reduce_shm, &rcoll_allgather_shm };

    assert_true(ctx && t);
    comm.world_ranks = wr;
    rcoll_coll_comm(&comm)->shm = rcoll__shm_new(&comm);
    assert_non_null(rcoll_coll_comm(&comm)->shm);
    rcoll__shm_t *sh = rcoll_coll_comm(&comm)->shm;
    sh->state = RCOLL__SHM_UNAVAILABLE;
    snprintf(sh->why, sizeof(sh->why), "cannot reserve its bytes in /dev/shm");
    sh->why_status = RCOLL_ERR_NO_MEMORY;
    for (int forced = 1; forced >= 0; forced--) {
        const char *name = forced ? "shm" : "";
        snprintf(ctx->config.allreduce_alg, sizeof(ctx->config.allreduce_alg), "%s", name);
        snprintf(ctx->config.bcast_alg, sizeof(ctx->config.bcast_alg), "%s", name);
        snprintf(ctx->config.barrier_alg, sizeof(ctx->config.barrier_alg), "%s", name);
        snprintf(ctx->config.reduce_alg, sizeof(ctx->config.reduce_alg), "%s", name);
        snprintf(ctx->config.allgather_alg, sizeof(ctx->config.allgather_alg), "%s", name);
        ctx->config.gen++;                              /* the selector's cache */
        for (int i = 0; i < 5; i++) {
            memset(t, 0, sizeof(*t));
            t->ctx = ctx;
            t->comm = &comm;
            t->alg = algs[i];
            t->args.type = algs[i]->coll;
            t->args.count = 1;
            t->args.dtype = RCOLL_INT32;
            t->args.op = RCOLL_SUM;
            if (forced) {
                assert_int_equal(algs[i]->progress(t), RCOLL_ERR_NO_MEMORY);
                assert_ptr_equal(t->alg, algs[i]);
            } else {
                assert_int_equal(algs[i]->progress(t), RCOLL_INPROGRESS);
                assert_ptr_not_equal(t->alg, algs[i]);
                assert_int_equal(t->alg->coll, algs[i]->coll);
                assert_string_not_equal(t->alg->name, "shm");
                assert_int_equal(t->phase, 0);
                assert_int_equal(comm.shm_usable, 0);
            }
            assert_int_equal(sh->state, RCOLL__SHM_UNAVAILABLE);
        }
    }
    rcoll__shm_free(&comm);
    assert_null(rcoll_coll_comm(&comm)->shm);
    free(t);
    rcoll_selector_fini(ctx);      /* its caches: the selection ran on this context */
    free(ctx);
}

/* The set-up at creation (rcoll__shm_agree_alg): an agreed "no segment" is
 * its answer, not an error, and makes rcoll__shm_agreed 0 on every rank;
 * the turn it took passes on. */
static void test_agree_outcome(void **state)
{
    (void)state;
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    rcoll_task_t *t = alloc_aligned(64, sizeof(*t));
    int wr[2] = { 0, 1 };

    assert_true(ctx && t);
    for (int rank = 0; rank < 2; rank++) {
        rcoll_comm_t comm = { .ctx = ctx, .size = 2, .rank = rank, .local_size = 2, .id = 11,
                              .shm_usable = 1, .world_ranks = wr };
        rcoll__shm_t *sh = rcoll_coll_comm(&comm)->shm = rcoll__shm_new(&comm);
        assert_non_null(sh);
        sh->state = RCOLL__SHM_UNAVAILABLE;       /* the verdict the set-up reached */
        snprintf(sh->why, sizeof(sh->why), "cannot reserve its bytes in /dev/shm");
        sh->why_status = RCOLL_ERR_NO_MEMORY;
        memset(t, 0, sizeof(*t));
        t->ctx = ctx;
        t->comm = &comm;
        t->alg = &rcoll__shm_agree_alg;
        t->args.type = RCOLL_COLL_BARRIER;
        assert_int_equal(rcoll__shm_agree_alg.progress(t), RCOLL_OK);
        assert_int_equal(sh->completed, 1);      /* its turn (k = 1) is over */
        assert_int_equal(rcoll__shm_agreed(&comm), 0);
        sh->state = RCOLL__SHM_READY;
        assert_int_equal(rcoll__shm_agreed(&comm), 1);
        rcoll__shm_free(&comm);
    }
    free(t);
    free(ctx);
}

/* rcoll__shm_copy_two writes both destinations exactly like two memcpys,
 * for either store kind into the first, every alignment of the three
 * buffers and lengths around its 128-byte loop, its 512-byte minimum and
 * the streamed head; nothing outside either destination. */
static void test_copy_two(void **state)
{
    (void)state;
    enum { GUARD = 128, MAXLEN = 70000, SPAN = MAXLEN + 2 * GUARD + 64 };
    static const size_t lens[] = { 0, 1, 63, 127, 128, 129, 511, 512, 513, 575, 640, 641,
                                   1000, 4096 + 17, 65536 + 5, MAXLEN };
    unsigned char *src = malloc(MAXLEN + 64), *a = malloc(SPAN), *b = malloc(SPAN);
    assert_non_null(src);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < MAXLEN + 64; i++) {
        src[i] = (unsigned char)(i * 151 + 3);
    }
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        size_t step = lens[l] > 4096 ? 13 : 3;
        for (size_t aoff = 0; aoff < 64; aoff += step) {
            for (size_t boff = 0; boff < 64; boff += 2 * step + 1) {
                for (int stream = 0; stream < 2; stream++) {
                    size_t soff = (aoff + boff + (size_t)stream) % 16, len = lens[l];
                    memset(a, 0xAA, SPAN);
                    memset(b, 0x55, SPAN);
                    rcoll__shm_copy_two(a + GUARD + aoff, b + GUARD + boff, src + soff, len, stream);
                    if (len > 0) {
                        assert_memory_equal(a + GUARD + aoff, src + soff, len);
                        assert_memory_equal(b + GUARD + boff, src + soff, len);
                    }
                    for (size_t i = 0; i < SPAN; i++) {
                        if (i < GUARD + aoff || i >= GUARD + aoff + len) {
                            assert_int_equal(a[i], 0xAA);
                        }
                        if (i < GUARD + boff || i >= GUARD + boff + len) {
                            assert_int_equal(b[i], 0x55);
                        }
                    }
                }
            }
        }
    }
    free(src);
    free(a);
    free(b);
}

/* rcoll__shm_copy_stream copies exactly like memcpy for every alignment of
 * source and destination and every length around the line and head/tail
 * splits, and writes nothing outside the destination. */
static void test_copy_stream(void **state)
{
    (void)state;
    enum { GUARD = 256, MAXLEN = 70000 };
    static const size_t lens[] = { 0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255,
                                   1000, 4096 + 17, 65536 + 5, MAXLEN };
    unsigned char *src = malloc(MAXLEN + 64), *dst = malloc(MAXLEN + 2 * GUARD + 64);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < MAXLEN + 64; i++) {
        src[i] = (unsigned char)(i * 131 + 7);
    }
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        for (size_t doff = 0; doff < 64; doff += (lens[l] > 4096 ? 7 : 1)) {
            for (size_t soff = 0; soff < 16; soff += 5) {
                unsigned char *d = dst + GUARD + doff;
                memset(dst, 0xAA, MAXLEN + 2 * GUARD + 64);
                rcoll__shm_copy_stream(d, src + soff, lens[l]);
                if (lens[l] > 0) {
                    assert_memory_equal(d, src + soff, lens[l]);
                }
                for (size_t i = 0; i < GUARD + doff; i++) {
                    assert_int_equal(dst[i], 0xAA);
                }
                for (size_t i = GUARD + doff + lens[l]; i < MAXLEN + 2 * GUARD + 64; i++) {
                    assert_int_equal(dst[i], 0xAA);
                }
            }
        }
    }
    /* copy_out takes memcpy below the threshold, the stream from it on */
    memset(dst, 0, 256);
    rcoll__shm_copy_out(SIZE_MAX, dst, src, 200, 1 << 30);
    assert_memory_equal(dst, src, 200);
    rcoll__shm_copy_out(0, dst + 1, src + 3, 200, 0);
    assert_memory_equal(dst + 1, src + 3, 200);
    free(src);
    free(dst);
}

/* RCOLL_SHM_STREAM_MIN: auto (half the L2), off, or a size; anything else
 * is refused naming the words it takes. */
static void test_stream_min_setting(void **state)
{
    (void)state;
    rcoll_config_t cfg;
    char buf[64];
    const rcoll_config_entry_t *e = rcoll_config_find("SHM_STREAM_MIN");
    assert_non_null(e);
    unsetenv("RCOLL_SHM_STREAM_MIN");
    assert_int_equal(rcoll_config_load(NULL, &cfg), RCOLL_OK);
    assert_true(cfg.shm_stream_min == RCOLL_CONFIG_SIZE_AUTO);
    assert_true(rcoll__shm_stream_min(&cfg) == rcoll_stream_min_auto());
    assert_true(rcoll_stream_min_auto() >= 4096);
    rcoll_config_format(&cfg, e, buf, sizeof(buf));
    assert_string_equal(buf, "auto");

    const char *const off[] = { "SHM_STREAM_MIN=off", NULL };
    assert_int_equal(rcoll_config_load(off, &cfg), RCOLL_OK);
    assert_true(rcoll__shm_stream_min(&cfg) == SIZE_MAX);
    rcoll_config_format(&cfg, e, buf, sizeof(buf));
    assert_string_equal(buf, "off");

    const char *const size[] = { "SHM_STREAM_MIN=2m", NULL };
    assert_int_equal(rcoll_config_load(size, &cfg), RCOLL_OK);
    assert_true(rcoll__shm_stream_min(&cfg) == 2u * 1024 * 1024);

    char err[256];
    assert_int_equal(rcoll_config_entry_set(&cfg, e, "sometimes", err, sizeof(err)),
                     RCOLL_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "auto|off"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_limits),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_memory_bound),
        cmocka_unit_test(test_bc_ring_bytes),
        cmocka_unit_test(test_bc_ring_cut),
        cmocka_unit_test(test_segment_unlinked),
        cmocka_unit_test(test_cost),
        cmocka_unit_test(test_not_supported),
        cmocka_unit_test(test_no_segment),
        cmocka_unit_test(test_agree_outcome),
        cmocka_unit_test(test_interleavings),
        cmocka_unit_test(test_interleavings_cma),
        cmocka_unit_test(test_interleavings_adapt),
        cmocka_unit_test(test_adapt_estimates),
        cmocka_unit_test(test_adapt_first_calls),
        cmocka_unit_test(test_adapt_horizon),
        cmocka_unit_test(test_adapt_switch_twice),
        cmocka_unit_test(test_paths_disagree),
        cmocka_unit_test(test_adapt_mixed_sizes),
        cmocka_unit_test(test_store_choice),
        cmocka_unit_test(test_agstore_choice),
        cmocka_unit_test(test_rstore_choice),
        cmocka_unit_test(test_store_jump),
        cmocka_unit_test(test_rsstore_choice),
        cmocka_unit_test(test_bcast_store_choice),
        cmocka_unit_test(test_bcast_store_in_path_tries),
        cmocka_unit_test(test_bcast_path_choice),
        cmocka_unit_test(test_reduce_path_choice),
        cmocka_unit_test(test_reduce_scatter_path_choice),
        cmocka_unit_test(test_cma_read_errors),
        cmocka_unit_test(test_cma_write_errors),
        cmocka_unit_test(test_cma_oversubscribed),
        cmocka_unit_test(test_cma_split_descriptor),
        cmocka_unit_test(test_reduce_slices),
        cmocka_unit_test(test_split_balance),
        cmocka_unit_test(test_copy_stream),
        cmocka_unit_test(test_copy_two),
        cmocka_unit_test(test_stream_min_setting),
    };
    rcoll_log_set_level(RCOLL_LOG_ERROR);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
