/*
 * ft.h - failure handling's private state (revoke.c, comm_shrink.c):
 * the context's communicators by id, what each knows of failed members,
 * and the messages of shrink agreements not yet consumed.
 * docs/reliability.md, "Revoke and shrink".
 */
#ifndef RCOLL_FT_H
#define RCOLL_FT_H

#include "core.h"
#include "wire.h"

#define RCOLL_FT_MAX_MSGS 4096      /* shrink messages kept; more are dropped (hostile peer) */
#define RCOLL_FT_MAX_EARLY 64       /* revokes kept for communicators not yet made here */

typedef struct {
    rcoll_comm_t *comm;
    uint8_t      *named;           /* comm ranks named failed by revokes; NULL: none */
    uint32_t      shrinks;         /* rcoll_comm_shrink calls begun on it (the epoch) */
    uint32_t      revoke_err;      /* the error a received REVOKE carried (its sender's) */
} rcoll_ft_comm_t;

typedef struct {
    rcoll_list_t     link;
    int              wpeer;        /* sender's world rank */
    rcoll_wire_hdr_t hdr;
    size_t           body_len;
    uint8_t          body[];
} rcoll_ft_msg_t;

struct rcoll_ft {
    rcoll_ft_comm_t *comms;
    int              ncomms, cap;
    rcoll_list_t     msgs;         /* rcoll_ft_msg_t, oldest first */
    int              nmsgs;
    /* REVOKEs for communicator ids not (yet) made here: a member may make
     * a communicator (e.g. finish a shrink) later than another revokes it. */
    struct { uint64_t comm_id; int wpeer; uint32_t err, failed; } early[RCOLL_FT_MAX_EARLY];
    int              nearly;
};

rcoll_ft_comm_t *rcoll__ft_find(rcoll_context_t *ctx, uint64_t comm_id);
/* comm rank of world rank wr in comm, or -1. */
int  rcoll__ft_comm_rank(const rcoll_comm_t *comm, int wr);
/* Send a control message (header + body) to world rank wpeer; best effort. */
rcoll_status_t rcoll__ft_send(rcoll_context_t *ctx, int wpeer, const rcoll_wire_hdr_t *h,
                              const void *body, size_t body_len);
void rcoll__ft_msg_drop(rcoll_context_t *ctx, rcoll_ft_msg_t *m);

#endif
