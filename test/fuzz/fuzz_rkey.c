/*
 * fuzz_rkey.c - the rendezvous key path's parsers: a message decoded as
 * an RTR (src/wire.c) and the verbs packed key with its range check
 * (transports/verbs/verbs_rkey.c).  UCX's own key format is unpacked inside
 * UCX and not fuzzed here; the loop backend's key is reached through
 * fuzz_recv (RTR messages).
 *
 * Input: 16 bytes (the address and length of a put to check), then the
 * packed key.  The whole input is also decoded as a message.
 * Oracles: a key that unpacks packs back to the same bytes; the range check
 * agrees with exact (128-bit) arithmetic; a decoded message re-encodes to
 * its header, reserved bytes included (decode takes only 0 there), and its
 * body is what its header says.
 */
#include "fuzz_util.h"
#include "wire.h"
#include "transport.h"
#include "verbs_rkey.h"

static void check_wire(const uint8_t *data, size_t size)
{
    uint8_t *msg = malloc(size ? size : 1);     /* exact size: ASan sees any over-read */
    rcoll_wire_hdr_t h;
    const void *body;
    size_t body_len;
    char err[160] = "";

    FUZZ_CHECK(msg != NULL, "out of memory");
    memcpy(msg, data, size);
    if (rcoll_wire_decode(msg, size, &h, &body, &body_len, err, sizeof(err)) != RCOLL_OK) {
        FUZZ_CHECK(err[0] != '\0', "a rejected message needs a reason");
        free(msg);
        return;
    }
    uint8_t again[RCOLL_WIRE_HDR_SIZE];
    rcoll_wire_encode(&h, again);
    /* Every byte, the reserved ones too: decode rejects them unless 0, and
     * encode writes 0. */
    FUZZ_CHECK(memcmp(again, msg, sizeof(again)) == 0, "decode/encode changed the header");
    FUZZ_CHECK((const uint8_t *)body == msg + RCOLL_WIRE_HDR_SIZE &&
               body_len == size - RCOLL_WIRE_HDR_SIZE, "body outside the message");
    switch (h.type) {
    case RCOLL_MSG_EAGER:
    case RCOLL_MSG_PULLED:
        FUZZ_CHECK(h.len == body_len && h.rkey_len == 0, "EAGER/PULLED len %llu, body %zu",
                   (unsigned long long)h.len, body_len);
        break;
    case RCOLL_MSG_RTR:
    case RCOLL_MSG_RTS:       /* the pull protocol's offer: header + read key */
        FUZZ_CHECK(h.rkey_len == body_len && body_len > 0 && body_len <= RCOLL_TL_RKEY_MAX,
                   "RTR/RTS key %u, body %zu", h.rkey_len, body_len);
        break;
    case RCOLL_MSG_FIN:
    case RCOLL_MSG_DONE:
    case RCOLL_MSG_WITHDRAW:
    case RCOLL_MSG_DECLINE:
    case RCOLL_MSG_HOLD:
    case RCOLL_MSG_PULL:
    case RCOLL_MSG_CREDIT:
    case RCOLL_MSG_REVOKE:
        FUZZ_CHECK(body_len == 0 && h.rkey_len == 0, "type %u with a body", h.type);
        break;
    case RCOLL_MSG_SHRINK:    /* the shrink agreement: header + the failed set */
        FUZZ_CHECK(h.len == body_len && h.rkey_len == 0, "SHRINK len %llu, body %zu",
                   (unsigned long long)h.len, body_len);
        break;
    case RCOLL_MSG_WHERE_Q:   /* where-is-everyone across nodes: header + records */
    case RCOLL_MSG_WHERE_A:
        FUZZ_CHECK(h.len == body_len && body_len <= RCOLL_WIRE_WHERE_MAX && h.rkey_len == 0,
                   "WHERE len %llu, body %zu", (unsigned long long)h.len, body_len);
        break;
    default:
        FUZZ_CHECK(0, "accepted type %u", h.type);
    }
    free(msg);
}

static void check_verbs_key(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    uint64_t raddr = fuzz_u64(&in), len = fuzz_u64(&in);
    uint8_t *buf = malloc(in.left ? in.left : 1);
    rcoll_verbs_rkey_t k;
    char err[160] = "";

    FUZZ_CHECK(buf != NULL, "out of memory");
    memcpy(buf, in.p, in.left);
    if (rcoll__verbs_rkey_unpack(buf, in.left, &k, err, sizeof(err)) != 0) {
        FUZZ_CHECK(err[0] != '\0', "a rejected key needs a reason");
        free(buf);
        return;
    }
    uint8_t again[RCOLL_VERBS_RKEY_SIZE];
    rcoll__verbs_rkey_pack(&k, again);
    FUZZ_CHECK(in.left == sizeof(again) && memcmp(again, buf, sizeof(again)) == 0,
               "unpack accepted a key that does not pack back to itself");
    unsigned __int128 kend = (unsigned __int128)k.addr + k.len;
    FUZZ_CHECK(kend <= UINT64_MAX, "unpack accepted a region that wraps");
    unsigned __int128 end = (unsigned __int128)raddr + len;
    int inside = raddr >= k.addr && end <= kend && end <= UINT64_MAX;
    int ok = rcoll__verbs_rkey_check_range(&k, raddr, len, err, sizeof(err));
    FUZZ_CHECK(ok == inside, "range check says %d for a put of %llu bytes at 0x%llx into "
               "0x%llx+%llu", ok, (unsigned long long)len, (unsigned long long)raddr,
               (unsigned long long)k.addr, (unsigned long long)k.len);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_wire(data, size);
    check_verbs_key(data, size);
    return 0;
}
