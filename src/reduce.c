/*
 * reduce.c - local reduction kernels: the table of (dtype, op) kernels and
 * the dispatch.  float16/bfloat16 live in reduce_half.c.
 *
 * Each (dtype, op) pair has three kernels, all over restrict pointers so that
 * GCC vectorises them at -O2 (the inner loop runs a compile-time constant
 * number of iterations, which the -O2 "very cheap" cost model accepts):
 *   _2  : x[i] = x[i] op y[i]   (inout, in)
 *   _2r : x[i] = y[i] op x[i]   (inout, in) - for dst == b; MIN/MAX on
 *         floats are not commutative when a NaN is involved
 *   _3  : d[i] = a[i] op b[i]   (dst, a, b)
 *   _2c, _2rc, _3c: the same, each result also written to a copy c in the
 *         same pass (plain or non-temporal stores for c)
 * Elements are accessed through aligned(1) types: any buffer alignment works.
 * Signed integer SUM/PROD/bitwise ops use the unsigned kernels (two's
 * complement wraparound without signed-overflow UB); only MIN/MAX are signed.
 */
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#endif
#include "reduce.h"
#include "reduce_half.h"

#define REDUCE_BLOCK 64   /* elements per inner loop */

typedef int8_t   i8_u  __attribute__((aligned(1), may_alias));
typedef uint8_t  u8_u  __attribute__((aligned(1), may_alias));
typedef int16_t  i16_u __attribute__((aligned(1), may_alias));
typedef uint16_t u16_u __attribute__((aligned(1), may_alias));
typedef int32_t  i32_u __attribute__((aligned(1), may_alias));
typedef uint32_t u32_u __attribute__((aligned(1), may_alias));
typedef int64_t  i64_u __attribute__((aligned(1), may_alias));
typedef uint64_t u64_u __attribute__((aligned(1), may_alias));
typedef float    f32_u __attribute__((aligned(1), may_alias));
typedef double   f64_u __attribute__((aligned(1), may_alias));

/* 1u * promotes narrow unsigned types to unsigned int, not int: no overflow */
#define OP_SUM(x, y)   ((x) + (y))
#define OP_PROD(x, y)  (1u * (x) * (y))
#define OP_FPROD(x, y) ((x) * (y))
#define OP_MIN(x, y)   ((x) < (y) ? (x) : (y))
#define OP_MAX(x, y)   ((x) > (y) ? (x) : (y))
#define OP_BAND(x, y)  ((x) & (y))
#define OP_BOR(x, y)   ((x) | (y))
#define OP_BXOR(x, y)  ((x) ^ (y))

/* bytes (a multiple of 16) from src to dst: plain stores, or where
 * `stream` non-temporal ones (dst 16-byte aligned; the caller fences) */
static inline void copy_block(void *dst, const void *src, size_t bytes, int stream)
{
#ifdef HAVE_STREAM
    if (stream) {
        for (size_t o = 0; o < bytes; o += 16) {
            _mm_stream_si128((__m128i *)(void *)((char *)dst + o),
                             _mm_loadu_si128((const __m128i *)(const void *)((const char *)src + o)));
        }
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

typedef void (*reduce2_fn)(void *restrict inout, const void *restrict in, size_t n);
typedef void (*reduce3_fn)(void *restrict dst, const void *restrict a,
                           const void *restrict b, size_t n);
typedef void (*reduce3c_fn)(void *dst, const void *a, const void *b, void *copy, size_t n,
                            int stream);

/* Each kernel is also compiled for AVX2, picked at load time (an ifunc) on
 * CPUs that have it: SSE2, the x86-64 baseline, stores 16 bytes a cycle,
 * which bounded a 64 KiB float32 sum to about 30 GB/s, slower than the
 * cross-core copy feeding it.  Element-wise IEEE operations give the same
 * bits at any vector width, so ranks on different CPUs still agree. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RCOLL_KERNEL __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef RCOLL_KERNEL
#define RCOLL_KERNEL
#endif

/* Defines reduce_<name>_2, reduce_<name>_2r and reduce_<name>_3 for element
 * type T (one of the *_u types above) and the binary OP. */
#define DEFINE_KERNELS(name, T, OP)                                             \
RCOLL_KERNEL                                                                    \
static void reduce_##name##_2(void *restrict inout, const void *restrict in,   \
                              size_t n)                                         \
{                                                                               \
    T *restrict x = inout;                                                      \
    const T *restrict y = in;                                                   \
    size_t i = 0, j;                                                            \
    for (; i + REDUCE_BLOCK <= n; i += REDUCE_BLOCK) {                          \
        T *restrict bx = x + i;                                                 \
        const T *restrict by = y + i;                                           \
        for (j = 0; j < REDUCE_BLOCK; j++)                                      \
            bx[j] = OP(bx[j], by[j]);                                           \
    }                                                                           \
    for (; i < n; i++)                                                          \
        x[i] = OP(x[i], y[i]);                                                  \
}                                                                               \
RCOLL_KERNEL                                                                    \
static void reduce_##name##_2r(void *restrict inout, const void *restrict in,  \
                               size_t n)                                        \
{                                                                               \
    T *restrict x = inout;                                                      \
    const T *restrict y = in;                                                   \
    size_t i = 0, j;                                                            \
    for (; i + REDUCE_BLOCK <= n; i += REDUCE_BLOCK) {                          \
        T *restrict bx = x + i;                                                 \
        const T *restrict by = y + i;                                           \
        for (j = 0; j < REDUCE_BLOCK; j++)                                      \
            bx[j] = OP(by[j], bx[j]);                                           \
    }                                                                           \
    for (; i < n; i++)                                                          \
        x[i] = OP(y[i], x[i]);                                                  \
}                                                                               \
RCOLL_KERNEL                                                                    \
static void reduce_##name##_3(void *restrict dst, const void *restrict a,      \
                              const void *restrict b, size_t n)                 \
{                                                                               \
    T *restrict d = dst;                                                        \
    const T *restrict x = a, *restrict y = b;                                   \
    size_t i = 0, j;                                                            \
    for (; i + REDUCE_BLOCK <= n; i += REDUCE_BLOCK) {                          \
        T *restrict bd = d + i;                                                 \
        const T *restrict bx = x + i, *restrict by = y + i;                     \
        for (j = 0; j < REDUCE_BLOCK; j++)                                      \
            bd[j] = OP(bx[j], by[j]);                                           \
    }                                                                           \
    for (; i < n; i++)                                                          \
        d[i] = OP(x[i], y[i]);                                                  \
}

/* _2c, _2rc and _3c: the _2, _2r and _3 kernels that also write every
 * result to c.  Plain: both stores in the same loop.  Streaming: the block
 * COPY_LAG blocks back is streamed from d after each block (its lines are
 * in L1 by then; reading a block straight after writing it stalled on
 * store forwarding: 3x slower). */
#define COPY_LAG 4
#define COPY_KERNEL(fn, T, QA, QB, DECL, SETUP, STMT, TAIL)                    \
RCOLL_KERNEL                                                                    \
static void fn(void *restrict dst, const void *QA a, const void *QB b,         \
               void *restrict copy, size_t n, int stream)                       \
{                                                                               \
    DECL                                                                        \
    T *restrict c = copy;                                                       \
    size_t i = 0, j, s = 0;                                                     \
    if (!stream) {                                                              \
        for (; i + REDUCE_BLOCK <= n; i += REDUCE_BLOCK) {                      \
            SETUP                                                               \
            T *restrict bc = c + i;                                             \
            for (j = 0; j < REDUCE_BLOCK; j++) {                                \
                STMT                                                            \
                bc[j] = bd[j];                                                  \
            }                                                                   \
        }                                                                       \
    } else {                                                                    \
        for (; i + REDUCE_BLOCK <= n; i += REDUCE_BLOCK) {                      \
            SETUP                                                               \
            for (j = 0; j < REDUCE_BLOCK; j++) {                                \
                STMT                                                            \
            }                                                                   \
            if (i >= s + COPY_LAG * REDUCE_BLOCK) {                             \
                copy_block(c + s, d + s, sizeof(T) * REDUCE_BLOCK, 1);          \
                s += REDUCE_BLOCK;                                              \
            }                                                                   \
        }                                                                       \
        copy_block(c + s, d + s, sizeof(T) * (i - s), 1);                       \
    }                                                                           \
    for (; i < n; i++) {                                                        \
        TAIL                                                                    \
        c[i] = d[i];                                                            \
    }                                                                           \
}

/* _3c: d, a, b distinct; _2c: d is a; _2rc: d is b (restrict on the
 * parameters: without it GCC does not vectorise). */
#define DEFINE_COPY_KERNELS(name, T, OP)                                        \
COPY_KERNEL(reduce_##name##_3c, T, restrict, restrict,                          \
            T *restrict d = dst; const T *restrict x = a;                       \
            const T *restrict y = b;,                                           \
            T *restrict bd = d + i; const T *restrict bx = x + i;               \
            const T *restrict by = y + i;,                                      \
            bd[j] = OP(bx[j], by[j]);,                                          \
            d[i] = OP(x[i], y[i]);)                                             \
COPY_KERNEL(reduce_##name##_2c, T, , restrict,                                  \
            T *restrict d = dst; const T *restrict y = b; (void)a;,             \
            T *restrict bd = d + i; const T *restrict by = y + i;,              \
            bd[j] = OP(bd[j], by[j]);,                                          \
            d[i] = OP(d[i], y[i]);)                                             \
COPY_KERNEL(reduce_##name##_2rc, T, restrict, ,                                 \
            T *restrict d = dst; const T *restrict x = a; (void)b;,             \
            T *restrict bd = d + i; const T *restrict bx = x + i;,              \
            bd[j] = OP(bx[j], bd[j]);,                                          \
            d[i] = OP(x[i], d[i]);)

#define DEFINE_ALL(name, T, OP) DEFINE_KERNELS(name, T, OP) DEFINE_COPY_KERNELS(name, T, OP)

DEFINE_ALL(u8_sum,   u8_u,  OP_SUM)
DEFINE_ALL(u8_prod,  u8_u,  OP_PROD)
DEFINE_ALL(i8_min,   i8_u,  OP_MIN)
DEFINE_ALL(i8_max,   i8_u,  OP_MAX)
DEFINE_ALL(u8_min,   u8_u,  OP_MIN)
DEFINE_ALL(u8_max,   u8_u,  OP_MAX)
DEFINE_ALL(u8_band,  u8_u,  OP_BAND)
DEFINE_ALL(u8_bor,   u8_u,  OP_BOR)
DEFINE_ALL(u8_bxor,  u8_u,  OP_BXOR)

DEFINE_ALL(u16_sum,  u16_u, OP_SUM)
DEFINE_ALL(u16_prod, u16_u, OP_PROD)
DEFINE_ALL(i16_min,  i16_u, OP_MIN)
DEFINE_ALL(i16_max,  i16_u, OP_MAX)
DEFINE_ALL(u16_min,  u16_u, OP_MIN)
DEFINE_ALL(u16_max,  u16_u, OP_MAX)
DEFINE_ALL(u16_band, u16_u, OP_BAND)
DEFINE_ALL(u16_bor,  u16_u, OP_BOR)
DEFINE_ALL(u16_bxor, u16_u, OP_BXOR)

DEFINE_ALL(u32_sum,  u32_u, OP_SUM)
DEFINE_ALL(u32_prod, u32_u, OP_PROD)
DEFINE_ALL(i32_min,  i32_u, OP_MIN)
DEFINE_ALL(i32_max,  i32_u, OP_MAX)
DEFINE_ALL(u32_min,  u32_u, OP_MIN)
DEFINE_ALL(u32_max,  u32_u, OP_MAX)
DEFINE_ALL(u32_band, u32_u, OP_BAND)
DEFINE_ALL(u32_bor,  u32_u, OP_BOR)
DEFINE_ALL(u32_bxor, u32_u, OP_BXOR)

DEFINE_ALL(u64_sum,  u64_u, OP_SUM)
DEFINE_ALL(u64_prod, u64_u, OP_PROD)
DEFINE_ALL(i64_min,  i64_u, OP_MIN)
DEFINE_ALL(i64_max,  i64_u, OP_MAX)
DEFINE_ALL(u64_min,  u64_u, OP_MIN)
DEFINE_ALL(u64_max,  u64_u, OP_MAX)
DEFINE_ALL(u64_band, u64_u, OP_BAND)
DEFINE_ALL(u64_bor,  u64_u, OP_BOR)
DEFINE_ALL(u64_bxor, u64_u, OP_BXOR)

DEFINE_ALL(f32_sum,  f32_u, OP_SUM)
DEFINE_ALL(f32_prod, f32_u, OP_FPROD)
DEFINE_ALL(f32_min,  f32_u, OP_MIN)
DEFINE_ALL(f32_max,  f32_u, OP_MAX)

DEFINE_ALL(f64_sum,  f64_u, OP_SUM)
DEFINE_ALL(f64_prod, f64_u, OP_FPROD)
DEFINE_ALL(f64_min,  f64_u, OP_MIN)
DEFINE_ALL(f64_max,  f64_u, OP_MAX)

struct reduce_kernel {
    reduce2_fn  k2, k2r;
    reduce3_fn  k3;
    reduce3c_fn k2c, k2rc, k3c;
};

#define K(name) { reduce_##name##_2, reduce_##name##_2r, reduce_##name##_3, \
                  reduce_##name##_2c, reduce_##name##_2rc, reduce_##name##_3c }

/* float16/bfloat16 rows are empty: they go to reduce_half.c. */
static const struct reduce_kernel kernels[RCOLL_DATATYPE_LAST][RCOLL_OP_LAST] = {
    [RCOLL_INT8]    = { K(u8_sum),  K(u8_prod),  K(i8_min),  K(i8_max),
                        K(u8_band),  K(u8_bor),  K(u8_bxor) },
    [RCOLL_UINT8]   = { K(u8_sum),  K(u8_prod),  K(u8_min),  K(u8_max),
                        K(u8_band),  K(u8_bor),  K(u8_bxor) },
    [RCOLL_INT16]   = { K(u16_sum), K(u16_prod), K(i16_min), K(i16_max),
                        K(u16_band), K(u16_bor), K(u16_bxor) },
    [RCOLL_UINT16]  = { K(u16_sum), K(u16_prod), K(u16_min), K(u16_max),
                        K(u16_band), K(u16_bor), K(u16_bxor) },
    [RCOLL_INT32]   = { K(u32_sum), K(u32_prod), K(i32_min), K(i32_max),
                        K(u32_band), K(u32_bor), K(u32_bxor) },
    [RCOLL_UINT32]  = { K(u32_sum), K(u32_prod), K(u32_min), K(u32_max),
                        K(u32_band), K(u32_bor), K(u32_bxor) },
    [RCOLL_INT64]   = { K(u64_sum), K(u64_prod), K(i64_min), K(i64_max),
                        K(u64_band), K(u64_bor), K(u64_bxor) },
    [RCOLL_UINT64]  = { K(u64_sum), K(u64_prod), K(u64_min), K(u64_max),
                        K(u64_band), K(u64_bor), K(u64_bxor) },
    [RCOLL_FLOAT32] = { K(f32_sum), K(f32_prod), K(f32_min), K(f32_max) },
    [RCOLL_FLOAT64] = { K(f64_sum), K(f64_prod), K(f64_min), K(f64_max) },
};

static size_t elem_size(rcoll_datatype_t dtype)
{
    switch (dtype) {
    case RCOLL_INT8:  case RCOLL_UINT8:                         return 1;
    case RCOLL_INT16: case RCOLL_UINT16:
    case RCOLL_FLOAT16: case RCOLL_BFLOAT16:                    return 2;
    case RCOLL_INT32: case RCOLL_UINT32: case RCOLL_FLOAT32:    return 4;
    case RCOLL_INT64: case RCOLL_UINT64: case RCOLL_FLOAT64:    return 8;
    default:                                                    return 0;
    }
}

int rcoll_op_valid(rcoll_datatype_t dtype, rcoll_op_t op)
{
    if ((unsigned)dtype >= RCOLL_DATATYPE_LAST || (unsigned)op >= RCOLL_OP_LAST)
        return 0;
    if (op == RCOLL_BAND || op == RCOLL_BOR || op == RCOLL_BXOR)
        return dtype <= RCOLL_UINT64;
    return 1;
}

/* dst == a == b: the restrict kernels need distinct buffers, so copy the
 * input through a small stack block. */
static void reduce_self(void *buf, size_t count, size_t size, reduce2_fn k2)
{
    unsigned char tmp[512];
    unsigned char *p = buf;
    size_t per = sizeof(tmp) / size;

    while (count > 0) {
        size_t n = count < per ? count : per;
        memcpy(tmp, p, n * size);
        k2(p, tmp, n);
        p += n * size;
        count -= n;
    }
}

void rcoll_reduce_local3(void *dst, const void *a, const void *b, size_t count,
                         rcoll_datatype_t dtype, rcoll_op_t op)
{
    const struct reduce_kernel *k;

    if (count == 0 || !rcoll_op_valid(dtype, op))
        return;   /* callers validate; invalid input leaves dst untouched */
    if (dtype == RCOLL_FLOAT16) {
        rcoll__reduce_f16(dst, a, b, count, op);
        return;
    }
    if (dtype == RCOLL_BFLOAT16) {
        rcoll__reduce_bf16(dst, a, b, count, op);
        return;
    }
    k = &kernels[dtype][op];
    if (dst == a && dst == b)
        reduce_self(dst, count, elem_size(dtype), k->k2);
    else if (dst == a)
        k->k2(dst, b, count);
    else if (dst == b)
        k->k2r(dst, a, count);
    else
        k->k3(dst, a, b, count);
}

/* float16/bfloat16: reduced (reduce_half.c) a block at a time, each block
 * then copied while it is in this core's L1 cache. */
static void reduce_half_copy(void *dst, const void *a, const void *b, void *copy, size_t count,
                             rcoll_datatype_t dtype, rcoll_op_t op, int stream)
{
    enum { BLK = 1024 };   /* elements: 2 KiB */
    char *d = dst, *c = copy;
    const char *x = a, *y = b;

    for (size_t i = 0; i < count; i += BLK) {
        size_t n = count - i < BLK ? count - i : BLK, off = i * 2;
        size_t whole = stream ? n * 2 / 16 * 16 : 0;   /* c + off is aligned as c is */
        if (dtype == RCOLL_FLOAT16) {
            rcoll__reduce_f16(d + off, x + off, y + off, n, op);
        } else {
            rcoll__reduce_bf16(d + off, x + off, y + off, n, op);
        }
        copy_block(c + off, d + off, whole, 1);
        memcpy(c + off + whole, d + off + whole, n * 2 - whole);
    }
}

void rcoll_reduce_local3_copy(void *dst, const void *a, const void *b, void *copy, size_t count,
                              rcoll_datatype_t dtype, rcoll_op_t op, int stream)
{
    if (count == 0 || !rcoll_op_valid(dtype, op))
        return;   /* callers validate; invalid input leaves dst and copy untouched */
#ifdef HAVE_STREAM
    stream = stream && ((uintptr_t)copy & 15) == 0;
#else
    stream = 0;
#endif
    if (dtype == RCOLL_FLOAT16 || dtype == RCOLL_BFLOAT16) {
        reduce_half_copy(dst, a, b, copy, count, dtype, op, stream);
    } else if (dst == a && dst == b) {
        rcoll_reduce_local3(dst, a, b, count, dtype, op);   /* no one pass: rare */
        memcpy(copy, dst, count * elem_size(dtype));
        return;
    } else {
        const struct reduce_kernel *k = &kernels[dtype][op];
        reduce3c_fn fn = dst == a ? k->k2c : dst == b ? k->k2rc : k->k3c;
        fn(dst, a, b, copy, count, stream);
    }
#ifdef HAVE_STREAM
    if (stream)
        _mm_sfence();   /* the copy is ordered before whatever publishes it */
#endif
}

void rcoll_reduce_local(void *inout, const void *in, size_t count,
                        rcoll_datatype_t dtype, rcoll_op_t op)
{
    rcoll_reduce_local3(inout, inout, in, count, dtype, op);
}
