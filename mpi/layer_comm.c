/*
 * layer_comm.c - every intra-communicator's rcoll twin, made lazily and
 * collectively over its members only, at its first collective (so
 * communicators from any constructor need nothing of their own), and cached
 * as an MPI attribute whose delete callback frees it.
 *
 * The twin is rcoll_comm_create_group over the members' world ranks in
 * communicator order.  Its tag is the number of twins this process made
 * before over the very same member list: members create twins of the
 * communicators they share in the same order (their first collectives are),
 * so the tags agree, and two twins over one group never share a tag.
 */
#include <stdlib.h>
#include "layer.h"

static layer_twin_t *twin_new(MPI_Comm comm, rcoll_comm_t *rc, layer_why_t why)
{
    layer_twin_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return NULL;
    }
    t->comm = rc;
    t->why = why;
    t->mpi_comm = comm;
    t->next = rcoll__mpi.twins;
    if (t->next != NULL) {
        t->next->prev = t;
    }
    rcoll__mpi.twins = t;
    return t;
}

static void twin_unlink(layer_twin_t *t)
{
    if (t->prev != NULL) {
        t->prev->next = t->next;
    } else {
        rcoll__mpi.twins = t->next;
    }
    if (t->next != NULL) {
        t->next->prev = t->prev;
    }
}

static int twin_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    layer_t *L = &rcoll__mpi;
    layer_twin_t *t = value;
    if (L->last_twin == t) {
        L->last_comm = MPI_COMM_NULL;
        L->last_twin = NULL;
    }
    rcoll__mpi_memo_clear();
    if (t->comm != NULL) {
        rcoll_status_t st = rcoll_comm_free(t->comm);
        if (st != RCOLL_OK) {
            rcoll__mpi_log("rcoll_comm_free: %s", rcoll_strerror(st));
        }
    }
    twin_unlink(t);
    free(t);
    return MPI_SUCCESS;
}

int rcoll__mpi_twin_keyval_create(void)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, twin_delete, &rcoll__mpi.twin_keyval,
                                   NULL) == MPI_SUCCESS ? 0 : -1;
}

/* Before rcoll_finalize: drop the twins of communicators the program never freed. */
void rcoll__mpi_twins_free_all(void)
{
    while (rcoll__mpi.twins != NULL) {
        layer_twin_t *t = rcoll__mpi.twins;
        if (PMPI_Comm_delete_attr(t->mpi_comm, rcoll__mpi.twin_keyval) != MPI_SUCCESS) {
            twin_delete(t->mpi_comm, rcoll__mpi.twin_keyval, t, NULL);
        }
    }
    PMPI_Comm_free_keyval(&rcoll__mpi.twin_keyval);
}

static uint64_t list_hash(const int *ranks, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint32_t)ranks[i]) * 1099511628211ull;
    }
    return h ^ (uint64_t)n;
}

/* The next tag for a twin over this member list; -1 without memory. */
static int next_tag(const int *ranks, int n)
{
    layer_t *L = &rcoll__mpi;
    uint64_t h = list_hash(ranks, n);
    for (int i = 0; i < L->ntags; i++) {
        if (L->tags[i].hash == h) {
            return L->tags[i].count++;
        }
    }
    if (L->ntags == L->maxtags) {
        int max = L->maxtags ? 2 * L->maxtags : 16;
        void *p = realloc(L->tags, (size_t)max * sizeof(*L->tags));
        if (p == NULL) {
            return -1;
        }
        L->tags = p;
        L->maxtags = max;
    }
    L->tags[L->ntags].hash = h;
    L->tags[L->ntags].count = 1;
    L->ntags++;
    return 0;
}

/* The members' world ranks in comm order; 0 on success, 1 when one is not
 * in MPI_COMM_WORLD (spawned processes), -1 on an MPI error. */
static int world_ranks(MPI_Comm comm, int n, int *out)
{
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int rc = -1;
    int *mine = malloc((size_t)n * sizeof(int));
    if (mine != NULL && PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
        PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS) {
        for (int i = 0; i < n; i++) {
            mine[i] = i;
        }
        if (PMPI_Group_translate_ranks(g, n, mine, wg, out) == MPI_SUCCESS) {
            rc = 0;
            for (int i = 0; i < n; i++) {
                if (out[i] == MPI_UNDEFINED) {
                    rc = 1;
                }
            }
        }
    }
    if (g != MPI_GROUP_NULL) {
        PMPI_Group_free(&g);
    }
    if (wg != MPI_GROUP_NULL) {
        PMPI_Group_free(&wg);
    }
    free(mine);
    return rc;
}

/* A twin that passes to MPI (inter-communicator, members outside the world). */
static layer_twin_t *attach(MPI_Comm comm, rcoll_comm_t *rc, layer_why_t why)
{
    layer_twin_t *t = twin_new(comm, rc, why);
    if (t == NULL) {
        if (rc != NULL) {
            rcoll_comm_free(rc);
        }
        return NULL;
    }
    if (PMPI_Comm_set_attr(comm, rcoll__mpi.twin_keyval, t) != MPI_SUCCESS) {
        twin_delete(comm, rcoll__mpi.twin_keyval, t, NULL);
        return NULL;
    }
    return t;
}

static layer_twin_t *create(MPI_Comm comm)
{
    int inter = 0, n = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) {
        return NULL;
    }
    if (inter) {
        return attach(comm, NULL, WHY_INTER);
    }
    PMPI_Comm_size(comm, &n);
    int *ranks = malloc((size_t)n * sizeof(int));
    if (ranks == NULL) {
        return NULL;
    }
    int rc = world_ranks(comm, n, ranks);
    layer_twin_t *t = NULL;
    if (rc == 1) {
        t = attach(comm, NULL, WHY_OUTSIDE);
    } else if (rc == 0) {
        int tag = next_tag(ranks, n);
        rcoll_comm_t *twin = NULL;
        if (tag >= 0 && rcoll_comm_create_group(rcoll__mpi.world, ranks, n, tag, &twin) == RCOLL_OK) {
            t = attach(comm, twin, WHY_RCOLL);
        }
    }
    free(ranks);
    return t;
}

/* The twin of comm, made at its first collective; NULL when it cannot be
 * made (the caller reports an error: the members that did make it wait). */
layer_twin_t *rcoll__mpi_twin_lookup(MPI_Comm comm)
{
    layer_t *L = &rcoll__mpi;
    layer_twin_t *t = NULL;
    int found = 0;
    if (comm == MPI_COMM_WORLD) {
        t = &L->world_twin;
    } else if (PMPI_Comm_get_attr(comm, L->twin_keyval, &t, &found) != MPI_SUCCESS) {
        return NULL;
    } else if (!found) {
        t = create(comm);
    }
    if (t != NULL) {
        L->last_comm = comm;
        L->last_twin = t;
    }
    return t;
}
