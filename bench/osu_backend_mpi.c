/*
 * osu_backend_mpi.c - the OSU-style benchmark's back-end for MPI (Open MPI,
 * MPICH, anything with MPI-3).  See osu_backend.h for the contract.
 * bench/compare builds it with mpicc and mpicc.mpich.
 */
#include "osu_backend.h"

#include <stdio.h>
#include <string.h>

#include <mpi.h>

_Static_assert(sizeof(MPI_Request) <= sizeof(((osu_req_t *)0)->u), "MPI_Request fits in osu_req_t");

static int rank = -1, size = -1;

int osu_be_init(int *argc, char ***argv)
{
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Errors come back as codes, as with rcoll, instead of aborting. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return 0;
}

int osu_be_finalize(void) { return MPI_Finalize(); }
int osu_be_rank(void) { return rank; }
int osu_be_size(void) { return size; }

/* The first line of MPI_Get_library_version, cut at the first comma and
 * with runs of blanks squeezed: "Open MPI v4.1.4", "MPICH Version: 4.0.2". */
const char *osu_be_name(void)
{
    static char name[MPI_MAX_LIBRARY_VERSION_STRING];
    char full[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(full, &len) != MPI_SUCCESS)
        return "MPI (unknown version)";
    size_t n = 0;
    int blank = 0;
    for (int i = 0; i < len && full[i] && full[i] != '\n' && full[i] != ','; i++) {
        int is_blank = full[i] == ' ' || full[i] == '\t';
        if (is_blank && (blank || n == 0))
            continue;
        blank = is_blank;
        name[n++] = is_blank ? ' ' : full[i];
    }
    while (n > 0 && name[n - 1] == ' ')
        n--;
    name[n] = '\0';
    /* MPICH says "MPICH Version: 4.0.2": keep "MPICH 4.0.2". */
    char *v = strstr(name, " Version: ");
    if (v)
        memmove(v + 1, v + strlen(" Version: "), strlen(v + strlen(" Version: ")) + 1);
    return name;
}

const char *osu_be_strerror(int rc)
{
    static char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", rc);
    return text;
}

int osu_be_force_algorithm(const char *collective, const char *algo, const char **why)
{
    (void)collective;
    (void)algo;
    *why = "-a works with the rcoll back-end only (for MPI use the library's own tuning "
           "parameters, e.g. Open MPI's --mca coll_tuned_* or MPICH's MPIR_CVAR_*)";
    return MPI_ERR_OTHER;
}

int osu_be_list_algorithms(const char *collective)
{
    (void)collective;
    return -1;
}

int osu_be_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

int osu_be_allreduce_f32(const float *sendbuf, float *recvbuf, size_t count)
{
    return MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static MPI_Op to_mpi_op(osu_op_t op)
{
    switch (op) {
    case OSU_OP_MIN: return MPI_MIN;
    case OSU_OP_MAX: return MPI_MAX;
    case OSU_OP_SUM: break;
    }
    return MPI_SUM;
}

int osu_be_allreduce_f64(const double *sendbuf, double *recvbuf, size_t count, osu_op_t op)
{
    return MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_DOUBLE, to_mpi_op(op), MPI_COMM_WORLD);
}

int osu_be_bcast(void *buf, size_t bytes, int root)
{
    return MPI_Bcast(buf, (int)bytes, MPI_CHAR, root, MPI_COMM_WORLD);
}

int osu_be_reduce_f32(const float *sendbuf, float *recvbuf, size_t count, int root)
{
    return MPI_Reduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
}

int osu_be_allgather(const void *sendbuf, void *recvbuf, size_t bytes_per_rank)
{
    return MPI_Allgather(sendbuf, (int)bytes_per_rank, MPI_CHAR, recvbuf, (int)bytes_per_rank,
                         MPI_CHAR, MPI_COMM_WORLD);
}

int osu_be_reduce_scatter_f32(const float *sendbuf, float *recvbuf, size_t recvcount)
{
    return MPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, MPI_FLOAT, MPI_SUM,
                                    MPI_COMM_WORLD);
}

int osu_be_iallreduce_f32(const float *sendbuf, float *recvbuf, size_t count, osu_req_t *req)
{
    MPI_Request r;
    int rc = MPI_Iallreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    if (rc == MPI_SUCCESS)
        memcpy(&req->u, &r, sizeof(r));
    return rc;
}

int osu_be_test(osu_req_t *req, int *done)
{
    MPI_Request r;
    memcpy(&r, &req->u, sizeof(r));
    int rc = MPI_Test(&r, done, MPI_STATUS_IGNORE);
    memcpy(&req->u, &r, sizeof(r));
    return rc;
}

int osu_be_wait(osu_req_t *req)
{
    MPI_Request r;
    memcpy(&r, &req->u, sizeof(r));
    int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    memcpy(&req->u, &r, sizeof(r));
    return rc;
}
