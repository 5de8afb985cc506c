/*
 * scale_check - what one rank costs: resident memory and rcoll_init time,
 * measured for docs/scaling.md "Memory and start-up" (issue 11 item 5).
 *
 *   rcollrun -n P test/integration/scale_check
 *
 * Every rank reads /proc/self/status (VmRSS, VmHWM, RssAnon, RssShmem)
 * before rcoll_init, after it, and after one 8-byte allreduce on the world,
 * and times rcoll_init (wall clock and this process's CPU time).  Rank 0
 * prints one line of the maxima and minima over the ranks:
 *
 *   scale p=16 init_wall_ms=.. init_cpu_ms=.. rss_init_kb=.. rss_coll_kb=..
 *         anon_kb=.. shmem_kb=.. hwm_kb=.. rss_base_kb=.. (min_...=..)
 *
 * where every *_kb figure but rss_base is the growth over the figure before
 * rcoll_init (so the program's own pages and the libraries' text cancel),
 * measured after the allreduce.  With SCALE_CHECK_TALK=1 every rank then
 * also talks to every other (one 2-rank communicator per pair, made with
 * rcoll_comm_create_group, one 8-byte allreduce on it, freed; the rank
 * count must be a power of two), so that every endpoint made on first use
 * exists, and rss_talk_kb / shmem_talk_kb are the growth after that
 * (0 without).  scale_check.sh runs it at two rank counts and compares the
 * growth per extra rank with the formula.  Exit status 0 if every rank
 * initialised and every sum was right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "rcoll.h"

enum { F_RSS_INIT, F_RSS_COLL, F_ANON, F_SHMEM, F_HWM, F_WALL_US, F_CPU_US, F_BASE, F_RSS_TALK,
       F_SHMEM_TALK, NF };
static const char *const field_name[NF] = {
    "rss_init_kb", "rss_coll_kb", "anon_kb", "shmem_kb", "hwm_kb", "init_wall_ms", "init_cpu_ms",
    "rss_base_kb", "rss_talk_kb", "shmem_talk_kb",
};

typedef struct {
    long rss, hwm, anon, shmem;   /* kB, from /proc/self/status */
} mem_t;

static long status_kb(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p != NULL ? strtol(p + strlen(key), NULL, 10) : -1;
}

static int read_mem(mem_t *m)
{
    char text[8192];
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    m->rss = status_kb(text, "VmRSS:");
    m->hwm = status_kb(text, "VmHWM:");
    m->anon = status_kb(text, "RssAnon:");
    m->shmem = status_kb(text, "RssShmem:");
    return m->rss < 0 || m->hwm < 0 || m->anon < 0 || m->shmem < 0 ? -1 : 0;
}

static double now_us(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Talk to every other rank: partner rank ^ k for k = 1 .. size-1 (size a
 * power of two, so the pairing is symmetric), one allreduce on a 2-rank
 * communicator of the pair. */
static int talk_to_all(rcoll_comm_t *world, int rank, int size)
{
    if (size & (size - 1)) {
        fprintf(stderr, "scale_check: SCALE_CHECK_TALK needs a power-of-two rank count, not %d\n",
                size);
        return -1;
    }
    for (int k = 1; k < size; k++) {
        int peer = rank ^ k;
        int ranks[2] = { rank < peer ? rank : peer, rank < peer ? peer : rank };
        rcoll_comm_t *pair;
        rcoll_status_t st = rcoll_comm_create_group(world, ranks, 2, k, &pair);
        int64_t one = 1, sum = 0;
        if (st == RCOLL_OK) {
            st = rcoll_allreduce(&one, &sum, 1, RCOLL_INT64, RCOLL_SUM, pair);
            rcoll_status_t fst = rcoll_comm_free(pair);
            st = st != RCOLL_OK ? st : fst;
        }
        if (st != RCOLL_OK || sum != 2) {
            fprintf(stderr, "scale_check rank %d: talking to rank %d: %s, sum %lld\n", rank, peer,
                    rcoll_strerror(st), (long long)sum);
            return -1;
        }
    }
    return 0;
}

int main(void)
{
    mem_t before, inited, after;
    if (read_mem(&before) != 0) {
        fprintf(stderr, "scale_check: cannot read /proc/self/status\n");
        return 1;
    }
    double w0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_PROCESS_CPUTIME_ID);
    rcoll_context_t *ctx;
    rcoll_status_t st = rcoll_init(NULL, &ctx);
    double w1 = now_us(CLOCK_MONOTONIC), c1 = now_us(CLOCK_PROCESS_CPUTIME_ID);
    if (st != RCOLL_OK) {
        fprintf(stderr, "scale_check: rcoll_init: %s\n", rcoll_strerror(st));
        return 1;
    }
    read_mem(&inited);
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int rank = rcoll_comm_rank(world), size = rcoll_comm_size(world);
    int64_t one = 1, sum = 0;
    st = rcoll_allreduce(&one, &sum, 1, RCOLL_INT64, RCOLL_SUM, world);
    if (st != RCOLL_OK || sum != size) {
        fprintf(stderr, "scale_check rank %d: allreduce: %s, sum %lld of %d\n", rank,
                rcoll_strerror(st), (long long)sum, size);
        return 1;
    }
    read_mem(&after);
    mem_t talked = before;
    const char *talk = getenv("SCALE_CHECK_TALK");
    if (talk != NULL && strcmp(talk, "1") == 0) {
        if (talk_to_all(world, rank, size) != 0) {
            return 1;
        }
        read_mem(&talked);
    }

    int64_t v[NF], hi[NF], lo[NF];
    v[F_RSS_INIT] = inited.rss - before.rss;
    v[F_RSS_COLL] = after.rss - before.rss;
    v[F_ANON] = after.anon - before.anon;
    v[F_SHMEM] = after.shmem - before.shmem;
    v[F_HWM] = after.hwm - before.hwm;
    v[F_WALL_US] = (int64_t)(w1 - w0);
    v[F_CPU_US] = (int64_t)(c1 - c0);
    v[F_BASE] = before.rss;
    v[F_RSS_TALK] = talked.rss - before.rss;
    v[F_SHMEM_TALK] = talked.shmem - before.shmem;
    if (rcoll_allreduce(v, hi, NF, RCOLL_INT64, RCOLL_MAX, world) != RCOLL_OK ||
        rcoll_allreduce(v, lo, NF, RCOLL_INT64, RCOLL_MIN, world) != RCOLL_OK) {
        fprintf(stderr, "scale_check rank %d: gathering the figures failed\n", rank);
        return 1;
    }
    if (rank == 0) {
        printf("scale p=%d", size);
        for (int i = 0; i < NF; i++) {
            int ms = i == F_WALL_US || i == F_CPU_US;
            printf(" %s=%lld", field_name[i], (long long)(ms ? hi[i] / 1000 : hi[i]));
        }
        for (int i = 0; i < NF; i++) {
            int ms = i == F_WALL_US || i == F_CPU_US;
            printf(" min_%s=%lld", field_name[i], (long long)(ms ? lo[i] / 1000 : lo[i]));
        }
        printf("\n");
        fflush(stdout);
    }
    return rcoll_finalize(ctx) == RCOLL_OK ? 0 : 1;
}
