/*
 * test_comm.c - communicators without a launcher: the id scheme (unique
 * however creations interleave, never a creation key), the creation-time
 * shm property, and rcoll_comm_create_group's argument checks and
 * one-rank groups on a singleton context.  Multi-rank creations are in
 * test/integration/group_check.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core.h"

extern char **environ;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void assert_distinct(uint64_t *ids, size_t n)
{
    qsort(ids, n, sizeof(*ids), cmp_u64);
    for (size_t i = 1; i < n; i++) {
        assert_true(ids[i - 1] != ids[i]);
    }
}

/* Distinct (world rank, serial) pairs give distinct ids, none of them the
 * world's (1) and all valid; creation keys are never valid ids. */
static void test_id_scheme(void **state)
{
    (void)state;
    enum { R = 70, S = 70 };
    static uint64_t ids[R * S + 4];
    size_t n = 0;
    for (int wr = 0; wr < R; wr++) {
        for (uint32_t s = 0; s < S; s++) {
            ids[n++] = rcoll__comm_id_make(wr, s);
        }
    }
    ids[n++] = rcoll__comm_id_make(0, UINT32_MAX);
    ids[n++] = rcoll__comm_id_make(1, UINT32_MAX);
    ids[n++] = rcoll__comm_id_make(INT32_MAX - 1, 0);
    ids[n++] = rcoll__comm_id_make(INT32_MAX - 1, UINT32_MAX);
    for (size_t i = 0; i < n; i++) {
        assert_true(rcoll__comm_id_valid(ids[i]));
        assert_true(ids[i] != 1);
    }
    assert_distinct(ids, n);
    assert_false(rcoll__comm_id_valid(0));
    assert_false(rcoll__comm_id_valid(1));
}

/* A creation's key tells apart parent, tag, the group's members and their
 * order, and is never a communicator id. */
static void test_group_keys(void **state)
{
    (void)state;
    const int a[] = { 0, 1, 2 }, b[] = { 1, 2, 3 }, c[] = { 2, 1, 0 }, d[] = { 0, 1 };
    uint64_t keys[] = {
        rcoll__comm_group_key(1, 1, a, 3), rcoll__comm_group_key(1, 2, a, 3),
        rcoll__comm_group_key(1, 1, b, 3), rcoll__comm_group_key(1, 2, b, 3),
        rcoll__comm_group_key(1, 1, c, 3), rcoll__comm_group_key(1, 1, d, 2),
        rcoll__comm_group_key(rcoll__comm_id_make(0, 0), 1, a, 3),
        rcoll__comm_group_key(1, -1, a, 3), rcoll__comm_group_key(1, 1, a, 1),
    };
    size_t n = sizeof(keys) / sizeof(keys[0]);
    assert_int_equal(rcoll__comm_group_key(1, 1, a, 3), keys[0]);    /* a pure function */
    for (size_t i = 0; i < n; i++) {
        assert_false(rcoll__comm_id_valid(keys[i]));
    }
    assert_distinct(keys, n);
}

static void unset_launch_env(void)
{
    static const char *const vars[] = { "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
                                        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                                        "MPI_LOCALNRANKS", "RCOLL_SHM", NULL };
    for (int k = 0; vars[k]; k++) {
        unsetenv(vars[k]);
    }
    for (int again = 1; again;) {       /* every PMIX_* variable */
        again = 0;
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "PMIX_", 5) == 0) {
                char name[256];
                size_t len = strcspn(*e, "=");
                len = len < sizeof(name) - 1 ? len : sizeof(name) - 1;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

/* split, dup and rcoll_comm_create_group, interleaved and nested, freed and
 * made again: every id differs from every other ever made (serials are
 * never reused). */
static void test_singleton_ids(void **state)
{
    (void)state;
    enum { ROUNDS = 40 };
    static uint64_t ids[ROUNDS * 4 + 1];
    size_t n = 0;
    rcoll_context_t *ctx;
    const int zero = 0;

    unset_launch_env();
    assert_int_equal(rcoll_init(NULL, &ctx), RCOLL_OK);
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    ids[n++] = world->id;
    for (int i = 0; i < ROUNDS; i++) {
        rcoll_comm_t *s, *d, *g, *gg;
        assert_int_equal(rcoll_comm_split(world, i, 0, &s), RCOLL_OK);
        assert_int_equal(rcoll_comm_create_group(i & 1 ? s : world, &zero, 1, i, &g), RCOLL_OK);
        assert_int_equal(rcoll_comm_dup(g, &d), RCOLL_OK);
        assert_int_equal(rcoll_comm_create_group(g, &zero, 1, 7, &gg), RCOLL_OK);   /* nested */
        assert_int_equal(rcoll_comm_size(gg), 1);
        assert_int_equal(rcoll_comm_rank(gg), 0);
        int one = 1, out = 0;
        assert_int_equal(rcoll_allreduce(&one, &out, 1, RCOLL_INT32, RCOLL_SUM, gg), RCOLL_OK);
        assert_int_equal(out, 1);
        ids[n++] = s->id;
        ids[n++] = g->id;
        ids[n++] = d->id;
        ids[n++] = gg->id;
        assert_int_equal(rcoll_comm_free(gg), RCOLL_OK);
        assert_int_equal(rcoll_comm_free(d), RCOLL_OK);
        assert_int_equal(rcoll_comm_free(g), RCOLL_OK);
        assert_int_equal(rcoll_comm_free(s), RCOLL_OK);
    }
    for (size_t i = 1; i < n; i++) {
        assert_true(rcoll__comm_id_valid(ids[i]));
    }
    assert_distinct(ids, n);
    assert_int_equal(rcoll_finalize(ctx), RCOLL_OK);
}

/* Bad arguments: RCOLL_ERR_INVALID_ARG, *newcomm untouched, nothing made. */
static void test_create_group_invalid(void **state)
{
    (void)state;
    rcoll_context_t *ctx;
    rcoll_comm_t *const sentinel = (rcoll_comm_t *)(uintptr_t)0x5eed;
    rcoll_comm_t *out = sentinel;
    const int zero = 0, one = 1, minus = -1, two[] = { 0, 0 };

    unset_launch_env();
    assert_int_equal(rcoll_init(NULL, &ctx), RCOLL_OK);
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int ncomms = ctx->ncomms;
    assert_int_equal(rcoll_comm_create_group(NULL, &zero, 1, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, NULL, 1, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, &zero, 1, 0, NULL), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, &zero, 0, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, &zero, -3, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, two, 2, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, &one, 1, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_int_equal(rcoll_comm_create_group(world, &minus, 1, 0, &out), RCOLL_ERR_INVALID_ARG);
    assert_ptr_equal(out, sentinel);
    assert_int_equal(ctx->ncomms, ncomms);
    assert_null(world->group_seqs);       /* no creation was counted */
    assert_int_equal(rcoll_finalize(ctx), RCOLL_OK);
}

/* The shm property is fixed at creation: one node and RCOLL_SHM=1. */
static void test_shm_property(void **state)
{
    (void)state;
    rcoll_context_t *ctx;
    const char *const no_shm[] = { "RCOLL_SHM=0", NULL };
    const int zero = 0;
    rcoll_comm_t *g, *d;

    unset_launch_env();
    assert_int_equal(rcoll_init(NULL, &ctx), RCOLL_OK);
    assert_true(rcoll_comm_world(ctx)->shm_usable);
    assert_int_equal(rcoll_comm_create_group(rcoll_comm_world(ctx), &zero, 1, 0, &g), RCOLL_OK);
    assert_int_equal(rcoll_comm_dup(g, &d), RCOLL_OK);
    assert_true(g->shm_usable && d->shm_usable);
    assert_int_equal(rcoll_comm_free(d), RCOLL_OK);
    assert_int_equal(rcoll_comm_free(g), RCOLL_OK);
    assert_int_equal(rcoll_finalize(ctx), RCOLL_OK);

    assert_int_equal(rcoll_init(no_shm, &ctx), RCOLL_OK);
    assert_false(rcoll_comm_world(ctx)->shm_usable);
    assert_int_equal(rcoll_comm_create_group(rcoll_comm_world(ctx), &zero, 1, 0, &g), RCOLL_OK);
    assert_false(g->shm_usable);
    assert_int_equal(rcoll_comm_free(g), RCOLL_OK);
    assert_int_equal(rcoll_finalize(ctx), RCOLL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_scheme),
        cmocka_unit_test(test_group_keys),
        cmocka_unit_test(test_singleton_ids),
        cmocka_unit_test(test_create_group_invalid),
        cmocka_unit_test(test_shm_property),
    };
    if (getenv("RCOLL_LOG_LEVEL") == NULL) {
        setenv("RCOLL_LOG_LEVEL", "error", 1);   /* the rejected calls log errors */
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
