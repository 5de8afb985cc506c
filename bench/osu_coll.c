/*
 * osu_coll.c - OSU-style collective latency micro-benchmark.
 *
 * One source for every library measured: it talks to the library only
 * through osu_backend.h, and it is compiled once per collective with
 * -DOSU_COLL=OSU_ALLREDUCE (OSU_BCAST, OSU_REDUCE, OSU_ALLGATHER,
 * OSU_REDUCE_SCATTER, OSU_IALLREDUCE).  The timing method follows the OSU
 * micro-benchmarks: per message size, every rank runs `skip` warm-up
 * iterations and then `iterations` timed ones, timing each call on its own
 * and separating calls by a barrier; its latency is the mean of its timed
 * calls.  Rank 0 prints the average over ranks of those per-rank means and,
 * with -f, their minimum and maximum.  The statistics are reduced with the
 * measured library itself.  Sizes are separated by a barrier.
 *
 * Options (OSU's, plus a few):
 *   -m [MIN:]MAX   message sizes in bytes, powers of two from MIN to MAX
 *   -s LIST        explicit sizes instead, comma separated (e.g. 4,12,1000)
 *   -i ITER        timed iterations per size (default 1000, 100 above 8 KiB)
 *   -x WARMUP      warm-up iterations per size (default 100, 10 above 8 KiB)
 *   -T MS          scale iterations so each size takes about MS milliseconds
 *                  of collective time (calibrated on the warm-up, which still
 *                  runs its -x calls; overrides -i)
 *   -f             full statistics: min and max latency and the iteration count
 *   -c             validate every result (outside the timed region)
 *   -a ALGO        force an algorithm (rcoll back-end; "-a list" lists them)
 *   -t CALLS       (iallreduce) test calls during the compute phase (default 0)
 *   -d USEC        the last rank starts each timed call USEC later (outside the
 *                  timed region), so that the others are already waiting: with
 *                  -DOSU_CALLGRIND its instruction count is the critical path
 *   -h             help
 *
 * Built with -DOSU_CALLGRIND (bench/callgrind-overhead does), the timed calls
 * and nothing else are bracketed by callgrind's collection toggles, and each
 * is followed by a dump, so `valgrind --tool=callgrind --collect-atstart=no`
 * writes one profile per measured call holding exactly its instructions.
 */
#define _POSIX_C_SOURCE 200809L
#include "osu_backend.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OSU_ALLREDUCE      1
#define OSU_BCAST          2
#define OSU_REDUCE         3
#define OSU_ALLGATHER      4
#define OSU_REDUCE_SCATTER 5
#define OSU_IALLREDUCE     6
#define OSU_BARRIER        7    /* sizes are ignored: one row per size given (-s 1) */

#ifndef OSU_COLL
#error "compile with -DOSU_COLL=OSU_ALLREDUCE (or OSU_BCAST, OSU_REDUCE, OSU_ALLGATHER, OSU_REDUCE_SCATTER, OSU_IALLREDUCE, OSU_BARRIER)"
#endif

#if OSU_COLL == OSU_ALLREDUCE
#define COLL_TITLE "Allreduce"
#define COLL_NAME  "allreduce"
#define ELEM_SIZE  4
#elif OSU_COLL == OSU_BCAST
#define COLL_TITLE "Broadcast"
#define COLL_NAME  "bcast"
#define ELEM_SIZE  1
#elif OSU_COLL == OSU_REDUCE
#define COLL_TITLE "Reduce"
#define COLL_NAME  "reduce"
#define ELEM_SIZE  4
#elif OSU_COLL == OSU_ALLGATHER
#define COLL_TITLE "Allgather"
#define COLL_NAME  "allgather"
#define ELEM_SIZE  1
#elif OSU_COLL == OSU_REDUCE_SCATTER
#define COLL_TITLE "Reduce_scatter"
#define COLL_NAME  "reduce_scatter"
#define ELEM_SIZE  4
#elif OSU_COLL == OSU_IALLREDUCE
#define COLL_TITLE "Non-blocking Allreduce"
#define COLL_NAME  "allreduce"
#define ELEM_SIZE  4
#elif OSU_COLL == OSU_BARRIER
#define COLL_TITLE "Barrier"
#define COLL_NAME  "barrier"
#define ELEM_SIZE  1
#else
#error "unknown OSU_COLL"
#endif

#ifdef OSU_CALLGRIND
#include <valgrind/callgrind.h>
#define COUNT_BEGIN() CALLGRIND_TOGGLE_COLLECT
#define COUNT_END()   do { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; } while (0)
#else
#define COUNT_BEGIN() ((void)0)
#define COUNT_END()   ((void)0)
#endif

#define LARGE_MESSAGE_SIZE 8192
#define MAX_SIZES          256
#define FIELD_WIDTH        18
#define FLOAT_PRECISION    2

struct options {
    size_t sizes[MAX_SIZES];
    int    nsizes;
    long   iterations, iterations_large;
    long   skip, skip_large;
    double target_ms;       /* 0: fixed iteration counts */
    int    full;
    int    validate;
    const char *algorithm;  /* NULL: the library's choice */
    int    test_calls;      /* iallreduce: rcoll/MPI test calls while computing */
    long   late_us;         /* -d: the last rank's delay before each timed call */
};

static int rank, nranks;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A failed library call: say which, where, and stop this rank.  The
 * launcher notices the exit and stops the others. */
static void check(int rc, const char *call, size_t size, long iter)
{
    if (rc == 0)
        return;
    fprintf(stderr, "osu_%s: rank %d: %s failed (size %zu bytes, iteration %ld): %s\n",
            COLL_NAME, rank, call, size, iter, osu_be_strerror(rc));
    fflush(stderr);
    exit(1);
}

/* Option errors: every rank sees the same arguments, so rank 0 speaks. */
#define say_error(...) do { if (rank == 0) fprintf(stderr, __VA_ARGS__); } while (0)

static void usage(FILE *out)
{
    fprintf(out,
            "usage: osu_%s [-m [MIN:]MAX | -s S1,S2,...] [-i ITER] [-x WARMUP] [-T MS]\n"
            "              [-f] [-c] [-a ALGO|list] [-d USEC]%s [-h]\n"
            "  -m [MIN:]MAX  sizes in bytes, powers of two (default %d:1048576)\n"
            "  -s LIST       explicit sizes in bytes, comma separated\n"
            "  -i ITER       timed iterations per size (default 1000; 100 above %d B)\n"
            "  -x WARMUP     warm-up iterations per size (default 100; 10 above %d B)\n"
            "  -T MS         scale iterations so each size runs about MS ms\n"
            "  -f            full statistics (min, max, iterations)\n"
            "  -c            validate results\n"
            "  -a ALGO       force an algorithm (rcoll only); -a list prints them\n"
            "  -d USEC       the last rank starts each timed call USEC later (for\n"
            "                instruction counting, see bench/callgrind-overhead)\n"
#if OSU_COLL == OSU_IALLREDUCE
            "  -t CALLS      test calls during the compute phase (default 0)\n"
#endif
            ,
            COLL_NAME,
#if OSU_COLL == OSU_IALLREDUCE
            " [-t CALLS]",
#else
            "",
#endif
            ELEM_SIZE, LARGE_MESSAGE_SIZE, LARGE_MESSAGE_SIZE);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0 || v > (1ULL << 34))
        return -1;
    if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
    else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
    if (*end != '\0' && *end != ':' && *end != ',')
        return -1;
    *out = (size_t)v;
    return (int)(end - s);
}

static int parse_range(const char *arg, struct options *o)
{
    size_t lo = ELEM_SIZE, hi = 0;
    const char *colon = strchr(arg, ':');
    if (colon) {
        if (colon != arg && parse_size(arg, &lo) < 0)
            return -1;
        if (colon[1] == '\0')
            hi = 1 << 20;
        else if (parse_size(colon + 1, &hi) < 0)
            return -1;
    } else if (parse_size(arg, &hi) < 0) {
        return -1;
    }
    if (lo > hi)
        return -1;
    o->nsizes = 0;
    for (size_t s = lo; s <= hi && o->nsizes < MAX_SIZES; s *= 2)
        o->sizes[o->nsizes++] = s;
    return 0;
}

static int parse_list(const char *arg, struct options *o)
{
    o->nsizes = 0;
    for (const char *p = arg; *p;) {
        size_t v;
        int n = parse_size(p, &v);
        if (n < 0 || o->nsizes == MAX_SIZES)
            return -1;
        o->sizes[o->nsizes++] = v;
        p += n;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return -1;
    }
    return o->nsizes > 0 ? 0 : -1;
}

static long parse_count(const char *s, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min)
        return -1;
    return v;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    int opt;
    memset(o, 0, sizeof(*o));
    o->iterations = 1000;
    o->iterations_large = 100;
    o->skip = 100;
    o->skip_large = 10;
    parse_range(ELEM_SIZE == 4 ? "4:1048576" : "1:1048576", o);
    while ((opt = getopt(argc, argv, "m:s:i:x:T:fca:t:d:h")) != -1) {
        switch (opt) {
        case 'm':
            if (parse_range(optarg, o) < 0) {
                say_error("osu_%s: bad -m '%s' (want [MIN:]MAX, MIN <= MAX, sizes > 0)\n", COLL_NAME, optarg);
                return -1;
            }
            break;
        case 's':
            if (parse_list(optarg, o) < 0) {
                say_error("osu_%s: bad -s '%s' (want sizes > 0, comma separated, at most %d)\n",
                        COLL_NAME, optarg, MAX_SIZES);
                return -1;
            }
            break;
        case 'i':
            o->iterations = o->iterations_large = parse_count(optarg, 1);
            if (o->iterations < 0) {
                say_error("osu_%s: bad -i '%s' (want an integer >= 1)\n", COLL_NAME, optarg);
                return -1;
            }
            break;
        case 'x':
            o->skip = o->skip_large = parse_count(optarg, 0);
            if (o->skip < 0) {
                say_error("osu_%s: bad -x '%s' (want an integer >= 0)\n", COLL_NAME, optarg);
                return -1;
            }
            break;
        case 'T': {
            long ms = parse_count(optarg, 1);
            if (ms < 0) {
                say_error("osu_%s: bad -T '%s' (want milliseconds >= 1)\n", COLL_NAME, optarg);
                return -1;
            }
            o->target_ms = (double)ms;
            break;
        }
        case 't':
            o->test_calls = (int)parse_count(optarg, 0);
            if (o->test_calls < 0) {
                say_error("osu_%s: bad -t '%s' (want an integer >= 0)\n", COLL_NAME, optarg);
                return -1;
            }
            break;
        case 'd':
            o->late_us = parse_count(optarg, 0);
            if (o->late_us < 0) {
                say_error("osu_%s: bad -d '%s' (want microseconds >= 0)\n", COLL_NAME, optarg);
                return -1;
            }
            break;
        case 'f': o->full = 1; break;
        case 'c': o->validate = 1; break;
        case 'a': o->algorithm = optarg; break;
        case 'h':
            if (rank == 0)
                usage(stdout);
            osu_be_finalize();
            exit(0);
        default:
            if (rank == 0)
                usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        say_error("osu_%s: unexpected argument '%s'\n", COLL_NAME, argv[optind]);
        return -1;
    }
    return 0;
}

/* ---- buffers and validation -------------------------------------------- */

struct buffers {
    void  *send;
    void  *recv;
    size_t send_bytes, recv_bytes;
};

static void *alloc_touched(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, bytes) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

/* Input values are small integers so float32 sums are exact at any
 * realistic rank count. */
static inline float input_value(int r, size_t i) { return (float)((r + 1) * (int)(i % 7 + 1)); }
static inline float sum_value(size_t i) { return (float)((int)(i % 7 + 1) * nranks * (nranks + 1) / 2); }
static inline uint8_t byte_value(int r, size_t i) { return (uint8_t)(r * 31 + i * 7 + 3); }

/* Element count the collective is called with for a message of `size`
 * bytes, or 0 if the size does not fit the collective. */
static size_t count_for(size_t size)
{
#if OSU_COLL == OSU_REDUCE_SCATTER
    return size / ELEM_SIZE / (size_t)nranks;   /* size is the whole input */
#elif OSU_COLL == OSU_BARRIER
    (void)size;
    return 1;
#else
    return size % ELEM_SIZE ? 0 : size / ELEM_SIZE;
#endif
}

static void fill(struct buffers *b, size_t count)
{
    float *fs = b->send, *fr = b->recv;
    uint8_t *bs = b->send, *br = b->recv;
    (void)fs; (void)fr; (void)bs; (void)br;
#if OSU_COLL == OSU_ALLREDUCE || OSU_COLL == OSU_IALLREDUCE || OSU_COLL == OSU_REDUCE
    for (size_t i = 0; i < count; i++) {
        fs[i] = input_value(rank, i);
        fr[i] = -1.0f;
    }
#elif OSU_COLL == OSU_REDUCE_SCATTER
    for (size_t i = 0; i < count * (size_t)nranks; i++)
        fs[i] = input_value(rank, i);
    for (size_t i = 0; i < count; i++)
        fr[i] = -1.0f;
#elif OSU_COLL == OSU_BCAST
    for (size_t i = 0; i < count; i++)
        bs[i] = rank == 0 ? byte_value(0, i) : (uint8_t)~byte_value(0, i);
#elif OSU_COLL == OSU_ALLGATHER
    for (size_t i = 0; i < count; i++)
        bs[i] = byte_value(rank, i);
    memset(br, 0xee, count * (size_t)nranks);
#endif
}

/* Number of wrong elements in this rank's result. */
static long verify(const struct buffers *b, size_t count)
{
    const float *fr = b->recv;
    const uint8_t *bs = b->send, *br = b->recv;
    long bad = 0;
    (void)fr; (void)bs; (void)br;
#if OSU_COLL == OSU_ALLREDUCE || OSU_COLL == OSU_IALLREDUCE
    for (size_t i = 0; i < count; i++)
        bad += fr[i] != sum_value(i);
#elif OSU_COLL == OSU_REDUCE
    if (rank == 0)
        for (size_t i = 0; i < count; i++)
            bad += fr[i] != sum_value(i);
#elif OSU_COLL == OSU_REDUCE_SCATTER
    for (size_t i = 0; i < count; i++)
        bad += fr[i] != sum_value((size_t)rank * count + i);
#elif OSU_COLL == OSU_BCAST
    for (size_t i = 0; i < count; i++)
        bad += bs[i] != byte_value(0, i);
#elif OSU_COLL == OSU_ALLGATHER
    for (int r = 0; r < nranks; r++)
        for (size_t i = 0; i < count; i++)
            bad += br[(size_t)r * count + i] != byte_value(r, i);
#endif
    return bad;
}

/* ---- the measured call ---------------------------------------------------- */

/* One complete collective; for iallreduce, post + wait. */
static int run_once(struct buffers *b, size_t count, const char **what)
{
#if OSU_COLL == OSU_ALLREDUCE
    *what = "allreduce";
    return osu_be_allreduce_f32(b->send, b->recv, count);
#elif OSU_COLL == OSU_BCAST
    *what = "bcast";
    return osu_be_bcast(b->send, count, 0);
#elif OSU_COLL == OSU_REDUCE
    *what = "reduce";
    return osu_be_reduce_f32(b->send, b->recv, count, 0);
#elif OSU_COLL == OSU_ALLGATHER
    *what = "allgather";
    return osu_be_allgather(b->send, b->recv, count);
#elif OSU_COLL == OSU_REDUCE_SCATTER
    *what = "reduce_scatter";
    return osu_be_reduce_scatter_f32(b->send, b->recv, count);
#elif OSU_COLL == OSU_BARRIER
    (void)b; (void)count;
    *what = "barrier";
    return osu_be_barrier();
#elif OSU_COLL == OSU_IALLREDUCE
    osu_req_t req;
    *what = "iallreduce";
    int rc = osu_be_iallreduce_f32(b->send, b->recv, count, &req);
    if (rc != 0)
        return rc;
    *what = "wait";
    return osu_be_wait(&req);
#endif
}

/* One call, timed.  `counted` calls are also the only code callgrind counts
 * in an OSU_CALLGRIND build. */
static void timed_call(struct buffers *b, size_t count, size_t size, long iter, double *elapsed,
                       int counted)
{
    const char *what = "";
    double t0 = now();
    if (counted)
        COUNT_BEGIN();
    int rc = run_once(b, count, &what);
    if (counted)
        COUNT_END();
    *elapsed = now() - t0;
    check(rc, what, size, iter);
}

/* -d: let the other ranks get there first. */
static void late_rank_delay(const struct options *o)
{
    if (o->late_us > 0 && rank == nranks - 1) {
        struct timespec ts = {o->late_us / 1000000, (o->late_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

/* ---- per-size measurement ------------------------------------------------ */

struct sample {
    double latency_us;   /* this rank's mean; for iallreduce the overall time */
    double compute_us;   /* iallreduce only */
    double pure_us;      /* iallreduce only */
    long   iterations;
    long   errors;
};

/* The largest value any rank has: every rank must run the same number of
 * iterations, so counts derived from local timings are agreed on. */
static double agree_max(double v, size_t size, const char *what)
{
    double out = 0;
    check(osu_be_allreduce_f64(&v, &out, 1, OSU_OP_MAX), what, size, -1);
    return out;
}

/*
 * Warm up and return the number of timed iterations to run.  Every rank runs
 * `skip` warm-up calls (OSU's defaults: 100, or 10 above 8 KiB), -T or not:
 * libraries set up lazily (connections, registration caches, protocol
 * choice) and some need tens of calls per size to reach steady state, so a
 * short warm-up would time their set-up instead of their collective.  Only
 * when the warm-up alone would take far longer than the target (over 8x -T,
 * e.g. 16 MiB with -x 100) does it stop early, after at least 10 calls.
 * With -T the median of the second half of the warm-up calls (past the
 * set-up, robust to one preempted call on a shared machine) sets the
 * iteration count for the target time.  `calls` is how many collectives one
 * timed iteration holds (iallreduce times two phases).
 */
#define WARMUP_TIMES_MAX 1024

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long warm_up(const struct options *o, struct buffers *b, size_t size, size_t count, int calls)
{
    long iters = size > LARGE_MESSAGE_SIZE ? o->iterations_large : o->iterations;
    long skip = size > LARGE_MESSAGE_SIZE ? o->skip_large : o->skip;
    static double times[WARMUP_TIMES_MAX];
    double t, spent = 0, limit = 8 * o->target_ms * 1e-3;
    long n = 0;

    if (o->validate)
        fill(b, count);
    check(osu_be_barrier(), "barrier before the warm-up", size, -1);
    for (long i = 0; i < skip; i++) {
        timed_call(b, count, size, i, &t, 0);
        check(osu_be_barrier(), "barrier", size, i);
        if (n < WARMUP_TIMES_MAX)
            times[n++] = t;
        spent += t;
        /* Every rank must take the same branch: agree on the time spent. */
        if (o->target_ms > 0 && i + 1 >= 10 && i + 1 < skip && (i + 1) % 10 == 0 &&
            agree_max(spent, size, "allreduce(float64 max) of the warm-up time") > limit)
            break;
    }
    if (o->target_ms <= 0)
        return iters;
    double per_call;
    if (n == 0) {
        timed_call(b, count, size, 0, &per_call, 0);
        check(osu_be_barrier(), "barrier", size, 0);
    } else {
        long half = n / 2;
        qsort(times + half, (size_t)(n - half), sizeof(double), cmp_double);
        per_call = times[half + (n - half) / 2];
    }
    double want = per_call > 0 ? o->target_ms * 1e-3 / (per_call * calls) : 1e6;
    if (want < 3)
        want = 3;
    if (want > 1e6)
        want = 1e6;
    return (long)agree_max(want, size, "allreduce(float64 max) of iteration counts");
}

#if OSU_COLL != OSU_IALLREDUCE
static struct sample measure(const struct options *o, struct buffers *b, size_t size, size_t count)
{
    struct sample s = {0};
    long iters = warm_up(o, b, size, count, 1);
    double timer = 0, t;
    for (long i = 0; i < iters; i++) {
        if (o->validate)
            fill(b, count);
        late_rank_delay(o);
        timed_call(b, count, size, i, &t, 1);
        timer += t;
        if (o->validate)
            s.errors += verify(b, count);
        check(osu_be_barrier(), "barrier", size, i);
    }
    s.latency_us = timer * 1e6 / (double)iters;
    s.iterations = iters;
    return s;
}
#else
/* Busy computation for `seconds`, with `test_calls` evenly spaced tests of
 * the outstanding request (OSU's -t). */
static void compute_for(double seconds, osu_req_t *req, int test_calls, int *done, size_t size)
{
    double start = now(), step = seconds / (test_calls + 1);
    volatile double x = 1.0;
    int tests = 0;
    while (now() - start < seconds) {
        for (int k = 0; k < 64; k++)
            x = x * 1.0000001 + 1e-9;
        if (tests < test_calls && !*done && now() - start >= step * (tests + 1)) {
            check(osu_be_test(req, done), "test during compute", size, -1);
            tests++;
        }
    }
}

/* OSU's overlap method: first the pure communication time (post + wait),
 * then post, compute for that long (optionally testing), wait. */
static struct sample measure(const struct options *o, struct buffers *b, size_t size, size_t count)
{
    struct sample s = {0};
    long iters = warm_up(o, b, size, count, 2);
    double timer = 0, t;

    for (long i = 0; i < iters; i++) {
        if (o->validate)
            fill(b, count);
        late_rank_delay(o);
        timed_call(b, count, size, i, &t, 1);
        timer += t;
        if (o->validate)
            s.errors += verify(b, count);
        check(osu_be_barrier(), "barrier", size, i);
    }
    double pure = timer / (double)iters;

    double overall = 0, compute = 0;
    for (long i = 0; i < iters; i++) {
        osu_req_t req;
        int done = 0;
        if (o->validate)
            fill(b, count);
        double t0 = now();
        check(osu_be_iallreduce_f32(b->send, b->recv, count, &req), "iallreduce", size, i);
        double c0 = now();
        compute_for(pure, &req, o->test_calls, &done, size);
        double c1 = now();
        if (!done)
            check(osu_be_wait(&req), "wait", size, i);
        double t1 = now();
        overall += t1 - t0;
        compute += c1 - c0;
        if (o->validate)
            s.errors += verify(b, count);
        check(osu_be_barrier(), "barrier", size, i);
    }
    s.pure_us = pure * 1e6;
    s.latency_us = overall * 1e6 / (double)iters;
    s.compute_us = compute * 1e6 / (double)iters;
    s.iterations = iters;
    return s;
}
#endif

/* ---- output ------------------------------------------------------------ */

static void print_header(const struct options *o)
{
    if (rank != 0)
        return;
    printf("# OSU MPI-style %s Latency Test (rcoll bench/osu_coll.c)\n", COLL_TITLE);
    printf("# Library: %s, %d ranks, algorithm: %s\n", osu_be_name(), nranks,
           o->algorithm ? o->algorithm : "library default");
#if ELEM_SIZE == 4
    printf("# Datatype: float32, op: sum.\n");
#else
    printf("# Datatype: bytes.\n");
#endif
#if OSU_COLL == OSU_IALLREDUCE
    printf("# Overall = Coll. Init + Compute + Test + Wait\n\n");
    printf("# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%%)");
    if (o->full)
        printf("      Min Overall(us)   Max Overall(us)  Iterations");
#else
    printf("# Size       Avg Latency(us)");
    if (o->full)
        printf("   Min Latency(us)   Max Latency(us)  Iterations");
#endif
    if (o->validate)
        printf("  Validation");
    printf("\n");
    fflush(stdout);
}

/* Reduce one rank's sample over all ranks with the measured library and
 * print the line on rank 0.  Returns the number of wrong elements seen. */
static long report(const struct options *o, size_t size, const struct sample *s)
{
    double sums[3] = {s->latency_us, s->compute_us, s->pure_us}, tsum[3];
    double mins = s->latency_us, tmin;
    double maxs[2] = {s->latency_us, (double)s->errors}, tmax[2];
    check(osu_be_allreduce_f64(sums, tsum, 3, OSU_OP_SUM), "allreduce(float64 sum) of timings", size, -1);
    check(osu_be_allreduce_f64(&mins, &tmin, 1, OSU_OP_MIN), "allreduce(float64 min) of timings", size, -1);
    check(osu_be_allreduce_f64(maxs, tmax, 2, OSU_OP_MAX), "allreduce(float64 max) of timings", size, -1);
    if (rank != 0)
        return (long)tmax[1];

    double avg = tsum[0] / nranks;
#if OSU_COLL == OSU_IALLREDUCE
    double compute = tsum[1] / nranks, pure = tsum[2] / nranks;
    double overlap = pure > 0 ? 100.0 - (avg - compute) / pure * 100.0 : 0.0;
    if (overlap < 0)
        overlap = 0;
    if (overlap > 100)
        overlap = 100;
    printf("%-10zu%*.*f%*.*f%*.*f%*.*f", size, FIELD_WIDTH, FLOAT_PRECISION, avg,
           FIELD_WIDTH, FLOAT_PRECISION, compute, FIELD_WIDTH, FLOAT_PRECISION, pure,
           FIELD_WIDTH, FLOAT_PRECISION, overlap);
    if (o->full)
        printf("   %*.*f%*.*f%*ld", FIELD_WIDTH, FLOAT_PRECISION, tmin, FIELD_WIDTH,
               FLOAT_PRECISION, tmax[0], 12, s->iterations);
#else
    printf("%-10zu%*.*f", size, FIELD_WIDTH, FLOAT_PRECISION, avg);
    if (o->full)
        printf("%*.*f%*.*f%*ld", FIELD_WIDTH, FLOAT_PRECISION, tmin, FIELD_WIDTH,
               FLOAT_PRECISION, tmax[0], 12, s->iterations);
#endif
    if (o->validate)
        printf("%12s", tmax[1] == 0 ? "Pass" : "Fail");
    printf("\n");
    fflush(stdout);
    return (long)tmax[1];
}

int main(int argc, char **argv)
{
    struct options o;
    int rc = osu_be_init(&argc, &argv);
    if (rc != 0) {
        fprintf(stderr, "osu_%s: library initialisation failed: %s\n", COLL_NAME, osu_be_strerror(rc));
        return 1;
    }
    rank = osu_be_rank();
    nranks = osu_be_size();
    if (parse_options(argc, argv, &o) < 0)
        return 2;   /* every rank parsed the same arguments and stops here */

    if (o.algorithm && strcmp(o.algorithm, "list") == 0) {
        if (rank == 0 && osu_be_list_algorithms(COLL_NAME) < 0)
            fprintf(stderr, "osu_%s: this library cannot list algorithms\n", COLL_NAME);
        osu_be_finalize();
        return 0;
    }
    if (o.algorithm) {
        const char *why = "";
        if (osu_be_force_algorithm(COLL_NAME, o.algorithm, &why) != 0) {
            if (rank == 0)
                fprintf(stderr, "osu_%s: cannot force algorithm '%s': %s\n", COLL_NAME, o.algorithm, why);
            return 2;
        }
    }

    size_t max_size = 0;
    for (int i = 0; i < o.nsizes; i++)
        max_size = o.sizes[i] > max_size ? o.sizes[i] : max_size;
    struct buffers b;
    b.send_bytes = max_size;
    b.recv_bytes = max_size;
#if OSU_COLL == OSU_ALLGATHER
    b.recv_bytes = max_size * (size_t)nranks;
#endif
    b.send = alloc_touched(b.send_bytes);
    b.recv = alloc_touched(b.recv_bytes);
    if (!b.send || !b.recv) {
        fprintf(stderr, "osu_%s: rank %d: cannot allocate %zu + %zu bytes of buffers\n", COLL_NAME,
                rank, b.send_bytes, b.recv_bytes);
        return 1;
    }

    print_header(&o);
    long errors = 0;
    for (int i = 0; i < o.nsizes; i++) {
        size_t size = o.sizes[i], count = count_for(size);
        if (count == 0) {
            if (rank == 0)
                printf("# size %zu skipped: needs a multiple of %d bytes%s\n", size, ELEM_SIZE,
                       OSU_COLL == OSU_REDUCE_SCATTER ? " per rank" : "");
            continue;
        }
#if OSU_COLL == OSU_REDUCE_SCATTER
        size = count * ELEM_SIZE * (size_t)nranks;
#endif
        struct sample s = measure(&o, &b, size, count);
        errors += report(&o, size, &s);
        check(osu_be_barrier(), "barrier between sizes", size, -1);
    }
    free(b.send);
    free(b.recv);
    rc = osu_be_finalize();
    if (rc != 0) {
        fprintf(stderr, "osu_%s: rank %d: finalize failed: %s\n", COLL_NAME, rank, osu_be_strerror(rc));
        return 1;
    }
    if (errors && rank == 0)
        fprintf(stderr, "osu_%s: validation failed (%ld wrong elements on the worst rank at some size)\n",
                COLL_NAME, errors);
    return errors ? 3 : 0;
}
