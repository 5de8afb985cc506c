/*
 * verbs_rkey.h - the packed remote key and the range check (pure logic).
 *
 * A packed key describes exactly the region the receiver advertised:
 *   off size field
 *     0    1 version   RCOLL_VERBS_RKEY_VERSION
 *     1    3 reserved  zero
 *     4    4 rkey      the verbs remote key
 *     8    8 addr      start of the advertised region
 *    16    8 len       its length in bytes
 * little-endian, encoded field by field.  The sender refuses any put that
 * names bytes outside [addr, addr+len): such a put is logged and never posted.
 */
#ifndef RCOLL_VERBS_RKEY_H
#define RCOLL_VERBS_RKEY_H

#include <stddef.h>
#include <stdint.h>

#define RCOLL_VERBS_RKEY_VERSION 1
#define RCOLL_VERBS_RKEY_SIZE    24

typedef struct rcoll_verbs_rkey {
    uint32_t rkey;
    uint64_t addr;
    uint64_t len;
} rcoll_verbs_rkey_t;

void rcoll__verbs_rkey_pack(const rcoll_verbs_rkey_t *k, void *buf);

/* 0 on success; -1 with the reason in err for a blob of the wrong size,
 * version or reserved bytes, or a region that wraps around. */
int rcoll__verbs_rkey_unpack(const void *buf, size_t len, rcoll_verbs_rkey_t *k,
                             char *err, size_t errlen);

/* 1 if [raddr, raddr+len) lies inside the advertised region, else 0 with why. */
int rcoll__verbs_rkey_check_range(const rcoll_verbs_rkey_t *k, uint64_t raddr, uint64_t len,
                                  char *err, size_t errlen);

/* Little-endian field helpers, shared with the address blob. */
void     rcoll__verbs_put_u16(uint8_t *p, uint16_t v);
void     rcoll__verbs_put_u32(uint8_t *p, uint32_t v);
void     rcoll__verbs_put_u64(uint8_t *p, uint64_t v);
uint16_t rcoll__verbs_get_u16(const uint8_t *p);
uint32_t rcoll__verbs_get_u32(const uint8_t *p);
uint64_t rcoll__verbs_get_u64(const uint8_t *p);

#endif
