/*
 * test_verbs_rcache.c - the registration cache without a device: interval
 * lookups, reference counts, LRU eviction under the size limit, and the
 * munmap + mmap-at-the-same-address case with real page fingerprints.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>
#include "verbs/verbs_rcache.h"

typedef struct fake {
    int      regs, deregs, live;
    uint64_t generation;      /* fake fingerprint: bump it to "change the memory" */
    int      pagemap_fd;
} fake_t;

static int fake_reg(void *arg, void *start, size_t len, void **handle)
{
    fake_t *f = arg;

    f->regs++;
    f->live++;
    *handle = (void *)(intptr_t)f->regs;      /* a distinct handle per registration */
    return 0;
}

static void fake_dereg(void *arg, void *handle)
{
    fake_t *f = arg;

    f->deregs++;
    f->live--;
}

static int fake_fp(void *arg, uintptr_t start, uintptr_t end, uint64_t *fp)
{
    *fp = ((fake_t *)arg)->generation;
    return 0;
}

static int real_fp(void *arg, uintptr_t start, uintptr_t end, uint64_t *fp)
{
    return rcoll__verbs_pagemap_fingerprint(((fake_t *)arg)->pagemap_fd, start, end, fp);
}

#define PAGE 4096u
static char arena[64 * PAGE] __attribute__((aligned(4096)));

static void setup_fake(rcoll_verbs_rcache_t *rc, fake_t *f, size_t max)
{
    rcoll_verbs_rcache_ops_t ops = { f, fake_reg, fake_dereg, fake_fp };

    memset(f, 0, sizeof(*f));
    rcoll__verbs_rcache_init(rc, &ops, 1, max);
}

static void test_interval_lookup(void **state)
{
    rcoll_verbs_rcache_t rc;
    rcoll_verbs_rcache_entry_t *a, *b, *c, *d;
    fake_t f;

    setup_fake(&rc, &f, 1 << 20);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 100, 3 * PAGE, &a), 0);
    assert_int_equal(a->start, (uintptr_t)arena);
    assert_int_equal(a->end, (uintptr_t)arena + 4 * PAGE);
    /* Inside a: a hit, same entry, two references. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + PAGE + 5, 2 * PAGE, &b), 0);
    assert_ptr_equal(a, b);
    assert_int_equal(a->refs, 2);
    /* Crossing a's end: a miss. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 3 * PAGE, 2 * PAGE, &c), 0);
    assert_ptr_not_equal(c, a);
    /* Many more entries after; a subrange of a still finds a. */
    for (int i = 0; i < 20; i++) {
        rcoll_verbs_rcache_entry_t *e;
        assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + (10 + 2 * i) * PAGE, PAGE, &e), 0);
        rcoll__verbs_rcache_put(&rc, e);
    }
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 2 * PAGE, 10, &d), 0);
    assert_true(d == a || d == c);
    assert_true(d->start <= (uintptr_t)arena + 2 * PAGE && d->end >= (uintptr_t)arena + 2 * PAGE + 10);
    assert_int_equal(f.regs, 22);
    assert_int_equal(rc.stats.hits, 2);
    rcoll__verbs_rcache_put(&rc, a);
    rcoll__verbs_rcache_put(&rc, b);
    rcoll__verbs_rcache_put(&rc, c);
    rcoll__verbs_rcache_put(&rc, d);
    assert_int_equal(rcoll__verbs_rcache_cleanup(&rc), 0);
    assert_int_equal(f.live, 0);
}

static void test_lru_and_limit(void **state)
{
    rcoll_verbs_rcache_t rc;
    rcoll_verbs_rcache_entry_t *e[4], *busy, *big;
    fake_t f;

    setup_fake(&rc, &f, 3 * PAGE);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &busy), 0);   /* stays referenced */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + (2 + 2 * i) * PAGE, PAGE, &e[i]), 0);
        rcoll__verbs_rcache_put(&rc, e[i]);
    }
    /* Limit 3 pages: busy + the two most recent survive. */
    assert_true(rc.bytes <= 3 * PAGE);
    assert_int_equal(rc.stats.evictions, 2);
    assert_int_equal(f.live, 3);
    /* The oldest unreferenced was evicted: asking for it registers again. */
    int regs = f.regs;
    rcoll_verbs_rcache_entry_t *x;
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 2 * PAGE, PAGE, &x), 0);
    assert_int_equal(f.regs, regs + 1);
    rcoll__verbs_rcache_put(&rc, x);
    /* The referenced entry was never evicted. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &x), 0);
    assert_ptr_equal(x, busy);
    rcoll__verbs_rcache_put(&rc, x);
    /* Larger than the whole cache: registered, not cached, freed at put. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 20 * PAGE, 8 * PAGE, &big), 0);
    assert_false(big->cached);
    int live = f.live;
    rcoll__verbs_rcache_put(&rc, big);
    assert_int_equal(f.live, live - 1);
    rcoll__verbs_rcache_put(&rc, busy);
    assert_int_equal(rcoll__verbs_rcache_cleanup(&rc), 0);
    assert_int_equal(f.live, 0);
}

static void test_changed_memory_is_not_reused(void **state)
{
    rcoll_verbs_rcache_t rc;
    rcoll_verbs_rcache_entry_t *a, *held, *b;
    fake_t f;

    setup_fake(&rc, &f, 1 << 20);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &a), 0);
    rcoll__verbs_rcache_put(&rc, a);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 8 * PAGE, PAGE, &held), 0);
    f.generation++;                               /* "the memory changed" */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &b), 0);
    assert_int_equal(f.regs, 3);
    assert_int_equal(rc.stats.stale, 1);
    assert_int_equal(f.deregs, 1);                /* the stale unreferenced one went away */
    rcoll__verbs_rcache_put(&rc, b);
    /* A stale entry still in use stays registered until its last put. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena + 8 * PAGE, PAGE, &b), 0);
    assert_ptr_not_equal(b, held);
    assert_int_equal(f.live, 3);
    rcoll__verbs_rcache_put(&rc, held);
    assert_int_equal(f.live, 2);
    rcoll__verbs_rcache_put(&rc, b);
    rcoll__verbs_rcache_cleanup(&rc);
    assert_int_equal(f.live, 0);
}

static void test_disabled_always_registers(void **state)
{
    rcoll_verbs_rcache_t rc;
    rcoll_verbs_rcache_ops_t ops;
    rcoll_verbs_rcache_entry_t *a, *b;
    fake_t f = {0};

    ops = (rcoll_verbs_rcache_ops_t){ &f, fake_reg, fake_dereg, NULL };   /* no fingerprint */
    rcoll__verbs_rcache_init(&rc, &ops, 1, 1 << 20);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &a), 0);
    rcoll__verbs_rcache_put(&rc, a);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &b), 0);
    rcoll__verbs_rcache_put(&rc, b);
    assert_int_equal(f.regs, 2);
    assert_int_equal(f.live, 0);
    ops.fingerprint = fake_fp;                    /* RCOLL_RCACHE=0 */
    rcoll__verbs_rcache_init(&rc, &ops, 0, 1 << 20);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, arena, PAGE, &a), 0);
    rcoll__verbs_rcache_put(&rc, a);
    assert_int_equal(f.regs, 3);
    assert_int_equal(f.live, 0);
    rcoll__verbs_rcache_cleanup(&rc);
}

/*
 * The real case: register a buffer, unmap it, map new memory at the same
 * address.  The old pages stay alive (a registration would pin them; here a
 * memfd holds them), so the new mapping has other frames and the cache must
 * register again instead of returning the stale entry.
 */
static void test_munmap_mmap_same_address(void **state)
{
    const size_t len = 4 * PAGE;
    rcoll_verbs_rcache_t rc;
    rcoll_verbs_rcache_ops_t ops;
    rcoll_verbs_rcache_entry_t *a, *b;
    fake_t f = {0};

    f.pagemap_fd = rcoll__verbs_pagemap_open();
    if (f.pagemap_fd < 0) {
        print_message("page frame numbers not visible (needs CAP_SYS_ADMIN): cache bypassed\n");
        ops = (rcoll_verbs_rcache_ops_t){ &f, fake_reg, fake_dereg, NULL };
    } else {
        ops = (rcoll_verbs_rcache_ops_t){ &f, fake_reg, fake_dereg, real_fp };
    }
    rcoll__verbs_rcache_init(&rc, &ops, 1, 1 << 24);

    int mfd = memfd_create("rcache-test", 0);
    assert_true(mfd >= 0);
    assert_int_equal(ftruncate(mfd, (off_t)len), 0);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    assert_true(p != MAP_FAILED);
    memset(p, 1, len);

    assert_int_equal(rcoll__verbs_rcache_get(&rc, p, len, &a), 0);
    rcoll__verbs_rcache_put(&rc, a);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, p + PAGE, PAGE, &b), 0);
    if (f.pagemap_fd >= 0) {
        assert_ptr_equal(a, b);                   /* unchanged memory: a hit */
    }
    rcoll__verbs_rcache_put(&rc, b);
    int regs = f.regs;

    assert_int_equal(munmap(p, len), 0);
    char *q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    assert_ptr_equal(q, p);
    memset(q, 2, len);
    assert_int_equal(rcoll__verbs_rcache_get(&rc, q, len, &b), 0);
    assert_int_equal(f.regs, regs + 1);           /* registered again, stale entry not reused */
    if (f.pagemap_fd >= 0) {
        assert_int_equal(rc.stats.stale, 1);
    }
    rcoll__verbs_rcache_put(&rc, b);

    /* Only the middle page replaced: a lookup of the whole range is stale too. */
    assert_int_equal(rcoll__verbs_rcache_get(&rc, q, len, &a), 0);
    rcoll__verbs_rcache_put(&rc, a);
    regs = f.regs;
    char *mid = mmap(q + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mfd, 0);
    assert_ptr_equal(mid, q + PAGE);
    mid[0] = 3;
    assert_int_equal(rcoll__verbs_rcache_get(&rc, q, len, &b), 0);
    assert_int_equal(f.regs, regs + 1);
    rcoll__verbs_rcache_put(&rc, b);

    /* Cost of a validated hit on 1 MiB (256 pagemap entries). */
    if (f.pagemap_fd >= 0) {
        size_t big = 1 << 20;
        char *m = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct timespec t0, t1;
        assert_true(m != MAP_FAILED);
        memset(m, 0, big);
        assert_int_equal(rcoll__verbs_rcache_get(&rc, m, big, &a), 0);
        rcoll__verbs_rcache_put(&rc, a);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 200; i++) {
            assert_int_equal(rcoll__verbs_rcache_get(&rc, m, big, &b), 0);
            assert_ptr_equal(a, b);
            rcoll__verbs_rcache_put(&rc, b);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        print_message("validated 1 MiB hit: %.1f us\n",
                      ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 200 / 1e3);
        rcoll__verbs_rcache_cleanup(&rc);
        munmap(m, big);
    }
    rcoll__verbs_rcache_cleanup(&rc);
    assert_int_equal(f.live, 0);
    munmap(q, len);
    close(mfd);
    if (f.pagemap_fd >= 0) {
        close(f.pagemap_fd);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval_lookup),
        cmocka_unit_test(test_lru_and_limit),
        cmocka_unit_test(test_changed_memory_is_not_reused),
        cmocka_unit_test(test_disabled_always_registers),
        cmocka_unit_test(test_munmap_mmap_same_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
