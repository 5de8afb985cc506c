/*
 * shm_copy.c - streaming copies into receive buffers (shm_copy.h).
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#if defined(__has_attribute)
#if __has_attribute(target)
#include <immintrin.h>
#define HAVE_COPY_TWO 1
#endif
#endif
#endif
#include "shm_copy.h"
#include "stream_min.h"

size_t rcoll__shm_stream_min(const rcoll_config_t *cfg)
{
    if (cfg->shm_stream_min == RCOLL_CONFIG_SIZE_AUTO) {
        return rcoll_stream_min_auto();
    }
    if (cfg->shm_stream_min == RCOLL_CONFIG_SIZE_OFF) {
        return SIZE_MAX;
    }
    return cfg->shm_stream_min;
}

void rcoll__shm_copy_stream(void *dst, const void *src, size_t len)
{
#ifdef HAVE_STREAM
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63);

    if (len < 2 * 64 + head) {
        memcpy(d, s, len);
        return;
    }
    memcpy(d, s, head);          /* up to the first whole line */
    d += head;
    s += head;
    len -= head;
    for (; len >= 64; d += 64, s += 64, len -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        _mm_stream_si128((__m128i *)(void *)d, a);
        _mm_stream_si128((__m128i *)(void *)(d + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + 48), e);
    }
    memcpy(d, s, len);           /* the tail of the last line */
    _mm_sfence();
#else
    memcpy(dst, src, len);
#endif
}

#ifdef HAVE_COPY_TWO
/* 128 bytes at a time: four 32-byte loads, each stored to both places (to
 * `seg` streaming where `stream`: the caller has aligned it to a line). */
__attribute__((target("avx2")))
static size_t copy_two_avx2(char *seg, char *priv, const char *src, size_t len, int stream)
{
    size_t i = 0;
    for (; i + 128 <= len; i += 128) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 32));
        __m256i x2 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 64));
        __m256i x3 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 96));
        if (stream) {
            _mm256_stream_si256((__m256i *)(void *)(seg + i), x0);
            _mm256_stream_si256((__m256i *)(void *)(seg + i + 32), x1);
            _mm256_stream_si256((__m256i *)(void *)(seg + i + 64), x2);
            _mm256_stream_si256((__m256i *)(void *)(seg + i + 96), x3);
        } else {
            _mm256_storeu_si256((__m256i *)(void *)(seg + i), x0);
            _mm256_storeu_si256((__m256i *)(void *)(seg + i + 32), x1);
            _mm256_storeu_si256((__m256i *)(void *)(seg + i + 64), x2);
            _mm256_storeu_si256((__m256i *)(void *)(seg + i + 96), x3);
        }
        _mm256_storeu_si256((__m256i *)(void *)(priv + i), x0);
        _mm256_storeu_si256((__m256i *)(void *)(priv + i + 32), x1);
        _mm256_storeu_si256((__m256i *)(void *)(priv + i + 64), x2);
        _mm256_storeu_si256((__m256i *)(void *)(priv + i + 96), x3);
    }
    _mm256_zeroupper();
    return i;
}
#endif

void rcoll__shm_copy_two(void *seg, void *priv, const void *src, size_t len, int stream)
{
#ifdef HAVE_COPY_TWO
    __builtin_cpu_init();   /* idempotent; libgcc's constructor has run it */
    if (len >= 4 * 128 && __builtin_cpu_supports("avx2")) {
        char *a = seg, *b = priv;
        const char *s = src;
        size_t head = stream ? (size_t)(-(uintptr_t)a & 63) : 0;
        memcpy(a, s, head);             /* up to the first whole line */
        memcpy(b, s, head);
        size_t done = head + copy_two_avx2(a + head, b + head, s + head, len - head, stream);
        memcpy(a + done, s + done, len - done);
        memcpy(b + done, s + done, len - done);
        if (stream) {
            _mm_sfence();
        }
        return;
    }
#endif
    rcoll__shm_copy_kind(seg, src, len, stream);
    memcpy(priv, src, len);
}
