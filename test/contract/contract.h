/*
 * contract.h - the harness the transport contract cases share: endpoints
 * (one backend instance each, with the callbacks that record what arrived),
 * waits with deadlines, and the self-checking test messages.
 */
#ifndef RCOLL_CONTRACT_H
#define RCOLL_CONTRACT_H

#include <stddef.h>
#include <stdint.h>
#include "transport.h"

#define CT_MAX_SEQ 4096

/* What a run is about: the backend, and whether the two ranks are on one node. */
typedef struct {
    const rcoll_tl_ops_t *ops;
    int                   split_nodes;   /* 1: ranks 0 and 1 are on different nodes */
    rcoll_config_t        config;
    unsigned              caps;          /* the backend's RCOLL_TL_CAP_*, asked once by main */
} ct_run_t;

typedef struct {
    const ct_run_t *run;
    rcoll_tl_t     *tl;
    int             rank;
    int             node_of[2];
    /* filled in by the callbacks */
    int             nrecv;
    int             bad;                 /* malformed or corrupted messages seen */
    char            why[256];            /* the first of them */
    uint8_t         seen[CT_MAX_SEQ];    /* data messages per sequence number */
    int             ndata;               /* intact data messages */
    int             pongs;
    int             peer_errors;
    /* put_then_send: the registered region the ROUND messages describe */
    const uint8_t  *region;
    int             rounds_ok;
} ct_ep_t;

/* A put's completion, recording how and when it finished. */
typedef struct {
    rcoll_tl_completion_t comp;
    int                   calls;
    rcoll_status_t        status;
} ct_put_t;

enum { CT_MSG_DATA = 1, CT_MSG_PING, CT_MSG_PONG, CT_MSG_ROUND };

/* Print why a case failed (to stderr, prefixed with the case's name) and return 1. */
int  ct_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int  ct_open(const ct_run_t *run, ct_ep_t *ep, int rank);
void ct_close(ct_ep_t *ep);
/* a connects to the peer whose address is (addr, len). */
int  ct_connect_addr(ct_ep_t *a, int peer, const void *addr, size_t len);
/* Connect each of the two endpoints to the other. */
int  ct_connect_pair(ct_ep_t *a, ct_ep_t *b);
/* Progress every endpoint (NULL entries skipped) until done(arg) or the
 * deadline; returns 0 when done() became true. */
int  ct_wait(ct_ep_t **eps, int n, int (*done)(void *arg), void *arg, double seconds);
/* Progress every endpoint for a while. */
void ct_drain(ct_ep_t **eps, int n, double seconds);

/* A DATA message of `len` payload bytes with sequence number seq. */
rcoll_status_t ct_send_data(ct_ep_t *from, int to, uint32_t seq, size_t len);
rcoll_status_t ct_send_ctl(ct_ep_t *from, int to, int kind, uint32_t a, uint32_t b, uint32_t c);
/* The test pattern for byte i of message or round seq. */
uint8_t ct_pattern(uint32_t seq, size_t i);
void ct_put_init(ct_put_t *p);
double ct_now(void);

/* Open ranks 0 and 1 of run's backend, connect them and exchange a ping
 * (0: done); close both. */
int  ct_pair_up(const ct_run_t *run, ct_ep_t *a, ct_ep_t *b);
void ct_pair_down(ct_ep_t *a, ct_ep_t *b);
/* Whether the backend claims capability cap (RCOLL_TL_CAP_*): run->caps,
 * which main asks of an instance in a child process of its own, so that no
 * case's process opens the backend more than its case does. */
int  ct_has_cap(const ct_run_t *run, unsigned cap);

/* The cases (cases.c, get_cases.c, dead_peer.c): 0 passed, 1 failed (ct_fail
 * says why), CT_SKIP: the backend does not offer what the case is about. */
#define CT_SKIP 2
int ct_case_send_recv(const ct_run_t *run);
int ct_case_put_then_send(const ct_run_t *run);
int ct_case_put_range(const ct_run_t *run);
int ct_case_dereg_revokes(const ct_run_t *run);
int ct_case_dead_peer(const ct_run_t *run);
int ct_case_get_range(const ct_run_t *run);
int ct_case_late_get(const ct_run_t *run);
int ct_case_two_threads(const ct_run_t *run);
int ct_case_abort_unconnected(const ct_run_t *run);   /* first_use.c */

#endif
