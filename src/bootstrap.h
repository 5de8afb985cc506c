/*
 * bootstrap.h - PMIx client side: who am I, who are my peers, and an
 * address exchange (Put / Commit / Fence with data collection / Get).
 */
#ifndef RCOLL_BOOTSTRAP_H
#define RCOLL_BOOTSTRAP_H

#include <stddef.h>
#include "core.h"

/* Fills ctx->rank, size, local_rank, local_size, singleton, hostname.  A
 * process without a PMIx server becomes a singleton, unless the environment
 * shows a multi-process launch without PMIx (then RCOLL_ERR_BOOTSTRAP). */
rcoll_status_t rcoll_bootstrap_init(rcoll_context_t *ctx);

/* Publish a blob under key, visible to all ranks after the next fence. */
rcoll_status_t rcoll_bootstrap_put(rcoll_context_t *ctx, const char *key, const void *data, size_t len);

/* Commit what was put and wait (bounded by RCOLL_TIMEOUT) for every rank. */
rcoll_status_t rcoll_bootstrap_fence(rcoll_context_t *ctx);

/* Fetch rank's blob under key into a malloc'd buffer (caller frees). */
rcoll_status_t rcoll_bootstrap_get(rcoll_context_t *ctx, int rank, const char *key,
                                   void **data, size_t *len);

void rcoll_bootstrap_fini(rcoll_context_t *ctx);

#endif
