/*
 * comm.c - communicators: the world, split, dup, free, and their ids.
 *
 * A communicator's id tags every message of its collectives, so it must be
 * unique in the job.  The world is 1.  Every other id is allotted by one
 * member, from its own per-context counter, and made known to the others
 * with the messages the creation sends anyway:
 *
 *   id = (world rank of the allotting member + 1) << 32 | its serial
 *
 * A (world rank, serial) pair is handed out once, so ids never repeat,
 * however creations on different parents and groups interleave, and none
 * depends on a counter that a whole parent must advance in step.  split
 * (new rank 0's serial, carried in its allgather), dup (rank 0's, by bcast
 * on the parent) and rcoll_comm_create_group (the first listed rank's,
 * comm_group.c) share the scheme, so their ids never collide.  The serial
 * is 32 bits: one rank may allot 2^32 ids before they could repeat.  The top
 * bit is always clear (world ranks < 2^31 - 1): keys with it set name the
 * messages of a creation in progress (rcoll__comm_group_key), never a
 * communicator.
 *
 * The node-aware algorithms' sub-communicators (coll.h: node_comm,
 * rail_comm) are made by each member alone, with no message, so nobody
 * allots their ids: they are derived, a hash of (parent id, kind, node or
 * local index) with the top bit set, like the keys of creations (which
 * also serve as the ids of their link communicators, comm_group.c): never
 * an allotted id, and two hashed ids collide with probability 2^-63.
 */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "whereis.h"

#define GROUP_KEY_BIT (1ULL << 63)

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t rcoll__comm_id_make(int wr, uint32_t serial)
{
    return ((uint64_t)(uint32_t)(wr + 1) << 32) | serial;
}

uint64_t rcoll__comm_id_next(rcoll_context_t *ctx)
{
    return rcoll__comm_id_make(ctx->rank, ctx->comm_serial++);
}

int rcoll__comm_id_valid(uint64_t id)
{
    return (id >> 32) >= 1 && !(id & GROUP_KEY_BIT);
}

/* The id of sub-communicator kind (RCOLL_SUB_*) number index of parent. */
static uint64_t comm_id_derived(uint64_t parent_id, int kind, int index)
{
    uint64_t h = mix64(parent_id ^ mix64(((uint64_t)(uint32_t)kind << 32) | (uint32_t)index));
    return h | GROUP_KEY_BIT;
}

/* A hash of (parent id, tag, the group in order), top bit set: distinct
 * creations share a key with probability 2^-63. */
uint64_t rcoll__comm_group_key(uint64_t parent_id, int tag, const int *ranks, int n)
{
    uint64_t h = mix64(parent_id ^ mix64(((uint64_t)(uint32_t)tag << 32) | (uint32_t)n));
    for (int i = 0; i < n; i++) {
        h = mix64(h ^ (uint32_t)ranks[i]);
    }
    return h | GROUP_KEY_BIT;
}

/* The node layout of comm (coll.h), from the node of every world rank. */
static rcoll_status_t comm_layout(const rcoll_context_t *ctx, rcoll_comm_t *comm)
{
    int nn = ctx->nnodes > 0 ? ctx->nnodes : 1, mynode = ctx->node_of[ctx->rank];
    int *count = calloc((size_t)nn, sizeof(int));
    if (count == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < comm->size; i++) {
        int node = ctx->node_of[comm->world_ranks[i]];
        if (i == comm->rank) {
            comm->local_rank = count[node];
        }
        count[node]++;
    }
    comm->local_size = count[mynode];
    comm->node_count = 0;
    comm->node_min = comm->size;
    for (int n = 0; n < nn; n++) {
        if (count[n] > 0) {
            comm->node_count++;
            comm->node_min = count[n] < comm->node_min ? count[n] : comm->node_min;
        }
    }
    free(count);
    return RCOLL_OK;
}

rcoll_status_t rcoll_comm_create(rcoll_context_t *ctx, uint64_t id, int rank, int size,
                                 int *world_ranks, rcoll_comm_t **out)
{
    rcoll_comm_t *comm = calloc(1, sizeof(*comm));
    if (comm == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    comm->ctx = ctx;
    comm->id = id;
    comm->rank = rank;
    comm->size = size;
    comm->world_ranks = world_ranks;
    if (comm_layout(ctx, comm) != RCOLL_OK) {
        free(comm);
        return RCOLL_ERR_NO_MEMORY;
    }
    /* The creation-time properties (see coll.h): the same on every member. */
    comm->shm_usable = comm->local_size == size && ctx->config.shm;
    if (rcoll__ft_comm_add(comm) != RCOLL_OK) {      /* revoke.c: found by id */
        free(comm);
        return RCOLL_ERR_NO_MEMORY;
    }
    ctx->ncomms++;
    rcoll_whereis_comm_attach(comm);
    *out = comm;
    return RCOLL_OK;
}

/* The last step of creating comm with rcoll_init, rcoll_comm_dup or
 * rcoll_comm_split (not rcoll_comm_create_group, whose creations of
 * different groups may interleave differently on different members, nor the
 * node sub-communicators, made without messages): where
 * shm_usable is 1, set the shared-memory segment up now, with the set-up's
 * messages, and keep shm_usable only if every member could attach it (the
 * same outcome everywhere; docs/shm.md).  An error only if the set-up's
 * messages failed (timeout, peer failure), as any collective's would. */
rcoll_status_t rcoll__comm_shm_agree(rcoll_comm_t *comm)
{
    if (!comm->shm_usable || comm->size < 2) {
        return RCOLL_OK;
    }
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BARRIER };
    rcoll_task_t *task;
    rcoll_status_t st = rcoll_task_post_alg(comm, &a, &rcoll__shm_agree_alg, &task);
    if (st == RCOLL_OK) {
        st = rcoll_task_wait(task);
    }
    if (st == RCOLL_OK) {
        comm->shm_usable = rcoll__shm_agreed(comm);
    }
    return st;
}

/* One sub-communicator: the members i of comm with pick(i), in comm order. */
static rcoll_status_t sub_create(rcoll_comm_t *comm, int kind, int index, const int *pick,
                                 rcoll_comm_t **out)
{
    int n = 0, me = -1;
    for (int i = 0; i < comm->size; i++) {
        n += pick[i];
    }
    int *wr = malloc(sizeof(int) * (size_t)n);
    if (wr == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    n = 0;
    for (int i = 0; i < comm->size; i++) {
        if (pick[i]) {
            me = i == comm->rank ? n : me;
            wr[n++] = comm->world_ranks[i];
        }
    }
    rcoll_status_t st = rcoll_comm_create(comm->ctx, comm_id_derived(comm->id, kind, index), me,
                                          n, wr, out);
    if (st != RCOLL_OK) {
        free(wr);
        return st;
    }
    (*out)->sub_kind = kind;
    comm->ctx->ncomms--;        /* ncomms counts the communicators the user must free */
    return RCOLL_OK;
}

rcoll_status_t rcoll_comm_node_subcomms(rcoll_comm_t *comm)
{
    if (comm->subcomms_made) {
        return RCOLL_OK;
    }
    const rcoll_context_t *ctx = comm->ctx;
    int nn = ctx->nnodes > 0 ? ctx->nnodes : 1, mynode = ctx->node_of[ctx->rank];
    int *pick = malloc(sizeof(int) * (size_t)comm->size);
    int *seen = calloc((size_t)nn, sizeof(int));
    rcoll_status_t st = RCOLL_ERR_NO_MEMORY;
    if (pick == NULL || seen == NULL) {
        goto out;
    }
    for (int i = 0; i < comm->size; i++) {
        pick[i] = ctx->node_of[comm->world_ranks[i]] == mynode;
    }
    if ((st = sub_create(comm, RCOLL_SUB_NODE, mynode, pick, &comm->node_comm)) != RCOLL_OK) {
        goto out;
    }
    if (comm->local_rank < comm->node_min) {
        for (int i = 0; i < comm->size; i++) {
            pick[i] = seen[ctx->node_of[comm->world_ranks[i]]]++ == comm->local_rank;
        }
        st = sub_create(comm, RCOLL_SUB_RAIL, comm->local_rank, pick, &comm->rail_comm);
        if (st != RCOLL_OK) {
            rcoll_comm_destroy(comm->node_comm);
            comm->node_comm = NULL;
            goto out;
        }
    }
    comm->subcomms_made = 1;
    rcoll_debug("communicator 0x%llx: node-aware sub-communicators: node 0x%llx (%d ranks), "
                "rail %d 0x%llx (%d ranks)", (unsigned long long)comm->id,
                (unsigned long long)comm->node_comm->id, comm->node_comm->size, comm->local_rank,
                comm->rail_comm ? (unsigned long long)comm->rail_comm->id : 0ULL,
                comm->rail_comm ? comm->rail_comm->size : 0);
out:
    if (st != RCOLL_OK) {
        rcoll_error("communicator 0x%llx: no memory for the node-aware sub-communicators",
                    (unsigned long long)comm->id);
    }
    free(pick);
    free(seen);
    return st;
}

void rcoll_comm_destroy(rcoll_comm_t *comm)
{
    if (comm->node_comm != NULL) {
        rcoll_comm_destroy(comm->node_comm);
    }
    if (comm->rail_comm != NULL) {
        rcoll_comm_destroy(comm->rail_comm);
    }
    rcoll_coll_comm_fini(comm);
    rcoll__ft_comm_del(comm);
    rcoll_whereis_comm_detach(comm);
    free(comm->group_seqs);
    if (comm->sub_kind == 0) {
        comm->ctx->ncomms--;
    }
    free(comm->world_ranks);
    free(comm);
}

RCOLL_API rcoll_comm_t *rcoll_comm_world(rcoll_context_t *ctx)
{
    return ctx ? ctx->world : NULL;
}

RCOLL_API int rcoll_comm_rank(const rcoll_comm_t *comm)
{
    return comm ? comm->rank : -1;
}

RCOLL_API int rcoll_comm_size(const rcoll_comm_t *comm)
{
    return comm ? comm->size : -1;
}

typedef struct {
    int color, key, rank;
} split_entry_t;

static int cmp_split(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

/* A communicator of the API is made: its segment agreed (or it is gone). */
static rcoll_status_t comm_created(rcoll_comm_t **newcomm)
{
    rcoll_status_t st = rcoll__comm_shm_agree(*newcomm);
    if (st != RCOLL_OK) {
        rcoll_comm_destroy(*newcomm);
        *newcomm = NULL;
    }
    return st;
}

RCOLL_API rcoll_status_t rcoll_comm_split(rcoll_comm_t *comm, int color, int key, rcoll_comm_t **newcomm)
{
    if (comm == NULL || newcomm == NULL) {
        rcoll_error("rcoll_comm_split: invalid argument: %s is NULL", comm ? "newcomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    int p = comm->size;
    /* every rank offers a serial; the new rank 0's makes the id */
    int32_t mine[3] = { color < 0 ? -1 : color, key, (int32_t)comm->ctx->comm_serial++ };
    int32_t *all = malloc(sizeof(int32_t) * 3 * (size_t)p);
    split_entry_t *members = malloc(sizeof(*members) * (size_t)p);
    if (all == NULL || members == NULL) {
        free(all);
        free(members);
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_status_t st = rcoll_allgather(mine, all, 3, RCOLL_INT32, comm);
    if (st != RCOLL_OK || color < 0) {
        free(all);
        free(members);
        if (st == RCOLL_OK) {
            *newcomm = NULL;
        }
        return st;
    }
    int n = 0;
    for (int r = 0; r < p; r++) {
        if (all[3 * r] == color) {
            members[n++] = (split_entry_t){ color, all[3 * r + 1], r };
        }
    }
    qsort(members, (size_t)n, sizeof(*members), cmp_split);
    uint64_t id = rcoll__comm_id_make(comm->world_ranks[members[0].rank],
                                      (uint32_t)all[3 * members[0].rank + 2]);
    int *world_ranks = malloc(sizeof(int) * (size_t)n);
    int myrank = -1;
    if (world_ranks == NULL) {
        free(all);
        free(members);
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        world_ranks[i] = comm->world_ranks[members[i].rank];
        if (members[i].rank == comm->rank) {
            myrank = i;
        }
    }
    free(all);
    free(members);
    st = rcoll_comm_create(comm->ctx, id, myrank, n, world_ranks, newcomm);
    if (st != RCOLL_OK) {
        free(world_ranks);
        return st;
    }
    return comm_created(newcomm);
}

RCOLL_API rcoll_status_t rcoll_comm_dup(rcoll_comm_t *comm, rcoll_comm_t **newcomm)
{
    if (comm == NULL || newcomm == NULL) {
        rcoll_error("rcoll_comm_dup: invalid argument: %s is NULL", comm ? "newcomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    /* rank 0 allots the id and tells the others (a collective on comm, so
     * the ranks' calls pair up in the order they are made) */
    uint64_t id = comm->rank == 0 ? rcoll__comm_id_next(comm->ctx) : 0;
    rcoll_status_t st = rcoll_bcast(&id, 1, RCOLL_UINT64, 0, comm);
    if (st != RCOLL_OK) {
        return st;
    }
    if (!rcoll__comm_id_valid(id)) {
        rcoll_error("rcoll_comm_dup: rank 0 of communicator 0x%llx sent 0x%llx, not a "
                    "communicator id", (unsigned long long)comm->id, (unsigned long long)id);
        return RCOLL_ERR_PROTOCOL;
    }
    int *world_ranks = malloc(sizeof(int) * (size_t)comm->size);
    if (world_ranks == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    memcpy(world_ranks, comm->world_ranks, sizeof(int) * (size_t)comm->size);
    st = rcoll_comm_create(comm->ctx, id, comm->rank, comm->size, world_ranks, newcomm);
    if (st != RCOLL_OK) {
        free(world_ranks);
        return st;
    }
    return comm_created(newcomm);
}

RCOLL_API rcoll_status_t rcoll_comm_free(rcoll_comm_t *comm)
{
    if (comm == NULL) {
        rcoll_error("rcoll_comm_free: invalid argument: communicator is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    if (comm->is_world) {
        rcoll_error("rcoll_comm_free: invalid argument: the world communicator belongs to the "
                    "context (rcoll_finalize frees it)");
        return RCOLL_ERR_INVALID_ARG;
    }
    if (comm->nactive > 0) {
        rcoll_error("rcoll_comm_free: invalid argument: %d requests on this communicator are "
                    "not completed", comm->nactive);
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_comm_destroy(comm);
    return RCOLL_OK;
}
