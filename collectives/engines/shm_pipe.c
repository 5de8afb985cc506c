/*
 * shm_pipe.c - the shared-memory chunk pipeline driver (shm_pipe.h).
 */
#include "shm_pipe.h"

void rcoll__shm_slot_mismatch(rcoll_task_t *task, rcoll__shm_op_t *op, int q, uint64_t word)
{
    rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): rank %d "
                "called a different collective, count, datatype, op or root, or took another path "
                "(signature %06llx, this rank %06llx); its data is not used",
                rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                (unsigned long long)op->k, q, (unsigned long long)(word >> RCOLL__SHM_K_BITS),
                (unsigned long long)(op->word >> RCOLL__SHM_K_BITS));
    op->error = RCOLL_ERR_PROTOCOL;
}

void rcoll__shm_pipe_init(rcoll__shm_pipe_t *P, rcoll__shm_t *sh, size_t chunk, size_t nbytes,
                          int nstages, int over_all)
{
    memset(P, 0, sizeof(*P));
    P->chunk = chunk;
    P->nchunks = (nbytes + chunk - 1) / chunk;
    P->nstages = nstages;
    P->g0 = rcoll__shm_pipe_start(sh, chunk, P->nchunks, over_all);
    P->reads = RCOLL__SHM_READS_ALL;
}

/* Rank q's slot word of op->k: 1 if it may be this call's (op->word, or
 * not yet written and q's data is not read: must_match 0), else 0 with
 * op->error set (logged). */
static int peer_word_ok(rcoll_task_t *task, rcoll__shm_op_t *op, int q, int must_match)
{
    uint64_t w = atomic_load_explicit(rcoll__shm_slot_seq(op->sh, q, op->k), memory_order_acquire);
    if (w == op->word) {
        return 1;
    }
    if ((w & RCOLL__SHM_K_MASK) == (op->k & RCOLL__SHM_K_MASK)) {
        rcoll__shm_slot_mismatch(task, op, q, w);
        return 0;
    }
    if (must_match) {
        rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): rank %d "
                    "published chunks of this call before it entered it: the ranks' earlier "
                    "collectives differed; its data is not used",
                    rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                    (unsigned long long)op->k, q);
        op->error = RCOLL_ERR_PROTOCOL;
        return 0;
    }
    return 1;
}

/* The end check (shm_pipe.h, "Signatures"). */
static int peers_signed(rcoll_task_t *task, rcoll__shm_op_t *op, const rcoll__shm_pipe_t *P)
{
    rcoll__shm_t *sh = op->sh;
    for (int q = 0; q < sh->p; q++) {
        if (q != sh->me &&
            !peer_word_ok(task, op, q, P->reads == RCOLL__SHM_READS_ALL || P->reads == q)) {
            return 0;
        }
    }
    return 1;
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
    rcoll__shm_t *sh = op->sh;
    size_t *last = &P->done[P->nstages - 1], nbuf = (size_t)sh->nbuf;
    int moved = 0, any;

    if (!P->signed_in) {
        if (!rcoll__shm_slots_free(task, sh, op->k)) {
            return RCOLL_INPROGRESS;
        }
        atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, op->k), op->word, memory_order_release);
        P->signed_in = 1;
    }

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
        if (task->wait_peer >= 0 && task->wait_peer != sh->me && task->wait_peer < sh->p &&
            !peer_word_ok(task, op, task->wait_peer, 0)) {
            return op->error;
        }
        return RCOLL_INPROGRESS;
    }
    if (!peers_signed(task, op, P)) {
        return op->error;
    }
    rcoll__shm_pipe_leave(task, op, P->g0 + P->nchunks - 1);
    return RCOLL_OK;
}
