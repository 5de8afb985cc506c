/*
 * shm_copy.c - streaming copies into receive buffers (shm_copy.h).
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
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
