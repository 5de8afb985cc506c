/*
 * layer_fortran.c - Fortran entry points (mpif.h and `use mpi`), Open MPI
 * build only.  Open MPI's Fortran bindings call PMPI_* directly, so the C
 * entry points never see a Fortran program's calls; MPICH's call the MPI_*
 * C functions and need nothing here.  Each binding converts the handles with
 * the MPI's own f2c/c2f functions and Fortran's MPI_IN_PLACE / MPI_BOTTOM
 * sentinels, and calls the same implementation as the C entry point.
 * Names: gfortran's manglings, name_ and (-fsecond-underscore) name__.
 * mpi_f08 (MPI_*_f08) passes through.  Until the layer knows it runs under
 * Open MPI (after MPI_Init), and in another MPI's process, every call goes
 * unchanged to the next definition of its own name (dlsym RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include "layer.h"

typedef MPI_Fint fint;

static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

void rcoll__mpi_fortran_init(void)
{
    static const char *const in_place[4] = { "mpi_fortran_in_place_", "mpi_fortran_in_place__",
                                             "mpi_fortran_in_place", "MPI_FORTRAN_IN_PLACE" };
    static const char *const bottom[4] = { "mpi_fortran_bottom_", "mpi_fortran_bottom__",
                                           "mpi_fortran_bottom", "MPI_FORTRAN_BOTTOM" };
    for (int i = 0; i < 4; i++) {
        rcoll__mpi.f_in_place[i] = dlsym(RTLD_DEFAULT, in_place[i]);
        rcoll__mpi.f_bottom[i] = dlsym(RTLD_DEFAULT, bottom[i]);
    }
}

/* A Fortran buffer argument as C sees it. */
static void *buf(void *p)
{
    for (int i = 0; i < 4; i++) {
        if (p != NULL && p == rcoll__mpi.f_in_place[i]) {
            return MPI_IN_PLACE;
        }
        if (p != NULL && p == rcoll__mpi.f_bottom[i]) {
            return MPI_BOTTOM;
        }
    }
    return p;
}

#define OURS() (rcoll__mpi.right_mpi)
#define DT(_f) PMPI_Type_f2c(*(_f))
#define OP(_f) PMPI_Op_f2c(*(_f))
#define COMM(_f) PMPI_Comm_f2c(*(_f))

/* --- start-up ----------------------------------------------------------- */

RCOLL_MPI_API void mpi_init_(fint *ierr)
{
    ((void (*)(fint *))next("mpi_init_"))(ierr);
    if (*ierr == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        rcoll__mpi_start(provided);
    }
}
RCOLL_MPI_API void mpi_init__(fint *ierr) { mpi_init_(ierr); }

RCOLL_MPI_API void mpi_init_thread_(fint *required, fint *provided, fint *ierr)
{
    ((void (*)(fint *, fint *, fint *))next("mpi_init_thread_"))(required, provided, ierr);
    if (*ierr == MPI_SUCCESS) {
        rcoll__mpi_start(*provided);
    }
}
RCOLL_MPI_API void mpi_init_thread__(fint *r, fint *p, fint *e) { mpi_init_thread_(r, p, e); }

/* --- blocking collectives ------------------------------------------------ */

RCOLL_MPI_API void mpi_allreduce_(void *s, void *r, fint *count, fint *dt, fint *op, fint *comm,
                                  fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *))next("mpi_allreduce_"))(
            s, r, count, dt, op, comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_allreduce(buf(s), buf(r), *count, DT(dt), OP(op), COMM(comm));
}
RCOLL_MPI_API void mpi_allreduce__(void *s, void *r, fint *c, fint *d, fint *o, fint *m, fint *e)
{
    mpi_allreduce_(s, r, c, d, o, m, e);
}

RCOLL_MPI_API void mpi_bcast_(void *b, fint *count, fint *dt, fint *root, fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, fint *, fint *, fint *, fint *, fint *))next("mpi_bcast_"))(
            b, count, dt, root, comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_bcast(buf(b), *count, DT(dt), *root, COMM(comm));
}
RCOLL_MPI_API void mpi_bcast__(void *b, fint *c, fint *d, fint *r, fint *m, fint *e)
{
    mpi_bcast_(b, c, d, r, m, e);
}

RCOLL_MPI_API void mpi_barrier_(fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(fint *, fint *))next("mpi_barrier_"))(comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_barrier(COMM(comm));
}
RCOLL_MPI_API void mpi_barrier__(fint *comm, fint *ierr) { mpi_barrier_(comm, ierr); }

RCOLL_MPI_API void mpi_reduce_(void *s, void *r, fint *count, fint *dt, fint *op, fint *root,
                               fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_reduce_"))(s, r, count, dt, op, root, comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_reduce(buf(s), buf(r), *count, DT(dt), OP(op), *root, COMM(comm));
}
RCOLL_MPI_API void mpi_reduce__(void *s, void *r, fint *c, fint *d, fint *o, fint *t, fint *m,
                                fint *e)
{
    mpi_reduce_(s, r, c, d, o, t, m, e);
}

RCOLL_MPI_API void mpi_allgather_(void *s, fint *scount, fint *stype, void *r, fint *rcount,
                                  fint *rtype, fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, fint *, fint *, void *, fint *, fint *, fint *, fint *))next(
            "mpi_allgather_"))(s, scount, stype, r, rcount, rtype, comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_allgather(buf(s), *scount, DT(stype), buf(r), *rcount, DT(rtype),
                                 COMM(comm));
}
RCOLL_MPI_API void mpi_allgather__(void *s, fint *sc, fint *st, void *r, fint *rc, fint *rt,
                                   fint *m, fint *e)
{
    mpi_allgather_(s, sc, st, r, rc, rt, m, e);
}

RCOLL_MPI_API void mpi_reduce_scatter_block_(void *s, void *r, fint *rcount, fint *dt, fint *op,
                                             fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_reduce_scatter_block_"))(s, r, rcount, dt, op, comm, ierr);
        return;
    }
    *ierr = rcoll__mpi_reduce_scatter_block(buf(s), buf(r), *rcount, DT(dt), OP(op), COMM(comm));
}
RCOLL_MPI_API void mpi_reduce_scatter_block__(void *s, void *r, fint *c, fint *d, fint *o,
                                              fint *m, fint *e)
{
    mpi_reduce_scatter_block_(s, r, c, d, o, m, e);
}

RCOLL_MPI_API void mpi_reduce_scatter_(void *s, void *r, fint *rcounts, fint *dt, fint *op,
                                       fint *comm, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_reduce_scatter_"))(s, r, rcounts, dt, op, comm, ierr);
        return;
    }
    /* Open MPI's MPI_Fint is int: the counts array is the C one. */
    *ierr = rcoll__mpi_reduce_scatter(buf(s), buf(r), (const int *)rcounts, DT(dt), OP(op),
                                      COMM(comm));
}
RCOLL_MPI_API void mpi_reduce_scatter__(void *s, void *r, fint *c, fint *d, fint *o, fint *m,
                                        fint *e)
{
    mpi_reduce_scatter_(s, r, c, d, o, m, e);
}

/* --- nonblocking collectives --------------------------------------------- */

/* After the call has set *c (not as an argument of the call: evaluation order). */
static void request_out(int rc, const MPI_Request *c, fint *req, fint *ierr)
{
    *ierr = rc;
    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(*c);
    }
}

RCOLL_MPI_API void mpi_iallreduce_(void *s, void *r, fint *count, fint *dt, fint *op, fint *comm,
                                   fint *req, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_iallreduce_"))(s, r, count, dt, op, comm, req, ierr);
        return;
    }
    MPI_Request c;
    int rc = rcoll__mpi_iallreduce(buf(s), buf(r), *count, DT(dt), OP(op), COMM(comm), &c);
    request_out(rc, &c, req, ierr);
}
RCOLL_MPI_API void mpi_iallreduce__(void *s, void *r, fint *c, fint *d, fint *o, fint *m,
                                    fint *q, fint *e)
{
    mpi_iallreduce_(s, r, c, d, o, m, q, e);
}

RCOLL_MPI_API void mpi_ibcast_(void *b, fint *count, fint *dt, fint *root, fint *comm, fint *req,
                               fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, fint *, fint *, fint *, fint *, fint *, fint *))next("mpi_ibcast_"))(
            b, count, dt, root, comm, req, ierr);
        return;
    }
    MPI_Request c;
    int rc = rcoll__mpi_ibcast(buf(b), *count, DT(dt), *root, COMM(comm), &c);
    request_out(rc, &c, req, ierr);
}
RCOLL_MPI_API void mpi_ibcast__(void *b, fint *c, fint *d, fint *r, fint *m, fint *q, fint *e)
{
    mpi_ibcast_(b, c, d, r, m, q, e);
}

RCOLL_MPI_API void mpi_ibarrier_(fint *comm, fint *req, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(fint *, fint *, fint *))next("mpi_ibarrier_"))(comm, req, ierr);
        return;
    }
    MPI_Request c;
    int rc = rcoll__mpi_ibarrier(COMM(comm), &c);
    request_out(rc, &c, req, ierr);
}
RCOLL_MPI_API void mpi_ibarrier__(fint *m, fint *q, fint *e) { mpi_ibarrier_(m, q, e); }

RCOLL_MPI_API void mpi_ireduce_(void *s, void *r, fint *count, fint *dt, fint *op, fint *root,
                                fint *comm, fint *req, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, void *, fint *, fint *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_ireduce_"))(s, r, count, dt, op, root, comm, req, ierr);
        return;
    }
    MPI_Request c;
    int rc = rcoll__mpi_ireduce(buf(s), buf(r), *count, DT(dt), OP(op), *root, COMM(comm), &c);
    request_out(rc, &c, req, ierr);
}
RCOLL_MPI_API void mpi_ireduce__(void *s, void *r, fint *c, fint *d, fint *o, fint *t, fint *m,
                                 fint *q, fint *e)
{
    mpi_ireduce_(s, r, c, d, o, t, m, q, e);
}

RCOLL_MPI_API void mpi_iallgather_(void *s, fint *scount, fint *stype, void *r, fint *rcount,
                                   fint *rtype, fint *comm, fint *req, fint *ierr)
{
    if (!OURS()) {
        ((void (*)(void *, fint *, fint *, void *, fint *, fint *, fint *, fint *, fint *))next(
            "mpi_iallgather_"))(s, scount, stype, r, rcount, rtype, comm, req, ierr);
        return;
    }
    MPI_Request c;
    int rc = rcoll__mpi_iallgather(buf(s), *scount, DT(stype), buf(r), *rcount, DT(rtype),
                                      COMM(comm), &c);
    request_out(rc, &c, req, ierr);
}
RCOLL_MPI_API void mpi_iallgather__(void *s, fint *sc, fint *st, void *r, fint *rc, fint *rt,
                                    fint *m, fint *q, fint *e)
{
    mpi_iallgather_(s, sc, st, r, rc, rt, m, q, e);
}

/* --- completion calls: progress ours, then Open MPI's own binding -------- */

/* Test each of ours among the Fortran handles once (see the C version). */
static int progress(fint n, const fint *freqs, int *now)
{
    *now = 0;
    if (!OURS() || rcoll__mpi.nactive == 0 || n <= 0) {
        return 0;
    }
    MPI_Request one, *c = n == 1 ? &one : malloc((size_t)n * sizeof(MPI_Request));
    if (c == NULL) {
        return 0;
    }
    for (fint i = 0; i < n; i++) {
        c[i] = PMPI_Request_f2c(freqs[i]);
    }
    int pending = rcoll__mpi_nb_progress_array(n, c, now);
    if (c != &one) {
        free(c);
    }
    return pending;
}

static void finish_one(const fint *freq)
{
    layer_op_t *o;
    if (OURS() && rcoll__mpi.nactive > 0 && (o = rcoll__mpi_nb_find(PMPI_Request_f2c(*freq)))) {
        rcoll__mpi_nb_progress(o, 1);
    }
}

RCOLL_MPI_API void mpi_wait_(fint *req, fint *status, fint *ierr)
{
    finish_one(req);
    ((void (*)(fint *, fint *, fint *))next("mpi_wait_"))(req, status, ierr);
}
RCOLL_MPI_API void mpi_wait__(fint *q, fint *s, fint *e) { mpi_wait_(q, s, e); }

RCOLL_MPI_API void mpi_test_(fint *req, fint *flag, fint *status, fint *ierr)
{
    int now;
    progress(1, req, &now);
    ((void (*)(fint *, fint *, fint *, fint *))next("mpi_test_"))(req, flag, status, ierr);
}
RCOLL_MPI_API void mpi_test__(fint *q, fint *f, fint *s, fint *e) { mpi_test_(q, f, s, e); }

RCOLL_MPI_API void mpi_request_get_status_(fint *req, fint *flag, fint *status, fint *ierr)
{
    int now;
    progress(1, req, &now);
    ((void (*)(fint *, fint *, fint *, fint *))next("mpi_request_get_status_"))(req, flag, status,
                                                                               ierr);
}
RCOLL_MPI_API void mpi_request_get_status__(fint *q, fint *f, fint *s, fint *e)
{
    mpi_request_get_status_(q, f, s, e);
}

typedef void (*testall_fn)(fint *, fint *, fint *, fint *, fint *);

RCOLL_MPI_API void mpi_waitall_(fint *n, fint *reqs, fint *statuses, fint *ierr)
{
    int now;
    while (progress(*n, reqs, &now) > 0) {
        fint flag = 0;
        /* Ours are incomplete: this only progresses MPI, it completes nothing. */
        ((testall_fn)next("mpi_testall_"))(n, reqs, &flag, statuses, ierr);
        if (*ierr != MPI_SUCCESS) {
            return;
        }
    }
    ((void (*)(fint *, fint *, fint *, fint *))next("mpi_waitall_"))(n, reqs, statuses, ierr);
}
RCOLL_MPI_API void mpi_waitall__(fint *n, fint *q, fint *s, fint *e) { mpi_waitall_(n, q, s, e); }

RCOLL_MPI_API void mpi_testall_(fint *n, fint *reqs, fint *flag, fint *statuses, fint *ierr)
{
    int now;
    progress(*n, reqs, &now);
    ((testall_fn)next("mpi_testall_"))(n, reqs, flag, statuses, ierr);
}
RCOLL_MPI_API void mpi_testall__(fint *n, fint *q, fint *f, fint *s, fint *e)
{
    mpi_testall_(n, q, f, s, e);
}

typedef void (*testany_fn)(fint *, fint *, fint *, fint *, fint *, fint *);

RCOLL_MPI_API void mpi_waitany_(fint *n, fint *reqs, fint *index, fint *status, fint *ierr)
{
    int now = 0;
    while (progress(*n, reqs, &now) > 0 && now == 0) {
        fint flag = 0;
        ((testany_fn)next("mpi_testany_"))(n, reqs, index, &flag, status, ierr);
        if (*ierr != MPI_SUCCESS || flag) {
            return;
        }
    }
    ((void (*)(fint *, fint *, fint *, fint *, fint *))next("mpi_waitany_"))(n, reqs, index, status,
                                                                           ierr);
}
RCOLL_MPI_API void mpi_waitany__(fint *n, fint *q, fint *i, fint *s, fint *e)
{
    mpi_waitany_(n, q, i, s, e);
}

RCOLL_MPI_API void mpi_testany_(fint *n, fint *reqs, fint *index, fint *flag, fint *status,
                                fint *ierr)
{
    int now;
    progress(*n, reqs, &now);
    ((testany_fn)next("mpi_testany_"))(n, reqs, index, flag, status, ierr);
}
RCOLL_MPI_API void mpi_testany__(fint *n, fint *q, fint *i, fint *f, fint *s, fint *e)
{
    mpi_testany_(n, q, i, f, s, e);
}

typedef void (*testsome_fn)(fint *, fint *, fint *, fint *, fint *, fint *);

RCOLL_MPI_API void mpi_waitsome_(fint *n, fint *reqs, fint *outcount, fint *indices,
                                 fint *statuses, fint *ierr)
{
    int now = 0;
    while (progress(*n, reqs, &now) > 0 && now == 0) {
        ((testsome_fn)next("mpi_testsome_"))(n, reqs, outcount, indices, statuses, ierr);
        if (*ierr != MPI_SUCCESS || *outcount != 0) {
            return;
        }
    }
    ((testsome_fn)next("mpi_waitsome_"))(n, reqs, outcount, indices, statuses, ierr);
}
RCOLL_MPI_API void mpi_waitsome__(fint *n, fint *q, fint *o, fint *i, fint *s, fint *e)
{
    mpi_waitsome_(n, q, o, i, s, e);
}

RCOLL_MPI_API void mpi_testsome_(fint *n, fint *reqs, fint *outcount, fint *indices,
                                 fint *statuses, fint *ierr)
{
    int now;
    progress(*n, reqs, &now);
    ((testsome_fn)next("mpi_testsome_"))(n, reqs, outcount, indices, statuses, ierr);
}
RCOLL_MPI_API void mpi_testsome__(fint *n, fint *q, fint *o, fint *i, fint *s, fint *e)
{
    mpi_testsome_(n, q, o, i, s, e);
}
