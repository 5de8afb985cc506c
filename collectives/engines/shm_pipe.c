/*
 * shm_pipe.c - the shared-memory chunk pipeline driver (shm_pipe.h).
 */
#include "shm_pipe.h"

void rcoll__shm_slot_mismatch(rcoll_task_t *task, rcoll__shm_op_t *op, int q, uint64_t word)
{
    rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): rank %d "
                "called a different collective, count, datatype, op or root (signature %06llx, "
                "this rank %06llx); its data is not used",
                rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                (unsigned long long)op->k, q, (unsigned long long)(word >> RCOLL__SHM_K_BITS),
                (unsigned long long)(op->word >> RCOLL__SHM_K_BITS));
    op->error = RCOLL_ERR_PROTOCOL;
}

void rcoll__shm_pipe_init(rcoll__shm_pipe_t *P, rcoll__shm_t *sh, size_t chunk, size_t nbytes,
                          int nstages)
{
    memset(P, 0, sizeof(*P));
    P->chunk = chunk;
    P->nchunks = (nbytes + chunk - 1) / chunk;
    P->nstages = nstages;
    P->g0 = rcoll__shm_pipe_start(sh, chunk, P->nchunks);
}

/* Stage s may take chunk done[s] now. */
static int may_run(const rcoll__shm_pipe_t *P, int s, size_t nbuf)
{
    if (s > 0) {
        return P->done[s] < P->done[s - 1];
    }
    return P->done[0] < P->nchunks && (P->nstages == 1 || P->done[0] < P->done[1] + nbuf);
}

rcoll_status_t rcoll__shm_pipe_drive(rcoll_task_t *task, rcoll__shm_op_t *op, rcoll__shm_pipe_t *P,
                                     const rcoll__shm_stage_fn *stages, void *state)
{
    size_t *last = &P->done[P->nstages - 1], nbuf = (size_t)op->sh->nbuf;
    int moved = 0, any;

    do {
        any = 0;
        for (int s = 0; s < P->nstages; s++) {
            if (may_run(P, s, nbuf)) {
                any |= stages[s](task, state);
            }
        }
        moved |= any;
    } while (any && *last < P->nchunks);
    if (*last < P->nchunks) {
        if (moved) {
            rcoll__shm_progressed(task);
        }
        return RCOLL_INPROGRESS;
    }
    rcoll__shm_pipe_leave(task, op, P->g0 + P->nchunks - 1);
    return RCOLL_OK;
}
