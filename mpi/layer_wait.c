/*
 * layer_wait.c - the completion calls: each progresses rcoll for the
 * requests of ours it can see, then lets MPI do the rest.  Waiting calls on
 * arrays with ours pending alternate rcoll progress with the matching MPI
 * test call (so MPI's own requests progress too) until the MPI wait call can
 * no longer block on one of ours.
 */
#include "layer.h"

RCOLL_MPI_API int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    layer_op_t *o;
    if (rcoll__mpi.nactive > 0 && req != NULL && (o = rcoll__mpi_nb_find(*req)) != NULL) {
        rcoll__mpi_nb_progress(o, 1);
    }
    return PMPI_Wait(req, status);
}

RCOLL_MPI_API int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    layer_op_t *o;
    if (rcoll__mpi.nactive > 0 && req != NULL && (o = rcoll__mpi_nb_find(*req)) != NULL) {
        rcoll__mpi_nb_progress(o, 0);
    }
    return PMPI_Test(req, flag, status);
}

typedef int (*get_status_fn)(arg_req, int *, MPI_Status *);
RCOLL_MPI_API int layer_entry_request_get_status(arg_req req, int *flag, MPI_Status *status)
    __asm__("MPI_Request_get_status");
int layer_entry_request_get_status(arg_req req, int *flag, MPI_Status *status)
{
    layer_op_t *o;
    if (!rcoll__mpi.right_mpi) {     /* the handle is passed on unchanged (see arg_dt) */
        return ((get_status_fn)rcoll__mpi_next("PMPI_Request_get_status"))(req, flag, status);
    }
    if (rcoll__mpi.nactive > 0 && (o = rcoll__mpi_nb_find((MPI_Request)req)) != NULL) {
        rcoll__mpi_nb_progress(o, 0);
    }
    return PMPI_Request_get_status((MPI_Request)req, flag, status);
}

/* Freeing an active request of ours: finish it first (it cannot be cancelled). */
RCOLL_MPI_API int MPI_Request_free(MPI_Request *req)
{
    layer_op_t *o;
    if (rcoll__mpi.nactive > 0 && req != NULL && (o = rcoll__mpi_nb_find(*req)) != NULL) {
        rcoll__mpi_nb_progress(o, 1);
    }
    return PMPI_Request_free(req);
}

RCOLL_MPI_API int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    while (rcoll__mpi.nactive > 0 && rcoll__mpi_nb_progress_array(n, reqs, NULL) > 0) {
        int flag = 0;
        /* Ours are not complete, so this only progresses MPI: it completes nothing. */
        int rc = PMPI_Testall(n, reqs, &flag, statuses);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return PMPI_Waitall(n, reqs, statuses);
}

RCOLL_MPI_API int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (rcoll__mpi.nactive > 0) {
        rcoll__mpi_nb_progress_array(n, reqs, NULL);
    }
    return PMPI_Testall(n, reqs, flag, statuses);
}

RCOLL_MPI_API int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    int now = 0;
    while (rcoll__mpi.nactive > 0 && rcoll__mpi_nb_progress_array(n, reqs, &now) > 0 && now == 0) {
        int flag = 0;
        int rc = PMPI_Testany(n, reqs, index, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
    }
    return PMPI_Waitany(n, reqs, index, status);
}

RCOLL_MPI_API int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag,
                              MPI_Status *status)
{
    if (rcoll__mpi.nactive > 0) {
        rcoll__mpi_nb_progress_array(n, reqs, NULL);
    }
    return PMPI_Testany(n, reqs, index, flag, status);
}

RCOLL_MPI_API int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                               MPI_Status statuses[])
{
    int now = 0;
    while (rcoll__mpi.nactive > 0 && rcoll__mpi_nb_progress_array(n, reqs, &now) > 0 && now == 0) {
        int rc = PMPI_Testsome(n, reqs, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0) {
            return rc;
        }
    }
    return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
}

RCOLL_MPI_API int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                               MPI_Status statuses[])
{
    if (rcoll__mpi.nactive > 0) {
        rcoll__mpi_nb_progress_array(n, reqs, NULL);
    }
    return PMPI_Testsome(n, reqs, outcount, indices, statuses);
}
