/*
 * test_reduce.c - unit tests for the local reduction kernels (src/reduce.h).
 *
 * Every kernel result is compared with a naive reference written here
 * independently: integers in 64-bit unsigned arithmetic truncated to the
 * element size, float32 in double rounded once to float, float16/bfloat16
 * decoded and encoded with frexp/ldexp/nearbyint.
 *
 * `test_reduce --bench [MiB]` instead prints the throughput of the SUM kernels
 * (default 4 MiB buffers).
 */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reduce.h"
#include "reduce_half.h"

#define NDTYPES RCOLL_DATATYPE_LAST
#define NOPS    RCOLL_OP_LAST

static const char *const dtype_names[NDTYPES] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64",
};
static const char *const op_names[NOPS] = {
    "sum", "prod", "min", "max", "band", "bor", "bxor",
};
static const size_t dtype_sizes[NDTYPES] = { 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int is_signed_int(rcoll_datatype_t t)
{
    return t == RCOLL_INT8 || t == RCOLL_INT16 || t == RCOLL_INT32 || t == RCOLL_INT64;
}

static int is_int(rcoll_datatype_t t)
{
    return t <= RCOLL_UINT64;
}

/* ---- reference float16 / bfloat16 codec ------------------------------- */

struct fmt {
    int mbits;      /* stored significand bits */
    int emin;       /* exponent of the smallest normal */
    int bias;
    unsigned emax_field;   /* all-ones exponent field */
};

static const struct fmt fmt_half = { 10, -14, 15, 31 };
static const struct fmt fmt_bf16 = { 7, -126, 127, 255 };

static double ref_decode(const struct fmt *f, uint16_t h)
{
    unsigned field = (h >> f->mbits) & f->emax_field;
    unsigned man = h & ((1u << f->mbits) - 1);
    double s = (h & 0x8000) ? -1.0 : 1.0;

    if (field == f->emax_field)
        return man ? NAN : s * INFINITY;
    if (field == 0)
        return s * ldexp(man, f->emin - f->mbits);
    return s * ldexp(man + (1u << f->mbits), (int)field - f->bias - f->mbits);
}

/* Round v to the format, to nearest even; NaN gives the default quiet NaN. */
static uint16_t ref_encode(const struct fmt *f, double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    uint16_t inf = (uint16_t)(sign | (f->emax_field << f->mbits));
    unsigned field, man;
    int e = 0, E;
    double q;

    if (isnan(v))
        return (uint16_t)(inf | (1u << (f->mbits - 1)));
    v = fabs(v);
    if (isinf(v))
        return inf;
    if (v != 0)
        frexp(v, &e);                   /* v = m * 2^e, m in [0.5, 1) */
    E = e - 1;
    if (v == 0 || E < f->emin)
        E = f->emin;
    q = nearbyint(ldexp(v, f->mbits - E));
    if (q >= ldexp(1, f->mbits + 1)) {  /* rounded up to the next binade */
        q /= 2;
        E++;
    }
    if (q < ldexp(1, f->mbits)) {
        field = 0;
        man = (unsigned)q;
    } else {
        field = (unsigned)(E + f->bias);
        man = (unsigned)(q - ldexp(1, f->mbits));
    }
    if (field >= f->emax_field)
        return inf;
    return (uint16_t)(sign | (field << f->mbits) | man);
}

/* ---- reference reduction --------------------------------------------- */

static uint64_t load_bits(const unsigned char *p, size_t size)
{
    uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64 = 0;

    switch (size) {
    case 1: memcpy(&u8, p, 1);  return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static void store_bits(unsigned char *p, size_t size, uint64_t v)
{
    uint8_t u8 = (uint8_t)v; uint16_t u16 = (uint16_t)v; uint32_t u32 = (uint32_t)v;

    switch (size) {
    case 1: memcpy(p, &u8, 1);  break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8);  break;
    }
}

static int64_t sign_extend(uint64_t v, size_t size)
{
    unsigned shift = (unsigned)(64 - 8 * size);
    return (int64_t)(v << shift) >> shift;   /* arithmetic shift in GCC */
}

static double ref_fop(rcoll_op_t op, double a, double b)
{
    switch (op) {
    case RCOLL_SUM:  return a + b;
    case RCOLL_PROD: return a * b;
    case RCOLL_MIN:  return a < b ? a : b;
    default:         return a > b ? a : b;
    }
}

static uint64_t ref_op(rcoll_datatype_t t, rcoll_op_t op, uint64_t a, uint64_t b)
{
    size_t size = dtype_sizes[t];

    if (is_int(t)) {
        int64_t sa = sign_extend(a, size), sb = sign_extend(b, size);
        switch (op) {
        case RCOLL_SUM:  return a + b;
        case RCOLL_PROD: return a * b;
        case RCOLL_MIN:  return is_signed_int(t) ? (sa < sb ? a : b) : (a < b ? a : b);
        case RCOLL_MAX:  return is_signed_int(t) ? (sa > sb ? a : b) : (a > b ? a : b);
        case RCOLL_BAND: return a & b;
        case RCOLL_BOR:  return a | b;
        default:         return a ^ b;
        }
    }
    if (t == RCOLL_FLOAT16 || t == RCOLL_BFLOAT16) {
        const struct fmt *f = t == RCOLL_FLOAT16 ? &fmt_half : &fmt_bf16;
        return ref_encode(f, ref_fop(op, ref_decode(f, (uint16_t)a), ref_decode(f, (uint16_t)b)));
    }
    if (t == RCOLL_FLOAT32) {
        float fa, fb, r;
        uint32_t ua = (uint32_t)a, ub = (uint32_t)b, ur;
        memcpy(&fa, &ua, 4);
        memcpy(&fb, &ub, 4);
        if (op == RCOLL_MIN || op == RCOLL_MAX)
            r = (float)ref_fop(op, fa, fb);     /* exact: one of the inputs */
        else
            r = (float)ref_fop(op, (double)fa, (double)fb);  /* innocuous double rounding */
        memcpy(&ur, &r, 4);
        return ur;
    } else {
        double da, db, r;
        uint64_t ur;
        memcpy(&da, &a, 8);
        memcpy(&db, &b, 8);
        r = ref_fop(op, da, db);
        memcpy(&ur, &r, 8);
        return ur;
    }
}

static int bits_isnan(rcoll_datatype_t t, uint64_t v)
{
    switch (t) {
    case RCOLL_FLOAT16:  return (v & 0x7fff) > 0x7c00;
    case RCOLL_BFLOAT16: return (v & 0x7fff) > 0x7f80;
    case RCOLL_FLOAT32:  return (v & 0x7fffffffu) > 0x7f800000u;
    case RCOLL_FLOAT64:  return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default:             return 0;
    }
}

/* 1 if got matches want (NaN: any quiet NaN for 16-bit floats, any NaN else) */
static int result_ok(rcoll_datatype_t t, uint64_t got, uint64_t want)
{
    if (bits_isnan(t, want)) {
        if (t == RCOLL_FLOAT16)
            return bits_isnan(t, got) && (got & 0x0200);
        if (t == RCOLL_BFLOAT16)
            return bits_isnan(t, got) && (got & 0x0040);
        return bits_isnan(t, got);
    }
    return got == want;
}

/* Random element: integers any bits; floats mostly ordinary numbers of
 * moderate range, with random bit patterns (NaN, inf, subnormals) mixed in. */
static uint64_t random_elem(rcoll_datatype_t t)
{
    uint64_t r = rng();
    int special = (r & 7) == 0;

    r = rng();
    switch (t) {
    case RCOLL_FLOAT16:
    case RCOLL_BFLOAT16: {
        const struct fmt *f = t == RCOLL_FLOAT16 ? &fmt_half : &fmt_bf16;
        double v = ldexp((double)(r >> 40) - 8388608.0, -20);
        return special ? (uint16_t)r : ref_encode(f, v);
    }
    case RCOLL_FLOAT32: {
        float v = (float)ldexp((double)(int32_t)(r >> 32), -24);
        uint32_t u;
        memcpy(&u, &v, 4);
        return special ? (uint32_t)r : u;
    }
    case RCOLL_FLOAT64: {
        double v = ldexp((double)(int64_t)r, -50);
        uint64_t u;
        memcpy(&u, &v, 8);
        return special ? r : u;
    }
    default:
        return r;
    }
}

/* ---- the dtype x op x count x alignment x aliasing sweep ---------------- */

enum mode {
    MODE_LOCAL,         /* reduce_local(x, b) */
    MODE_LOCAL_SELF,    /* reduce_local(x, x) */
    MODE_L3,            /* reduce_local3(d, a, b) */
    MODE_L3_DST_A,      /* reduce_local3(a, a, b) */
    MODE_L3_DST_B,      /* reduce_local3(b, a, b) */
    MODE_L3_ALL,        /* reduce_local3(a, a, a) */
    MODE_L3C,           /* reduce_local3_copy(d, a, b, c, 0) */
    MODE_L3C_DST_A,     /* reduce_local3_copy(a, a, b, c, 0) */
    MODE_L3C_DST_B,     /* reduce_local3_copy(b, a, b, c, 0) */
    MODE_L3C_ALL,       /* reduce_local3_copy(a, a, a, c, 0) */
    MODE_L3C_S,         /* the same four, streaming the copy */
    MODE_L3C_DST_A_S,
    MODE_L3C_DST_B_S,
    MODE_L3C_ALL_S,
    MODE_LAST
};
static const char *const mode_names[MODE_LAST] = {
    "local", "local(x,x)", "local3", "local3(a,a,b)", "local3(b,a,b)", "local3(a,a,a)",
    "local3_copy", "local3_copy(a,a,b)", "local3_copy(b,a,b)", "local3_copy(a,a,a)",
    "local3_copy stream", "local3_copy(a,a,b) stream", "local3_copy(b,a,b) stream",
    "local3_copy(a,a,a) stream",
};

#define GUARD 16
#define GUARD_BYTE 0xa5

struct buf {
    unsigned char *base;   /* GUARD + off bytes before data, GUARD after */
    unsigned char *data;
    size_t bytes;
};

static void buf_init(struct buf *b, size_t bytes, size_t off)
{
    b->base = malloc(bytes + off + 2 * GUARD);
    assert_non_null(b->base);
    memset(b->base, GUARD_BYTE, bytes + off + 2 * GUARD);
    b->data = b->base + GUARD + off;
    b->bytes = bytes;
}

static void buf_check_guards(const struct buf *b, const char *what)
{
    const unsigned char *p;

    for (p = b->base; p < b->data; p++)
        if (*p != GUARD_BYTE)
            fail_msg("%s: byte %td before the buffer was written", what, b->data - p);
    for (p = b->data + b->bytes; p < b->data + b->bytes + GUARD; p++)
        if (*p != GUARD_BYTE)
            fail_msg("%s: byte %td after the buffer was written", what, p - (b->data + b->bytes));
}

/* Set to test the portable float16 code instead of the one the CPU selects. */
static int f16_portable;

static void do_local3(void *dst, const void *a, const void *b, size_t count,
                      rcoll_datatype_t t, rcoll_op_t op)
{
    if (f16_portable && t == RCOLL_FLOAT16)
        rcoll__reduce_f16_portable(dst, a, b, count, op);
    else
        rcoll_reduce_local3(dst, a, b, count, t, op);
}

static void do_local(void *inout, const void *in, size_t count, rcoll_datatype_t t, rcoll_op_t op)
{
    if (f16_portable && t == RCOLL_FLOAT16)
        rcoll__reduce_f16_portable(inout, inout, in, count, op);
    else
        rcoll_reduce_local(inout, in, count, t, op);
}

static void run_case(rcoll_datatype_t t, rcoll_op_t op, size_t count, enum mode mode,
                     size_t off_d, size_t off_a, size_t off_b)
{
    size_t size = dtype_sizes[t], bytes = count * size, i;
    struct buf d, a, b, c;
    unsigned char *want = malloc(bytes + 1), *dst;
    int copies = mode >= MODE_L3C, stream = mode >= MODE_L3C_S;
    enum mode shape = !copies ? mode : (enum mode)(MODE_L3 + (mode - MODE_L3C) % 4);
    char what[160];

    assert_non_null(want);
    buf_init(&d, bytes, off_d);
    buf_init(&a, bytes, off_a);
    buf_init(&b, bytes, off_b);
    buf_init(&c, bytes, off_d);   /* off_d 0: 16-byte aligned, streamed */
    for (i = 0; i < count; i++) {
        uint64_t x = random_elem(t), y = random_elem(t);
        store_bits(a.data + i * size, size, x);
        store_bits(b.data + i * size, size, y);
        x = load_bits(a.data + i * size, size);   /* truncated to the element */
        y = load_bits(b.data + i * size, size);
        if (shape == MODE_LOCAL_SELF || shape == MODE_L3_ALL)
            y = x;
        store_bits(want + i * size, size, ref_op(t, op, x, y));
    }
    if (copies) {
        void *out = shape == MODE_L3 ? d.data : shape == MODE_L3_DST_B ? b.data : a.data;
        rcoll_reduce_local3_copy(out, a.data, shape == MODE_L3_ALL ? a.data : b.data, c.data,
                                 count, t, op, stream);
    }
    switch (copies ? MODE_LAST : mode) {
    case MODE_LAST:       dst = shape == MODE_L3 ? d.data : shape == MODE_L3_DST_B ? b.data : a.data;
                          break;
    case MODE_LOCAL:      do_local(a.data, b.data, count, t, op); dst = a.data; break;
    case MODE_LOCAL_SELF: do_local(a.data, a.data, count, t, op); dst = a.data; break;
    case MODE_L3:         do_local3(d.data, a.data, b.data, count, t, op); dst = d.data; break;
    case MODE_L3_DST_A:   do_local3(a.data, a.data, b.data, count, t, op); dst = a.data; break;
    case MODE_L3_DST_B:   do_local3(b.data, a.data, b.data, count, t, op); dst = b.data; break;
    default:              do_local3(a.data, a.data, a.data, count, t, op); dst = a.data; break;
    }
    snprintf(what, sizeof(what), "%s %s count %zu %s offsets %zu/%zu/%zu",
             dtype_names[t], op_names[op], count, mode_names[mode], off_d, off_a, off_b);
    for (i = 0; i < count; i++) {
        uint64_t got = load_bits(dst + i * size, size);
        uint64_t w = load_bits(want + i * size, size);
        if (!result_ok(t, got, w))
            fail_msg("%s: element %zu is 0x%llx, expected 0x%llx", what, i,
                     (unsigned long long)got, (unsigned long long)w);
        if (copies && memcmp(c.data + i * size, dst + i * size, size) != 0)
            fail_msg("%s: the copy's element %zu is 0x%llx, the result 0x%llx", what, i,
                     (unsigned long long)load_bits(c.data + i * size, size),
                     (unsigned long long)got);
    }
    buf_check_guards(&a, what);
    buf_check_guards(&b, what);
    buf_check_guards(&d, what);
    buf_check_guards(&c, what);
    if (!copies) {
        for (i = 0; i < bytes; i++)
            if (c.data[i] != GUARD_BYTE)
                fail_msg("%s: the unused copy buffer was written", what);
    }
    free(c.base);
    free(want);
    free(a.base);
    free(b.base);
    free(d.base);
}

static void sweep(unsigned t_first, unsigned t_last)
{
    static const size_t counts[] = { 1, 2, 7, 63, 64, 65, 129, 1023, 4099 };
    unsigned t, op, c, m, k;

    for (t = t_first; t <= t_last; t++)
        for (op = 0; op < NOPS; op++) {
            if (!rcoll_op_valid(t, op))
                continue;
            for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (m = 0; m < MODE_LAST; m++)
                    for (k = 0; k < 4; k++)
                        run_case(t, op, counts[c], m, (k * 3) % 8, (k * 5 + 1) % 8,
                                 (k * 7 + 6) % 8);
        }
}

static void test_all_dtypes_ops(void **state)
{
    (void)state;
    sweep(0, NDTYPES - 1);
}

static void test_f16_portable(void **state)
{
    (void)state;
    f16_portable = 1;
    sweep(RCOLL_FLOAT16, RCOLL_FLOAT16);
    f16_portable = 0;
}

/* ---- targeted integer cases ------------------------------------------ */

/* Runs a op b over 200 copies (vector and scalar paths) and checks each. */
static void check_pair(rcoll_datatype_t t, rcoll_op_t op, uint64_t a, uint64_t b, uint64_t want)
{
    enum { N = 200 };
    size_t size = dtype_sizes[t], i;
    unsigned char x[N * 8 + 1], y[N * 8 + 1];

    for (i = 0; i < N; i++) {
        store_bits(x + 1 + i * size, size, a);
        store_bits(y + i * size, size, b);
    }
    rcoll_reduce_local(x + 1, y, N, t, op);
    for (i = 0; i < N; i++) {
        uint64_t got = load_bits(x + 1 + i * size, size);
        if (!result_ok(t, got, want & (size == 8 ? ~0ull : (1ull << (8 * size)) - 1)))
            fail_msg("%s %s 0x%llx, 0x%llx: element %zu is 0x%llx, expected 0x%llx",
                     dtype_names[t], op_names[op], (unsigned long long)a,
                     (unsigned long long)b, i, (unsigned long long)got,
                     (unsigned long long)want);
    }
}

static void test_integer_wrap_and_sign(void **state)
{
    (void)state;
    check_pair(RCOLL_INT8, RCOLL_SUM, 0x7f, 0x01, 0x80);                 /* 127 + 1 = -128 */
    check_pair(RCOLL_INT8, RCOLL_PROD, 0x80, 0xff, 0x80);                /* -128 * -1 = -128 */
    check_pair(RCOLL_UINT8, RCOLL_PROD, 0xff, 0xff, 0x01);
    check_pair(RCOLL_UINT16, RCOLL_PROD, 0xffff, 0xffff, 0x0001);        /* int promotion trap */
    check_pair(RCOLL_INT16, RCOLL_SUM, 0x7fff, 0x7fff, 0xfffe);
    check_pair(RCOLL_INT32, RCOLL_SUM, 0x7fffffff, 1, 0x80000000);
    check_pair(RCOLL_INT32, RCOLL_PROD, 0x80000000, 0xffffffff, 0x80000000);
    check_pair(RCOLL_UINT32, RCOLL_PROD, 0x10000, 0x10000, 0);
    check_pair(RCOLL_INT64, RCOLL_SUM, 0x7fffffffffffffffull, 1, 0x8000000000000000ull);
    check_pair(RCOLL_INT64, RCOLL_PROD, 0x4000000000000000ull, 4, 0);
    check_pair(RCOLL_UINT64, RCOLL_SUM, ~0ull, 2, 1);
    /* signed vs unsigned comparisons */
    check_pair(RCOLL_INT8, RCOLL_MIN, 0x80, 0x7f, 0x80);
    check_pair(RCOLL_INT8, RCOLL_MAX, 0xff, 0x01, 0x01);
    check_pair(RCOLL_UINT8, RCOLL_MIN, 0x80, 0x7f, 0x7f);
    check_pair(RCOLL_UINT8, RCOLL_MAX, 0xff, 0x01, 0xff);
    check_pair(RCOLL_INT16, RCOLL_MIN, 0x8000, 0x7fff, 0x8000);
    check_pair(RCOLL_UINT16, RCOLL_MIN, 0x8000, 0x7fff, 0x7fff);
    check_pair(RCOLL_INT32, RCOLL_MAX, 0xffffffff, 0, 0);
    check_pair(RCOLL_UINT32, RCOLL_MAX, 0xffffffff, 0, 0xffffffff);
    check_pair(RCOLL_INT64, RCOLL_MIN, 0x8000000000000000ull, 0x7fffffffffffffffull,
               0x8000000000000000ull);
    check_pair(RCOLL_UINT64, RCOLL_MIN, 0x8000000000000000ull, 0x7fffffffffffffffull,
               0x7fffffffffffffffull);
    check_pair(RCOLL_UINT16, RCOLL_BXOR, 0xff00, 0x0ff0, 0xf0f0);
    check_pair(RCOLL_INT32, RCOLL_BAND, 0xff00ff00, 0x0ff00ff0, 0x0f000f00);
    check_pair(RCOLL_UINT64, RCOLL_BOR, 0xf0ull << 56, 0x0f, (0xf0ull << 56) | 0x0f);
}

/* float16 / bfloat16 sums that must round to nearest even */
static void test_half_sum_rounding(void **state)
{
    (void)state;
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x3c00, 0x1000, 0x3c00);   /* 1 + 2^-11: tie, stays even */
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x3c01, 0x1000, 0x3c02);   /* 1+2^-10 + 2^-11: tie, up */
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x7bff, 0x4c00, 0x7c00);   /* 65504 + 16: overflow */
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x7bff, 0x4bfe, 0x7bff);   /* 65504 + 15.97 */
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x0001, 0x0001, 0x0002);   /* subnormals */
    check_pair(RCOLL_FLOAT16, RCOLL_SUM, 0x7c00, 0xfc00, 0x7e00);   /* inf - inf = NaN */
    check_pair(RCOLL_FLOAT16, RCOLL_PROD, 0x0200, 0x3800, 0x0100);  /* subnormal * 0.5 */
    check_pair(RCOLL_FLOAT16, RCOLL_PROD, 0x0001, 0x3800, 0x0000);  /* 2^-25: tie to 0 */
    check_pair(RCOLL_FLOAT16, RCOLL_PROD, 0x0003, 0x3800, 0x0002);  /* 1.5 * 2^-24: tie to 2 */
    check_pair(RCOLL_FLOAT16, RCOLL_MIN, 0x8000, 0x0000, 0x0000);   /* a < b ? a : b */
    check_pair(RCOLL_FLOAT16, RCOLL_MAX, 0xc000, 0x3c00, 0x3c00);
    check_pair(RCOLL_BFLOAT16, RCOLL_SUM, 0x3f80, 0x3b80, 0x3f80);  /* 1 + 2^-8: tie, even */
    check_pair(RCOLL_BFLOAT16, RCOLL_SUM, 0x3f81, 0x3b80, 0x3f82);
    check_pair(RCOLL_BFLOAT16, RCOLL_SUM, 0x7f7f, 0x7f7f, 0x7f80);  /* overflow to inf */
    check_pair(RCOLL_BFLOAT16, RCOLL_PROD, 0x0001, 0x3f00, 0x0000); /* 2^-134: tie to 0 */
    check_pair(RCOLL_BFLOAT16, RCOLL_SUM, 0xff80, 0x7f80, 0x7fc0);  /* -inf + inf = NaN */
    check_pair(RCOLL_FLOAT32, RCOLL_SUM, 0x3f800000, 0x33800000, 0x3f800000);
    check_pair(RCOLL_FLOAT32, RCOLL_MIN, 0x7fc00000, 0x3f800000, 0x3f800000); /* min(NaN, 1) = 1 */
    check_pair(RCOLL_FLOAT32, RCOLL_MIN, 0x3f800000, 0x7fc00000, 0x7fc00000); /* min(1, NaN) = NaN */
    check_pair(RCOLL_FLOAT64, RCOLL_MAX, 0xbff0000000000000ull, 0x3ff0000000000000ull,
               0x3ff0000000000000ull);
}

/* ---- conversions ------------------------------------------------------ */

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

typedef float (*to_float_fn)(uint16_t);
typedef uint16_t (*from_float_fn)(float);

/* Every 16-bit pattern: decode exactly, and encode back to the same bits
 * (NaN: a quiet NaN of the same sign, the very same bits if it was quiet). */
static void roundtrip_all(const struct fmt *f, to_float_fn to, from_float_fn from,
                          const char *name)
{
    uint16_t quiet = (uint16_t)(1u << (f->mbits - 1));
    uint32_t i;

    for (i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i, back;
        float v = to(h);
        double want = ref_decode(f, h);

        if (isnan(want)) {
            if (!isnan(v) || !(fbits(v) & 0x00400000u) || (fbits(v) >> 31) != (h >> 15u))
                fail_msg("%s 0x%04x: decoded to 0x%08x, want a quiet NaN of the same sign",
                         name, h, fbits(v));
            back = from(v);
            if (ref_decode(f, back) == ref_decode(f, back) || !(back & quiet) ||
                (back & 0x8000) != (h & 0x8000))
                fail_msg("%s 0x%04x: NaN came back as 0x%04x", name, h, back);
            if ((h & quiet) && back != h)
                fail_msg("%s 0x%04x: quiet NaN payload lost (0x%04x)", name, h, back);
            continue;
        }
        if (fbits(v) != fbits((float)want))
            fail_msg("%s 0x%04x: decoded to %a, want %a", name, h, (double)v, want);
        back = from(v);
        if (back != h)
            fail_msg("%s 0x%04x -> %a -> 0x%04x", name, h, (double)v, back);
    }
}

static void check_encode(const struct fmt *f, from_float_fn from, const char *name, float x)
{
    uint16_t got = from(x), want = ref_encode(f, x);

    if (isnan(x)) {
        if (!isnan(ref_decode(f, got)) || !(got & (1u << (f->mbits - 1))) ||
            (got >> 15) != (fbits(x) >> 31))
            fail_msg("%s(NaN 0x%08x) = 0x%04x, want a quiet NaN", name, fbits(x), got);
        return;
    }
    if (got != want)
        fail_msg("%s(%a [0x%08x]) = 0x%04x, want 0x%04x", name, (double)x, fbits(x), got, want);
}

/* Around every representable value: the value, its float neighbours, the
 * exact midpoint to the next value and the midpoint's neighbours; both signs.
 * Then a sweep over the float bit patterns. */
static void encode_all(const struct fmt *f, from_float_fn from, const char *name)
{
    uint16_t max_finite = (uint16_t)((f->emax_field << f->mbits) - 1);
    uint32_t h, u;
    int s;

    for (h = 0; h <= max_finite; h++) {
        double lo = ref_decode(f, (uint16_t)h);
        double hi = h == max_finite ? ldexp(1, f->bias + 1) : ref_decode(f, (uint16_t)(h + 1));
        float pts[6];
        int i;

        pts[0] = (float)lo;
        pts[1] = nextafterf((float)lo, INFINITY);
        pts[2] = nextafterf((float)lo, 0);
        pts[3] = (float)((lo + hi) / 2);
        pts[4] = nextafterf(pts[3], INFINITY);
        pts[5] = nextafterf(pts[3], 0);
        assert_true((double)pts[3] == (lo + hi) / 2);   /* the midpoint is a float */
        for (s = 0; s < 2; s++)
            for (i = 0; i < 6; i++)
                check_encode(f, from, name, s ? -pts[i] : pts[i]);
    }
    for (u = 0; u < 0xffffffffu - 4099; u += 4099)
        check_encode(f, from, name, bitsf(u));
    check_encode(f, from, name, bitsf(0x7f800001u));   /* signaling NaN */
    check_encode(f, from, name, bitsf(0xff800001u));
    check_encode(f, from, name, bitsf(0x7fffffffu));
    check_encode(f, from, name, bitsf(0x7f800000u));   /* inf */
    check_encode(f, from, name, bitsf(0xff800000u));
    check_encode(f, from, name, bitsf(0x7f7fffffu));   /* FLT_MAX */
    check_encode(f, from, name, bitsf(0x00000001u));   /* smallest float subnormal */
    check_encode(f, from, name, bitsf(0x80000000u));   /* -0 */
}

static void test_half_conversions(void **state)
{
    (void)state;
    roundtrip_all(&fmt_half, rcoll_half_to_float, rcoll_float_to_half, "half");
    encode_all(&fmt_half, rcoll_float_to_half, "float_to_half");
    /* a few spelled out, so a bug in the reference cannot hide one */
    assert_int_equal(rcoll_float_to_half(65504.0f), 0x7bff);
    assert_int_equal(rcoll_float_to_half(65519.99f), 0x7bff);
    assert_int_equal(rcoll_float_to_half(65520.0f), 0x7c00);
    assert_int_equal(rcoll_float_to_half(1e10f), 0x7c00);
    assert_int_equal(rcoll_float_to_half(-1e10f), 0xfc00);
    assert_int_equal(rcoll_float_to_half(0x1p-25f), 0x0000);
    assert_int_equal(rcoll_float_to_half(0x1.000002p-25f), 0x0001);
    assert_int_equal(rcoll_float_to_half(0x3p-25f), 0x0002);
    assert_int_equal(rcoll_float_to_half(0x1p-24f), 0x0001);
    assert_int_equal(rcoll_float_to_half(0x1.ff8p-15f), 0x03ff);   /* largest subnormal */
    assert_int_equal(rcoll_float_to_half(0x1.ffcp-15f), 0x0400);   /* tie: up to the min normal */
    assert_int_equal(rcoll_float_to_half(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(rcoll_float_to_half(1.0f + 0x3p-11f), 0x3c02);
    assert_int_equal(rcoll_float_to_half(-0.0f), 0x8000);
    assert_int_equal(rcoll_float_to_half(bitsf(0x7f800001u)) & 0x7e00, 0x7e00);
    assert_true(rcoll_half_to_float(0x0001) == 0x1p-24f);
    assert_true(rcoll_half_to_float(0x7bff) == 65504.0f);
    assert_true(isinf(rcoll_half_to_float(0xfc00)) && rcoll_half_to_float(0xfc00) < 0);
}

static void test_bf16_conversions(void **state)
{
    (void)state;
    roundtrip_all(&fmt_bf16, rcoll_bf16_to_float, rcoll_float_to_bf16, "bf16");
    encode_all(&fmt_bf16, rcoll_float_to_bf16, "float_to_bf16");
    assert_int_equal(rcoll_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(rcoll_float_to_bf16(1.0f + 0x3p-8f), 0x3f82);
    assert_int_equal(rcoll_float_to_bf16(bitsf(0x7f7fffffu)), 0x7f80);
    assert_int_equal(rcoll_float_to_bf16(bitsf(0x7f7f7fffu)), 0x7f7f);
    assert_int_equal(rcoll_float_to_bf16(bitsf(0x7f800001u)) & 0x7fc0, 0x7fc0);
    assert_int_equal(rcoll_float_to_bf16(bitsf(0x00008000u)), 0x0000);  /* tie to even (0) */
    assert_int_equal(rcoll_float_to_bf16(bitsf(0x00018000u)), 0x0002);  /* tie to even (2) */
    assert_true(rcoll_bf16_to_float(0x3f80) == 1.0f);
}

/* ---- argument handling ------------------------------------------------ */

static void test_op_valid(void **state)
{
    unsigned t, op;

    (void)state;
    for (t = 0; t < NDTYPES; t++)
        for (op = 0; op < NOPS; op++) {
            int bitwise = op == RCOLL_BAND || op == RCOLL_BOR || op == RCOLL_BXOR;
            int want = !bitwise || is_int(t);
            if (rcoll_op_valid(t, op) != want)
                fail_msg("rcoll_op_valid(%s, %s) = %d, want %d", dtype_names[t],
                         op_names[op], rcoll_op_valid(t, op), want);
        }
    assert_false(rcoll_op_valid(RCOLL_DATATYPE_LAST, RCOLL_SUM));
    assert_false(rcoll_op_valid((rcoll_datatype_t)-1, RCOLL_SUM));
    assert_false(rcoll_op_valid(RCOLL_INT32, RCOLL_OP_LAST));
    assert_false(rcoll_op_valid(RCOLL_INT32, (rcoll_op_t)-1));
}

static void test_invalid_and_empty(void **state)
{
    float x[4] = { 1, 2, 3, 4 }, y[4] = { 5, 6, 7, 8 }, d[4] = { 0, 0, 0, 0 };

    (void)state;
    rcoll_reduce_local(x, y, 4, RCOLL_FLOAT32, RCOLL_BXOR);
    rcoll_reduce_local(x, y, 4, RCOLL_DATATYPE_LAST, RCOLL_SUM);
    rcoll_reduce_local(x, y, 4, RCOLL_FLOAT32, RCOLL_OP_LAST);
    rcoll_reduce_local3(d, x, y, 4, RCOLL_FLOAT64, RCOLL_BAND);
    rcoll_reduce_local(x, y, 0, RCOLL_FLOAT32, RCOLL_SUM);
    rcoll_reduce_local3(d, x, y, 0, RCOLL_FLOAT32, RCOLL_SUM);
    assert_true(x[0] == 1 && x[3] == 4 && d[0] == 0 && d[3] == 0);
    /* count 0 never touches the pointers */
    rcoll_reduce_local(NULL, NULL, 0, RCOLL_INT32, RCOLL_SUM);
    rcoll_reduce_local3(NULL, NULL, NULL, 0, RCOLL_FLOAT16, RCOLL_SUM);
    rcoll_reduce_local3_copy(d, x, y, y, 4, RCOLL_FLOAT32, RCOLL_BXOR, 1);
    assert_true(d[0] == 0 && y[0] == 5 && y[3] == 8);
    rcoll_reduce_local3_copy(NULL, NULL, NULL, NULL, 0, RCOLL_INT8, RCOLL_SUM, 0);
}

/* ---- benchmark -------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench(size_t mib)
{
    const size_t bytes = mib << 20;
    unsigned char *x = malloc(bytes + 8), *y = malloc(bytes + 8), *d = malloc(bytes + 8);
    unsigned t;

    if (!x || !y || !d)
        return 1;
    memset(x, 0, bytes + 8);
    memset(y, 0, bytes + 8);
    memset(d, 0, bytes + 8);
    printf("# %zu MiB buffers; GB/s = buffer bytes / time (memory traffic is 3x)\n", mib);
    printf("# %-9s %12s %12s %12s\n", "dtype", "local", "local3", "unaligned");
    for (t = 0; t < NDTYPES; t++) {
        size_t n = bytes / dtype_sizes[t];
        double gbs[3];
        int v, r, reps = 50;
        for (v = 0; v < 3; v++) {
            double t0, best = 1e9;
            for (r = 0; r < reps; r++) {
                t0 = now();
                if (v == 0)
                    rcoll_reduce_local(x, y, n, t, RCOLL_SUM);
                else if (v == 1)
                    rcoll_reduce_local3(d, x, y, n, t, RCOLL_SUM);
                else
                    rcoll_reduce_local(x + 1, y + 3, n, t, RCOLL_SUM);
                t0 = now() - t0;
                if (t0 < best)
                    best = t0;
            }
            gbs[v] = bytes / best / 1e9;
        }
        printf("  %-9s %12.1f %12.1f %12.1f\n", dtype_names[t], gbs[0], gbs[1], gbs[2]);
    }
    free(x);
    free(y);
    free(d);
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_valid),
        cmocka_unit_test(test_invalid_and_empty),
        cmocka_unit_test(test_integer_wrap_and_sign),
        cmocka_unit_test(test_half_sum_rounding),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_bf16_conversions),
        cmocka_unit_test(test_all_dtypes_ops),
        cmocka_unit_test(test_f16_portable),
    };

    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc > 2 ? strtoul(argv[2], NULL, 10) : 4);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
