/*
 * test_coll_sim.c - runs the bcast, allgather and barrier algorithms on p
 * simulated ranks in one process over the shared simulator harness
 * (sim_harness.h: random delivery order, eager and rendezvous modes, checks
 * of lengths, (peer, step) uniqueness, op limits, untouched send buffers and
 * scratch bounds).  Results are compared byte for byte with expectations
 * computed locally; the barrier is checked to release no rank before the
 * last one has entered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim_harness.h"

#define MAXP    17

extern const rcoll_alg_t *const rcoll_bcast_algs[];
extern const rcoll_alg_t *const rcoll_allgather_algs[];
extern const rcoll_alg_t *const rcoll_barrier_algs[];

/* The shared-memory algorithms need real processes sharing a segment; the
 * integration tests run them.  Here they are placeholders that are skipped. */
const rcoll_alg_t rcoll_bcast_shm = { .name = "shm", .coll = RCOLL_COLL_BCAST };
const rcoll_alg_t rcoll_barrier_shm = { .name = "shm", .coll = RCOLL_COLL_BARRIER };
const rcoll_alg_t rcoll_allgather_shm = { .name = "shm", .coll = RCOLL_COLL_ALLGATHER };
/* So are the node-aware ones: they post collectives on sub-communicators,
 * which the simulator does not have (the --nodes integration runs test them). */
const rcoll_alg_t rcoll_bcast_node_aware = { .name = "node_aware", .coll = RCOLL_COLL_BCAST };
const rcoll_alg_t rcoll_allgather_node_aware = { .name = "node_aware", .coll = RCOLL_COLL_ALLGATHER };
const rcoll_alg_t rcoll_barrier_node_aware = { .name = "node_aware", .coll = RCOLL_COLL_BARRIER };
#define SIMULATED(_a) ((_a)->progress != NULL)

static unsigned char pattern(int rank, size_t i)
{
    return (unsigned char)((i * 131u + (size_t)rank * 7u + 1u) & 0xff);
}

/* ---- bcast ---- */

static void run_bcast(const rcoll_alg_t *alg, int p, int root, size_t count,
                      rcoll_datatype_t dtype, size_t segment, int rndv, unsigned seed)
{
    size_t n = count * rcoll_datatype_size(dtype);
    rcoll_coll_args_t args[MAXP];
    unsigned char *buf[MAXP];
    sim_result_t res;

    memset(args, 0, sizeof(args));

    for (int r = 0; r < p; r++) {
        buf[r] = malloc(n);
        assert_non_null(buf[r]);
        for (size_t i = 0; i < n; i++)
            buf[r][i] = r == root ? pattern(root, i) : 0xEE;
        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BCAST, .sendbuf = buf[r],
                                       .recvbuf = buf[r], .count = count, .dtype = dtype,
                                       .root = root, .in_place = 1 };
    }
    sim_config_t cfg = { .p = p, .rndv = rndv, .seed = seed, .segment_size = segment };
    if (sim_run(&cfg, alg, args, &res) != 0)
        fail_msg("bcast %s p=%d root=%d count=%zu seg=%zu %s: %s", alg->name, p, root, count,
                 segment, rndv ? "rndv" : "eager", res.failure);
    for (int r = 0; r < p; r++) {
        for (size_t i = 0; i < n; i++)
            if (buf[r][i] != pattern(root, i))
                fail_msg("bcast %s p=%d root=%d count=%zu seg=%zu: rank %d byte %zu is %u, "
                         "expected %u", alg->name, p, root, count, segment, r, i, buf[r][i],
                         pattern(root, i));
        free(buf[r]);
    }
}

static void test_bcast(void **state)
{
    const size_t counts[] = { 1, 2, 3, 7, 16, 17, 1023, 4099 };
    const size_t segs[] = { 0, 1, 5, 64, 1000 };
    unsigned seed = 1;

    for (const rcoll_alg_t *const *a = rcoll_bcast_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (int root = 0; root < p; root++)
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                    size_t seg = segs[(seed / 2) % (sizeof(segs) / sizeof(segs[0]))];
                    if (seg && counts[c] / seg > 100)   /* keeps the op table small */
                        seg = counts[c] / 100 + 1;
                    run_bcast(*a, p, root, counts[c], RCOLL_UINT8, seg, (int)(seed & 1), seed);
                    seed++;
                }
}

/* count < p (empty scatter blocks), wide types, every segment size */
static void test_bcast_edges(void **state)
{
    unsigned seed = 99;
    for (const rcoll_alg_t *const *a = rcoll_bcast_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 2; p <= MAXP; p += 3)
            for (size_t count = 1; count <= (size_t)p + 1; count++)
                for (int rndv = 0; rndv < 2; rndv++) {
                    run_bcast(*a, p, (int)(count % (size_t)p), count, RCOLL_FLOAT64,
                              (size_t)(count % 3) * 8, rndv, seed++);
                    run_bcast(*a, p, p - 1, count, RCOLL_UINT8, 1, rndv, seed++);
                }
}

/* ---- allgather ---- */

static void run_allgather(const rcoll_alg_t *alg, int p, size_t count, rcoll_datatype_t dtype,
                          int in_place, int rndv, unsigned seed)
{
    size_t blk = count * rcoll_datatype_size(dtype);
    rcoll_coll_args_t args[MAXP];
    unsigned char *send[MAXP], *recv[MAXP];
    sim_result_t res;

    memset(args, 0, sizeof(args));

    for (int r = 0; r < p; r++) {
        send[r] = malloc(blk);
        recv[r] = malloc(blk * (size_t)p);
        assert_true(send[r] && recv[r]);
        memset(recv[r], 0xEE, blk * (size_t)p);
        for (size_t i = 0; i < blk; i++) {
            send[r][i] = pattern(r, i);
            if (in_place)
                recv[r][(size_t)r * blk + i] = pattern(r, i);
        }
        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_ALLGATHER,
                                       .sendbuf = in_place ? recv[r] : send[r],
                                       .recvbuf = recv[r], .count = count, .dtype = dtype,
                                       .in_place = in_place };
    }
    sim_config_t cfg = { .p = p, .rndv = rndv, .seed = seed };
    if (sim_run(&cfg, alg, args, &res) != 0)
        fail_msg("allgather %s p=%d count=%zu %s %s: %s", alg->name, p, count,
                 in_place ? "in place" : "", rndv ? "rndv" : "eager", res.failure);
    for (int r = 0; r < p; r++) {
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < blk; i++)
                if (recv[r][(size_t)j * blk + i] != pattern(j, i))
                    fail_msg("allgather %s p=%d count=%zu%s: rank %d block %d byte %zu is %u, "
                             "expected %u", alg->name, p, count, in_place ? " in place" : "", r,
                             j, i, recv[r][(size_t)j * blk + i], pattern(j, i));
        for (size_t i = 0; i < blk; i++)
            if (send[r][i] != pattern(r, i))
                fail_msg("allgather %s: rank %d's send buffer was modified", alg->name, r);
        free(send[r]);
        free(recv[r]);
    }
}

static void test_allgather(void **state)
{
    const size_t counts[] = { 1, 3, 100, 1025 };
    unsigned seed = 7;

    for (const rcoll_alg_t *const *a = rcoll_allgather_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int in_place = 0; in_place < 2; in_place++)
                    for (int rndv = 0; rndv < 2; rndv++) {
                        run_allgather(*a, p, counts[c], c % 2 ? RCOLL_INT32 : RCOLL_UINT8,
                                      in_place, rndv, seed);
                        seed++;
                    }
}

/* ---- barrier ---- */

static void test_barrier(void **state)
{
    unsigned seed = 3;
    for (const rcoll_alg_t *const *a = rcoll_barrier_algs; *a; a++)
        if (SIMULATED(*a))
        for (int p = 1; p <= MAXP; p++)
            for (int late = 0; late < p; late++)
                for (int rndv = 0; rndv < 2; rndv++) {
                    rcoll_coll_args_t args[MAXP];
                    int start[MAXP];
                    sim_result_t res;
                    for (int r = 0; r < p; r++) {
                        args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BARRIER };
                        start[r] = r == late ? 40 : (int)(r % 3);
                    }
                    sim_config_t cfg = { .p = p, .rndv = rndv, .seed = seed++,
                                         .start_sweep = start };
                    if (sim_run(&cfg, *a, args, &res) != 0)
                        fail_msg("barrier %s p=%d late rank %d: %s", (*a)->name, p, late,
                                 res.failure);
                    if (res.first_done < res.last_start)
                        fail_msg("barrier %s p=%d: a rank left at sweep %ld before rank %d "
                                 "entered at sweep %ld", (*a)->name, p, res.first_done, late,
                                 res.last_start);
                }
}

/* ---- the harness catches what it promises to ---- */

/* Broken algorithms on two ranks, one per check; phase 0 posts, phase 1 waits. */
static char bad_buf[2][64];

static rcoll_status_t bad_progress(rcoll_task_t *task, int what)
{
    int me = rcoll_task_rank(task), peer = 1 - me;
    rcoll_status_t st;
    if (task->phase == 0) {
        task->phase = 1;
        size_t rlen = what == 1 && me == 1 ? 8 : 16;      /* 1: length mismatch */
        st = rcoll_task_recv(task, peer, 0, bad_buf[me] + 32, rlen);
        if (st == RCOLL_OK && what != 3) {                 /* 3: a send nobody receives... */
            st = rcoll_task_send(task, peer, 0, bad_buf[me], 16);
        } else if (st == RCOLL_OK) {
            st = rcoll_task_send(task, peer, 7, bad_buf[me], 16);
        }
        if (st == RCOLL_OK && what == 2) {                 /* 2: (peer, step) reused */
            st = rcoll_task_send(task, peer, 0, bad_buf[me], 16);
        }
        if (what == 4) {                                   /* 4: send buffer changed in flight */
            bad_buf[me][0] ^= 1;
        }
        if (what == 5) {                                   /* 5: scratch overrun */
            ((char *)rcoll_task_scratch(task, 10))[10] = 1;
        }
        if (st != RCOLL_OK) {
            return st;
        }
    }
    return rcoll_task_test(task);
}

#define BAD_ALG(_n) \
    static rcoll_status_t bad_progress_##_n(rcoll_task_t *t) { return bad_progress(t, _n); } \
    static const rcoll_alg_t bad_alg_##_n = { .name = "bad" #_n, .progress = bad_progress_##_n }
BAD_ALG(0);
BAD_ALG(1);
BAD_ALG(2);
BAD_ALG(3);
BAD_ALG(4);
BAD_ALG(5);

static void test_harness_checks(void **state)
{
    static const struct { const rcoll_alg_t *alg; const char *expect; } cases[] = {
        { &bad_alg_0, NULL },
        { &bad_alg_1, "send of 16 bytes, receive of 8" },
        { &bad_alg_2, "second send" },
        { &bad_alg_3, "deadlock" },
        { &bad_alg_4, "changed while in flight" },
        { &bad_alg_5, "past the end of its scratch" },
    };
    rcoll_coll_args_t args[2] = { { .type = RCOLL_COLL_BARRIER }, { .type = RCOLL_COLL_BARRIER } };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sim_config_t cfg = { .p = 2, .rndv = 1, .seed = (unsigned)i + 1 };
        sim_result_t res;
        int rc = sim_run(&cfg, cases[i].alg, args, &res);
        if (cases[i].expect == NULL && rc != 0)
            fail_msg("%s: %s", cases[i].alg->name, res.failure);
        if (cases[i].expect != NULL && (rc == 0 || strstr(res.failure, cases[i].expect) == NULL))
            fail_msg("%s: expected a failure saying '%s', got %s", cases[i].alg->name,
                     cases[i].expect, rc == 0 ? "success" : res.failure);
    }
}

/* The harness scales with p: the barrier and a bcast on 1000 and 1024 ranks. */
static void test_large(void **state)
{
    const int ps[] = { 1000, 1024 };
    for (size_t k = 0; k < 2; k++) {
        int p = ps[k];
        rcoll_coll_args_t *args = calloc((size_t)p, sizeof(*args));
        unsigned char *buf = calloc((size_t)p, 8);
        sim_result_t res;
        for (const rcoll_alg_t *const *a = rcoll_barrier_algs; *a; a++) {
            if (!SIMULATED(*a))
                continue;
            for (int r = 0; r < p; r++)
                args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BARRIER };
            sim_config_t cfg = { .p = p, .rndv = 1, .seed = 5 };
            if (sim_run(&cfg, *a, args, &res) != 0)
                fail_msg("barrier %s p=%d: %s", (*a)->name, p, res.failure);
        }
        for (const rcoll_alg_t *const *a = rcoll_bcast_algs; *a; a++) {
            if (!SIMULATED(*a))
                continue;
            for (int r = 0; r < p; r++) {
                memset(buf + (size_t)r * 8, r == 3 ? 0x42 : 0, 8);
                args[r] = (rcoll_coll_args_t){ .type = RCOLL_COLL_BCAST, .sendbuf = buf + r * 8,
                                               .recvbuf = buf + r * 8, .count = 8,
                                               .dtype = RCOLL_UINT8, .root = 3, .in_place = 1 };
            }
            sim_config_t cfg = { .p = p, .rndv = (int)k, .seed = 6 };
            if (sim_run(&cfg, *a, args, &res) != 0)
                fail_msg("bcast %s p=%d: %s", (*a)->name, p, res.failure);
            if (res.messages < p - 1)
                fail_msg("bcast %s p=%d: only %ld messages", (*a)->name, p, res.messages);
            for (size_t i = 0; i < (size_t)p * 8; i++)
                if (buf[i] != 0x42)
                    fail_msg("bcast %s p=%d: rank %zu byte %zu is %u", (*a)->name, p, i / 8,
                             i % 8, buf[i]);
        }
        free(args);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bcast),
        cmocka_unit_test(test_bcast_edges),
        cmocka_unit_test(test_allgather),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_harness_checks),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
