/*
 * Binding (--bind-to core|numa|none, --report-bindings).  The plan is made
 * with hwloc before any rank starts, within the CPUs rcollrun itself may
 * run on: rank r gets core r (its hardware threads), or with numa the NUMA
 * node r * nnuma / nranks.  When the ranks outnumber those cores nothing is
 * bound (ranks would be stacked on cores while others idle) and the ranks
 * get RCOLL_SPIN_COUNT=0 unless it is set: they yield the CPU as soon as
 * they wait.  The child applies its set with sched_setaffinity(), which is
 * async-signal-safe; --nodes changes nothing here (virtual nodes share the
 * machine's cores).
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

static struct {
    int        n;
    cpu_set_t *sets;       /* per rank; NULL: no binding */
    bool       oversubscribed;
} bp;

/* "0-3,8" */
static void list_of(hwloc_const_bitmap_t set, char *buf, size_t len)
{
    if (hwloc_bitmap_list_snprintf(buf, len, set) < 0)
        snprintf(buf, len, "?");
}

static void report(const rcollrun_opts_t *o, int r, const char *what, hwloc_const_bitmap_t set)
{
    char cpus[256];

    list_of(set, cpus, sizeof(cpus));
    if (o->layout.isolated)
        rcollrun_msg("rank %d (node %s): %s: cpus %s", r, o->layout.names[o->layout.node_of[r]],
                     what, cpus);
    else
        rcollrun_msg("rank %d: %s: cpus %s", r, what, cpus);
}

/* The cores (or NUMA nodes) that meet `avail`, each cut to it. */
static int targets(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t avail,
                   hwloc_bitmap_t *out, int max)
{
    int n = 0, total = hwloc_get_nbobjs_by_type(topo, type);

    for (int i = 0; i < total && n < max; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, i);

        if (obj == NULL || obj->cpuset == NULL || !hwloc_bitmap_intersects(obj->cpuset, avail))
            continue;
        out[n] = hwloc_bitmap_dup(obj->cpuset);
        hwloc_bitmap_and(out[n], out[n], avail);
        n++;
    }
    return n;
}

int rcollrun_bind_plan(const rcollrun_opts_t *o)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t avail = hwloc_bitmap_alloc();
    hwloc_bitmap_t cores[RCOLLRUN_MAX_RANKS], doms[RCOLLRUN_MAX_RANKS];
    int ncores = 0, ndoms = 0, rc = -1;

    bp.n = o->nranks;
    if (avail == NULL || hwloc_topology_init(&topo) != 0) {
        rcollrun_msg("hwloc: cannot initialise a topology");
        hwloc_bitmap_free(avail);
        return -1;
    }
    if (hwloc_topology_load(topo) != 0) {
        rcollrun_msg("hwloc: cannot load the topology of this machine");
        goto out;
    }
    if (hwloc_get_cpubind(topo, avail, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(avail))
        hwloc_bitmap_copy(avail, hwloc_topology_get_allowed_cpuset(topo));
    ncores = targets(topo, HWLOC_OBJ_CORE, avail, cores, RCOLLRUN_MAX_RANKS);
    if (o->bind_to == RCOLLRUN_BIND_NUMA)
        ndoms = targets(topo, HWLOC_OBJ_NUMANODE, avail, doms, RCOLLRUN_MAX_RANKS);
    bp.oversubscribed = o->nranks > ncores;
    if (o->bind_to == RCOLLRUN_BIND_NONE || bp.oversubscribed ||
        (o->bind_to == RCOLLRUN_BIND_NUMA && ndoms == 0)) {
        char why[96];

        if (o->bind_to == RCOLLRUN_BIND_NONE)
            snprintf(why, sizeof(why), "not bound (--bind-to none)");
        else if (bp.oversubscribed)
            snprintf(why, sizeof(why), "not bound (%d ranks, %d cores)", o->nranks, ncores);
        else
            snprintf(why, sizeof(why), "not bound (hwloc finds no NUMA node)");
        if (o->report_bindings)
            for (int r = 0; r < o->nranks; r++)
                report(o, r, why, avail);
        rc = 0;
        goto out;
    }
    bp.sets = calloc((size_t)o->nranks, sizeof(cpu_set_t));
    if (bp.sets == NULL) {
        rcollrun_msg("out of memory");
        goto out;
    }
    for (int r = 0; r < o->nranks; r++) {
        bool numa = o->bind_to == RCOLLRUN_BIND_NUMA;
        int t = numa ? (int)((long)r * ndoms / o->nranks) : r;
        hwloc_bitmap_t set = numa ? doms[t] : cores[t];
        char what[64];

        hwloc_cpuset_to_glibc_sched_affinity(topo, set, &bp.sets[r], sizeof(cpu_set_t));
        if (o->report_bindings) {
            snprintf(what, sizeof(what), "bound to %s %d", numa ? "NUMA node" : "core", t);
            report(o, r, what, set);
        }
    }
    rc = 0;
out:
    for (int i = 0; i < ncores; i++)
        hwloc_bitmap_free(cores[i]);
    for (int i = 0; i < ndoms; i++)
        hwloc_bitmap_free(doms[i]);
    hwloc_bitmap_free(avail);
    hwloc_topology_destroy(topo);
    return rc;
}

const void *rcollrun_bind_set(int rank)
{
    return bp.sets != NULL && rank >= 0 && rank < bp.n ? &bp.sets[rank] : NULL;
}

bool rcollrun_bind_oversubscribed(void)
{
    return bp.oversubscribed;
}

void rcollrun_bind_free(void)
{
    free(bp.sets);
    bp.sets = NULL;
}
