/* coll_comm.c - releasing the collectives' per-communicator state (coll_comm.h). */
#include "coll_comm.h"
#include "shm/shm.h"

void rcoll_coll_comm_fini(rcoll_comm_t *comm)
{
    if (rcoll_coll_comm(comm)->shm != NULL) {
        rcoll__shm_free(comm);
    }
}
