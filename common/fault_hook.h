/*
 * fault_hook.h - deterministic fault injection for the fault matrix (issue 14
 * item 4; docs/reliability.md "Fault matrix").  RCOLL_FAULT="<world
 * rank>:<point>[:<n>]" (a test and diagnostic setting) makes that rank
 * raise(SIGKILL) at one named point.  src/fault.c parses the setting once at
 * init into the context; a hook costs one load and one predictable branch on
 * the setting's first byte when it is unset.  Included by the core and the
 * collectives (which see only the context's configuration).
 */
#ifndef RCOLL_FAULT_HOOK_H
#define RCOLL_FAULT_HOOK_H

#include "config.h"

typedef enum {
    RCOLL_FAULT_NONE = 0,
    RCOLL_FAULT_FENCE,      /* init: before the bootstrap's address exchange (its fence) */
    RCOLL_FAULT_SHM_SETUP,  /* world communicator's shm segment: created (comm rank 0) or attached */
    RCOLL_FAULT_PIPELINE,   /* shm allreduce/reduce pipeline: this rank's slice of chunk n reduced */
    RCOLL_FAULT_RNDV,       /* the n-th rendezvous send: its RTS out (UCX, get) or its put issued */
    RCOLL_FAULT_FINALIZE,   /* rcoll_finalize, before its barrier */
    RCOLL_FAULT_SHRINK      /* rcoll_comm_shrink: its n-th agreement message taken */
} rcoll_fault_point_t;

struct rcoll_context;

/* Kills this process (SIGKILL) when it is RCOLL_FAULT's rank, point is its
 * point and count its n (1 where the point takes no n). */
void rcoll__fault_hit(struct rcoll_context *ctx, rcoll_fault_point_t point, unsigned long count);

/* The hook at a point: nothing but a test of the setting when it is unset. */
#define RCOLL_FAULT_AT(_ctx, _point, _count) do {                                      \
        if (__builtin_expect(((const rcoll_config_t *)(const void *)(_ctx))->fault[0] != '\0', 0)) \
            rcoll__fault_hit((_ctx), (_point), (_count));                              \
    } while (0)

#endif
