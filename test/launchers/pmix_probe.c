/*
 * pmix_probe: a plain PMIx client that checks what rcoll's bootstrap needs
 * from a launcher (rcollrun, Open MPI's mpirun, srun --mpi=pmix):
 *   PMIx_Init -> rank from the returned proc; PMIX_JOB_SIZE on the wildcard
 *   rank; PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE, PMIX_LOCAL_PEERS, PMIX_HOSTNAME;
 *   PMIx_Put of rank-specific string and binary values, Commit, Fence with collect data, Get
 *   of every peer's value and exact comparison; a second fence without data;
 *   PMIx_Finalize.
 * Prints one line per rank ("pmix_probe: rank R of N ... ok") and exits
 * non-zero on any mismatch, naming the step and the peer.
 *
 * Failure injection for launcher tests (after the first fence):
 *   --exit R:CODE   rank R exits with CODE
 *   --kill R        rank R kills itself with SIGKILL
 *   --abort R:CODE  rank R calls PMIx_Abort(CODE)
 *   --no-finalize R rank R exits 0 without PMIx_Finalize
 *   --sleep SEC     every other rank sleeps SEC seconds before finalizing
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#define PROBE_KEY "rcoll.probe.str"
#define PROBE_BKEY "rcoll.probe.bytes"   /* binary, with zero bytes, as rcoll's addresses */

static pmix_proc_t me;
static int fails;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    char buf[512];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "pmix_probe: rank %u: FAIL: %s\n", me.rank, buf);
    fails++;
}

/* Rank r's value: a string whose length and content depend on r and size,
 * so a value delivered to the wrong key or truncated is caught. */
static char *expected_value(uint32_t r, uint32_t size)
{
    size_t len = 16 + (size_t)(r * 37u % 200u);
    char *s = malloc(len + 32);

    if (s == NULL)
        return NULL;
    int n = snprintf(s, len + 32, "rank=%u/size=%u:", r, size);
    for (size_t i = (size_t)n; i < (size_t)n + len; i++)
        s[i] = (char)('a' + (r * 7u + (unsigned)i) % 26u);
    s[(size_t)n + len] = '\0';
    return s;
}

/* Rank r's binary value: 64..1087 bytes including zeros. */
static size_t expected_bytes(uint32_t r, uint32_t size, unsigned char *buf)
{
    size_t len = 64 + (size_t)((r * 131u + size) % 1024u);

    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)((i % 5 == 0) ? 0 : (r * 31u + (unsigned)i * 7u) & 0xffu);
    return len;
}

static bool get_value(const pmix_proc_t *proc, const char *key, pmix_value_t **val,
                      const char *what)
{
    pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, val);

    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Get(%s) of %s for rank %d: %s", key, what,
             proc->rank == PMIX_RANK_WILDCARD ? -1 : (int)proc->rank, PMIx_Error_string(rc));
        return false;
    }
    return true;
}

static bool get_u32(const pmix_proc_t *proc, const char *key, uint32_t *out)
{
    pmix_value_t *v;

    if (!get_value(proc, key, &v, "a number"))
        return false;
    switch (v->type) {
    case PMIX_UINT32: *out = v->data.uint32; break;
    case PMIX_UINT16: *out = v->data.uint16; break;
    case PMIX_PROC_RANK: *out = v->data.rank; break;
    case PMIX_INT: *out = (uint32_t)v->data.integer; break;
    default:
        fail("%s has unexpected type %s", key, PMIx_Data_type_string(v->type));
        PMIX_VALUE_RELEASE(v);
        return false;
    }
    PMIX_VALUE_RELEASE(v);
    return true;
}

static bool get_str(const pmix_proc_t *proc, const char *key, char **out)
{
    pmix_value_t *v;

    if (!get_value(proc, key, &v, "a string"))
        return false;
    if (v->type != PMIX_STRING || v->data.string == NULL) {
        fail("%s has type %s, not a string", key, PMIx_Data_type_string(v->type));
        PMIX_VALUE_RELEASE(v);
        return false;
    }
    *out = strdup(v->data.string);
    PMIX_VALUE_RELEASE(v);
    return *out != NULL;
}

/* PMIX_LOCAL_PEERS is "r0,r1,...": check it holds local_size ranks < size,
 * including ours. */
static void check_peers(const char *peers, uint32_t local_size, uint32_t size)
{
    char *copy = strdup(peers), *save = NULL;
    uint32_t count = 0;
    bool self = false;

    if (copy == NULL)
        return;
    for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long r = strtoul(t, &end, 10);
        if (*end != '\0' || r >= size)
            fail("PMIX_LOCAL_PEERS '%s' holds '%s', not a rank below %u", peers, t, size);
        if (r == me.rank)
            self = true;
        count++;
    }
    if (count != local_size)
        fail("PMIX_LOCAL_PEERS '%s' lists %u ranks, PMIX_LOCAL_SIZE says %u", peers, count,
             local_size);
    if (!self)
        fail("PMIX_LOCAL_PEERS '%s' does not list this rank", peers);
    free(copy);
}

static bool fence(bool collect, const char *what)
{
    pmix_info_t info;
    bool yes = true;
    pmix_status_t rc;

    PMIX_INFO_CONSTRUCT(&info);
    if (collect)
        PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(NULL, 0, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        fail("%s: PMIx_Fence: %s", what, PMIx_Error_string(rc));
        return false;
    }
    return true;
}

static void check_bytes(const pmix_proc_t *peer, uint32_t r, uint32_t size)
{
    unsigned char want[1088];
    size_t len = expected_bytes(r, size, want);
    pmix_value_t *v;

    if (!get_value(peer, PROBE_BKEY, &v, "a byte object"))
        return;
    if (v->type != PMIX_BYTE_OBJECT)
        fail("rank %u's byte object came back as %s", r, PMIx_Data_type_string(v->type));
    else if (v->data.bo.size != len || memcmp(v->data.bo.bytes, want, len) != 0)
        fail("rank %u's byte object is wrong: %zu bytes, expected %zu", r, v->data.bo.size, len);
    PMIX_VALUE_RELEASE(v);
}

static void exchange(uint32_t size)
{
    pmix_value_t val;
    char *mine = expected_value(me.rank, size);
    pmix_status_t rc;

    if (mine == NULL) {
        fail("out of memory");
        return;
    }
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_STRING;
    val.data.string = mine;
    rc = PMIx_Put(PMIX_GLOBAL, PROBE_KEY, &val);
    free(mine);
    if (rc != PMIX_SUCCESS) {
        fail("PMIx_Put: %s", PMIx_Error_string(rc));
        return;
    }
    {
        unsigned char bytes[1088];
        PMIX_VALUE_CONSTRUCT(&val);
        val.type = PMIX_BYTE_OBJECT;
        val.data.bo.bytes = (char *)bytes;
        val.data.bo.size = expected_bytes(me.rank, size, bytes);
        rc = PMIx_Put(PMIX_GLOBAL, PROBE_BKEY, &val);
        if (rc != PMIX_SUCCESS) {
            fail("PMIx_Put of a byte object: %s", PMIx_Error_string(rc));
            return;
        }
    }
    if ((rc = PMIx_Commit()) != PMIX_SUCCESS) {
        fail("PMIx_Commit: %s", PMIx_Error_string(rc));
        return;
    }
    if (!fence(true, "data exchange"))
        return;
    for (uint32_t r = 0; r < size; r++) {
        pmix_proc_t peer;
        char *got = NULL, *want = expected_value(r, size);

        PMIX_LOAD_PROCID(&peer, me.nspace, r);
        if (want != NULL && get_str(&peer, PROBE_KEY, &got) && strcmp(got, want) != 0)
            fail("rank %u's value is wrong: got '%.40s...' (%zu bytes), expected '%.40s...' "
                 "(%zu bytes)", r, got, strlen(got), want, strlen(want));
        free(got);
        free(want);
        check_bytes(&peer, r, size);
    }
}

static bool parse_pair(const char *s, int *a, int *b)
{
    return sscanf(s, "%d:%d", a, b) == 2;
}

typedef struct {
    int exit_rank, exit_code, kill_rank, abort_rank, abort_code, nofin_rank;
    double sleep_s;
} inject_t;

static int parse_args(int argc, char **argv, inject_t *in)
{
    *in = (inject_t){ -1, 0, -1, -1, 0, -1, 0 };
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;

        if (strcmp(argv[i], "--exit") == 0)
            ok = ok && parse_pair(v, &in->exit_rank, &in->exit_code);
        else if (strcmp(argv[i], "--abort") == 0)
            ok = ok && parse_pair(v, &in->abort_rank, &in->abort_code);
        else if (strcmp(argv[i], "--kill") == 0)
            ok = ok && sscanf(v, "%d", &in->kill_rank) == 1;
        else if (strcmp(argv[i], "--no-finalize") == 0)
            ok = ok && sscanf(v, "%d", &in->nofin_rank) == 1;
        else if (strcmp(argv[i], "--sleep") == 0)
            ok = ok && sscanf(v, "%lf", &in->sleep_s) == 1;
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "usage: pmix_probe [--exit R:CODE] [--kill R] [--abort R:CODE] "
                    "[--no-finalize R] [--sleep SEC]\n");
            return -1;
        }
        i++;
    }
    return 0;
}

static void inject(const inject_t *in)
{
    int r = (int)me.rank;

    if (r == in->exit_rank) {
        fprintf(stderr, "pmix_probe: rank %d: exiting with status %d as asked\n", r,
                in->exit_code);
        exit(in->exit_code);
    }
    if (r == in->kill_rank) {
        fprintf(stderr, "pmix_probe: rank %d: killing itself with SIGKILL as asked\n", r);
        raise(SIGKILL);
    }
    if (r == in->abort_rank) {
        fprintf(stderr, "pmix_probe: rank %d: calling PMIx_Abort(%d) as asked\n", r,
                in->abort_code);
        PMIx_Abort(in->abort_code, "pmix_probe abort test", NULL, 0);
        sleep(30);  /* the launcher must kill us */
        exit(99);
    }
    if (r == in->nofin_rank) {
        fprintf(stderr, "pmix_probe: rank %d: exiting 0 without PMIx_Finalize as asked\n", r);
        exit(0);
    }
    if (in->sleep_s > 0) {
        struct timespec ts = { (time_t)in->sleep_s,
                               (long)((in->sleep_s - (double)(time_t)in->sleep_s) * 1e9) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

int main(int argc, char **argv)
{
    pmix_proc_t wild;
    uint32_t size = 0, local_rank = 0, local_size = 0;
    char *peers = NULL, *host = NULL, myhost[256] = "";
    inject_t in;
    pmix_status_t rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse_args(argc, argv, &in) != 0)
        return 2;
    rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "pmix_probe: PMIx_Init failed: %s (no PMIx server: run under "
                "rcollrun, mpirun or srun --mpi=pmix)\n", PMIx_Error_string(rc));
        return 1;
    }
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&wild, PMIX_JOB_SIZE, &size) && me.rank >= size)
        fail("rank %u is not below the job size %u", me.rank, size);
    if (get_u32(&me, PMIX_LOCAL_RANK, &local_rank) &&
        get_u32(&wild, PMIX_LOCAL_SIZE, &local_size)) {
        if (local_size == 0 || local_size > size || local_rank >= local_size)
            fail("local rank %u / local size %u / job size %u are inconsistent", local_rank,
                 local_size, size);
        if (get_str(&wild, PMIX_LOCAL_PEERS, &peers))
            check_peers(peers, local_size, size);
    }
    gethostname(myhost, sizeof(myhost) - 1);
    if (get_str(&me, PMIX_HOSTNAME, &host) && strcmp(host, myhost) != 0 &&
        strncmp(host, myhost, strlen(host)) != 0)
        fail("PMIX_HOSTNAME is '%s' but gethostname() says '%s'", host, myhost);
    if (fails == 0 && size > 0)
        exchange(size);
    if (fails == 0)
        inject(&in);
    if (fails == 0)
        fence(false, "final barrier");
    if (fails == 0)
        printf("pmix_probe: rank %u of %u (local rank %u of %u, peers %s, host %s, "
               "nspace %s): %u peer values ok\n", me.rank, size, local_rank, local_size,
               peers ? peers : "?", host ? host : "?", me.nspace, size);
    free(peers);
    free(host);
    rc = PMIx_Finalize(NULL, 0);
    if (rc != PMIX_SUCCESS)
        fail("PMIx_Finalize: %s", PMIx_Error_string(rc));
    return fails == 0 ? 0 : 1;
}
