/*
 * context.c - rcoll_init / rcoll_init_oob / rcoll_finalize: configuration,
 * bootstrap (PMIx or the caller's all-gather, see bootstrap.h), transport
 * set-up and the world communicator.
 *
 * Address exchange: each rank contributes one blob to the bootstrap's
 * exchange: a fixed header (wire version, eager limit, host name, length
 * of the node name, number of must-match settings), a hash of each setting
 * that must be equal on every rank (config.h: rcoll_config_match_hashes,
 * tune file contents included), the node name, then for each transport it
 * opened an entry and that transport's address.  Every rank then checks
 * that all ranks agree on those settings (a mismatch fails init on every
 * rank, naming the setting), numbers the nodes by node name, and connects.
 *
 * What that costs per process (docs/scaling.md "Memory and start-up"): the
 * exchange hands every rank all p blobs (O(p), freed at the end of
 * connect_peers); parsing them, numbering the nodes (a hash of the node
 * names) and choosing a transport per peer is O(1) work per peer with no
 * allocation or system call of its own; connect() only records the peer's
 * address (UCX keeps it and creates the endpoint on first use, in jobs of
 * more than 256 ranks: RCOLL_UCX_LAZY_EPS).  What stays
 * O(p) per process: node_of, peer_tl, peer_ops, peer_failed, peer_exited
 * and what each transport keeps per peer.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "whereis.h"
#include "liveness.h"
#include "bootstrap.h"
#include "wire.h"
#include "addr_blob.h"
#include "binding.h"

static rcoll_status_t open_one(rcoll_context_t *ctx, const char *name, int prefer_remote, int quiet)
{
    const rcoll_tl_ops_t *ops = rcoll_tl_find(name);
    if (ops == NULL) {
        rcoll_error("transport %s is not in this build", name);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    rcoll_tl_params_t params = {
        .rank = ctx->rank, .size = ctx->size, .hdr_size = RCOLL_WIRE_HDR_SIZE,
        .node_of = ctx->node_of, .config = &ctx->config,
        .cb = { .arg = ctx, .recv = rcoll_p2p_recv_cb, .peer_error = rcoll_p2p_peer_error_cb },
        .auth = &ctx->auth,
    };
    if (quiet) {
        rcoll__log.level = -1;
    }
    rcoll_tl_t *tl;
    rcoll_status_t st = ops->open(&params, &tl);
    rcoll_log_enter(&ctx->log);
    if (st != RCOLL_OK) {
        return st;
    }
    size_t max = ops->max_msg_size(tl);
    if (max < RCOLL_WIRE_HDR_SIZE + RCOLL_TL_RKEY_MAX) {
        rcoll_error("transport %s carries messages of at most %zu bytes: too small", name, max);
        ops->close(tl);
        return RCOLL_ERR_TRANSPORT;
    }
    if (ctx->eager_limit > max - RCOLL_WIRE_HDR_SIZE) {
        rcoll_warn("RCOLL_EAGER_LIMIT=%zu exceeds what transport %s sends in one message; "
                   "using %zu", ctx->eager_limit, name, max - RCOLL_WIRE_HDR_SIZE);
        ctx->eager_limit = max - RCOLL_WIRE_HDR_SIZE;
    }
    ctx->tls_ops[ctx->ntls] = ops;
    ctx->tls[ctx->ntls] = tl;
    ctx->tl_prefer_remote[ctx->ntls] = prefer_remote;
    ctx->ntls++;
    return RCOLL_OK;
}

/*
 * RCOLL_TRANSPORT=ucx or verbs: that one for every peer.  auto: the first
 * backend (UCX) for every peer, plus each later one whose probe finds a
 * device it should serve remote peers with (raw verbs on iWARP, which UCX
 * cannot drive); or, when the first cannot start, the first later one that
 * found a device.  The first is opened quietly when an alternative exists.
 */
static rcoll_status_t open_transports(rcoll_context_t *ctx)
{
    const char *want = ctx->config.transport;
    if (strcmp(want, "auto") != 0) {
        return open_one(ctx, want, 0, 0);
    }
    const rcoll_tl_ops_t *const *b = rcoll_tl_backends;
    rcoll_tl_probe_t pr[4];
    int nb = 0, have_alt = 0;
    for (; b[nb] != NULL && nb < 4; nb++) {
        memset(&pr[nb], 0, sizeof(pr[nb]));
        if (nb > 0 && b[nb]->probe != NULL) {
            b[nb]->probe(&ctx->config, &pr[nb]);
            have_alt |= pr[nb].available;
        }
    }
    rcoll_status_t st = open_one(ctx, b[0]->name, 0, have_alt);
    if (st != RCOLL_OK && !have_alt) {
        return st;
    }
    for (int i = 1; i < nb; i++) {
        if (!pr[i].available || (st == RCOLL_OK && !pr[i].prefer_remote)) {
            continue;
        }
        rcoll_info("opening %s on %s%s%s", b[i]->name, pr[i].reason,
                   st != RCOLL_OK ? ": " : "", st != RCOLL_OK ? "the first transport did not start" : "");
        rcoll_status_t s2 = open_one(ctx, b[i]->name, 1, 0);
        if (st != RCOLL_OK) {
            return s2;       /* the replacement, or its failure */
        }
        if (s2 != RCOLL_OK) {
            return s2;
        }
    }
    return RCOLL_OK;
}

/* This rank's blob (malloc'd, *len bytes). */
static rcoll_status_t make_address(rcoll_context_t *ctx, uint8_t **out, size_t *out_len)
{
    size_t node_len = strlen(ctx->node_name);
    int nmatch = rcoll_config_match_count();
    size_t hashes_len = (size_t)nmatch * sizeof(uint64_t);
    size_t total = sizeof(addr_hdr_t) + hashes_len + node_len;
    const void *addr[4];
    size_t addr_len[4];
    for (int i = 0; i < ctx->ntls; i++) {
        rcoll_status_t st = ctx->tls_ops[i]->address(ctx->tls[i], &addr[i], &addr_len[i]);
        if (st != RCOLL_OK) {
            return st;
        }
        total += sizeof(tl_entry_t) + addr_len[i];
    }
    uint8_t *blob = calloc(1, total);
    if (blob == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    addr_hdr_t h = { .wire_version = RCOLL_WIRE_VERSION, .ntls = (uint32_t)ctx->ntls,
                     .eager_limit = ctx->eager_limit, .node_len = (uint32_t)node_len,
                     .nmatch = (uint32_t)nmatch };
    snprintf(h.host, sizeof(h.host), "%s", ctx->hostname);
    if (ctx->rank == 0) {
        memcpy(h.secret, ctx->auth.secret, sizeof(h.secret));
    }
    rcoll_whereis_prepare(ctx, &h.where);      /* this rank's candidate where table */
    memcpy(blob, &h, sizeof(h));
    rcoll_config_match_hashes(&ctx->config, (uint64_t *)(void *)(blob + sizeof(h)));
    memcpy(blob + sizeof(h) + hashes_len, ctx->node_name, node_len);
    size_t off = sizeof(h) + hashes_len + node_len;
    for (int i = 0; i < ctx->ntls; i++) {
        tl_entry_t e = { .len = (uint32_t)addr_len[i], .prefer_remote = (uint32_t)ctx->tl_prefer_remote[i] };
        snprintf(e.name, sizeof(e.name), "%s", ctx->tls_ops[i]->name);
        memcpy(blob + off, &e, sizeof(e));
        memcpy(blob + off + sizeof(e), addr[i], addr_len[i]);
        off += sizeof(e) + addr_len[i];
    }
    *out = blob;
    *out_len = total;
    return RCOLL_OK;
}

/*
 * Every rank takes the job's secret from rank 0's blob (rank 0 drew it in
 * context_start), then clears it there.
 */
static rcoll_status_t take_secret(rcoll_context_t *ctx, void *blob0, size_t len0)
{
    if (len0 < sizeof(addr_hdr_t)) {
        rcoll_error("rank 0 published a %zu-byte address: too short", len0);
        return RCOLL_ERR_BOOTSTRAP;
    }
    uint32_t version;
    memcpy(&version, blob0, sizeof(version));
    if (version != RCOLL_WIRE_VERSION) {
        return RCOLL_OK;            /* another layout: rcoll__addr_parse_peer says so */
    }
    uint8_t *secret = (uint8_t *)blob0 + offsetof(addr_hdr_t, secret);
    uint8_t any = 0;
    for (size_t i = 0; i < RCOLL_AUTH_SECRET_LEN; i++) {
        any |= secret[i];
    }
    if (!any) {
        rcoll_error("rank 0's address carries no job secret: use one rcoll build for the whole job");
        return RCOLL_ERR_BOOTSTRAP;
    }
    if (ctx->rank != 0) {
        rcoll__auth_adopt(&ctx->auth, secret);
    }
    memset(secret, 0, RCOLL_AUTH_SECRET_LEN);
    return RCOLL_OK;
}

/*
 * Node numbers from node names in O(p): an open-addressing table of each
 * node's first rank, hashed by name (a scan of the ranks before would be
 * O(p) per rank, O(p^2) in rcoll_init).  Slots are a power of two at least
 * 2p, so the table is never full.
 */
typedef struct {
    int     *first;     /* slot -> first rank of a node, -1: empty */
    unsigned mask;
} node_names_t;

static rcoll_status_t node_names_init(node_names_t *t, int nranks)
{
    unsigned n = 2;
    while (n < 2u * (unsigned)nranks) {
        n *= 2;
    }
    t->first = malloc(n * sizeof(int));
    if (t->first == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    memset(t->first, 0xff, n * sizeof(int));
    t->mask = n - 1;
    return RCOLL_OK;
}

/* The node of rank r (name in pas[r]): that of the first rank with the
 * same name, or a new one. */
static int node_names_find(rcoll_context_t *ctx, node_names_t *t, const peer_addrs_t *pas, int r)
{
    const peer_addrs_t *pa = &pas[r];
    uint32_t h = 2166136261u;                    /* FNV-1a */
    for (size_t i = 0; i < pa->node_len; i++) {
        h = (h ^ (uint8_t)pa->node[i]) * 16777619u;
    }
    for (unsigned s = h & t->mask;; s = (s + 1) & t->mask) {
        int q = t->first[s];
        if (q < 0) {
            t->first[s] = r;
            return ctx->nnodes++;
        }
        if (pas[q].node_len == pa->node_len && memcmp(pas[q].node, pa->node, pa->node_len) == 0) {
            return ctx->node_of[q];
        }
    }
}

/* The transport for one pair of ranks; both sides compute the same answer. */
static int choose_peer_tl(const rcoll_context_t *ctx, const peer_addrs_t *pa, int same_node)
{
    int pick = -1;
    for (int i = 0; i < ctx->ntls; i++) {
        if (pa->addr[i] == NULL) {
            continue;
        }
        int remote_pref = ctx->tl_prefer_remote[i] || pa->prefer[i];
        if (pick < 0 || (!same_node && remote_pref)) {
            pick = i;
        }
        if (same_node && pick >= 0) {
            break;     /* the first shared one (UCX) serves ranks on one node */
        }
    }
    return pick;
}

/* Exchange the blobs, number the nodes, choose a transport per peer, connect. */
static rcoll_status_t connect_peers(rcoll_context_t *ctx, const uint8_t *mine, size_t mine_len)
{
    void **blobs = calloc((size_t)ctx->size, sizeof(void *));
    size_t *lens = calloc((size_t)ctx->size, sizeof(size_t));
    addr_hdr_t *hs = calloc((size_t)ctx->size, sizeof(*hs));
    peer_addrs_t *pas = calloc((size_t)ctx->size, sizeof(*pas));
    if (blobs == NULL || lens == NULL || hs == NULL || pas == NULL) {
        free(blobs); free(lens); free(hs); free(pas);
        return RCOLL_ERR_NO_MEMORY;
    }
    RCOLL_FAULT_AT(ctx, RCOLL_FAULT_FENCE, 1);
    rcoll_status_t st = ctx->boot_ops->exchange(ctx, mine, mine_len, blobs, lens);
    if (st == RCOLL_OK) {
        st = take_secret(ctx, blobs[0], lens[0]);
    }
    ctx->nnodes = 0;
    node_names_t names = { NULL, 0 };
    if (st == RCOLL_OK) {
        st = node_names_init(&names, ctx->size);
    }
    /* First every node name, so each rank's node is known before choosing. */
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        st = rcoll__addr_parse_peer(ctx, r, blobs[r], lens[r], mine, &hs[r], &pas[r]);
        if (st == RCOLL_OK) {
            ctx->node_of[r] = node_names_find(ctx, &names, pas, r);
        }
    }
    free(names.first);
    /* The node's where table: the lowest of its ranks that offers one (whereis.h). */
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        if (ctx->node_of[r] == ctx->node_of[ctx->rank] && hs[r].where.pid > 0) {
            rcoll_whereis_offer(ctx, r, &hs[r].where);
            break;
        }
    }
    int counts[4] = { 0 };
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        int same = ctx->node_of[r] == ctx->node_of[ctx->rank];
        int i = choose_peer_tl(ctx, &pas[r], same);
        if (i < 0) {
            rcoll_error("rank %d (on %s) shares no transport with this rank (RCOLL_TRANSPORT=%s): set "
                        "the same RCOLL_TRANSPORT on every rank", r, hs[r].host, ctx->config.transport);
            st = RCOLL_ERR_BOOTSTRAP;
            break;
        }
        ctx->peer_tl[r] = ctx->tls[i];
        ctx->peer_ops[r] = ctx->tls_ops[i];
        counts[i]++;
        rcoll_debug("rank %d (%s node) uses transport %s", r, same ? "same" : "other",
                    ctx->tls_ops[i]->name);
        st = ctx->tls_ops[i]->connect(ctx->tls[i], r, pas[r].addr[i], pas[r].len[i]);
    }
    if (st == RCOLL_OK) {
        int local = 0, below = 0;
        for (int r = 0; r < ctx->size; r++) {
            local += ctx->node_of[r] == ctx->node_of[ctx->rank];
            below += r < ctx->rank && ctx->node_of[r] == ctx->node_of[ctx->rank];
        }
        if (ctx->local_size != 0 && ctx->local_size != local) {
            rcoll_debug("the launcher's local size %d, node names say %d", ctx->local_size, local);
        }
        ctx->local_size = local;
        if (ctx->local_rank < 0) {
            ctx->local_rank = below;
        }
        for (int i = 0; i < ctx->ntls; i++) {
            rcoll_info("transport %s serves %d of %d ranks", ctx->tls_ops[i]->name, counts[i], ctx->size);
        }
    }
    for (int r = 0; r < ctx->size; r++) {
        free(blobs[r]);
    }
    free(blobs);
    free(lens);
    free(hs);
    free(pas);
    return st;
}

static rcoll_status_t create_world(rcoll_context_t *ctx)
{
    int *world_ranks = malloc(sizeof(int) * (size_t)ctx->size);
    if (world_ranks == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int r = 0; r < ctx->size; r++) {
        world_ranks[r] = r;
    }
    rcoll_status_t st = rcoll_comm_create(ctx, 1, ctx->rank, ctx->size, world_ranks, &ctx->world);
    if (st != RCOLL_OK) {
        free(world_ranks);
        return st;
    }
    ctx->world->is_world = 1;
    return RCOLL_OK;
}

static void context_destroy(rcoll_context_t *ctx)
{
    for (int i = ctx->ntls - 1; i >= 0; i--) {
        ctx->tls_ops[i]->close(ctx->tls[i]);
    }
    rcoll_p2p_cleanup(ctx);
    rcoll__p2p_flow_fini(ctx);
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &ctx->zombies) {
        rcoll_list_del(pos);
        rcoll_task_t *task = rcoll_container_of(pos, rcoll_task_t, link);
        free(task->scratch);
        free(task);
    }
    rcoll_list_for_each_safe(pos, tmp, &ctx->free_tasks) {
        rcoll_list_del(pos);
        free(rcoll_container_of(pos, rcoll_task_t, link));
    }
    if (ctx->world != NULL) {
        rcoll_comm_destroy(ctx->world);
    }
    rcoll__ft_fini(ctx);
    rcoll_whereis_fini(ctx);
    rcoll_selector_fini(ctx);
    if (ctx->boot_ops != NULL) {
        ctx->boot_ops->fini(ctx);
    }
    rcoll_liveness_free(ctx->liveness);     /* the bootstrap delivers no more events */
    free(ctx->node_name);
    free(ctx->config_value);
    free(ctx->node_of);
    free(ctx->peer_tl);
    free(ctx->peer_ops);
    free(ctx->peer_failed);
    free(ctx->peer_exited);
    free(ctx);
    rcoll_log_enter(&(rcoll_log_state_t){ .level = RCOLL_LOG_WARN, .rank = -1 });   /* no context now */
}

/* A context with its configuration loaded; NULL on failure (*st says why). */
static rcoll_context_t *context_new(const char *const *config, rcoll_status_t *st)
{
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL || (ctx->config_value = calloc(1, RCOLL_CONFIG_STR_MAX)) == NULL) {
        free(ctx);
        *st = RCOLL_ERR_NO_MEMORY;
        return NULL;
    }
    rcoll_list_init(&ctx->posted_recvs);
    rcoll_list_init(&ctx->sends_wait_rtr);
    rcoll_list_init(&ctx->unexpected);
    rcoll_list_init(&ctx->active);
    rcoll_list_init(&ctx->zombies);
    rcoll_list_init(&ctx->free_tasks);
    ctx->log = (rcoll_log_state_t){ .level = RCOLL_LOG_WARN, .rank = -1 };
    rcoll_log_enter(&ctx->log);
    *st = rcoll_config_load(config, &ctx->config);
    if (*st != RCOLL_OK) {
        free(ctx->config_value);
        free(ctx);
        return NULL;
    }
    ctx->log.level = ctx->config.log_level;
    rcoll_log_enter(&ctx->log);
    rcoll__spin_resolve(ctx);      /* again once the node's ranks are known */
    return ctx;
}

/* After the bootstrap's init: transports, exchange, world, selector. */
static rcoll_status_t context_start(rcoll_context_t *ctx, const char *fn)
{
    ctx->log.rank = ctx->rank;
    rcoll_log_enter(&ctx->log);
    size_t n = (size_t)ctx->size;
    ctx->node_of = calloc(n, sizeof(int));
    ctx->peer_tl = calloc(n, sizeof(*ctx->peer_tl));
    ctx->peer_ops = calloc(n, sizeof(*ctx->peer_ops));
    ctx->peer_failed = calloc(n, sizeof(int));
    ctx->peer_exited = calloc(n, 1);
    ctx->liveness = rcoll_liveness_new();
    if (!ctx->node_of || !ctx->peer_tl || !ctx->peer_ops || !ctx->peer_failed || !ctx->peer_exited ||
        !ctx->liveness || rcoll__p2p_flow_init(ctx) != RCOLL_OK) {
        return RCOLL_ERR_NO_MEMORY;
    }
    ctx->eager_limit = ctx->config.eager_limit;
    ctx->nnodes = 1;
    rcoll_status_t st = rcoll__fault_init(ctx);
    if (st == RCOLL_OK && ctx->rank == 0) st = rcoll__auth_generate(&ctx->auth);
    if (st == RCOLL_OK && ctx->singleton) {
        ctx->local_rank = 0;
        ctx->local_size = 1;
    } else if (st == RCOLL_OK) {
        uint8_t *blob = NULL;
        size_t len = 0;
        st = open_transports(ctx);
        if (st == RCOLL_OK) st = make_address(ctx, &blob, &len);
        if (st == RCOLL_OK) st = connect_peers(ctx, blob, len);
        if (blob != NULL) {
            memset(blob, 0, sizeof(addr_hdr_t));    /* rank 0's held the secret */
        }
        free(blob);
    }
    if (st == RCOLL_OK) rcoll_whereis_init(ctx);
    if (st == RCOLL_OK) st = create_world(ctx);
    if (st == RCOLL_OK) st = rcoll_selector_init(ctx);
    if (st == RCOLL_OK) st = rcoll__comm_shm_agree(ctx->world);    /* docs/shm.md */
    if (st != RCOLL_OK) {
        rcoll_error("%s failed: %s", fn, rcoll_strerror(st));
        return st;
    }
    rcoll__spin_resolve(ctx);
    rcoll_info("initialised (%s bootstrap): rank %d of %d, %d on this node (%s), %d node(s), "
               "eager limit %zu", ctx->boot_ops->name, ctx->rank, ctx->size, ctx->local_size,
               ctx->node_name, ctx->nnodes, ctx->eager_limit);
    if (ctx->log.level >= RCOLL_LOG_INFO) {     /* hwloc loads the topology: only when shown */
        char bind[160];
        rcoll_binding_describe(bind, sizeof(bind));
        rcoll_info("%s", bind);
    }
    return RCOLL_OK;
}

RCOLL_API rcoll_status_t rcoll_init(const char *const *config, rcoll_context_t **ctxp)
{
    if (ctxp == NULL) {
        rcoll_error("rcoll_init: invalid argument: ctx is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_status_t st;
    rcoll_context_t *ctx = context_new(config, &st);
    if (ctx == NULL) {
        return st;
    }
    st = rcoll_bootstrap_pmix_init(ctx);
    if (st == RCOLL_OK) {
        st = context_start(ctx, "rcoll_init");
    }
    if (st != RCOLL_OK) {
        context_destroy(ctx);
        return st;
    }
    *ctxp = ctx;
    return RCOLL_OK;
}

RCOLL_API rcoll_status_t rcoll_init_oob(const rcoll_oob_t *oob, const char *const *config,
                                        rcoll_context_t **ctxp)
{
    if (ctxp == NULL) {
        rcoll_error("rcoll_init_oob: invalid argument: ctx is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_status_t st = rcoll_bootstrap_oob_check(oob);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll_context_t *ctx = context_new(config, &st);
    if (ctx == NULL) {
        return st;
    }
    st = rcoll_bootstrap_oob_init(ctx, oob);
    if (st == RCOLL_OK) {
        st = context_start(ctx, "rcoll_init_oob");
    }
    if (st != RCOLL_OK) {
        context_destroy(ctx);
        return st;
    }
    *ctxp = ctx;
    return RCOLL_OK;
}

RCOLL_API rcoll_status_t rcoll_finalize(rcoll_context_t *ctx)
{
    if (ctx == NULL) {
        return RCOLL_OK;
    }
    rcoll_log_enter(&ctx->log);
    /* A request the user has not completed (rcoll_wait, or rcoll_test
     * reporting it done) keeps the context: destroying it would leave the
     * handle dangling.  Nothing is changed; finish the requests and call
     * again. */
    if (ctx->ntasks_live > 0) {
        rcoll_error("rcoll_finalize: %d request(s) not yet completed by rcoll_wait or rcoll_test; "
                    "the context is left as it was", ctx->ntasks_live);
        return RCOLL_ERR_NOT_FINALIZED;
    }
    if (ctx->ncomms > 1) {
        rcoll_warn("rcoll_finalize: %d communicators were not freed", ctx->ncomms - 1);
    }
    /* Peers may still be sending to us: leave together.  A peer that leaves
     * this barrier first closes its transports while others still wait for
     * their last message from a third rank: in here only a process known to
     * have died fails the whole barrier (liveness.c); a closed transport
     * fails just what was posted to that peer. */
    rcoll_status_t st = RCOLL_OK;
    RCOLL_FAULT_AT(ctx, RCOLL_FAULT_FINALIZE, 1);
    if (ctx->size > 1) {
        ctx->finalizing = 1;
        st = rcoll_barrier(ctx->world);
    }
    context_destroy(ctx);
    return st;
}

RCOLL_API int rcoll_context_rank(const rcoll_context_t *ctx)
{
    return ctx ? ctx->rank : -1;
}

RCOLL_API int rcoll_context_size(const rcoll_context_t *ctx)
{
    return ctx ? ctx->size : -1;
}

RCOLL_API int rcoll_context_local_size(const rcoll_context_t *ctx)
{
    return ctx ? ctx->local_size : -1;
}
