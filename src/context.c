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
#include "selector.h"
#include "wire.h"

#define ADDR_KEY "rcoll.addr"

typedef struct {
    uint32_t wire_version;
    uint32_t tl_count;         /* 0 for none (singleton) */
    uint64_t eager_limit;
    char     tl_name[16];
    char     host[64];
} addr_hdr_t;

static rcoll_status_t choose_transport(rcoll_context_t *ctx, const rcoll_tl_ops_t **ops)
{
    const char *want = ctx->config.transport;
    if (strcmp(want, "auto") == 0) {
        want = "ucx";
    }
    *ops = rcoll_tl_find(want);
    if (*ops == NULL) {
        rcoll_error("RCOLL_TRANSPORT=%s: this build has no such transport", want);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    return RCOLL_OK;
}

static rcoll_status_t open_transport(rcoll_context_t *ctx)
{
    const rcoll_tl_ops_t *ops;
    rcoll_status_t st = choose_transport(ctx, &ops);
    if (st != RCOLL_OK) {
        return st;
    }
    rcoll_tl_params_t params = {
        .rank = ctx->rank, .size = ctx->size, .node_of = NULL, .config = &ctx->config,
        .cb = { .arg = ctx, .recv = rcoll_p2p_recv_cb, .peer_error = rcoll_p2p_peer_error_cb },
    };
    rcoll_tl_t *tl;
    st = ops->open(&params, &tl);
    if (st != RCOLL_OK) {
        return st;
    }
    ctx->tls_ops[0] = ops;
    ctx->tls[0] = tl;
    ctx->ntls = 1;
    size_t max = ops->max_msg_size(tl);
    if (max < RCOLL_WIRE_HDR_SIZE + RCOLL_TL_RKEY_MAX) {
        rcoll_error("transport %s carries messages of at most %zu bytes: too small", ops->name, max);
        return RCOLL_ERR_TRANSPORT;
    }
    ctx->eager_limit = ctx->config.eager_limit;
    if (ctx->eager_limit > max - RCOLL_WIRE_HDR_SIZE) {
        rcoll_warn("RCOLL_EAGER_LIMIT=%zu exceeds what transport %s sends in one message; "
                   "using %zu", ctx->eager_limit, ops->name, max - RCOLL_WIRE_HDR_SIZE);
        ctx->eager_limit = max - RCOLL_WIRE_HDR_SIZE;
    }
    return RCOLL_OK;
}

static rcoll_status_t publish_address(rcoll_context_t *ctx)
{
    const void *addr;
    size_t addr_len;
    rcoll_status_t st = ctx->tls_ops[0]->address(ctx->tls[0], &addr, &addr_len);
    if (st != RCOLL_OK) {
        return st;
    }
    size_t total = sizeof(addr_hdr_t) + addr_len;
    uint8_t *blob = calloc(1, total);
    if (blob == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    addr_hdr_t *h = (addr_hdr_t *)blob;
    h->wire_version = RCOLL_WIRE_VERSION;
    h->tl_count = 1;
    h->eager_limit = ctx->eager_limit;
    snprintf(h->tl_name, sizeof(h->tl_name), "%s", ctx->tls_ops[0]->name);
    snprintf(h->host, sizeof(h->host), "%s", ctx->hostname);
    memcpy(blob + sizeof(*h), addr, addr_len);
    st = rcoll_bootstrap_put(ctx, ADDR_KEY, blob, total);
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

static rcoll_status_t connect_peers(rcoll_context_t *ctx)
{
    char (*hosts)[64] = calloc((size_t)ctx->size, 64);
    if (hosts == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_status_t st = RCOLL_OK;
    int local = 0;
    ctx->nnodes = 0;
    for (int r = 0; r < ctx->size && st == RCOLL_OK; r++) {
        void *blob;
        size_t len;
        st = rcoll_bootstrap_get(ctx, r, ADDR_KEY, &blob, &len);
        if (st != RCOLL_OK) {
            break;
        }
        addr_hdr_t h;
        if (len < sizeof(h)) {
            rcoll_error("rank %d published a %zu-byte address: too short", r, len);
            st = RCOLL_ERR_BOOTSTRAP;
        } else {
            memcpy(&h, blob, sizeof(h));
            h.tl_name[sizeof(h.tl_name) - 1] = h.host[sizeof(h.host) - 1] = '\0';
            if (h.wire_version != RCOLL_WIRE_VERSION) {
                rcoll_error("rank %d runs an rcoll with wire version %u, this rank %u: use one "
                            "rcoll build for the whole job", r, h.wire_version, RCOLL_WIRE_VERSION);
                st = RCOLL_ERR_BOOTSTRAP;
            } else if (h.eager_limit != ctx->eager_limit) {
                rcoll_error("rank %d uses an eager limit of %llu bytes, this rank %zu: set the same "
                            "RCOLL_EAGER_LIMIT on every rank", r,
                            (unsigned long long)h.eager_limit, ctx->eager_limit);
                st = RCOLL_ERR_BOOTSTRAP;
            } else if (strcmp(h.tl_name, ctx->tls_ops[0]->name) != 0) {
                rcoll_error("rank %d uses transport %s, this rank %s: set the same RCOLL_TRANSPORT "
                            "on every rank", r, h.tl_name, ctx->tls_ops[0]->name);
                st = RCOLL_ERR_BOOTSTRAP;
            } else {
                int node = node_index(hosts, ctx->nnodes, h.host);
                if (node < 0) {
                    node = ctx->nnodes++;
                    memcpy(hosts[node], h.host, 64);
                }
                ctx->node_of[r] = node;
                ctx->peer_tl[r] = ctx->tls[0];
                ctx->peer_ops[r] = ctx->tls_ops[0];
                st = ctx->tls_ops[0]->connect(ctx->tls[0], r, (uint8_t *)blob + sizeof(h),
                                              len - sizeof(h));
            }
        }
        free(blob);
    }
    if (st == RCOLL_OK) {
        for (int r = 0; r < ctx->size; r++) {
            local += ctx->node_of[r] == ctx->node_of[ctx->rank];
        }
        if (ctx->local_size != 0 && ctx->local_size != local) {
            rcoll_debug("PMIx local size %d, host names say %d", ctx->local_size, local);
        }
        ctx->local_size = local;
    }
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
        st = open_transport(ctx);
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
    rcoll_info("initialised: rank %d of %d, %d on this node (%s), transport %s, eager limit %zu",
               ctx->rank, ctx->size, ctx->local_size, ctx->hostname,
               ctx->ntls ? ctx->tls_ops[0]->name : "none", ctx->eager_limit);
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
