/*
 * addr_blob.h - the address blob each rank publishes at init (context.c
 * makes it and exchanges it through the bootstrap), and the parser of one
 * peer's blob.  A blob comes from another process: it is untrusted input.
 *
 * The blob: addr_hdr_t (rank 0's carries the job's secret), nmatch uint64_t setting hashes, node_len bytes of
 * node name, then for each transport this rank opened a tl_entry_t
 * followed by that transport's address.  Private to src/.
 */
#ifndef RCOLL_ADDR_BLOB_H
#define RCOLL_ADDR_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include "core.h"

/* Where a rank's candidate where-is-everyone table is (whereis.h): its
 * process, the descriptor's number there and the nonce in the table's
 * header; all zero when it has none.  Only ranks of one node use it. */
typedef struct {
    int64_t  pid;
    int32_t  fd;
    uint32_t reserved;         /* zero */
    uint64_t nonce;
} addr_where_t;

typedef struct {
    uint32_t wire_version;
    uint32_t ntls;
    uint64_t eager_limit;
    char     host[64];         /* for messages */
    uint32_t node_len;         /* ranks with equal node names share a node */
    uint32_t nmatch;           /* setting hashes after the header */
    uint8_t  secret[16];       /* rank 0: the job's secret (auth.h); others: zero */
    addr_where_t where;        /* this rank's candidate where table (whereis_table.c) */
} addr_hdr_t;

typedef struct {
    char     name[16];
    uint32_t len;
    uint32_t prefer_remote;    /* 1: use it for peers on other nodes (iWARP: UCX cannot) */
} tl_entry_t;

typedef struct {
    const char    *node;      /* in the blob, node_len bytes, not terminated */
    size_t         node_len;
    const uint8_t *addr[4];   /* per local tls[] index; NULL if the peer lacks it */
    size_t         len[4];
    int            prefer[4];
} peer_addrs_t;

/*
 * Check rank r's blob (len bytes) against this context (wire version, the
 * must-match setting hashes of mine, this rank's own blob, and the eager
 * limit) and find the addresses of the transports both opened (ctx->tls_ops
 * names them).  On success *h is the header (host terminated) and *pa points
 * into blob; else RCOLL_ERR_BOOTSTRAP, or RCOLL_ERR_INVALID_ARG for a
 * setting that differs, logged.  Reads ctx->config, ctx->eager_limit,
 * ctx->ntls and ctx->tls_ops[] only.
 */
rcoll_status_t rcoll__addr_parse_peer(const rcoll_context_t *ctx, int r, const uint8_t *blob,
                                      size_t len, const uint8_t *mine, addr_hdr_t *h,
                                      peer_addrs_t *pa);

#endif
