/*
 * layer_coll.c - the collectives taken over: each is started as an rcoll
 * request (one code path for blocking and nonblocking calls, as in rcoll
 * itself); a blocking call waits for it at once.  Data that is not
 * contiguous goes through scratch (o->tmp) and is unpacked at the end.
 */
#include <stdlib.h>
#include "layer.h"

#define IN(_b, _lb) ((const char *)(_b) + (_lb))
#define OUT(_b, _lb) ((char *)(_b) + (_lb))

static void *scratch(layer_op_t *o, size_t bytes)
{
    o->tmp = malloc(bytes ? bytes : 1);
    return o->tmp;
}

static void unpack_later(layer_op_t *o, void *from, const layer_plan_t *p, size_t n, void *to,
                         int count, MPI_Datatype dt)
{
    o->unpack_from = from;
    o->unpack_to = to;
    o->unpack_count = count;
    o->unpack_type = dt;
    o->leaf = p->leaf;
    o->leaf_n = n;
}

rcoll_status_t rcoll__mpi_start_allreduce(layer_op_t *o, const void *sbuf, void *rbuf, int count,
                                          MPI_Datatype dt, const layer_plan_t *p)
{
    int in_place = sbuf == MPI_IN_PLACE;
    if (p->direct) {
        return rcoll_iallreduce(in_place ? RCOLL_IN_PLACE : IN(sbuf, p->lb), OUT(rbuf, p->lb), p->n,
                                p->dtype, p->op, p->twin, &o->req);
    }
    char *tmp = scratch(o, 2 * p->bytes);
    if (tmp == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (rcoll__mpi_pack(in_place ? rbuf : sbuf, count, dt, tmp, p->n, p->leaf) != MPI_SUCCESS) {
        return RCOLL_ERR_INVALID_ARG;
    }
    unpack_later(o, tmp + p->bytes, p, p->n, rbuf, count, dt);
    return rcoll_iallreduce(tmp, tmp + p->bytes, p->n, p->dtype, p->op, p->twin, &o->req);
}

rcoll_status_t rcoll__mpi_start_bcast(layer_op_t *o, void *buf, int count, MPI_Datatype dt,
                                      int root, const layer_plan_t *p)
{
    if (p->direct) {
        return rcoll_ibcast(OUT(buf, p->lb), p->n, p->dtype, root, p->twin, &o->req);
    }
    char *tmp = scratch(o, p->bytes);
    if (tmp == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (rcoll_comm_rank(p->twin) == root) {
        if (rcoll__mpi_pack(buf, count, dt, tmp, p->n, p->leaf) != MPI_SUCCESS) {
            return RCOLL_ERR_INVALID_ARG;
        }
    } else {
        unpack_later(o, tmp, p, p->n, buf, count, dt);
    }
    return rcoll_ibcast(tmp, p->n, p->dtype, root, p->twin, &o->req);
}

rcoll_status_t rcoll__mpi_start_reduce(layer_op_t *o, const void *sbuf, void *rbuf, int count,
                                       MPI_Datatype dt, int root, const layer_plan_t *p)
{
    int is_root = rcoll_comm_rank(p->twin) == root;
    int in_place = is_root && sbuf == MPI_IN_PLACE;
    if (p->direct) {
        return rcoll_ireduce(in_place ? RCOLL_IN_PLACE : IN(sbuf, p->lb),
                             is_root ? OUT(rbuf, p->lb) : NULL, p->n, p->dtype, p->op, root,
                             p->twin, &o->req);
    }
    char *tmp = scratch(o, 2 * p->bytes);
    if (tmp == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (rcoll__mpi_pack(in_place ? rbuf : sbuf, count, dt, tmp, p->n, p->leaf) != MPI_SUCCESS) {
        return RCOLL_ERR_INVALID_ARG;
    }
    if (is_root) {
        unpack_later(o, tmp + p->bytes, p, p->n, rbuf, count, dt);
    }
    return rcoll_ireduce(tmp, is_root ? tmp + p->bytes : NULL, p->n, p->dtype, p->op, root,
                         p->twin, &o->req);
}

rcoll_status_t rcoll__mpi_start_allgather(layer_op_t *o, const void *sbuf, int scount,
                                          MPI_Datatype stype, void *rbuf, int rcount,
                                          MPI_Datatype rtype, const layer_plan_t *p)
{
    int size = rcoll_comm_size(p->twin), me = rcoll_comm_rank(p->twin);
    int in_place = sbuf == MPI_IN_PLACE;
    layer_plan_t sp = { 0 };
    if (!in_place && (rcoll__mpi_plan_data(&sp, scount, 1, stype, 0) != WHY_RCOLL ||
                      sp.bytes != p->bytes)) {
        rcoll__mpi_log("MPI_Allgather: the send signature does not match the receive one");
        return RCOLL_ERR_INVALID_ARG;
    }
    size_t sbytes = in_place || sp.direct ? 0 : p->bytes;
    size_t rbytes = p->direct ? 0 : (size_t)size * p->bytes;
    char *tmp = NULL;
    if (sbytes + rbytes > 0 && (tmp = scratch(o, sbytes + rbytes)) == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    const void *s = in_place ? RCOLL_IN_PLACE : sp.direct ? IN(sbuf, sp.lb) : tmp;
    if (sbytes > 0 && rcoll__mpi_pack(sbuf, scount, stype, tmp, sp.n, sp.leaf) != MPI_SUCCESS) {
        return RCOLL_ERR_INVALID_ARG;
    }
    if (p->direct) {
        return rcoll_iallgather(s, OUT(rbuf, p->lb), p->n, p->dtype, p->twin, &o->req);
    }
    char *r = tmp + sbytes;
    if (in_place) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(rtype, &lb, &extent);
        const char *mine = (const char *)rbuf + (MPI_Aint)me * rcount * extent;
        if (rcoll__mpi_pack(mine, rcount, rtype, r + (size_t)me * p->bytes, p->n, p->leaf)
                != MPI_SUCCESS) {
            return RCOLL_ERR_INVALID_ARG;
        }
    }
    unpack_later(o, r, p, (size_t)size * p->n, rbuf, rcount * size, rtype);
    return rcoll_iallgather(s, r, p->n, p->dtype, p->twin, &o->req);
}

rcoll_status_t rcoll__mpi_start_reduce_scatter(layer_op_t *o, const void *sbuf, void *rbuf,
                                               int rcount, MPI_Datatype dt, const layer_plan_t *p)
{
    int size = rcoll_comm_size(p->twin);
    int in_place = sbuf == MPI_IN_PLACE;
    if (p->direct) {
        /* In place, rcoll (like MPI) leaves this rank's block at the start. */
        return rcoll_ireduce_scatter(in_place ? RCOLL_IN_PLACE : IN(sbuf, p->lb), OUT(rbuf, p->lb),
                                     p->n, p->dtype, p->op, p->twin, &o->req);
    }
    char *tmp = scratch(o, (size_t)(size + 1) * p->bytes);
    if (tmp == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (rcoll__mpi_pack(in_place ? rbuf : sbuf, rcount * size, dt, tmp, (size_t)size * p->n,
                        p->leaf) != MPI_SUCCESS) {
        return RCOLL_ERR_INVALID_ARG;
    }
    char *r = tmp + (size_t)size * p->bytes;
    unpack_later(o, r, p, p->n, rbuf, rcount, dt);
    return rcoll_ireduce_scatter(tmp, r, p->n, p->dtype, p->op, p->twin, &o->req);
}

/* After rcoll completed (or failed to start) the collective: unpack, free,
 * and turn a failure into the MPI error (through the error handler). */
int rcoll__mpi_finish(layer_op_t *o, rcoll_status_t st, int call_errhandler)
{
    int rc = MPI_SUCCESS;
    if (st == RCOLL_OK && o->unpack_to != NULL) {
        rc = rcoll__mpi_unpack(o->unpack_from, o->leaf_n, o->leaf, o->unpack_to, o->unpack_count,
                               o->unpack_type);
    }
    if (o->unpack_type_dup) {
        PMPI_Type_free(&o->unpack_type);
        o->unpack_type_dup = 0;
    }
    free(o->tmp);
    o->tmp = NULL;
    o->unpack_to = NULL;
    return st != RCOLL_OK ? rcoll__mpi_raise(o->comm, st, call_errhandler) : rc;
}

/* A blocking call: start, wait, finish. */
static int run(layer_op_t *o, rcoll_status_t st)
{
    if (st == RCOLL_OK) {
        st = rcoll_wait(o->req);
        o->req = NULL;
    }
    return rcoll__mpi_finish(o, st, 1);
}

/* Roots out of range pass to MPI, which reports them as it does. */
static layer_why_t root_ok(const layer_plan_t *p, int root)
{
    return root >= 0 && root < rcoll_comm_size(p->twin) ? WHY_RCOLL : WHY_ARGS;
}

int rcoll__mpi_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm)
{
    const layer_memo_t *m = &rcoll__mpi.memo_allreduce;
    if (comm == m->comm && dt == m->dt && op == m->op && count >= 0) {
        rcoll__mpi_count(FN_ALLREDUCE, WHY_RCOLL);
        rcoll_status_t st = rcoll_allreduce(sbuf == MPI_IN_PLACE ? RCOLL_IN_PLACE : sbuf, rbuf,
                                            (size_t)count, m->rdt, m->rop, m->twin);
        return st == RCOLL_OK ? MPI_SUCCESS : rcoll__mpi_raise(comm, st, 1);
    }
    layer_plan_t p;
    layer_why_t why = rcoll__mpi_plan(&p, comm, count, 1, dt, op, 1);
    rcoll__mpi_count(FN_ALLREDUCE, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
    }
    if (p.direct) {     /* the common case: rcoll's blocking call, nothing to unpack */
        if (p.predefined) {
            rcoll__mpi.memo_allreduce = (layer_memo_t){ .comm = comm, .dt = dt, .op = op,
                                                        .twin = p.twin, .rdt = p.dtype, .rop = p.op };
        }
        rcoll_status_t st = rcoll_allreduce(sbuf == MPI_IN_PLACE ? RCOLL_IN_PLACE : IN(sbuf, p.lb),
                                            OUT(rbuf, p.lb), p.n, p.dtype, p.op, p.twin);
        return st == RCOLL_OK ? MPI_SUCCESS : rcoll__mpi_raise(comm, st, 1);
    }
    layer_op_t o = { .comm = comm };
    return run(&o, rcoll__mpi_start_allreduce(&o, sbuf, rbuf, count, dt, &p));
}

int rcoll__mpi_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    const layer_memo_t *m = &rcoll__mpi.memo_bcast;
    if (comm == m->comm && dt == m->dt && count >= 0 && root >= 0 && root < rcoll_comm_size(m->twin)) {
        rcoll__mpi_count(FN_BCAST, WHY_RCOLL);
        rcoll_status_t st = rcoll_bcast(buf, (size_t)count, m->rdt, root, m->twin);
        return st == RCOLL_OK ? MPI_SUCCESS : rcoll__mpi_raise(comm, st, 1);
    }
    layer_plan_t p;
    layer_why_t why = rcoll__mpi_plan(&p, comm, count, 1, dt, MPI_OP_NULL, 0);
    if (why == WHY_RCOLL) {
        why = root_ok(&p, root);
    }
    rcoll__mpi_count(FN_BCAST, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return PMPI_Bcast(buf, count, dt, root, comm);
    }
    if (p.direct) {
        if (p.predefined) {
            rcoll__mpi.memo_bcast = (layer_memo_t){ .comm = comm, .dt = dt, .twin = p.twin,
                                                    .rdt = p.dtype };
        }
        rcoll_status_t st = rcoll_bcast(OUT(buf, p.lb), p.n, p.dtype, root, p.twin);
        return st == RCOLL_OK ? MPI_SUCCESS : rcoll__mpi_raise(comm, st, 1);
    }
    layer_op_t o = { .comm = comm };
    return run(&o, rcoll__mpi_start_bcast(&o, buf, count, dt, root, &p));
}

int rcoll__mpi_barrier(MPI_Comm comm)
{
    layer_plan_t p;
    layer_why_t why = rcoll__mpi_plan(&p, comm, 0, 1, MPI_BYTE, MPI_OP_NULL, 0);
    rcoll__mpi_count(FN_BARRIER, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return PMPI_Barrier(comm);
    }
    rcoll_status_t st = rcoll_barrier(p.twin);
    return st == RCOLL_OK ? MPI_SUCCESS : rcoll__mpi_raise(comm, st, 1);
}

int rcoll__mpi_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                      int root, MPI_Comm comm)
{
    layer_plan_t p;
    layer_why_t why = rcoll__mpi_plan(&p, comm, count, 1, dt, op, 1);
    if (why == WHY_RCOLL) {
        why = root_ok(&p, root);
    }
    rcoll__mpi_count(FN_REDUCE, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
    }
    layer_op_t o = { .comm = comm };
    return run(&o, rcoll__mpi_start_reduce(&o, sbuf, rbuf, count, dt, root, &p));
}

static int comm_size(MPI_Comm comm)
{
    int size = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &size) != MPI_SUCCESS) {
        return 0;
    }
    return size;
}

int rcoll__mpi_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                         MPI_Datatype rtype, MPI_Comm comm)
{
    layer_plan_t p;
    layer_why_t why = rcoll__mpi_plan(&p, comm, rcount, rcoll__mpi.on ? comm_size(comm) : 1,
                                      rtype, MPI_OP_NULL, 0);
    rcoll__mpi_count(FN_ALLGATHER, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    }
    layer_op_t o = { .comm = comm };
    return run(&o, rcoll__mpi_start_allgather(&o, sbuf, scount, stype, rbuf, rcount, rtype, &p));
}

static int reduce_scatter(layer_fn_t fn, const void *sbuf, void *rbuf, int rcount,
                          MPI_Datatype dt, MPI_Op op, MPI_Comm comm, layer_why_t why)
{
    layer_plan_t p;
    if (why == WHY_RCOLL) {
        why = rcoll__mpi_plan(&p, comm, rcount, comm_size(comm), dt, op, 1);
    }
    rcoll__mpi_count(fn, why == WHY_ERROR ? WHY_RCOLL : why);
    if (why == WHY_ERROR) {
        return rcoll__mpi_raise(comm, RCOLL_ERR_INTERNAL, 1);
    }
    if (why != WHY_RCOLL) {
        return -1;
    }
    layer_op_t o = { .comm = comm };
    return run(&o, rcoll__mpi_start_reduce_scatter(&o, sbuf, rbuf, rcount, dt, &p));
}

int rcoll__mpi_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                                    MPI_Op op, MPI_Comm comm)
{
    layer_why_t why = rcoll__mpi.on ? WHY_RCOLL : rcoll__mpi.off_why;
    int rc = reduce_scatter(FN_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dt, op, comm, why);
    return rc != -1 ? rc : PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm);
}

/* Taken only when every rank receives the same count (recvcounts is the
 * same array on every rank, so all decide alike). */
int rcoll__mpi_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    layer_why_t why = rcoll__mpi.on ? WHY_RCOLL : rcoll__mpi.off_why;
    int size = why == WHY_RCOLL ? comm_size(comm) : 0;
    if (why == WHY_RCOLL && (size == 0 || rcounts == NULL)) {
        why = WHY_ARGS;
    }
    for (int i = 1; why == WHY_RCOLL && i < size; i++) {
        if (rcounts[i] != rcounts[0]) {
            why = WHY_COUNTS;
        }
    }
    int rc = reduce_scatter(FN_REDUCE_SCATTER, sbuf, rbuf, why == WHY_RCOLL ? rcounts[0] : 0, dt,
                            op, comm, why);
    return rc != -1 ? rc : PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm);
}

/* The entry points: pass everything through unchanged until the layer knows
 * it runs under its own MPI (see arg_dt in layer.h). */
#define OWN_MPI() (rcoll__mpi.right_mpi)

typedef int (*allreduce_fn)(const void *, void *, int, arg_dt, arg_op, arg_comm);
RCOLL_MPI_API int layer_entry_allreduce(const void *sbuf, void *rbuf, int count, arg_dt dt,
                                        arg_op op, arg_comm comm) __asm__("MPI_Allreduce");
int layer_entry_allreduce(const void *sbuf, void *rbuf, int count, arg_dt dt, arg_op op,
                          arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((allreduce_fn)rcoll__mpi_next("PMPI_Allreduce"))(sbuf, rbuf, count, dt, op, comm);
    }
    return rcoll__mpi_allreduce(sbuf, rbuf, count, (MPI_Datatype)dt, (MPI_Op)op, (MPI_Comm)comm);
}

typedef int (*bcast_fn)(void *, int, arg_dt, int, arg_comm);
RCOLL_MPI_API int layer_entry_bcast(void *buf, int count, arg_dt dt, int root, arg_comm comm)
    __asm__("MPI_Bcast");
int layer_entry_bcast(void *buf, int count, arg_dt dt, int root, arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((bcast_fn)rcoll__mpi_next("PMPI_Bcast"))(buf, count, dt, root, comm);
    }
    return rcoll__mpi_bcast(buf, count, (MPI_Datatype)dt, root, (MPI_Comm)comm);
}

typedef int (*barrier_fn)(arg_comm);
RCOLL_MPI_API int layer_entry_barrier(arg_comm comm) __asm__("MPI_Barrier");
int layer_entry_barrier(arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((barrier_fn)rcoll__mpi_next("PMPI_Barrier"))(comm);
    }
    return rcoll__mpi_barrier((MPI_Comm)comm);
}

typedef int (*reduce_fn)(const void *, void *, int, arg_dt, arg_op, int, arg_comm);
RCOLL_MPI_API int layer_entry_reduce(const void *sbuf, void *rbuf, int count, arg_dt dt, arg_op op,
                                     int root, arg_comm comm) __asm__("MPI_Reduce");
int layer_entry_reduce(const void *sbuf, void *rbuf, int count, arg_dt dt, arg_op op, int root,
                       arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((reduce_fn)rcoll__mpi_next("PMPI_Reduce"))(sbuf, rbuf, count, dt, op, root, comm);
    }
    return rcoll__mpi_reduce(sbuf, rbuf, count, (MPI_Datatype)dt, (MPI_Op)op, root, (MPI_Comm)comm);
}

typedef int (*allgather_fn)(const void *, int, arg_dt, void *, int, arg_dt, arg_comm);
RCOLL_MPI_API int layer_entry_allgather(const void *sbuf, int scount, arg_dt stype, void *rbuf,
                                        int rcount, arg_dt rtype, arg_comm comm)
    __asm__("MPI_Allgather");
int layer_entry_allgather(const void *sbuf, int scount, arg_dt stype, void *rbuf, int rcount,
                          arg_dt rtype, arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((allgather_fn)rcoll__mpi_next("PMPI_Allgather"))(sbuf, scount, stype, rbuf, rcount,
                                                                 rtype, comm);
    }
    return rcoll__mpi_allgather(sbuf, scount, (MPI_Datatype)stype, rbuf, rcount,
                                (MPI_Datatype)rtype, (MPI_Comm)comm);
}

typedef int (*reduce_scatter_block_fn)(const void *, void *, int, arg_dt, arg_op, arg_comm);
RCOLL_MPI_API int layer_entry_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                                   arg_dt dt, arg_op op, arg_comm comm)
    __asm__("MPI_Reduce_scatter_block");
int layer_entry_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, arg_dt dt,
                                     arg_op op, arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((reduce_scatter_block_fn)rcoll__mpi_next("PMPI_Reduce_scatter_block"))(
            sbuf, rbuf, rcount, dt, op, comm);
    }
    return rcoll__mpi_reduce_scatter_block(sbuf, rbuf, rcount, (MPI_Datatype)dt, (MPI_Op)op,
                                           (MPI_Comm)comm);
}

typedef int (*reduce_scatter_fn)(const void *, void *, const int *, arg_dt, arg_op, arg_comm);
RCOLL_MPI_API int layer_entry_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                                             arg_dt dt, arg_op op, arg_comm comm)
    __asm__("MPI_Reduce_scatter");
int layer_entry_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], arg_dt dt,
                               arg_op op, arg_comm comm)
{
    if (!OWN_MPI()) {
        return ((reduce_scatter_fn)rcoll__mpi_next("PMPI_Reduce_scatter"))(sbuf, rbuf, rcounts, dt,
                                                                           op, comm);
    }
    return rcoll__mpi_reduce_scatter(sbuf, rbuf, rcounts, (MPI_Datatype)dt, (MPI_Op)op,
                                     (MPI_Comm)comm);
}
