/*
 * test_whereis_table.c - the node's where-is-everyone table is made without
 * a name and found through the owner's /proc/<pid>/fd (src/whereis_table.c).
 *
 * Contexts are bare (calloc'd, the fields whereis_table.c reads set by
 * hand): world ranks 0 and 1 on one node, in this process, so the "peer's"
 * descriptor is this process's own, opened through /proc/<getpid()>/fd.
 *  - shared: both prepare a candidate, rank 0's is offered to both; both
 *    map it and see each other's entry; the table is a memfd (or a deleted
 *    object) that has no name; rank 1's candidate is closed at init;
 *  - hostile offers (address fields from a peer's blob): out-of-range pid
 *    or descriptor, a process that does not exist, a character device, a
 *    regular file that is not a table, the real table with the wrong
 *    nonce: each time init completes with this rank's private entry only,
 *    the peer not visible, exactly one warning, and the offered file
 *    neither grown nor written;
 *  - a job of one rank makes no candidate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core.h"
#include "whereis.h"

static int node_of[2];

static rcoll_context_t *bare_ctx(int rank)
{
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    ctx->rank = rank;
    ctx->size = 2;
    ctx->local_size = 2;
    ctx->node_of = node_of;
    return ctx;
}

static void bare_free(rcoll_context_t *ctx)
{
    rcoll_whereis_fini(ctx);
    assert_null(ctx->whereis);
    assert_null(ctx->where_me);
    free(ctx);
}

/* stderr into a temporary file while capturing; the text afterwards. */
static int cap_fd = -1, cap_saved = -1;

static void capture_begin(void)
{
    char path[] = "/tmp/rcoll_test_whereis_table_XXXXXX";
    cap_fd = mkstemp(path);
    assert_true(cap_fd >= 0);
    unlink(path);
    fflush(stderr);
    cap_saved = dup(2);
    dup2(cap_fd, 2);
}

static const char *capture_end(void)
{
    static char text[8192];
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    ssize_t n = pread(cap_fd, text, sizeof(text) - 1, 0);
    close(cap_fd);
    text[n > 0 ? n : 0] = '\0';
    fputs(text, stderr);       /* still shown */
    return text;
}

static int count_lines(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++) {
        n++;
    }
    return n;
}

static void test_shared(void **state)
{
    (void)state;
    rcoll_context_t *a = bare_ctx(0), *b = bare_ctx(1);
    addr_where_t pa, pb;
    rcoll_whereis_prepare(a, &pa);
    rcoll_whereis_prepare(b, &pb);
    assert_int_equal(pa.pid, getpid());
    assert_true(pa.fd >= 0 && pb.fd >= 0 && pa.fd != pb.fd);
    assert_true(pa.nonce != 0 && pb.nonce != 0 && pa.nonce != pb.nonce);
    assert_int_equal(pa.reserved, 0);

    /* No name: a memfd, or (without memfd_create) an object already unlinked. */
    char link[64], target[256];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", (int)pa.fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    assert_true(n > 0);
    target[n] = '\0';
    if (strncmp(target, "/memfd:", 7) != 0 && strstr(target, "(deleted)") == NULL) {
        fail_msg("the candidate table has a name: %s", target);
    }

    rcoll_whereis_offer(a, 0, &pa);
    rcoll_whereis_offer(b, 0, &pa);
    capture_begin();
    rcoll_whereis_init(b);          /* the later rank first: it sizes the table */
    rcoll_whereis_init(a);
    const char *log = capture_end();
    assert_int_equal(count_lines(log, "where is everyone"), 0);
    assert_non_null(a->whereis->base);
    assert_non_null(b->whereis->base);
    assert_int_equal(fcntl(pb.fd, F_GETFD), -1);    /* rank 1's candidate is gone */
    assert_int_equal(a->whereis->fd, pa.fd);         /* the owner keeps its descriptor */
    assert_int_equal(b->whereis->fd, -1);

    /* Each sees the other's entry, written through its own mapping. */
    assert_int_equal(rcoll_whereis_pid(a, 1), getpid());
    assert_int_equal(rcoll_whereis_pid(b, 0), getpid());
    const rcoll_where_rank_t *b_in_a = rcoll__whereis_local(a, 1);
    assert_non_null(b_in_a);
    assert_ptr_not_equal(b_in_a, b->where_me);
    assert_int_equal(atomic_load(&b_in_a->world_rank), 1);
    rcoll_whereis_inside(b, 1);
    assert_int_equal(atomic_load(&b_in_a->inside), 1);

    struct stat st;
    assert_int_equal(fstat(a->whereis->fd, &st), 0);
    assert_int_equal((size_t)st.st_size, a->whereis->len);
    assert_int_equal(a->whereis->len, 64 + 2 * sizeof(rcoll_where_rank_t));

    bare_free(b);
    assert_int_equal(rcoll_whereis_pid(a, 1), 0);   /* finalized */
    bare_free(a);
    assert_int_equal(fcntl(pa.fd, F_GETFD), -1);
}

/* Rank 1 is offered o (from "rank 0"'s blob): it must run on its own. */
static void expect_refused(const addr_where_t *o, const char *what)
{
    rcoll_context_t *b = bare_ctx(1);
    addr_where_t pb;
    rcoll_whereis_prepare(b, &pb);
    rcoll_whereis_offer(b, 0, o);
    capture_begin();
    rcoll_whereis_init(b);
    const char *log = capture_end();
    if (count_lines(log, "where is everyone: cannot use this node's table") != 1) {
        fail_msg("%s: expected one warning, the log says:\n%s", what, log);
    }
    assert_null(b->whereis->base);
    assert_non_null(b->where_me);
    assert_null(rcoll__whereis_local(b, 0));
    assert_int_equal(rcoll_whereis_pid(b, 0), -1);
    assert_int_equal(rcoll_whereis_pid(b, 1), -1);
    rcoll_whereis_inside(b, 1);                      /* its own entry still takes stores */
    assert_int_equal(atomic_load(&b->where_me->inside), 1);
    assert_int_equal(fcntl(pb.fd, F_GETFD), -1);
    bare_free(b);
}

static void test_hostile_offers(void **state)
{
    (void)state;
    int64_t me = getpid();
    addr_where_t o;

    o = (addr_where_t){ .pid = -5, .fd = 3, .nonce = 1 };
    expect_refused(&o, "negative pid");
    o = (addr_where_t){ .pid = (int64_t)1 << 40, .fd = 3, .nonce = 1 };
    expect_refused(&o, "pid beyond range");
    o = (addr_where_t){ .pid = me, .fd = -1, .nonce = 1 };
    expect_refused(&o, "negative descriptor");
    o = (addr_where_t){ .pid = me, .fd = 3, .nonce = 0 };
    expect_refused(&o, "zero nonce");
    o = (addr_where_t){ .pid = INT32_MAX, .fd = 0, .nonce = 1 };
    expect_refused(&o, "no such process");

    int devnull = open("/dev/null", O_RDWR);
    assert_true(devnull >= 0);
    o = (addr_where_t){ .pid = me, .fd = devnull, .nonce = 1 };
    expect_refused(&o, "a character device");
    close(devnull);

    /* A regular file that is not a table: neither grown nor written. */
    char path[] = "/tmp/rcoll_test_whereis_table_file_XXXXXX";
    int f = mkstemp(path);
    assert_true(f >= 0);
    unlink(path);
    char junk[100];
    memset(junk, 0x5a, sizeof(junk));
    assert_int_equal(write(f, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    o = (addr_where_t){ .pid = me, .fd = f, .nonce = 1 };
    expect_refused(&o, "a file that is not a table");
    o = (addr_where_t){ .pid = me, .fd = f, .nonce = 0x5a5a5a5a5a5a5a5aULL };
    expect_refused(&o, "a file that is not a table, its bytes as nonce");
    struct stat st;
    assert_int_equal(fstat(f, &st), 0);
    assert_int_equal(st.st_size, (off_t)sizeof(junk));
    char back[100];
    assert_int_equal(pread(f, back, sizeof(back), 0), (ssize_t)sizeof(back));
    assert_memory_equal(back, junk, sizeof(junk));
    close(f);

    /* The real table, the wrong nonce. */
    rcoll_context_t *a = bare_ctx(0);
    addr_where_t pa;
    rcoll_whereis_prepare(a, &pa);
    assert_true(pa.pid > 0);
    o = pa;
    o.nonce ^= 1;
    expect_refused(&o, "the table with the wrong nonce");
    assert_int_equal(fstat((int)pa.fd, &st), 0);
    assert_int_equal(st.st_size, 64);                /* not grown */
    bare_free(a);
}

static void test_alone(void **state)
{
    (void)state;
    rcoll_context_t *a = bare_ctx(0);
    a->size = 1;
    a->local_size = 1;
    addr_where_t pa;
    memset(&pa, 0x77, sizeof(pa));
    rcoll_whereis_prepare(a, &pa);
    assert_int_equal(pa.pid, 0);
    assert_int_equal(pa.nonce, 0);
    rcoll_whereis_init(a);
    assert_non_null(a->where_me);
    assert_null(a->whereis->base);
    bare_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared),
        cmocka_unit_test(test_hostile_offers),
        cmocka_unit_test(test_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
