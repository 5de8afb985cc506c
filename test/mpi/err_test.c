/*
 * err_test.c - errors come back as MPI error classes through the
 * communicator's error handler, with and without the rcoll layer:
 *  - a bcast whose receivers expect less than the root sends: MPI_ERR_TRUNCATE
 *    at a receiver (rcoll: RCOLL_ERR_TRUNCATED);
 *  - a root out of range: MPI_ERR_ROOT (passed to MPI);
 *  - MPI_COMM_NULL: MPI_ERR_COMM (passed to MPI).
 * Each error must reach the handler installed on the communicator.
 * Prints "ok NAME" / "FAIL NAME" on every rank that checks; exit 1 on failure.
 */
#include <mpi.h>
#include <stdio.h>

static int handler_calls, handler_class;

static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

static int check(const char *name, int rc, int want, int rank)
{
    int cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    int ok = cls == want && handler_calls == 1 && handler_class == want;
    if (ok) printf("ok %s\n", name);
    else printf("FAIL %s (rank %d): returned class %d, handler called %d times with class %d, "
                "expected class %d\n", name, rank, cls, handler_calls, handler_class, want);
    handler_calls = 0;
    handler_class = -1;
    return ok;
}

int main(int argc, char **argv)
{
    int rank, size, fails = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(comm, eh);

    int buf[64] = { 0 };
    MPI_Bcast(buf, 4, MPI_INT, 0, comm);             /* the twin exists before the errors */
    fails += !check("root out of range: MPI_ERR_ROOT",
                    MPI_Bcast(buf, 4, MPI_INT, size, comm), MPI_ERR_ROOT, rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bcast(buf, 4, MPI_INT, 0, MPI_COMM_NULL);
    int cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_COMM) printf("ok MPI_COMM_NULL: MPI_ERR_COMM\n");
    else { printf("FAIL MPI_COMM_NULL: class %d\n", cls); fails++; }
    handler_calls = 0;

    /* Last, as it leaves the communicator's collectives out of step. */
    /* rcoll reports a count that differs between ranks either as truncation
     * (RCOLL_ERR_TRUNCATED: MPI_ERR_TRUNCATE) or, where the call's signature
     * travels in the message header, as a mismatched call
     * (RCOLL_ERR_PROTOCOL: MPI_ERR_OTHER); either must reach the handler. */
    rc = MPI_Bcast(buf, rank == 0 ? 64 : 1, MPI_INT, 0, comm);
    if (rank != 0) {
        int cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        fails += !check("receiver expects less: MPI_ERR_TRUNCATE or MPI_ERR_OTHER", rc,
                        cls == MPI_ERR_OTHER ? MPI_ERR_OTHER : MPI_ERR_TRUNCATE, rank);
    }
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Errhandler_free(&eh);
    MPI_Finalize();
    return fails ? 1 : 0;
}
