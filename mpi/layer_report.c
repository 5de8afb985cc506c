/*
 * layer_report.c - RCOLL_MPI_REPORT=1: at MPI_Finalize rank 0 prints one line
 * per taken-over MPI function the program called, e.g.
 *   rcoll-mpi: MPI_Allreduce 1234 by rcoll, 5 passed to MPI (user-defined op)
 */
#include <stdio.h>
#include <string.h>
#include "layer.h"

static const char *const fn_names[FN_LAST] = {
    [FN_ALLREDUCE] = "MPI_Allreduce", [FN_BCAST] = "MPI_Bcast", [FN_BARRIER] = "MPI_Barrier",
    [FN_REDUCE] = "MPI_Reduce", [FN_ALLGATHER] = "MPI_Allgather",
    [FN_REDUCE_SCATTER_BLOCK] = "MPI_Reduce_scatter_block",
    [FN_REDUCE_SCATTER] = "MPI_Reduce_scatter", [FN_IALLREDUCE] = "MPI_Iallreduce",
    [FN_IBCAST] = "MPI_Ibcast", [FN_IBARRIER] = "MPI_Ibarrier", [FN_IREDUCE] = "MPI_Ireduce",
    [FN_IALLGATHER] = "MPI_Iallgather",
};

const char *rcoll__mpi_why_text(layer_why_t why)
{
    switch (why) {
    case WHY_RCOLL:         return "rcoll";
    case WHY_OFF:           return "RCOLL_MPI=0";
    case WHY_NOT_STARTED:   return "rcoll did not start";
    case WHY_THREADS:       return "MPI_THREAD_MULTIPLE";
    case WHY_ARGS:          return "invalid argument";
    case WHY_INTER:         return "inter-communicator";
    case WHY_OUTSIDE:       return "ranks outside MPI_COMM_WORLD";
    case WHY_TYPE:          return "datatype";
    case WHY_USER_OP:       return "user-defined op";
    case WHY_OP:            return "op not in rcoll";
    case WHY_BITWISE_FLOAT: return "bitwise op on floats";
    case WHY_COUNTS:        return "unequal counts";
    default:                return "?";
    }
}

void rcoll__mpi_report(void)
{
    layer_t *L = &rcoll__mpi;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!L->report || rank != 0) {
        return;
    }
    for (int fn = 0; fn < FN_LAST; fn++) {
        unsigned long passed = 0, nreasons = 0;
        for (int w = 1; w < WHY_LAST; w++) {
            passed += L->counts[fn][w];
            nreasons += L->counts[fn][w] > 0;
        }
        if (passed + L->counts[fn][WHY_RCOLL] == 0) {
            continue;
        }
        char why[512] = "";
        size_t len = 0;
        for (int w = 1; w < WHY_LAST && len < sizeof(why); w++) {
            if (L->counts[fn][w] == 0) {
                continue;
            }
            if (nreasons == 1) {
                len += (size_t)snprintf(why + len, sizeof(why) - len, " (%s)",
                                        rcoll__mpi_why_text((layer_why_t)w));
            } else {
                len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s: %lu",
                                        len == 0 ? " (" : ", ",
                                        rcoll__mpi_why_text((layer_why_t)w), L->counts[fn][w]);
            }
        }
        if (nreasons > 1 && len < sizeof(why) - 1) {
            strcat(why, ")");
        }
        printf("rcoll-mpi: %s %lu by rcoll, %lu passed to MPI%s\n", fn_names[fn],
               L->counts[fn][WHY_RCOLL], passed, why);
    }
    fflush(stdout);
}
