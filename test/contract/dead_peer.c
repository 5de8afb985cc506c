/*
 * dead_peer.c - "when a peer becomes unreachable the backend calls
 * peer_error() and never aborts the process".
 *
 * The peer is killed for real: for a backend between processes it runs in a
 * forked child (addresses exchanged over a socketpair) that gets SIGKILL once
 * a ping has gone both ways; for loop, whose ranks live in one process, its
 * instance is closed.  Rank 0 then keeps sending to it and progressing, and
 * passes when peer_error() has been called within the deadline.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "contract.h"

#define DETECT_SECONDS 30   /* rc QPs: ACK timeout ~1.07 s x 7 retries, slower under emulation */

static int write_all(int fd, const void *p, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, (const char *)p + off, len - off);
        if (n <= 0) {
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = read(fd, (char *)p + off, len - off);
        if (n <= 0) {
            return -1;
        }
        off += (size_t)n;
    }
    return 0;
}

/* Send our address, receive the peer's, connect to it. */
static int exchange(ct_ep_t *ep, int fd)
{
    const void *addr;
    size_t len;
    uint64_t plen;
    if (ep->run->ops->address(ep->tl, &addr, &len) != RCOLL_OK) {
        return ct_fail("rank %d: address() failed", ep->rank);
    }
    plen = len;
    if (write_all(fd, &plen, sizeof(plen)) || write_all(fd, addr, len) ||
        read_all(fd, &plen, sizeof(plen)) || plen > (1u << 20)) {
        return ct_fail("rank %d: the address exchange failed", ep->rank);
    }
    void *peer = malloc(plen ? plen : 1);
    int rc = peer == NULL || read_all(fd, peer, plen) ? ct_fail("rank %d: reading the peer's address failed", ep->rank)
                                                       : ct_connect_addr(ep, 1 - ep->rank, peer, plen);
    free(peer);
    return rc;
}

/* The victim: answer pings until killed (or, as a safety net, 120 s). */
static void victim(const ct_run_t *run, int fd)
{
    ct_ep_t ep;
    if (ct_open(run, &ep, 1) || exchange(&ep, fd)) {
        _exit(1);
    }
    ct_ep_t *eps[] = { &ep };
    ct_drain(eps, 1, 120);
    _exit(0);
}

static int pong_seen(void *arg)
{
    return ((ct_ep_t *)arg)->pongs > 0;
}

/* Rank 0's side once the peer is gone: keep sending, wait for peer_error(). */
static int expect_peer_error(ct_ep_t *a)
{
    double end = ct_now() + DETECT_SECONDS;
    int sends = 0, failed_sends = 0;
    while (a->peer_errors == 0 && ct_now() < end) {
        if (sends < 1000) {
            sends++;
            failed_sends += ct_send_data(a, 1, (uint32_t)sends % CT_MAX_SEQ, 64) != RCOLL_OK;
        }
        ct_ep_t *eps[] = { a };
        ct_drain(eps, 1, 0.01);
    }
    if (a->peer_errors == 0) {
        return ct_fail("no peer_error() within %d s of the peer's death (%d of %d sends to it "
                       "failed)", DETECT_SECONDS, failed_sends, sends);
    }
    return 0;
}

static int dead_peer_in_process(const ct_run_t *run)
{
    ct_ep_t a, b;
    int rc = ct_open(run, &a, 0) || ct_open(run, &b, 1) || ct_connect_pair(&a, &b);
    ct_ep_t *eps[] = { &a, &b };
    if (rc == 0 && (ct_send_ctl(&a, 1, CT_MSG_PING, 0, 0, 0) != RCOLL_OK ||
                    ct_wait(eps, 2, pong_seen, &a, 20))) {
        rc = ct_fail("no answer to a ping within 20 s");
    }
    if (rc == 0) {
        ct_close(&b);
        rc = expect_peer_error(&a);
    }
    ct_close(&a);
    ct_close(&b);
    return rc;
}

int ct_case_dead_peer(const ct_run_t *run)
{
    if (strcmp(run->ops->name, "loop") == 0) {
        return dead_peer_in_process(run);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return ct_fail("socketpair failed");
    }
    pid_t pid = fork();
    if (pid < 0) {
        return ct_fail("fork failed");
    }
    if (pid == 0) {
        close(sv[0]);
        victim(run, sv[1]);
    }
    close(sv[1]);
    ct_ep_t a;
    int rc = ct_open(run, &a, 0) || exchange(&a, sv[0]);
    ct_ep_t *eps[] = { &a };
    if (rc == 0 && (ct_send_ctl(&a, 1, CT_MSG_PING, 0, 0, 0) != RCOLL_OK ||
                    ct_wait(eps, 1, pong_seen, &a, 20))) {
        rc = ct_fail("no answer to a ping from the peer process within 20 s");
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(sv[0]);
    if (rc == 0) {
        rc = expect_peer_error(&a);
    }
    ct_close(&a);
    return rc;
}
