/*
 * comm.c - communicators: the world, split, dup, free.
 *
 * A communicator's id tags every message of its collectives.  Children get
 * ids derived from the parent's id and the parent's count of children made so
 * far, which every member computes identically without communication (split
 * and dup are called in the same order on all ranks of the parent).
 */
#include <stdlib.h>
#include <string.h>
#include "core.h"

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t child_id(rcoll_comm_t *parent, int color)
{
    uint64_t id = mix64(parent->id ^ mix64(((uint64_t)parent->next_child++ << 32) | (uint32_t)color));
    return id <= 1 ? id + 2 : id;     /* 1 is the world */
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
    for (int i = 0; i < size; i++) {
        comm->local_size += ctx->node_of[world_ranks[i]] == ctx->node_of[ctx->rank];
    }
    /* The creation-time properties (see core.h): the same on every member. */
    comm->shm_usable = comm->local_size == size && ctx->config.shm;
    ctx->ncomms++;
    *out = comm;
    return RCOLL_OK;
}

void rcoll_comm_destroy(rcoll_comm_t *comm)
{
    if (comm->shm_free != NULL) {
        comm->shm_free(comm);
    }
    comm->ctx->ncomms--;
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

RCOLL_API rcoll_status_t rcoll_comm_split(rcoll_comm_t *comm, int color, int key, rcoll_comm_t **newcomm)
{
    if (comm == NULL || newcomm == NULL) {
        rcoll_error("rcoll_comm_split: invalid argument: %s is NULL", comm ? "newcomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    int p = comm->size;
    int32_t mine[2] = { color < 0 ? -1 : color, key };
    int32_t *all = malloc(sizeof(int32_t) * 2 * (size_t)p);
    split_entry_t *members = malloc(sizeof(*members) * (size_t)p);
    if (all == NULL || members == NULL) {
        free(all);
        free(members);
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_status_t st = rcoll_allgather(mine, all, 2, RCOLL_INT32, comm);
    uint64_t id = child_id(comm, color < 0 ? -1 : color);
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
        if (all[2 * r] == color) {
            members[n++] = (split_entry_t){ color, all[2 * r + 1], r };
        }
    }
    qsort(members, (size_t)n, sizeof(*members), cmp_split);
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
    }
    return st;
}

RCOLL_API rcoll_status_t rcoll_comm_dup(rcoll_comm_t *comm, rcoll_comm_t **newcomm)
{
    if (comm == NULL || newcomm == NULL) {
        rcoll_error("rcoll_comm_dup: invalid argument: %s is NULL", comm ? "newcomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    int *world_ranks = malloc(sizeof(int) * (size_t)comm->size);
    if (world_ranks == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    memcpy(world_ranks, comm->world_ranks, sizeof(int) * (size_t)comm->size);
    rcoll_status_t st = rcoll_comm_create(comm->ctx, child_id(comm, 0x7fffffff), comm->rank,
                                          comm->size, world_ranks, newcomm);
    if (st != RCOLL_OK) {
        free(world_ranks);
    }
    return st;
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
