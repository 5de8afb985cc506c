/* verbs_rkey.c - packing remote keys and checking put ranges; see verbs_rkey.h. */
#include <inttypes.h>
#include <stdio.h>
#include "verbs_rkey.h"

void rcoll__verbs_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void rcoll__verbs_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

void rcoll__verbs_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

uint16_t rcoll__verbs_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t rcoll__verbs_get_u32(const uint8_t *p)
{
    uint32_t v = 0;

    for (int i = 3; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

uint64_t rcoll__verbs_get_u64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

void rcoll__verbs_rkey_pack(const rcoll_verbs_rkey_t *k, void *buf)
{
    uint8_t *p = buf;

    p[0] = RCOLL_VERBS_RKEY_VERSION;
    p[1] = p[2] = p[3] = 0;
    rcoll__verbs_put_u32(p + 4, k->rkey);
    rcoll__verbs_put_u64(p + 8, k->addr);
    rcoll__verbs_put_u64(p + 16, k->len);
}

int rcoll__verbs_rkey_unpack(const void *buf, size_t len, rcoll_verbs_rkey_t *k,
                             char *err, size_t errlen)
{
    const uint8_t *p = buf;

    if (buf == NULL || len != RCOLL_VERBS_RKEY_SIZE) {
        snprintf(err, errlen, "remote key of %zu bytes, expected %d", len, RCOLL_VERBS_RKEY_SIZE);
        return -1;
    }
    if (p[0] != RCOLL_VERBS_RKEY_VERSION || p[1] || p[2] || p[3]) {
        snprintf(err, errlen, "remote key version %u (expected %d) or reserved bytes set",
                 p[0], RCOLL_VERBS_RKEY_VERSION);
        return -1;
    }
    k->rkey = rcoll__verbs_get_u32(p + 4);
    k->addr = rcoll__verbs_get_u64(p + 8);
    k->len  = rcoll__verbs_get_u64(p + 16);
    if (k->addr + k->len < k->addr) {
        snprintf(err, errlen, "remote key region 0x%" PRIx64 "+%" PRIu64 " wraps around",
                 k->addr, k->len);
        return -1;
    }
    return 0;
}

int rcoll__verbs_rkey_check_range(const rcoll_verbs_rkey_t *k, uint64_t raddr, uint64_t len,
                                  char *err, size_t errlen)
{
    uint64_t end = raddr + len;

    if (end < raddr || raddr < k->addr || end > k->addr + k->len) {
        snprintf(err, errlen, "write of %" PRIu64 " bytes at 0x%" PRIx64
                 " is outside the advertised region 0x%" PRIx64 "+%" PRIu64,
                 len, raddr, k->addr, k->len);
        return 0;
    }
    return 1;
}
