/*
 * rcoll_tune - measure this machine and write a tune file (docs/tuning.md).
 *
 *   rcollrun -n 2 rcoll_tune -o FILE [--quick] [--reps N] [--model-only]
 *
 * Run under any launcher with 2 or more ranks.  It measures the cost
 * model's figures (rcoll_tune_model.c), then for every collective, every
 * algorithm that can run on this job and sizes 8 B .. 16 MiB (log-spaced)
 * the time per call with the algorithm forced: the median of several
 * repetitions on each rank, the maximum over the ranks.  Rank 0 writes the
 * fastest per size as rules (the previous size's winner kept unless beaten
 * by more than 10%; adjacent sizes with one winner merged into a range;
 * ranks= the job's size) and the figures as `model KEY VALUE` lines,
 * and the sizes at which the shm bcast, allgather and reduce should read
 * straight from the owner's memory (`shm cma_* RANGE` lines,
 * rcoll_tune_cma.c) and the receive-buffer size from which streaming
 * copies pay (`shm stream_min`, rcoll_tune_stream.c) and, on 2 ranks, the
 * largest allreduce that takes the flat path (`shm pair_flat_max`,
 * rcoll_tune_flat.c), then reads the file back with the library's parser.
 * The single-copy sizes are measured before the crossovers, and the
 * crossovers timed with them (rcoll_selector_set_cma), so the rules pick
 * shm where the single-copy path makes it the fastest.
 * --model-only: the
 * figures and no rules (seconds, not a minute: what a check that prices
 * with the model needs, e.g. test/integration/model_check.sh).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rcoll_tune.h"

#define SWITCH_MARGIN 0.10          /* see write_rules */
#define MAX_SIZES 16
#define MAX_ALGS  16
#define MAX_BYTES ((size_t)16 << 20)    /* largest size measured */
#define MAX_TOTAL ((size_t)64 << 20)    /* largest buffer one call may need */

typedef struct {
    size_t size[MAX_SIZES];
    int    nsizes;
    const rcoll_alg_t *alg[MAX_ALGS];
    int    nalgs;
    double t[MAX_ALGS][MAX_SIZES];      /* s per call, max over ranks; INFINITY: not run */
} coll_result_t;

static void usage(FILE *out)
{
    fprintf(out, "usage: rcoll_tune -o FILE [--quick] [--reps N] [--model-only] [-v]\n"
            "  run under a launcher with 2 or more ranks, e.g. rcollrun -n 2 rcoll_tune -o tune\n"
            "  --quick   fewer sizes and repetitions (under a minute on 2 ranks)\n"
            "  --reps N  timed repetitions per point (median kept; default 9, --quick 5)\n"
            "  --model-only  the model's figures only, no rules (seconds)\n");
}

/* 8 B .. 16 MiB: every 4x (--quick: every 8x), and 16 MiB itself. */
static void sizes_for(const tune_run_t *r, rcoll_coll_type_t coll, coll_result_t *cr)
{
    cr->nsizes = 0;
    if (coll == RCOLL_COLL_BARRIER) {
        cr->size[cr->nsizes++] = 0;
        return;
    }
    size_t step = r->quick ? 8 : 4, max = MAX_BYTES;
    int per_block = coll == RCOLL_COLL_ALLGATHER || coll == RCOLL_COLL_REDUCE_SCATTER;
    for (size_t b = 8; b <= max && cr->nsizes < MAX_SIZES; b = b * step >= max && b < max ? max : b * step) {
        if (per_block && b * (size_t)r->size > MAX_TOTAL)
            break;
        cr->size[cr->nsizes++] = b;
    }
}

/* The algorithms that can run here: finite cost under the model with this
 * job's shape (shm only on one node with RCOLL_SHM=1). */
static int runnable(const tune_run_t *r, const rcoll_alg_t *a, size_t bytes)
{
    rcoll_model_t m;
    const char *shm = rcoll_config_get(r->ctx, "RCOLL_SHM");

    rcoll_selector_model_for(NULL, &m);
    m.shm = m.shm_node = shm != NULL && strcmp(shm, "1") == 0;
    if (r->nnodes > 1 && !m.shm_node)
        m.shm = 0;
    double c = a->cost ? a->cost(&m, bytes, r->size, r->ppn) : 0;
    return isfinite(c);
}

static rcoll_status_t measure_coll(tune_run_t *r, rcoll_coll_type_t coll, coll_result_t *cr)
{
    const rcoll_alg_t *const *a = rcoll_coll_algs(coll);
    rcoll_status_t st = RCOLL_OK;

    sizes_for(r, coll, cr);
    cr->nalgs = 0;
    for (; a != NULL && *a != NULL && cr->nalgs < MAX_ALGS; a++) {
        int i = cr->nalgs++;
        cr->alg[i] = *a;
        if ((st = tune_force(r, coll, (*a)->name)) != RCOLL_OK)
            return st;
        for (int s = 0; s < cr->nsizes; s++) {
            cr->t[i][s] = INFINITY;
            if (!runnable(r, *a, cr->size[s]))
                continue;
            double t = tune_time_coll(r, coll, cr->size[s], &st);
            if (st != RCOLL_OK) {
                fprintf(stderr, "rcoll_tune: rank %d: %s %s %zu B failed: %s\n", r->rank,
                        rcoll_coll_name(coll), (*a)->name, cr->size[s], rcoll_strerror(st));
                return st;
            }
            cr->t[i][s] = t;
        }
    }
    if ((st = tune_force(r, coll, "")) != RCOLL_OK)
        return st;
    /* max over ranks, row by row (INFINITY stays INFINITY) */
    for (int i = 0; i < cr->nalgs && st == RCOLL_OK; i++)
        st = tune_max(r, cr->t[i], cr->nsizes);
    return st;
}

/* Rules: the winner per size; a range switches halfway (geometrically)
 * between two measured sizes with different winners. */
static void write_rules(FILE *f, const tune_run_t *r, rcoll_coll_type_t coll,
                        const coll_result_t *cr)
{
    int win[MAX_SIZES];

    fprintf(f, "\n# %s: us per call (max over ranks, median of %d); * = chosen\n",
            rcoll_coll_name(coll), r->reps);
    for (int s = 0; s < cr->nsizes; s++) {
        win[s] = -1;
        for (int i = 0; i < cr->nalgs; i++)
            if (isfinite(cr->t[i][s]) && (win[s] < 0 || cr->t[i][s] < cr->t[win[s]][s]))
                win[s] = i;
        /* the previous size's winner stays unless beaten by more than
         * SWITCH_MARGIN: noise does not cut the sizes into flapping ranges */
        int prev = s > 0 ? win[s - 1] : -1;
        if (prev >= 0 && win[s] >= 0 && isfinite(cr->t[prev][s]) &&
            cr->t[prev][s] <= cr->t[win[s]][s] * (1 + SWITCH_MARGIN))
            win[s] = prev;
        fprintf(f, "#   %9zu B:", cr->size[s]);
        for (int i = 0; i < cr->nalgs; i++)
            if (isfinite(cr->t[i][s]))
                fprintf(f, " %s %.2f%s", cr->alg[i]->name, cr->t[i][s] * 1e6, i == win[s] ? "*" : "");
        fputc('\n', f);
    }
    size_t lo = 0;
    for (int s = 0; s < cr->nsizes; s++) {
        if (win[s] < 0)
            continue;
        int next = s + 1;
        while (next < cr->nsizes && win[next] < 0)
            next++;
        if (next < cr->nsizes && win[next] == win[s])
            continue;                      /* the range goes on */
        char range[64];
        if (coll == RCOLL_COLL_BARRIER) {
            snprintf(range, sizeof(range), "*");
        } else if (next >= cr->nsizes) {
            snprintf(range, sizeof(range), "%zu-*", lo);
        } else {
            size_t mid = (size_t)ceil(sqrt((double)cr->size[s] * (double)cr->size[next]));
            snprintf(range, sizeof(range), "%zu-%zu", lo, mid - 1);
            lo = mid;
        }
        fprintf(f, "%-15s %-20s %-22s ranks=%d\n", rcoll_coll_name(coll), range,
                cr->alg[win[s]]->name, r->size);
    }
}

static void cpu_model(char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");

    snprintf(buf, len, "unknown");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
            colon += 1 + strspn(colon + 1, " \t");
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    if (f != NULL)
        fclose(f);
}

static int write_file(const char *path, const tune_run_t *r, const double *model,
                      const coll_result_t *res, const tune_cma_t *cma,
                      const tune_stream_t *stream, const tune_flat_t *flat, int model_only)
{
    char tmp[4096], cpu[256], date[64];
    time_t now = time(NULL);
    struct tm tm;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        perror(tmp);
        return -1;
    }
    cpu_model(cpu, sizeof(cpu));
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "# rcoll tune file, written by rcoll_tune (docs/tuning.md)\n"
            "# cpu: %s\n# date: %s\n# rcoll: %d.%d.%d\n# ranks: %d (%d per node, %d node%s)\n"
            "# mode: %s, %d repetitions per point\n\n", cpu, date, RCOLL_VERSION_MAJOR,
            RCOLL_VERSION_MINOR, RCOLL_VERSION_PATCH, r->size, r->ppn, r->nnodes,
            r->nnodes == 1 ? "" : "s", r->quick ? "quick" : "full", r->reps);
    fprintf(f, "# measured figures (the selector prices with the first six; docs/tuning.md)\n");
    for (int k = 0; k < RCOLL_TUNE_NKEYS; k++) {
        if (isnan(model[k]))
            fprintf(f, "# model %s: not measured\n", rcoll_tune_key_name(k));
        else
            fprintf(f, "model %-14s %.4g   # %s\n", rcoll_tune_key_name(k), model[k],
                    rcoll_tune_key_unit(k));
    }
    if (!model_only) {
        tune_write_cma(f, r, cma);
        tune_write_stream(f, r, stream);
        tune_write_flat(f, r, flat);
    }
    for (int c = 0; c < RCOLL_COLL_LAST; c++)
        if (res[c].nsizes > 0)          /* none measured: --model-only */
            write_rules(f, r, (rcoll_coll_type_t)c, &res[c]);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* Most ranks on one node and the number of nodes, agreed by every rank. */
static rcoll_status_t job_shape(tune_run_t *r)
{
    rcoll_comm_t *node = NULL;
    rcoll_status_t st = rcoll_comm_split_node(r->world, &node);
    if (st != RCOLL_OK)
        return st;
    double mine[2] = { rcoll_comm_size(node), rcoll_comm_rank(node) == 0 }, all[2];
    st = rcoll_comm_free(node);
    if (st == RCOLL_OK)
        st = rcoll_allreduce(&mine[0], &all[0], 1, RCOLL_FLOAT64, RCOLL_MAX, r->world);
    if (st == RCOLL_OK)
        st = rcoll_allreduce(&mine[1], &all[1], 1, RCOLL_FLOAT64, RCOLL_SUM, r->world);
    r->ppn = (int)all[0];
    r->nnodes = (int)all[1];
    return st;
}

int main(int argc, char **argv)
{
    tune_run_t r;
    const char *out = NULL;
    int model_only = 0;
    static coll_result_t res[RCOLL_COLL_LAST];
    static tune_cma_t cma;
    static tune_stream_t stream;
    static tune_flat_t flat;
    double model[RCOLL_TUNE_NKEYS];
    /* an installed tune file must not steer the measuring itself */
    const char *const config[] = { "RCOLL_TUNE_FILE=none", NULL };
    int rc = 1;

    memset(&r, 0, sizeof(r));
    r.reps = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            r.quick = 1;
        } else if (strcmp(argv[i], "--model-only") == 0) {
            model_only = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            r.reps = atoi(argv[++i]);
            if (r.reps < 1 || r.reps > 64) {
                fprintf(stderr, "rcoll_tune: --reps takes 1 .. 64\n");
                return 2;
            }
        } else if (strcmp(argv[i], "-v") == 0) {
            r.verbose = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (out == NULL) {
        usage(stderr);
        return 2;
    }
    if (r.reps == 0)
        r.reps = r.quick ? 5 : 9;
    r.target = r.quick ? (size_t)64 << 10 : (size_t)1 << 20;

    rcoll_comm_t *xcomm = NULL;
    rcoll_status_t st = rcoll_init(config, &r.ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "rcoll_tune: rcoll_init failed: %s\n", rcoll_strerror(st));
        return 1;
    }
    r.world = rcoll_comm_world(r.ctx);
    r.comm = r.world;
    r.rank = rcoll_comm_rank(r.world);
    r.size = rcoll_comm_size(r.world);
    if (r.size < 2) {
        if (r.rank == 0)
            fprintf(stderr, "rcoll_tune: run it with 2 or more ranks (rcollrun -n 2 rcoll_tune "
                    "-o FILE)\n");
        goto done;
    }
    if ((st = job_shape(&r)) != RCOLL_OK)
        goto fail;
    r.buf_bytes = MAX_BYTES * (size_t)r.size < MAX_TOTAL ? MAX_BYTES * (size_t)r.size : MAX_TOTAL;
    if (r.buf_bytes < MAX_BYTES)
        r.buf_bytes = MAX_BYTES;
    r.sbuf = malloc(r.buf_bytes);
    r.rbuf = malloc(r.buf_bytes);
    if (r.sbuf == NULL || r.rbuf == NULL) {
        fprintf(stderr, "rcoll_tune: rank %d: no memory for 2 x %zu B of buffers\n", r.rank,
                r.buf_bytes);
        goto done;
    }
    for (size_t i = 0; i < r.buf_bytes / sizeof(float); i++)
        ((float *)r.sbuf)[i] = 1.0f;
    memset(r.rbuf, 0, r.buf_bytes);

    if (r.rank == 0)
        fprintf(stderr, "rcoll_tune: %d ranks, %s: the model's figures\n", r.size,
                r.quick ? "quick" : "full");
    if ((st = tune_measure_model(&r, model)) != RCOLL_OK)
        goto fail;
    if (!model_only) {
        /* single copy first: the crossovers below are timed on a communicator whose
         * segment takes the sizes just measured, as a job with this file would */
        if (r.rank == 0)
            fprintf(stderr, "rcoll_tune: shared-memory single copy (RCOLL_SHM_CMA)\n");
        if ((st = tune_measure_cma(&r, &cma)) != RCOLL_OK)
            goto fail;
        if (r.rank == 0)
            fprintf(stderr, "rcoll_tune: streaming copies into receive buffers "
                    "(RCOLL_SHM_STREAM_MIN)\n");
        if ((st = tune_measure_stream(&r, &stream)) != RCOLL_OK)
            goto fail;
        /* the crossovers below run on segments set up with the value found,
         * as a job with this file would (measured: the same on every rank) */
        if (stream.measured) {
            char v[32];
            if (stream.min == SIZE_MAX)
                snprintf(v, sizeof(v), "off");
            else
                snprintf(v, sizeof(v), "%zu", stream.min);
            if ((st = rcoll_config_set(r.ctx, "RCOLL_SHM_STREAM_MIN", v)) != RCOLL_OK)
                goto fail;
        }
        if (r.rank == 0)
            fprintf(stderr, "rcoll_tune: the largest flat allreduce on 2 ranks "
                    "(RCOLL_SHM_PAIR_FLAT_MAX)\n");
        if ((st = tune_measure_flat(&r, &flat)) != RCOLL_OK)
            goto fail;
        if (flat.measured) {
            char v[32];
            snprintf(v, sizeof(v), "%zu", flat.max);
            if ((st = rcoll_config_set(r.ctx, "RCOLL_SHM_PAIR_FLAT_MAX", v)) != RCOLL_OK)
                goto fail;
        }
        /* measured is the same on every rank (cma_possible_here is, and a
         * failure ends the run), so the dup is collective where it happens;
         * not measured, the world's segment already has the default sizes */
        if (cma.measured || stream.measured || flat.measured) {
            for (int w = 0; w < RCOLL_TUNE_NCMA && cma.measured; w++)
                rcoll_selector_set_cma(r.ctx, w, cma.lo[w], cma.hi[w]);
            if ((st = rcoll_comm_dup(r.world, &xcomm)) != RCOLL_OK)
                goto fail;
            r.comm = xcomm;
        }
    }
    for (int c = 0; c < RCOLL_COLL_LAST && !model_only; c++) {
        if (r.rank == 0)
            fprintf(stderr, "rcoll_tune: %s\n", rcoll_coll_name((rcoll_coll_type_t)c));
        if ((st = measure_coll(&r, (rcoll_coll_type_t)c, &res[c])) != RCOLL_OK)
            goto fail;
    }
    rc = 0;
    if (r.rank == 0) {
        rcoll_tune_t check;
        char err[512];
        if (write_file(out, &r, model, res, &cma, &stream, &flat, model_only) != 0) {
            rc = 1;
        } else if (rcoll_tune_parse_file(out, &check, err, sizeof(err)) != RCOLL_OK) {
            fprintf(stderr, "rcoll_tune: the file written does not parse: %s\n", err);
            rc = 1;
        } else {
            fprintf(stderr, "rcoll_tune: wrote %s (%d rules); use it with RCOLL_TUNE_FILE=%s "
                    "or install it as %s\n", out, check.nrules, out, rcoll_tune_default_path());
            rcoll_tune_free(&check);
        }
    }
    goto done;
fail:
    fprintf(stderr, "rcoll_tune: rank %d: %s\n", r.rank, rcoll_strerror(st));
done:
    if (xcomm != NULL)
        rcoll_comm_free(xcomm);
    free(r.sbuf);
    free(r.rbuf);
    rcoll_finalize(r.ctx);
    return rc;
}
