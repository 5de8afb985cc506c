/* config_api.c - rcoll_config_get / rcoll_config_set on a live context. */
#include <stdio.h>
#include <string.h>
#include "core.h"

/* The answer lives in the context (valid until the next call on it), so
 * contexts driven by different threads do not share it. */
RCOLL_API const char *rcoll_config_get(const rcoll_context_t *ctx, const char *name)
{
    const rcoll_config_entry_t *e = name ? rcoll_config_find(name) : NULL;
    if (ctx == NULL || e == NULL) {
        return NULL;
    }
    rcoll_config_format(&ctx->config, e, ctx->config_value, RCOLL_CONFIG_STR_MAX);
    return ctx->config_value;
}

RCOLL_API rcoll_status_t rcoll_config_set(rcoll_context_t *ctx, const char *name, const char *value)
{
    if (ctx == NULL || name == NULL || value == NULL) {
        rcoll_error("rcoll_config_set: invalid argument: %s is NULL",
                    ctx == NULL ? "ctx" : name == NULL ? "name" : "value");
        return RCOLL_ERR_INVALID_ARG;
    }
    rcoll_log_enter(&ctx->log);
    const rcoll_config_entry_t *e = rcoll_config_find(name);
    if (e == NULL) {
        rcoll_error("rcoll_config_set: unknown setting '%s' (rcoll_info lists them)", name);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (!e->runtime) {
        rcoll_error("rcoll_config_set: RCOLL_%s can only be set before rcoll_init "
                    "(environment or rcoll_init's config)", e->name);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    rcoll_config_t next = ctx->config;
    char err[160];
    if (rcoll_config_entry_set(&next, e, value, err, sizeof(err)) != RCOLL_OK) {
        rcoll_error("rcoll_config_set: RCOLL_%s='%s' is invalid: %s", e->name, value, err);
        return RCOLL_ERR_INVALID_ARG;
    }
    /* An algorithm name must exist for its collective. */
    for (int c = 0; c < RCOLL_COLL_LAST; c++) {
        static const char *const names[RCOLL_COLL_LAST] = {
            "ALLREDUCE_ALGORITHM", "BCAST_ALGORITHM", "BARRIER_ALGORITHM", "REDUCE_ALGORITHM",
            "ALLGATHER_ALGORITHM", "REDUCE_SCATTER_ALGORITHM" };
        if (strcmp(e->name, names[c]) == 0 && value[0] != '\0' &&
            rcoll_alg_find((rcoll_coll_type_t)c, value) == NULL) {
            rcoll_error("rcoll_config_set: %s has no algorithm '%s'", rcoll_coll_name(c), value);
            return RCOLL_ERR_INVALID_ARG;
        }
    }
    ctx->config = next;
    ctx->config.gen++;      /* the selector's cached choices may no longer hold */
    rcoll__spin_resolve(ctx);
    if (e->type == RCOLL_CONFIG_LOGLEVEL) {
        ctx->log.level = ctx->config.log_level;
        rcoll_log_enter(&ctx->log);
    }
    return RCOLL_OK;
}
