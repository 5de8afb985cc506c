/*
 * addr_blob.c - parse one peer's address blob (layout in addr_blob.h).
 * Moved out of context.c unchanged so that the parser of this untrusted
 * input can be fuzzed on its own (test/fuzz/fuzz_addr_blob.c).
 */
#include <stdio.h>
#include <string.h>
#include "addr_blob.h"
#include "wire.h"

static int tl_index(const rcoll_context_t *ctx, const char *name)
{
    for (int i = 0; i < ctx->ntls; i++) {
        if (strcmp(ctx->tls_ops[i]->name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* Rank r's setting hashes (after its header, checked to be there) against
 * this rank's (in mine, its own blob): the first that differs is named. */
static rcoll_status_t compare_settings(const rcoll_context_t *ctx, int r, const addr_hdr_t *h,
                                       const uint8_t *blob, const uint8_t *mine)
{
    uint32_t n = (uint32_t)rcoll_config_match_count();
    if (h->nmatch != n) {
        rcoll_error("rank %d compares %u settings, this rank %u: use one rcoll build for the "
                    "whole job", r, h->nmatch, n);
        return RCOLL_ERR_BOOTSTRAP;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t theirs, ours;
        memcpy(&theirs, blob + sizeof(*h) + i * sizeof(uint64_t), sizeof(theirs));
        memcpy(&ours, mine + sizeof(*h) + i * sizeof(uint64_t), sizeof(ours));
        if (theirs == ours) {
            continue;
        }
        const rcoll_config_entry_t *e = rcoll_config_match_entry((int)i);
        char value[RCOLL_CONFIG_STR_MAX];
        rcoll_config_format(&ctx->config, e, value, sizeof(value));
        rcoll_error("rank %d (on %s) has a different RCOLL_%s%s than this rank (here: '%s'); it "
                    "must be equal on every rank", r, h->host, e->name,
                    e->match == RCOLL_CONFIG_MATCH_FILE ? " file contents" : "", value);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

/* Check a peer's blob and find the addresses of the transports we share. */
rcoll_status_t rcoll__addr_parse_peer(const rcoll_context_t *ctx, int r, const uint8_t *blob,
                                      size_t len, const uint8_t *mine, addr_hdr_t *h,
                                      peer_addrs_t *pa)
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
    if ((len - sizeof(*h)) / sizeof(uint64_t) < h->nmatch) {
        rcoll_error("rank %d published a truncated address (setting hashes)", r);
        return RCOLL_ERR_BOOTSTRAP;
    }
    rcoll_status_t st = compare_settings(ctx, r, h, blob, mine);
    if (st != RCOLL_OK) {
        return st;
    }
    /* Equal settings, yet a transport may have lowered the limit here. */
    if (h->eager_limit != ctx->eager_limit) {
        rcoll_error("rank %d uses an eager limit of %llu bytes, this rank %zu: a transport "
                    "lowered it: set the same RCOLL_TRANSPORT on every rank", r,
                    (unsigned long long)h->eager_limit, ctx->eager_limit);
        return RCOLL_ERR_BOOTSTRAP;
    }
    size_t hashes_len = (size_t)h->nmatch * sizeof(uint64_t);
    if (len - sizeof(*h) - hashes_len < h->node_len) {
        rcoll_error("rank %d published a truncated node name", r);
        return RCOLL_ERR_BOOTSTRAP;
    }
    pa->node = (const char *)blob + sizeof(*h) + hashes_len;
    pa->node_len = h->node_len;
    size_t off = sizeof(*h) + hashes_len + h->node_len;
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
