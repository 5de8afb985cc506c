/*
 * coll_cases.c - the body of coll_check (every collective x algorithm x
 * dtype x op x count x in-place x alignment x root, checked against results
 * each rank computes locally) over a context it is given, with its state in
 * a run_t instead of globals, so that the process check (coll_check.c) and
 * the in-process thread check (oob_threads.c) run the same cases.  What is
 * checked and why floats compare exactly: see coll_check.c and
 * check_common.c.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcoll.h"
#include "check_common.h"
#include "check_suites.h"

typedef enum { K_ALLREDUCE, K_BCAST, K_BARRIER, K_REDUCE, K_ALLGATHER, K_REDUCE_SCATTER } kind_t;

typedef struct coll_desc {
    const char *name;     /* as in --coll and the summary */
    kind_t      kind;
    int         nb;       /* nonblocking API */
    const char *base;     /* name for rcoll_algorithms() */
    const char *cfgkey;   /* RCOLL_<COLL>_ALGORITHM */
} coll_desc_t;

static const coll_desc_t colls[] = {
    {"allreduce",       K_ALLREDUCE,      0, "allreduce",      "RCOLL_ALLREDUCE_ALGORITHM"},
    {"iallreduce",      K_ALLREDUCE,      1, "allreduce",      "RCOLL_ALLREDUCE_ALGORITHM"},
    {"bcast",           K_BCAST,          0, "bcast",          "RCOLL_BCAST_ALGORITHM"},
    {"ibcast",          K_BCAST,          1, "bcast",          "RCOLL_BCAST_ALGORITHM"},
    {"barrier",         K_BARRIER,        0, "barrier",        "RCOLL_BARRIER_ALGORITHM"},
    {"ibarrier",        K_BARRIER,        1, "barrier",        "RCOLL_BARRIER_ALGORITHM"},
    {"reduce",          K_REDUCE,         0, "reduce",         "RCOLL_REDUCE_ALGORITHM"},
    {"ireduce",         K_REDUCE,         1, "reduce",         "RCOLL_REDUCE_ALGORITHM"},
    {"allgather",       K_ALLGATHER,      0, "allgather",      "RCOLL_ALLGATHER_ALGORITHM"},
    {"iallgather",      K_ALLGATHER,      1, "allgather",      "RCOLL_ALLGATHER_ALGORITHM"},
    {"reduce_scatter",  K_REDUCE_SCATTER, 0, "reduce_scatter", "RCOLL_REDUCE_SCATTER_ALGORITHM"},
    {"ireduce_scatter", K_REDUCE_SCATTER, 1, "reduce_scatter", "RCOLL_REDUCE_SCATTER_ALGORITHM"},
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

typedef struct pair { rcoll_datatype_t dt; rcoll_op_t op; } pair_t;

/* Subset of (dtype, op) used for the larger counts: every element size,
 * every kernel family, the half-precision conversions. */
static const pair_t big_pairs[] = {
    {RCOLL_FLOAT32, RCOLL_SUM}, {RCOLL_INT32, RCOLL_SUM}, {RCOLL_BFLOAT16, RCOLL_SUM},
    {RCOLL_FLOAT16, RCOLL_PROD}, {RCOLL_FLOAT64, RCOLL_MAX}, {RCOLL_UINT8, RCOLL_BXOR},
    {RCOLL_INT64, RCOLL_MIN}, {RCOLL_UINT16, RCOLL_BAND},
};
static const rcoll_datatype_t big_copy_dts[] = {RCOLL_UINT8, RCOLL_FLOAT16, RCOLL_INT32,
                                                RCOLL_FLOAT64};

typedef struct case_s {
    const coll_desc_t *c;
    const char        *alg;       /* "" = selector */
    rcoll_datatype_t   dt;
    rcoll_op_t         op;        /* CHECK_OP_COPY for bcast / allgather */
    size_t             count;
    int                inplace;
    int                root;
    int                api;       /* 0 blocking, 1 i* + wait, 2 i* + test loop */
    size_t             soff, roff;
    int                null_recv; /* reduce: non-roots pass recvbuf = NULL */
    uint64_t           salt;
} case_t;

/* One run's state: a thread may run it over its own context. */
typedef struct run {
    const coll_check_opts_t *opt;
    rcoll_context_t *ctx;
    rcoll_comm_t    *world;
    int              rank, size;
    uint64_t         case_no;
    long             nfail_local;
    int              nprinted;
    size_t           eager_limit;
} run_t;

static const char *api_name(int api)
{
    return api == 0 ? "blocking" : api == 1 ? "wait" : "test";
}

static const char *alg_name(const char *alg)
{
    return alg[0] ? alg : "auto";
}

static void case_desc(const case_t *k, char *buf, size_t len)
{
    char root[16] = "-";
    if (k->c->kind == K_BCAST || k->c->kind == K_REDUCE)
        snprintf(root, sizeof(root), "%d", k->root);
    snprintf(buf, len,
             "%s alg=%s dtype=%s op=%s count=%zu inplace=%d root=%s offsets=%zu/%zu api=%s case=%" PRIu64,
             k->c->name, alg_name(k->alg), rcoll_datatype_name(k->dt),
             k->op == CHECK_OP_COPY ? "-" : rcoll_op_name(k->op), k->count, k->inplace, root,
             k->soff, k->roff, api_name(k->api), k->salt);
}

static void fail(run_t *R, const case_t *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(run_t *R, const case_t *k, const char *fmt, ...)
{
    R->nfail_local++;
    if (R->nprinted >= 20) {
        if (R->nprinted++ == 20)
            fprintf(stderr, "rank %d: further failures not printed\n", R->rank);
        return;
    }
    R->nprinted++;
    char desc[512], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    case_desc(k, desc, sizeof(desc));
    fprintf(stderr, "FAIL %s rank=%d: %s\n", desc, R->rank, msg);
}

/* A non-OK status: peers may now be blocked on this rank, so stop. */
static void fatal_status(run_t *R, const case_t *k, const char *call, rcoll_status_t st)
{
    char desc[512];
    case_desc(k, desc, sizeof(desc));
    fprintf(stderr, "FAIL %s rank=%d: %s returned %d (%s)\n", desc, R->rank, call, (int)st,
            rcoll_strerror(st));
    fflush(stderr);
    _exit(1);
}

static void *xmalloc(run_t *R, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", R->rank, n);
        _exit(3);
    }
    return p;
}

static void alloc_buf(run_t *R, check_buf_t *b, size_t bytes, size_t off)
{
    if (check_buf_alloc(b, bytes, off) != 0) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", R->rank, bytes);
        _exit(3);
    }
}

/* Compare region got[0..n) with exp; report the first bad index. */
static int compare_result(run_t *R, const case_t *k, const char *what, const void *got, const void *exp,
                          size_t n)
{
    size_t bad = check_compare(k->dt, got, exp, n);
    if (bad == (size_t)-1)
        return 0;
    size_t es = rcoll_datatype_size(k->dt), nbad = 0;
    for (size_t i = bad; i < n;) {
        size_t b = check_compare(k->dt, (const char *)got + i * es, (const char *)exp + i * es,
                                 n - i);
        if (b == (size_t)-1)
            break;
        nbad++;
        i += b + 1;
    }
    char g[64], e[64];
    check_format(k->dt, got, bad, g, sizeof(g));
    check_format(k->dt, exp, bad, e, sizeof(e));
    fail(R, k, "%s: first bad index %zu (%zu of %zu elements wrong): got %s expected %s", what, bad,
         nbad, n, g, e);
    return 1;
}

static int check_guards(run_t *R, const case_t *k, const char *what, const check_buf_t *b)
{
    long where;
    int side = check_buf_guards(b, &where);
    if (side == 0)
        return 0;
    fail(R, k, "%s: guard byte %s the buffer modified (byte offset %ld, buffer %zu bytes)", what,
         side < 0 ? "before" : "after", where, b->bytes);
    return 1;
}

/* reqp, not req: the call that fills it is an argument of this one, and C
 * leaves the order of argument evaluation unspecified. */
static void finish_request(run_t *R, const case_t *k, const char *call, rcoll_status_t st,
                           rcoll_request_t **reqp)
{
    rcoll_request_t *req = *reqp;
    if (st != RCOLL_OK)
        fatal_status(R, k, call, st);
    if (req == NULL) {
        fail(R, k, "%s returned OK but no request", call);
        return;
    }
    st = k->api == 2 ? check_test_loop(req, 300) : rcoll_wait(req);
    if (st != RCOLL_OK)
        fatal_status(R, k, k->api == 2 ? "rcoll_test" : "rcoll_wait", st);
}

/* Run one case; returns 0 if it passed on this rank. */
static int run_case(run_t *R, const case_t *k)
{
    const kind_t kind = k->c->kind;
    const size_t es = rcoll_datatype_size(k->dt), n = k->count;
    const rcoll_op_t fop = k->op;
    const int is_root = R->rank == k->root;
    size_t send_elems = 0, recv_elems = 0, res_elems = n, res_idx0 = 0;
    int use_send = 1, use_recv = 1, fails = 0;

    switch (kind) {
    case K_ALLREDUCE: send_elems = recv_elems = n; use_send = !k->inplace; break;
    case K_BCAST:     recv_elems = n; use_send = 0; break;
    case K_REDUCE:
        send_elems = recv_elems = n;
        use_send = !(k->inplace && is_root);
        use_recv = is_root || !k->null_recv;
        break;
    case K_ALLGATHER:
        send_elems = n; recv_elems = res_elems = (size_t)R->size * n; use_send = !k->inplace;
        break;
    case K_REDUCE_SCATTER:
        send_elems = (size_t)R->size * n;
        recv_elems = k->inplace ? (size_t)R->size * n : n;
        res_idx0 = (size_t)R->rank * n;
        use_send = !k->inplace;
        break;
    default: return 0;
    }

    check_buf_t sb = {0}, rb = {0};
    unsigned char *scopy = NULL, *exp = NULL;
    if (use_send) {
        alloc_buf(R, &sb, send_elems * es, k->soff);
        check_fill(k->dt, fop, R->rank, R->size, 0, send_elems, k->salt, sb.ptr);
        scopy = xmalloc(R, send_elems * es);
        memcpy(scopy, sb.ptr, send_elems * es);
    }
    if (use_recv) {
        alloc_buf(R, &rb, recv_elems * es, k->roff);
        check_buf_junk(&rb);
        if (k->inplace && kind != K_ALLGATHER && (kind != K_REDUCE || is_root))
            check_fill(k->dt, fop, R->rank, R->size, 0, recv_elems, k->salt, rb.ptr);
        if (k->inplace && kind == K_ALLGATHER)
            check_fill(k->dt, fop, R->rank, R->size, 0, n, k->salt, rb.ptr + (size_t)R->rank * n * es);
        if (kind == K_BCAST && is_root)
            check_fill(k->dt, fop, R->rank, R->size, 0, n, k->salt, rb.ptr);
    }
    const void *sp = use_send ? (const void *)sb.ptr : RCOLL_IN_PLACE;
    void *rp = use_recv ? (void *)rb.ptr : NULL;

    rcoll_status_t st;
    rcoll_request_t *req = NULL;
    switch (kind) {
    case K_ALLREDUCE:
        if (k->api == 0) {
            if ((st = rcoll_allreduce(sp, rp, n, k->dt, k->op, R->world)) != RCOLL_OK)
                fatal_status(R, k, "rcoll_allreduce", st);
        } else {
            finish_request(R, k, "rcoll_iallreduce",
                           rcoll_iallreduce(sp, rp, n, k->dt, k->op, R->world, &req), &req);
        }
        break;
    case K_BCAST:
        if (k->api == 0) {
            if ((st = rcoll_bcast(rp, n, k->dt, k->root, R->world)) != RCOLL_OK)
                fatal_status(R, k, "rcoll_bcast", st);
        } else {
            finish_request(R, k, "rcoll_ibcast", rcoll_ibcast(rp, n, k->dt, k->root, R->world, &req),
                           &req);
        }
        break;
    case K_REDUCE:
        if (k->api == 0) {
            if ((st = rcoll_reduce(sp, rp, n, k->dt, k->op, k->root, R->world)) != RCOLL_OK)
                fatal_status(R, k, "rcoll_reduce", st);
        } else {
            finish_request(R, k, "rcoll_ireduce",
                           rcoll_ireduce(sp, rp, n, k->dt, k->op, k->root, R->world, &req), &req);
        }
        break;
    case K_ALLGATHER:
        if (k->api == 0) {
            if ((st = rcoll_allgather(sp, rp, n, k->dt, R->world)) != RCOLL_OK)
                fatal_status(R, k, "rcoll_allgather", st);
        } else {
            finish_request(R, k, "rcoll_iallgather", rcoll_iallgather(sp, rp, n, k->dt, R->world, &req),
                           &req);
        }
        break;
    case K_REDUCE_SCATTER:
        if (k->api == 0) {
            if ((st = rcoll_reduce_scatter(sp, rp, n, k->dt, k->op, R->world)) != RCOLL_OK)
                fatal_status(R, k, "rcoll_reduce_scatter", st);
        } else {
            finish_request(R, k, "rcoll_ireduce_scatter",
                           rcoll_ireduce_scatter(sp, rp, n, k->dt, k->op, R->world, &req), &req);
        }
        break;
    default: break;
    }

    /* the result */
    int check_result = use_recv && (kind != K_REDUCE || is_root);
    if (check_result) {
        exp = xmalloc(R, res_elems * es);
        if (kind == K_BCAST) {
            check_fill(k->dt, fop, k->root, R->size, 0, n, k->salt, exp);
        } else if (kind == K_ALLGATHER) {
            for (int r = 0; r < R->size; r++)
                check_fill(k->dt, fop, r, R->size, 0, n, k->salt, exp + (size_t)r * n * es);
        } else {
            int *all = xmalloc(R, sizeof(int) * (size_t)R->size);
            for (int r = 0; r < R->size; r++)
                all[r] = r;
            check_expect(k->dt, k->op, all, R->size, R->size, res_idx0, res_elems, k->salt, exp);
            free(all);
        }
        fails += compare_result(R, k, "result", rb.ptr, exp, res_elems);
    } else if (use_recv) {
        /* reduce at a non-root: recvbuf is not significant, must stay as given */
        unsigned char *junk = xmalloc(R, recv_elems * es);
        memset(junk, 0xee, recv_elems * es);
        if (memcmp(junk, rb.ptr, recv_elems * es) != 0)
            fails += compare_result(R, k, "non-root recvbuf modified", rb.ptr, junk, recv_elems);
        free(junk);
    }
    if (use_recv)
        fails += check_guards(R, k, "recvbuf", &rb);
    if (use_send) {
        fails += check_guards(R, k, "sendbuf", &sb);
        if (memcmp(scopy, sb.ptr, send_elems * es) != 0)
            fails += compare_result(R, k, "sendbuf modified", sb.ptr, scopy, send_elems);
    }
    free(exp);
    free(scopy);
    if (use_send)
        check_buf_free(&sb);
    if (use_recv)
        check_buf_free(&rb);
    return fails != 0;
}

/* ---- barrier ---- */

static void do_barrier(run_t *R, const case_t *k)
{
    rcoll_status_t st;
    rcoll_request_t *req = NULL;
    if (k->api == 0) {
        if ((st = rcoll_barrier(R->world)) != RCOLL_OK)
            fatal_status(R, k, "rcoll_barrier", st);
    } else {
        finish_request(R, k, "rcoll_ibarrier", rcoll_ibarrier(R->world, &req), &req);
    }
}

/*
 * Back-to-back barriers, then with each rank in turn entering late: no rank
 * may leave before the last one entered.  Entry and exit times are on
 * CLOCK_MONOTONIC, which is shared by the processes of one node, so this is
 * checked only when all ranks are on one node.
 */
static long barrier_cases(run_t *R, const coll_desc_t *c, const char *alg)
{
    case_t k = {.c = c, .alg = alg, .dt = RCOLL_INT64, .op = CHECK_OP_COPY};
    long ncases = 0;
    int reps = R->opt->quick ? 10 : 50;
    for (int i = 0; i < reps; i++, ncases++) {
        k.salt = ++R->case_no;
        k.api = c->nb ? 1 + (int)(k.salt % 2) : 0;
        do_barrier(R, &k);
    }
    int one_node = rcoll_context_local_size(R->ctx) == R->size;
    int64_t *entries = xmalloc(R, sizeof(int64_t) * (size_t)R->size);
    for (int late = 0; late < R->size; late++, ncases++) {
        k.salt = ++R->case_no;
        k.api = c->nb ? 1 + (int)(k.salt % 2) : 0;
        k.root = late;
        do_barrier(R, &k);
        if (R->rank == late)
            check_sleep(0.02);
        int64_t t_in = (int64_t)(check_now() * 1e9);
        do_barrier(R, &k);
        int64_t t_out = (int64_t)(check_now() * 1e9);
        rcoll_status_t st = rcoll_allgather(&t_in, entries, 1, RCOLL_INT64, R->world);
        if (st != RCOLL_OK)
            fatal_status(R, &k, "rcoll_allgather (barrier entry times)", st);
        if (!one_node)
            continue;
        for (int r = 0; r < R->size; r++) {
            if (entries[r] > t_out) {
                fail(R, &k, "rank %d left the barrier %.3f ms before rank %d (late rank %d) entered it",
                     R->rank, (double)(entries[r] - t_out) / 1e6, r, late);
                break;
            }
        }
    }
    free(entries);
    return ncases;
}

/* ---- the matrix ---- */

static int has_inplace(kind_t kind)
{
    return kind != K_BCAST && kind != K_BARRIER;
}

static int is_copy(kind_t kind)
{
    return kind == K_BCAST || kind == K_ALLGATHER;
}

/* Run `count` with the given pairs, rotating or crossing the other dimensions. */
/* rot_n > 1: keep only pairs p with (p + rot_off) % rot_n == rot_k, so that
 * in quick mode the algorithms share the pairs out instead of each running
 * them all. */
typedef struct rot { int n, k, off; } rot_t;

static long run_count(run_t *R, const coll_desc_t *c, const char *alg, size_t count, const pair_t *pairs,
                      int npairs, int cross_inplace, rot_t rot)
{
    long ncases = 0;
    for (int p = 0; p < npairs; p++) {
        if (rot.n > 1 && (p + rot.off) % rot.n != rot.k)
            continue;
        int nip = has_inplace(c->kind) ? (cross_inplace ? 2 : 1) : 1;
        for (int ip = 0; ip < nip; ip++) {
            case_t k = {.c = c, .alg = alg, .dt = pairs[p].dt, .op = pairs[p].op, .count = count};
            k.salt = ++R->case_no;
            k.inplace = has_inplace(c->kind) ? (cross_inplace ? ip : (int)(k.salt / 3 % 2)) : 0;
            k.root = (int)(k.salt % (uint64_t)R->size);
            k.api = c->nb ? 1 + (int)(k.salt / 2 % 2) : 0;
            k.soff = k.salt % 4;
            k.roff = (k.salt / 4) % 4;
            k.null_recv = (int)(k.salt / 5 % 2);
            if (run_case(R, &k) != 0 && R->opt->verbose)
                fprintf(stderr, "rank %d: case %" PRIu64 " failed\n", R->rank, k.salt);
            ncases++;
        }
    }
    return ncases;
}

static int all_pairs(kind_t kind, pair_t *out)
{
    int n = 0;
    for (int d = 0; d < RCOLL_DATATYPE_LAST; d++) {
        if (is_copy(kind)) {
            out[n++] = (pair_t){(rcoll_datatype_t)d, CHECK_OP_COPY};
            continue;
        }
        for (int o = 0; o < RCOLL_OP_LAST; o++)
            if (check_pair_valid((rcoll_datatype_t)d, (rcoll_op_t)o))
                out[n++] = (pair_t){(rcoll_datatype_t)d, (rcoll_op_t)o};
    }
    return n;
}

static int sub_pairs(kind_t kind, pair_t *out, int max)
{
    int n = 0;
    if (is_copy(kind)) {
        for (size_t i = 0; i < sizeof(big_copy_dts) / sizeof(big_copy_dts[0]) && n < max; i++)
            out[n++] = (pair_t){big_copy_dts[i], CHECK_OP_COPY};
    } else {
        for (size_t i = 0; i < sizeof(big_pairs) / sizeof(big_pairs[0]) && n < max; i++)
            out[n++] = big_pairs[i];
    }
    return n;
}

/* Elements for about `bytes` bytes of the whole vector of dtype dt. */
static size_t elems_for(run_t *R, const coll_desc_t *c, size_t bytes, rcoll_datatype_t dt)
{
    size_t n = bytes / rcoll_datatype_size(dt);
    if (c->kind == K_ALLGATHER || c->kind == K_REDUCE_SCATTER)
        n /= (size_t)R->size;   /* count is per rank */
    return n ? n : 1;
}

/* Algorithm number a of nalg (the selector counts as one). */
static long run_alg(run_t *R, const coll_desc_t *c, const char *alg, int a, int nalg)
{
    if (c->kind == K_BARRIER)
        return barrier_cases(R, c, alg);

    pair_t all[RCOLL_DATATYPE_LAST * RCOLL_OP_LAST], sub[16];
    int nall = all_pairs(c->kind, all);
    long ncases = 0;
    const rot_t none = {1, 0, 0};

    if (R->opt->count_list) {
        const char *p = R->opt->count_list;
        while (*p) {
            size_t cnt;
            char word[32];
            size_t len = strcspn(p, ",");
            snprintf(word, sizeof(word), "%.*s", (int)(len < 31 ? len : 31), p);
            if (check_parse_size(word, &cnt) == 0)
                ncases += run_count(R, c, alg, cnt, all, nall, 1, none);
            p += len;
            if (*p == ',')
                p++;
        }
        return ncases;
    }

    /*
     * What runs (a = this algorithm's index among nalg, the selector last).
     * Blocking calls are the nonblocking ones plus a wait inside the library,
     * so the nonblocking variants get a lighter share.  "rotated": every
     * pair once, shared out among the algorithms (a different share per
     * count), so every (dtype, op) meets every count and every algorithm
     * meets a share of the pairs, at a fraction of the cross product's time.
     *
     *             full blocking          full nonblocking   quick blocking     quick nonbl.
     * 0           3 pairs                3 pairs            3 pairs            1 pair
     * 1,7,1023    every pair (in place   rotated            rotated            rotated over
     *             or not, both at 7)                                           2x algorithms
     * eager +-1   8 pairs x 3 counts     2 pairs x 3        2 pairs x 1        none
     * 65537       rotated + 4 pairs      rotated            1 pair             1 pair
     * 3 MiB       2 pairs                1 pair             selector, 1 pair   none
     */
    const int quick = R->opt->quick, nb = c->nb, light = quick || nb;
    ncases += run_count(R, c, alg, 0, all, quick && nb ? 1 : 3, 0, none);
    static const size_t small[] = {1, 7, 1023};
    for (int i = 0; i < 3; i++) {
        rot_t rot = !light ? none : (rot_t){quick && nb ? 2 * nalg : nalg, a, i};
        ncases += run_count(R, c, alg, small[i], all, nall, !light && small[i] == 7, rot);
    }

    /* around the eager limit: one message of exactly the limit +-1 element,
     * and vectors whose per-step pieces cross it */
    int nsub = sub_pairs(c->kind, sub, 16);
    int neager = quick ? (nb ? 0 : 2) : (nb ? 2 : nsub);
    for (int p = 0; p < neager; p++) {
        const pair_t *pp = &sub[(p + a) % nsub];
        size_t es = rcoll_datatype_size(pp->dt), e = R->eager_limit / es;
        size_t counts[3] = {e + 1, e > 1 ? e - 1 : 1, e * (size_t)R->size + 3};
        for (int i = 0; i < (quick ? 1 : 3); i++)
            ncases += run_count(R, c, alg, counts[i], pp, 1, 0, none);
    }

    /* 65537 elements */
    if (quick) {
        ncases += run_count(R, c, alg, 65537, &sub[a % nsub], 1, 0, none);
    } else {
        ncases += run_count(R, c, alg, 65537, all, nall, 0, (rot_t){nalg, a, 0});
        for (int p = 0; p < (nb ? 0 : 4); p++)
            ncases += run_count(R, c, alg, 65537, &sub[(2 * p + a) % nsub], 1, 0, none);
    }

    /* a few MiB */
    int nbig = sub_pairs(c->kind, sub, 4);
    for (int p = 0; p < nbig; p++) {
        int run = quick ? (!nb && alg[0] == '\0' && p == 0)
                        : nb ? (p == a % nbig) : (p % 2 == a % 2);
        if (run)
            ncases += run_count(R, c, alg, elems_for(R, c, 3u << 20, sub[p].dt), &sub[p], 1, 0, none);
    }
    return ncases;
}

static void set_alg(run_t *R, const coll_desc_t *c, const char *alg)
{
    rcoll_status_t st = rcoll_config_set(R->ctx, c->cfgkey, alg);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL %s rank=%d: rcoll_config_set(%s, \"%s\") returned %s\n", c->name,
                R->rank, c->cfgkey, alg, rcoll_strerror(st));
        _exit(1);
    }
}

/* Returns 1 if the collective passed on every rank. */
static int run_coll(run_t *R, const coll_desc_t *c)
{
    const char *names[64];
    int nalg = rcoll_algorithms(c->base, names, 64);
    if (nalg < 0) {
        fprintf(stderr, "FAIL %s rank=%d: rcoll_algorithms(\"%s\") returned %d\n", c->name, R->rank,
                c->base, nalg);
        _exit(1);
    }
    if (nalg > 64)
        nalg = 64;
    double t0 = check_now();
    long ncases = 0, fail_before = R->nfail_local;
    for (int a = 0; a <= nalg; a++) {
        const char *alg = a < nalg ? names[a] : "";
        if (R->opt->alg_list && !check_list_has(R->opt->alg_list, alg_name(alg)))
            continue;
        /* the shared-memory algorithms need every rank on one node (forced
         * elsewhere they fail with RCOLL_ERR_NOT_SUPPORTED, by design) */
        if (strncmp(alg, "shm", 3) == 0 && rcoll_context_local_size(R->ctx) != R->size) {
            if (R->opt->verbose && R->rank == 0)
                printf("  %s alg=%s: skipped, the ranks are on several nodes\n", c->name, alg);
            continue;
        }
        double ta = check_now();
        long fa = R->nfail_local;
        set_alg(R, c, alg);
        long n = run_alg(R, c, alg, a, nalg + 1);
        ncases += n;
        if (R->opt->verbose && R->rank == 0)
            printf("  %s alg=%s: %ld cases%s (%.1f s)\n", c->name, alg_name(alg), n,
                   R->nfail_local != fa ? ", some FAILED on rank 0" : "", check_now() - ta);
    }
    set_alg(R, c, "");

    /* agree on the outcome; every collective used here now runs the selector's choice */
    int32_t mine = R->nfail_local != fail_before, any = 0;
    rcoll_status_t st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, R->world);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rank=%d: summary allreduce returned %s\n", R->rank, rcoll_strerror(st));
        _exit(1);
    }
    if (R->rank == 0) {
        if (any == 0 && !mine)
            printf("%s: %ld cases ok (%.1f s)\n", c->name, ncases, check_now() - t0);
        else
            printf("%s: %ld cases, FAILED on %d rank(s)\n", c->name, ncases, any ? any : 1);
        fflush(stdout);
    }
    return any == 0 && !mine;
}

int coll_check_known(const char *name)
{
    for (size_t i = 0; i < NCOLLS; i++)
        if (strcmp(colls[i].name, name) == 0)
            return 1;
    return 0;
}

void coll_check_print_names(FILE *out)
{
    for (size_t i = 0; i < NCOLLS; i++)
        fprintf(out, " %s", colls[i].name);
}

int coll_check_run(rcoll_context_t *ctx, const coll_check_opts_t *opt)
{
    run_t run = { .opt = opt, .ctx = ctx, .eager_limit = 8192 }, *R = &run;
    R->world = rcoll_comm_world(R->ctx);
    R->rank = rcoll_comm_rank(R->world);
    R->size = rcoll_comm_size(R->world);
    if (R->world == NULL || R->rank < 0 || R->size < 1 || R->rank >= R->size) {
        fprintf(stderr, "FAIL: bad world communicator (rank %d size %d)\n", R->rank, R->size);
        return 1;
    }
    const char *el = rcoll_config_get(R->ctx, "RCOLL_EAGER_LIMIT");
    if (el == NULL || check_parse_size(el, &R->eager_limit) != 0 || R->eager_limit == 0) {
        if (R->rank == 0)
            fprintf(stderr, "coll_check: cannot read RCOLL_EAGER_LIMIT ('%s'), using 8192\n",
                    el ? el : "(null)");
        R->eager_limit = 8192;
    }
    if (R->rank == 0 && R->opt->verbose)
        printf("coll_check: %d ranks, eager limit %zu bytes%s\n", R->size, R->eager_limit,
               R->opt->quick ? ", quick" : "");

    int ok = 1;
    double t0 = check_now();
    for (size_t i = 0; i < NCOLLS; i++)
        if (check_list_has(R->opt->coll_list, colls[i].name))
            ok &= run_coll(R, &colls[i]);
    if (R->rank == 0)
        printf("coll_check: %d ranks: %s (%.1f s)\n", R->size, ok ? "all ok" : "FAILED",
               check_now() - t0);
    fflush(stdout);
    return ok && R->nfail_local == 0 ? 0 : 1;
}
