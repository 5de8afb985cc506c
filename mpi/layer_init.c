/*
 * layer_init.c - MPI_Init / MPI_Init_thread / MPI_Finalize: start rcoll
 * through the MPI job itself (rcoll_init_oob over PMPI_Allgather on
 * MPI_COMM_WORLD) and finalize it from an attribute delete on MPI_COMM_SELF,
 * which every MPI runs at the start of MPI_Finalize, whatever entry point
 * (C, Fortran, a tool's PMPI_Finalize) finalizes.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "layer.h"

layer_t rcoll__mpi = { .right_mpi = 0, .on = 0, .off_why = WHY_NOT_STARTED };

void rcoll__mpi_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "rcoll-mpi: %s\n", line);
}

void *rcoll__mpi_next(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

int rcoll__mpi_parse_bool(const char *value, int dflt)
{
    static const char *const no[] = { "0", "n", "no", "false", "off" };
    static const char *const yes[] = { "1", "y", "yes", "true", "on" };
    if (value == NULL) {
        return dflt;
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (strcasecmp(value, no[i]) == 0) {
            return 0;
        }
        if (strcasecmp(value, yes[i]) == 0) {
            return 1;
        }
    }
    return dflt;
}

/* Is the MPI in this process the one this library was compiled for?  Open
 * MPI's handles are addresses of ompi_mpi_* objects (weak references here:
 * NULL in another MPI's process); MPICH's are integers, and a process with
 * ompi_mpi_comm_world is not an MPICH process. */
static int right_mpi(void)
{
#ifdef RCOLL_MPI_OMPI
    return (void *)MPI_COMM_WORLD != NULL;
#else
    return dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") == NULL;
#endif
}

static int oob_allgather(const void *in, void *out, size_t len, void *arg)
{
    (void)arg;
    if (len > (size_t)0x7fffffff) {
        return -1;
    }
    return PMPI_Allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE, MPI_COMM_WORLD);
}

/* Runs first thing in MPI_Finalize, with MPI still fully usable. */
static int self_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)value; (void)extra;
    layer_t *L = &rcoll__mpi;
    rcoll__mpi_nb_drain();
    rcoll__mpi_report();
    if (L->ctx != NULL) {
        rcoll__mpi_twins_free_all();
        rcoll_status_t st = rcoll_finalize(L->ctx);
        if (st != RCOLL_OK) {
            rcoll__mpi_log("rcoll_finalize: %s", rcoll_strerror(st));
        }
        L->ctx = NULL;
        L->world = NULL;
    }
    if (L->self != MPI_COMM_NULL) {
        PMPI_Comm_free(&L->self);
    }
    L->on = 0;
    L->off_why = WHY_NOT_STARTED;
    L->last_comm = MPI_COMM_NULL;
    L->last_twin = NULL;
    rcoll__mpi_memo_clear();
    free(L->tags);
    L->tags = NULL;
    L->ntags = L->maxtags = 0;
    return MPI_SUCCESS;
}

/* Every rank must reach the same verdict: a rank whose rcoll did not start
 * makes all of them pass through. */
static int all_agree(int ok)
{
    int all = 0;
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) {
        return 0;
    }
    return all;
}

static void start_rcoll(layer_t *L)
{
    int rank = 0, size = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    L->world_rank = rank;
    rcoll_oob_t oob = { .rank = rank, .size = size, .allgather = oob_allgather, .arg = NULL,
                        .node = NULL };
    rcoll_context_t *ctx = NULL;
    rcoll_status_t st = rcoll_init_oob(&oob, NULL, &ctx);
    int ok = st == RCOLL_OK && rcoll__mpi_types_init() == 0 && rcoll__mpi_twin_keyval_create() == 0
             && PMPI_Comm_dup(MPI_COMM_SELF, &L->self) == MPI_SUCCESS;
    if (!all_agree(ok)) {
        if (rank == 0) {
            rcoll__mpi_log("rcoll did not start (%s): every collective goes to MPI",
                           st != RCOLL_OK ? rcoll_strerror(st) : ok ? "on another rank" : "set-up");
        }
        /* ctx is left open when another rank failed: its finalize would wait
         * in a barrier the failed ranks never join. */
        L->off_why = WHY_NOT_STARTED;
        return;
    }
    L->ctx = ctx;
    L->world = rcoll_comm_world(ctx);
    L->world_twin = (layer_twin_t){ .comm = L->world, .why = WHY_RCOLL, .mpi_comm = MPI_COMM_WORLD };
    L->last_comm = MPI_COMM_WORLD;
    L->last_twin = &L->world_twin;
    rcoll__mpi_errors_init();
    L->on = 1;
}

void rcoll__mpi_start(int provided)
{
    layer_t *L = &rcoll__mpi;
    L->right_mpi = right_mpi();
    if (!L->right_mpi) {
        rcoll__mpi_log("this process does not run %s (preload the rcoll-mpi library built for "
                       "its MPI): everything goes to MPI", RCOLL_MPI_NAME);
        return;
    }
    L->self = MPI_COMM_NULL;
    L->last_comm = MPI_COMM_NULL;
    rcoll__mpi_memo_clear();
#ifdef RCOLL_MPI_OMPI
    rcoll__mpi_fortran_init();
#endif
    L->report = rcoll__mpi_parse_bool(getenv("RCOLL_MPI_REPORT"), 0);
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &L->self_keyval, NULL)
            != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, L->self_keyval, NULL) != MPI_SUCCESS) {
        rcoll__mpi_log("cannot hook MPI_Finalize (MPI_COMM_SELF attribute): everything goes to MPI");
        L->right_mpi = 0;
        return;
    }
    if (!rcoll__mpi_parse_bool(getenv("RCOLL_MPI"), 1)) {
        L->off_why = WHY_OFF;
        return;
    }
    if (provided == MPI_THREAD_MULTIPLE) {
        /* rcoll is driven by one thread per context: pass through rather
         * than serialize every collective behind a lock. */
        L->off_why = WHY_THREADS;
        return;
    }
    start_rcoll(L);
}

RCOLL_MPI_API int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        rcoll__mpi_start(provided);
    }
    return rc;
}

RCOLL_MPI_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        rcoll__mpi_start(*provided);
    }
    return rc;
}

/* The work is done by the MPI_COMM_SELF attribute delete (self_delete). */
RCOLL_MPI_API int MPI_Finalize(void)
{
    return PMPI_Finalize();
}
