/*
 * auth.c - the job's secret, the keys and tokens derived from it, the
 * replay window and the rate-limited rejection log (common/auth.h).
 *
 * Derivation: a pair key is two SipHash-2-4 values of
 *   label (up to 15 bytes, zero padded to 16) | from (8) | to (8) | half (1)
 * under the secret, half 0 and 1 giving the key's two 64-bit words.  A
 * token is one SipHash value of label | id | id, half 2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include "core.h"
#include "auth.h"
#include "wire.h"

const rcoll_auth_t rcoll__auth_none = { .ready = 1 };

rcoll_status_t rcoll__auth_random(void *buf, size_t len)
{
    uint8_t *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(p + got, len - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            rcoll_error("getrandom(%zu bytes) failed: %s: no secret for this job", len - got,
                        strerror(errno));
            return RCOLL_ERR_INTERNAL;
        }
        got += (size_t)n;
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll__auth_generate(rcoll_auth_t *a)
{
    rcoll_status_t st = rcoll__auth_random(a->secret, sizeof(a->secret));
    a->ready = st == RCOLL_OK;
    return st;
}

void rcoll__auth_adopt(rcoll_auth_t *a, const uint8_t secret[RCOLL_AUTH_SECRET_LEN])
{
    memcpy(a->secret, secret, sizeof(a->secret));
    a->ready = 1;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t derive(const rcoll_auth_t *a, const char *label, uint64_t from, uint64_t to,
                       uint8_t half)
{
    uint8_t in[33] = { 0 };
    size_t n = strlen(label);
    memcpy(in, label, n < 15 ? n : 15);
    put64(in + 16, from);
    put64(in + 24, to);
    in[32] = half;
    return rcoll__siphash24(a->secret, in, sizeof(in));
}

void rcoll__auth_pair_key(const rcoll_auth_t *a, const char *label, uint64_t from, uint64_t to,
                          uint8_t key[RCOLL_SIPHASH_KEY_LEN])
{
    put64(key, derive(a, label, from, to, 0));
    put64(key + 8, derive(a, label, from, to, 1));
}

uint64_t rcoll__auth_token(const rcoll_context_t *ctx, const char *label, uint64_t id)
{
    return derive(&ctx->auth, label, id, id, 2);
}

_Static_assert(RCOLL_AUTH_MAC_COVER >= 64 + RCOLL_WIRE_HDR_SIZE + RCOLL_TL_RKEY_MAX,
               "the MAC must cover a whole control message behind a transport header of <= 64 bytes");

uint64_t rcoll__auth_msg_mac(const uint8_t key[RCOLL_SIPHASH_KEY_LEN], const void *msg, size_t len,
                             size_t hdr)
{
    const uint8_t *m = msg;
    size_t n = hdr + RCOLL_WIRE_HDR_SIZE;
    if (len >= hdr + 4) {                    /* rcoll's header: rkey_len, 2 bytes LE at 2 */
        n += (size_t)m[hdr + 2] | (size_t)m[hdr + 3] << 8;
    }
    n = n < len ? n : len;
    n = n < RCOLL_AUTH_MAC_COVER ? n : RCOLL_AUTH_MAC_COVER;
    uint8_t in[RCOLL_AUTH_MAC_COVER + 8];
    uint64_t len64 = len;
    memcpy(in, m, n);
    memcpy(in + n, &len64, 8);
    return rcoll__siphash24(key, in, n + 8);
}

int rcoll__auth_equal64(uint64_t a, uint64_t b)
{
    uint64_t d = a ^ b;
    d |= d >> 32;
    d |= d >> 16;
    d |= d >> 8;
    return (d & 0xff) == 0;
}

int rcoll__auth_window_accept(rcoll_auth_window_t *w, uint64_t seq)
{
    if (seq == 0) {
        return 0;
    }
    if (seq > w->top) {
        uint64_t shift = seq - w->top;
        w->seen = shift >= RCOLL_AUTH_WINDOW ? 0 : w->seen << shift;
        w->seen |= 1;
        w->top = seq;
        return 1;
    }
    uint64_t age = w->top - seq;
    if (age >= RCOLL_AUTH_WINDOW || (w->seen >> age) & 1) {
        return 0;
    }
    w->seen |= (uint64_t)1 << age;
    return 1;
}

void rcoll__auth_reject(rcoll_auth_limiter_t *lim, const char *fmt, ...)
{
    double now = rcoll_time_now();
    if (now < lim->next) {
        lim->suppressed++;
        return;
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (lim->suppressed > 0) {
        rcoll_error("%s (and %u more rejected in the last second)", msg, lim->suppressed);
    } else {
        rcoll_error("%s", msg);
    }
    lim->suppressed = 0;
    lim->next = now + 1.0;
}
