/*
 * reduce_half.c - IEEE binary16 and bfloat16: conversions and reductions.
 *
 * The conversions are branch-free (selects only) so that the block loops
 * below vectorise.  They assume the default rounding mode (to nearest even).
 */
#include <string.h>
#include "reduce.h"
#include "reduce_half.h"

/* Elements converted to float per step: the inner loops have this constant
 * trip count, which lets GCC vectorise them at -O2. */
#define HALF_BLOCK 128

typedef uint16_t u16_unaligned __attribute__((aligned(1), may_alias));

static inline uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* c ? x : y without a branch; GCC would otherwise sink the float arithmetic
 * of the unused side into a branch, which stops the vectoriser. */
static inline uint32_t select_u32(int c, uint32_t x, uint32_t y)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return (x & m) | (y & ~m);
}

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag  = h & 0x7fffu;
    /* normal: move the fields and rebias the exponent (15 -> 127) */
    uint32_t bits = (mag << 13) + (112u << 23);
    /* inf/NaN: exponent 31 -> 255; NaN gets the quiet bit */
    uint32_t special = (bits + (112u << 23)) | (mag > 0x7c00u ? 0x00400000u : 0u);
    /* zero and subnormal: mag * 2^-24, exact in float */
    uint32_t sub = float_bits((float)(int32_t)mag * 0x1p-24f);

    bits = select_u32(mag >= 0x7c00u, special, bits);
    bits = select_u32(mag < 0x0400u, sub, bits);
    return bits_float(bits | sign);
}

static inline uint16_t float_to_half(float f)
{
    uint32_t x    = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag  = x & 0x7fffffffu;
    /* normal: round the 13 dropped bits to nearest even, then rebias; a
     * carry out of the significand correctly bumps the exponent */
    uint32_t normal = (mag + 0x0fffu + ((mag >> 13) & 1u) - (112u << 23)) >> 13;
    /* below 2^-14: adding 0.5f puts 2^-24 at the last place, so the FPU
     * rounds mag to a multiple of 2^-24 (result 0..0x400) */
    uint32_t sub = float_bits(bits_float(mag) + 0.5f) - 0x3f000000u;
    uint32_t nan = 0x7e00u | ((mag >> 13) & 0x03ffu);
    uint32_t h;

    h = select_u32(mag < 0x38800000u, sub, normal);
    h = select_u32(mag >= 0x477ff000u, 0x7c00u, h);   /* >= 65520 rounds to inf */
    h = select_u32(mag > 0x7f800000u, nan, h);
    return (uint16_t)(h | sign);
}

static inline float bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    return bits_float(bits | ((b & 0x7fffu) > 0x7f80u ? 0x00400000u : 0u));
}

static inline uint16_t float_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

float rcoll_half_to_float(uint16_t h)   { return half_to_float(h); }
uint16_t rcoll_float_to_half(float f)   { return float_to_half(f); }
float rcoll_bf16_to_float(uint16_t b)   { return bf16_to_float(b); }
uint16_t rcoll_float_to_bf16(float f)   { return float_to_bf16(f); }

/* x[i] = x[i] op y[i] in float; same MIN/MAX rule as the float32 kernels. */
static inline __attribute__((always_inline))
void float_op(float *restrict x, const float *restrict y, size_t n, rcoll_op_t op)
{
    size_t i;

    switch (op) {
    case RCOLL_SUM:  for (i = 0; i < n; i++) x[i] = x[i] + y[i]; break;
    case RCOLL_PROD: for (i = 0; i < n; i++) x[i] = x[i] * y[i]; break;
    case RCOLL_MIN:  for (i = 0; i < n; i++) x[i] = x[i] < y[i] ? x[i] : y[i]; break;
    case RCOLL_MAX:  for (i = 0; i < n; i++) x[i] = x[i] > y[i] ? x[i] : y[i]; break;
    default: break;  /* bitwise ops are rejected by rcoll_op_valid() */
    }
}

/* One block of n <= HALF_BLOCK elements.  Both inputs are read before dst is
 * written, so dst may be a or b.  Inlined with a constant n for full blocks. */
static inline __attribute__((always_inline))
void half_block(void *dst, const void *a, const void *b, size_t n, rcoll_op_t op, int bf16)
{
    const u16_unaligned *pa = a, *pb = b;
    u16_unaligned *pd = dst;
    float x[HALF_BLOCK], y[HALF_BLOCK];
    size_t i;

    if (bf16) {
        for (i = 0; i < n; i++) x[i] = bf16_to_float(pa[i]);
        for (i = 0; i < n; i++) y[i] = bf16_to_float(pb[i]);
    } else {
        for (i = 0; i < n; i++) x[i] = half_to_float(pa[i]);
        for (i = 0; i < n; i++) y[i] = half_to_float(pb[i]);
    }
    float_op(x, y, n, op);
    if (bf16) {
        for (i = 0; i < n; i++) pd[i] = float_to_bf16(x[i]);
    } else {
        for (i = 0; i < n; i++) pd[i] = float_to_half(x[i]);
    }
}

static inline __attribute__((always_inline))
void half_reduce(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op, int bf16)
{
    char *d = dst;
    const char *pa = a, *pb = b;
    size_t off = 0, bytes = HALF_BLOCK * sizeof(uint16_t);

    for (; off + HALF_BLOCK <= count; off += HALF_BLOCK) {
        half_block(d, pa, pb, HALF_BLOCK, op, bf16);
        d += bytes;
        pa += bytes;
        pb += bytes;
    }
    if (off < count)
        half_block(d, pa, pb, count - off, op, bf16);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)   /* GCC builtins */
#define HAVE_X86_DISPATCH 1
#include <immintrin.h>

/* float16 with the F16C conversion instructions, 8 elements at a time.
 * vcvtps2ph rounds to nearest even (imm 0) and quiets NaNs; _mm256_min_ps
 * and _mm256_max_ps are exactly (x < y ? x : y) and (x > y ? x : y). */
__attribute__((target("avx,f16c")))
static void reduce_f16_f16c(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op)
{
    char *d = dst;
    const char *pa = a, *pb = b;
    size_t i = 0;

    for (; i + 8 <= count; i += 8) {
        __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(pa + 2 * i)));
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(pb + 2 * i)));
        switch (op) {
        case RCOLL_SUM:  x = _mm256_add_ps(x, y); break;
        case RCOLL_PROD: x = _mm256_mul_ps(x, y); break;
        case RCOLL_MIN:  x = _mm256_min_ps(x, y); break;
        case RCOLL_MAX:  x = _mm256_max_ps(x, y); break;
        default: break;
        }
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < count)
        rcoll__reduce_f16_portable(d + 2 * i, pa + 2 * i, pb + 2 * i, count - i, op);
}

/* bfloat16: the portable code, also compiled for AVX2 (twice as fast). */
#define BF16_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BF16_CLONES
#endif

void rcoll__reduce_f16_portable(void *dst, const void *a, const void *b, size_t count,
                                rcoll_op_t op)
{
    half_reduce(dst, a, b, count, op, 0);
}

void rcoll__reduce_f16(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op)
{
#ifdef HAVE_X86_DISPATCH
    /* No cache of our own (threads of several contexts get here): libgcc's
     * __cpu_model is filled by its constructor, __builtin_cpu_init is an
     * idempotent guard, and each test is a load. */
    __builtin_cpu_init();
    int f16c = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");

    if (f16c) {
        reduce_f16_f16c(dst, a, b, count, op);
        return;
    }
#endif
    rcoll__reduce_f16_portable(dst, a, b, count, op);
}

BF16_CLONES
void rcoll__reduce_bf16(void *dst, const void *a, const void *b, size_t count, rcoll_op_t op)
{
    half_reduce(dst, a, b, count, op, 1);
}
