/*
 * coll_check - every collective x algorithm x dtype x op x count x in-place
 * x alignment x root, checked against results each rank computes locally.
 *
 * Launch with any PMIx launcher, e.g.  rcollrun -n 5 test/integration/coll_check --quick
 *
 *   --quick        fewer sizes and combinations (CI sanity run)
 *   --coll LIST    comma-separated collectives (allreduce,iallreduce,bcast,ibcast,
 *                  barrier,ibarrier,reduce,ireduce,allgather,iallgather,
 *                  reduce_scatter,ireduce_scatter); default all
 *   --algs LIST    comma-separated algorithm names; "auto" = the selector's choice
 *   --counts LIST  use exactly these counts (elements) with every dtype x op
 *   -v             per-algorithm progress lines from rank 0
 *
 * Each rank fills its buffers from a formula of (rank, index, case), so the
 * expected result is computed without communication and compared exactly
 * (see check_common.c for why floats are exact too).  Besides the result it
 * checks guard bytes before and after every buffer, that sendbuf is not
 * modified, and that reduce leaves a non-root's recvbuf alone.  A non-OK
 * status from the library ends the run at once (peers would otherwise wait
 * for this rank); data mismatches are counted and the run goes on.  Rank 0
 * prints one line per collective; exit status 0 only if every rank passed.
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

static struct {
    int         quick, verbose;
    const char *coll_list, *alg_list, *count_list;
} opt;

static rcoll_context_t *ctx;
static rcoll_comm_t    *world;
static int              rank, size;
static uint64_t         case_no;
static long             nfail_local;
static int              nprinted;
static size_t           eager_limit = 8192;

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

static void fail(const case_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const case_t *k, const char *fmt, ...)
{
    nfail_local++;
    if (nprinted >= 20) {
        if (nprinted++ == 20)
            fprintf(stderr, "rank %d: further failures not printed\n", rank);
        return;
    }
    nprinted++;
    char desc[512], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    case_desc(k, desc, sizeof(desc));
    fprintf(stderr, "FAIL %s rank=%d: %s\n", desc, rank, msg);
}

/* A non-OK status: peers may now be blocked on this rank, so stop. */
static void fatal_status(const case_t *k, const char *call, rcoll_status_t st)
{
    char desc[512];
    case_desc(k, desc, sizeof(desc));
    fprintf(stderr, "FAIL %s rank=%d: %s returned %d (%s)\n", desc, rank, call, (int)st,
            rcoll_strerror(st));
    fflush(stderr);
    _exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, n);
        _exit(3);
    }
    return p;
}

static void alloc_buf(check_buf_t *b, size_t bytes, size_t off)
{
    if (check_buf_alloc(b, bytes, off) != 0) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, bytes);
        _exit(3);
    }
}

/* Compare region got[0..n) with exp; report the first bad index. */
static int compare_result(const case_t *k, const char *what, const void *got, const void *exp,
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
    fail(k, "%s: first bad index %zu (%zu of %zu elements wrong): got %s expected %s", what, bad,
         nbad, n, g, e);
    return 1;
}

static int check_guards(const case_t *k, const char *what, const check_buf_t *b)
{
    long where;
    int side = check_buf_guards(b, &where);
    if (side == 0)
        return 0;
    fail(k, "%s: guard byte %s the buffer modified (byte offset %ld, buffer %zu bytes)", what,
         side < 0 ? "before" : "after", where, b->bytes);
    return 1;
}

/* reqp, not req: the call that fills it is an argument of this one, and C
 * leaves the order of argument evaluation unspecified. */
static void finish_request(const case_t *k, const char *call, rcoll_status_t st,
                           rcoll_request_t **reqp)
{
    rcoll_request_t *req = *reqp;
    if (st != RCOLL_OK)
        fatal_status(k, call, st);
    if (req == NULL) {
        fail(k, "%s returned OK but no request", call);
        return;
    }
    st = k->api == 2 ? check_test_loop(req, 300) : rcoll_wait(req);
    if (st != RCOLL_OK)
        fatal_status(k, k->api == 2 ? "rcoll_test" : "rcoll_wait", st);
}

/* Run one case; returns 0 if it passed on this rank. */
static int run_case(const case_t *k)
{
    const kind_t kind = k->c->kind;
    const size_t es = rcoll_datatype_size(k->dt), n = k->count;
    const rcoll_op_t fop = k->op;
    const int is_root = rank == k->root;
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
        send_elems = n; recv_elems = res_elems = (size_t)size * n; use_send = !k->inplace;
        break;
    case K_REDUCE_SCATTER:
        send_elems = (size_t)size * n;
        recv_elems = k->inplace ? (size_t)size * n : n;
        res_idx0 = (size_t)rank * n;
        use_send = !k->inplace;
        break;
    default: return 0;
    }

    check_buf_t sb = {0}, rb = {0};
    unsigned char *scopy = NULL, *exp = NULL;
    if (use_send) {
        alloc_buf(&sb, send_elems * es, k->soff);
        check_fill(k->dt, fop, rank, size, 0, send_elems, k->salt, sb.ptr);
        scopy = xmalloc(send_elems * es);
        memcpy(scopy, sb.ptr, send_elems * es);
    }
    if (use_recv) {
        alloc_buf(&rb, recv_elems * es, k->roff);
        check_buf_junk(&rb);
        if (k->inplace && kind != K_ALLGATHER && (kind != K_REDUCE || is_root))
            check_fill(k->dt, fop, rank, size, 0, recv_elems, k->salt, rb.ptr);
        if (k->inplace && kind == K_ALLGATHER)
            check_fill(k->dt, fop, rank, size, 0, n, k->salt, rb.ptr + (size_t)rank * n * es);
        if (kind == K_BCAST && is_root)
            check_fill(k->dt, fop, rank, size, 0, n, k->salt, rb.ptr);
    }
    const void *sp = use_send ? (const void *)sb.ptr : RCOLL_IN_PLACE;
    void *rp = use_recv ? (void *)rb.ptr : NULL;

    rcoll_status_t st;
    rcoll_request_t *req = NULL;
    switch (kind) {
    case K_ALLREDUCE:
        if (k->api == 0) {
            if ((st = rcoll_allreduce(sp, rp, n, k->dt, k->op, world)) != RCOLL_OK)
                fatal_status(k, "rcoll_allreduce", st);
        } else {
            finish_request(k, "rcoll_iallreduce",
                           rcoll_iallreduce(sp, rp, n, k->dt, k->op, world, &req), &req);
        }
        break;
    case K_BCAST:
        if (k->api == 0) {
            if ((st = rcoll_bcast(rp, n, k->dt, k->root, world)) != RCOLL_OK)
                fatal_status(k, "rcoll_bcast", st);
        } else {
            finish_request(k, "rcoll_ibcast", rcoll_ibcast(rp, n, k->dt, k->root, world, &req),
                           &req);
        }
        break;
    case K_REDUCE:
        if (k->api == 0) {
            if ((st = rcoll_reduce(sp, rp, n, k->dt, k->op, k->root, world)) != RCOLL_OK)
                fatal_status(k, "rcoll_reduce", st);
        } else {
            finish_request(k, "rcoll_ireduce",
                           rcoll_ireduce(sp, rp, n, k->dt, k->op, k->root, world, &req), &req);
        }
        break;
    case K_ALLGATHER:
        if (k->api == 0) {
            if ((st = rcoll_allgather(sp, rp, n, k->dt, world)) != RCOLL_OK)
                fatal_status(k, "rcoll_allgather", st);
        } else {
            finish_request(k, "rcoll_iallgather", rcoll_iallgather(sp, rp, n, k->dt, world, &req),
                           &req);
        }
        break;
    case K_REDUCE_SCATTER:
        if (k->api == 0) {
            if ((st = rcoll_reduce_scatter(sp, rp, n, k->dt, k->op, world)) != RCOLL_OK)
                fatal_status(k, "rcoll_reduce_scatter", st);
        } else {
            finish_request(k, "rcoll_ireduce_scatter",
                           rcoll_ireduce_scatter(sp, rp, n, k->dt, k->op, world, &req), &req);
        }
        break;
    default: break;
    }

    /* the result */
    int check_result = use_recv && (kind != K_REDUCE || is_root);
    if (check_result) {
        exp = xmalloc(res_elems * es);
        if (kind == K_BCAST) {
            check_fill(k->dt, fop, k->root, size, 0, n, k->salt, exp);
        } else if (kind == K_ALLGATHER) {
            for (int r = 0; r < size; r++)
                check_fill(k->dt, fop, r, size, 0, n, k->salt, exp + (size_t)r * n * es);
        } else {
            int *all = xmalloc(sizeof(int) * (size_t)size);
            for (int r = 0; r < size; r++)
                all[r] = r;
            check_expect(k->dt, k->op, all, size, size, res_idx0, res_elems, k->salt, exp);
            free(all);
        }
        fails += compare_result(k, "result", rb.ptr, exp, res_elems);
    } else if (use_recv) {
        /* reduce at a non-root: recvbuf is not significant, must stay as given */
        unsigned char *junk = xmalloc(recv_elems * es);
        memset(junk, 0xee, recv_elems * es);
        if (memcmp(junk, rb.ptr, recv_elems * es) != 0)
            fails += compare_result(k, "non-root recvbuf modified", rb.ptr, junk, recv_elems);
        free(junk);
    }
    if (use_recv)
        fails += check_guards(k, "recvbuf", &rb);
    if (use_send) {
        fails += check_guards(k, "sendbuf", &sb);
        if (memcmp(scopy, sb.ptr, send_elems * es) != 0)
            fails += compare_result(k, "sendbuf modified", sb.ptr, scopy, send_elems);
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

static void do_barrier(const case_t *k)
{
    rcoll_status_t st;
    rcoll_request_t *req = NULL;
    if (k->api == 0) {
        if ((st = rcoll_barrier(world)) != RCOLL_OK)
            fatal_status(k, "rcoll_barrier", st);
    } else {
        finish_request(k, "rcoll_ibarrier", rcoll_ibarrier(world, &req), &req);
    }
}

/*
 * Back-to-back barriers, then with each rank in turn entering late: no rank
 * may leave before the last one entered.  Entry and exit times are on
 * CLOCK_MONOTONIC, which is shared by the processes of one node, so this is
 * checked only when all ranks are on one node.
 */
static long barrier_cases(const coll_desc_t *c, const char *alg)
{
    case_t k = {.c = c, .alg = alg, .dt = RCOLL_INT64, .op = CHECK_OP_COPY};
    long ncases = 0;
    int reps = opt.quick ? 10 : 50;
    for (int i = 0; i < reps; i++, ncases++) {
        k.salt = ++case_no;
        k.api = c->nb ? 1 + (int)(k.salt % 2) : 0;
        do_barrier(&k);
    }
    int one_node = rcoll_context_local_size(ctx) == size;
    int64_t *entries = xmalloc(sizeof(int64_t) * (size_t)size);
    for (int late = 0; late < size; late++, ncases++) {
        k.salt = ++case_no;
        k.api = c->nb ? 1 + (int)(k.salt % 2) : 0;
        k.root = late;
        do_barrier(&k);
        if (rank == late)
            check_sleep(0.02);
        int64_t t_in = (int64_t)(check_now() * 1e9);
        do_barrier(&k);
        int64_t t_out = (int64_t)(check_now() * 1e9);
        rcoll_status_t st = rcoll_allgather(&t_in, entries, 1, RCOLL_INT64, world);
        if (st != RCOLL_OK)
            fatal_status(&k, "rcoll_allgather (barrier entry times)", st);
        if (!one_node)
            continue;
        for (int r = 0; r < size; r++) {
            if (entries[r] > t_out) {
                fail(&k, "rank %d left the barrier %.3f ms before rank %d (late rank %d) entered it",
                     rank, (double)(entries[r] - t_out) / 1e6, r, late);
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

static long run_count(const coll_desc_t *c, const char *alg, size_t count, const pair_t *pairs,
                      int npairs, int cross_inplace, rot_t rot)
{
    long ncases = 0;
    for (int p = 0; p < npairs; p++) {
        if (rot.n > 1 && (p + rot.off) % rot.n != rot.k)
            continue;
        int nip = has_inplace(c->kind) ? (cross_inplace ? 2 : 1) : 1;
        for (int ip = 0; ip < nip; ip++) {
            case_t k = {.c = c, .alg = alg, .dt = pairs[p].dt, .op = pairs[p].op, .count = count};
            k.salt = ++case_no;
            k.inplace = has_inplace(c->kind) ? (cross_inplace ? ip : (int)(k.salt / 3 % 2)) : 0;
            k.root = (int)(k.salt % (uint64_t)size);
            k.api = c->nb ? 1 + (int)(k.salt / 2 % 2) : 0;
            k.soff = k.salt % 4;
            k.roff = (k.salt / 4) % 4;
            k.null_recv = (int)(k.salt / 5 % 2);
            if (run_case(&k) != 0 && opt.verbose)
                fprintf(stderr, "rank %d: case %" PRIu64 " failed\n", rank, k.salt);
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
static size_t elems_for(const coll_desc_t *c, size_t bytes, rcoll_datatype_t dt)
{
    size_t n = bytes / rcoll_datatype_size(dt);
    if (c->kind == K_ALLGATHER || c->kind == K_REDUCE_SCATTER)
        n /= (size_t)size;   /* count is per rank */
    return n ? n : 1;
}

/* Algorithm number a of nalg (the selector counts as one). */
static long run_alg(const coll_desc_t *c, const char *alg, int a, int nalg)
{
    if (c->kind == K_BARRIER)
        return barrier_cases(c, alg);

    pair_t all[RCOLL_DATATYPE_LAST * RCOLL_OP_LAST], sub[16];
    int nall = all_pairs(c->kind, all);
    long ncases = 0;
    const rot_t none = {1, 0, 0};

    if (opt.count_list) {
        const char *p = opt.count_list;
        while (*p) {
            size_t cnt;
            char word[32];
            size_t len = strcspn(p, ",");
            snprintf(word, sizeof(word), "%.*s", (int)(len < 31 ? len : 31), p);
            if (check_parse_size(word, &cnt) == 0)
                ncases += run_count(c, alg, cnt, all, nall, 1, none);
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
    const int quick = opt.quick, nb = c->nb, light = quick || nb;
    ncases += run_count(c, alg, 0, all, quick && nb ? 1 : 3, 0, none);
    static const size_t small[] = {1, 7, 1023};
    for (int i = 0; i < 3; i++) {
        rot_t rot = !light ? none : (rot_t){quick && nb ? 2 * nalg : nalg, a, i};
        ncases += run_count(c, alg, small[i], all, nall, !light && small[i] == 7, rot);
    }

    /* around the eager limit: one message of exactly the limit +-1 element,
     * and vectors whose per-step pieces cross it */
    int nsub = sub_pairs(c->kind, sub, 16);
    int neager = quick ? (nb ? 0 : 2) : (nb ? 2 : nsub);
    for (int p = 0; p < neager; p++) {
        const pair_t *pp = &sub[(p + a) % nsub];
        size_t es = rcoll_datatype_size(pp->dt), e = eager_limit / es;
        size_t counts[3] = {e + 1, e > 1 ? e - 1 : 1, e * (size_t)size + 3};
        for (int i = 0; i < (quick ? 1 : 3); i++)
            ncases += run_count(c, alg, counts[i], pp, 1, 0, none);
    }

    /* 65537 elements */
    if (quick) {
        ncases += run_count(c, alg, 65537, &sub[a % nsub], 1, 0, none);
    } else {
        ncases += run_count(c, alg, 65537, all, nall, 0, (rot_t){nalg, a, 0});
        for (int p = 0; p < (nb ? 0 : 4); p++)
            ncases += run_count(c, alg, 65537, &sub[(2 * p + a) % nsub], 1, 0, none);
    }

    /* a few MiB */
    int nbig = sub_pairs(c->kind, sub, 4);
    for (int p = 0; p < nbig; p++) {
        int run = quick ? (!nb && alg[0] == '\0' && p == 0)
                        : nb ? (p == a % nbig) : (p % 2 == a % 2);
        if (run)
            ncases += run_count(c, alg, elems_for(c, 3u << 20, sub[p].dt), &sub[p], 1, 0, none);
    }
    return ncases;
}

static void set_alg(const coll_desc_t *c, const char *alg)
{
    rcoll_status_t st = rcoll_config_set(ctx, c->cfgkey, alg);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL %s rank=%d: rcoll_config_set(%s, \"%s\") returned %s\n", c->name,
                rank, c->cfgkey, alg, rcoll_strerror(st));
        _exit(1);
    }
}

/* Returns 1 if the collective passed on every rank. */
static int run_coll(const coll_desc_t *c)
{
    const char *names[64];
    int nalg = rcoll_algorithms(c->base, names, 64);
    if (nalg < 0) {
        fprintf(stderr, "FAIL %s rank=%d: rcoll_algorithms(\"%s\") returned %d\n", c->name, rank,
                c->base, nalg);
        _exit(1);
    }
    if (nalg > 64)
        nalg = 64;
    double t0 = check_now();
    long ncases = 0, fail_before = nfail_local;
    for (int a = 0; a <= nalg; a++) {
        const char *alg = a < nalg ? names[a] : "";
        if (opt.alg_list && !check_list_has(opt.alg_list, alg_name(alg)))
            continue;
        double ta = check_now();
        long fa = nfail_local;
        set_alg(c, alg);
        long n = run_alg(c, alg, a, nalg + 1);
        ncases += n;
        if (opt.verbose && rank == 0)
            printf("  %s alg=%s: %ld cases%s (%.1f s)\n", c->name, alg_name(alg), n,
                   nfail_local != fa ? ", some FAILED on rank 0" : "", check_now() - ta);
    }
    set_alg(c, "");

    /* agree on the outcome; every collective used here now runs the selector's choice */
    int32_t mine = nfail_local != fail_before, any = 0;
    rcoll_status_t st = rcoll_allreduce(&mine, &any, 1, RCOLL_INT32, RCOLL_SUM, world);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rank=%d: summary allreduce returned %s\n", rank, rcoll_strerror(st));
        _exit(1);
    }
    if (rank == 0) {
        if (any == 0 && !mine)
            printf("%s: %ld cases ok (%.1f s)\n", c->name, ncases, check_now() - t0);
        else
            printf("%s: %ld cases, FAILED on %d rank(s)\n", c->name, ncases, any ? any : 1);
        fflush(stdout);
    }
    return any == 0 && !mine;
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--quick] [--coll LIST] [--algs LIST] [--counts LIST] [-v]\n"
            "  collectives:", prog);
    for (size_t i = 0; i < NCOLLS; i++)
        fprintf(stderr, " %s", colls[i].name);
    fprintf(stderr, "\n  algorithms: names from rcoll_algorithms(), \"auto\" = selector\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            opt.quick = 1;
        } else if (!strcmp(argv[i], "-v")) {
            opt.verbose = 1;
        } else if (!strcmp(argv[i], "--coll") && i + 1 < argc) {
            opt.coll_list = argv[++i];
        } else if (!strcmp(argv[i], "--algs") && i + 1 < argc) {
            opt.alg_list = argv[++i];
        } else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
            opt.count_list = argv[++i];
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    if (opt.coll_list) {   /* reject unknown names before starting */
        char *copy = strdup(opt.coll_list);
        for (char *w = strtok(copy, ","); w; w = strtok(NULL, ",")) {
            size_t i;
            for (i = 0; i < NCOLLS && strcmp(colls[i].name, w); i++)
                ;
            if (i == NCOLLS) {
                fprintf(stderr, "unknown collective '%s'\n", w);
                usage(argv[0]);
                return 2;
            }
        }
        free(copy);
    }

    rcoll_status_t st = rcoll_init(NULL, &ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rcoll_init: %s\n", rcoll_strerror(st));
        return 1;
    }
    world = rcoll_comm_world(ctx);
    rank = rcoll_comm_rank(world);
    size = rcoll_comm_size(world);
    if (world == NULL || rank < 0 || size < 1 || rank >= size) {
        fprintf(stderr, "FAIL: bad world communicator (rank %d size %d)\n", rank, size);
        return 1;
    }
    const char *el = rcoll_config_get(ctx, "RCOLL_EAGER_LIMIT");
    if (el == NULL || check_parse_size(el, &eager_limit) != 0 || eager_limit == 0) {
        if (rank == 0)
            fprintf(stderr, "coll_check: cannot read RCOLL_EAGER_LIMIT ('%s'), using 8192\n",
                    el ? el : "(null)");
        eager_limit = 8192;
    }
    if (rank == 0 && opt.verbose)
        printf("coll_check: %d ranks, eager limit %zu bytes%s\n", size, eager_limit,
               opt.quick ? ", quick" : "");

    int ok = 1;
    double t0 = check_now();
    for (size_t i = 0; i < NCOLLS; i++)
        if (check_list_has(opt.coll_list, colls[i].name))
            ok &= run_coll(&colls[i]);
    if (rank == 0)
        printf("coll_check: %d ranks: %s (%.1f s)\n", size, ok ? "all ok" : "FAILED",
               check_now() - t0);
    fflush(stdout);

    st = rcoll_finalize(ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL rank=%d: rcoll_finalize returned %s\n", rank, rcoll_strerror(st));
        ok = 0;
    }
    return ok && nfail_local == 0 ? 0 : 1;
}
