/*
 * get_cases.c - the get() lines of the transport contract
 * (transports/transport.h), for backends with RCOLL_TL_CAP_GET.
 *
 *  get_range: a get reads exactly the advertised region (whole, first and
 *    last byte), is refused outside it or with a malformed key, completes
 *    from progress() exactly once, and writes nothing of laddr beyond len.
 *  late_get: the late-write case of the pulled rendezvous: after a get's
 *    completion, and after abort_peer() returns with a get in flight,
 *    nothing lands in the destination any more (a canary written there
 *    right after stays intact while both sides keep progressing).
 */
#include <stdlib.h>
#include <string.h>
#include "contract.h"

static int done(void *arg)
{
    return ((ct_put_t *)arg)->calls > 0;
}

/* One get of len bytes at raddr into dst: 1 refused, 0 completed OK, -1 breach. */
static int try_get(const ct_run_t *run, ct_ep_t *a, ct_ep_t *b, void *dst, size_t len,
                   uint64_t raddr, const void *key, size_t klen, const char *what)
{
    ct_ep_t *eps[] = { a, b };
    ct_put_t g;
    ct_put_init(&g);
    rcoll_status_t st = run->ops->get(a->tl, 1, dst, len, raddr, key, klen, &g.comp);
    if (st != RCOLL_OK) {
        ct_drain(eps, 2, 0.05);
        if (g.calls != 0) {
            ct_fail("%s: get() failed (%s) and still ran the completion", what, rcoll_strerror(st));
            return -1;
        }
        return 1;
    }
    if (g.calls != 0) {
        ct_fail("%s: the completion ran inside get(), not from progress()", what);
        return -1;
    }
    if (ct_wait(eps, 2, done, &g, 20)) {
        ct_fail("%s: get() neither failed nor completed within 20 s", what);
        return -1;
    }
    ct_drain(eps, 2, 0.02);
    if (g.calls != 1) {
        ct_fail("%s: the completion ran %d times", what, g.calls);
        return -1;
    }
    return g.status != RCOLL_OK;
}

/* b's region of r bytes registered for remote read, filled with pattern 77. */
static int expose(const ct_run_t *run, ct_ep_t *b, uint8_t *region, size_t r,
                  rcoll_tl_mr_t **mr, uint8_t *key, size_t *klen)
{
    for (size_t i = 0; i < r; i++) {
        region[i] = ct_pattern(77, i);
    }
    if (run->ops->mem_reg(b->tl, region, r, RCOLL_TL_ACCESS_REMOTE_READ, mr) != RCOLL_OK ||
        run->ops->pack_rkey(b->tl, *mr, key, klen) != RCOLL_OK) {
        *mr = NULL;
        return ct_fail("mem_reg() for remote read or pack_rkey() of %zu bytes failed", r);
    }
    return 0;
}

int ct_case_get_range(const ct_run_t *run)
{
    enum { R = 4096, G = 64 };
    static const struct { const char *what; long off; size_t len; int ok; } tries[] = {
        { "the whole region", 0, R, 1 },
        { "its first byte", 0, 1, 1 },
        { "its last byte", R - 1, 1, 1 },
        { "1000 bytes inside it", 77, 1000, 1 },
        { "one byte before it", -1, 1, 0 },
        { "one byte past its end", R, 1, 0 },
        { "16 bytes across its end", R - 8, 16, 0 },
        { "one byte more than it holds", 0, R + 1, 0 },
        { "a length that wraps the address space", 8, SIZE_MAX - 4, 0 },
    };
    if (!ct_has_cap(run, RCOLL_TL_CAP_GET)) {
        return CT_SKIP;
    }
    ct_ep_t a, b;
    int rc = ct_pair_up(run, &a, &b);
    uint8_t *region = malloc(R), *dst = malloc(R + 2 * G), key[RCOLL_TL_RKEY_MAX];
    size_t klen = sizeof(key);
    rcoll_tl_mr_t *mr = NULL;
    if (rc == 0) {
        rc = expose(run, &b, region, R, &mr, key, &klen);
    }
    uint64_t base = (uint64_t)(uintptr_t)region;
    for (size_t t = 0; rc == 0 && t < sizeof(tries) / sizeof(tries[0]); t++) {
        size_t len = tries[t].ok ? tries[t].len : 16;     /* dst holds no more than R */
        memset(dst, 0x33, R + 2 * G);
        int refused = try_get(run, &a, &b, dst + G, tries[t].ok ? len : tries[t].len,
                              base + (uint64_t)tries[t].off, key, klen, tries[t].what);
        if (refused < 0) {
            rc = 1;
            break;
        }
        if (refused == tries[t].ok) {
            rc = ct_fail("a get of %s was %s", tries[t].what, refused ? "refused" : "accepted");
            break;
        }
        for (size_t i = 0; i < R + 2 * G; i++) {
            int inside = tries[t].ok && i >= G && i < G + len;
            uint8_t want = inside ? ct_pattern(77, (size_t)tries[t].off + i - G) : 0x33;
            if (dst[i] != want) {
                rc = ct_fail("a get of %s: destination byte %ld is %#x, expected %#x%s",
                             tries[t].what, (long)i - G, dst[i], want,
                             inside ? "" : " (outside what was read)");
                break;
            }
        }
    }
    if (rc == 0) {
        int r1 = try_get(run, &a, &b, dst, 8, base, key, 4, "a 4-byte key");
        int r2 = try_get(run, &a, &b, dst, 8, base, key, 0, "an empty key");
        if (r1 < 0 || r2 < 0) {
            rc = 1;
        } else if (!r1 || !r2) {
            rc = ct_fail("a get with a %s key was accepted", !r1 ? "4-byte" : "empty");
        }
    }
    if (mr != NULL) {
        run->ops->mem_dereg(b.tl, mr);
    }
    ct_pair_down(&a, &b);
    free(region);
    free(dst);
    return rc;
}

/* Fill dst with the canary, progress both sides, and check it stayed. */
static int canary_holds(ct_ep_t *a, ct_ep_t *b, uint8_t *dst, size_t len, const char *when)
{
    ct_ep_t *eps[] = { a, b };
    memset(dst, 0xC5, len);
    ct_drain(eps, 2, 0.3);
    for (size_t i = 0; i < len; i++) {
        if (dst[i] != 0xC5) {
            return ct_fail("%s, byte %zu of the destination changed to %#x: a late write landed",
                           when, i, dst[i]);
        }
    }
    return 0;
}

int ct_case_late_get(const ct_run_t *run)
{
    enum { R = 4 << 20 };
    if (!ct_has_cap(run, RCOLL_TL_CAP_GET)) {
        return CT_SKIP;
    }
    ct_ep_t a, b;
    int rc = ct_pair_up(run, &a, &b);
    uint8_t *region = malloc(R), *dst = malloc(R), key[RCOLL_TL_RKEY_MAX];
    size_t klen = sizeof(key);
    rcoll_tl_mr_t *mr = NULL;
    ct_ep_t *eps[] = { &a, &b };
    if (rc == 0) {
        rc = expose(run, &b, region, R, &mr, key, &klen);
    }
    if (rc == 0) {
        int r = try_get(run, &a, &b, dst, R, (uint64_t)(uintptr_t)region, key, klen, "a 4 MiB get");
        if (r != 0) {
            rc = r < 0 ? 1 : ct_fail("a 4 MiB get inside the region was refused");
        } else if (memcmp(dst, region, R) != 0) {
            rc = ct_fail("a completed 4 MiB get did not deliver the region's contents");
        }
    }
    if (rc == 0) {
        rc = canary_holds(&a, &b, dst, R, "after a get's completion");
    }
    if (rc == 0) {
        /* A get in flight, then abort_peer: nothing of it lands afterwards. */
        ct_put_t g;
        ct_put_init(&g);
        rcoll_status_t st = run->ops->get(a.tl, 1, dst, R, (uint64_t)(uintptr_t)region, key, klen,
                                          &g.comp);
        if (st != RCOLL_OK) {
            rc = ct_fail("get() of 4 MiB failed: %s", rcoll_strerror(st));
        } else {
            run->ops->abort_peer(a.tl, 1, "contract case late_get");
            rc = canary_holds(&a, &b, dst, R, "after abort_peer returned");
            ct_drain(eps, 2, 0.1);
            if (rc == 0 && g.calls != 1) {
                rc = ct_fail("after abort_peer the get's completion ran %d times, not once", g.calls);
            } else if (rc == 0 && a.peer_errors != 1) {
                rc = ct_fail("after abort_peer rank 0 saw %d peer_error calls, not 1", a.peer_errors);
            }
        }
    }
    if (mr != NULL) {
        run->ops->mem_dereg(b.tl, mr);
    }
    ct_pair_down(&a, &b);
    free(region);
    free(dst);
    return rc;
}
