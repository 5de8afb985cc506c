/*
 * cases.c - the transport contract (transports/transport.h), one function
 * per line of it, on two instances of one backend in one process.
 * The dead-peer case, which needs a real death, is in dead_peer.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "contract.h"

typedef struct {
    ct_ep_t *ep;
    int      n;
} count_t;

static int pong_seen(void *arg)
{
    return ((ct_ep_t *)arg)->pongs > 0;
}

static int put_done(void *arg)
{
    return ((ct_put_t *)arg)->calls > 0;
}

static int rounds_done(void *arg)
{
    count_t *c = arg;
    return c->ep->rounds_ok >= c->n || c->ep->bad;
}

static int got_all(ct_ep_t *ep, int n)
{
    return ep->ndata >= n || ep->bad;
}

static int both_got_all(void *arg)
{
    count_t *c = arg;
    return got_all(c[0].ep, c[0].n) && got_all(c[1].ep, c[1].n);
}

/* Open ranks 0 and 1, connect them, and exchange one ping so that backends
 * that wire up lazily have finished. */
int ct_pair_up(const ct_run_t *run, ct_ep_t *a, ct_ep_t *b)
{
    if (ct_open(run, a, 0) || ct_open(run, b, 1) || ct_connect_pair(a, b)) {
        return 1;
    }
    ct_ep_t *eps[] = { a, b };
    if (ct_send_ctl(a, 1, CT_MSG_PING, 0, 0, 0) != RCOLL_OK) {
        return ct_fail("the first send failed");
    }
    if (ct_wait(eps, 2, pong_seen, a, 20)) {
        return ct_fail("no answer to a ping within 20 s");
    }
    return 0;
}

void ct_pair_down(ct_ep_t *a, ct_ep_t *b)
{
    ct_close(a);
    ct_close(b);
}

/* Every message arrives once, intact, from the right rank; both parts may be
 * reused as soon as send() returns (ct_send_data scribbles over them); the
 * backend queues what it cannot send yet instead of failing. */
int ct_case_send_recv(const ct_run_t *run)
{
    enum { N = 256 };
    ct_ep_t a, b;
    int rc = ct_pair_up(run, &a, &b);
    size_t max = run->ops->max_msg_size(a.tl) - 16;
    const size_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 65536, max };
    for (uint32_t s = 0; s < N && rc == 0; s++) {
        size_t len = sizes[s % 8] < max ? sizes[s % 8] : max;
        if (ct_send_data(&a, 1, s, len) != RCOLL_OK || ct_send_data(&b, 0, s, len) != RCOLL_OK) {
            rc = ct_fail("send() of message %u (%zu bytes) failed", s, len);
        }
    }
    ct_ep_t *eps[] = { &a, &b };
    count_t want[2] = { { &a, N }, { &b, N } };
    if (rc == 0 && ct_wait(eps, 2, both_got_all, want, 60)) {
        rc = ct_fail("after 60 s rank 0 has %d and rank 1 %d of %d messages", a.ndata, b.ndata, N);
    }
    if (rc == 0 && (a.bad || b.bad)) {
        rc = ct_fail("%s", a.bad ? a.why : b.why);
    }
    ct_pair_down(&a, &b);
    return rc;
}

/* A put completes from progress() (not inside put()), exactly once, and a
 * message sent after its completion is processed only once the data is in
 * place at the target (harness.c checks that on receipt). */
int ct_case_put_then_send(const ct_run_t *run)
{
    enum { R = 65536, ROUNDS = 32 };
    const size_t lens[] = { 1, 8, 100, 4096, R, 3, R - 1, 1000 };
    ct_ep_t a, b;
    if (!ct_has_cap(run, RCOLL_TL_CAP_PUT)) {
        return CT_SKIP;
    }
    int rc = ct_pair_up(run, &a, &b);
    uint8_t *region = calloc(1, R), *src = malloc(R), key[RCOLL_TL_RKEY_MAX];
    size_t klen = sizeof(key);
    rcoll_tl_mr_t *mr = NULL;
    if (rc == 0 && (run->ops->mem_reg(b.tl, region, R, RCOLL_TL_ACCESS_REMOTE_WRITE, &mr) != RCOLL_OK ||
                    run->ops->pack_rkey(b.tl, mr, key, &klen) != RCOLL_OK)) {
        rc = ct_fail("mem_reg() or pack_rkey() of %d bytes failed", R);
    }
    b.region = region;
    ct_ep_t *eps[] = { &a, &b };
    for (uint32_t r = 0; r < ROUNDS && rc == 0; r++) {
        size_t len = lens[r % 8], off = (r * 977u) % (R - len + 1);
        ct_put_t p;
        ct_put_init(&p);
        for (size_t i = 0; i < len; i++) {
            src[i] = ct_pattern(r, i);
        }
        rcoll_status_t st = run->ops->put(a.tl, 1, src, len, (uint64_t)(uintptr_t)region + off,
                                          key, klen, &p.comp);
        if (st != RCOLL_OK) {
            rc = ct_fail("round %u: put() of %zu bytes at offset %zu failed: %s", r, len, off,
                         rcoll_strerror(st));
            break;
        }
        if (p.calls != 0) {
            rc = ct_fail("round %u: the completion ran inside put(), not from progress()", r);
            break;
        }
        if (ct_wait(eps, 2, put_done, &p, 20) || p.status != RCOLL_OK) {
            rc = ct_fail("round %u: put of %zu bytes %s", r, len, p.calls ?
                         rcoll_strerror(p.status) : "did not complete within 20 s");
            break;
        }
        memset(src, 0xEE, len);     /* the source is free once the put completed */
        if (ct_send_ctl(&a, 1, CT_MSG_ROUND, r, (uint32_t)off, (uint32_t)len) != RCOLL_OK) {
            rc = ct_fail("round %u: send() failed", r);
            break;
        }
        count_t want = { &b, (int)r + 1 };
        if (ct_wait(eps, 2, rounds_done, &want, 20) || b.bad) {
            rc = ct_fail("round %u: %s", r, b.bad ? b.why : "the message did not arrive in 20 s");
        } else if (p.calls != 1) {
            rc = ct_fail("round %u: the completion ran %d times", r, p.calls);
        }
    }
    if (mr != NULL) {
        run->ops->mem_dereg(b.tl, mr);
    }
    ct_pair_down(&a, &b);
    free(region);
    free(src);
    return rc;
}

/* One put: 1 if it was refused (an error from put() without a completion,
 * or a completion with an error), 0 if it landed, -1 on a contract breach. */
static int try_put(const ct_run_t *run, ct_ep_t *a, ct_ep_t *b, const void *src, size_t len,
                   uint64_t raddr, const void *key, size_t klen, const char *what)
{
    ct_ep_t *eps[] = { a, b };
    ct_put_t p;
    ct_put_init(&p);
    rcoll_status_t st = run->ops->put(a->tl, 1, src, len, raddr, key, klen, &p.comp);
    if (st != RCOLL_OK) {
        ct_drain(eps, 2, 0.05);
        if (p.calls != 0) {
            ct_fail("%s: put() failed (%s) and still ran the completion", what, rcoll_strerror(st));
            return -1;
        }
        return 1;
    }
    if (ct_wait(eps, 2, put_done, &p, 20)) {
        ct_fail("%s: put() neither failed nor completed within 20 s", what);
        return -1;
    }
    return p.status != RCOLL_OK;
}

/* put() writes only inside the advertised region: a write that starts before
 * it, runs past its end or wraps around is refused, and nothing outside it
 * changes; a malformed key is refused, not a crash. */
int ct_case_put_range(const ct_run_t *run)
{
    enum { R = 4096 };
    static const struct { const char *what; long off; size_t len; int ok; } tries[] = {
        { "the whole region", 0, R, 1 },
        { "its first byte", 0, 1, 1 },
        { "its last byte", R - 1, 1, 1 },
        { "one byte before it", -1, 1, 0 },
        { "one byte past its end", R, 1, 0 },
        { "16 bytes across its end", R - 8, 16, 0 },
        { "16 bytes across its start", -8, 16, 0 },
        { "one byte more than it holds", 0, R + 1, 0 },
        { "a length that wraps the address space", 8, SIZE_MAX - 4, 0 },
    };
    ct_ep_t a, b;
    if (!ct_has_cap(run, RCOLL_TL_CAP_PUT)) {
        return CT_SKIP;
    }
    int rc = ct_pair_up(run, &a, &b);
    uint8_t *buf = malloc(3 * R), *src = malloc(2 * R), *expect = malloc(R), key[RCOLL_TL_RKEY_MAX];
    uint8_t *region = buf + R;
    size_t klen = sizeof(key);
    rcoll_tl_mr_t *mr = NULL;
    memset(buf, 0x11, 3 * R);
    memset(expect, 0x11, R);
    if (rc == 0 && (run->ops->mem_reg(b.tl, region, R, RCOLL_TL_ACCESS_REMOTE_WRITE, &mr) != RCOLL_OK ||
                    run->ops->pack_rkey(b.tl, mr, key, &klen) != RCOLL_OK)) {
        rc = ct_fail("mem_reg() or pack_rkey() failed");
    }
    uint64_t base = (uint64_t)(uintptr_t)region;
    for (size_t t = 0; rc == 0 && t < sizeof(tries) / sizeof(tries[0]); t++) {
        for (size_t i = 0; i < 2 * R; i++) {
            src[i] = ct_pattern((uint32_t)t + 100, i);
        }
        int refused = try_put(run, &a, &b, src, tries[t].len, base + (uint64_t)tries[t].off, key,
                              klen, tries[t].what);
        if (refused < 0) {
            rc = 1;
        } else if (refused == tries[t].ok) {
            rc = ct_fail("a put of %s was %s", tries[t].what, refused ? "refused" : "accepted");
        } else if (tries[t].ok) {
            memcpy(expect + tries[t].off, src, tries[t].len);
        }
    }
    if (rc == 0) {
        int r1 = try_put(run, &a, &b, src, 8, base, key, 4, "a 4-byte key");
        int r2 = try_put(run, &a, &b, src, 8, base, key, 0, "an empty key");
        if (r1 < 0 || r2 < 0) {
            rc = 1;
        } else if (!r1 || !r2) {
            rc = ct_fail("a put with a %s key was accepted", !r1 ? "4-byte" : "empty");
        }
    }
    ct_ep_t *eps[] = { &a, &b };
    ct_drain(eps, 2, 0.1);
    for (size_t i = 0; rc == 0 && i < 3 * R; i++) {
        int inside = i >= R && i < 2 * R;
        if (buf[i] != (inside ? expect[i - R] : 0x11)) {
            rc = ct_fail("byte %ld from the region's start is %#x, expected %#x%s", (long)i - R,
                         buf[i], inside ? expect[i - R] : 0x11, inside ? "" : " (outside it)");
        }
    }
    if (mr != NULL) {
        run->ops->mem_dereg(b.tl, mr);
    }
    ct_pair_down(&a, &b);
    free(buf);
    free(src);
    free(expect);
    return rc;
}

/* After mem_dereg() returns, no remote write lands: a put with the revoked
 * key is refused and the memory (still allocated) keeps its contents.  A
 * backend that cannot revoke (no RCOLL_TL_CAP_PUT) grants no remote write
 * at all: its mem_reg refuses REMOTE_WRITE. */
int ct_case_dereg_revokes(const ct_run_t *run)
{
    enum { R = 4096 };
    ct_ep_t a, b;
    int rc = ct_pair_up(run, &a, &b);
    uint8_t *buf = malloc(R), src[64], key[RCOLL_TL_RKEY_MAX];
    size_t klen = sizeof(key);
    rcoll_tl_mr_t *mr = NULL;
    memset(buf, 0x11, R);
    memset(src, 0x22, sizeof(src));
    if (rc == 0 && !ct_has_cap(run, RCOLL_TL_CAP_PUT)) {
        rcoll_status_t st = run->ops->mem_reg(b.tl, buf, R, RCOLL_TL_ACCESS_REMOTE_WRITE, &mr);
        if (st == RCOLL_OK) {
            run->ops->mem_dereg(b.tl, mr);
            rc = ct_fail("the backend cannot revoke keys (no RCOLL_TL_CAP_PUT) but mem_reg() "
                         "granted remote write");
        }
        ct_pair_down(&a, &b);
        free(buf);
        return rc;
    }
    if (rc == 0 && (run->ops->mem_reg(b.tl, buf, R, RCOLL_TL_ACCESS_REMOTE_WRITE, &mr) != RCOLL_OK ||
                    run->ops->pack_rkey(b.tl, mr, key, &klen) != RCOLL_OK)) {
        rc = ct_fail("mem_reg() or pack_rkey() failed");
    }
    if (rc == 0) {
        run->ops->mem_dereg(b.tl, mr);
        int refused = try_put(run, &a, &b, src, sizeof(src), (uint64_t)(uintptr_t)buf + 64, key,
                              klen, "a write after mem_dereg");
        ct_ep_t *eps[] = { &a, &b };
        ct_drain(eps, 2, 0.2);
        int landed = buf[64] != 0x11 || buf[64 + sizeof(src) - 1] != 0x11;
        if (refused < 0) {
            rc = 1;
        } else if (landed || !refused) {
            rc = ct_fail("a put with a key revoked by mem_dereg was %s and the data %s",
                         refused ? "refused" : "accepted", landed ? "landed" : "did not land");
        }
    }
    ct_pair_down(&a, &b);
    free(buf);
    return rc;
}

/* Two instances, each driven by its own thread, exchange messages both ways
 * while the other thread progresses its own instance. */
typedef struct {
    ct_ep_t    *ep;
    int         peer;
    atomic_int *finished;
    int         rc;
} thread_arg_t;

enum { THREAD_MSGS = 2000 };

static void *thread_main(void *p)
{
    thread_arg_t *t = p;
    const rcoll_tl_ops_t *ops = t->ep->run->ops;
    double end = ct_now() + 60;
    int sent = 0, counted = 0;
    while (atomic_load(t->finished) < 2 && ct_now() < end) {
        for (int k = 0; k < 8 && sent < THREAD_MSGS; k++, sent++) {
            if (ct_send_data(t->ep, t->peer, (uint32_t)sent, (size_t)(sent * 37) % 300) != RCOLL_OK) {
                t->rc = ct_fail("rank %d: send() %d failed", t->ep->rank, sent);
                sent = THREAD_MSGS;
            }
        }
        ops->progress(t->ep->tl);
        if (!counted && sent == THREAD_MSGS && (t->ep->ndata == THREAD_MSGS || t->ep->bad || t->rc)) {
            counted = 1;
            atomic_fetch_add(t->finished, 1);
        }
    }
    if (t->rc == 0 && t->ep->bad) {
        t->rc = ct_fail("%s", t->ep->why);
    } else if (t->rc == 0 && t->ep->ndata != THREAD_MSGS) {
        t->rc = ct_fail("rank %d received %d of %d messages in 60 s", t->ep->rank, t->ep->ndata,
                        THREAD_MSGS);
    }
    return NULL;
}

int ct_case_two_threads(const ct_run_t *run)
{
    ct_ep_t a, b;
    atomic_int finished = 0;
    thread_arg_t ta = { &a, 1, &finished, 0 }, tb = { &b, 0, &finished, 0 };
    pthread_t th[2];
    int rc = ct_pair_up(run, &a, &b);
    if (rc == 0) {
        if (pthread_create(&th[0], NULL, thread_main, &ta) != 0) {
            rc = ct_fail("pthread_create failed");
        } else if (pthread_create(&th[1], NULL, thread_main, &tb) != 0) {
            atomic_store(&finished, 2);
            pthread_join(th[0], NULL);
            rc = ct_fail("pthread_create failed");
        } else {
            pthread_join(th[0], NULL);
            pthread_join(th[1], NULL);
            rc = ta.rc || tb.rc;
        }
    }
    ct_pair_down(&a, &b);
    return rc;
}
