/*
 * siphash.c - SipHash-2-4 (see siphash.h): four 64-bit words of state,
 * two compression rounds per 8-byte word of input, the last word padded
 * with the length in its top byte, then 0xff into v2 and four rounds.
 */
#include <string.h>
#include "siphash.h"

static inline uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));         /* one unaligned load on x86 and arm64 */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_state_t;

static inline void sip_round(sip_state_t *s)
{
    s->v0 += s->v1; s->v1 = rotl(s->v1, 13); s->v1 ^= s->v0; s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3; s->v3 = rotl(s->v3, 16); s->v3 ^= s->v2;
    s->v0 += s->v3; s->v3 = rotl(s->v3, 21); s->v3 ^= s->v0;
    s->v2 += s->v1; s->v1 = rotl(s->v1, 17); s->v1 ^= s->v2; s->v2 = rotl(s->v2, 32);
}

static inline void sip_word(sip_state_t *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

uint64_t rcoll__siphash24(const uint8_t key[RCOLL_SIPHASH_KEY_LEN], const void *msg, size_t len)
{
    const uint8_t *in = msg;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    sip_state_t s = {
        .v0 = k0 ^ 0x736f6d6570736575ULL,      /* "somepseudorandomlygeneratedbytes" */
        .v1 = k1 ^ 0x646f72616e646f6dULL,
        .v2 = k0 ^ 0x6c7967656e657261ULL,
        .v3 = k1 ^ 0x7465646279746573ULL,
    };
    size_t whole = len & ~(size_t)7;

    for (size_t off = 0; off < whole; off += 8) {
        sip_word(&s, load_le64(in + off));
    }
    uint8_t last[8] = { 0 };
    memcpy(last, in + whole, len - whole);
    last[7] = (uint8_t)len;
    sip_word(&s, load_le64(last));
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; i++) {
        sip_round(&s);
    }
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
