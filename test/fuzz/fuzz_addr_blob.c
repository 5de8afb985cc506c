/*
 * fuzz_addr_blob.c - the parser of a peer's address blob
 * (rcoll__addr_parse_peer, src/addr_blob.c), what every rank reads from
 * every other at init.
 *
 * The parser reads a context's eager limit and transport names only: a
 * context is faked with three transports named like the real ones.
 * Input: the blob.  Oracles: an accepted blob's node name and every
 * transport address it yields lie inside the blob, the host is terminated,
 * and a transport address is only found for a transport this rank has.
 */
#include "fuzz_util.h"
#include "addr_blob.h"

#define EAGER 16384

static const rcoll_tl_ops_t fake_ops[3] = { { .name = "ucx" }, { .name = "verbs" },
                                            { .name = "loop" } };
static rcoll_context_t *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        abort();
    }
    ctx->eager_limit = EAGER;
    ctx->ntls = 3;
    for (int i = 0; i < 3; i++) {
        ctx->tls_ops[i] = &fake_ops[i];
    }
    ctx->log = (rcoll_log_state_t){ .level = RCOLL_LOG_WARN, .rank = 0 };
    rcoll_log_enter(&ctx->log);
    return 0;
}

static int inside(const uint8_t *blob, size_t len, const void *p, size_t n)
{
    const uint8_t *q = p;
    return q >= blob && q <= blob + len && n <= (size_t)(blob + len - q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *blob = malloc(size ? size : 1);     /* exact size: ASan sees any over-read */
    addr_hdr_t h;
    peer_addrs_t pa;

    FUZZ_CHECK(blob != NULL, "out of memory");
    memcpy(blob, data, size);
    if (rcoll__addr_parse_peer(ctx, 1, blob, size, &h, &pa) == RCOLL_OK) {
        FUZZ_CHECK(memchr(h.host, '\0', sizeof(h.host)) != NULL, "host not terminated");
        FUZZ_CHECK(h.eager_limit == EAGER, "accepted eager limit %llu",
                   (unsigned long long)h.eager_limit);
        FUZZ_CHECK(pa.node_len == h.node_len && inside(blob, size, pa.node, pa.node_len),
                   "node name outside the blob");
        for (int i = 0; i < 4; i++) {
            if (pa.addr[i] == NULL) {
                FUZZ_CHECK(pa.len[i] == 0, "length without an address");
                continue;
            }
            FUZZ_CHECK(i < ctx->ntls, "address for transport slot %d of %d", i, ctx->ntls);
            FUZZ_CHECK(inside(blob, size, pa.addr[i], pa.len[i]), "%s address outside the blob",
                       fake_ops[i].name);
        }
    }
    free(blob);
    return 0;
}
