/*
 * fault.h (core) - RCOLL_FAULT parsed into the context; the hook itself is in
 * common/fault_hook.h.
 */
#ifndef RCOLL_SRC_FAULT_H
#define RCOLL_SRC_FAULT_H

#include "fault_hook.h"

/* What RCOLL_FAULT asks of this context (ctx->fault). */
typedef struct {
    int                 rank;      /* world rank that dies; -1: none */
    rcoll_fault_point_t point;
    unsigned long       n;         /* the occurrence of the point */
    unsigned long       seen;      /* rndv, shrink: occurrences so far */
} rcoll_fault_t;

struct rcoll_context;

/* Parse ctx->config.fault (world size known): RCOLL_ERR_INVALID_ARG, logged,
 * when it is malformed or out of range. */
rcoll_status_t rcoll__fault_init(struct rcoll_context *ctx);

#endif
