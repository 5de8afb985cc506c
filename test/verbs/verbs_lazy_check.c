/*
 * verbs_lazy_check - the verbs backend makes its connections on first use
 * and publishes an address whose size does not depend on the job size
 * (issue 11 item 5; transports/verbs/verbs_cm.c).  Needs an RDMA device
 * (RCOLL_NET_DEVICES picks it; the soft-RDMA guest runs it on rxe and siw).
 *
 * In one process, N instances of the backend play ranks 0..N-1:
 *  1. blob: the address of rank 0 of 4 and of rank 0 of 256 have one size;
 *     and open() makes one CQ, sized for RCOLL_VERBS_CQ_PEERS (64) peers,
 *     not for the 255 of a 256-rank job (verbs_cqset.c);
 *  2. idle: after every rank connect()ed to every other, no QP exists;
 *  3. ring: each rank sends a burst to its right neighbour before any
 *     connection exists; every burst arrives whole and in order, and each
 *     rank then has exactly its two neighbours connected (2 QPs, 2 peers'
 *     receive buffers).  From here on a CQ holds one QP's work
 *     (verbs_cq_peers = 1), so each QP made brings its own CQ and every
 *     message below is polled from one of several CQs;
 *  4. both at once: ranks 0 and 2 (not neighbours) send to each other
 *     before either progresses: one connection results, both ways work;
 *  5. put first: a put to a peer never sent to before connects and lands;
 *  6. nobody there: with RCOLL_TIMEOUT 3, sends to two ranks whose
 *     instances are closed are each reported through peer_error within the
 *     connection deadline (10 s: a short RCOLL_TIMEOUT is raised to it,
 *     verbs_tl.c), naming the peer and the set-up step.
 * Receive memory (RCOLL_VERBS_SRQ, verbs_srq.c): the mode follows the
 * setting and the device (auto: a shared receive queue on IB and RoCE,
 * per-peer buffers on iWARP, where "on" must be refused).  Per-peer mode:
 * after the ring each rank holds exactly its two neighbours' receive
 * buffers.  SRQ mode: no peer's buffers at all, and the receive memory after
 * the ring and after the pair (3 peers connected) is what open() made,
 * RCOLL_VERBS_SRQ_SIZE x buffer size.  RCOLL_VERBS_SRQ_SIZE=2 makes the
 * ring's bursts (40 messages, a window of 32) overrun the pool: they must
 * still arrive whole and in order (the senders' RNR retries).
 * Prints one line per check and "verbs_lazy_check: N passed, M failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

#define NR    4
#define BURST 40

typedef struct {
    rcoll_tl_t *tl;
    int         rank;
    int         got[NR];          /* messages from each rank, in order */
    int         disorder;         /* a message out of order or malformed */
    int         errors[NR];       /* peer_error upcalls per peer */
    char        why[256];
} rank_t;

static rcoll_config_t config;
static const rcoll_tl_ops_t *ops = &rcoll_tl_verbs_ops;
static int passed, failed;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s verbs_lazy_check: %s%s%s\n", ok ? "PASS" : "FAIL", what, ok ? "" : ": ",
           ok ? "" : detail);
    fflush(stdout);
    ok ? passed++ : failed++;
}

static void recv_cb(void *arg, int peer, const void *msg, size_t len)
{
    rank_t *r = arg;
    uint32_t v[2];

    if (len != sizeof(v) || peer < 0 || peer >= NR) {
        r->disorder++;
        return;
    }
    memcpy(v, msg, sizeof(v));
    if (v[0] != (uint32_t)peer || v[1] != (uint32_t)r->got[peer]) {
        r->disorder++;
    }
    r->got[peer]++;
}

static void error_cb(void *arg, int peer, rcoll_status_t st, const char *reason)
{
    rank_t *r = arg;

    if (peer >= 0 && peer < NR) {
        r->errors[peer]++;
    }
    snprintf(r->why, sizeof(r->why), "%s (%s)", reason, rcoll_strerror(st));
}

static int open_rank(rank_t *r, int rank, int size)
{
    static int node_of[256];
    rcoll_tl_params_t p = {
        .rank = rank, .size = size, .hdr_size = 64, .node_of = node_of, .config = &config,
        .cb = { .arg = r, .recv = recv_cb, .peer_error = error_cb },
    };
    memset(r, 0, sizeof(*r));
    r->rank = rank;
    if (ops->open(&p, &r->tl) != RCOLL_OK) {
        r->tl = NULL;
        return -1;
    }
    return 0;
}

static size_t blob_len(rcoll_tl_t *tl)
{
    const void *a;
    size_t len = 0;
    return ops->address(tl, &a, &len) == RCOLL_OK ? len : 0;
}

static void progress_all(rank_t *rs, double seconds, int (*done)(rank_t *))
{
    double end = rcoll__verbs_now() + seconds;
    while (rcoll__verbs_now() < end && (done == NULL || !done(rs))) {
        for (int i = 0; i < NR; i++) {
            if (rs[i].tl != NULL) {
                ops->progress(rs[i].tl);
            }
        }
    }
}

static int send_seq(rank_t *rs, int from, int to, int n, int *sent)
{
    for (int k = 0; k < n; k++) {
        uint32_t v[2] = { (uint32_t)from, (uint32_t)(*sent)++ };
        if (ops->send(rs[from].tl, to, v, sizeof(v), NULL, 0) != RCOLL_OK) {
            return -1;
        }
    }
    return 0;
}

/* Peers connected (an RC QP in use) at a rank. */
static int connected(const rank_t *r)
{
    int n = 0;
    for (int p = 0; p < r->tl->size; p++) {
        n += p != r->rank && r->tl->eps[p].state == RCOLL_VERBS_EP_CONNECTED;
    }
    return n;
}

/* Receive buffer bytes a rank holds: the shared pool, or its peers' own. */
static size_t recv_bytes(const rank_t *r)
{
    size_t n = r->tl->srq != NULL ? (size_t)r->tl->srq_size * r->tl->buf_size : 0;
    for (int p = 0; p < r->tl->size; p++) {
        n += r->tl->eps[p].rmem != NULL ? (size_t)r->tl->depth * r->tl->buf_size : 0;
    }
    return n;
}

/* Peers whose receive buffers exist at a rank. */
static int with_buffers(const rank_t *r)
{
    int n = 0;
    for (int p = 0; p < r->tl->size; p++) {
        n += r->tl->eps[p].rmem != NULL;
    }
    return n;
}

static int ring_done(rank_t *rs)
{
    for (int i = 0; i < NR; i++) {
        if (rs[i].got[(i + NR - 1) % NR] < BURST) {
            return 0;
        }
    }
    return 1;
}

static int sent02[2];
static int pair_done(rank_t *rs)
{
    return rs[0].got[2] == sent02[1] && rs[2].got[0] == sent02[0];
}

static void check_blob(void)
{
    rank_t small, big;
    char d[160];

    if (open_rank(&small, 0, NR) != 0) {
        check(0, "blob size", "opening rank 0 of 4 failed");
        return;
    }
    size_t a = blob_len(small.tl);
    ops->close(small.tl);
    if (open_rank(&big, 0, 256) != 0) {
        check(0, "blob size", "opening rank 0 of 256 failed");
        return;
    }
    size_t b = blob_len(big.tl);
    unsigned qps = big.tl->nqps;
    int ncqs = big.tl->ncqs, cq_peers = big.tl->cq_peers, cq_size = big.tl->cq_size;
    int want_cqe = 64 * (2 * big.tl->depth + 16) + 64;
    ops->close(big.tl);
    snprintf(d, sizeof(d), "%zu bytes at 4 ranks, %zu at 256", a, b);
    check(a > 0 && a == b && a <= 128, "the address blob does not grow with the job", d);
    snprintf(d, sizeof(d), "%u QPs after open of rank 0 of 256", qps);
    check(qps == 0, "open creates no QP", d);
    snprintf(d, sizeof(d), "%d CQs for %d peers each, %d entries (want 1, 64, %d)", ncqs, cq_peers,
             cq_size, want_cqe);
    check(ncqs == 1 && cq_peers == 64 && cq_size == want_cqe,
          "open makes one CQ sized for 64 peers, not for the job's 255", d);
}

/* The receive-buffer mode open() chose, against the setting and the device;
 * on iWARP, RCOLL_VERBS_SRQ=on must make open() fail. */
static int check_mode(rank_t *rs)
{
    rcoll_tl_t *tl = rs[0].tl;
    int iwarp = tl->port.kind == RCOLL_VERBS_KIND_IWARP;
    int want_srq = strcmp(config.verbs_srq, "off") != 0 && !iwarp;
    char d[400];

    snprintf(d, sizeof(d), "RCOLL_VERBS_SRQ=%s on %s (%s): %s, %zu receive bytes at open",
             config.verbs_srq, tl->port.dev, rcoll__verbs_kind_name(tl->port.kind),
             tl->srq != NULL ? "a shared receive queue" : "per-peer buffers", recv_bytes(&rs[0]));
    printf("     mode: %s\n", d);
    check((tl->srq != NULL) == want_srq && (tl->srq == NULL || tl->srq_size >= 2),
          "the receive-buffer mode follows RCOLL_VERBS_SRQ and the device kind", d);
    if (iwarp) {
        rank_t on;
        char keep[sizeof(config.verbs_srq)];
        memcpy(keep, config.verbs_srq, sizeof(keep));
        snprintf(config.verbs_srq, sizeof(config.verbs_srq), "on");
        int opened = open_rank(&on, 0, NR) == 0;
        if (opened) {
            ops->close(on.tl);
        }
        memcpy(config.verbs_srq, keep, sizeof(keep));
        check(!opened, "RCOLL_VERBS_SRQ=on is refused on iWARP", "open() succeeded");
    }
    return want_srq;
}

static int ring_and_pair(rank_t *rs)
{
    char d[800];
    int bad = 0, qps = 0, sent[NR] = { 0 };
    int srq = check_mode(rs);
    size_t at_open[NR];

    for (int i = 0; i < NR; i++) {
        at_open[i] = recv_bytes(&rs[i]);
    }

    for (int i = 0; i < NR; i++) {
        for (int j = 0; j < NR; j++) {
            const void *a;
            size_t len;
            if (ops->address(rs[j].tl, &a, &len) != RCOLL_OK || ops->connect(rs[i].tl, j, a, len) != RCOLL_OK) {
                check(0, "connect", "connect() failed");
                return -1;
            }
        }
    }
    progress_all(rs, 0.3, NULL);
    for (int i = 0; i < NR; i++) {
        qps += (int)rs[i].tl->nqps + connected(&rs[i]);
    }
    snprintf(d, sizeof(d), "%d QPs or connections after connect() and 0.3 s of progress", qps);
    check(qps == 0, "connect() makes no connection", d);

    for (int i = 0; i < NR; i++) {
        if (send_seq(rs, i, (i + 1) % NR, BURST, &sent[i]) != 0) {
            check(0, "ring", "send failed");
            return -1;
        }
    }
    double t0 = rcoll__verbs_now();
    progress_all(rs, 60, ring_done);
    printf("     ring: connected and delivered in %.3f s\n", rcoll__verbs_now() - t0);
    d[0] = '\0';
    for (int i = 0; i < NR; i++) {
        int left = (i + NR - 1) % NR, c = connected(&rs[i]);
        if (rs[i].got[left] != BURST || rs[i].disorder || c != 2 || rs[i].tl->nqps != 2 ||
            rs[i].tl->nconnected != 2 || with_buffers(&rs[i]) != (srq ? 0 : 2) ||
            rs[i].tl->ncqs != 2 || (srq && recv_bytes(&rs[i]) != at_open[i])) {
            bad++;
            snprintf(d + strlen(d), sizeof(d) - strlen(d), "[rank %d: %d/%d from %d, %d out of "
                     "order, %d connected, %u QPs, %d peers' receive buffers, %d CQs, %zu receive "
                     "bytes, %zu at open] ", i, rs[i].got[left], BURST, left, rs[i].disorder, c,
                     rs[i].tl->nqps, with_buffers(&rs[i]), rs[i].tl->ncqs, recv_bytes(&rs[i]),
                     at_open[i]);
        }
    }
    check(bad == 0, srq ? "a ring burst sent before any connection arrives in order; only "
          "neighbours connect, each QP on its own CQ; receive memory is the shared pool made "
          "at open" : "a ring burst sent before any connection arrives in order; only neighbours "
          "connect, each QP on its own CQ, each with its own receive buffers", d);

    /* 0 and 2 are not neighbours: both connect at once. */
    if (send_seq(rs, 0, 2, 5, &sent02[0]) != 0 || send_seq(rs, 2, 0, 5, &sent02[1]) != 0) {
        check(0, "both at once", "send failed");
        return -1;
    }
    progress_all(rs, 60, pair_done);
    progress_all(rs, 0.5, NULL);        /* a second connection would show now */
    int again = send_seq(rs, 0, 2, 1, &sent02[0]) == 0 && send_seq(rs, 2, 0, 1, &sent02[1]) == 0;
    progress_all(rs, 30, pair_done);
    snprintf(d, sizeof(d), "0 got %d/%d from 2, 2 got %d/%d from 0; connected %d and %d (want 3, 3), "
             "%u and %u connections made; errors %d %d: %s%s", rs[0].got[2], sent02[1], rs[2].got[0],
             sent02[0], connected(&rs[0]), connected(&rs[2]), rs[0].tl->nconnected,
             rs[2].tl->nconnected, rs[0].errors[2], rs[2].errors[0], rs[0].why, rs[2].why);
    check(again && pair_done(rs) && connected(&rs[0]) == 3 && connected(&rs[2]) == 3 &&
          rs[0].tl->nconnected == 3 && rs[2].tl->nconnected == 3 && !rs[0].errors[2] &&
          !rs[2].errors[0] && !rs[0].disorder && !rs[2].disorder,
          "both ranks of a pair connecting at once end with one connection", d);
    if (srq) {
        snprintf(d, sizeof(d), "rank 0 with %d peers connected: %zu receive bytes, %zu at open; "
                 "rank 2: %zu, %zu", connected(&rs[0]), recv_bytes(&rs[0]), at_open[0],
                 recv_bytes(&rs[2]), at_open[2]);
        check(recv_bytes(&rs[0]) == at_open[0] && recv_bytes(&rs[2]) == at_open[2] &&
              with_buffers(&rs[0]) == 0 && with_buffers(&rs[2]) == 0 && at_open[0] > 0,
              "SRQ: receive memory with 2 and 3 peers connected is what open() made with none", d);
    }
    return 0;
}

static void put_done(rcoll_tl_completion_t *c, rcoll_status_t st)
{
    struct put { rcoll_tl_completion_t comp; int calls; rcoll_status_t st; } *p = (void *)c;
    p->calls++;
    p->st = st;
}

/* Rank 3 puts into rank 1 (not neighbours of each other in the ring? they
 * are not: 3's neighbours are 2 and 0). */
static void put_first(rank_t *rs)
{
    struct { rcoll_tl_completion_t comp; int calls; rcoll_status_t st; } pc = { { put_done }, 0, RCOLL_OK };
    static char dst[4096], src[4096];
    uint8_t rkey[RCOLL_TL_RKEY_MAX];
    size_t rlen = sizeof(rkey);
    rcoll_tl_mr_t *mr = NULL;
    char d[200];

    memset(src, 0x5a, sizeof(src));
    if (ops->mem_reg(rs[1].tl, dst, sizeof(dst), RCOLL_TL_ACCESS_LOCAL | RCOLL_TL_ACCESS_REMOTE_WRITE,
                     &mr) != RCOLL_OK || ops->pack_rkey(rs[1].tl, mr, rkey, &rlen) != RCOLL_OK) {
        check(0, "put first", "registering the target failed");
        return;
    }
    int before = rs[3].tl->eps[1].state;
    rcoll_status_t st = ops->put(rs[3].tl, 1, src, sizeof(src), (uintptr_t)dst, rkey, rlen, &pc.comp);
    double end = rcoll__verbs_now() + 60;
    while (st == RCOLL_OK && pc.calls == 0 && rcoll__verbs_now() < end) {
        progress_all(rs, 0.01, NULL);
    }
    snprintf(d, sizeof(d), "state before %d, put %s, %d completions (%s), data %s", before,
             rcoll_strerror(st), pc.calls, rcoll_strerror(pc.st), memcmp(dst, src, sizeof(dst)) ? "wrong" : "right");
    check(before == RCOLL_VERBS_EP_IDLE && st == RCOLL_OK && pc.calls == 1 && pc.st == RCOLL_OK &&
          memcmp(dst, src, sizeof(dst)) == 0 && rs[3].tl->eps[1].state == RCOLL_VERBS_EP_CONNECTED,
          "a put to a peer never used before connects and lands", d);
    ops->mem_dereg(rs[1].tl, mr);
}

/* Rank 0 of 3 sends to ranks 1 and 2, whose instances are closed: peer_error
 * names each at the connection deadline (RCOLL_TIMEOUT 3 s, raised to 10 s).
 * Two at once: when the first one's deadline passed, the second must still
 * be watched (check_waiting once counted a failed connection off twice and
 * then stopped looking). */
static void nobody_there(void)
{
    rank_t rs[NR];
    const void *a;
    size_t len, lens[3] = { 0 };
    uint8_t addr[3][256];
    char d[600];
    int sent = 0, ok = 1;

    memset(rs, 0, sizeof(rs));
    config.timeout = 3;
    for (int i = 0; i < 3 && ok; i++) {
        ok = open_rank(&rs[i], i, 3) == 0 && ops->address(rs[i].tl, &a, &len) == RCOLL_OK &&
             len <= sizeof(addr[i]);
        if (ok) {
            memcpy(addr[i], a, len);
            lens[i] = len;
        }
    }
    for (int i = 1; i < 3; i++) {
        if (rs[i].tl != NULL) {
            ops->close(rs[i].tl);
            rs[i].tl = NULL;
        }
    }
    if (!ok) {
        check(0, "nobody there", "open failed");
        if (rs[0].tl != NULL) {
            ops->close(rs[0].tl);
        }
        return;
    }
    for (int p = 1; p < 3 && ok; p++) {
        ok = ops->connect(rs[0].tl, p, addr[p], lens[p]) == RCOLL_OK && send_seq(rs, 0, p, 1, &sent) == 0;
    }
    if (!ok) {
        check(0, "nobody there", "connect or send failed");
        ops->close(rs[0].tl);
        return;
    }
    double t0 = rcoll__verbs_now();
    while ((rs[0].errors[1] == 0 || rs[0].errors[2] == 0) && rcoll__verbs_now() < t0 + 30) {
        ops->progress(rs[0].tl);
    }
    double took = rcoll__verbs_now() - t0;
    snprintf(d, sizeof(d), "after %.1f s: peer_error upcalls for rank 1: %d, rank 2: %d; last: %s",
             took, rs[0].errors[1], rs[0].errors[2], rs[0].why);
    check(rs[0].errors[1] == 1 && rs[0].errors[2] == 1 && took >= 9 && took < 20 &&
              strstr(rs[0].why, "the set-up was") != NULL,
          "two peers that never answer are each reported with the step, within the deadline", d);
    ops->close(rs[0].tl);
}

int main(void)
{
    rank_t rs[NR];

    if (rcoll_config_load(NULL, &config) != RCOLL_OK) {
        printf("verbs_lazy_check: cannot load the configuration\n0 passed, 1 failed\n");
        return 1;
    }
    check_blob();
    config.verbs_cq_peers = 1;          /* every QP its own CQ: progress polls several */
    memset(rs, 0, sizeof(rs));
    int ok = 1;
    for (int i = 0; i < NR && ok; i++) {
        ok = open_rank(&rs[i], i, NR) == 0;
    }
    if (!ok) {
        check(0, "open", "opening 4 instances failed");
    } else if (ring_and_pair(rs) == 0) {
        put_first(rs);
    }
    for (int i = 0; i < NR; i++) {
        if (rs[i].tl != NULL) {
            ops->close(rs[i].tl);
        }
    }
    nobody_there();
    printf("verbs_lazy_check: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
