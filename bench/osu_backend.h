/*
 * osu_backend.h - what the OSU-style benchmark (osu_coll.c) needs from a
 * communication library.
 *
 * The benchmark is one source compiled against two back-ends so that the
 * method and the timing code are identical for every library it measures:
 *   osu_backend_rcoll.c  librcoll (built by automake as examples/rcoll_osu_*)
 *   osu_backend_mpi.c    any MPI (built by bench/compare with mpicc and
 *                        mpicc.mpich)
 *
 * Every function returning int returns 0 on success and a non-zero code of
 * the library on failure; osu_be_strerror() turns that code into text.  The
 * back-end does not print errors itself: the benchmark reports them with
 * the name of the call that failed.
 *
 * Reductions in the timed loop are float32 sum, as in the OSU benchmarks.
 * bcast and allgather move bytes.  The float64 allreduce is for the
 * benchmark's own statistics (min/avg/max latency over ranks, agreement on
 * iteration counts, validation results), so those go through the library
 * being measured too.
 */
#ifndef OSU_BACKEND_H
#define OSU_BACKEND_H

#include <stddef.h>

typedef enum { OSU_OP_SUM, OSU_OP_MIN, OSU_OP_MAX } osu_op_t;

/* A posted nonblocking collective.  Storage owned by the caller; the
 * back-end keeps its handle in it.  At most one is outstanding at a time in
 * this benchmark, but nothing in the interface depends on that. */
typedef struct {
    union {
        void     *ptr;
        long long handle;
        char      pad[16];
    } u;
} osu_req_t;

/* Start the library (MPI_Init / rcoll_init).  argc/argv may be used by the
 * library; the benchmark parses its own options afterwards. */
int         osu_be_init(int *argc, char ***argv);
int         osu_be_finalize(void);
int         osu_be_rank(void);
int         osu_be_size(void);

/* "rcoll 0.1.0", "Open MPI v4.1.4", "MPICH 4.0.2": for the header lines. */
const char *osu_be_name(void);
const char *osu_be_strerror(int rc);

/* Force an algorithm for one collective ("allreduce", "bcast", ...).
 * Returns 0, or non-zero with *why set (the back-end cannot do it, or the
 * name is unknown). */
int         osu_be_force_algorithm(const char *collective, const char *algo, const char **why);

/* Print the algorithm names of a collective, one a line; returns the number
 * printed, or -1 if the back-end cannot list them. */
int         osu_be_list_algorithms(const char *collective);

int osu_be_barrier(void);
int osu_be_allreduce_f32(const float *sendbuf, float *recvbuf, size_t count);
int osu_be_allreduce_f64(const double *sendbuf, double *recvbuf, size_t count, osu_op_t op);
int osu_be_bcast(void *buf, size_t bytes, int root);
int osu_be_reduce_f32(const float *sendbuf, float *recvbuf, size_t count, int root);
int osu_be_allgather(const void *sendbuf, void *recvbuf, size_t bytes_per_rank);
int osu_be_reduce_scatter_f32(const float *sendbuf, float *recvbuf, size_t recvcount);

/* Nonblocking allreduce (float32 sum), its test and its wait.  test sets
 * *done to 1 once the operation has completed; after that (or after wait)
 * req may be reused. */
int osu_be_iallreduce_f32(const float *sendbuf, float *recvbuf, size_t count, osu_req_t *req);
int osu_be_test(osu_req_t *req, int *done);
int osu_be_wait(osu_req_t *req);

#endif /* OSU_BACKEND_H */
