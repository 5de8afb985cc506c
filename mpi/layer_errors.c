/*
 * layer_errors.c - an rcoll failure becomes the MPI error class that fits and
 * goes through the communicator's error handler, as the MPI library's own
 * errors do.  Each rcoll status gets an MPI error code of that class whose
 * MPI_Error_string is rcoll's text.
 */
#include <stdio.h>
#include "layer.h"

int rcoll__mpi_error_class(rcoll_status_t st)
{
    switch (st) {
    case RCOLL_OK:                return MPI_SUCCESS;
    case RCOLL_ERR_INVALID_ARG:   return MPI_ERR_ARG;
    case RCOLL_ERR_NO_MEMORY:     return MPI_ERR_NO_MEM;
    case RCOLL_ERR_NOT_SUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case RCOLL_ERR_TRUNCATED:     return MPI_ERR_TRUNCATE;
    case RCOLL_ERR_INTERNAL:      return MPI_ERR_INTERN;
#ifdef MPIX_ERR_PROC_FAILED
    case RCOLL_ERR_PEER_FAILED:   return MPIX_ERR_PROC_FAILED;
#endif
    default:                      return MPI_ERR_OTHER;   /* bootstrap, transport, timeout, ... */
    }
}

/* Called once rcoll has started: an error code per status, of the right class. */
void rcoll__mpi_errors_init(void)
{
    for (int st = 0; st < RCOLL_STATUS_LAST; st++) {
        int cls = rcoll__mpi_error_class((rcoll_status_t)st);
        int code = cls;
        if (st != RCOLL_OK && PMPI_Add_error_code(cls, &code) == MPI_SUCCESS) {
            char text[128];
            snprintf(text, sizeof(text), "rcoll: %s", rcoll_strerror((rcoll_status_t)st));
            PMPI_Add_error_string(code, text);
        } else {
            code = cls;
        }
        rcoll__mpi.error_codes[st] = code;
    }
}

int rcoll__mpi_raise(MPI_Comm comm, rcoll_status_t st, int call_errhandler)
{
    if (st == RCOLL_OK) {
        return MPI_SUCCESS;
    }
    int code = (unsigned)st < RCOLL_STATUS_LAST && rcoll__mpi.error_codes[st] != 0
               ? rcoll__mpi.error_codes[st] : rcoll__mpi_error_class(st);
    if (call_errhandler && comm != MPI_COMM_NULL) {
        PMPI_Comm_call_errhandler(comm, code);
    }
    return code;
}
