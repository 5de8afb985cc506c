/*
 * layer_nb.c - nonblocking collectives as real MPI requests: each is a
 * generalized request (PMPI_Grequest_start) that the layer completes
 * (PMPI_Grequest_complete) once rcoll has finished the collective.  Every
 * completion call that can see such a request progresses rcoll first, also
 * for arrays that mix them with other requests; while any of ours is
 * pending, waiting calls alternate rcoll progress and an MPI test so that
 * neither side starves.  Requests rcoll has not finished are kept in
 * rcoll__mpi.active; with none there, the completion calls cost one test.
 */
#include <stdlib.h>
#include "layer.h"

static int query_fn(void *extra, MPI_Status *status)
{
    layer_op_t *o = extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = o->error;
    return o->error;
}

static int free_fn(void *extra)
{
    free(extra);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra; (void)complete;
    return MPI_SUCCESS;     /* collectives cannot be cancelled */
}

static void active_remove(layer_op_t *o)
{
    layer_t *L = &rcoll__mpi;
    for (int i = 0; i < L->nactive; i++) {
        if (L->active[i] == o) {
            L->active[i] = L->active[--L->nactive];
            return;
        }
    }
}

/* After a start: a request of ours, or the start's error (no request). */
int rcoll__mpi_nb_post(layer_op_t *o, MPI_Request *request)
{
    layer_t *L = &rcoll__mpi;
    if (L->nactive == L->maxactive) {
        int max = L->maxactive ? 2 * L->maxactive : 16;
        void *p = realloc(L->active, (size_t)max * sizeof(*L->active));
        if (p == NULL) {
            return MPI_ERR_NO_MEM;
        }
        L->active = p;
        L->maxactive = max;
    }
    int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, o, &o->greq);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    L->active[L->nactive++] = o;
    *request = o->greq;
    return MPI_SUCCESS;
}

layer_op_t *rcoll__mpi_nb_find(MPI_Request r)
{
    layer_t *L = &rcoll__mpi;
    for (int i = 0; i < L->nactive; i++) {
        if (L->active[i]->greq == r) {
            return L->active[i];
        }
    }
    return NULL;
}

/* Progress (or with wait, finish) one of ours; 1 once it is complete. */
int rcoll__mpi_nb_progress(layer_op_t *o, int wait)
{
    int done = 0;
    rcoll_status_t st;
    if (wait) {
        st = rcoll_wait(o->req);
        done = 1;
    } else {
        st = rcoll_test(o->req, &done);
        done = done || st != RCOLL_OK;   /* a failed test has released the request too */
    }
    if (!done) {
        return 0;
    }
    o->req = NULL;
    o->error = rcoll__mpi_finish(o, st, 0);
    active_remove(o);
    PMPI_Grequest_complete(o->greq);
    return 1;
}

/* Test each of ours among reqs once; returns how many are still pending and
 * sets *completed_now to how many this call completed. */
int rcoll__mpi_nb_progress_array(int n, const MPI_Request *reqs, int *completed_now)
{
    int pending = 0, now = 0;
    for (int i = 0; i < n && rcoll__mpi.nactive > 0; i++) {
        layer_op_t *o = rcoll__mpi_nb_find(reqs[i]);
        if (o != NULL) {
            if (rcoll__mpi_nb_progress(o, 0)) {
                now++;
            } else {
                pending++;
            }
        }
    }
    if (completed_now != NULL) {
        *completed_now = now;
    }
    return pending;
}

/* At finalize: finish what the program never waited for. */
void rcoll__mpi_nb_drain(void)
{
    while (rcoll__mpi.nactive > 0) {
        rcoll__mpi_nb_progress(rcoll__mpi.active[0], 1);
    }
    free(rcoll__mpi.active);
    rcoll__mpi.active = NULL;
    rcoll__mpi.maxactive = 0;
}

static int start_nb(layer_op_t *o, rcoll_status_t st, MPI_Request *request)
{
    if (st != RCOLL_OK) {
        int rc = rcoll__mpi_finish(o, st, 1);
        free(o);
        return rc;
    }
    int rc = rcoll__mpi_nb_post(o, request);
    if (rc != MPI_SUCCESS) {
        rcoll_wait(o->req);
        o->req = NULL;
        rcoll__mpi_finish(o, RCOLL_OK, 0);
        free(o);
    }
    return rc;
}

static layer_op_t *op_new(MPI_Comm comm)
{
    layer_op_t *o = calloc(1, sizeof(*o));
    if (o != NULL) {
        o->comm = comm;
    }
    return o;
}

/* The datatype unpacked into at completion must outlive a free by the program. */
static rcoll_status_t keep_type(layer_op_t *o)
{
    if (o->unpack_to == NULL) {
        return RCOLL_OK;
    }
    if (PMPI_Type_dup(o->unpack_type, &o->unpack_type) != MPI_SUCCESS) {
        return RCOLL_ERR_NO_MEMORY;
    }
    o->unpack_type_dup = 1;
    return RCOLL_OK;
}

/* Pass to MPI, or start ours; *o is NULL when the call passes. */
static int begin(layer_fn_t fn, layer_why_t why, MPI_Comm comm, layer_op_t **o)
{
    *o = NULL;
    rcoll__mpi_count(fn, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return -1;
    }
    if ((*o = op_new(comm)) == NULL) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_NO_MEMORY, 1);
    }
    return MPI_SUCCESS;
}

static rcoll_status_t kept(layer_op_t *o, rcoll_status_t st)
{
    if (st == RCOLL_OK && keep_type(o) != RCOLL_OK) {
        rcoll_wait(o->req);
        o->req = NULL;
        return RCOLL_ERR_NO_MEMORY;
    }
    return st;
}

int rcoll__mpi_iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm, MPI_Request *req)
{
    layer_plan_t p;
    layer_op_t *o;
    int rc = begin(FN_IALLREDUCE, rcoll__mpi_plan(&p, comm, count, 1, dt, op, 1), comm, &o);
    if (o == NULL) {
        return rc != -1 ? rc : PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, req);
    }
    return start_nb(o, kept(o, rcoll__mpi_start_allreduce(o, sbuf, rbuf, count, dt, &p)), req);
}

int rcoll__mpi_ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                      MPI_Request *req)
{
    layer_plan_t p;
    layer_op_t *o;
    layer_why_t why = rcoll__mpi_plan(&p, comm, count, 1, dt, MPI_OP_NULL, 0);
    if (why == WHY_RCOLL && (root < 0 || root >= rcoll_comm_size(p.twin))) {
        why = WHY_ARGS;
    }
    int rc = begin(FN_IBCAST, why, comm, &o);
    if (o == NULL) {
        return rc != -1 ? rc : PMPI_Ibcast(buf, count, dt, root, comm, req);
    }
    return start_nb(o, kept(o, rcoll__mpi_start_bcast(o, buf, count, dt, root, &p)), req);
}

int rcoll__mpi_ibarrier(MPI_Comm comm, MPI_Request *req)
{
    layer_plan_t p;
    layer_op_t *o;
    int rc = begin(FN_IBARRIER, rcoll__mpi_plan(&p, comm, 0, 1, MPI_BYTE, MPI_OP_NULL, 0), comm, &o);
    if (o == NULL) {
        return rc != -1 ? rc : PMPI_Ibarrier(comm, req);
    }
    return start_nb(o, rcoll_ibarrier(p.twin, &o->req), req);
}

int rcoll__mpi_ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm, MPI_Request *req)
{
    layer_plan_t p;
    layer_op_t *o;
    layer_why_t why = rcoll__mpi_plan(&p, comm, count, 1, dt, op, 1);
    if (why == WHY_RCOLL && (root < 0 || root >= rcoll_comm_size(p.twin))) {
        why = WHY_ARGS;
    }
    int rc = begin(FN_IREDUCE, why, comm, &o);
    if (o == NULL) {
        return rc != -1 ? rc : PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, req);
    }
    return start_nb(o, kept(o, rcoll__mpi_start_reduce(o, sbuf, rbuf, count, dt, root, &p)), req);
}

int rcoll__mpi_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                          int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    layer_plan_t p;
    layer_op_t *o;
    int size = 1;
    if (rcoll__mpi.on && comm != MPI_COMM_NULL) {
        PMPI_Comm_size(comm, &size);
    }
    int rc = begin(FN_IALLGATHER, rcoll__mpi_plan(&p, comm, rcount, size, rtype, MPI_OP_NULL, 0),
                   comm, &o);
    if (o == NULL) {
        return rc != -1 ? rc : PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
    }
    return start_nb(o, kept(o, rcoll__mpi_start_allgather(o, sbuf, scount, stype, rbuf, rcount,
                                                           rtype, &p)), req);
}

/* The entry points: everything passes through unchanged until the layer
 * knows it runs under its own MPI (see arg_dt in layer.h). */
typedef int (*iallreduce_fn)(const void *, void *, int, arg_dt, arg_op, arg_comm, MPI_Request *);
RCOLL_MPI_API int layer_entry_iallreduce(const void *sbuf, void *rbuf, int count, arg_dt dt,
                                         arg_op op, arg_comm comm, MPI_Request *req)
    __asm__("MPI_Iallreduce");
int layer_entry_iallreduce(const void *sbuf, void *rbuf, int count, arg_dt dt, arg_op op,
                           arg_comm comm, MPI_Request *req)
{
    if (!rcoll__mpi.right_mpi) {
        return ((iallreduce_fn)rcoll__mpi_next("PMPI_Iallreduce"))(sbuf, rbuf, count, dt, op, comm,
                                                                   req);
    }
    return rcoll__mpi_iallreduce(sbuf, rbuf, count, (MPI_Datatype)dt, (MPI_Op)op, (MPI_Comm)comm,
                                 req);
}

typedef int (*ibcast_fn)(void *, int, arg_dt, int, arg_comm, MPI_Request *);
RCOLL_MPI_API int layer_entry_ibcast(void *buf, int count, arg_dt dt, int root, arg_comm comm,
                                     MPI_Request *req) __asm__("MPI_Ibcast");
int layer_entry_ibcast(void *buf, int count, arg_dt dt, int root, arg_comm comm, MPI_Request *req)
{
    if (!rcoll__mpi.right_mpi) {
        return ((ibcast_fn)rcoll__mpi_next("PMPI_Ibcast"))(buf, count, dt, root, comm, req);
    }
    return rcoll__mpi_ibcast(buf, count, (MPI_Datatype)dt, root, (MPI_Comm)comm, req);
}

typedef int (*ibarrier_fn)(arg_comm, MPI_Request *);
RCOLL_MPI_API int layer_entry_ibarrier(arg_comm comm, MPI_Request *req) __asm__("MPI_Ibarrier");
int layer_entry_ibarrier(arg_comm comm, MPI_Request *req)
{
    if (!rcoll__mpi.right_mpi) {
        return ((ibarrier_fn)rcoll__mpi_next("PMPI_Ibarrier"))(comm, req);
    }
    return rcoll__mpi_ibarrier((MPI_Comm)comm, req);
}

typedef int (*ireduce_fn)(const void *, void *, int, arg_dt, arg_op, int, arg_comm, MPI_Request *);
RCOLL_MPI_API int layer_entry_ireduce(const void *sbuf, void *rbuf, int count, arg_dt dt,
                                      arg_op op, int root, arg_comm comm, MPI_Request *req)
    __asm__("MPI_Ireduce");
int layer_entry_ireduce(const void *sbuf, void *rbuf, int count, arg_dt dt, arg_op op, int root,
                        arg_comm comm, MPI_Request *req)
{
    if (!rcoll__mpi.right_mpi) {
        return ((ireduce_fn)rcoll__mpi_next("PMPI_Ireduce"))(sbuf, rbuf, count, dt, op, root, comm,
                                                             req);
    }
    return rcoll__mpi_ireduce(sbuf, rbuf, count, (MPI_Datatype)dt, (MPI_Op)op, root,
                              (MPI_Comm)comm, req);
}

typedef int (*iallgather_fn)(const void *, int, arg_dt, void *, int, arg_dt, arg_comm,
                             MPI_Request *);
RCOLL_MPI_API int layer_entry_iallgather(const void *sbuf, int scount, arg_dt stype, void *rbuf,
                                         int rcount, arg_dt rtype, arg_comm comm,
                                         MPI_Request *req) __asm__("MPI_Iallgather");
int layer_entry_iallgather(const void *sbuf, int scount, arg_dt stype, void *rbuf, int rcount,
                           arg_dt rtype, arg_comm comm, MPI_Request *req)
{
    if (!rcoll__mpi.right_mpi) {
        return ((iallgather_fn)rcoll__mpi_next("PMPI_Iallgather"))(sbuf, scount, stype, rbuf,
                                                                   rcount, rtype, comm, req);
    }
    return rcoll__mpi_iallgather(sbuf, scount, (MPI_Datatype)stype, rbuf, rcount,
                                 (MPI_Datatype)rtype, (MPI_Comm)comm, req);
}
