/*
 * first_use.c - the contract for a peer this instance has never sent to
 * (transports/transport.h: connect() may finish the connection lazily; UCX
 * creates its endpoint on first use, docs/scaling.md "Memory and start-up").
 *
 *  - Messages from such a peer arrive (rank 0 receives without ever sending).
 *  - abort_peer() on it is final and reported like any other: peer_error
 *    exactly once from progress(), even when called twice.
 *  - The other direction is untouched: rank 1 still reaches rank 0.
 */
#include "contract.h"

typedef struct {
    ct_ep_t *ep;
    int      n;
} want_t;

static int got(void *arg)
{
    want_t *w = arg;
    return w->ep->ndata >= w->n || w->ep->bad;
}

static int reported(void *arg)
{
    return ((ct_ep_t *)arg)->peer_errors > 0;
}

int ct_case_abort_unconnected(const ct_run_t *run)
{
    enum { N = 8 };
    ct_ep_t a, b;
    if (!ct_has_cap(run, RCOLL_TL_CAP_GET) || run->ops->abort_peer == NULL) {
        return CT_SKIP;             /* abort_peer comes with get (transport.h) */
    }
    int rc = ct_open(run, &a, 0) || ct_open(run, &b, 1) || ct_connect_pair(&a, &b);
    ct_ep_t *eps[] = { &a, &b };
    for (uint32_t s = 0; s < N && rc == 0; s++) {
        if (ct_send_data(&b, 0, s, 100) != RCOLL_OK) {
            rc = ct_fail("rank 1: send() of message %u to rank 0 failed", s);
        }
    }
    want_t w = { &a, N };
    if (rc == 0 && (ct_wait(eps, 2, got, &w, 20) || a.bad)) {
        rc = ct_fail("rank 0, which never sent to rank 1, has %d of its %d messages%s%s", a.ndata,
                     N, a.bad ? ": " : "", a.bad ? a.why : "");
    }
    if (rc == 0) {
        run->ops->abort_peer(a.tl, 1, "contract case abort_unconnected");
        run->ops->abort_peer(a.tl, 1, "contract case abort_unconnected, again");
        if (a.peer_errors != 0) {
            rc = ct_fail("abort_peer() called peer_error itself (%d), not from progress()",
                         a.peer_errors);
        } else if (ct_wait(eps, 2, reported, &a, 10)) {
            rc = ct_fail("abort_peer() on a peer never sent to: no peer_error within 10 s");
        }
    }
    if (rc == 0) {
        ct_drain(eps, 2, 0.5);
        if (a.peer_errors != 1) {
            rc = ct_fail("abort_peer() twice on a peer never sent to: %d peer_error calls, not 1",
                         a.peer_errors);
        }
    }
    want_t w2 = { &a, N + 1 };
    if (rc == 0 && (ct_send_data(&b, 0, N, 100) != RCOLL_OK || ct_wait(eps, 2, got, &w2, 20))) {
        rc = ct_fail("after rank 0 aborted rank 1, rank 1's own send to rank 0 did not arrive "
                     "(%d of %d)", a.ndata, N + 1);
    }
    ct_pair_down(&a, &b);
    return rc;
}
