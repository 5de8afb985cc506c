/*
 * status.h - internal status values beyond the public rcoll_status_t.
 * They never reach the user: the public API maps them before returning.
 */
#ifndef RCOLL_STATUS_H
#define RCOLL_STATUS_H

#include "rcoll.h"

/* The operation has started and is not finished: call progress again. */
#define RCOLL_INPROGRESS ((rcoll_status_t)(RCOLL_STATUS_LAST + 1))
/* No resources right now (credits, buffers): try again after progress. */
#define RCOLL_AGAIN      ((rcoll_status_t)(RCOLL_STATUS_LAST + 2))

#define RCOLL_API __attribute__((visibility("default")))

#endif
