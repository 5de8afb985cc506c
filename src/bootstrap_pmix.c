/*
 * bootstrap_pmix.c - rank, size, locality and address exchange through PMIx:
 * the bootstrap of rcoll_init (see bootstrap.h).  The exchange is Put under
 * one key, Commit, Fence with data collection, then a Get per rank.
 *
 * The node name (ranks with equal names share a node) is the launcher's:
 * PMIX_HOSTNAME of this process, else its PMIX_NODEID, and gethostname()
 * only when PMIx answers neither.  Under Slurm with several slurmd on one
 * host, or rcollrun --nodes, the launcher's names differ where the host
 * name does not.
 *
 * After the exchange the bootstrap stays to listen: a handler for the
 * launcher's events about a process's end (terminated, aborted, killed,
 * connection lost) hands the rank to the context's liveness inbox
 * (liveness.h); it runs on libpmix's thread and does nothing else.
 * rcollrun sends these events; Slurm and PRRTE may, or end the job first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pmix.h>
#include "bootstrap.h"
#include "liveness.h"

#define ADDR_KEY "rcoll.addr"

typedef struct {
    pmix_proc_t me;
    size_t      evh_id;       /* the event handler's registration */
    int         evh_set;
} rcoll_pmix_t;

/* The events that say a process of the job has ended (names as in PMIx 4.2). */
static const pmix_status_t death_codes[] = {
    PMIX_EVENT_PROC_TERMINATED, PMIX_PROC_TERMINATED, PMIX_ERR_PROC_ABORTED_BY_SIG,
    PMIX_ERR_PROC_TERM_WO_SYNC, PMIX_ERR_PROC_KILLED_BY_CMD, PMIX_ERR_EXIT_NONZERO_TERM,
    PMIX_ERR_LOST_CONNECTION,
};

static const rcoll_bootstrap_ops_t pmix_ops;
static void watch_deaths(rcoll_context_t *ctx);

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

/* A launcher started several processes but gave them no PMIx server. */
static const char *launch_without_pmix(int *n)
{
    static const char *const vars[] = { "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "MPI_LOCALNRANKS" };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        if ((*n = env_int(vars[i])) > 1) {
            return vars[i];
        }
    }
    return NULL;
}

static int have_pmix_server(void)
{
    extern char **environ;
    if (getenv("PMIX_NAMESPACE") == NULL) {
        return 0;
    }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "PMIX_SERVER_URI", 15) == 0) {
            return 1;
        }
    }
    return 0;
}

/* quiet: a missing key is not an error worth logging (the caller has a fallback). */
static rcoll_status_t get_value(rcoll_pmix_t *px, int rank, const char *key, int quiet,
                                pmix_value_t **val)
{
    pmix_proc_t proc;
    PMIX_PROC_CONSTRUCT(&proc);
    PMIX_LOAD_PROCID(&proc, px->me.nspace, rank);
    *val = NULL;
    pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, val);
    if (rc != PMIX_SUCCESS || *val == NULL) {
        if (quiet) {
            rcoll_debug("PMIx_Get(%s): %s", key, PMIx_Error_string(rc));
        } else {
            rcoll_error("PMIx_Get(%s) failed: %s", key, PMIx_Error_string(rc));
        }
        if (*val != NULL) {
            PMIX_VALUE_RELEASE(*val);
        }
        return RCOLL_ERR_BOOTSTRAP;
    }
    return RCOLL_OK;
}

static rcoll_status_t get_uint32(rcoll_pmix_t *px, int rank, const char *key, uint32_t *out)
{
    pmix_value_t *val;
    if (get_value(px, rank, key, 0, &val) != RCOLL_OK) {
        return RCOLL_ERR_BOOTSTRAP;
    }
    switch (val->type) {
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_INT:    *out = (uint32_t)val->data.integer; break;
    case PMIX_UINT:   *out = val->data.uint; break;
    case PMIX_PROC_RANK: *out = val->data.rank; break;
    default:
        rcoll_error("PMIx_Get(%s) returned type %d, expected an integer", key, (int)val->type);
        PMIX_VALUE_RELEASE(val);
        return RCOLL_ERR_BOOTSTRAP;
    }
    PMIX_VALUE_RELEASE(val);
    return RCOLL_OK;
}

/* This process's node as the launcher names it (malloc'd), or NULL. */
static char *launcher_node_name(rcoll_pmix_t *px)
{
    pmix_value_t *val;
    char *name = NULL;
    if (get_value(px, (int)px->me.rank, PMIX_HOSTNAME, 1, &val) == RCOLL_OK) {
        if (val->type == PMIX_STRING && val->data.string != NULL && val->data.string[0] != '\0') {
            name = strdup(val->data.string);
        }
        PMIX_VALUE_RELEASE(val);
        if (name != NULL) {
            return name;
        }
    }
    if (get_value(px, (int)px->me.rank, PMIX_NODEID, 1, &val) == RCOLL_OK) {
        if (val->type == PMIX_UINT32) {
            char buf[32];
            snprintf(buf, sizeof(buf), "pmix-node-%u", val->data.uint32);
            name = strdup(buf);
        }
        PMIX_VALUE_RELEASE(val);
    }
    return name;
}

rcoll_status_t rcoll_bootstrap_pmix_init(rcoll_context_t *ctx)
{
    gethostname(ctx->hostname, sizeof(ctx->hostname) - 1);
    ctx->boot_ops = &pmix_ops;
    if (!have_pmix_server()) {
        ctx->node_name = strdup(ctx->hostname);
        if (ctx->node_name == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        int n;
        const char *var = launch_without_pmix(&n);
        if (var != NULL) {
            rcoll_error("%s=%d says this is one of %d processes, but no PMIx server is reachable "
                        "(PMIX_NAMESPACE / PMIX_SERVER_URI* unset). rcoll needs a PMIx launcher: "
                        "use 'srun --mpi=pmix', 'rcollrun', 'prterun' or Open MPI's 'mpirun'; "
                        "otherwise every process would run alone as a singleton", var, n, n);
            return RCOLL_ERR_BOOTSTRAP;
        }
        ctx->singleton = 1;
        ctx->rank = 0;
        ctx->size = 1;
        ctx->local_rank = 0;
        ctx->local_size = 1;
        rcoll_info("no PMIx server in the environment: running as a singleton");
        return RCOLL_OK;
    }

    rcoll_pmix_t *px = calloc(1, sizeof(*px));
    if (px == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    pmix_status_t rc = PMIx_Init(&px->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        rcoll_error("PMIx_Init failed: %s (is the launcher a PMIx server? for Slurm use "
                    "'srun --mpi=pmix')", PMIx_Error_string(rc));
        free(px);
        return RCOLL_ERR_BOOTSTRAP;
    }
    ctx->boot = px;
    ctx->rank = (int)px->me.rank;       /* PMIx_Get(PMIX_RANK) is not answered by all servers */
    uint32_t size, local_rank, local_size;
    rcoll_status_t st = get_uint32(px, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size);
    if (st != RCOLL_OK) {
        return st;
    }
    if (get_uint32(px, (int)px->me.rank, PMIX_LOCAL_RANK, &local_rank) != RCOLL_OK) {
        local_rank = 0;
    }
    if (get_uint32(px, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &local_size) != RCOLL_OK) {
        local_size = 0;   /* derived from the host names after the exchange */
    }
    ctx->node_name = launcher_node_name(px);
    if (ctx->node_name == NULL) {
        rcoll_debug("PMIx names no node for this process: using the host name %s", ctx->hostname);
        ctx->node_name = strdup(ctx->hostname);
        if (ctx->node_name == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
    }
    ctx->size = (int)size;
    ctx->local_rank = (int)local_rank;
    ctx->local_size = (int)local_size;
    if (ctx->rank < 0 || ctx->rank >= ctx->size) {
        rcoll_error("PMIx gave rank %d outside job size %d", ctx->rank, ctx->size);
        return RCOLL_ERR_BOOTSTRAP;
    }
    rcoll_debug("PMIx: namespace %s rank %d of %d, local rank %d of %d, node %s", px->me.nspace,
                ctx->rank, ctx->size, ctx->local_rank, ctx->local_size, ctx->node_name);
    return RCOLL_OK;
}

static rcoll_status_t pmix_put(const char *key, const void *data, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data;
    val.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (rc != PMIX_SUCCESS) {
        rcoll_error("PMIx_Put(%s, %zu bytes) failed: %s", key, len, PMIx_Error_string(rc));
        return RCOLL_ERR_BOOTSTRAP;
    }
    return RCOLL_OK;
}

static rcoll_status_t pmix_fence(rcoll_context_t *ctx)
{
    rcoll_pmix_t *px = ctx->boot;
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        rcoll_error("PMIx_Commit failed: %s", PMIx_Error_string(rc));
        return RCOLL_ERR_BOOTSTRAP;
    }
    pmix_proc_t all;
    PMIX_PROC_CONSTRUCT(&all);
    PMIX_LOAD_PROCID(&all, px->me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info[2];
    bool collect = true;
    int timeout = rcoll_config_timeout_int(ctx->config.timeout);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    rc = PMIx_Fence(&all, 1, info, timeout > 0 ? 2 : 1);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        rcoll_error("PMIx_Fence over %d ranks failed: %s%s", ctx->size, PMIx_Error_string(rc),
                    rc == PMIX_ERR_TIMEOUT ? " (a rank did not reach rcoll_init within RCOLL_TIMEOUT)" : "");
        return rc == PMIX_ERR_TIMEOUT ? RCOLL_ERR_TIMEOUT : RCOLL_ERR_BOOTSTRAP;
    }
    return RCOLL_OK;
}

static rcoll_status_t pmix_get(rcoll_context_t *ctx, int rank, const char *key,
                               void **data, size_t *len)
{
    rcoll_pmix_t *px = ctx->boot;
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_PROC_CONSTRUCT(&proc);
    PMIX_LOAD_PROCID(&proc, px->me.nspace, rank);
    pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        rcoll_error("PMIx_Get(%s) of rank %d failed: %s", key, rank, PMIx_Error_string(rc));
        return RCOLL_ERR_BOOTSTRAP;
    }
    if (val->type != PMIX_BYTE_OBJECT) {
        rcoll_error("PMIx_Get(%s) of rank %d: type %d, expected a byte object", key, rank,
                    (int)val->type);
        PMIX_VALUE_RELEASE(val);
        return RCOLL_ERR_BOOTSTRAP;
    }
    *len = val->data.bo.size;
    *data = malloc(*len ? *len : 1);
    if (*data == NULL) {
        PMIX_VALUE_RELEASE(val);
        return RCOLL_ERR_NO_MEMORY;
    }
    memcpy(*data, val->data.bo.bytes, *len);
    PMIX_VALUE_RELEASE(val);
    return RCOLL_OK;
}

/* The fence failed: name the ranks the launcher reports ended (its event
 * may follow the fence's failure: wait up to 1 s for one). */
static void name_dead_at_fence(rcoll_context_t *ctx)
{
    double end = rcoll_time_now() + 1.0;
    int named = 0;
    do {
        for (int r = 0; r < ctx->size; r++) {
            if (r != ctx->rank && rcoll_liveness_gone(ctx, r)) {
                rcoll_error("rank %d (world rank %d) ended in rcoll_init's address exchange "
                            "(the launcher reports its end)", r, r);
                named++;
            }
        }
        if (named == 0) {
            usleep(10000);
        }
    } while (named == 0 && rcoll_time_now() < end);
}

static rcoll_status_t pmix_exchange(rcoll_context_t *ctx, const void *blob, size_t len,
                                    void **blobs, size_t *lens)
{
    rcoll_status_t st = pmix_put(ADDR_KEY, blob, len);
    watch_deaths(ctx);          /* before the fence: a rank that dies there is named */
    if (st == RCOLL_OK) {
        st = pmix_fence(ctx);
    }
    if (st != RCOLL_OK) {
        name_dead_at_fence(ctx);
    }
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        st = pmix_get(ctx, r, ADDR_KEY, &blobs[r], &lens[r]);
    }
    return st;
}

/*
 * libpmix's thread: an event about a process's end.  The process is the
 * affected proc the event names, else its source; only other ranks of this
 * job count (PMIX_ERR_LOST_CONNECTION from the server itself is the
 * launcher gone: nobody is marked).
 */
static void on_death_event(size_t id, pmix_status_t status, const pmix_proc_t *source,
                           pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                           pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    (void)id; (void)results; (void)nresults;
    rcoll_context_t *ctx = NULL;
    const pmix_proc_t *proc = source;
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_RETURN_OBJECT) && info[i].value.type == PMIX_POINTER) {
            ctx = info[i].value.data.ptr;
        } else if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
                   info[i].value.type == PMIX_PROC && info[i].value.data.proc != NULL) {
            proc = info[i].value.data.proc;
        }
    }
    if (ctx != NULL && ctx->liveness != NULL && proc != NULL) {
        rcoll_pmix_t *px = ctx->boot;
        if (PMIX_CHECK_NSPACE(proc->nspace, px->me.nspace) && proc->rank < (pmix_rank_t)ctx->size &&
            (int)proc->rank != ctx->rank) {
            char why[96];
            snprintf(why, sizeof(why), "the launcher reports its end (PMIx event %s)",
                     PMIx_Error_string(status));
            rcoll_liveness_report(ctx->liveness, (int)proc->rank, why);
        }
    }
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, NULL, 0, NULL, NULL, cbdata);
    }
}

/* Listen for the ends of the job's processes (rcoll_init: after the fence,
 * when ctx->liveness exists).  Without it only the node's processes and the
 * transports tell. */
static void watch_deaths(rcoll_context_t *ctx)
{
    rcoll_pmix_t *px = ctx->boot;
    if (ctx->liveness == NULL || px->evh_set) {
        return;
    }
    pmix_info_t info[2];
    PMIX_INFO_LOAD(&info[0], PMIX_EVENT_RETURN_OBJECT, ctx, PMIX_POINTER);
    PMIX_INFO_LOAD(&info[1], PMIX_EVENT_HDLR_NAME, "rcoll-liveness", PMIX_STRING);
    pmix_status_t rc = PMIx_Register_event_handler((pmix_status_t *)death_codes,
                                                   sizeof(death_codes) / sizeof(death_codes[0]),
                                                   info, 2, on_death_event, NULL, NULL);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc < 0) {
        rcoll_debug("PMIx_Register_event_handler: %s: the launcher's events about dead ranks "
                    "are not used", PMIx_Error_string(rc));
        return;
    }
    px->evh_id = (size_t)rc;
    px->evh_set = 1;
}

static void pmix_fini(rcoll_context_t *ctx)
{
    if (ctx->boot != NULL) {
        rcoll_pmix_t *px = ctx->boot;
        if (px->evh_set) {
            PMIx_Deregister_event_handler(px->evh_id, NULL, NULL);
            px->evh_set = 0;
        }
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            rcoll_warn("PMIx_Finalize: %s", PMIx_Error_string(rc));
        }
        free(ctx->boot);
        ctx->boot = NULL;
    }
}

static const rcoll_bootstrap_ops_t pmix_ops = {
    .name     = "pmix",
    .exchange = pmix_exchange,
    .fini     = pmix_fini,
};
