/*
 * spin.c - how long a waiting rank spins before it yields (RCOLL_SPIN_COUNT).
 *
 * "auto" spins 1000 idle polls, unless this node's ranks outnumber its online
 * CPUs: then a spinning rank holds the core that the rank it waits for needs,
 * and every idle poll yields at once.  rcollrun passes RCOLL_SPIN_COUNT=0 in
 * that case already; this makes the same choice under any launcher (Slurm,
 * mpirun, a user's own runtime through rcoll_init_oob).
 */
#include <unistd.h>
#include "core.h"

#define SPIN_DEFAULT 1000u

void rcoll__spin_resolve(rcoll_context_t *ctx)
{
    if (ctx->config.spin_count != RCOLL_CONFIG_UINT_AUTO) {
        ctx->spin_limit = ctx->config.spin_count;
        return;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int over = cpus > 0 && ctx->local_size > cpus;
    unsigned limit = over ? 0 : SPIN_DEFAULT;
    int changed = limit != ctx->spin_limit;
    ctx->spin_limit = limit;
    if (over && changed) {
        rcoll_info("%d ranks on this node share %ld online CPUs: waiting ranks yield at once "
                   "(RCOLL_SPIN_COUNT=auto chose 0; set it to override)", ctx->local_size, cpus);
    }
}

