/*
 * layer.h - the MPI drop-in layer (librcoll_mpi_ompi.so, librcoll_mpi_mpich.so).
 *
 * Every file of mpi/ is compiled twice, once against Open MPI's mpi.h
 * (RCOLL_MPI_OMPI defined) and once against MPICH's; the two builds share all
 * code.  The layer is a client of librcoll's public API (rcoll.h) only.  It
 * defines MPI_* functions that take the collectives listed in docs/mpi.md
 * over and call PMPI_* for everything else; it links no MPI library.
 *
 * State: MPI itself is one per process, so the layer keeps one state record
 * (rcoll__mpi) for the process; nothing else is global.
 */
#ifndef RCOLL_MPI_LAYER_H
#define RCOLL_MPI_LAYER_H

#include <stddef.h>
#include <mpi.h>
#include "rcoll.h"

#ifdef RCOLL_MPI_OMPI
#include "ompi_weak.h"
#define RCOLL_MPI_NAME "Open MPI"
#else
#define RCOLL_MPI_NAME "MPICH"
#endif

#define RCOLL_MPI_API __attribute__((visibility("default")))

/*
 * Handles as the entry points with handle arguments receive them.  If the
 * layer of one MPI is preloaded into a process of the other, it must pass
 * the caller's handles on unchanged: Open MPI's are pointers, MPICH's are
 * ints, so the MPICH build takes them as full registers (uintptr_t) and
 * narrows them only once it knows it runs under MPICH.  The entry points are
 * C functions named layer_entry_* bound to the MPI names with asm labels, so
 * their parameter types may differ from mpi.h's prototypes.
 */
#ifdef RCOLL_MPI_OMPI
typedef MPI_Datatype arg_dt;
typedef MPI_Op       arg_op;
typedef MPI_Comm     arg_comm;
typedef MPI_Request  arg_req;
#else
typedef uintptr_t    arg_dt, arg_op, arg_comm, arg_req;
#endif

/* The MPI's own function (a PMPI_* name), to call with the arg_* types. */
void *rcoll__mpi_next(const char *name);

/* The functions taken over, in report order. */
typedef enum {
    FN_ALLREDUCE, FN_BCAST, FN_BARRIER, FN_REDUCE, FN_ALLGATHER, FN_REDUCE_SCATTER_BLOCK,
    FN_REDUCE_SCATTER, FN_IALLREDUCE, FN_IBCAST, FN_IBARRIER, FN_IREDUCE, FN_IALLGATHER,
    FN_LAST
} layer_fn_t;

/* Why a call went where it went: WHY_RCOLL, or the reason it passed to MPI. */
typedef enum {
    WHY_RCOLL = 0, WHY_OFF, WHY_NOT_STARTED, WHY_THREADS, WHY_ARGS, WHY_INTER, WHY_OUTSIDE,
    WHY_TYPE, WHY_USER_OP, WHY_OP, WHY_BITWISE_FLOAT, WHY_COUNTS,
    WHY_LAST,
    WHY_ERROR          /* not a reason: the twin could not be made; the call fails */
} layer_why_t;

/* A communicator's twin, cached as an MPI attribute (keyval twin_keyval). */
typedef struct layer_twin {
    rcoll_comm_t      *comm;     /* NULL: collectives on it pass to MPI (why) */
    layer_why_t        why;
    MPI_Comm           mpi_comm;
    struct layer_twin *prev, *next;   /* every live twin, for finalize */
} layer_twin_t;

/* What a collective's buffers become for rcoll: signature-based, so every
 * rank makes the same choice whatever datatype handle it passes. */
typedef struct {
    rcoll_comm_t    *twin;
    rcoll_datatype_t dtype;
    rcoll_op_t       op;
    size_t           n;          /* elements of dtype per count of the MPI datatype */
    size_t           bytes;      /* n * size of dtype */
    int              direct;     /* 1: the data lies contiguous at buf + lb */
    MPI_Aint         lb;
    MPI_Datatype     leaf;       /* predefined type of the signature (for packing) */
    int              predefined; /* dt itself is predefined (not just its signature) */
} layer_plan_t;

/* One-entry memo of the latest blocking allreduce / bcast that went to rcoll
 * with a predefined datatype: the same (comm, datatype, op) again skips the
 * plan (the per-call cost of the layer at 8 B is what users compare).
 * Cleared with the twin cache: a freed communicator's handle may come back. */
typedef struct {
    MPI_Comm         comm;
    MPI_Datatype     dt;
    MPI_Op           op;
    rcoll_comm_t    *twin;
    rcoll_datatype_t rdt;
    rcoll_op_t       rop;
} layer_memo_t;

/* One collective in flight: the rcoll request and what to do at its end. */
typedef struct layer_op {
    rcoll_request_t *req;        /* NULL once rcoll has completed it */
    layer_fn_t       fn;
    MPI_Comm         comm;
    void            *tmp;        /* scratch for non-contiguous data, or NULL */
    void            *unpack_from;            /* copy tmp back into the user's layout */
    void            *unpack_to;
    int              unpack_count;
    MPI_Datatype     unpack_type;            /* a dup for nonblocking calls */
    int              unpack_type_dup;
    MPI_Datatype     leaf;
    size_t           leaf_n;
    int              error;      /* MPI error code once complete */
    MPI_Request      greq;       /* nonblocking: the generalized request */
} layer_op_t;

typedef struct {
    int              right_mpi;  /* the MPI this library was built for runs here */
    int              on;         /* collectives may go to rcoll */
    layer_why_t      off_why;    /* when !on: why everything passes */
    int              report;     /* RCOLL_MPI_REPORT */
    rcoll_context_t *ctx;
    rcoll_comm_t    *world;
    int              world_rank;
    MPI_Comm         self;       /* private dup of MPI_COMM_SELF for packing */
    int              twin_keyval, self_keyval;
    int              error_codes[RCOLL_STATUS_LAST];   /* MPI codes with rcoll's texts */
    MPI_Comm         last_comm;  /* one-entry cache of the latest twin lookup */
    layer_twin_t    *last_twin;
    layer_twin_t     world_twin;
    layer_memo_t     memo_allreduce, memo_bcast;
    layer_twin_t    *twins;      /* list of created twins */
    struct { uint64_t hash; int count; } *tags;  /* per member list: creations so far */
    int              ntags, maxtags;
    layer_op_t     **active;     /* nonblocking ops rcoll has not completed */
    int              nactive, maxactive;
    unsigned long    counts[FN_LAST][WHY_LAST];
    void            *f_in_place[4], *f_bottom[4];   /* Fortran's MPI_IN_PLACE, MPI_BOTTOM */
} layer_t;

extern layer_t rcoll__mpi;

/* layer_init.c */
void rcoll__mpi_start(int provided);
int  rcoll__mpi_parse_bool(const char *value, int dflt);

/* layer_comm.c */
layer_twin_t *rcoll__mpi_twin_lookup(MPI_Comm comm);
int  rcoll__mpi_twin_keyval_create(void);
void rcoll__mpi_twins_free_all(void);

static inline void rcoll__mpi_memo_clear(void)
{
    rcoll__mpi.memo_allreduce.comm = MPI_COMM_NULL;
    rcoll__mpi.memo_bcast.comm = MPI_COMM_NULL;
}

static inline layer_twin_t *rcoll__mpi_twin(MPI_Comm comm)
{
    return comm == rcoll__mpi.last_comm ? rcoll__mpi.last_twin : rcoll__mpi_twin_lookup(comm);
}

/* layer_types.c */
int  rcoll__mpi_types_init(void);
layer_why_t rcoll__mpi_plan(layer_plan_t *p, MPI_Comm comm, int count, int blocks,
                            MPI_Datatype dt, MPI_Op op, int reduce);
layer_why_t rcoll__mpi_plan_data(layer_plan_t *p, int count, int blocks, MPI_Datatype dt, int reduce);
int  rcoll__mpi_pack(const void *buf, int count, MPI_Datatype dt, void *tmp, size_t n,
                     MPI_Datatype leaf);
int  rcoll__mpi_unpack(const void *tmp, size_t n, MPI_Datatype leaf, void *buf, int count,
                       MPI_Datatype dt);

/* layer_coll.c: start a collective; the blocking calls wait, the others make a request. */
rcoll_status_t rcoll__mpi_start_allreduce(layer_op_t *o, const void *sbuf, void *rbuf, int count,
                                          MPI_Datatype dt, const layer_plan_t *p);
rcoll_status_t rcoll__mpi_start_bcast(layer_op_t *o, void *buf, int count, MPI_Datatype dt,
                                      int root, const layer_plan_t *p);
rcoll_status_t rcoll__mpi_start_reduce(layer_op_t *o, const void *sbuf, void *rbuf, int count,
                                       MPI_Datatype dt, int root, const layer_plan_t *p);
rcoll_status_t rcoll__mpi_start_allgather(layer_op_t *o, const void *sbuf, int scount,
                                          MPI_Datatype stype, void *rbuf, int rcount,
                                          MPI_Datatype rtype, const layer_plan_t *p);
rcoll_status_t rcoll__mpi_start_reduce_scatter(layer_op_t *o, const void *sbuf, void *rbuf,
                                               int rcount, MPI_Datatype dt, const layer_plan_t *p);
int  rcoll__mpi_finish(layer_op_t *o, rcoll_status_t st, int call_errhandler);

/* layer_nb.c */
int  rcoll__mpi_nb_post(layer_op_t *o, MPI_Request *request);
layer_op_t *rcoll__mpi_nb_find(MPI_Request r);
int  rcoll__mpi_nb_progress(layer_op_t *o, int wait);
int  rcoll__mpi_nb_progress_array(int n, const MPI_Request *reqs, int *completed_now);
void rcoll__mpi_nb_drain(void);

/* The implementations behind the C and Fortran entry points. */
int rcoll__mpi_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm);
int rcoll__mpi_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int rcoll__mpi_barrier(MPI_Comm comm);
int rcoll__mpi_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                      int root, MPI_Comm comm);
int rcoll__mpi_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                         MPI_Datatype rtype, MPI_Comm comm);
int rcoll__mpi_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dt,
                                    MPI_Op op, MPI_Comm comm);
int rcoll__mpi_reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm);
int rcoll__mpi_iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                          MPI_Comm comm, MPI_Request *req);
int rcoll__mpi_ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                      MPI_Request *req);
int rcoll__mpi_ibarrier(MPI_Comm comm, MPI_Request *req);
int rcoll__mpi_ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                       int root, MPI_Comm comm, MPI_Request *req);
int rcoll__mpi_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                          int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req);

/* layer_fortran.c (Open MPI only: its Fortran entry points call PMPI_* directly) */
void rcoll__mpi_fortran_init(void);

/* layer_errors.c */
int  rcoll__mpi_error_class(rcoll_status_t st);
void rcoll__mpi_errors_init(void);
int  rcoll__mpi_raise(MPI_Comm comm, rcoll_status_t st, int call_errhandler);

/* layer_report.c */
static inline void rcoll__mpi_count(layer_fn_t fn, layer_why_t why)
{
    rcoll__mpi.counts[fn][why]++;
}
void rcoll__mpi_report(void);
const char *rcoll__mpi_why_text(layer_why_t why);

/* A one-line message on stderr, prefixed "rcoll-mpi:". */
void rcoll__mpi_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
