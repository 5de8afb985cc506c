/*
 * rcoll_tune_model.c - the cost model's figures, measured.
 *
 * - alpha, beta, rndv_extra: ranks 0 and 1 alone, a bcast forced to
 *   binomial (on two ranks: one message) with the root alternating, so each
 *   call waits for the one before it: a ping-pong through the library's own
 *   point-to-point path, overheads included.  alpha: 8 B; beta: the slope
 *   between 1 MiB and 4 MiB; rndv_extra: what a message of twice the eager
 *   limit costs beyond alpha + bytes * beta.  When ranks 0 and 1 are on
 *   different nodes (one rank per node), the same gives alpha_inter and
 *   beta_inter instead (and no same-node figures).
 * - memcpy_beta: memcpy of 4 MiB (16 MiB unless --quick) on each rank.
 * - xcore_beta: on each node, local rank 1 copies out a buffer local rank 0
 *   has just written (a POSIX shared memory mapping): a cross-core copy.
 * - gamma (float32), gamma_float64, gamma_int32: the library's sum kernel
 *   over 1 MiB (4 MiB unless --quick).
 * Every figure is the maximum over the ranks that measured it (the slowest
 * governs a collective).
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "reduce.h"
#include "rcoll_tune.h"

#define NOT_MEASURED (-1.0)

/* Seconds per one-way message of bytes between the two ranks of pair. */
static double pingpong(tune_run_t *r, rcoll_comm_t *pair, void *buf, size_t bytes,
                       rcoll_status_t *st)
{
    double t[64];
    int reps = r->reps < 64 ? r->reps : 64;
    int calls = (int)(r->target / (bytes > 64 ? bytes : 64));

    calls = calls < 2 ? 2 : calls > 200 ? 200 : calls & ~1;
    for (int k = -1; k < reps; k++) {        /* k = -1: warm-up */
        if ((*st = rcoll_barrier(pair)) != RCOLL_OK)
            return -1;
        double t0 = tune_now();
        for (int i = 0; i < calls; i++)
            if ((*st = rcoll_bcast(buf, bytes, RCOLL_UINT8, i & 1, pair)) != RCOLL_OK)
                return -1;
        if (k >= 0)
            t[k] = (tune_now() - t0) / calls;
    }
    return tune_median(t, reps);
}

static rcoll_status_t measure_p2p(tune_run_t *r, double *v)
{
    rcoll_comm_t *pair = NULL;
    rcoll_status_t st = rcoll_comm_split(r->world, r->rank < 2 ? 0 : 1, r->rank, &pair);
    if (st != RCOLL_OK)
        return st;
    /* ranks 0 and 1 on one node: the same-node figures; else the
     * inter-node ones (e.g. one rank per node) */
    int same = 1;
    if (st == RCOLL_OK && r->rank < 2) {
        rcoll_comm_t *pn = NULL;
        st = rcoll_comm_split_node(pair, &pn);
        if (st == RCOLL_OK) {
            same = rcoll_comm_size(pn) == 2;
            st = rcoll_comm_free(pn);
        }
    }
    if (st == RCOLL_OK && r->rank < 2 && rcoll_alg_find(RCOLL_COLL_BCAST, "binomial") != NULL) {
        const char *e = rcoll_config_get(r->ctx, "RCOLL_EAGER_LIMIT");
        size_t eager = e ? strtoull(e, NULL, 10) : 16384, big = (size_t)4 << 20;
        void *buf = calloc(1, big);
        if (buf == NULL)
            st = RCOLL_ERR_NO_MEMORY;
        if (st == RCOLL_OK)
            st = tune_force(r, RCOLL_COLL_BCAST, "binomial");
        double t8 = -1, t1m = -1, t4m = -1, trndv = -1;
        if (st == RCOLL_OK)
            t8 = pingpong(r, pair, buf, 8, &st);
        if (st == RCOLL_OK)
            t1m = pingpong(r, pair, buf, big / 4, &st);
        if (st == RCOLL_OK)
            t4m = pingpong(r, pair, buf, big, &st);
        if (st == RCOLL_OK && 2 * eager <= big)
            trndv = pingpong(r, pair, buf, 2 * eager, &st);
        if (st == RCOLL_OK) {
            double beta = (t4m - t1m) / (double)(big - big / 4);
            if (!(beta > 0))
                beta = t4m / (double)big;
            v[same ? RCOLL_TUNE_ALPHA : RCOLL_TUNE_ALPHA_INTER] = t8;
            v[same ? RCOLL_TUNE_BETA : RCOLL_TUNE_BETA_INTER] = beta;
            if (same && trndv > 0) {
                double extra = trndv - (t8 + 2.0 * (double)eager * beta);
                v[RCOLL_TUNE_RNDV_EXTRA] = extra > 0 ? extra : 0;
            }
        }
        rcoll_status_t st2 = tune_force(r, RCOLL_COLL_BCAST, "");
        if (st == RCOLL_OK)
            st = st2;
        free(buf);
    }
    rcoll_status_t st2 = rcoll_comm_free(pair);
    return st != RCOLL_OK ? st : st2;
}

static void measure_memcpy(tune_run_t *r, double *v)
{
    size_t n = r->quick ? (size_t)4 << 20 : (size_t)16 << 20;
    char *a = malloc(n), *b = malloc(n);
    double t[64];
    int reps = r->reps < 64 ? r->reps : 64;

    if (a != NULL && b != NULL) {
        memset(a, 1, n);
        memset(b, 2, n);
        for (int k = 0; k < reps; k++) {
            double t0 = tune_now();
            memcpy(b, a, n);
            t[k] = tune_now() - t0;
            a[k] = b[n - 1 - (size_t)k];     /* keep the copy observable */
        }
        v[RCOLL_TUNE_MEMCPY_BETA] = tune_median(t, reps) / (double)n;
    }
    free(a);
    free(b);
}

static void measure_gamma(tune_run_t *r, double *v)
{
    static const struct { rcoll_datatype_t dtype; int key; } kinds[] = {
        { RCOLL_FLOAT32, RCOLL_TUNE_GAMMA },
        { RCOLL_FLOAT64, RCOLL_TUNE_GAMMA_FLOAT64 },
        { RCOLL_INT32,   RCOLL_TUNE_GAMMA_INT32 },
    };
    size_t n = r->quick ? (size_t)1 << 20 : (size_t)4 << 20;
    char *a = calloc(1, n), *b = calloc(1, n);
    double t[64];
    int reps = r->reps < 64 ? r->reps : 64;

    for (size_t i = 0; a != NULL && b != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t count = n / rcoll_datatype_size(kinds[i].dtype);
        rcoll_reduce_local(a, b, count, kinds[i].dtype, RCOLL_SUM);     /* warm-up */
        for (int k = 0; k < reps; k++) {
            double t0 = tune_now();
            rcoll_reduce_local(a, b, count, kinds[i].dtype, RCOLL_SUM);
            t[k] = tune_now() - t0;
        }
        v[kinds[i].key] = tune_median(t, reps) / (double)n;
    }
    free(a);
    free(b);
}

/* Local rank 1 times copying out what local rank 0 wrote just before. */
static rcoll_status_t measure_xcore(tune_run_t *r, double *v)
{
    rcoll_comm_t *node = NULL;
    rcoll_status_t st = rcoll_comm_split_node(r->world, &node);
    if (st != RCOLL_OK)
        return st;
    int lrank = rcoll_comm_rank(node), lsize = rcoll_comm_size(node);
    size_t n = r->quick ? (size_t)4 << 20 : (size_t)16 << 20;
    char name[64] = "";
    char *shared = MAP_FAILED, *priv = NULL;
    int reps = r->reps < 64 ? r->reps : 64;
    double t[64];

    if (lsize < 2)
        goto out;
    if (lrank == 0) {
        snprintf(name, sizeof(name), "/rcoll_tune.%ld", (long)getpid());
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
            name[0] = '\0';
        } else {
            shared = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
        if (fd >= 0)
            close(fd);
    }
    if ((st = rcoll_bcast(name, sizeof(name), RCOLL_UINT8, 0, node)) != RCOLL_OK)
        goto out;
    if (name[0] == '\0')
        goto out;
    if (lrank == 1) {
        int fd = shm_open(name, O_RDWR, 0600);
        if (fd >= 0) {
            shared = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
        priv = malloc(n);
        if (priv != NULL)
            memset(priv, 0, n);
    }
    if ((st = rcoll_barrier(node)) != RCOLL_OK)
        goto out;
    if (lrank == 0)
        shm_unlink(name);       /* both have it mapped (or never will) */
    for (int k = -1; k < reps; k++) {
        if (lrank == 0 && shared != MAP_FAILED)
            memset(shared, k + 2, n);          /* dirty in this core's cache */
        if ((st = rcoll_barrier(node)) != RCOLL_OK)
            goto out;
        if (lrank == 1 && shared != MAP_FAILED && priv != NULL) {
            double t0 = tune_now();
            memcpy(priv, shared, n);
            if (k >= 0)
                t[k] = tune_now() - t0;
        }
        if ((st = rcoll_barrier(node)) != RCOLL_OK)
            goto out;
    }
    if (lrank == 1 && shared != MAP_FAILED && priv != NULL)
        v[RCOLL_TUNE_XCORE_BETA] = tune_median(t, reps) / (double)n;
out:
    if (shared != MAP_FAILED)
        munmap(shared, n);
    free(priv);
    rcoll_status_t st2 = rcoll_comm_free(node);
    return st != RCOLL_OK ? st : st2;
}

rcoll_status_t tune_measure_model(tune_run_t *r, double value[RCOLL_TUNE_NKEYS])
{
    rcoll_status_t st;

    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++)
        value[k] = NOT_MEASURED;
    if ((st = measure_p2p(r, value)) != RCOLL_OK)
        return st;
    measure_memcpy(r, value);
    measure_gamma(r, value);
    if ((st = measure_xcore(r, value)) != RCOLL_OK)
        return st;
    if ((st = tune_max(r, value, RCOLL_TUNE_NKEYS)) != RCOLL_OK)
        return st;
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++) {
        double lo, hi;
        rcoll_tune_key_range(k, &lo, &hi);
        /* not measured, or outside what the parser accepts: leave it out */
        if (!(value[k] >= lo && value[k] <= hi))
            value[k] = NAN;
    }
    return RCOLL_OK;
}
