/*
 * harness.c - endpoints, waits and self-checking messages for the transport
 * contract cases (contract.h).
 *
 * A message is a 16-byte header {kind, a, b, c} passed as send()'s hdr, then
 * the payload.  DATA: a = sequence number, b = payload length, c = checksum;
 * the payload is ct_pattern(seq, i).  ROUND: the sender has put round a's
 * pattern into [b, b + c) of the receiver's region; the receiver checks it
 * while processing the message (the contract's put-then-send order).
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "contract.h"

typedef struct {
    uint32_t kind, a, b, c;
} ct_hdr_t;

double ct_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ct_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "    why: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

uint8_t ct_pattern(uint32_t seq, size_t i)
{
    return (uint8_t)((seq * 31u + (uint32_t)i * 7u + (uint32_t)(i >> 8) + 1u) & 0xff);
}

static uint32_t checksum(const uint8_t *p, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

static void bad(ct_ep_t *ep, const char *fmt, ...)
{
    va_list ap;
    if (ep->bad++ == 0) {
        va_start(ap, fmt);
        vsnprintf(ep->why, sizeof(ep->why), fmt, ap);
        va_end(ap);
    }
}

static void on_data(ct_ep_t *ep, int peer, const ct_hdr_t *h, const uint8_t *p, size_t len)
{
    if (h->a >= CT_MAX_SEQ || h->b != len || checksum(p, len) != h->c) {
        bad(ep, "rank %d: DATA seq %u from rank %d: %zu bytes, header says %u, checksum %s",
            ep->rank, h->a, peer, len, h->b, checksum(p, len) == h->c ? "ok" : "wrong");
        return;
    }
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ct_pattern(h->a, i)) {
            bad(ep, "rank %d: DATA seq %u byte %zu corrupted", ep->rank, h->a, i);
            return;
        }
    }
    if (ep->seen[h->a]++ != 0) {
        bad(ep, "rank %d: DATA seq %u from rank %d delivered twice", ep->rank, h->a, peer);
        return;
    }
    ep->ndata++;
}

static void on_round(ct_ep_t *ep, const ct_hdr_t *h)
{
    for (size_t i = 0; ep->region != NULL && i < h->c; i++) {
        if (ep->region[h->b + i] != ct_pattern(h->a, i)) {
            bad(ep, "rank %d: round %u: byte %zu of the %u-byte put at offset %u is not in "
                "place when the message sent after its completion is processed", ep->rank,
                h->a, i, h->c, h->b);
            return;
        }
    }
    ep->rounds_ok++;
}

static void recv_cb(void *arg, int peer, const void *msg, size_t len)
{
    ct_ep_t *ep = arg;
    ct_hdr_t h;
    ep->nrecv++;
    if (peer != 1 - ep->rank) {
        bad(ep, "rank %d: a message from rank %d (expected %d)", ep->rank, peer, 1 - ep->rank);
        return;
    }
    if (len < sizeof(h)) {
        bad(ep, "rank %d: a %zu-byte message, shorter than the test header", ep->rank, len);
        return;
    }
    memcpy(&h, msg, sizeof(h));
    const uint8_t *p = (const uint8_t *)msg + sizeof(h);
    switch (h.kind) {
    case CT_MSG_DATA:  on_data(ep, peer, &h, p, len - sizeof(h)); break;
    case CT_MSG_PING:  ct_send_ctl(ep, peer, CT_MSG_PONG, h.a, 0, 0); break;
    case CT_MSG_PONG:  ep->pongs++; break;
    case CT_MSG_ROUND: on_round(ep, &h); break;
    default:           bad(ep, "rank %d: unknown message kind %u", ep->rank, h.kind);
    }
}

static void peer_error_cb(void *arg, int peer, rcoll_status_t status, const char *reason)
{
    ct_ep_t *ep = arg;
    ep->peer_errors++;
    fprintf(stderr, "    rank %d: peer_error(rank %d, %s): %s\n", ep->rank, peer,
            rcoll_strerror(status), reason);
}

int ct_open(const ct_run_t *run, ct_ep_t *ep, int rank)
{
    memset(ep, 0, sizeof(*ep));
    ep->run = run;
    ep->rank = rank;
    ep->node_of[0] = 0;
    ep->node_of[1] = run->split_nodes ? 1 : 0;
    rcoll_tl_params_t p = {
        .rank = rank, .size = 2, .node_of = ep->node_of, .config = &run->config,
        .cb = { .arg = ep, .recv = recv_cb, .peer_error = peer_error_cb },
    };
    rcoll_status_t st = run->ops->open(&p, &ep->tl);
    if (st != RCOLL_OK) {
        ep->tl = NULL;
        return ct_fail("open() of rank %d failed: %s", rank, rcoll_strerror(st));
    }
    return 0;
}

int ct_has_cap(const ct_run_t *run, unsigned cap)
{
    return (run->caps & cap) != 0;
}

void ct_close(ct_ep_t *ep)
{
    if (ep->tl != NULL) {
        ep->run->ops->close(ep->tl);
        ep->tl = NULL;
    }
}

int ct_connect_addr(ct_ep_t *a, int peer, const void *addr, size_t len)
{
    rcoll_status_t st = a->run->ops->connect(a->tl, peer, addr, len);
    return st == RCOLL_OK ? 0 : ct_fail("rank %d: connect() to rank %d failed: %s", a->rank,
                                        peer, rcoll_strerror(st));
}

int ct_connect_pair(ct_ep_t *a, ct_ep_t *b)
{
    const void *addr[2];
    size_t len[2];
    if (a->run->ops->address(a->tl, &addr[0], &len[0]) != RCOLL_OK ||
        b->run->ops->address(b->tl, &addr[1], &len[1]) != RCOLL_OK) {
        return ct_fail("address() failed");
    }
    return ct_connect_addr(a, b->rank, addr[1], len[1]) || ct_connect_addr(b, a->rank, addr[0], len[0]);
}

int ct_wait(ct_ep_t **eps, int n, int (*done)(void *arg), void *arg, double seconds)
{
    double end = ct_now() + seconds;
    while (!done(arg)) {
        int events = 0;
        for (int i = 0; i < n; i++) {
            if (eps[i] != NULL && eps[i]->tl != NULL) {
                events += eps[i]->run->ops->progress(eps[i]->tl);
            }
        }
        if (ct_now() > end) {
            return 1;
        }
        if (events == 0) {
            sched_yield();
        }
    }
    return 0;
}

static int never(void *arg)
{
    return 0;
}

void ct_drain(ct_ep_t **eps, int n, double seconds)
{
    ct_wait(eps, n, never, NULL, seconds);
}

rcoll_status_t ct_send_data(ct_ep_t *from, int to, uint32_t seq, size_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    if (buf == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < len; i++) {
        buf[i] = ct_pattern(seq, i);
    }
    ct_hdr_t h = { CT_MSG_DATA, seq, (uint32_t)len, checksum(buf, len) };
    rcoll_status_t st = from->run->ops->send(from->tl, to, &h, sizeof(h), buf, len);
    /* The contract: both parts are copied before send() returns. */
    memset(buf, 0xEE, len);
    memset(&h, 0xEE, sizeof(h));
    free(buf);
    return st;
}

rcoll_status_t ct_send_ctl(ct_ep_t *from, int to, int kind, uint32_t a, uint32_t b, uint32_t c)
{
    ct_hdr_t h = { (uint32_t)kind, a, b, c };
    return from->run->ops->send(from->tl, to, &h, sizeof(h), NULL, 0);
}

static void put_cb(rcoll_tl_completion_t *self, rcoll_status_t status)
{
    ct_put_t *p = (ct_put_t *)self;
    p->calls++;
    p->status = status;
}

void ct_put_init(ct_put_t *p)
{
    memset(p, 0, sizeof(*p));
    p->comp.cb = put_cb;
}
