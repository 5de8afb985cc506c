/*
 * auth_check - forged and replayed UCX messages are dropped, each with one
 * log line, and the job goes on (issue 12 item 2, docs/security.md).
 *
 *   auth_check [--threads N] [--verbs]     (N >= 3, default 3)
 *
 * N threads each make a context with rcoll_init_oob over an in-process
 * all-gather (as oob_threads), RCOLL_TRANSPORT=ucx, RCOLL_SHM=0, and UCX_TLS=tcp unless
 * set: the network path a process on another host would reach.  Because
 * this program carries the all-gather it sees every rank's address blob,
 * as an attacker who learnt a worker address would.  An attacker (the main
 * thread, its own UCX context and worker, no rcoll context) then connects
 * to rank 0's worker and sends, a second apart so that each rejection gets
 * its own log line:
 *
 *   1. forged: a well-formed rcoll message claiming to come from rank 1,
 *      with a MAC made up without the secret;
 *   2. replayed: rank 1's first sequence number (already accepted from the
 *      real rank 1) with a MAC that verifies: what a captured message is;
 *   3. misdirected: a message with a valid MAC for the pair (1 -> 2), sent
 *      to rank 0 (keys are per ordered pair).
 *
 * (2) and (3) need the secret, which the test takes from rank 0's blob:
 * it plays someone who captured traffic of the job, not someone who can
 * compute MACs.  Meanwhile the ranks run allreduces, checking every result;
 * the log of the attack's span must hold exactly three "ucx: dropping" lines
 * (two MAC failures, one replay) and no other rcoll error, every allreduce
 * result must be right, and every rank must finalize cleanly.  Exit status 0 only if all of that held.
 *
 * --verbs: RCOLL_TRANSPORT=verbs with rdma_cm (RCOLL_VERBS_CM=rdmacm; the
 * device from RCOLL_NET_DEVICES, e.g. in the soft-RDMA guest), N >= 2: the
 * attacker instead asks rank 1's rdma_cm listener for a connection claiming
 * rank 0, with a proof made up without the secret (auth_cm.c).  It must be
 * refused with one log line ("rejected an rdma_cm connection request"), and
 * the ranks' real connections must carry on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "rcoll.h"
#include "addr_blob.h"
#include "auth.h"
#include "siphash.h"
#include "wire.h"
#include "auth_cm.h"

#define MAX_THREADS 16
#define UCX_AM_ID   7                 /* transports/ucx/ucx_tl.c */
#define UCX_MAGIC   0x72636f6cu
#define UCX_TL_HDR  24

typedef struct {
    pthread_barrier_t bar;
    int               n;
    unsigned char    *buf;
    size_t            cap;
    unsigned char    *blobs;          /* the last all-gather's output: the addresses */
    size_t            blob_stride;
    uint64_t         *lens;           /* the first all-gather's: each blob's length */
    atomic_int        spinning;       /* threads in the allreduce loop */
    atomic_int        stop;           /* the attacker is done */
} world_t;

typedef struct {
    world_t *w;
    int      rank;
    int      verbs;                   /* --verbs */
    int      result;
} thread_t;

static void barrier(world_t *w)
{
    int rc = pthread_barrier_wait(&w->bar);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        fprintf(stderr, "FAIL auth_check: pthread_barrier_wait returned %d\n", rc);
        _exit(1);
    }
}

static int thread_allgather(const void *in, void *out, size_t len, void *arg)
{
    thread_t *t = arg;
    world_t *w = t->w;
    barrier(w);
    if (t->rank == 0 && w->cap < (size_t)w->n * len) {
        free(w->buf);
        w->cap = (size_t)w->n * len;
        w->buf = malloc(w->cap);
    }
    barrier(w);
    memcpy(w->buf + (size_t)t->rank * len, in, len);
    barrier(w);
    memcpy(out, w->buf, (size_t)w->n * len);
    if (t->rank == 0) {             /* keep what the "runtime" carried */
        if (len == sizeof(uint64_t) && w->lens == NULL) {
            w->lens = malloc((size_t)w->n * len);
            memcpy(w->lens, w->buf, (size_t)w->n * len);
        } else {
            free(w->blobs);
            w->blobs = malloc((size_t)w->n * len);
            memcpy(w->blobs, w->buf, (size_t)w->n * len);
            w->blob_stride = len;
        }
    }
    barrier(w);
    return 0;
}

static void *thread_main(void *arg)
{
    thread_t *t = arg;
    world_t *w = t->w;
    static const char *const ucx_config[] = { "TRANSPORT=ucx", "SHM=0", "TIMEOUT=20", NULL };
    static const char *const verbs_config[] = { "TRANSPORT=verbs", "VERBS_CM=rdmacm", "SHM=0",
                                                "TIMEOUT=60", NULL };
    const char *const *config = t->verbs ? verbs_config : ucx_config;
    rcoll_oob_t oob = { .rank = t->rank, .size = w->n, .allgather = thread_allgather, .arg = t };
    rcoll_context_t *ctx = NULL;
    if (rcoll_init_oob(&oob, config, &ctx) != RCOLL_OK) {
        fprintf(stderr, "FAIL auth_check thread %d: rcoll_init_oob\n", t->rank);
        _exit(1);
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int fails = 0, first = 1;
    for (int64_t iter = 1;; iter++) {
        int64_t in[2] = { t->rank + iter, t->rank == 0 ? atomic_load(&w->stop) : 0 }, out[2];
        if (rcoll_allreduce(in, out, 2, RCOLL_INT64, RCOLL_SUM, world) != RCOLL_OK) {
            fprintf(stderr, "FAIL auth_check thread %d: allreduce %lld failed\n", t->rank,
                    (long long)iter);
            fails++;
            break;
        }
        int64_t want = (int64_t)w->n * (w->n - 1) / 2 + (int64_t)w->n * iter;
        if (out[0] != want) {
            fprintf(stderr, "FAIL auth_check thread %d: allreduce %lld gave %lld, expected %lld\n",
                    t->rank, (long long)iter, (long long)out[0], (long long)want);
            fails++;
        }
        if (out[1] != 0) {
            break;
        }
        if (first && iter >= 4) {
            atomic_fetch_add(&w->spinning, 1);
            first = 0;
        }
    }
    if (rcoll_finalize(ctx) != RCOLL_OK) {
        fprintf(stderr, "FAIL auth_check thread %d: rcoll_finalize\n", t->rank);
        fails++;
    }
    t->result = fails;
    return NULL;
}

/* Rank r's address for transport `name` in the blobs the all-gather carried. */
static int find_tl(world_t *w, int r, const char *name, const uint8_t **addr, size_t *len)
{
    const uint8_t *b = w->blobs + (size_t)r * w->blob_stride;
    size_t blen = (size_t)w->lens[r];
    addr_hdr_t h;
    memcpy(&h, b, sizeof(h));
    size_t off = sizeof(h) + (size_t)h.nmatch * sizeof(uint64_t) + h.node_len;
    for (uint32_t i = 0; i < h.ntls && off + sizeof(tl_entry_t) <= blen; i++) {
        tl_entry_t e;
        memcpy(&e, b + off, sizeof(e));
        off += sizeof(e);
        if (strncmp(e.name, name, sizeof(e.name)) == 0 && off + e.len <= blen) {
            *addr = b + off;
            *len = e.len;
            return 0;
        }
        off += e.len;
    }
    return -1;
}

typedef struct {
    ucp_context_h ucp;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
} attacker_t;

static int attacker_open(attacker_t *a, const uint8_t *addr)
{
    ucp_params_t p = { .field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_AM };
    ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                               .thread_mode = UCS_THREAD_MODE_SINGLE };
    ucp_ep_params_t ep = { .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                           .address = (const ucp_address_t *)addr };
    if (ucp_init(&p, NULL, &a->ucp) != UCS_OK || ucp_worker_create(a->ucp, &wp, &a->worker) != UCS_OK ||
        ucp_ep_create(a->worker, &ep, &a->ep) != UCS_OK) {
        fprintf(stderr, "FAIL auth_check: the attacker's UCX set-up failed\n");
        return -1;
    }
    return 0;
}

static void attacker_wait(attacker_t *a, ucs_status_ptr_t req)
{
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        return;
    }
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(a->worker);
    }
    ucp_request_free(req);
}

/* One message as ucx_tl.c frames it: mac, claimed rank, magic, seq, an EAGER rcoll header + 8 bytes. */
static void attacker_send(attacker_t *a, uint32_t claimed, uint64_t seq, const uint8_t *key,
                          uint64_t fake_mac)
{
    uint8_t m[UCX_TL_HDR + RCOLL_WIRE_HDR_SIZE + 8];
    uint32_t magic = UCX_MAGIC;
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_EAGER, .version = RCOLL_WIRE_VERSION, .seq = 1,
                           .comm_id = 1, .step = 0, .src = claimed, .len = 8 };
    memset(m, 0x5a, sizeof(m));
    memcpy(m + 8, &claimed, 4);
    memcpy(m + 12, &magic, 4);
    memcpy(m + 16, &seq, 8);
    rcoll_wire_encode(&h, m + UCX_TL_HDR);
    uint64_t mac = key ? rcoll__auth_msg_mac(key, m + 8, sizeof(m) - 8, UCX_TL_HDR - 8) : fake_mac;
    memcpy(m, &mac, 8);
    ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_AM_SEND_FLAG_EAGER };
    attacker_wait(a, ucp_am_send_nbx(a->ep, UCX_AM_ID, NULL, 0, m, sizeof(m), &p));
    ucp_request_param_t none = { .op_attr_mask = 0 };
    attacker_wait(a, ucp_worker_flush_nbx(a->worker, &none));
}

static void attacker_pause(attacker_t *a, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100); i++) {
        ucp_worker_progress(a->worker);
        usleep(10000);
    }
}

/* The attack on rank 0; returns 0 if it could be made. */
static int attack(world_t *w)
{
    const uint8_t *addr;
    size_t len;
    attacker_t a;
    if (find_tl(w, 0, "ucx", &addr, &len) != 0) {
        fprintf(stderr, "FAIL auth_check: rank 0 published no UCX address\n");
        return -1;
    }
    if (attacker_open(&a, addr) != 0) {
        return -1;
    }
    /* The secret rank 0's blob carried (rcoll clears its own copy; the
     * runtime's, kept here, still has it). */
    addr_hdr_t h0;
    memcpy(&h0, w->blobs, sizeof(h0));
    rcoll_auth_t job = { .ready = 1 };
    memcpy(job.secret, h0.secret, sizeof(job.secret));
    uint8_t k10[16], k12[16];
    rcoll__auth_pair_key(&job, "ucx", 1, 0, k10);
    rcoll__auth_pair_key(&job, "ucx", 1, 2, k12);

    attacker_send(&a, 1, 1000000, NULL, 0x0123456789abcdefULL);     /* 1. forged */
    attacker_pause(&a, 1.2);
    attacker_send(&a, 1, 1, k10, 0);                                 /* 2. replayed */
    attacker_pause(&a, 1.2);
    attacker_send(&a, 1, 1000000, k12, 0);                           /* 3. misdirected */
    attacker_pause(&a, 1.2);
    ucp_request_param_t close = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = UCP_EP_CLOSE_FLAG_FORCE };
    attacker_wait(&a, ucp_ep_close_nbx(a.ep, &close));
    ucp_worker_destroy(a.worker);
    ucp_cleanup(a.ucp);
    return 0;
}

/* --verbs: a forged rdma_cm request to rank 1, claiming rank 0. */
static int attack_cm(world_t *w)
{
    const uint8_t *addr;
    size_t len;
    if (find_tl(w, 1, "verbs", &addr, &len) != 0) {
        fprintf(stderr, "FAIL auth_check --verbs: rank 1 published no verbs address\n");
        return -1;
    }
    int rc = auth_cm_forge(addr, len, 0, 1);
    sleep(2);                           /* the ranks go on meanwhile */
    return rc;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, needle) != NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

int main(int argc, char **argv)
{
    int n = 3, verbs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--verbs") == 0) {
            verbs = 1;
        }
    }
    if (n < 3 - verbs || n > MAX_THREADS) {
        fprintf(stderr, "auth_check: --threads must be %d..%d\n", 3 - verbs, MAX_THREADS);
        return 2;
    }
    setenv("UCX_TLS", "tcp", 0);
    char logpath[] = "/tmp/auth_check.XXXXXX";
    int logfd = mkstemp(logpath), saved = dup(2);
    if (logfd < 0 || saved < 0) {
        perror("auth_check: mkstemp");
        return 2;
    }
    world_t w = { .n = n };
    thread_t t[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_init(&w.bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        t[i] = (thread_t){ .w = &w, .rank = i, .verbs = verbs };
        pthread_create(&tid[i], NULL, thread_main, &t[i]);
    }
    while (atomic_load(&w.spinning) < n) {
        usleep(1000);
    }
    dup2(logfd, 2);                   /* rcoll's log lines during the attack */
    int fails = (verbs ? attack_cm(&w) : attack(&w)) != 0;
    fflush(stderr);
    dup2(saved, 2);                   /* finalize's own lines (a peer leaving first) are not counted */
    atomic_store(&w.stop, 1);
    for (int i = 0; i < n; i++) {
        pthread_join(tid[i], NULL);
        fails += t[i].result != 0;
    }
    int dropped = count_lines(logpath, "ucx: dropping");
    int bad_mac = count_lines(logpath, "MAC does not verify");
    int replay = count_lines(logpath, "replayed message from rank 1");
    int errors = count_lines(logpath, "rcoll error");
    int cm = count_lines(logpath, "rejected an rdma_cm connection request");
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "cat %s >&2", logpath);
    if (verbs && (cm != 1 || errors != 1)) {
        fprintf(stderr, "FAIL auth_check --verbs: expected one refused rdma_cm request logged and "
                "no other error; the log has %d, %d error lines:\n", cm, errors);
        fails++;
        if (system(cmd) != 0) {
            fprintf(stderr, "(cannot show %s)\n", logpath);
        }
    } else if (!verbs && (dropped != 3 || bad_mac != 2 || replay != 1 || errors != 3)) {
        fprintf(stderr, "FAIL auth_check: expected 3 rejections logged (2 MAC, 1 replay) and no "
                "other error; the log has %d (%d MAC, %d replay), %d error lines:\n", dropped,
                bad_mac, replay, errors);
        fails++;
        if (system(cmd) != 0) {
            fprintf(stderr, "(cannot show %s)\n", logpath);
        }
    }
    unlink(logpath);
    pthread_barrier_destroy(&w.bar);
    free(w.buf);
    free(w.blobs);
    free(w.lens);
    printf("auth_check: %d threads, %s: %s\n", n, verbs ? "a forged rdma_cm connection request"
           : "forged, replayed and misdirected UCX messages", fails ? "FAILED" : "ok");
    return fails != 0;
}
