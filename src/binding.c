/*
 * binding.c - the CPU binding this process found (hwloc_get_cpubind), in
 * words, for rcoll_info and the init log line at RCOLL_LOG_LEVEL=info:
 * whatever launcher started us (rcollrun --bind-to, srun --cpu-bind,
 * mpirun --bind-to) and whether it bound at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <hwloc.h>
#include "binding.h"

void rcoll_binding_describe(char *buf, size_t len)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        snprintf(buf, len, "binding unknown (hwloc cannot initialise)");
        return;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    char *list = NULL;
    if (set == NULL || hwloc_topology_load(topo) != 0 ||
        hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0 ||
        hwloc_bitmap_list_asprintf(&list, set) < 0) {
        snprintf(buf, len, "binding unknown (hwloc cannot read it)");
    } else {
        hwloc_const_bitmap_t all = hwloc_topology_get_allowed_cpuset(topo);
        int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        int inside = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
        if (hwloc_bitmap_isincluded(all, set)) {
            snprintf(buf, len, "not bound: may run on all %d PUs (%s)", pus, list);
        } else {
            snprintf(buf, len, "bound to PUs %s (%d of %d cores)", list, inside, cores);
        }
    }
    free(list);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
}
