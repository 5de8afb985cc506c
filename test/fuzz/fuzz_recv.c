/*
 * fuzz_recv.c - the receive path: wire header decode, matching, the
 * unexpected queue, eager and rendezvous completion (src/wire.c,
 * src/p2p.c) and the loop backend's key check (transports/loop/loop_mr.c),
 * fed with messages a hostile or broken peer could send.
 *
 * Three contexts over the loop transport in this process (made once, by
 * rcoll_init_oob in three threads).  Rank 0 is the victim: for each input it
 * posts two collectives (test scripts of sends and receives into guarded
 * buffers) on two fresh communicators (ranks 0 1 2 and 2 1 0), then the
 * input's messages are handed to rcoll_p2p_recv_cb as if ranks 1 and 2 (or
 * itself, or ranks that do not exist) had sent them.  Ranks 1 and 2 never
 * progress: what rank 0 sends them is dropped.  Each input ends by failing
 * whatever is still running, as a timeout would.
 *
 * Input: byte 0 and 1: the number of ops of each script (0-7); 2 bytes per
 * op; then commands until the input ends (see run_command): a raw message,
 * a message built from a few fields (type: every one the core takes, communicator, sequence, step,
 * length, call signature; a length that lies; a header cut short), the last message again,
 * cut short, or with a valid key of a rank-1 buffer (RTR; one field of the
 * key may be forged), progress, a
 * peer failure reported by the transport, releasing the scripts' second
 * stage.
 *
 * Oracles, besides ASan and UBSan: no byte around a posted buffer and no
 * byte of a send buffer changes; a rank-1 buffer the victim may write into
 * through a forged RTR is written only inside the range that key
 * advertises; after the input no operation is pending, no matching list
 * holds an op, and rank 0 holds no registration (no remote write can land
 * later).
 */
#include <pthread.h>
#include "fuzz_util.h"
#include "core.h"
#include "wire.h"
#include "loop_int.h"

#define NRANKS   3
#define LIMIT    64              /* RCOLL_EAGER_LIMIT here: 65 bytes and up go by rendezvous */
#define CANARY   32
#define GUARD    0xa5
#define COMM_A   0x7e57000000000001ull
#define COMM_B   0x7e57000000000002ull
#define MAXMSG   (RCOLL_WIRE_HDR_SIZE + 512)
#define TARGET   256             /* the rank-1 buffer a forged RTR may point the victim at */
#define SIG_A    0x5157a001u     /* the call signature of the collective on COMM_A; COMM_B's is 0 */

static const size_t lens[8] = { 0, 1, 7, 8, 63, 64, 65, 200 };

/* ---- the world: NRANKS contexts over loop, made once ---- */

static rcoll_context_t *ctxs[NRANKS];
static pthread_barrier_t bar;
static uint8_t *ag_buf;

static int ag(const void *in, void *out, size_t len, void *arg)
{
    int rank = (int)(intptr_t)arg;
    pthread_barrier_wait(&bar);
    if (rank == 0) {
        free(ag_buf);
        ag_buf = malloc(NRANKS * len);
    }
    pthread_barrier_wait(&bar);
    memcpy(ag_buf + (size_t)rank * len, in, len);
    pthread_barrier_wait(&bar);
    memcpy(out, ag_buf, NRANKS * len);
    pthread_barrier_wait(&bar);
    return 0;
}

static void *member(void *arg)
{
    static const char *const config[] = { "TRANSPORT=loop", "SHM=0", "EAGER_LIMIT=64",
                                          "TIMEOUT=0", NULL };
    int rank = (int)(intptr_t)arg;
    rcoll_oob_t oob = { .rank = rank, .size = NRANKS, .allgather = ag, .arg = arg };
    if (rcoll_init_oob(&oob, config, &ctxs[rank]) != RCOLL_OK) {
        fprintf(stderr, "fuzz_recv: rcoll_init_oob failed on rank %d\n", rank);
        abort();
    }
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_clear_env();
    pthread_t t[NRANKS];
    pthread_barrier_init(&bar, NULL, NRANKS);
    for (intptr_t r = 0; r < NRANKS; r++) {
        pthread_create(&t[r], NULL, member, (void *)r);
    }
    for (int r = 0; r < NRANKS; r++) {
        pthread_join(t[r], NULL);
    }
    if (ctxs[0]->eager_limit != LIMIT) {
        fprintf(stderr, "fuzz_recv: eager limit %zu, expected %d\n", ctxs[0]->eager_limit, LIMIT);
        abort();
    }
    return 0;
}

/* ---- scripts: a test algorithm that posts a list of ops ---- */

enum { SEND = 1, RECV = 2 };

typedef struct {
    int      kind, peer, stage;
    uint32_t step;
    size_t   len;
    uint8_t *raw;                /* CANARY, len bytes, CANARY */
} sop_t;

typedef struct {
    sop_t          ops[8];
    uint32_t       sig;          /* the call signature its messages carry (0: none) */
    int            nops, posted, go;
    rcoll_status_t fail;
    rcoll_task_t  *task;
    rcoll_comm_t  *comm;
} script_t;

static rcoll_status_t script_progress(rcoll_task_t *task)
{
    script_t *s = (script_t *)(uintptr_t)task->args.sendbuf;
    task->sig = s->sig;          /* rcoll_task_post_alg leaves it 0 */
    if (s->fail != RCOLL_OK) {
        return s->fail;
    }
    while (s->posted < s->nops && s->ops[s->posted].stage <= s->go) {
        sop_t *o = &s->ops[s->posted++];
        uint8_t *buf = o->raw + CANARY;
        rcoll_status_t st = o->kind == SEND ? rcoll_task_send(task, o->peer, o->step, buf, o->len)
                                            : rcoll_task_recv(task, o->peer, o->step, buf, o->len);
        if (st != RCOLL_OK) {
            return st;
        }
    }
    rcoll_status_t st = rcoll_task_test(task);
    if (st != RCOLL_OK) {
        return st;
    }
    return s->posted == s->nops ? RCOLL_OK : RCOLL_INPROGRESS;
}

static const rcoll_alg_t script_alg = { .name = "fuzz_script", .coll = RCOLL_COLL_BCAST,
                                        .progress = script_progress };

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + 3);
}

/* A send buffer holds the pattern, a receive buffer GUARD; both are framed by GUARD. */
static void script_read(script_t *s, fuzz_in_t *in, int nops)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < nops; i++) {
        uint8_t a = fuzz_u8(in), b = fuzz_u8(in);
        sop_t *o = &s->ops[s->nops++];
        o->kind = (a & 1) ? SEND : RECV;
        o->peer = (a >> 1) % NRANKS;     /* a comm rank; the victim's own included */
        o->step = (a >> 3) & 3;
        o->stage = (a >> 5) & 1;
        o->len = lens[b & 7];
        o->raw = malloc(o->len + 2 * CANARY);
        FUZZ_CHECK(o->raw != NULL, "out of memory");
        memset(o->raw, GUARD, o->len + 2 * CANARY);
        if (o->kind == SEND) {
            for (size_t k = 0; k < o->len; k++) {
                o->raw[CANARY + k] = pattern(k);
            }
        }
    }
}

static void script_check_free(script_t *s)
{
    for (int i = 0; i < s->nops; i++) {
        sop_t *o = &s->ops[i];
        for (size_t k = 0; k < o->len + 2 * CANARY; k++) {
            int in_buf = k >= CANARY && k < CANARY + o->len;
            uint8_t want = in_buf && o->kind == SEND ? pattern(k - CANARY) : GUARD;
            if (in_buf && o->kind == RECV) {
                continue;            /* a receive may be written */
            }
            FUZZ_CHECK(o->raw[k] == want, "op %d (%s of %zu bytes, peer %d, step %u): byte %zd "
                       "from the buffer's start changed", i, o->kind == SEND ? "send" : "receive",
                       o->len, o->peer, o->step, (ssize_t)k - CANARY);
        }
        free(o->raw);
    }
}

static rcoll_comm_t *comm_make(rcoll_context_t *ctx, uint64_t id, int reversed)
{
    int *wr = malloc(NRANKS * sizeof(int));
    int me = -1;
    FUZZ_CHECK(wr != NULL, "out of memory");
    for (int i = 0; i < NRANKS; i++) {
        wr[i] = reversed ? NRANKS - 1 - i : i;
        if (wr[i] == ctx->rank) {
            me = i;
        }
    }
    rcoll_comm_t *c = NULL;
    FUZZ_CHECK(rcoll_comm_create(ctx, id, me, NRANKS, wr, &c) == RCOLL_OK, "comm_create");
    return c;
}

static void script_start(script_t *s, rcoll_comm_t *comm)
{
    rcoll_coll_args_t a = { .type = RCOLL_COLL_BCAST, .sendbuf = s, .count = 1,
                            .dtype = RCOLL_UINT8 };
    s->comm = comm;
    FUZZ_CHECK(rcoll_task_post_alg(comm, &a, &script_alg, &s->task) == RCOLL_OK, "post");
}

/* ---- the run of one input ---- */

typedef struct {
    rcoll_context_t *ctx;
    script_t         s[2];
    uint8_t          last[MAXMSG];     /* the last message handed over */
    size_t           last_len;
    int              last_peer;
    /* A rank-1 buffer registered for remote write: a forged RTR may carry its key. */
    uint8_t         *target;           /* CANARY, TARGET bytes, CANARY */
    rcoll_tl_mr_t   *target_mr;
    uint8_t          target_key[RCOLL_TL_RKEY_MAX];
    size_t           target_key_len;
} run_t;

static void deliver(run_t *run, int peer, const uint8_t *msg, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);      /* exact size: ASan sees any over-read */
    FUZZ_CHECK(copy != NULL, "out of memory");
    memcpy(copy, msg, len);
    if (len <= sizeof(run->last)) {
        memcpy(run->last, msg, len);
        run->last_len = len;
        run->last_peer = peer;
    }
    rcoll_log_enter(&run->ctx->log);
    rcoll_p2p_recv_cb(run->ctx, peer, copy, len);
    free(copy);
}

static void progress(run_t *run, int rounds)
{
    rcoll_log_enter(&run->ctx->log);
    for (int i = 0; i < rounds; i++) {
        rcoll_context_progress(run->ctx);
    }
}

/* A peer: mostly 1 and 2, sometimes the victim itself or a rank that does not exist. */
static int pick_peer(uint8_t b)
{
    static const int peers[8] = { 1, 2, 1, 2, 0, -1, NRANKS, 1 << 30 };
    return peers[b & 7];
}

/* A header from a few fields, aimed at what the scripts posted. */
static size_t build(run_t *run, fuzz_in_t *in, uint8_t *msg, int *peer, int real_key)
{
    uint8_t a = fuzz_u8(in), b = fuzz_u8(in), c = fuzz_u8(in);
    rcoll_wire_hdr_t h = { 0 };
    static const uint64_t ids[4] = { COMM_A, COMM_B, 1, COMM_A ^ (1ull << 40) };

    *peer = pick_peer(a);
    /* Every message type the core takes (0: not a type): 2 bits of a and
     * bits 4-5 of c, which nothing else reads here. */
    static const uint8_t types[16] = {
        0, RCOLL_MSG_EAGER, RCOLL_MSG_RTR, RCOLL_MSG_FIN,
        RCOLL_MSG_RTS, RCOLL_MSG_DONE, RCOLL_MSG_WITHDRAW, RCOLL_MSG_DECLINE,
        RCOLL_MSG_HOLD, RCOLL_MSG_PULL, RCOLL_MSG_PULLED, RCOLL_MSG_CREDIT,
        RCOLL_MSG_REVOKE, RCOLL_MSG_SHRINK, RCOLL_MSG_WHERE_Q, RCOLL_MSG_WHERE_A };
    h.type = types[((a >> 3) & 3) | (((c >> 4) & 3) << 2)];
    h.version = (a & 0x20) ? RCOLL_WIRE_VERSION + 1 : RCOLL_WIRE_VERSION;
    h.comm_id = ids[(a >> 6) & 3];
    h.seq = (b & 0x80) ? b & 0x7f : 0;             /* the scripts' sequence is 0 */
    h.step = (b >> 4) & 7;
    h.src = (uint32_t)*peer;
    size_t body = lens[b & 7];
    h.len = body;
    if (real_key) {
        h.type = RCOLL_MSG_RTR;
        int8_t delta = (int8_t)c;
        h.addr = (uint64_t)(uintptr_t)(run->target + CANARY) + (uint64_t)(int64_t)delta;
        h.len = lens[(c >> 3) & 7] + (c & 0x80 ? TARGET : 0);
        h.rkey_len = (uint16_t)run->target_key_len;
        h.sig = h.comm_id == COMM_A ? SIG_A : 0;
        rcoll_wire_encode(&h, msg);
        memcpy(msg + RCOLL_WIRE_HDR_SIZE, run->target_key, run->target_key_len);
        size_t field = b & 7;                      /* 1-6: forge one field of the loop key */
        if (field >= 1 && 8 * field <= run->target_key_len) {
            uint64_t v = fuzz_u64(in);
            memcpy(msg + RCOLL_WIRE_HDR_SIZE + 8 * (field - 1), &v, sizeof(v));
        }
        return RCOLL_WIRE_HDR_SIZE + run->target_key_len;
    }
    static const uint32_t sigs[3] = { 0, SIG_A, SIG_A ^ 2 };
    h.sig = ((c >> 2) & 3) == 3 ? (uint32_t)fuzz_u64(in) : sigs[(c >> 2) & 3];
    if (c & 1) {
        h.len = fuzz_u64(in);                      /* a length that may lie */
    }
    if (h.type == RCOLL_MSG_RTR) {
        if (body == 0) {
            body = sizeof(loop_rkey_t);            /* a key of the loop backend's size */
        }
        h.addr = fuzz_u64(in);
        h.rkey_len = (uint16_t)body;
    } else if (h.type == RCOLL_MSG_FIN) {
        body = 0;
    }
    rcoll_wire_encode(&h, msg);
    for (size_t i = 0; i < body; i++) {
        msg[RCOLL_WIRE_HDR_SIZE + i] = fuzz_u8(in);
    }
    size_t len = RCOLL_WIRE_HDR_SIZE + body;
    if (c & 2) {
        len = fuzz_u8(in) % (len + 1);              /* cut short, the header too */
    }
    return len;
}

static void release(run_t *run)
{
    for (int i = 0; i < 2; i++) {
        run->s[i].go = 1;
        if (run->s[i].task != NULL && !run->s[i].task->done) {
            rcoll_log_enter(&run->ctx->log);
            rcoll_task_progress(run->s[i].task);
        }
    }
}

static void run_command(run_t *run, fuzz_in_t *in)
{
    uint8_t msg[MAXMSG];
    size_t len, got;
    int peer;
    uint8_t cmd = fuzz_u8(in);

    switch (cmd & 7) {
    case 0: {                                       /* raw bytes */
        peer = pick_peer(cmd >> 3);
        const uint8_t *p = fuzz_bytes(in, fuzz_u8(in), &got);
        deliver(run, peer, p, got);
        break;
    }
    case 1:
    case 2:                                         /* built from fields */
        len = build(run, in, msg, &peer, 0);
        deliver(run, peer, msg, len);
        break;
    case 3:                                         /* the last one again */
        memcpy(msg, run->last, run->last_len);
        deliver(run, run->last_peer, msg, run->last_len);
        break;
    case 4:                                         /* the last one, cut short */
        len = run->last_len ? fuzz_u8(in) % run->last_len : 0;
        memcpy(msg, run->last, len);
        deliver(run, run->last_peer, msg, len);
        break;
    case 5:                                         /* an RTR with a valid key of rank 1 */
        len = build(run, in, msg, &peer, 1);
        deliver(run, (cmd & 8) ? 1 : 2, msg, len);
        break;
    case 6:
        if (cmd & 8) {                              /* the transport reports a peer failed */
            rcoll_log_enter(&run->ctx->log);
            rcoll_p2p_peer_error_cb(run->ctx, (cmd & 16) ? 2 : 1, RCOLL_ERR_PEER_FAILED,
                                    "fuzz: peer failed");
        } else {
            progress(run, 1 + (cmd >> 4));
        }
        break;
    case 7:
        release(run);
        break;
    }
}

static void target_open(run_t *run)
{
    rcoll_context_t *p = ctxs[1];
    run->target = malloc(TARGET + 2 * CANARY);
    FUZZ_CHECK(run->target != NULL, "out of memory");
    memset(run->target, GUARD, TARGET + 2 * CANARY);
    rcoll_log_enter(&p->log);
    FUZZ_CHECK(p->tls_ops[0]->mem_reg(p->tls[0], run->target + CANARY, TARGET,
                                      RCOLL_TL_ACCESS_REMOTE_WRITE, &run->target_mr) == RCOLL_OK,
               "mem_reg");
    run->target_key_len = sizeof(run->target_key);
    FUZZ_CHECK(p->tls_ops[0]->pack_rkey(p->tls[0], run->target_mr, run->target_key,
                                        &run->target_key_len) == RCOLL_OK, "pack_rkey");
}

/* The victim writes into the target only with its key, so only inside it. */
static void target_close(run_t *run)
{
    rcoll_context_t *p = ctxs[1];
    for (size_t k = 0; k < CANARY; k++) {
        FUZZ_CHECK(run->target[k] == GUARD && run->target[CANARY + TARGET + k] == GUARD,
                   "a write landed next to rank 1's registered buffer");
    }
    rcoll_log_enter(&p->log);
    p->tls_ops[0]->mem_dereg(p->tls[0], run->target_mr);
    free(run->target);
}

/* Drop whatever the victim sent ranks 1 and 2 (they never progress). */
static void drain_peers(void)
{
    for (int r = 1; r < NRANKS; r++) {
        loop_msg_t *m = rcoll__loop_port_take(((struct rcoll_tl *)ctxs[r]->tls[0])->port);
        while (m != NULL) {
            loop_msg_t *next = m->next;
            free(m);
            m = next;
        }
    }
}

static int live_regs(rcoll_context_t *ctx)
{
    loop_port_t *port = ((struct rcoll_tl *)ctx->tls[0])->port;
    int n = 0;
    pthread_mutex_lock(&port->lock);
    for (struct rcoll_tl_mr *m = port->mrs; m != NULL; m = m->next) {
        n++;
    }
    pthread_mutex_unlock(&port->lock);
    return n;
}

/* Fail what still runs (as a timeout would), then check that nothing is left behind. */
static void finish(run_t *run)
{
    rcoll_context_t *ctx = run->ctx;
    for (int i = 0; i < 2; i++) {
        script_t *s = &run->s[i];
        if (s->task != NULL && !s->task->done) {
            s->fail = RCOLL_ERR_TIMEOUT;
            rcoll_log_enter(&ctx->log);
            rcoll_task_progress(s->task);
            FUZZ_CHECK(s->task->done, "a failed task is not done");
        }
    }
    /* Puts the loop backend finished are reported from the next progress. */
    progress(run, 2);
    for (int i = 0; i < 2; i++) {
        if (run->s[i].task != NULL) {
            rcoll_log_enter(&ctx->log);
            rcoll_task_release(run->s[i].task);
        }
    }
    progress(run, 2);
    FUZZ_CHECK(rcoll_list_empty(&ctx->zombies), "a released task still has a transport "
               "operation in flight");
    FUZZ_CHECK(ctx->p2p_pending == 0, "%d operations still pending", ctx->p2p_pending);
    FUZZ_CHECK(rcoll_list_empty(&ctx->posted_recvs) && rcoll_list_empty(&ctx->sends_wait_rtr),
               "an op of a finished task is still in a matching list");
    FUZZ_CHECK(live_regs(ctx) == 0, "a receive buffer is still registered after its task ended");
    rcoll_p2p_cleanup(ctx);
    FUZZ_CHECK(ctx->unexpected_count == 0, "%zu unexpected messages after cleanup",
               ctx->unexpected_count);
    for (int i = 0; i < 2; i++) {
        FUZZ_CHECK(run->s[i].comm->nactive == 0, "communicator still has active tasks");
        rcoll_comm_destroy(run->s[i].comm);
        script_check_free(&run->s[i]);
    }
    target_close(run);
    drain_peers();
    for (int r = 0; r < NRANKS; r++) {
        ctx->peer_failed[r] = RCOLL_OK;       /* the next input starts with every rank alive */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static run_t run;
    fuzz_in_t in = { data, size };
    int n0 = fuzz_u8(&in) & 7, n1 = fuzz_u8(&in) & 7;

    memset(&run, 0, sizeof(run));
    run.ctx = ctxs[0];
    run.ctx->polls = 0;                         /* when transports are polled: as at the start */
    run.ctx->idle_polls = 0;
    target_open(&run);
    script_read(&run.s[0], &in, n0);
    script_read(&run.s[1], &in, n1);
    rcoll_log_enter(&run.ctx->log);
    run.s[0].sig = SIG_A;
    script_start(&run.s[0], comm_make(run.ctx, COMM_A, 0));
    script_start(&run.s[1], comm_make(run.ctx, COMM_B, 1));
    while (in.left > 0) {
        run_command(&run, &in);
    }
    progress(&run, 4);
    finish(&run);
    return 0;
}
