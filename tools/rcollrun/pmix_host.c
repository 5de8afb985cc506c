/*
 * rcollrun's PMIx host side: server init in a private directory, the job
 * namespace registration (everything a client asks PMIx_Get for), and the
 * host upcalls.  The upcalls run on libpmix's progress thread; they touch
 * only the state below, under its lock, and wake the supervisor through a
 * pipe when it must act (abort).
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#define RCOLLRUN_PMIX_OP_TIMEOUT_S 30

typedef struct {
    pmix_op_cbfunc_t cbfunc;
    void            *cbdata;
} pending_cb_t;

static struct {
    pthread_mutex_t lock;
    int             nranks;
    const rcollrun_layout_t *layout;
    bool            verbose;
    bool            server_up;
    pmix_nspace_t   nspace;
    char           *tmpdir;
    char            hostname[256];
    bool           *connected;
    bool           *finalized;
    int             wake[2];
    /* first PMIx_Abort seen, and every abort caller still blocked */
    bool            abort_seen;
    bool            abort_taken;
    int             abort_rank;
    int             abort_status;
    char           *abort_msg;
    pending_cb_t   *abort_cbs;
    size_t          nabort_cbs;
} host = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = { -1, -1 } };

/* ------------------------------------------------------------------ */
/* Waiting for an asynchronous PMIx server operation, with a deadline.  */

typedef struct {
    pthread_mutex_t m;
    pthread_cond_t  c;
    bool            done;
    pmix_status_t   status;
} op_wait_t;

static op_wait_t *op_new(void)
{
    op_wait_t *op = calloc(1, sizeof(*op));
    pthread_condattr_t attr;

    if (op == NULL) {
        rcollrun_msg("out of memory");
        return NULL;
    }
    pthread_mutex_init(&op->m, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&op->c, &attr);
    pthread_condattr_destroy(&attr);
    return op;
}

static void op_free(op_wait_t *op)
{
    pthread_cond_destroy(&op->c);
    pthread_mutex_destroy(&op->m);
    free(op);
}

static void op_cbfunc(pmix_status_t status, void *cbdata)
{
    op_wait_t *op = cbdata;

    pthread_mutex_lock(&op->m);
    op->status = status;
    op->done = true;
    pthread_cond_signal(&op->c);
    pthread_mutex_unlock(&op->m);
}

/* rc is what the PMIx call returned.  Returns 0 when the operation
 * completed successfully, else prints what failed and returns -1.  Frees
 * op, except on a timeout: libpmix may still call back into it. */
static int op_wait(op_wait_t *op, pmix_status_t rc, const char *what)
{
    struct timespec ts;
    int err = 0;

    if (rc == PMIX_OPERATION_SUCCEEDED || rc != PMIX_SUCCESS) {
        op_free(op);
        if (rc == PMIX_OPERATION_SUCCEEDED)
            return 0;
        rcollrun_msg("PMIx server: %s failed: %s", what, PMIx_Error_string(rc));
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += RCOLLRUN_PMIX_OP_TIMEOUT_S;
    pthread_mutex_lock(&op->m);
    while (!op->done && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&op->c, &op->m, &ts);
    rc = op->done ? op->status : PMIX_ERR_TIMEOUT;
    pthread_mutex_unlock(&op->m);
    if (!op->done) {
        rcollrun_msg("PMIx server: %s did not complete within %d s", what,
                     RCOLLRUN_PMIX_OP_TIMEOUT_S);
        return -1;
    }
    op_free(op);
    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx server: %s failed: %s", what, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Upcalls (libpmix progress thread).                                  */

static int rank_of(const pmix_proc_t *proc)
{
    if (proc == NULL || !PMIX_CHECK_NSPACE(proc->nspace, host.nspace))
        return -1;
    if (proc->rank >= (pmix_rank_t)host.nranks)
        return -1;
    return (int)proc->rank;
}

static void wake_supervisor(void)
{
    char c = 1;
    ssize_t n;

    do {
        n = write(host.wake[1], &c, 1);
    } while (n < 0 && errno == EINTR);
    /* EAGAIN: a wake-up is already pending, which is enough. */
}

static pmix_status_t up_connected(const pmix_proc_t *proc, void *server_object,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    int r = rank_of(proc);

    if (r >= 0) {
        pthread_mutex_lock(&host.lock);
        host.connected[r] = true;
        pthread_mutex_unlock(&host.lock);
    }
    if (host.verbose)
        rcollrun_msg("rank %d connected to the PMIx server", r);
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t up_finalized(const pmix_proc_t *proc, void *server_object,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    int r = rank_of(proc);

    if (r >= 0) {
        pthread_mutex_lock(&host.lock);
        host.finalized[r] = true;
        pthread_mutex_unlock(&host.lock);
    }
    if (host.verbose)
        rcollrun_msg("rank %d called PMIx_Finalize", r);
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

/* PMIx_Abort: rcollrun terminates the whole job whatever procs[] says.
 * The caller stays blocked until the supervisor has sent the signals. */
static pmix_status_t up_abort(const pmix_proc_t *proc, void *server_object, int status,
                              const char msg[], pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    int r = rank_of(proc);
    pending_cb_t *cbs;

    pthread_mutex_lock(&host.lock);
    if (!host.abort_seen) {
        host.abort_seen = true;
        host.abort_rank = r;
        host.abort_status = status;
        host.abort_msg = strdup(msg != NULL ? msg : "");
    }
    if (cbfunc != NULL) {
        cbs = realloc(host.abort_cbs, (host.nabort_cbs + 1) * sizeof(*cbs));
        if (cbs == NULL) {
            pthread_mutex_unlock(&host.lock);
            wake_supervisor();
            cbfunc(PMIX_SUCCESS, cbdata);
            return PMIX_SUCCESS;
        }
        host.abort_cbs = cbs;
        cbs[host.nabort_cbs].cbfunc = cbfunc;
        cbs[host.nabort_cbs].cbdata = cbdata;
        host.nabort_cbs++;
    }
    pthread_mutex_unlock(&host.lock);
    wake_supervisor();
    return PMIX_SUCCESS;
}

static void fence_release(void *cbdata)
{
    free(cbdata);
}

/* Every participant is local: libpmix has already gathered all of their
 * contributions into data, which is exactly what every participant needs.
 * libpmix hands the reply to its own thread, so it gets a copy of its own. */
static pmix_status_t up_fence_nb(const pmix_proc_t procs[], size_t nprocs,
                                 const pmix_info_t info[], size_t ninfo, char *data,
                                 size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    char *copy = NULL;

    if (host.verbose)
        rcollrun_msg("fence over %zu procs with %zu bytes of data", nprocs, ndata);
    if (cbfunc == NULL)
        return PMIX_SUCCESS;
    if (ndata > 0) {
        copy = malloc(ndata);
        if (copy == NULL) {
            rcollrun_msg("PMIx fence: out of memory copying %zu bytes", ndata);
            return PMIX_ERR_NOMEM;
        }
        memcpy(copy, data, ndata);
    }
    cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, fence_release, copy);
    return PMIX_SUCCESS;
}

/* All procs live on this node, so libpmix answers their data requests
 * itself; a request reaching the host is for a proc we do not have. */
static pmix_status_t up_direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                     size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    return PMIX_ERR_NOT_FOUND;
}

static pmix_server_module_t host_module = {
    .client_connected = up_connected,
    .client_finalized = up_finalized,
    .abort = up_abort,
    .fence_nb = up_fence_nb,
    .direct_modex = up_direct_modex,
};

/* ------------------------------------------------------------------ */
/* Private directory.                                                  */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    if (remove(path) != 0 && errno != ENOENT)
        rcollrun_msg("warning: cannot remove %s: %s", path, strerror(errno));
    return 0;
}

static int make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char path[PATH_MAX];

    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    /* libpmix puts a Unix socket in here: sun_path holds 108 bytes. */
    if (strlen(base) > 60) {
        rcollrun_msg("warning: TMPDIR=%s is too long for a Unix socket path; using /tmp",
                     base);
        base = "/tmp";
    }
    snprintf(path, sizeof(path), "%s/rcollrun.XXXXXX", base);
    if (mkdtemp(path) == NULL) {
        rcollrun_msg("cannot create a directory in %s: %s", base, strerror(errno));
        return -1;
    }
    host.tmpdir = strdup(path);
    return host.tmpdir != NULL ? 0 : -1;
}

static void remove_tmpdir(void)
{
    if (host.tmpdir == NULL)
        return;
    nftw(host.tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(host.tmpdir);
    host.tmpdir = NULL;
}

/* ------------------------------------------------------------------ */
/* Job registration.                                                   */

static int list_add(void *list, const char *key, const void *val, pmix_data_type_t type)
{
    pmix_status_t rc = PMIx_Info_list_add(list, key, val, type);

    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx server: cannot add %s to the job info: %s", key,
                     PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* Converts the sub-list into an info array and adds it to list under key. */
static int list_add_array(void *list, const char *key, void *sub)
{
    pmix_data_array_t arr;
    pmix_status_t rc;
    int ret;

    memset(&arr, 0, sizeof(arr));
    arr.type = PMIX_INFO;
    rc = PMIx_Info_list_convert(sub, &arr);
    PMIx_Info_list_release(sub);
    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx server: cannot build %s: %s", key, PMIx_Error_string(rc));
        return -1;
    }
    ret = list_add(list, key, &arr, PMIX_DATA_ARRAY);
    PMIX_DATA_ARRAY_DESTRUCT(&arr);
    return ret;
}

/* "a,a+1,...,b-1" */
static char *peer_list(int a, int b)
{
    size_t cap = (size_t)(b - a) * 6 + 1, len = 0;
    char *s = malloc(cap);

    if (s == NULL)
        return NULL;
    s[0] = '\0';
    for (int i = a; i < b; i++)
        len += (size_t)snprintf(s + len, cap - len, i > a ? ",%d" : "%d", i);
    return s;
}

/* What PMIx reports per node: with --nodes, each virtual node its own id,
 * host name and local peers. */
static int add_node_info(void *job, int k)
{
    const rcollrun_layout_t *L = host.layout;
    void *node = PMIx_Info_list_start();
    uint32_t nodeid = (uint32_t)k, n = (uint32_t)(L->first[k + 1] - L->first[k]);
    pmix_rank_t ldr = (pmix_rank_t)L->first[k];
    char *peers = peer_list(L->first[k], L->first[k + 1]);
    int ok = peers != NULL ? 0 : -1;

    ok |= list_add(node, PMIX_NODEID, &nodeid, PMIX_UINT32);
    ok |= list_add(node, PMIX_HOSTNAME, L->names[k], PMIX_STRING);
    ok |= list_add(node, PMIX_LOCAL_SIZE, &n, PMIX_UINT32);
    ok |= list_add(node, PMIX_NODE_SIZE, &n, PMIX_UINT32);
    if (peers != NULL)
        ok |= list_add(node, PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    ok |= list_add(node, PMIX_LOCALLDR, &ldr, PMIX_PROC_RANK);
    free(peers);
    if (ok != 0) {
        PMIx_Info_list_release(node);
        return -1;
    }
    return list_add_array(job, PMIX_NODE_INFO_ARRAY, node);
}

static int add_app_info(void *job)
{
    void *app = PMIx_Info_list_start();
    uint32_t appnum = 0, n = (uint32_t)host.nranks;
    pmix_rank_t ldr = 0;
    char cwd[PATH_MAX];
    int ok = 0;

    ok |= list_add(app, PMIX_APPNUM, &appnum, PMIX_UINT32);
    ok |= list_add(app, PMIX_APP_SIZE, &n, PMIX_UINT32);
    ok |= list_add(app, PMIX_APPLDR, &ldr, PMIX_PROC_RANK);
    if (getcwd(cwd, sizeof(cwd)) != NULL)
        ok |= list_add(app, PMIX_WDIR, cwd, PMIX_STRING);
    if (ok != 0) {
        PMIx_Info_list_release(app);
        return -1;
    }
    return list_add_array(job, PMIX_APP_INFO_ARRAY, app);
}

static int add_proc_info(void *job, int r)
{
    const rcollrun_layout_t *L = host.layout;
    int k = L->node_of[r];
    void *proc = PMIx_Info_list_start();
    pmix_rank_t rank = (pmix_rank_t)r;
    uint16_t lrank = (uint16_t)(r - L->first[k]);
    uint32_t zero = 0, nodeid = (uint32_t)k;
    int ok = 0;

    ok |= list_add(proc, PMIX_RANK, &rank, PMIX_PROC_RANK);
    ok |= list_add(proc, PMIX_APPNUM, &zero, PMIX_UINT32);
    ok |= list_add(proc, PMIX_APP_RANK, &rank, PMIX_PROC_RANK);
    ok |= list_add(proc, PMIX_GLOBAL_RANK, &rank, PMIX_PROC_RANK);
    ok |= list_add(proc, PMIX_LOCAL_RANK, &lrank, PMIX_UINT16);
    ok |= list_add(proc, PMIX_NODE_RANK, &lrank, PMIX_UINT16);
    ok |= list_add(proc, PMIX_NODEID, &nodeid, PMIX_UINT32);
    ok |= list_add(proc, PMIX_HOSTNAME, L->names[k], PMIX_STRING);
    if (ok != 0) {
        PMIx_Info_list_release(proc);
        return -1;
    }
    return list_add_array(job, PMIX_PROC_INFO_ARRAY, proc);
}

/* The node list "a,b,..." and the proc map "0,1;2,3" (ranks per node). */
static int node_and_proc_lists(char **nodes, char **procs)
{
    const rcollrun_layout_t *L = host.layout;
    size_t ncap = (size_t)L->nnodes * 65 + 1, pcap = (size_t)host.nranks * 7 + 1;
    size_t nl = 0, pl = 0;

    *nodes = malloc(ncap);
    *procs = malloc(pcap);
    if (*nodes == NULL || *procs == NULL)
        return -1;
    (*nodes)[0] = (*procs)[0] = '\0';
    for (int k = 0; k < L->nnodes; k++) {
        nl += (size_t)snprintf(*nodes + nl, ncap - nl, k ? ",%s" : "%s", L->names[k]);
        for (int r = L->first[k]; r < L->first[k + 1]; r++)
            pl += (size_t)snprintf(*procs + pl, pcap - pl, r == L->first[k] ? (k ? ";%d" : "%d")
                                   : ",%d", r);
    }
    return 0;
}

/* The job as one PMIx server sees it: every rank is its client (local
 * size and peers: all), spread over the layout's nodes. */
static int add_job_info(void *job, const char *peers)
{
    uint32_t n = (uint32_t)host.nranks, one = 1, zero = 0;
    uint32_t nnodes = (uint32_t)host.layout->nnodes;
    pmix_rank_t first = 0;
    bool no = false;
    char *regex = NULL, *ppn = NULL, *nodes = NULL, *procs = NULL;
    int ok = node_and_proc_lists(&nodes, &procs);

    ok |= list_add(job, PMIX_JOBID, host.nspace, PMIX_STRING);
    ok |= list_add(job, PMIX_UNIV_SIZE, &n, PMIX_UINT32);
    ok |= list_add(job, PMIX_JOB_SIZE, &n, PMIX_UINT32);
    ok |= list_add(job, PMIX_MAX_PROCS, &n, PMIX_UINT32);
    ok |= list_add(job, PMIX_SPAWNED, &no, PMIX_BOOL);
    ok |= list_add(job, PMIX_NPROC_OFFSET, &first, PMIX_PROC_RANK);
    ok |= list_add(job, PMIX_NUM_NODES, &nnodes, PMIX_UINT32);
    ok |= list_add(job, PMIX_JOB_NUM_APPS, &one, PMIX_UINT32);
    ok |= list_add(job, PMIX_APPNUM, &zero, PMIX_UINT32);
    ok |= list_add(job, PMIX_LOCAL_SIZE, &n, PMIX_UINT32);
    ok |= list_add(job, PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    ok |= list_add(job, PMIX_LOCALLDR, &first, PMIX_PROC_RANK);
    if (ok == 0)
        ok |= list_add(job, PMIX_NODE_LIST, nodes, PMIX_STRING);
    ok |= list_add(job, PMIX_TMPDIR, host.tmpdir, PMIX_STRING);
    if (ok == 0 && PMIx_generate_regex(nodes, &regex) == PMIX_SUCCESS && regex != NULL)
        ok |= list_add(job, PMIX_NODE_MAP, regex, PMIX_STRING);
    else
        ok = -1;
    if (ok == 0 && PMIx_generate_ppn(procs, &ppn) == PMIX_SUCCESS && ppn != NULL)
        ok |= list_add(job, PMIX_PROC_MAP, ppn, PMIX_STRING);
    else
        ok = -1;
    free(regex);
    free(ppn);
    free(nodes);
    free(procs);
    if (ok != 0) {
        rcollrun_msg("PMIx server: cannot describe the job (node or proc map)");
        return -1;
    }
    return 0;
}

static int register_job(void)
{
    void *job = PMIx_Info_list_start();
    char *peers = peer_list(0, host.nranks);
    pmix_data_array_t arr;
    op_wait_t *op;
    pmix_status_t rc;
    int ret = -1;

    memset(&arr, 0, sizeof(arr));
    arr.type = PMIX_INFO;
    if (job == NULL || peers == NULL) {
        rcollrun_msg("out of memory describing the job");
        goto out;
    }
    if (add_job_info(job, peers) != 0 || add_app_info(job) != 0)
        goto out;
    for (int k = 0; k < host.layout->nnodes; k++)
        if (add_node_info(job, k) != 0)
            goto out;
    for (int r = 0; r < host.nranks; r++)
        if (add_proc_info(job, r) != 0)
            goto out;
    rc = PMIx_Info_list_convert(job, &arr);
    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx server: cannot build the job info: %s", PMIx_Error_string(rc));
        goto out;
    }
    if ((op = op_new()) == NULL)
        goto out;
    rc = PMIx_server_register_nspace(host.nspace, host.nranks, arr.array, arr.size,
                                     op_cbfunc, op);
    if (op_wait(op, rc, "registering the job namespace") != 0)
        goto out;
    ret = 0;
out:
    PMIX_DATA_ARRAY_DESTRUCT(&arr);
    if (job != NULL)
        PMIx_Info_list_release(job);
    free(peers);
    return ret;
}

static int register_clients(void)
{
    for (int r = 0; r < host.nranks; r++) {
        pmix_proc_t proc;
        op_wait_t *op = op_new();
        pmix_status_t rc;
        char what[64];

        if (op == NULL)
            return -1;
        PMIX_LOAD_PROCID(&proc, host.nspace, (pmix_rank_t)r);
        rc = PMIx_server_register_client(&proc, getuid(), getgid(), NULL, op_cbfunc, op);
        snprintf(what, sizeof(what), "registering rank %d", r);
        if (op_wait(op, rc, what) != 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */

int rcollrun_pmix_start(int nranks, const rcollrun_layout_t *layout, bool verbose)
{
    pmix_info_t info[3];
    pmix_status_t rc;
    char srvns[PMIX_MAX_NSLEN + 1];

    host.nranks = nranks;
    host.layout = layout;
    host.verbose = verbose;
    host.connected = calloc((size_t)nranks, sizeof(bool));
    host.finalized = calloc((size_t)nranks, sizeof(bool));
    if (host.connected == NULL || host.finalized == NULL) {
        rcollrun_msg("out of memory");
        return -1;
    }
    if (pipe2(host.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        rcollrun_msg("pipe: %s", strerror(errno));
        return -1;
    }
    if (gethostname(host.hostname, sizeof(host.hostname) - 1) != 0)
        strcpy(host.hostname, "localhost");
    snprintf(srvns, sizeof(srvns), "rcollrun-%ld", (long)getpid());
    PMIX_LOAD_NSPACE(host.nspace, srvns);
    strncat(host.nspace, "-job", PMIX_MAX_NSLEN - strlen(host.nspace));
    if (make_tmpdir() != 0)
        return -1;

    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_CONSTRUCT(&info[2]);
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, host.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, host.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_SERVER_NSPACE, srvns, PMIX_STRING);
    rc = PMIx_server_init(&host_module, info, 3);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    PMIX_INFO_DESTRUCT(&info[2]);
    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx_server_init failed: %s (server directory %s)",
                     PMIx_Error_string(rc), host.tmpdir);
        remove_tmpdir();
        return -1;
    }
    host.server_up = true;
    if (verbose)
        rcollrun_msg("PMIx server up (libpmix %s), namespace %s, directory %s",
                     PMIx_Get_version(), host.nspace, host.tmpdir);
    if (register_job() != 0 || register_clients() != 0)
        return -1;
    return 0;
}

int rcollrun_pmix_setup_fork(int rank, char ***env)
{
    pmix_proc_t proc;
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&proc, host.nspace, (pmix_rank_t)rank);
    rc = PMIx_server_setup_fork(&proc, env);
    if (rc != PMIX_SUCCESS) {
        rcollrun_msg("PMIx_server_setup_fork for rank %d failed: %s", rank,
                     PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int rcollrun_pmix_wake_fd(void)
{
    return host.wake[0];
}

bool rcollrun_pmix_connected(int rank)
{
    bool v;

    pthread_mutex_lock(&host.lock);
    v = host.connected[rank];
    pthread_mutex_unlock(&host.lock);
    return v;
}

bool rcollrun_pmix_finalized(int rank)
{
    bool v;

    pthread_mutex_lock(&host.lock);
    v = host.finalized[rank];
    pthread_mutex_unlock(&host.lock);
    return v;
}

bool rcollrun_pmix_take_abort(int *rank, int *status, char **msg)
{
    char c[64];
    bool got = false;

    while (read(host.wake[0], c, sizeof(c)) > 0)
        ;
    pthread_mutex_lock(&host.lock);
    if (host.abort_seen && !host.abort_taken) {
        host.abort_taken = true;
        *rank = host.abort_rank;
        *status = host.abort_status;
        *msg = host.abort_msg;
        host.abort_msg = NULL;
        got = true;
    }
    pthread_mutex_unlock(&host.lock);
    return got;
}

void rcollrun_pmix_release_aborts(void)
{
    pending_cb_t *cbs;
    size_t n;

    pthread_mutex_lock(&host.lock);
    cbs = host.abort_cbs;
    n = host.nabort_cbs;
    host.abort_cbs = NULL;
    host.nabort_cbs = 0;
    pthread_mutex_unlock(&host.lock);
    for (size_t i = 0; i < n; i++)
        cbs[i].cbfunc(PMIX_SUCCESS, cbs[i].cbdata);
    free(cbs);
}

typedef struct {
    pmix_info_t info[2];
    pmix_proc_t proc;
} ended_note_t;

static void ended_note_done(pmix_status_t status, void *cbdata)
{
    ended_note_t *n = cbdata;

    (void)status;
    PMIX_INFO_DESTRUCT(&n->info[0]);
    PMIX_INFO_DESTRUCT(&n->info[1]);
    free(n);
}

void rcollrun_pmix_notify_ended(int rank, int code)
{
    ended_note_t *n;
    pmix_status_t rc;

    if (!host.server_up || rank < 0 || rank >= host.nranks || (n = calloc(1, sizeof(*n))) == NULL)
        return;
    PMIX_PROC_CONSTRUCT(&n->proc);
    PMIX_LOAD_PROCID(&n->proc, host.nspace, (pmix_rank_t)rank);
    PMIX_INFO_LOAD(&n->info[0], PMIX_EVENT_AFFECTED_PROC, &n->proc, PMIX_PROC);
    PMIX_INFO_LOAD(&n->info[1], PMIX_EXIT_CODE, &code, PMIX_INT);
    rc = PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, &n->proc, PMIX_RANGE_NAMESPACE, n->info,
                           2, ended_note_done, n);
    if (rc != PMIX_SUCCESS) {
        if (rc != PMIX_OPERATION_SUCCEEDED)
            rcollrun_msg("warning: PMIx_Notify_event (rank %d ended): %s", rank,
                         PMIx_Error_string(rc));
        ended_note_done(rc, n);
    }
}

void rcollrun_pmix_stop(void)
{
    pmix_status_t rc;

    if (host.server_up) {
        rcollrun_pmix_release_aborts();
        rc = PMIx_server_finalize();
        if (rc != PMIX_SUCCESS)
            rcollrun_msg("warning: PMIx_server_finalize: %s", PMIx_Error_string(rc));
        host.server_up = false;
    }
    remove_tmpdir();
}
