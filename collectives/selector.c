/*
 * selector.c - rcoll_select(): the algorithm for a collective call.
 *
 * In order: RCOLL_<COLL>_ALGORITHM if set (an unknown name is an error),
 * else the first matching rule of RCOLL_TUNE_FILE, else the algorithm with
 * the lowest cost under the alpha-beta-gamma model.  Every input (config,
 * tune file, communicator size, ranks per node, the agreed eager limit) is
 * the same on every rank, so every rank chooses the same algorithm.
 */
#include <math.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "coll_comm.h"
#include "selector.h"

/* Same-node figures measured on the development machine (2-core VM, UCX
 * over shared memory, loaded); between nodes the same software overhead plus
 * 2 us of network latency, and nominal EDR InfiniBand bandwidth; gamma the
 * nominal float32 sum kernel.  See docs/algorithms.md for how. */
static const rcoll_model_t default_model = {
    .alpha        = 8.0e-6,
    .alpha_inter  = 10.0e-6,
    .beta         = 1.4e-9,
    .beta_inter   = 1.0 / 12.0e9,
    .gamma        = 1.0 / 10.0e9,
    .rndv_extra   = 50.0e-6,
    .eager_limit  = 16384,
    .segment_size = 65536,   /* RCOLL_SEGMENT_SIZE default */
    .shm          = 1,
    .shm_node     = 1,
};

const rcoll_model_t *rcoll_selector_model(void)
{
    return &default_model;
}

static const rcoll_tune_t *tune_loaded(rcoll_context_t *ctx);

void rcoll_selector_model_for(const rcoll_context_t *ctx, rcoll_model_t *m)
{
    *m = default_model;
    if (ctx == NULL)
        return;
    /* the tune file's measured figures (read at init; the cast: the
     * selector's state is the context's slot, not its settings) */
    rcoll_tune_apply_model(tune_loaded((rcoll_context_t *)ctx), m);
    const rcoll_config_t *cfg = rcoll_ctx_config(ctx);
    size_t agreed = rcoll_ctx_eager_limit(ctx);
    m->eager_limit = agreed ? agreed : cfg->eager_limit;
    m->segment_size = cfg->segment_size;
    m->shm = cfg->shm;
    m->shm_node = cfg->shm;
}

/* The cheapest, leaving out the composed algorithms if flat. */
static const rcoll_alg_t *select_by_cost(rcoll_coll_type_t coll, const rcoll_model_t *m,
                                         size_t bytes, int nranks, int ppn, int flat)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll), *best = NULL;
    double best_t = 0;

    for (; a != NULL && *a != NULL; a++) {
        if (flat && ((*a)->flags & RCOLL_ALG_COMPOSED))
            continue;
        double t = (*a)->cost ? (*a)->cost(m, bytes, nranks, ppn) : 0;
        if (best == NULL || t < best_t) {
            best = *a;
            best_t = t;
        }
    }
    return best;
}

const rcoll_alg_t *rcoll_select_by_cost(rcoll_coll_type_t coll, const rcoll_model_t *m,
                                        size_t bytes, int nranks, int ppn)
{
    return select_by_cost(coll, m, bytes, nranks, ppn, 0);
}

double rcoll_select_best_cost_port(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                                   int nranks, double *port)
{
    const rcoll_alg_t *a = rcoll_select_by_cost(coll, m, bytes, nranks, nranks);
    if (a == NULL || a->cost == NULL) {
        *port = INFINITY;
        return INFINITY;
    }
    double cost = a->cost(m, bytes, nranks, nranks);
    *port = a->port != NULL ? a->port(m, bytes, nranks) : cost;
    return cost;
}

double rcoll_select_best_port(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nranks)
{
    double port;
    rcoll_select_best_cost_port(coll, m, bytes, nranks, &port);
    return port;
}

double rcoll_select_best_cost(rcoll_coll_type_t coll, const rcoll_model_t *m, size_t bytes,
                              int nranks, int ppn)
{
    const rcoll_alg_t *a = rcoll_select_by_cost(coll, m, bytes, nranks, ppn);
    return a != NULL && a->cost != NULL ? a->cost(m, bytes, nranks, ppn) : INFINITY;
}

/* ---- the context's caches: ranks per node of the last communicator
 * asked, and the tune file parsed once per file name.  They live in the
 * context (rcoll_ctx_coll_slot, made on first use), so contexts driven by
 * different threads share nothing. ---- */

typedef struct {
    struct {
        int        valid;
        uint64_t   comm_id;
        const int *world_ranks;
        int        size, ppn;
    } ppn;
    struct {
        char         path[RCOLL_CONFIG_STR_MAX];
        int          loaded;       /* 1: tune holds path's rules; -1: path is bad */
        rcoll_tune_t tune;
    } tune;
    struct {                       /* rcoll_selector_set_cma: rcoll_tune's own measurement */
        int    set;
        size_t lo, hi;
    } cma[RCOLL_TUNE_NCMA];
} sel_state_t;

/* The context's caches; NULL only when out of memory. */
static sel_state_t *sel_state(rcoll_context_t *ctx)
{
    void **slot = rcoll_ctx_coll_slot(ctx);
    if (*slot == NULL) {
        *slot = calloc(1, sizeof(sel_state_t));
    }
    return *slot;
}

static int comm_ppn_compute(const rcoll_comm_t *comm)
{
    int nnodes = rcoll_comm_nnodes(comm);
    int stack_counts[256], *counts = stack_counts, ppn = 0;

    if (nnodes <= 1)
        return comm->size;
    if (nnodes > (int)(sizeof(stack_counts) / sizeof(stack_counts[0]))) {
        counts = calloc((size_t)nnodes, sizeof(*counts));
        if (counts == NULL)
            return -1;
    } else {
        memset(stack_counts, 0, sizeof(stack_counts));
    }
    for (int i = 0; i < comm->size; i++) {
        int node = rcoll_comm_node(comm, i);
        if (node >= 0 && node < nnodes && ++counts[node] > ppn)
            ppn = counts[node];
    }
    if (counts != stack_counts)
        free(counts);
    return ppn > 0 ? ppn : comm->size;
}

int rcoll_selector_comm_ppn(const rcoll_comm_t *comm)
{
    sel_state_t *s = sel_state(comm->ctx);
    if (s == NULL)
        return comm_ppn_compute(comm);
    if (!s->ppn.valid || s->ppn.comm_id != comm->id ||
        s->ppn.world_ranks != comm->world_ranks || s->ppn.size != comm->size) {
        int ppn = comm_ppn_compute(comm);
        if (ppn < 0)
            return -1;
        s->ppn.valid = 1;
        s->ppn.comm_id = comm->id;
        s->ppn.world_ranks = comm->world_ranks;
        s->ppn.size = comm->size;
        s->ppn.ppn = ppn;
    }
    return s->ppn.ppn;
}

/* ---- the tune file ---- */

static const rcoll_tune_t *tune_get(rcoll_context_t *ctx, const char *path)
{
    char err[512];
    sel_state_t *s = sel_state(ctx);

    if (s == NULL) {
        rcoll_error("RCOLL_TUNE_FILE %s: no memory for the selector's state", path);
        return NULL;
    }
    if (s->tune.loaded != 0 && strcmp(s->tune.path, path) == 0)
        return s->tune.loaded > 0 ? &s->tune.tune : NULL;
    rcoll_tune_free(&s->tune.tune);
    snprintf(s->tune.path, sizeof(s->tune.path), "%s", path);
    if (rcoll_tune_parse_file(path, &s->tune.tune, err, sizeof(err)) != RCOLL_OK) {
        rcoll_error("RCOLL_TUNE_FILE: %s", err);
        s->tune.loaded = -1;
        return NULL;
    }
    int nmodel = 0;
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++)
        nmodel += s->tune.tune.model_line[k] > 0;
    rcoll_debug("RCOLL_TUNE_FILE %s: %d rules, %d model figures", path, s->tune.tune.nrules,
                nmodel);
    s->tune.loaded = 1;
    return &s->tune.tune;
}

/* The tune file already read for the context's RCOLL_TUNE_FILE, or NULL. */
static const rcoll_tune_t *tune_loaded(rcoll_context_t *ctx)
{
    const rcoll_config_t *cfg = rcoll_ctx_config(ctx);
    sel_state_t *s = *rcoll_ctx_coll_slot(ctx);

    if (s == NULL || cfg->tune_file[0] == '\0' || s->tune.loaded <= 0 ||
        strcmp(s->tune.path, cfg->tune_file) != 0)
        return NULL;
    return &s->tune.tune;
}

const rcoll_tune_t *rcoll_selector_tune(rcoll_context_t *ctx)
{
    const rcoll_config_t *cfg = rcoll_ctx_config(ctx);
    return cfg->tune_file[0] != '\0' ? tune_get(ctx, cfg->tune_file) : NULL;
}

void rcoll_selector_set_cma(rcoll_context_t *ctx, int which, size_t lo, size_t hi)
{
    sel_state_t *s = sel_state(ctx);
    if (s == NULL || which < 0 || which >= RCOLL_TUNE_NCMA)
        return;
    s->cma[which].set = 1;
    s->cma[which].lo = lo;
    s->cma[which].hi = hi;
}

int rcoll_selector_cma_range(rcoll_context_t *ctx, int which, size_t *lo, size_t *hi)
{
    sel_state_t *s = sel_state(ctx);
    if (s != NULL && which >= 0 && which < RCOLL_TUNE_NCMA && s->cma[which].set) {
        *lo = s->cma[which].lo;
        *hi = s->cma[which].hi;
        return -1;
    }
    return rcoll_tune_cma_range(rcoll_selector_tune(ctx), which, lo, hi);
}

int rcoll_selector_stream_min(rcoll_context_t *ctx, size_t *v)
{
    return rcoll_tune_stream_min(rcoll_selector_tune(ctx), v);
}

int rcoll_selector_pair_flat_max(rcoll_context_t *ctx, size_t *v)
{
    return rcoll_tune_pair_flat_max(rcoll_selector_tune(ctx), v);
}

rcoll_status_t rcoll_selector_init(rcoll_context_t *ctx)
{
    const rcoll_config_t *cfg = rcoll_ctx_config(ctx);
    rcoll_ctx_config_touch(ctx);    /* choices remembered before are stale */
    sel_state_t *s = sel_state(ctx);
    if (s == NULL)
        return RCOLL_ERR_NO_MEMORY;
    if (cfg->tune_file[0] == '\0')
        return RCOLL_OK;
    s->tune.loaded = 0;      /* re-read: the file may have changed */
    return tune_get(ctx, cfg->tune_file) ? RCOLL_OK : RCOLL_ERR_INVALID_ARG;
}

void rcoll_selector_fini(rcoll_context_t *ctx)
{
    void **slot = rcoll_ctx_coll_slot(ctx);
    sel_state_t *s = *slot;
    if (s != NULL) {
        rcoll_tune_free(&s->tune.tune);
        free(s);
        *slot = NULL;
    }
}

/* ---- the choice ---- */

static const char *forced_name(const rcoll_config_t *cfg, rcoll_coll_type_t coll)
{
    switch (coll) {
    case RCOLL_COLL_ALLREDUCE:      return cfg->allreduce_alg;
    case RCOLL_COLL_BCAST:          return cfg->bcast_alg;
    case RCOLL_COLL_BARRIER:        return cfg->barrier_alg;
    case RCOLL_COLL_REDUCE:         return cfg->reduce_alg;
    case RCOLL_COLL_ALLGATHER:      return cfg->allgather_alg;
    case RCOLL_COLL_REDUCE_SCATTER: return cfg->reduce_scatter_alg;
    default:                        return "";
    }
}

static void log_unknown(rcoll_coll_type_t coll, const char *name)
{
    const char *cname = rcoll_coll_name(coll);
    char names[256], upper[32] = "";

    rcoll_coll_alg_names(coll, names, sizeof(names));
    for (size_t i = 0; i + 1 < sizeof(upper) && cname[i] != '\0'; i++)
        upper[i] = (char)toupper((unsigned char)cname[i]);
    rcoll_error("unknown %s algorithm '%s' in RCOLL_%s_ALGORITHM (valid: %s)",
                cname, name, upper, names);
}

static const rcoll_alg_t *select_uncached(rcoll_task_t *task, size_t bytes)
{
    rcoll_context_t *ctx = task->ctx;
    rcoll_coll_type_t coll = task->args.type;
    const rcoll_config_t *cfg = rcoll_ctx_config(ctx);
    const char *forced = forced_name(cfg, coll);
    const rcoll_alg_t *alg;
    rcoll_model_t m;
    int nranks = task->comm->size, ppn;

    /* A node-aware (composed) algorithm is never given to the internal
     * sub-communicators it runs its steps on, even when forced: they get
     * the cheapest other one (else forcing node_aware would recurse). */
    int sub = task->comm->sub_kind != 0;
    if (forced[0] != '\0') {
        alg = rcoll_alg_find(coll, forced);
        if (alg == NULL)
            log_unknown(coll, forced);
        if (alg == NULL || !sub || !(alg->flags & RCOLL_ALG_COMPOSED))
            return alg;
    } else if (cfg->tune_file[0] != '\0') {
        const rcoll_tune_t *t = tune_get(ctx, cfg->tune_file);
        if (t == NULL)
            return NULL;
        alg = rcoll_tune_lookup(t, coll, bytes, nranks);
        if (alg != NULL && (!sub || !(alg->flags & RCOLL_ALG_COMPOSED))) {
            /* once per call shape: the choice is remembered (rcoll_select) */
            rcoll_debug("%s %zu B on %d ranks: %s (RCOLL_TUNE_FILE rule)", rcoll_coll_name(coll),
                        bytes, nranks, alg->name);
            return alg;
        }
    }
    ppn = rcoll_selector_comm_ppn(task->comm);
    if (ppn < 0) {
        rcoll_error("%s: no memory to count the communicator's ranks per node",
                    rcoll_coll_name(coll));
        return NULL;
    }
    rcoll_selector_model_for(ctx, &m);
    /* shm only where the communicator's creation-time property allows it
     * (all members on one node, RCOLL_SHM=1): fixed for its lifetime. */
    m.shm = task->comm->shm_usable;
    alg = select_by_cost(coll, &m, bytes, nranks, ppn, sub);
    if (alg == NULL)
        rcoll_error("%s: no algorithm available", rcoll_coll_name(coll));
    else
        rcoll_debug("%s %zu B on %d ranks: %s (cost model)", rcoll_coll_name(coll), bytes,
                    nranks, alg->name);
    return alg;
}

/* The choice depends only on the collective, its bytes, the communicator
 * and the configuration, so it is remembered per communicator (a small
 * direct-mapped table): a repeated call skips the tune file and the cost
 * of every algorithm.  rcoll_config_set bumps the config's gen, which
 * invalidates every entry. */
const rcoll_alg_t *rcoll_select(rcoll_task_t *task)
{
    rcoll_comm_t *comm = task->comm;
    rcoll_coll_type_t coll = task->args.type;
    size_t bytes = coll == RCOLL_COLL_BARRIER ? 0
                 : task->args.count * rcoll_datatype_size(task->args.dtype);
    unsigned gen = rcoll_task_config(task)->gen + 1;
    size_t h = (bytes ^ (bytes >> 7) ^ (bytes >> 17) ^ ((size_t)coll * 0x9e5u)) % RCOLL_SEL_CACHE;
    rcoll_sel_entry_t *e = &rcoll_coll_comm(comm)->sel_cache[h];

    if (e->gen == gen && e->coll == (int)coll && e->bytes == bytes)
        return e->alg;
    const rcoll_alg_t *alg = select_uncached(task, bytes);
    if (alg != NULL) {
        e->gen = gen;
        e->coll = (int)coll;
        e->bytes = bytes;
        e->alg = alg;
    }
    return alg;
}
