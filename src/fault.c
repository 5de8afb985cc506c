/*
 * fault.c - RCOLL_FAULT="<world rank>:<point>[:<n>]": that rank kills itself
 * with SIGKILL at the point (common/fault_hook.h lists them; the fault
 * matrix, test/integration/fault_matrix.sh, drives it; shrink_check's kill
 * modes use shrink).  Parsed once at init
 * into ctx->fault; the hooks call rcoll__fault_hit only when the setting is
 * not empty.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "fault.h"

static const struct {
    const char          *name;
    rcoll_fault_point_t  point;
    unsigned long        n;        /* default occurrence */
    int                  takes_n;
} points[] = {
    { "fence",     RCOLL_FAULT_FENCE,     1, 0 },
    { "shm-setup", RCOLL_FAULT_SHM_SETUP, 1, 0 },
    { "pipeline",  RCOLL_FAULT_PIPELINE,  2, 1 },
    { "rndv",      RCOLL_FAULT_RNDV,      1, 1 },
    { "finalize",  RCOLL_FAULT_FINALIZE,  1, 0 },
    { "shrink",    RCOLL_FAULT_SHRINK,    1, 1 },
};

static rcoll_status_t bad(const char *value, const char *why)
{
    rcoll_error("RCOLL_FAULT=%s: %s; expected <world rank>:<point>[:<n>], point one of fence, "
                "shm-setup, pipeline[:n], rndv[:n], finalize, shrink[:n]", value, why);
    return RCOLL_ERR_INVALID_ARG;
}

rcoll_status_t rcoll__fault_init(rcoll_context_t *ctx)
{
    const char *value = ctx->config.fault;
    ctx->fault = (rcoll_fault_t){ .rank = -1 };
    if (value[0] == '\0') {
        return RCOLL_OK;
    }
    char *end;
    long rank = strtol(value, &end, 10);
    if (end == value || *end != ':') {
        return bad(value, "no world rank");
    }
    if (rank < 0 || rank >= ctx->size) {
        return bad(value, "the rank is not in the job");
    }
    const char *name = end + 1, *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        if (strlen(points[i].name) != len || strncmp(points[i].name, name, len) != 0) {
            continue;
        }
        unsigned long n = points[i].n;
        if (colon != NULL) {
            if (!points[i].takes_n) {
                return bad(value, "this point takes no count");
            }
            errno = 0;
            n = strtoul(colon + 1, &end, 10);
            if (end == colon + 1 || *end != '\0' || errno != 0 || n < 1 || n > 1000000) {
                return bad(value, "the count must be 1 to 1000000");
            }
        }
        ctx->fault = (rcoll_fault_t){ .rank = (int)rank, .point = points[i].point, .n = n };
        if (ctx->rank == rank) {
            rcoll_warn("RCOLL_FAULT=%s: this rank will kill itself (SIGKILL) there", value);
        }
        return RCOLL_OK;
    }
    return bad(value, "unknown point");
}

void rcoll__fault_hit(rcoll_context_t *ctx, rcoll_fault_point_t point, unsigned long count)
{
    rcoll_fault_t *f = &ctx->fault;
    if (f->rank != ctx->rank || f->point != point) {
        return;
    }
    if (point == RCOLL_FAULT_RNDV || point == RCOLL_FAULT_SHRINK) {
        count = ++f->seen;          /* counted here: their callers keep no count */
    }
    if (count == f->n) {
        raise(SIGKILL);
    }
}
