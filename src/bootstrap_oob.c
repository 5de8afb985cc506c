/*
 * bootstrap_oob.c - the bootstrap of rcoll_init_oob: rank and size from the
 * caller's rcoll_oob_t, the address exchange through its all-gather.
 *
 * Blobs may differ in length between ranks while the all-gather moves the
 * same number of bytes from each, so the exchange is two all-gathers: the
 * lengths, then every blob padded to the longest.  The caller's function is
 * called only from here, i.e. only inside rcoll_init_oob.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bootstrap.h"

typedef struct {
    int   (*allgather)(const void *in, void *out, size_t len, void *arg);
    void   *arg;
} oob_state_t;

static const rcoll_bootstrap_ops_t oob_ops;

rcoll_status_t rcoll_bootstrap_oob_check(const rcoll_oob_t *oob)
{
    if (oob == NULL) {
        rcoll_error("rcoll_init_oob: invalid argument: oob is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    if (oob->size < 1) {
        rcoll_error("rcoll_init_oob: invalid argument: oob->size is %d, must be at least 1",
                    oob->size);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (oob->rank < 0 || oob->rank >= oob->size) {
        rcoll_error("rcoll_init_oob: invalid argument: oob->rank %d is outside 0..%d (oob->size %d)",
                    oob->rank, oob->size - 1, oob->size);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (oob->allgather == NULL) {
        rcoll_error("rcoll_init_oob: invalid argument: oob->allgather is NULL");
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll_bootstrap_oob_init(rcoll_context_t *ctx, const rcoll_oob_t *oob)
{
    oob_state_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    s->allgather = oob->allgather;
    s->arg = oob->arg;
    ctx->boot_ops = &oob_ops;
    ctx->boot = s;
    gethostname(ctx->hostname, sizeof(ctx->hostname) - 1);
    ctx->node_name = strdup(oob->node != NULL ? oob->node : ctx->hostname);
    if (ctx->node_name == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    ctx->rank = oob->rank;
    ctx->size = oob->size;
    ctx->local_rank = -1;        /* derived from the node names after the exchange */
    ctx->local_size = 0;
    ctx->singleton = oob->size == 1;
    rcoll_debug("oob bootstrap: rank %d of %d, node '%s'", ctx->rank, ctx->size, ctx->node_name);
    return RCOLL_OK;
}

/* One call of the caller's all-gather; logs a failure with what it moved. */
static rcoll_status_t call_allgather(rcoll_context_t *ctx, const void *in, void *out, size_t len,
                                     const char *what)
{
    oob_state_t *s = ctx->boot;
    int rc = s->allgather(in, out, len, s->arg);
    if (rc != 0) {
        rcoll_error("rcoll_init_oob: the caller's allgather returned %d gathering %s (%zu bytes "
                    "per rank, %d ranks)", rc, what, len, ctx->size);
        return RCOLL_ERR_BOOTSTRAP;
    }
    if (memcmp((const char *)out + (size_t)ctx->rank * len, in, len) != 0) {
        rcoll_error("rcoll_init_oob: the caller's allgather did not place this rank's %s at index "
                    "%d of the output (rank order expected)", what, ctx->rank);
        return RCOLL_ERR_BOOTSTRAP;
    }
    return RCOLL_OK;
}

static rcoll_status_t oob_exchange(rcoll_context_t *ctx, const void *blob, size_t len,
                                   void **blobs, size_t *lens)
{
    size_t n = (size_t)ctx->size, max = 0;
    uint64_t mine = len, *all = calloc(n, sizeof(*all));
    uint8_t *in = NULL, *out = NULL;
    rcoll_status_t st = all ? call_allgather(ctx, &mine, all, sizeof(mine), "blob lengths")
                            : RCOLL_ERR_NO_MEMORY;

    for (size_t r = 0; r < n && st == RCOLL_OK; r++) {
        if (all[r] > (uint64_t)(SIZE_MAX / 2 / n)) {
            rcoll_error("rcoll_init_oob: rank %zu announced a %llu-byte address: too large", r,
                        (unsigned long long)all[r]);
            st = RCOLL_ERR_BOOTSTRAP;
        }
        max = (size_t)all[r] > max ? (size_t)all[r] : max;
    }
    if (st == RCOLL_OK) {
        in = calloc(1, max ? max : 1);
        out = malloc(n * (max ? max : 1));
        st = in && out ? RCOLL_OK : RCOLL_ERR_NO_MEMORY;
    }
    if (st == RCOLL_OK) {
        memcpy(in, blob, len);
        st = call_allgather(ctx, in, out, max, "addresses");
    }
    for (size_t r = 0; r < n && st == RCOLL_OK; r++) {
        lens[r] = (size_t)all[r];
        blobs[r] = malloc(lens[r] ? lens[r] : 1);
        if (blobs[r] == NULL) {
            st = RCOLL_ERR_NO_MEMORY;
            break;
        }
        memcpy(blobs[r], out + r * max, lens[r]);
    }
    free(all);
    free(in);
    free(out);
    return st;
}

static void oob_fini(rcoll_context_t *ctx)
{
    free(ctx->boot);
    ctx->boot = NULL;
}

static const rcoll_bootstrap_ops_t oob_ops = {
    .name     = "oob",
    .exchange = oob_exchange,
    .fini     = oob_fini,
};
