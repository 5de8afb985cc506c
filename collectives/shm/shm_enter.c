/*
 * shm_enter.c - how a shm collective gets the segment: the set-up protocol
 * run by the first shm collective on a communicator, the order of the
 * later ones, and the flag helpers.
 *
 * Whether a communicator may use shm at all is decided when it is created
 * (comm->shm_usable, see coll.h), so the selector offers shm only there,
 * and nothing here changes the algorithm of a task but fall_back (below:
 * communicators whose creation did not agree on a segment).  The segment itself is
 * set up lazily, with rcoll's own point-to-point messages of the first
 * collective (tags STEP_*): rank 0 creates the segment (unlinked at once)
 * and sends the path of its descriptor ("" if it could not) to every rank; each rank maps it and answers whether
 * it could; rank 0 sends the verdict (1 if all could).  So every rank knows
 * the same outcome: with a verdict of 0 they all drop the segment, and this
 * and every later shm collective on the communicator falls back to a
 * point-to-point algorithm (fall_back; a forced shm fails with the cause,
 * e.g. /dev/shm full: RCOLL_ERR_NO_MEMORY).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "shm.h"

#define STEP_NAME    0x5e70u
#define STEP_STATUS  0x5e71u
#define STEP_VERDICT 0x5e72u
#define SETUP_BATCH  32          /* ops in flight (RCOLL_TASK_MAX_OPS is 64) */
/* The status and verdict bytes: bit 0 mapped (all mapped), bit 1 can read
 * rank 0's memory / rank 0 can read this rank's (all can: shm_cma.c). */
#define VERDICT_MAPPED 1u
#define VERDICT_CMA    2u

enum {
    ST_START = 0,      /* not yet numbered */
    ST_SETUP,          /* waiting for the segment */
    ST_NAME_SEND,      /* rank 0 */
    ST_STATUS_RECV,    /* rank 0 */
    ST_VERDICT_SEND,   /* rank 0 */
    ST_NAME_RECV,      /* others */
    ST_VERDICT_RECV,   /* others */
    ST_ORDER,          /* waiting for the earlier shm collectives here */
    ST_ENTERED
};

/* Rank 0: one op per peer 1..p-1 (buf + r * stride), in batches; RCOLL_OK
 * when all are done. */
static rcoll_status_t each_peer(rcoll_task_t *task, rcoll__shm_t *sh, int recv, uint32_t step,
                                void *buf, size_t len, size_t stride)
{
    for (;;) {
        rcoll_status_t st = rcoll_task_test(task);
        if (st != RCOLL_OK) {
            return st;
        }
        if (sh->setup_next >= sh->p - 1) {
            sh->setup_next = 0;
            return RCOLL_OK;
        }
        int last = sh->setup_next + SETUP_BATCH < sh->p - 1 ? sh->setup_next + SETUP_BATCH : sh->p - 1;
        for (int r = sh->setup_next + 1; r <= last; r++) {
            char *b = (char *)buf + (size_t)r * stride;
            st = recv ? rcoll_task_recv(task, r, step, b, len) : rcoll_task_send(task, r, step, b, len);
            if (st != RCOLL_OK) {
                return st;
            }
        }
        sh->setup_next = last;
    }
}

/* The set-up is over: ok, or not (then sh->why says why, on every rank). */
static void setup_done(rcoll_comm_t *comm, rcoll__shm_t *sh, int ok)
{
    rcoll__shm_segment_close_fd(sh);    /* rank 0: every rank has attached or given up */
    if (ok) {
        rcoll__shm_cma_ready(comm, sh, (sh->verdict & VERDICT_CMA) != 0);
        sh->state = RCOLL__SHM_READY;
        char smin[32];
        if (sh->stream_min == SIZE_MAX) {
            snprintf(smin, sizeof(smin), "never");
        } else {
            snprintf(smin, sizeof(smin), "from %zu bytes", sh->stream_min);
        }
        char flat[48] = "";
        if (sh->p == 2) {
            snprintf(flat, sizeof(flat), ", allreduce flat up to %zu bytes",
                     sh->pair_flat_max < sh->small_max ? sh->pair_flat_max : sh->small_max);
        }
        rcoll_debug("shm: communicator 0x%llx: segment ready (%zu bytes, slot %zu, slice %zu%s, "
                    "streaming copies into receive buffers: %s)",
                    (unsigned long long)comm->id, sh->size, sh->small_max, sh->slice, flat, smin);
        return;
    }
    rcoll__shm_segment_drop(sh);
    sh->state = RCOLL__SHM_UNAVAILABLE;
}

/* Record why there is no segment (the first reason seen here wins). */
static void set_why(rcoll__shm_t *sh, rcoll_status_t st, const char *fmt, int a, int b)
{
    if (sh->why[0] != '\0') {
        return;
    }
    sh->why_status = st;
    snprintf(sh->why, sizeof(sh->why), fmt, a, b);
}

/* The first collective's part: returns RCOLL_OK once the state is known. */
static rcoll_status_t setup_step(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll_comm_t *comm = task->comm;
    rcoll__shm_t *sh = op->sh;
    rcoll_status_t st = RCOLL_OK;

    switch (op->stage) {
    case ST_SETUP:
        if (sh->me == 0) {
            rcoll__shm_segment_create(comm, sh);
            RCOLL_FAULT_AT(task->ctx, RCOLL_FAULT_SHM_SETUP, (unsigned long)comm->is_world);
            if (sh->base != NULL) {
                rcoll__shm_cma_ident(comm, sh);
            }
            op->stage = ST_NAME_SEND;
            return RCOLL_INPROGRESS;
        }
        st = rcoll_task_recv(task, 0, STEP_NAME, sh->name, sizeof(sh->name));
        op->stage = ST_NAME_RECV;
        return st == RCOLL_OK ? RCOLL_INPROGRESS : st;
    case ST_NAME_SEND:
        if ((st = each_peer(task, sh, 0, STEP_NAME, sh->name, sizeof(sh->name), 0)) != RCOLL_OK) {
            return st;
        }
        if (sh->base == NULL) {
            setup_done(comm, sh, 0);       /* sh->why from rcoll__shm_segment_create */
            return RCOLL_OK;
        }
        op->stage = ST_STATUS_RECV;
        return RCOLL_INPROGRESS;
    case ST_STATUS_RECV:
        if ((st = each_peer(task, sh, 1, STEP_STATUS, sh->peer_ok, 1, 1)) != RCOLL_OK) {
            return st;
        }
        sh->verdict = VERDICT_MAPPED | VERDICT_CMA;
        for (int r = 1; r < sh->p; r++) {
            if (!(sh->peer_ok[r] & VERDICT_MAPPED) && (sh->verdict & VERDICT_MAPPED)) {
                set_why(sh, RCOLL_ERR_NO_MEMORY, "comm rank %d (world rank %d) could not map it "
                        "(its log says why)", r, comm->world_ranks[r]);
            }
            if (!(sh->peer_ok[r] & VERDICT_MAPPED)) {
                sh->verdict = 0;
            }
            if ((sh->verdict & VERDICT_CMA) &&
                (!(sh->peer_ok[r] & VERDICT_CMA) || !rcoll__shm_cma_probe(comm, sh, r))) {
                sh->verdict &= (uint8_t)~VERDICT_CMA;
            }
        }
        if (sh->p < 2 || !(sh->verdict & VERDICT_MAPPED)) {
            sh->verdict &= (uint8_t)~VERDICT_CMA;
        }
        op->stage = ST_VERDICT_SEND;
        return RCOLL_INPROGRESS;
    case ST_VERDICT_SEND:
        if ((st = each_peer(task, sh, 0, STEP_VERDICT, &sh->verdict, 1, 0)) != RCOLL_OK) {
            return st;
        }
        setup_done(comm, sh, (sh->verdict & VERDICT_MAPPED) != 0);
        return RCOLL_OK;
    case ST_NAME_RECV:
        if ((st = rcoll_task_test(task)) != RCOLL_OK) {
            return st;
        }
        sh->name[sizeof(sh->name) - 1] = '\0';
        if (sh->name[0] == '\0') {
            set_why(sh, RCOLL_ERR_NO_MEMORY, "comm rank %d (world rank %d) could not create it "
                    "(its log says why)", 0, comm->world_ranks[0]);
            setup_done(comm, sh, 0);       /* rank 0 has none: no more messages */
            return RCOLL_OK;
        }
        sh->my_ok = rcoll__shm_segment_attach(comm, sh) == RCOLL_OK;
        if (sh->my_ok) {
            rcoll__shm_cma_ident(comm, sh);
            if (rcoll__shm_cma_probe(comm, sh, 0)) {
                sh->my_ok |= VERDICT_CMA;
            }
        }
        RCOLL_FAULT_AT(task->ctx, RCOLL_FAULT_SHM_SETUP, (unsigned long)comm->is_world);
        st = rcoll_task_send(task, 0, STEP_STATUS, &sh->my_ok, 1);
        if (st == RCOLL_OK) {
            st = rcoll_task_recv(task, 0, STEP_VERDICT, &sh->verdict, 1);
        }
        op->stage = ST_VERDICT_RECV;
        return st == RCOLL_OK ? RCOLL_INPROGRESS : st;
    case ST_VERDICT_RECV:
        if ((st = rcoll_task_test(task)) != RCOLL_OK) {
            return st;
        }
        if (!(sh->verdict & VERDICT_MAPPED)) {
            set_why(sh, RCOLL_ERR_NO_MEMORY, "some rank could not map it (the log of comm "
                    "rank %d, world rank %d, names it)", 0, comm->world_ranks[0]);
        }
        setup_done(comm, sh, (sh->verdict & VERDICT_MAPPED) && (sh->my_ok & VERDICT_MAPPED));
        return RCOLL_OK;
    default:
        rcoll_error("shm: bad set-up stage %d", op->stage);
        return RCOLL_ERR_INTERNAL;
    }
}

/* The ranks agreed that there is no segment: this collective fails (its
 * algorithm was fixed when it was posted and stays so). */
static rcoll_status_t no_segment(rcoll_task_t *task, const rcoll__shm_t *sh)
{
    rcoll_error("%s algorithm shm: communicator 0x%llx (%d ranks, all on %s) has no "
                "shared-memory segment: %s; set RCOLL_SHM=0 to use point-to-point algorithms "
                "on one node, or give /dev/shm more room", rcoll_coll_name(task->args.type),
                (unsigned long long)task->comm->id, sh->p, rcoll_ctx_hostname(task->ctx),
                sh->why[0] != '\0' ? sh->why : "the set-up failed");
    return sh->why_status != RCOLL_OK ? sh->why_status : RCOLL_ERR_NO_MEMORY;
}

/*
 * The ranks agreed at this communicator's first shm collective that it has
 * no segment (e.g. /dev/shm too small), on a communicator whose creation
 * did not agree on it already (rcoll_comm_create_group, the node-aware
 * sub-communicators: their creation sends no messages, see
 * rcoll__comm_shm_agree): it stops offering shm (one warning,
 * rcoll__shm_agreed) and this collective runs the point-to-point algorithm
 * the selector picks now.  Every member reaches the same verdict at the
 * same k and selects alike (shm_usable 0 everywhere from then on; a
 * collective posted before the verdict falls back here, one posted after
 * is never offered shm), so they run the same algorithm.  A forced shm
 * choice (RCOLL_*_ALGORITHM=shm) stays an error.  Set-up messages use
 * steps of their own (STEP_*), so they never match the new algorithm's.
 */
static void turn_over(rcoll__shm_t *sh, uint64_t k);

static rcoll_status_t fall_back(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll_comm_t *comm = task->comm;
    rcoll__shm_t *sh = op->sh;

    if (comm->shm_usable) {
        comm->shm_usable = 0;
        /* the selector's remembered choices were made with shm offered */
        memset(rcoll_coll_comm(comm)->sel_cache, 0, sizeof(rcoll_coll_comm(comm)->sel_cache));
        (void)rcoll__shm_agreed(comm);          /* the warning, once per job */
    }
    const rcoll_alg_t *alg = rcoll_select(task);
    if (alg == NULL || alg == task->alg || alg->progress == task->alg->progress ||
        strcmp(alg->name, "shm") == 0) {
        return no_segment(task, sh);
    }
    rcoll_debug("%s on communicator 0x%llx: no shared-memory segment, algorithm %s instead",
                rcoll_coll_name(task->args.type), (unsigned long long)comm->id, alg->name);
    turn_over(sh, op->k);                       /* its shm turn is over */
    task->alg = alg;
    task->phase = 0;
    task->wait_peer = -1;
    task->wait_step = 0;
    memset(task->alg_state, 0, sizeof(task->alg_state));
    task->progress_count++;
    /* Not alg->progress(task) here: the shm algorithm that called
     * rcoll__shm_enter would take its RCOLL_OK for "entered" and read its
     * (now cleared) state.  The next progress call runs the new one. */
    return RCOLL_INPROGRESS;
}

static rcoll_status_t check_usable(rcoll_task_t *task)
{
    rcoll_comm_t *comm = task->comm;
    const char *coll = rcoll_coll_name(task->args.type);

    if (comm->local_size != comm->size) {
        rcoll_error("%s algorithm shm: not supported on communicator 0x%llx: only %d of its %d "
                    "ranks are on this node (%s); it needs every rank on one node, so do not "
                    "force it here (RCOLL_*_ALGORITHM)", coll, (unsigned long long)comm->id,
                    comm->local_size, comm->size, rcoll_ctx_hostname(comm->ctx));
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    /* RCOLL_SHM=0 keeps the selector from choosing shm; a forced choice wins. */
    return RCOLL_OK;
}

rcoll_status_t rcoll__shm_enter(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll_comm_t *comm = task->comm;
    rcoll__shm_t *sh = op->sh;
    rcoll_status_t st;

    for (;;) {
        switch (op->stage) {
        case ST_START:
            if ((st = check_usable(task)) != RCOLL_OK) {
                return st;
            }
            if (rcoll_coll_comm(comm)->shm == NULL) {
                rcoll_coll_comm(comm)->shm = rcoll__shm_new(comm);
                if (rcoll_coll_comm(comm)->shm == NULL) {
                    rcoll_error("shm: out of memory for the state of communicator 0x%llx",
                                (unsigned long long)comm->id);
                    return RCOLL_ERR_NO_MEMORY;
                }
            }
            sh = op->sh = rcoll_coll_comm(comm)->shm;
            op->k = ++sh->next_op;
            op->word = rcoll__shm_slot_word(op->k, task->sig);
            op->stage = ST_SETUP;
            break;
        case ST_ORDER:
            if (sh->completed + 1 != op->k) {
                task->wait_peer = -1;      /* an earlier shm collective here is not done */
                return RCOLL_INPROGRESS;
            }
            op->stage = ST_ENTERED;
            return RCOLL_OK;
        case ST_ENTERED:
            return RCOLL_OK;
        default:
            if (sh->state == RCOLL__SHM_READY) {
                op->stage = ST_ORDER;
                break;
            }
            if (sh->state == RCOLL__SHM_UNAVAILABLE) {
                if (task->alg == &rcoll__shm_agree_alg) {
                    return RCOLL_OK;       /* the agreed answer: no segment (rcoll__shm_agreed) */
                }
                return fall_back(task, op);
            }
            if (sh->state == RCOLL__SHM_FAILED) {
                rcoll_error("%s algorithm shm: the set-up of communicator 0x%llx's shared-memory "
                            "segment failed (see the first error)",
                            rcoll_coll_name(task->args.type), (unsigned long long)comm->id);
                return RCOLL_ERR_NOT_SUPPORTED;
            }
            if (op->k != 1) {
                return RCOLL_INPROGRESS;     /* the first collective sets it up */
            }
            st = setup_step(task, op);
            if (st == RCOLL_INPROGRESS) {
                return st;
            }
            if (st != RCOLL_OK) {
                sh->state = RCOLL__SHM_FAILED;
                return st;
            }
            break;
        }
    }
}
/*
 * Collective k is over on this rank (finished, or failed at any stage, even
 * while still queued for its turn): the turn passes to the first collective
 * after it that is not over, and done is published up to there.  done = k
 * tells the peers that this rank no longer reads the slots of k or earlier,
 * which is true of an abandoned collective too, so they may reuse them; a
 * peer still waiting in k for this rank's slot word of k never mistakes
 * anything for it (slot words are compared for equality) and expires by its
 * own deadline.  Without this, a collective that failed while queued never
 * took its turn, and every later shm collective on the communicator waited
 * for it forever (issue 14).  More than 64 collectives over out of turn at
 * once are not tracked: then the turn stays (logged).  With no segment mapped
 * (set-up failed or not yet done) only the turn is kept.
 */
static void turn_over(rcoll__shm_t *sh, uint64_t k)
{
    if (k == sh->completed + 1 && sh->over == 0) {       /* in turn, nothing queued over */
        sh->completed = k;
    } else if (k > sh->completed + 1) {
        if (k - sh->completed - 2 >= 64) {
            rcoll_error("shm: collective %llu failed with more than 64 collectives ahead of it "
                        "on this communicator: its turn is not passed on",
                        (unsigned long long)k);
            return;
        }
        sh->over |= 1ull << (k - sh->completed - 2);
        return;
    } else if (k == sh->completed + 1) {
        sh->completed = k;
        while (sh->over & 1) {
            sh->over >>= 1;
            sh->completed++;
        }
        sh->over >>= 1;
    } else {
        return;                                           /* over already */
    }
    if (sh->base == NULL) {
        return;                /* no segment (yet): the flags come with the next publish */
    }
    rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->done, &sh->fin[sh->me], sh->completed);
}

/*
 * A shm collective failed (timeout, peer failure), at any stage: its turn
 * passes on (turn_over), so later collectives wait on (and name) the peers
 * they really wait for instead of on this abandoned one.  If it was setting
 * the segment up, the set-up is marked failed so the later ones report that
 * instead of waiting for it.
 */
void rcoll__shm_abort(rcoll_task_t *task)
{
    rcoll__shm_op_t *op = (rcoll__shm_op_t *)(void *)task->alg_state;
    rcoll__shm_t *sh = op->sh;

    if (sh == NULL) {
        return;                    /* never numbered: holds no turn */
    }
    if (op->k == 1 && sh->state == RCOLL__SHM_SETUP) {
        sh->state = RCOLL__SHM_FAILED;
    }
    turn_over(sh, op->k);
}

void rcoll__shm_leave(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll__shm_t *sh = op->sh;
    (void)task;
    if (op->k == sh->completed + 1 && sh->over == 0) {    /* the usual case; segment mapped */
        sh->completed = op->k;
        rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->done, &sh->fin[sh->me], op->k);
        return;
    }
    turn_over(sh, op->k);
}

int rcoll__shm_slots_free(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t k)
{
    if (k <= 2) {
        return 1;
    }
    for (int q = 0; q < sh->p; q++) {
        if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->done, &sh->fin[q], k - 2)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_SLOT);
            return 0;
        }
    }
    return 1;
}

uint64_t rcoll__shm_pipe_start(rcoll__shm_t *sh, size_t piece, size_t nchunks, int over_all)
{
    rcoll__shm_fault_in_pipe(sh, sh->me);
    size_t m = piece / sh->chunk;
    over_all = over_all || piece % sh->chunk != 0 || m < 1 || (size_t)sh->nbuf % m != 0;
    if (piece != sh->piece || over_all != sh->over_all) {
        sh->fence = sh->chunk_next - 1;
        sh->piece = piece;
        sh->over_all = over_all;
        if (!over_all) {
            sh->ring = (uint64_t)((size_t)sh->nbuf / m);    /* whole chunks, m to a piece */
            sh->res_stride = m * sh->slice;
        } else {
            /* the pieces run on over the result buffers, which follow, to
             * the end of the area */
            sh->ring = (uint64_t)(rcoll__shm_pipe_bytes(sh) / piece);
            sh->res_stride = 0;
        }
    }
    uint64_t g0 = sh->chunk_next;
    sh->chunk_next += nchunks;
    return g0;
}

int rcoll__shm_piece_free(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c)
{
    uint64_t reuse = rcoll__shm_reuse_id(sh, g);
    for (int q = 0; q < sh->p; q++) {
        if (q != sh->me && !rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->out_done, &sh->out_done[q], reuse)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CHUNK + (uint32_t)c);
            return 0;
        }
    }
    return 1;
}

int rcoll__shm_put_chunk_two(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c,
                             const void *src, size_t len, int stream, void *priv)
{
    int me = sh->me;

    if (!rcoll__shm_piece_free(task, sh, g, c)) {
        return 0;
    }
    char *dst = rcoll__shm_in(sh, me, g);
    if (priv != NULL) {
        rcoll__shm_copy_two(dst, priv, src, len, stream);   /* fenced */
    } else {
        rcoll__shm_copy_kind(dst, src, len, stream);        /* fenced */
    }
    rcoll__shm_publish(&rcoll__shm_ctl(sh, me)->in_ready, &sh->in_ready[me], g);
    return 1;
}

int rcoll__shm_put_chunk_kind(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c,
                              const void *src, size_t len, int stream)
{
    return rcoll__shm_put_chunk_two(task, sh, g, c, src, len, stream, NULL);
}

void rcoll__shm_pipe_leave(rcoll_task_t *task, rcoll__shm_op_t *op, uint64_t g)
{
    rcoll__shm_t *sh = op->sh;
    rcoll__shm_ctl_t *c = rcoll__shm_ctl(sh, sh->me);
    int me = sh->me;
    if (sh->in_ready[me] < g) {
        rcoll__shm_publish(&c->in_ready, &sh->in_ready[me], g);
    }
    if (sh->res_ready[me] < g) {
        rcoll__shm_publish(&c->res_ready, &sh->res_ready[me], g);
    }
    if (sh->out_done[me] < g) {
        rcoll__shm_publish(&c->out_done, &sh->out_done[me], g);
    }
    rcoll__shm_leave(task, op);
}

/* Nominal figures for this path on one node: a flag round trip between
 * cores, a little more per rank scanned, and memcpy-class bandwidth. */
#define SHM_ALPHA      0.3e-6
#define SHM_ALPHA_RANK 0.05e-6
#define SHM_BETA       (1.0 / 20.0e9)

double rcoll__shm_cost(const rcoll_model_t *m, int nranks, int ppn, double bytes_moved)
{
    if (!m->shm || ppn != nranks) {
        return INFINITY;
    }
    return SHM_ALPHA + SHM_ALPHA_RANK * nranks + bytes_moved * SHM_BETA;
}

/*
 * The creation-time set-up (rcoll__shm_agree_alg, run by rcoll_comm_create's
 * callers through rcoll__comm_shm_agree): the first shm "collective" of the
 * communicator, k = 1, does nothing but the set-up protocol above, so that
 * its agreed outcome can decide comm->shm_usable before any collective is
 * chosen.
 */
static rcoll_status_t agree_progress(rcoll_task_t *task)
{
    rcoll__shm_op_t *op = (rcoll__shm_op_t *)(void *)task->alg_state;
    rcoll_status_t st = rcoll__shm_enter(task, op);
    if (st != RCOLL_OK) {
        return st;
    }
    if (op->sh->state == RCOLL__SHM_READY) {
        rcoll__shm_leave(task, op);
    } else {
        turn_over(op->sh, op->k);
    }
    return RCOLL_OK;
}

const rcoll_alg_t rcoll__shm_agree_alg = {
    .name     = "shm set-up",
    .coll     = RCOLL_COLL_BARRIER,
    .progress = agree_progress,
    .abort    = rcoll__shm_abort,
};

int rcoll__shm_agreed(rcoll_comm_t *comm)
{
    rcoll__shm_t *sh = rcoll_coll_comm(comm)->shm;
    if (sh != NULL && sh->state == RCOLL__SHM_READY) {
        return 1;
    }
    /* One line per job where /dev/shm is too small for every segment: comm
     * rank 0 says it, unless the world communicator had no segment either
     * (then its rank 0 has said it already). */
    rcoll_comm_t *world = rcoll_comm_world(comm->ctx);
    const rcoll__shm_t *wsh = world != NULL ? rcoll_coll_comm(world)->shm : NULL;
    int world_said = world != comm && world != NULL && world->size > 1 &&
                     (wsh == NULL || wsh->state != RCOLL__SHM_READY);
    if (comm->rank == 0 && !world_said) {
        rcoll_warn("communicator 0x%llx (%d ranks, all on %s) has no shared-memory segment: %s; "
                   "its collectives use point-to-point algorithms (RCOLL_SHM=0 skips the "
                   "attempt and this warning)",
                   (unsigned long long)comm->id, comm->size, rcoll_ctx_hostname(comm->ctx),
                   sh != NULL && sh->why[0] != '\0' ? sh->why : "its set-up failed");
    } else {
        rcoll_debug("shm: communicator 0x%llx has no segment: %s", (unsigned long long)comm->id,
                    sh != NULL && sh->why[0] != '\0' ? sh->why : "its set-up failed");
    }
    return 0;
}
