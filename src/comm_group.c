/*
 * comm_group.c - rcoll_comm_create_group: a communicator over listed ranks
 * of a parent, made by those ranks only.
 *
 * The first listed rank (the new rank 0) allots the id (rcoll__comm_id_next,
 * see comm.c) and sends it to each other member, which waits for it.  The
 * first listed rank waits for nobody, so creations over overlapping groups
 * may run in different orders on different ranks (rcoll.h says when not).
 *
 * The announcement travels on a transient link communicator whose id is the
 * creation's key, rcoll__comm_group_key(parent id, tag, group): never a
 * communicator's id (top bit set) and different for another parent, tag or
 * group, so concurrent creations cannot take each other's messages.  Its
 * sequence number is the count of earlier creations with the same key on
 * this parent (group_seq_next), which every member advances alike because
 * each calls them in the same order; so repeated creations over the same
 * group and tag cannot either, whatever order the transport delivers in.
 */
#include <stdlib.h>
#include "core.h"

#define STEP_ID  1u
#define BATCH    32      /* sends in flight (RCOLL_TASK_MAX_OPS is 64) */

struct rcoll_group_seq {
    uint64_t key;        /* 0: empty (keys have their top bit set) */
    uint32_t count;
};

static int grow_group_seqs(rcoll_comm_t *parent)
{
    uint32_t cap = parent->group_seqs_cap ? 2 * parent->group_seqs_cap : 16;
    struct rcoll_group_seq *t = calloc(cap, sizeof(*t));
    if (t == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < parent->group_seqs_cap; i++) {
        struct rcoll_group_seq *e = &parent->group_seqs[i];
        if (e->key != 0) {
            uint32_t j = (uint32_t)e->key & (cap - 1);
            while (t[j].key != 0) {
                j = (j + 1) & (cap - 1);
            }
            t[j] = *e;
        }
    }
    free(parent->group_seqs);
    parent->group_seqs = t;
    parent->group_seqs_cap = cap;
    return 0;
}

/* Earlier creations with key on parent into *seq, and count this one;
 * -1 if out of memory. */
static int group_seq_next(rcoll_comm_t *parent, uint64_t key, uint32_t *seq)
{
    if (2 * (parent->ngroup_seqs + 1) > parent->group_seqs_cap && grow_group_seqs(parent) != 0) {
        return -1;
    }
    uint32_t mask = parent->group_seqs_cap - 1, j = (uint32_t)key & mask;
    while (parent->group_seqs[j].key != 0 && parent->group_seqs[j].key != key) {
        j = (j + 1) & mask;
    }
    struct rcoll_group_seq *e = &parent->group_seqs[j];
    if (e->key == 0) {
        e->key = key;
        parent->ngroup_seqs++;
    }
    *seq = e->count++;
    return 0;
}

typedef struct {
    int next;            /* rank 0: peers whose send is posted, + 1 */
} announce_t;
RCOLL_ALG_STATE_CHECK(announce_t);

/* Rank 0 sends the id (args.recvbuf) to every other rank, in batches; the
 * others receive it.  Nobody but them waits. */
static rcoll_status_t announce_progress(rcoll_task_t *task)
{
    announce_t *S = rcoll_task_state(task, announce_t);
    uint64_t *id = task->args.recvbuf;
    int p = task->comm->size;
    rcoll_status_t st = rcoll_task_test(task);

    if (st != RCOLL_OK) {
        return st;
    }
    if (task->comm->rank != 0) {
        if (task->phase == 1) {
            return RCOLL_OK;
        }
        task->phase = 1;
        st = rcoll_task_recv(task, 0, STEP_ID, id, sizeof(*id));
        return st == RCOLL_OK ? RCOLL_INPROGRESS : st;
    }
    if (S->next == 0) {
        S->next = 1;
    }
    if (S->next >= p) {
        return RCOLL_OK;
    }
    int last = S->next + BATCH < p ? S->next + BATCH : p;
    for (int r = S->next; r < last; r++) {
        if ((st = rcoll_task_send(task, r, STEP_ID, id, sizeof(*id))) != RCOLL_OK) {
            return st;
        }
    }
    S->next = last;
    return RCOLL_INPROGRESS;
}

static const rcoll_alg_t announce_alg = {
    .name = "comm_create_group",
    .coll = RCOLL_COLL_BCAST,
    .progress = announce_progress,
};

/* The group's rank 0 allots the id; the others learn it (bounded by
 * RCOLL_TIMEOUT, like every wait). */
static rcoll_status_t agree_id(rcoll_comm_t *parent, const int *ranks, int n, int tag, int me,
                               const int *world_ranks, uint64_t *id)
{
    rcoll_context_t *ctx = parent->ctx;
    uint64_t key = rcoll__comm_group_key(parent->id, tag, ranks, n);
    uint32_t seq;
    int *wr = malloc(sizeof(int) * (size_t)n);
    rcoll_comm_t *link;

    if (wr == NULL || group_seq_next(parent, key, &seq) != 0) {
        free(wr);
        rcoll_error("rcoll_comm_create_group: out of memory");
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        wr[i] = world_ranks[i];
    }
    rcoll_status_t st = rcoll_comm_create(ctx, key, me, n, wr, &link);
    if (st != RCOLL_OK) {
        free(wr);
        return st;
    }
    link->next_seq = seq;
    *id = me == 0 ? rcoll__comm_id_next(ctx) : 0;
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BCAST, .sendbuf = id, .recvbuf = id, .count = 1,
                            .dtype = RCOLL_UINT64, .root = 0, .in_place = 1 };
    rcoll_task_t *task;
    st = rcoll_task_post_alg(link, &a, &announce_alg, &task);
    if (st == RCOLL_OK) {
        st = rcoll_task_wait(task);
    }
    rcoll_comm_destroy(link);
    if (st == RCOLL_OK && !rcoll__comm_id_valid(*id)) {
        rcoll_error("rcoll_comm_create_group: the first listed rank (world rank %d) sent "
                    "0x%llx, not a communicator id", world_ranks[0], (unsigned long long)*id);
        st = RCOLL_ERR_PROTOCOL;
    }
    return st;
}

/* The arguments, checked before anything is sent or created; *me the
 * caller's index in ranks. */
static rcoll_status_t check_group(const rcoll_comm_t *parent, const int *ranks, int n,
                                  rcoll_comm_t *const *newcomm, int *me)
{
    static const char fn[] = "rcoll_comm_create_group";

    if (parent == NULL || ranks == NULL || newcomm == NULL) {
        rcoll_error("%s: invalid argument: %s is NULL", fn,
                    parent == NULL ? "parent" : ranks == NULL ? "ranks" : "newcomm");
        return RCOLL_ERR_INVALID_ARG;
    }
    if (n < 1 || n > parent->size) {
        rcoll_error("%s: invalid argument: n = %d ranks; it must be 1..%d (the parent's size)",
                    fn, n, parent->size);
        return RCOLL_ERR_INVALID_ARG;
    }
    int *at = calloc((size_t)parent->size, sizeof(int));     /* index + 1 where listed */
    if (at == NULL) {
        rcoll_error("%s: out of memory", fn);
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_status_t st = RCOLL_OK;
    *me = -1;
    for (int i = 0; i < n && st == RCOLL_OK; i++) {
        int r = ranks[i];
        if (r < 0 || r >= parent->size) {
            rcoll_error("%s: invalid argument: ranks[%d] = %d is outside the parent's ranks "
                        "0..%d", fn, i, r, parent->size - 1);
            st = RCOLL_ERR_INVALID_ARG;
        } else if (at[r] != 0) {
            rcoll_error("%s: invalid argument: rank %d is listed twice (ranks[%d] and ranks[%d])",
                        fn, r, at[r] - 1, i);
            st = RCOLL_ERR_INVALID_ARG;
        } else {
            at[r] = i + 1;
            if (r == parent->rank) {
                *me = i;
            }
        }
    }
    free(at);
    if (st == RCOLL_OK && *me < 0) {
        rcoll_error("%s: invalid argument: the caller (rank %d of the parent) is not among the "
                    "%d listed ranks; only listed ranks call", fn, parent->rank, n);
        st = RCOLL_ERR_INVALID_ARG;
    }
    return st;
}

RCOLL_API rcoll_status_t rcoll_comm_create_group(rcoll_comm_t *parent, const int *ranks, int n,
                                                 int tag, rcoll_comm_t **newcomm)
{
    int me;
    rcoll_status_t st = check_group(parent, ranks, n, newcomm, &me);
    if (st != RCOLL_OK) {
        return st;
    }
    int *world_ranks = malloc(sizeof(int) * (size_t)n);
    if (world_ranks == NULL) {
        rcoll_error("rcoll_comm_create_group: out of memory");
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        world_ranks[i] = parent->world_ranks[ranks[i]];
    }
    uint64_t id;
    if (n == 1) {
        id = rcoll__comm_id_next(parent->ctx);      /* nobody to tell */
    } else {
        st = agree_id(parent, ranks, n, tag, me, world_ranks, &id);
    }
    if (st == RCOLL_OK) {
        st = rcoll_comm_create(parent->ctx, id, me, n, world_ranks, newcomm);
    }
    if (st != RCOLL_OK) {
        free(world_ranks);
    }
    return st;
}
