/*
 * verbs_qpmap.h - QP number -> peer, for receive completions from the shared
 * receive queue (pure logic, no verbs).
 *
 * With an SRQ a receive buffer belongs to no peer: the completion's qp_num
 * says whose SEND filled it.  Open addressing with linear probing and
 * backward-shift deletion (no tombstones), grown at half full; QP numbers are
 * 24 bits, so any uint32_t key is accepted.  Entries: one per live QP.
 */
#ifndef RCOLL_VERBS_QPMAP_H
#define RCOLL_VERBS_QPMAP_H

#include <stdint.h>

typedef struct rcoll_verbs_qpmap_slot {
    uint32_t qpn;
    int      peer;          /* -1: empty */
} rcoll_verbs_qpmap_slot_t;

typedef struct rcoll_verbs_qpmap {
    rcoll_verbs_qpmap_slot_t *slots;
    uint32_t                  cap;     /* a power of two, or 0 before the first put */
    uint32_t                  count;
} rcoll_verbs_qpmap_t;

void rcoll__verbs_qpmap_init(rcoll_verbs_qpmap_t *m);
void rcoll__verbs_qpmap_free(rcoll_verbs_qpmap_t *m);
/* Map qpn to peer (>= 0), replacing an earlier mapping; 0, or -1 without memory. */
int  rcoll__verbs_qpmap_put(rcoll_verbs_qpmap_t *m, uint32_t qpn, int peer);
/* The peer of qpn, or -1. */
int  rcoll__verbs_qpmap_get(const rcoll_verbs_qpmap_t *m, uint32_t qpn);
/* Forget qpn (nothing if unknown). */
void rcoll__verbs_qpmap_del(rcoll_verbs_qpmap_t *m, uint32_t qpn);

#endif
