/*
 * auth.h - the job's secret and what is derived from it (src/auth.c;
 * threat model and costs in docs/security.md).
 *
 * Rank 0 draws a 128-bit secret with getrandom at init; it reaches the
 * other ranks inside rank 0's address blob (the bootstrap's exchange:
 * PMIx, or the caller's all-gather under rcoll_init_oob) and nowhere else:
 * no file, no environment variable.  Every check between ranks uses a key
 * derived from it for one purpose and one ordered pair of ranks, so a key
 * seen on one link says nothing about another:
 *
 *   - UCX messages carry SipHash-2-4 under the pair's key and a per-pair
 *     sequence number checked against a sliding window (replay);
 *   - verbs rdma_cm connection requests carry a proof for (src, dst, nonce);
 *   - a shared-memory segment's header carries a token for its communicator.
 *
 * A transport opened without a context (the contract tests) gets
 * params->auth == NULL and uses rcoll__auth_none: a fixed all-zero secret.
 */
#ifndef RCOLL_AUTH_H
#define RCOLL_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"
#include "siphash.h"

#define RCOLL_AUTH_SECRET_LEN 16

typedef struct rcoll_auth {
    int     ready;                             /* 1: secret is the job's */
    uint8_t secret[RCOLL_AUTH_SECRET_LEN];
} rcoll_auth_t;

/* For transports opened without a context (tests): all zero, ready. */
extern const rcoll_auth_t rcoll__auth_none;

/* Fill buf with len bytes from getrandom; RCOLL_ERR_INTERNAL (logged) if the
 * kernel gives none. */
rcoll_status_t rcoll__auth_random(void *buf, size_t len);

/* Rank 0: draw a fresh secret (ready); others: take rank 0's (ready). */
rcoll_status_t rcoll__auth_generate(rcoll_auth_t *a);
void rcoll__auth_adopt(rcoll_auth_t *a, const uint8_t secret[RCOLL_AUTH_SECRET_LEN]);

/* The key for one purpose (label, e.g. "ucx") and one ordered pair of ids
 * (e.g. sender and receiver world rank). */
void rcoll__auth_pair_key(const rcoll_auth_t *a, const char *label, uint64_t from, uint64_t to,
                          uint8_t key[RCOLL_SIPHASH_KEY_LEN]);

/* A 64-bit token of the job for one purpose and id (e.g. "shm", a
 * communicator id): equal on every rank of the job, unpredictable to others.
 * ctx is the context (the collectives pass comm->ctx). */
uint64_t rcoll__auth_token(const rcoll_context_t *ctx, const char *label, uint64_t id);

/* The MAC of a message of len bytes that starts with a transport header of
 * hdr bytes (after the mac itself) and then rcoll's message: SipHash-2-4
 * under key of the transport header, rcoll's header, a control message's
 * key (an RTS's or RTR's body, rkey_len bytes as rcoll's header says), and
 * len.  It authenticates who sent the message, its sequence number, its
 * header (kind, communicator, step, lengths, call signature) and every byte
 * of a control message; not the data of an eager message, as rendezvous data
 * is not either (docs/security.md, "What a MAC covers"): covering it cost
 * ~1.5 cycles per byte on each side.  At most RCOLL_AUTH_MAC_COVER bytes
 * (more than the largest control message) are hashed. */
#define RCOLL_AUTH_MAC_COVER 1152
uint64_t rcoll__auth_msg_mac(const uint8_t key[RCOLL_SIPHASH_KEY_LEN], const void *msg, size_t len,
                             size_t hdr);

/* Equal without a data-dependent early exit. */
int rcoll__auth_equal64(uint64_t a, uint64_t b);

/*
 * Replay window over a per-pair sequence number (1, 2, ...): top is the
 * highest accepted, bit i of seen says top - i was accepted.  Messages may
 * be reordered by up to RCOLL_AUTH_WINDOW; anything older is refused.
 */
#define RCOLL_AUTH_WINDOW 64
typedef struct {
    uint64_t top;
    uint64_t seen;
} rcoll_auth_window_t;

/* 1 and marks seq as seen if it is new and inside the window, else 0. */
int rcoll__auth_window_accept(rcoll_auth_window_t *w, uint64_t seq);

/* One log line per burst of rejections: the first is logged, those within
 * the next second are counted and summed into the next line. */
typedef struct {
    double   next;
    unsigned suppressed;
} rcoll_auth_limiter_t;

__attribute__((format(printf, 2, 3)))
void rcoll__auth_reject(rcoll_auth_limiter_t *lim, const char *fmt, ...);

#endif
