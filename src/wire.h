/*
 * wire.h - the header of every message between ranks.
 *
 * Fixed 48-byte little-endian layout, encoded and decoded field by field so
 * that no struct padding or host byte order leaks onto the wire:
 *   off size field
 *     0    1 type      EAGER | RTR | FIN | RTS | DONE | WITHDRAW | DECLINE |
 *                      HOLD | PULL | PULLED | CREDIT (flow control, p2p_flow.c) |
 *                      WHERE_Q | WHERE_A (whereis_remote.c)
 *     1    1 version   RCOLL_WIRE_VERSION
 *     2    2 rkey_len  RTR, RTS: bytes of packed remote key after the header
 *     4    4 seq       collective sequence number on the communicator
 *     8    8 comm_id   communicator id
 *    16    4 step      message tag within the collective
 *    20    4 src       sender's rank in the communicator (for diagnostics)
 *    24    8 len       EAGER, PULLED: payload bytes after the header; RTR,
 *                      RTS: bytes of the advertised region; FIN: bytes
 *                      written; DONE: bytes read (or the receiver's length,
 *                      refusing); HOLD: bytes held; PULL: the receiver's
 *                      length; CREDIT: bytes of credit returned
 *    32    8 addr      RTR, RTS: address of the advertised region; FIN: the
 *                      address of the RTR it answers (a receive drops a FIN
 *                      naming another: forged or stale)
 *    40    4 sig       signature of the collective call (type, count,
 *                      datatype, op, root; task.c), 0 for the core's own
 *                      protocols: a receiver whose call has another one
 *                      fails the message with RCOLL_ERR_PROTOCOL
 *    44    4 reserved  0 (decode drops a message with anything else here)
 */
#ifndef RCOLL_WIRE_H
#define RCOLL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"

#define RCOLL_WIRE_VERSION  4     /* 3: the address blob carries the secret; UCX MACs; 4: the MAC covers headers, keys and length, not eager data; the blob offers a where table */
#define RCOLL_WIRE_HDR_SIZE 48

typedef enum {
    RCOLL_MSG_EAGER = 1,   /* header + payload */
    RCOLL_MSG_RTR   = 2,   /* ready to receive: header + packed rkey */
    RCOLL_MSG_FIN   = 3,   /* the rendezvous write is complete */
    /* Rendezvous by get (transports without revocable write keys, p2p.c): */
    RCOLL_MSG_RTS      = 4,   /* ready to send: header (len, addr of the source) + packed read key */
    RCOLL_MSG_DONE     = 5,   /* receiver to sender: it has read len bytes; a len other than
                                 the sender's: it refuses (its own length), read nothing */
    RCOLL_MSG_WITHDRAW = 6,   /* sender to receiver: its send failed, the RTS is void */
    RCOLL_MSG_DECLINE  = 7,   /* receiver to sender: its receive failed, it will not read */
    /* Flow control of eager messages (p2p_flow.c, docs/protocols.md): */
    RCOLL_MSG_HOLD     = 16,  /* sender to receiver: an eager message waits at the sender
                                 (no credit); header only, len = its length */
    RCOLL_MSG_PULL     = 17,  /* receiver to sender: the receive is posted, send it */
    RCOLL_MSG_PULLED   = 18,  /* the held message's payload, like EAGER, never kept unexpected */
    RCOLL_MSG_CREDIT   = 19,  /* receiver to sender: len bytes of eager credit come back */
    /* Where is everyone (whereis_remote.c), numbered apart from the rest: */
    RCOLL_MSG_WHERE_Q  = 40,  /* a timeout's query about ranks of this node: header + world ranks */
    RCOLL_MSG_WHERE_A  = 41,  /* its answer: header + one record per rank asked */
    /* Failure handling (revoke.c, comm_shrink.c; docs/reliability.md): */
    RCOLL_MSG_REVOKE   = 32,  /* comm_id is revoked: seq = the sender's first error, step = the
                                 failed world rank it knows of (or UINT32_MAX); header only */
    RCOLL_MSG_SHRINK   = 33   /* one message of rcoll_comm_shrink's agreement: seq = epoch,
                                 step = round << 2 | kind, addr = new comm id; the body
                                 (len bytes) is the failed set, one byte per comm rank */
} rcoll_msg_type_t;

#define RCOLL_WIRE_WHERE_MAX 8192   /* bytes after a WHERE_Q or WHERE_A header, at most */

typedef struct rcoll_wire_hdr {
    uint8_t  type;
    uint8_t  version;
    uint16_t rkey_len;
    uint32_t seq;
    uint64_t comm_id;
    uint32_t step;
    uint32_t src;
    uint64_t len;
    uint64_t addr;
    uint32_t sig;
} rcoll_wire_hdr_t;

/* Write hdr into buf (RCOLL_WIRE_HDR_SIZE bytes). */
void rcoll_wire_encode(const rcoll_wire_hdr_t *hdr, void *buf);

/*
 * Decode and validate a received message of msg_len bytes.  On success *hdr
 * holds the header and *body, *body_len the bytes after it.  Rejects (returns
 * RCOLL_ERR_PROTOCOL, writes why into err) a short message, an unknown type
 * or version, an EAGER whose len differs from the bytes present, an RTR whose
 * rkey_len differs from the bytes present or is zero, anything with
 * trailing bytes where none belong, and non-zero reserved bytes.
 */
rcoll_status_t rcoll_wire_decode(const void *msg, size_t msg_len, rcoll_wire_hdr_t *hdr,
                                 const void **body, size_t *body_len, char *err, size_t errlen);

const char *rcoll_msg_type_name(int type);

#endif
