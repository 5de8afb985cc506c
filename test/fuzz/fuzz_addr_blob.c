/*
 * fuzz_addr_blob.c - the parser of a peer's address blob
 * (rcoll__addr_parse_peer, src/addr_blob.c), what every rank reads from
 * every other at init.
 *
 * The parser reads a context's settings, eager limit and transport names
 * only: a context is faked with the default settings and three transports
 * named like the real ones, and this rank's own blob (its setting hashes)
 * is made from it.
 * Input: byte 0: 1 = the rest is a blob without setting hashes (as before
 * they existed): the target sets its nmatch and inserts this rank's hashes
 * after its header, so that the fuzzer gets past the comparison; else the
 * rest is the blob as it is.
 * Oracles: an accepted blob carries this rank's hashes and eager limit; its
 * node name and every transport address it yields lie inside the blob; the
 * host is terminated; an address is only found for a transport this rank has.
 */
#include "fuzz_util.h"
#include "addr_blob.h"

static const rcoll_tl_ops_t fake_ops[3] = { { .name = "ucx" }, { .name = "verbs" },
                                            { .name = "loop" } };
static rcoll_context_t *ctx;
static uint8_t *mine;        /* this rank's blob: a header and its hashes */
static size_t nmatch;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_clear_env();
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL || rcoll_config_load(NULL, &ctx->config) != RCOLL_OK) {
        abort();
    }
    ctx->eager_limit = ctx->config.eager_limit;
    ctx->ntls = 3;
    for (int i = 0; i < 3; i++) {
        ctx->tls_ops[i] = &fake_ops[i];
    }
    ctx->log = (rcoll_log_state_t){ .level = RCOLL_LOG_WARN, .rank = 0 };
    rcoll_log_enter(&ctx->log);
    nmatch = (size_t)rcoll_config_match_count();
    mine = calloc(1, sizeof(addr_hdr_t) + nmatch * sizeof(uint64_t));
    if (mine == NULL) {
        abort();
    }
    rcoll_config_match_hashes(&ctx->config, (uint64_t *)(void *)(mine + sizeof(addr_hdr_t)));
    return 0;
}

static int inside(const uint8_t *blob, size_t len, const void *p, size_t n)
{
    const uint8_t *q = p;
    return q >= blob && q <= blob + len && n <= (size_t)(blob + len - q);
}

/* The blob to parse (malloc'd, exactly *len bytes: ASan sees any over-read). */
static uint8_t *make_blob(const uint8_t *data, size_t size, size_t *len)
{
    fuzz_in_t in = { data, size };
    int splice = fuzz_u8(&in) == 1;
    size_t hashes = nmatch * sizeof(uint64_t);
    if (!splice || in.left < sizeof(addr_hdr_t)) {
        hashes = 0;
    }
    *len = in.left + hashes;
    uint8_t *blob = malloc(*len ? *len : 1);
    FUZZ_CHECK(blob != NULL, "out of memory");
    if (hashes == 0) {
        memcpy(blob, in.p, in.left);
        return blob;
    }
    addr_hdr_t h;
    memcpy(&h, in.p, sizeof(h));
    h.nmatch = (uint32_t)nmatch;
    memcpy(blob, &h, sizeof(h));
    memcpy(blob + sizeof(h), mine + sizeof(h), hashes);
    memcpy(blob + sizeof(h) + hashes, in.p + sizeof(h), in.left - sizeof(h));
    return blob;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t len;
    uint8_t *blob = make_blob(data, size, &len);
    addr_hdr_t h;
    peer_addrs_t pa;

    if (rcoll__addr_parse_peer(ctx, 1, blob, len, mine, &h, &pa) == RCOLL_OK) {
        size_t hashes = nmatch * sizeof(uint64_t);
        FUZZ_CHECK(h.nmatch == nmatch && len >= sizeof(h) + hashes &&
                   memcmp(blob + sizeof(h), mine + sizeof(h), hashes) == 0,
                   "accepted a blob whose setting hashes differ");
        FUZZ_CHECK(memchr(h.host, '\0', sizeof(h.host)) != NULL, "host not terminated");
        FUZZ_CHECK(h.eager_limit == ctx->eager_limit, "accepted eager limit %llu",
                   (unsigned long long)h.eager_limit);
        FUZZ_CHECK(pa.node_len == h.node_len && inside(blob, len, pa.node, pa.node_len),
                   "node name outside the blob");
        for (int i = 0; i < 4; i++) {
            if (pa.addr[i] == NULL) {
                FUZZ_CHECK(pa.len[i] == 0, "length without an address");
                continue;
            }
            FUZZ_CHECK(i < ctx->ntls, "address for transport slot %d of %d", i, ctx->ntls);
            FUZZ_CHECK(inside(blob, len, pa.addr[i], pa.len[i]), "%s address outside the blob",
                       fake_ops[i].name);
        }
    }
    free(blob);
    return 0;
}
