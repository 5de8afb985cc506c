/*
 * context.c - rcoll_init / rcoll_finalize: configuration, PMIx bootstrap,
 * transport set-up and the world communicator.
 *
 * Address exchange: each rank publishes one blob under "rcoll.addr":
 *   a fixed header (wire version, eager limit, transport name, host name)
 *   followed by the transport's address.  After the fence every rank reads
 *   every peer's blob, checks that the ranks agree on the settings that must
 *   match, numbers the nodes by host name, and connects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "bootstrap.h"
#include "wire.h"
#include "verbs/verbs.h"

#define ADDR_KEY "rcoll.addr"

/*
 * The published blob: addr_hdr_t, then for each transport this rank opened
 * a tl_entry_t followed by that transport's address.
 */
typedef struct {
    uint32_t wire_version;
    uint32_t ntls;
    uint64_t eager_limit;
    char     host[64];
} addr_hdr_t;

typedef struct {
    char     name[16];
    uint32_t len;
    uint32_t prefer_remote;    /* 1: use it for peers on other nodes (iWARP: UCX cannot) */
} tl_entry_t;

typedef struct {
    const uint8_t *addr[4];   /* per local tls[] index; NULL if the peer lacks it */
    size_t         len[4];
    int            prefer[4];
} peer_addrs_t;

static int tl_index(const rcoll_context_t *ctx, const char *name)
{
    for (int i = 0; i < ctx->ntls; i++) {
        if (strcmp(ctx->tls_ops[i]->name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static rcoll_status_t open_one(rcoll_context_t *ctx, const char *name, int prefer_remote, int quiet)
{
    const rcoll_tl_ops_t *ops = rcoll_tl_find(name);
    if (ops == NULL) {
        rcoll_error("transport %s is not in this build", name);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    rcoll_tl_params_t params = {
        .rank = ctx->rank, .size = ctx->size, .node_of = ctx->node_of, .config = &ctx->config,
        .cb = { .arg = ctx, .recv = rcoll_p2p_recv_cb, .peer_error = rcoll_p2p_peer_error_cb },
    };
    int saved = rcoll__log_level;
    if (quiet) {
        rcoll_log_set_level(-1);
    }
    rcoll_tl_t *tl;
    rcoll_status_t st = ops->open(&params, &tl);
    rcoll_log_set_level(saved);
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
 * RCOLL_TRANSPORT=ucx or verbs: that one for every peer.  auto: UCX, plus
 * raw verbs for peers on other nodes when the device is iWARP (UCX has no
 * iWARP support), or raw verbs alone when UCX cannot start.
 */
static rcoll_status_t open_transports(rcoll_context_t *ctx)
{
    const char *want = ctx->config.transport;
    if (strcmp(want, "auto") != 0) {
        return open_one(ctx, want, 0, 0);
    }
    char why[160];
    int have_verbs = rcoll_verbs_available(&ctx->config, why, sizeof(why));
    rcoll_status_t st = open_one(ctx, "ucx", 0, have_verbs);
    if (st != RCOLL_OK && !have_verbs) {
        return st;
    }
    if (have_verbs && (st != RCOLL_OK || rcoll_verbs_is_iwarp(&ctx->config))) {
        rcoll_info("opening raw verbs on %s%s", why, st != RCOLL_OK ? " (UCX did not start)" : "");
        return open_one(ctx, "verbs", 1, 0);
    }
    return RCOLL_OK;
}

static rcoll_status_t publish_address(rcoll_context_t *ctx)
{
    size_t total = sizeof(addr_hdr_t);
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
                     .eager_limit = ctx->eager_limit };
    snprintf(h.host, sizeof(h.host), "%s", ctx->hostname);
    memcpy(blob, &h, sizeof(h));
    size_t off = sizeof(h);
    for (int i = 0; i < ctx->ntls; i++) {
        tl_entry_t e = { .len = (uint32_t)addr_len[i], .prefer_remote = (uint32_t)ctx->tl_prefer_remote[i] };
        snprintf(e.name, sizeof(e.name), "%s", ctx->tls_ops[i]->name);
        memcpy(blob + off, &e, sizeof(e));
        memcpy(blob + off + sizeof(e), addr[i], addr_len[i]);
        off += sizeof(e) + addr_len[i];
    }
    rcoll_status_t st = rcoll_bootstrap_put(ctx, ADDR_KEY, blob, total);
    free(blob);
    return st;
}

static int node_index(char (*hosts)[64], int n, const char *host)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(hosts[i], host) == 0) {
            return i;
        }
    }
    return -1;
}

/* Check a peer's blob and find the addresses of the transports we share. */
static rcoll_status_t parse_peer(rcoll_context_t *ctx, int r, const uint8_t *blob, size_t len,
                                 addr_hdr_t *h, peer_addrs_t *pa)
{
    memset(pa, 0, sizeof(*pa));
    if (len < sizeof(*h)) {
        rcoll_error("rank %d published a %zu-byte address: too short", r, len);
        return RCOLL_ERR_BOOTSTRAP;
    }
    memcpy(h, blob, sizeof(*h));
    h->host[sizeof(h->host) - 1] = '\0';
    if (h->wire_version != RCOLL_WIRE_VERSION) {
        rcoll_error("rank %d runs an rcoll with wire version %u, this rank %u: use one rcoll build "
                    "for the whole job", r, h->wire_version, RCOLL_WIRE_VERSION);
        return RCOLL_ERR_BOOTSTRAP;
    }
    if (h->eager_limit != ctx->eager_limit) {
        rcoll_error("rank %d uses an eager limit of %llu bytes, this rank %zu: set the same "
                    "RCOLL_EAGER_LIMIT (and RCOLL_TRANSPORT) on every rank", r,
                    (unsigned long long)h->eager_limit, ctx->eager_limit);
        return RCOLL_ERR_BOOTSTRAP;
    }
    size_t off = sizeof(*h);
    for (uint32_t i = 0; i < h->ntls; i++) {
        tl_entry_t e;
        if (len - off < sizeof(e)) {
            rcoll_error("rank %d published a truncated address", r);
            return RCOLL_ERR_BOOTSTRAP;
        }
        memcpy(&e, blob + off, sizeof(e));
        e.name[sizeof(e.name) - 1] = '\0';
        off += sizeof(e);
        if (len - off < e.len) {
            rcoll_error("rank %d published a truncated %s address", r, e.name);
            return RCOLL_ERR_BOOTSTRAP;
        }
        int idx = tl_index(ctx, e.name);
        if (idx >= 0) {
            pa->addr[idx] = blob + off;
            pa->len[idx] = e.len;
            pa->prefer[idx] = (int)e.prefer_remote;
        }
        off += e.len;
    }
    return RCOLL_OK;
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

static rcoll_status_t connect_peers(rcoll_context_t *ctx)
{
    char (*hosts)[64] = calloc((size_t)ctx->size, 64);
    void **blobs = calloc((size_t)ctx->size, sizeof(void *));
    size_t *lens = calloc((size_t)ctx->size, sizeof(size_t));
    if (hosts == NULL || blobs == NULL || lens == NULL) {
        free(hosts); free(blobs); free(lens);
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_status_t st = RCOLL_OK;
    ctx->nnodes = 0;
    /* First every host name, so each rank's node is known before choosing. */
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        addr_hdr_t h;
        peer_addrs_t pa;
        st = rcoll_bootstrap_get(ctx, r, ADDR_KEY, &blobs[r], &lens[r]);
        if (st == RCOLL_OK) {
            st = parse_peer(ctx, r, blobs[r], lens[r], &h, &pa);
        }
        if (st == RCOLL_OK) {
            int node = node_index(hosts, ctx->nnodes, h.host);
            if (node < 0) {
                node = ctx->nnodes++;
                memcpy(hosts[node], h.host, 64);
            }
            ctx->node_of[r] = node;
        }
    }
    int counts[4] = { 0 };
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        addr_hdr_t h;
        peer_addrs_t pa;
        st = parse_peer(ctx, r, blobs[r], lens[r], &h, &pa);
        if (st != RCOLL_OK) {
            break;
        }
        int same = ctx->node_of[r] == ctx->node_of[ctx->rank];
        int i = choose_peer_tl(ctx, &pa, same);
        if (i < 0) {
            rcoll_error("rank %d (on %s) shares no transport with this rank (RCOLL_TRANSPORT=%s): set "
                        "the same RCOLL_TRANSPORT on every rank", r, h.host, ctx->config.transport);
            st = RCOLL_ERR_BOOTSTRAP;
            break;
        }
        ctx->peer_tl[r] = ctx->tls[i];
        ctx->peer_ops[r] = ctx->tls_ops[i];
        counts[i]++;
        rcoll_debug("rank %d (%s node) uses transport %s", r, same ? "same" : "other",
                    ctx->tls_ops[i]->name);
        st = ctx->tls_ops[i]->connect(ctx->tls[i], r, pa.addr[i], pa.len[i]);
    }
    if (st == RCOLL_OK) {
        int local = 0;
        for (int r = 0; r < ctx->size; r++) {
            local += ctx->node_of[r] == ctx->node_of[ctx->rank];
        }
        if (ctx->local_size != 0 && ctx->local_size != local) {
            rcoll_debug("PMIx local size %d, host names say %d", ctx->local_size, local);
        }
        ctx->local_size = local;
        for (int i = 0; i < ctx->ntls; i++) {
            rcoll_info("transport %s serves %d of %d ranks", ctx->tls_ops[i]->name, counts[i], ctx->size);
        }
    }
    for (int r = 0; r < ctx->size; r++) {
        free(blobs[r]);
    }
    free(blobs);
    free(lens);
    free(hosts);
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
    rcoll_selector_fini(ctx);
    rcoll_bootstrap_fini(ctx);
    free(ctx->node_of);
    free(ctx->peer_tl);
    free(ctx->peer_ops);
    free(ctx->peer_failed);
    free(ctx);
}

RCOLL_API rcoll_status_t rcoll_init(const char *const *config, rcoll_context_t **ctxp)
{
    if (ctxp == NULL) {
        rcoll_error("rcoll_init: invalid argument: ctx is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_context_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_list_init(&ctx->posted_recvs);
    rcoll_list_init(&ctx->sends_wait_rtr);
    rcoll_list_init(&ctx->unexpected);
    rcoll_list_init(&ctx->active);
    rcoll_list_init(&ctx->zombies);
    rcoll_list_init(&ctx->free_tasks);

    rcoll_status_t st = rcoll_config_load(config, &ctx->config);
    if (st != RCOLL_OK) {
        free(ctx);
        return st;
    }
    rcoll_log_set_level(ctx->config.log_level);
    st = rcoll_bootstrap_init(ctx);
    if (st != RCOLL_OK) {
        context_destroy(ctx);
        return st;
    }
    rcoll_log_set_rank(ctx->rank);
    size_t n = (size_t)ctx->size;
    ctx->node_of = calloc(n, sizeof(int));
    ctx->peer_tl = calloc(n, sizeof(*ctx->peer_tl));
    ctx->peer_ops = calloc(n, sizeof(*ctx->peer_ops));
    ctx->peer_failed = calloc(n, sizeof(int));
    if (!ctx->node_of || !ctx->peer_tl || !ctx->peer_ops || !ctx->peer_failed) {
        context_destroy(ctx);
        return RCOLL_ERR_NO_MEMORY;
    }
    ctx->eager_limit = ctx->config.eager_limit;
    ctx->nnodes = 1;
    if (!ctx->singleton) {
        st = open_transports(ctx);
        if (st == RCOLL_OK) st = publish_address(ctx);
        if (st == RCOLL_OK) st = rcoll_bootstrap_fence(ctx);
        if (st == RCOLL_OK) st = connect_peers(ctx);
    }
    if (st == RCOLL_OK) st = create_world(ctx);
    if (st == RCOLL_OK) st = rcoll_selector_init(ctx);
    if (st != RCOLL_OK) {
        rcoll_error("rcoll_init failed: %s", rcoll_strerror(st));
        context_destroy(ctx);
        return st;
    }
    rcoll_info("initialised: rank %d of %d, %d on this node (%s), %d node(s), eager limit %zu",
               ctx->rank, ctx->size, ctx->local_size, ctx->hostname, ctx->nnodes, ctx->eager_limit);
    *ctxp = ctx;
    return RCOLL_OK;
}

RCOLL_API rcoll_status_t rcoll_finalize(rcoll_context_t *ctx)
{
    if (ctx == NULL) {
        return RCOLL_OK;
    }
    rcoll_status_t st = RCOLL_OK;
    if (!rcoll_list_empty(&ctx->active)) {
        rcoll_warn("rcoll_finalize: collectives are still in flight; they are abandoned");
        st = RCOLL_ERR_NOT_FINALIZED;
    }
    if (ctx->ncomms > 1) {
        rcoll_warn("rcoll_finalize: %d communicators were not freed", ctx->ncomms - 1);
    }
    /* Peers may still be sending to us: leave together. */
    if (ctx->size > 1 && st == RCOLL_OK) {
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
