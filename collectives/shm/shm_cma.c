/*
 * shm_cma.c - single-copy reads between the ranks of a segment (cross
 * memory attach, process_vm_readv; process_vm_writev into a reduce root's
 * receive buffer): the set-up check and the per-collective publish / read /
 * write / wait of shm_cma.h.
 *
 * Set-up (shm_enter.c): every rank writes its pid and where it mapped the
 * segment into its ident line before it reports in; a rank other than 0
 * reads rank 0's ident pid through rank 0's mapping with process_vm_readv,
 * rank 0 each other rank's, and the verdict (rank 0's) says whether all
 * could.  The kernel allows the read where the reader may ptrace the owner
 * (same user; yama ptrace_scope 0, or the owner named the reader with
 * PR_SET_PTRACER; no seccomp filter or container rule against the call):
 * the rules are symmetric among a node's ranks of one job, so reads with
 * rank 0 both ways stand for all pairs, and a read that still fails later
 * fails the collective naming the peer.  The pids are copied out of the
 * segment at set-up, so a segment written over later cannot point the
 * reads at another process.
 *
 * Descriptor: the 16 bytes {address, length} of the owner's buffer, in
 * its slot of k (inline, after the slot word with the call's signature).
 * Readers read their own call's length: the descriptor's length must equal
 * it (else the ranks' calls differ: RCOLL_ERR_PROTOCOL) and its address is
 * only ever read from, n bytes, into the reader's own buffer of n bytes.
 * A reduce root's descriptor is 32 bytes: the same 16, then {address,
 * length} of its receive buffer, the only memory a peer ever writes (with
 * process_vm_writev, from its own buffer, at most the writer's own call's
 * length, which both lengths must equal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "shm_cma.h"
#include "shm_adapt.h"
#include "shm_reduction.h"
#include "selector.h"
#include "engines/shm_pipe.h"

typedef struct {
    uint64_t addr, len;
} cma_desc_t;

/* A reduce root's: what the others read (as cma_desc_t), then where they
 * write.  Inline in the slot like cma_desc_t, at the same place. */
typedef struct {
    uint64_t addr, len;
    uint64_t dst, dst_len;
    uint64_t split;          /* a single-copy reduce's: the root's slice (shm_reduce_cma.c) */
} cma_desc_rw_t;
_Static_assert(sizeof(cma_desc_rw_t) <= RCOLL__SHM_INLINE, "inline, where cma_desc_t is");

/* Rank 0's choice of the sizes that go single copy: every size with
 * RCOLL_SHM_CMA=on; with auto, the tune file's `shm` lines, else the
 * defaults (selector_tune.c). */
static void choose_sizes(rcoll_comm_t *comm, rcoll__shm_t *sh, rcoll__shm_ident_t *id)
{
    int on = strcmp(rcoll_ctx_config(comm->ctx)->shm_cma, "on") == 0;
    int over = !on && rcoll__shm_oversubscribed(sh);
    char what[RCOLL_TUNE_NCMA][96];
    int ag_line = 0, bc_line = 0, red_line = 0;

    for (int w = 0; w < RCOLL_TUNE_NCMA; w++) {
        size_t lo = 0, hi = SIZE_MAX;
        int line = on || over ? 0 : rcoll_selector_cma_range(comm->ctx, w, &lo, &hi);
        char range[40];

        if (over) {
            /* ranks outnumber the CPUs: none fixed (a tune file's sizes
             * were measured with a core per rank); only the bcast tries
             * single copy, at run time (below) */
            lo = SIZE_MAX;
            hi = 0;
        }

        if (w == RCOLL_TUNE_CMA_ALLGATHER) {
            ag_line = line;
        } else if (w == RCOLL_TUNE_CMA_BCAST) {
            bc_line = line;
        } else if (w == RCOLL_TUNE_CMA_REDUCE) {
            red_line = line;
        }

        id->cma_lo[w] = lo;
        id->cma_hi[w] = hi;
        rcoll_tune_cma_format(lo, hi, range, sizeof(range));
        if (line > 0) {
            snprintf(what[w], sizeof(what[w]), "%s (tune file line %d)", range, line);
        } else {
            snprintf(what[w], sizeof(what[w]), "%s (%s)", range,
                     on ? "RCOLL_SHM_CMA=on" : over ? "ranks outnumber the CPUs" :
                     line < 0 ? "set by rcoll_tune" : "default");
        }
    }
    /* the allgather, the bcast and the reduce choose at run time (shm_adapt.h),
     * starting from the sizes above, the defaults' or a tune file's: one
     * phase of one CPU measured them.  RCOLL_SHM_CMA=on, or sizes
     * rcoll_tune set to time its crossovers with (line < 0), keep them
     * fixed. */
    const char *mode = rcoll_ctx_config(comm->ctx)->shm_adapt;
    int adapt_ok = !on && strcmp(mode, "off") != 0;
    int adapt = adapt_ok && !over && ag_line >= 0, bcast = adapt_ok && bc_line >= 0;
    int reduce = adapt_ok && !over && red_line >= 0;
    char bc_adapt[96] = "", ag_adapt[96] = "", red_adapt[96] = "";
    static const char adapting[] = ", from %zu KiB chosen at run time starting from these "
                                   "(RCOLL_SHM_ADAPT)";
    if (bcast) {
        snprintf(bc_adapt, sizeof(bc_adapt), adapting, (size_t)RCOLL__SHM_BPATH_MIN / 1024);
    }
    if (adapt) {
        snprintf(ag_adapt, sizeof(ag_adapt), adapting, (size_t)RCOLL__SHM_ADAPT_MIN / 1024);
    }
    if (reduce) {
        snprintf(red_adapt, sizeof(red_adapt), adapting, (size_t)RCOLL__SHM_RPATH_MIN / 1024);
    }
    rcoll__shm_adapt_offer(sh, adapt, bcast, reduce, strcmp(mode, "random") == 0);
    /* the single-copy reduce root's slice: balanced at run time unless off
     * (shm_reduce_cma.c), RCOLL_SHM_CMA=on included */
    rcoll__shm_split_offer(sh, strcmp(mode, "off") == 0 ? 0 : strcmp(mode, "random") == 0 ? 2 : 1);
    /* the reduce_scatter's path needs no single copy: offered wherever a
     * call's time is the machine's, not the scheduler's */
    rcoll__shm_rspath_offer(sh, strcmp(mode, "off") != 0 && !rcoll__shm_oversubscribed(sh),
                            strcmp(mode, "random") == 0);
    rcoll_debug("shm: communicator 0x%llx: single-copy sizes where the ranks can read each "
                "other: bcast %s%s, allgather blocks %s%s, reduce %s%s",
                (unsigned long long)comm->id, what[0], bc_adapt, what[1], ag_adapt, what[2],
                red_adapt);
}

void rcoll__shm_cma_ident(rcoll_comm_t *comm, rcoll__shm_t *sh)
{
    rcoll__shm_ident_t *id = &rcoll__shm_ctl(sh, sh->me)->ident;
    id->pid = (int64_t)getpid();
    id->base = (uint64_t)(uintptr_t)sh->base;
    if (sh->me == 0) {
        choose_sizes(comm, sh, id);
    }
}

/* More ranks on the node than online CPUs.  Then an owner waiting for its
 * readers waits for ranks that are not running: 4 ranks on 2 CPUs took
 * allgather 64 KiB from 80 to 300 us (docs/shm.md), so with auto only the
 * bcast, whose root has nothing else to do, tries single copy there, at
 * run time (choose_sizes), without the root's share (shm_segment.c).  The
 * same on every rank of a node (one CPU count, one p), and agreed in the
 * verdict anyway. */
int rcoll__shm_oversubscribed(const rcoll__shm_t *sh)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu > 0 && sh->p > ncpu;
}

static int cma_wanted(const rcoll_comm_t *comm, const rcoll__shm_t *sh)
{
    const rcoll_config_t *cfg = rcoll_ctx_config(comm->ctx);
    if (strcmp(cfg->shm_cma, "off") == 0) {
        return 0;
    }
    return strcmp(cfg->shm_cma, "on") == 0 || !rcoll__shm_oversubscribed(sh) ||
           strcmp(cfg->shm_adapt, "off") != 0;
}

int rcoll__shm_cma_probe(rcoll_comm_t *comm, rcoll__shm_t *sh, int r)
{
    const rcoll__shm_ident_t *id = &rcoll__shm_ctl(sh, r)->ident;
    int64_t pid = id->pid, got = 0;
    uint64_t base = id->base;

    if (!cma_wanted(comm, sh)) {
        return 0;
    }
    if (pid <= 0 || base == 0) {
        rcoll_debug("shm: communicator 0x%llx: comm rank %d published no pid: no single-copy reads",
                    (unsigned long long)comm->id, r);
        return 0;
    }
    /* r's ident pid, at its offset in r's mapping */
    uint64_t where = base + (uint64_t)((const char *)&id->pid - sh->base);
    struct iovec local = { .iov_base = &got, .iov_len = sizeof(got) };
    struct iovec remote = { .iov_base = (void *)(uintptr_t)where, .iov_len = sizeof(got) };
    ssize_t rc = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
    if (rc != (ssize_t)sizeof(got) || got != pid) {
        rcoll_debug("shm: communicator 0x%llx: cannot read comm rank %d's memory (pid %lld): %s: "
                    "no single-copy reads", (unsigned long long)comm->id, r, (long long)pid,
                    rc < 0 ? strerror(errno) : "wrong bytes");
        return 0;
    }
    return 1;
}

void rcoll__shm_cma_ready(rcoll_comm_t *comm, rcoll__shm_t *sh, int ok)
{
    sh->cma_bc_min = sh->cma_ag_min = sh->cma_red_min = SIZE_MAX;
    sh->cma_bc_max = sh->cma_ag_max = sh->cma_red_max = 0;
    rcoll__shm_rspath_ready(sh);
    if (!ok) {
        if (cma_wanted(comm, sh) && sh->me == 0) {
            rcoll_log(comm->is_world ? RCOLL_LOG_INFO : RCOLL_LOG_DEBUG,
                      "shm: communicator 0x%llx: the ranks cannot read each other's memory "
                      "(process_vm_readv: ptrace rules, e.g. yama ptrace_scope; RCOLL_LOG_LEVEL="
                      "debug says which): bcast and allgather copy through the segment",
                      (unsigned long long)comm->id);
        }
        return;
    }
    /* the others' pids: read at first use (peer_pid), so that a rank maps
     * only the control pages of the ranks it reads from */
    /* rank 0's choice (choose_sizes), read once: the segment is not
     * consulted again for them */
    const rcoll__shm_ident_t *id0 = &rcoll__shm_ctl(sh, 0)->ident;
    sh->cma_bc_min = (size_t)id0->cma_lo[RCOLL_TUNE_CMA_BCAST];
    sh->cma_bc_max = (size_t)id0->cma_hi[RCOLL_TUNE_CMA_BCAST];
    sh->cma_ag_min = (size_t)id0->cma_lo[RCOLL_TUNE_CMA_ALLGATHER];
    sh->cma_ag_max = (size_t)id0->cma_hi[RCOLL_TUNE_CMA_ALLGATHER];
    sh->cma_red_min = (size_t)id0->cma_lo[RCOLL_TUNE_CMA_REDUCE];
    sh->cma_red_max = (size_t)id0->cma_hi[RCOLL_TUNE_CMA_REDUCE];
    rcoll__shm_adapt_ready(sh);
    /* the reduce scratch is made on first use (shm_reduce_cma.c):
     * a failure here could not be agreed on, only reported there */
}

int rcoll__shm_cma_post(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, size_t n)
{
    cma_desc_t d = { .addr = (uint64_t)(uintptr_t)buf, .len = n };
    return rcoll__shm_slot_write(task, op, &d, sizeof(d));
}

int rcoll__shm_cma_post_rw(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, void *dst,
                           size_t n)
{
    return rcoll__shm_cma_post_split(task, op, buf, dst, n, 0);
}

int rcoll__shm_cma_post_split(rcoll_task_t *task, rcoll__shm_op_t *op, const void *buf, void *dst,
                              size_t n, unsigned split)
{
    cma_desc_rw_t d = { .addr = (uint64_t)(uintptr_t)buf, .len = n,
                        .dst = (uint64_t)(uintptr_t)dst, .dst_len = n, .split = split };
    return rcoll__shm_slot_write(task, op, &d, sizeof(d));
}

/* Rank q's reduce-root descriptor of op->k into *d: 1 once q published
 * it, else 0 (task->wait_peer set; the caller returns
 * rcoll__shm_not_read(op)). */
static int rw_desc(rcoll_task_t *task, rcoll__shm_op_t *op, int q, cma_desc_rw_t *d)
{
    const char *slot = rcoll__shm_slot_read(task, op, q, sizeof(*d));

    if (slot == NULL) {
        return 0;
    }
    memcpy(d, slot, sizeof(*d));
    return 1;
}

rcoll_status_t rcoll__shm_cma_split_of(rcoll_task_t *task, rcoll__shm_op_t *op, int q, size_t n,
                                       unsigned *split)
{
    cma_desc_rw_t d;

    if (!rw_desc(task, op, q, &d)) {
        return rcoll__shm_not_read(op);
    }
    if (d.len != n || d.dst_len != n || d.split > RCOLL__SHM_SPLIT_ONE) {
        rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): comm rank "
                    "%d published %llu bytes, a receive buffer of %llu and its slice as "
                    "%llu/%u of them; this call has %zu bytes: the ranks called different "
                    "collectives, or the descriptor is corrupt; its data is not used",
                    rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                    (unsigned long long)op->k, q, (unsigned long long)d.len,
                    (unsigned long long)d.dst_len, (unsigned long long)d.split,
                    RCOLL__SHM_SPLIT_ONE, n);
        op->error = RCOLL_ERR_PROTOCOL;
        return op->error;
    }
    *split = (unsigned)d.split;
    return RCOLL_OK;
}

/* Comm rank q's pid, from its ident line at the first read or write from
 * or into q (the line is written before q reports in at set-up).  Reading
 * every rank's at set-up cost the typical rank a page of shared memory per
 * rank in rcoll_init (test/integration/scale_check.sh: 4.3-5.3 KiB/rank). */
static pid_t peer_pid(rcoll__shm_t *sh, int q)
{
    if (sh->pid[q] == 0) {
        sh->pid[q] = rcoll__shm_ctl(sh, q)->ident.pid;
    }
    return (pid_t)sh->pid[q];
}

/* A process_vm_readv / writev of rank q's buffer failed (err 0: it moved
 * nothing) after got of n bytes: log it naming q, set op->error. */
static rcoll_status_t cma_failed(rcoll_task_t *task, rcoll__shm_op_t *op, int q, int err,
                                 size_t got, size_t n, int write)
{
    rcoll_status_t st = err == ESRCH ? RCOLL_ERR_PEER_FAILED
                      : err == EFAULT || err == 0 ? RCOLL_ERR_PROTOCOL : RCOLL_ERR_TRANSPORT;
    rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): %s comm "
                "rank %d's (world rank %d, pid %lld) %s failed after %zu of %zu bytes: %s",
                rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                (unsigned long long)op->k, write ? "writing" : "reading", q,
                task->comm->world_ranks[q], (long long)op->sh->pid[q],
                write ? "receive buffer" : "buffer", got, n,
                err == ESRCH ? "the process is gone (it died)"
                : err == 0 || err == EFAULT ? "its buffer is not that long (a different call?)"
                : strerror(err));
    op->error = st;
    return st;
}

/* Move len bytes between local (this process) and remote (in pid): read
 * them (write 0) or write them (1).  Returns how many moved; short, with
 * *err the errno (0: the remote range ended), when the call failed. */
static size_t cma_move(pid_t pid, void *local, uint64_t remote, size_t len, int write, int *err)
{
    size_t off = 0;
    *err = 0;
    while (off < len) {
        struct iovec l = { .iov_base = (char *)local + off, .iov_len = len - off };
        struct iovec r = { .iov_base = (void *)(uintptr_t)(remote + off), .iov_len = len - off };
        ssize_t rc = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                           : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc <= 0) {
            *err = rc < 0 ? errno : 0;
            break;
        }
        off += (size_t)rc;
    }
    return off;
}

rcoll_status_t rcoll__shm_cma_pull_part(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                        void *dst, size_t n, size_t from, size_t len)
{
    cma_desc_t d;
    const char *slot = rcoll__shm_slot_read(task, op, q, sizeof(d));

    if (slot == NULL) {
        return rcoll__shm_not_read(op);
    }
    memcpy(&d, slot, sizeof(d));
    if (d.len != n || from > n || len > n - from) {
        rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): comm rank "
                    "%d published %llu bytes, this call has %zu: the ranks called different "
                    "collectives; its data is not used", rcoll_coll_name(task->args.type),
                    (unsigned long long)task->comm->id, (unsigned long long)op->k, q,
                    (unsigned long long)d.len, n);
        op->error = RCOLL_ERR_PROTOCOL;
        return op->error;
    }
    int err;
    size_t done = cma_move(peer_pid(op->sh, q), dst, d.addr + from, len, 0, &err);
    return done == len ? RCOLL_OK : cma_failed(task, op, q, err, from + done, n, 0);
}

rcoll_status_t rcoll__shm_cma_push_part(rcoll_task_t *task, rcoll__shm_op_t *op, int q,
                                        const void *src, size_t n, size_t to, size_t len)
{
    cma_desc_rw_t d;

    if (!rw_desc(task, op, q, &d)) {
        return rcoll__shm_not_read(op);
    }
    if (d.dst_len != n || d.len != n || d.dst == 0 || to > n || len > n - to) {
        rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): comm rank "
                    "%d published a receive buffer of %llu bytes, this call has %zu: the ranks "
                    "called different collectives; nothing is written to it",
                    rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                    (unsigned long long)op->k, q, (unsigned long long)d.dst_len, n);
        op->error = RCOLL_ERR_PROTOCOL;
        return op->error;
    }
    int err;
    size_t done = cma_move(peer_pid(op->sh, q), (void *)(uintptr_t)src, d.dst + to, len, 1,
                           &err);
    return done == len ? RCOLL_OK : cma_failed(task, op, q, err, to + done, n, 1);
}

int rcoll__shm_cma_wrote(rcoll_task_t *task, rcoll__shm_op_t *op, int q)
{
    if (!rcoll__shm_cma_reader_gone(task, op, q)) {
        return 0;
    }
    /* gone: it raised cma_read before done, so an acquire of either shows
     * cma_read if it finished its part */
    if (atomic_load_explicit(&rcoll__shm_ctl(op->sh, q)->cma_read.v, memory_order_acquire) >=
        op->k) {
        return 1;
    }
    rcoll_error("rcoll_%s (algorithm shm, communicator 0x%llx, shm operation %llu): comm rank "
                "%d (world rank %d) left the collective without writing its part into this "
                "rank's receive buffer (it failed or abandoned it)",
                rcoll_coll_name(task->args.type), (unsigned long long)task->comm->id,
                (unsigned long long)op->k, q, task->comm->world_ranks[q]);
    op->error = RCOLL_ERR_PEER_FAILED;
    return 0;
}

int rcoll__shm_cma_announce(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll__shm_t *sh = op->sh;
    if (!rcoll__shm_slots_free(task, sh, op->k)) {
        return 0;
    }
    atomic_store_explicit(rcoll__shm_slot_seq(sh, sh->me, op->k), op->word, memory_order_release);
    return 1;
}

void rcoll__shm_cma_read_done(rcoll__shm_t *sh, uint64_t k)
{
    atomic_store_explicit(&rcoll__shm_ctl(sh, sh->me)->cma_read.v, k, memory_order_release);
}

int rcoll__shm_cma_reader_gone(rcoll_task_t *task, rcoll__shm_op_t *op, int q)
{
    rcoll__shm_t *sh = op->sh;
    uint64_t k = op->k;
    rcoll__shm_ctl_t *ctl = rcoll__shm_ctl(sh, q);

    /* q's slot word of k first: q in another call may have left it (done),
     * and this call must fail then, not succeed (q cannot rewrite the slot
     * for k + 2 before this rank is through k) */
    uint64_t w = atomic_load_explicit(rcoll__shm_slot_seq(sh, q, k), memory_order_acquire);
    if (w != op->word && (w & RCOLL__SHM_K_MASK) == (k & RCOLL__SHM_K_MASK)) {
        rcoll__shm_slot_mismatch(task, op, q, w);
        return 0;
    }
    if (atomic_load_explicit(&ctl->cma_read.v, memory_order_acquire) >= k ||
        rcoll__shm_flag_ge(&ctl->done, &sh->fin[q], k)) {
        return 1;
    }
    rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_CMA);
    return 0;
}

int rcoll__shm_cma_all_read(const rcoll__shm_t *sh, uint64_t k)
{
    for (int q = 0; q < sh->p; q++) {
        if (q != sh->me &&
            atomic_load_explicit(&rcoll__shm_ctl((rcoll__shm_t *)sh, q)->cma_read.v,
                                 memory_order_acquire) < k) {
            return 0;
        }
    }
    return 1;
}

int rcoll__shm_cma_readers_gone(rcoll_task_t *task, rcoll__shm_op_t *op, int *next)
{
    for (; *next < op->sh->p; ++*next) {
        if (*next != op->sh->me && !rcoll__shm_cma_reader_gone(task, op, *next)) {
            return 0;
        }
    }
    return 1;
}
