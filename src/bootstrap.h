/*
 * bootstrap.h - how a context learns its rank, its peers and their
 * addresses: a small ops table with two implementations.
 *
 *   bootstrap_pmix.c  a process under a PMIx launcher (rcoll_init)
 *   bootstrap_oob.c   a user-supplied all-gather (rcoll_init_oob)
 *
 * An implementation's init function fills ctx->rank, size, local_rank,
 * local_size (0: derive from the node names), singleton, hostname and
 * node_name, and sets ctx->boot_ops (and ctx->boot, its private state).
 * After that the core only uses the ops: one exchange of every rank's
 * address blob, then fini.  Nothing of the bootstrap is used after
 * rcoll_init* returns, except fini at rcoll_finalize.
 */
#ifndef RCOLL_BOOTSTRAP_H
#define RCOLL_BOOTSTRAP_H

#include <stddef.h>
#include "core.h"

struct rcoll_bootstrap_ops {
    const char *name;
    /* Collective over all ranks: contribute blob (len bytes, lengths may
     * differ between ranks) and receive every rank's blob: blobs[r] is a
     * malloc'd copy of rank r's (lens[r] bytes), freed by the caller.
     * Bounded by RCOLL_TIMEOUT where the implementation can bound it. */
    rcoll_status_t (*exchange)(rcoll_context_t *ctx, const void *blob, size_t len,
                               void **blobs, size_t *lens);
    /* Release the implementation's state (ctx->boot); ctx may be partly set up. */
    void (*fini)(rcoll_context_t *ctx);
};

/* PMIx: a process without a PMIx server becomes a singleton, unless the
 * environment shows a multi-process launch without PMIx (then
 * RCOLL_ERR_BOOTSTRAP). */
rcoll_status_t rcoll_bootstrap_pmix_init(rcoll_context_t *ctx);

/* The caller's all-gather; oob was validated by the caller and is copied.
 * Its allgather is called only from exchange, i.e. inside rcoll_init_oob. */
rcoll_status_t rcoll_bootstrap_oob_init(rcoll_context_t *ctx, const rcoll_oob_t *oob);

/* Check an rcoll_oob_t at the API edge; logs what is wrong. */
rcoll_status_t rcoll_bootstrap_oob_check(const rcoll_oob_t *oob);

#endif
