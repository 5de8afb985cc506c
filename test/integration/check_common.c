/*
 * check_common.c - data generation, local expectations and guarded buffers
 * for the multi-process checks.  See check_common.h.
 *
 * How values are chosen (W = world size, at most 120 for the guarantees):
 *  - sum: integers: a small integer in [-120/W, 120/W] (unsigned: [0, 248/W])
 *    shifted up to the type's top bits plus a few low bits, so no partial sum
 *    overflows and every bit of the kernel is exercised; floats: the same
 *    kind of integer mantissa (7 bits below the precision) times 2^-e, so
 *    every partial sum is exact.
 *  - prod: +-1 on most ranks; one rank contributes a factor 2, one a factor
 *    3, one (floats) 0.5, one (integers) a power of two near the type's top;
 *    an occasional 0 for integers.  |product| stays far below overflow.
 *  - min/max: integers: any bit pattern of the type; floats: any mantissa of
 *    the type's precision, so every value is exact.
 *  - band/bor/bxor: bit patterns with many ones (band), few ones (bor),
 *    random (bxor).
 *  - copy (bcast/allgather): any bit pattern (integers), any exact value
 *    (floats, so no NaN).
 */
#define _GNU_SOURCE
#include "check_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>

extern char **environ;

static const int dt_bytes[RCOLL_DATATYPE_LAST] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
static const int dt_signed[RCOLL_DATATYPE_LAST] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1};
/* float precision (bits incl. the implicit one) and scale exponent */
static const int flt_prec[RCOLL_DATATYPE_LAST] = {0, 0, 0, 0, 0, 0, 0, 0, 11, 8, 24, 53};
static const int flt_exp[RCOLL_DATATYPE_LAST]  = {0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 20, 50};

int check_dtype_is_float(rcoll_datatype_t dt)
{
    return dt == RCOLL_FLOAT16 || dt == RCOLL_BFLOAT16 || dt == RCOLL_FLOAT32 ||
           dt == RCOLL_FLOAT64;
}

int check_op_is_bitwise(rcoll_op_t op)
{
    return op == RCOLL_BAND || op == RCOLL_BOR || op == RCOLL_BXOR;
}

int check_pair_valid(rcoll_datatype_t dt, rcoll_op_t op)
{
    if ((unsigned)dt >= RCOLL_DATATYPE_LAST)
        return 0;
    if (op == CHECK_OP_COPY)
        return 1;
    if ((unsigned)op >= RCOLL_OP_LAST)
        return 0;
    return !(check_dtype_is_float(dt) && check_op_is_bitwise(op));
}

/* ---- half precision conversions (round to nearest even) ---- */

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u)            /* >= 65520: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {           /* below 2^-14: subnormal half */
        if (ax <= 0x33000000u)        /* <= 2^-25: rounds to zero */
            return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e, r = m >> shift, rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 23) - 112) << 10 | ((ax & 0x7fffffu) >> 13);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
        r++;
    return (uint16_t)(sign | r);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    float f;
    if (e == 0) {
        f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    uint32_t x;
    if (e == 31)
        x = sign | 0x7f800000u | (m << 13);
    else
        x = sign | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- element values ---- */

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Sign-extend (signed types) or zero-extend the low bytes of v. */
static inline uint64_t int_extend(rcoll_datatype_t dt, uint64_t v)
{
    int bits = dt_bytes[dt] * 8;
    if (bits == 64)
        return v;
    v &= (1ull << bits) - 1;
    if (dt_signed[dt] && (v >> (bits - 1)))
        v |= ~((1ull << bits) - 1);
    return v;
}

static uint64_t gen_int(rcoll_datatype_t dt, rcoll_op_t op, int r, int w, size_t i, uint64_t h)
{
    int bits = dt_bytes[dt] * 8, k = bits - 8;
    switch (op) {
    case RCOLL_SUM: {
        int64_t a = dt_signed[dt] ? 120 / w : 248 / w;
        int64_t small = dt_signed[dt] ? (int64_t)(h % (uint64_t)(2 * a + 1)) - a
                                      : (int64_t)(h % (uint64_t)(a + 1));
        uint64_t tiny = k >= 4 ? (h >> 32) & ((1ull << (k - 4)) - 1) : 0;
        return (uint64_t)small * (1ull << k) + tiny;
    }
    case RCOLL_PROD: {
        int64_t v = (dt_signed[dt] && (h & 1)) ? -1 : 1;
        if ((size_t)r == i % (size_t)w)
            v *= 2;
        if ((size_t)r == (i / 7) % (size_t)w)
            v *= 3;
        if ((size_t)r == (i / 11 + 1) % (size_t)w)
            v *= (int64_t)1 << k;
        if (i % 97 == 13 && (size_t)r == (i / 97) % (size_t)w)
            v = 0;
        return (uint64_t)v;
    }
    case RCOLL_BAND:
        return int_extend(dt, h | mix64(h) | mix64(h + 1));
    case RCOLL_BOR:
        return int_extend(dt, h & mix64(h) & mix64(h + 1));
    default:                     /* min, max, bxor, copy */
        return int_extend(dt, h);
    }
}

static double gen_flt(rcoll_datatype_t dt, rcoll_op_t op, int r, int w, size_t i, uint64_t h)
{
    int p = flt_prec[dt], j = p - 8;
    switch (op) {
    case RCOLL_SUM: {
        int64_t a = 120 / w;
        int64_t small = (int64_t)(h % (uint64_t)(2 * a + 1)) - a;
        int64_t tiny = j >= 4 ? (int64_t)((h >> 32) & ((1ull << (j - 4)) - 1)) : 0;
        return ldexp((double)(small * ((int64_t)1 << j) + tiny), -flt_exp[dt]);
    }
    case RCOLL_PROD: {
        double v = (h & 1) ? -1.0 : 1.0;
        if ((size_t)r == i % (size_t)w)
            v *= 2;
        if ((size_t)r == (i / 7) % (size_t)w)
            v *= 3;
        if ((size_t)r == (i / 3 + 1) % (size_t)w)
            v *= 0.5;
        return v;
    }
    default: {                   /* min, max, copy */
        int64_t m = (int64_t)(h % (1ull << (p - 1))) - ((int64_t)1 << (p - 2));
        return ldexp((double)m, -flt_exp[dt]);
    }
    }
}

static inline uint64_t elem_hash(int r, size_t i, uint64_t salt)
{
    return mix64(mix64(salt ^ ((uint64_t)(unsigned)r << 48)) ^ (uint64_t)i);
}

static inline void store_int(rcoll_datatype_t dt, void *p, uint64_t v)
{
    switch (dt_bytes[dt]) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static inline void store_flt(rcoll_datatype_t dt, void *p, double d)
{
    switch (dt) {
    case RCOLL_FLOAT16: { uint16_t x = f32_to_f16((float)d); memcpy(p, &x, 2); break; }
    case RCOLL_BFLOAT16: { uint16_t x = f32_to_bf16((float)d); memcpy(p, &x, 2); break; }
    case RCOLL_FLOAT32: { float x = (float)d; memcpy(p, &x, 4); break; }
    default: memcpy(p, &d, 8); break;
    }
}

static double load_flt(rcoll_datatype_t dt, const void *p)
{
    switch (dt) {
    case RCOLL_FLOAT16: { uint16_t x; memcpy(&x, p, 2); return f16_to_f32(x); }
    case RCOLL_BFLOAT16: { uint16_t x; memcpy(&x, p, 2); return bf16_to_f32(x); }
    case RCOLL_FLOAT32: { float x; memcpy(&x, p, 4); return x; }
    default: { double x; memcpy(&x, p, 8); return x; }
    }
}

static uint64_t load_int(rcoll_datatype_t dt, const void *p)
{
    uint64_t v = 0;
    switch (dt_bytes[dt]) {
    case 1: v = *(const uint8_t *)p; break;
    case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
    case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
    default: memcpy(&v, p, 8); break;
    }
    return int_extend(dt, v);
}

void check_fill(rcoll_datatype_t dt, rcoll_op_t op, int rank, int wsize, size_t idx0,
                size_t n, uint64_t salt, void *buf)
{
    unsigned char *p = buf;
    size_t es = (size_t)dt_bytes[dt];
    if (check_dtype_is_float(dt)) {
        for (size_t k = 0; k < n; k++) {
            size_t i = idx0 + k;
            store_flt(dt, p + k * es, gen_flt(dt, op, rank, wsize, i, elem_hash(rank, i, salt)));
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            size_t i = idx0 + k;
            store_int(dt, p + k * es, gen_int(dt, op, rank, wsize, i, elem_hash(rank, i, salt)));
        }
    }
}

static uint64_t combine_int(rcoll_datatype_t dt, rcoll_op_t op, uint64_t a, uint64_t b)
{
    int s = dt_signed[dt];
    switch (op) {
    case RCOLL_SUM:  return a + b;
    case RCOLL_PROD: return a * b;
    case RCOLL_MIN:  return s ? ((int64_t)a < (int64_t)b ? a : b) : (a < b ? a : b);
    case RCOLL_MAX:  return s ? ((int64_t)a > (int64_t)b ? a : b) : (a > b ? a : b);
    case RCOLL_BAND: return a & b;
    case RCOLL_BOR:  return a | b;
    case RCOLL_BXOR: return a ^ b;
    default:         return a;
    }
}

static double combine_flt(rcoll_op_t op, double a, double b)
{
    switch (op) {
    case RCOLL_SUM:  return a + b;
    case RCOLL_PROD: return a * b;
    case RCOLL_MIN:  return a < b ? a : b;
    case RCOLL_MAX:  return a > b ? a : b;
    default:         return a;
    }
}

void check_expect(rcoll_datatype_t dt, rcoll_op_t op, const int *ranks, int nranks,
                  int wsize, size_t idx0, size_t n, uint64_t salt, void *out)
{
    unsigned char *p = out;
    size_t es = (size_t)dt_bytes[dt];
    /* one seed per rank, then per element (as elem_hash() does) */
    uint64_t seeds_small[64];
    uint64_t *seeds = nranks <= 64 ? seeds_small : malloc((size_t)nranks * sizeof(*seeds));
    int nr = nranks;
    if (seeds == NULL) {
        fprintf(stderr, "check_expect: out of memory\n");
        exit(3);
    }
    for (int q = 0; q < nr; q++)
        seeds[q] = mix64(salt ^ ((uint64_t)(unsigned)ranks[q] << 48));
    if (check_dtype_is_float(dt)) {
        for (size_t k = 0; k < n; k++) {
            size_t i = idx0 + k;
            double acc = gen_flt(dt, op, ranks[0], wsize, i, mix64(seeds[0] ^ i));
            for (int q = 1; q < nr; q++)
                acc = combine_flt(op, acc, gen_flt(dt, op, ranks[q], wsize, i, mix64(seeds[q] ^ i)));
            store_flt(dt, p + k * es, acc);
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            size_t i = idx0 + k;
            uint64_t acc = gen_int(dt, op, ranks[0], wsize, i, mix64(seeds[0] ^ i));
            for (int q = 1; q < nr; q++)
                acc = combine_int(dt, op, acc,
                                  gen_int(dt, op, ranks[q], wsize, i, mix64(seeds[q] ^ i)));
            store_int(dt, p + k * es, acc);
        }
    }
    if (seeds != seeds_small)
        free(seeds);
}

size_t check_compare(rcoll_datatype_t dt, const void *got, const void *exp, size_t n)
{
    size_t es = (size_t)dt_bytes[dt];
    const unsigned char *g = got, *e = exp;
    if (n == 0 || memcmp(g, e, n * es) == 0)
        return (size_t)-1;
    for (size_t k = 0; k < n; k++) {
        if (memcmp(g + k * es, e + k * es, es) == 0)
            continue;
        if (check_dtype_is_float(dt)) {
            double a = load_flt(dt, g + k * es), b = load_flt(dt, e + k * es);
            if (a == b)           /* +0 vs -0 */
                continue;
        }
        return k;
    }
    return (size_t)-1;
}

void check_format(rcoll_datatype_t dt, const void *buf, size_t i, char *out, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf + i * (size_t)dt_bytes[dt];
    if (check_dtype_is_float(dt)) {
        snprintf(out, len, "%.17g", load_flt(dt, p));
    } else {
        uint64_t v = load_int(dt, p);
        if (dt_signed[dt])
            snprintf(out, len, "%lld (0x%0*llx)", (long long)(int64_t)v, dt_bytes[dt] * 2,
                     (unsigned long long)(dt_bytes[dt] == 8 ? v : v & ((1ull << (dt_bytes[dt] * 8)) - 1)));
        else
            snprintf(out, len, "%llu (0x%0*llx)", (unsigned long long)v, dt_bytes[dt] * 2,
                     (unsigned long long)v);
    }
}

/* ---- guarded buffers ---- */

#define GUARD 64
/* Each buffer gets its own guard pattern, so a copy that runs past the end
 * of one buffer and takes the next bytes of another still shows. */
static unsigned char guard_byte(size_t k, unsigned seed)
{
    return (unsigned char)(0xa5 ^ (k * 29) ^ (seed * 0x3b));
}

int check_buf_alloc(check_buf_t *b, size_t bytes, size_t offset)
{
    memset(b, 0, sizeof(*b));
    if (offset > 7)
        return -1;
    size_t total = GUARD + 8 + bytes + GUARD;
    void *raw = NULL;
    if (posix_memalign(&raw, 64, total) != 0)
        return -1;
    b->raw = raw;
    b->ptr = b->raw + GUARD + offset;
    b->bytes = bytes;
    b->offset = offset;
    b->seed = (unsigned)((uintptr_t)raw >> 6);   /* differs per live buffer; no shared counter */
    for (size_t k = 0; k < GUARD + offset; k++)
        b->raw[k] = guard_byte(k, b->seed);
    for (size_t k = 0; k < GUARD; k++)
        b->ptr[bytes + k] = guard_byte(k + 7, b->seed);
    return 0;
}

void check_buf_free(check_buf_t *b)
{
    free(b->raw);
    memset(b, 0, sizeof(*b));
}

void check_buf_junk(check_buf_t *b)
{
    memset(b->ptr, 0xee, b->bytes);
}

int check_buf_guards(const check_buf_t *b, long *where)
{
    size_t before = GUARD + b->offset;
    for (size_t k = 0; k < before; k++) {
        if (b->raw[k] != guard_byte(k, b->seed)) {
            *where = (long)k - (long)before;
            return -1;
        }
    }
    for (size_t k = 0; k < GUARD; k++) {
        if (b->ptr[b->bytes + k] != guard_byte(k + 7, b->seed)) {
            *where = (long)(b->bytes + k);
            return 1;
        }
    }
    return 0;
}

/* ---- small helpers ---- */

double check_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void check_sleep(double seconds)
{
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int check_list_has(const char *list, const char *word)
{
    if (list == NULL || list[0] == '\0')
        return 1;
    size_t wl = strlen(word);
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == wl && strncmp(p, word, wl) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

int check_parse_size(const char *s, size_t *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

rcoll_status_t check_test_loop(rcoll_request_t *req, double deadline_s)
{
    double t_end = check_now() + deadline_s;
    int done = 0;
    for (;;) {
        rcoll_status_t st = rcoll_test(req, &done);
        if (done || st != RCOLL_OK)
            return st;
        if (check_now() > t_end) {
            fprintf(stderr, "check: rcoll_test() did not complete within %.0f s\n", deadline_s);
            return RCOLL_ERR_TIMEOUT;
        }
    }
}

void check_unset_launch_env(void)
{
    static const char *const vars[] = {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
                                       "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                                       "PMIX_RANK", "PMIX_NAMESPACE", NULL};
    for (int k = 0; vars[k]; k++)
        unsetenv(vars[k]);
    /* every PMIX_* variable: a server URI would make init try to connect */
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "PMIX_", 5) == 0) {
                char name[256];
                size_t len = strcspn(*e, "=");
                if (len >= sizeof(name))
                    len = sizeof(name) - 1;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

/* ---- collectives on a group ---- */

const char *check_kind_name(check_kind_t kind)
{
    static const char *const names[] = {"allreduce", "bcast", "barrier", "reduce", "allgather",
                                        "reduce_scatter"};
    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

int check_group_expect(check_group_t *g, const char *name, int wsize, int wrank,
                       const int *colors, const int *keys)
{
    memset(g, 0, sizeof(*g));
    g->name = name;
    g->wsize = wsize;
    if (colors[wrank] < 0)
        return -1;
    for (int r = 0; r < wsize && g->n < 256; r++) {
        if (colors[r] != colors[wrank])
            continue;
        /* insertion by (key, rank) */
        int pos = g->n;
        while (pos > 0 && keys[g->members[pos - 1]] > keys[r])
            pos--;
        memmove(&g->members[pos + 1], &g->members[pos], (size_t)(g->n - pos) * sizeof(int));
        g->members[pos] = r;
        g->n++;
    }
    for (int i = 0; i < g->n; i++)
        if (g->members[i] == wrank)
            g->me = i;
    return 0;
}

static void *check_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "check: out of memory (%zu bytes)\n", n);
        exit(3);
    }
    return p;
}

rcoll_status_t check_op_post(check_op_t *o, int blocking)
{
    const check_group_t *g = o->g;
    size_t es = rcoll_datatype_size(o->dt), n = o->count, gn = (size_t)g->n;
    int wr = g->members[g->me], is_root = g->me == o->root;
    rcoll_op_t fop = (o->kind == CHECK_BCAST || o->kind == CHECK_ALLGATHER) ? CHECK_OP_COPY : o->op;
    size_t sn = 0, rn = 0;
    o->sbuf = o->rbuf = NULL;
    o->req = NULL;
    switch (o->kind) {
    case CHECK_ALLREDUCE:      sn = n; rn = n; break;
    case CHECK_BCAST:          rn = n; break;
    case CHECK_REDUCE:         sn = n; rn = is_root ? n : 0; break;
    case CHECK_ALLGATHER:      sn = n; rn = gn * n; break;
    case CHECK_REDUCE_SCATTER: sn = gn * n; rn = o->inplace ? gn * n : n; break;
    case CHECK_BARRIER:        break;
    }
    int inplace = o->inplace && o->kind != CHECK_BCAST && o->kind != CHECK_BARRIER &&
                  (o->kind != CHECK_REDUCE || is_root);
    if (!inplace && sn) {
        o->sbuf = check_xmalloc(sn * es);
        check_fill(o->dt, fop, wr, g->wsize, 0, sn, o->salt, o->sbuf);
    }
    if (rn) {
        o->rbuf = check_xmalloc(rn * es);
        memset(o->rbuf, 0xee, rn * es);
        if (inplace && o->kind == CHECK_ALLGATHER)
            check_fill(o->dt, fop, wr, g->wsize, 0, n, o->salt, o->rbuf + (size_t)g->me * n * es);
        else if (inplace)
            check_fill(o->dt, fop, wr, g->wsize, 0, sn, o->salt, o->rbuf);
        if (o->kind == CHECK_BCAST && is_root)
            check_fill(o->dt, fop, wr, g->wsize, 0, n, o->salt, o->rbuf);
    }
    const void *sp = inplace ? RCOLL_IN_PLACE : (const void *)o->sbuf;
    rcoll_request_t **rq = &o->req;
    switch (o->kind) {
    case CHECK_ALLREDUCE:
        return blocking ? rcoll_allreduce(sp, o->rbuf, n, o->dt, o->op, g->comm)
                        : rcoll_iallreduce(sp, o->rbuf, n, o->dt, o->op, g->comm, rq);
    case CHECK_BCAST:
        return blocking ? rcoll_bcast(o->rbuf, n, o->dt, o->root, g->comm)
                        : rcoll_ibcast(o->rbuf, n, o->dt, o->root, g->comm, rq);
    case CHECK_REDUCE:
        return blocking ? rcoll_reduce(sp, o->rbuf, n, o->dt, o->op, o->root, g->comm)
                        : rcoll_ireduce(sp, o->rbuf, n, o->dt, o->op, o->root, g->comm, rq);
    case CHECK_ALLGATHER:
        return blocking ? rcoll_allgather(sp, o->rbuf, n, o->dt, g->comm)
                        : rcoll_iallgather(sp, o->rbuf, n, o->dt, g->comm, rq);
    case CHECK_REDUCE_SCATTER:
        return blocking ? rcoll_reduce_scatter(sp, o->rbuf, n, o->dt, o->op, g->comm)
                        : rcoll_ireduce_scatter(sp, o->rbuf, n, o->dt, o->op, g->comm, rq);
    case CHECK_BARRIER:
        return blocking ? rcoll_barrier(g->comm) : rcoll_ibarrier(g->comm, rq);
    }
    return RCOLL_ERR_INVALID_ARG;
}

int check_op_verify(const check_op_t *o, char *why, size_t len)
{
    const check_group_t *g = o->g;
    size_t es = rcoll_datatype_size(o->dt), n = o->count, gn = (size_t)g->n;
    size_t en = 0, idx0 = 0;
    unsigned char *exp;
    switch (o->kind) {
    case CHECK_BARRIER:
        return 0;
    case CHECK_REDUCE:
        if (g->me != o->root)
            return 0;
        /* fall through */
    case CHECK_ALLREDUCE:
        en = n;
        break;
    case CHECK_REDUCE_SCATTER:
        en = n;
        idx0 = (size_t)g->me * n;
        break;
    case CHECK_BCAST:
        en = n;
        break;
    case CHECK_ALLGATHER:
        en = gn * n;
        break;
    }
    exp = check_xmalloc(en * es);
    if (o->kind == CHECK_BCAST) {
        check_fill(o->dt, CHECK_OP_COPY, g->members[o->root], g->wsize, 0, n, o->salt, exp);
    } else if (o->kind == CHECK_ALLGATHER) {
        for (int i = 0; i < g->n; i++)
            check_fill(o->dt, CHECK_OP_COPY, g->members[i], g->wsize, 0, n, o->salt,
                       exp + (size_t)i * n * es);
    } else {
        check_expect(o->dt, o->op, g->members, g->n, g->wsize, idx0, en, o->salt, exp);
    }
    size_t bad = check_compare(o->dt, o->rbuf, exp, en);
    int rc = 0;
    if (bad != (size_t)-1) {
        char a[64], b[64];
        check_format(o->dt, o->rbuf, bad, a, sizeof(a));
        check_format(o->dt, exp, bad, b, sizeof(b));
        snprintf(why, len, "%s on %s (%d ranks, rank %d) dtype=%s op=%s count=%zu root=%d "
                 "inplace=%d: first bad index %zu: got %s expected %s",
                 check_kind_name(o->kind), g->name, g->n, g->me, rcoll_datatype_name(o->dt),
                 rcoll_op_name(o->op), n, o->root, o->inplace, bad, a, b);
        rc = -1;
    }
    free(exp);
    return rc;
}

void check_op_free(check_op_t *o)
{
    free(o->sbuf);
    free(o->rbuf);
    o->sbuf = o->rbuf = NULL;
}

int check_start(const char *prog, int argc, char **argv, const char *const *config,
                rcoll_context_t **ctx, int *wrank, int *wsize, int *verbose)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            *verbose = 1;
        } else {
            fprintf(stderr, "usage: %s [-v]\n", argv[0]);
            return 2;
        }
    }
    rcoll_status_t st = rcoll_init(config, ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL %s: rcoll_init: %s\n", prog, rcoll_strerror(st));
        return 1;
    }
    rcoll_comm_t *world = rcoll_comm_world(*ctx);
    *wrank = rcoll_comm_rank(world);
    *wsize = rcoll_comm_size(world);
    return 0;
}

void check_fatal(const char *prog, int rank, const char *what, rcoll_status_t st)
{
    fprintf(stderr, "FAIL %s rank %d: %s returned %d (%s)\n", prog, rank, what, (int)st,
            rcoll_strerror(st));
    fflush(stderr);
    _exit(1);
}
