/*
 * flood_check - a root far ahead of its receivers must not grow either side
 * past RCOLL_UNEXPECTED_MAX (issue 12 item 4; docs/protocols.md, "Flow
 * control of eager messages").
 *
 * Launch with at least 2 ranks, shared-memory collectives off so that the
 * bcasts take the network path (the program sets RCOLL_SHM=0 itself):
 *   rcollrun -n 2 test/integration/flood_check [-v] [--count N] [--len BYTES]
 *                                               [--max BYTES] [--slack BYTES]
 *
 * Every rank resets its peak RSS (/proc/self/clear_refs) after a warm-up.
 * The root then calls --count (10000) blocking bcasts of --len (16 KiB,
 * eager) bytes at once; the others first spend 2 s progressing rcoll
 * without posting them (testing an ibcast on a duplicate communicator that
 * the root joins only at the end), so the root runs ahead by as many as
 * flow control lets it and what it sends reaches the receivers unexpected.  Every rank checks every bcast's data
 * (a pattern of its index), then that its peak RSS grew by at most --max
 * (RCOLL_UNEXPECTED_MAX; given to rcoll_init when set, else the default it
 * reads back) plus --slack (default 16 MiB + half the bound: a message
 * queued in the transport costs more than its bytes (a UCX request, a
 * bounce buffer) and the heap fragments; over UCX tcp at 3 ranks with the
 * default 64 MiB bound the root peaked between +32 and +82 MiB in 6 runs on
 * a loaded machine).  Without the bound the receiver keeps all of it (10000
 * x 16 KiB = 156 MiB) and the root as much in its queued sends.  The ranks
 * agree on the outcome with one allreduce.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcoll.h"
#include "check_common.h"

#define DELAY_S 2.0

static int wrank, wsize, verbose;
static long nfail;

#define FAILF(...) do { nfail++; fprintf(stderr, "FAIL flood_check rank %d: ", wrank); \
                        fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define fatal(what, st) check_fatal("flood_check", wrank, (what), (st))

/* A field of /proc/self/status in bytes ("VmHWM", "VmRSS"); 0 if absent. */
static size_t status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0, n = strlen(field);
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kb = strtoull(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

/* Reset the peak RSS to the current RSS; 0 if the kernel did. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f == NULL) {
        return -1;
    }
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static unsigned char pattern(size_t i, size_t k)
{
    return (unsigned char)((i * 131u + k * 7u + (k >> 8) + 1u) & 0xff);
}

int main(int argc, char **argv)
{
    size_t count = 10000, len = 16384, slack = 0, max = 0;
    int slack_set = 0;
    char maxopt[64] = "";
    for (int i = 1; i < argc; i++) {
        size_t *dst = NULL;
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--count")) dst = &count;
        else if (!strcmp(argv[i], "--len")) dst = &len;
        else if (!strcmp(argv[i], "--max")) dst = &max;
        else if (!strcmp(argv[i], "--slack")) dst = &slack;
        if (dst == NULL || i + 1 >= argc || check_parse_size(argv[i + 1], dst) != 0) {
            fprintf(stderr, "usage: %s [-v] [--count N] [--len BYTES] [--max BYTES] "
                    "[--slack BYTES]\n", argv[0]);
            return 2;
        }
        slack_set |= dst == &slack;
        if (dst == &max) {
            snprintf(maxopt, sizeof(maxopt), "RCOLL_UNEXPECTED_MAX=%s", argv[i + 1]);
        }
        i++;
    }
    const char *config[] = { "RCOLL_SHM=0", maxopt[0] ? maxopt : NULL, NULL };
    rcoll_context_t *ctx;
    rcoll_status_t st = rcoll_init(config, &ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL flood_check: rcoll_init: %s\n", rcoll_strerror(st));
        return 1;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    wrank = rcoll_comm_rank(world);
    wsize = rcoll_comm_size(world);
    if (wsize < 2) {
        fprintf(stderr, "flood_check: needs at least 2 ranks\n");
        rcoll_finalize(ctx);
        return 2;
    }
    const char *v = rcoll_config_get(ctx, "UNEXPECTED_MAX");
    if (v == NULL || check_parse_size(v, &max) != 0) {
        FAILF("RCOLL_UNEXPECTED_MAX reads back as '%s'", v ? v : "(null)");
    }
    if (!slack_set)
        slack = (16u << 20) + max / 2;
    unsigned char *buf = malloc(len);
    if (buf == NULL) {
        fatal("malloc", RCOLL_ERR_NO_MEMORY);
    }
    /* Warm-up: connections, the selector's caches, the first buffers. */
    memset(buf, 0, len);
    for (int i = 0; i < 3; i++) {
        if ((st = rcoll_bcast(buf, len, RCOLL_UINT8, 0, world)) != RCOLL_OK)
            fatal("warm-up bcast", st);
    }
    rcoll_comm_t *side;
    if ((st = rcoll_comm_dup(world, &side)) != RCOLL_OK)
        fatal("rcoll_comm_dup", st);
    if ((st = rcoll_barrier(world)) != RCOLL_OK)
        fatal("barrier", st);
    int reset = reset_peak();
    size_t base = reset == 0 ? status_bytes("VmHWM") : status_bytes("VmRSS");

    double t0 = check_now();
    int64_t token = wrank == 0 ? 42 : -1;
    rcoll_request_t *req = NULL;
    if (wrank != 0) {
        /* Progress without posting the bcasts: the root's messages arrive unexpected. */
        if ((st = rcoll_ibcast(&token, 1, RCOLL_INT64, 0, side, &req)) != RCOLL_OK)
            fatal("side ibcast", st);
        int done = 0;
        while (!done && check_now() - t0 < DELAY_S) {
            if ((st = rcoll_test(req, &done)) != RCOLL_OK)
                fatal("side ibcast (test)", st);
        }
        if (done)
            FAILF("the side ibcast completed before the root joined it");
    }
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        if (wrank == 0) {
            for (size_t k = 0; k < len; k++)
                buf[k] = pattern(i, k);
        } else {
            memset(buf, 0, len);
        }
        if ((st = rcoll_bcast(buf, len, RCOLL_UINT8, 0, world)) != RCOLL_OK) {
            FAILF("bcast %zu of %zu returned %s", i, count, rcoll_strerror(st));
            break;
        }
        if (wrank != 0) {
            for (size_t k = 0; k < len; k++) {
                if (buf[k] != pattern(i, k)) {
                    if (bad++ < 5)
                        FAILF("bcast %zu: byte %zu is %u, expected %u", i, k, buf[k], pattern(i, k));
                    break;
                }
            }
        }
    }
    if (wrank == 0) {
        if ((st = rcoll_bcast(&token, 1, RCOLL_INT64, 0, side)) != RCOLL_OK)
            fatal("side bcast", st);
    } else if ((st = rcoll_wait(req)) != RCOLL_OK) {
        fatal("side ibcast (wait)", st);
    }
    if (token != 42)
        FAILF("side bcast: %lld, expected 42", (long long)token);
    double secs = check_now() - t0;
    size_t peak = status_bytes("VmHWM");
    size_t growth = peak > base ? peak - base : 0;
    if (bad)
        FAILF("%zu of %zu bcasts had wrong data", bad, count);
    if (growth > max + slack)
        FAILF("peak RSS grew by %.1f MiB over %zu bcasts of %zu bytes %s, more than "
              "RCOLL_UNEXPECTED_MAX (%.1f MiB) + %.1f MiB", growth / 1048576.0, count, len,
              wrank == 0 ? "sent ahead" : "received late", max / 1048576.0, slack / 1048576.0);
    if (verbose || nfail)
        printf("flood_check rank %d: %zu bcasts of %zu bytes in %.2f s; peak RSS +%.1f MiB "
               "(bound %.1f + %.1f MiB%s)\n", wrank, count, len, secs, growth / 1048576.0,
               max / 1048576.0, slack / 1048576.0,
               reset == 0 ? "" : "; no clear_refs: measured from RSS");
    free(buf);
    if ((st = rcoll_comm_free(side)) != RCOLL_OK)
        fatal("rcoll_comm_free", st);

    int64_t mine = nfail, total = -1;
    st = rcoll_allreduce(&mine, &total, 1, RCOLL_INT64, RCOLL_SUM, world);
    if (st != RCOLL_OK)
        fatal("closing allreduce", st);
    st = rcoll_finalize(ctx);
    if (st != RCOLL_OK)
        fatal("rcoll_finalize", st);
    if (wrank == 0)
        printf("flood_check: %s (%d ranks, %zu bcasts of %zu bytes, bound %.0f MiB)\n",
               total ? "FAILED" : "ok", wsize, count, len, max / 1048576.0);
    return total ? 1 : 0;
}
