/*
 * shm_segment.c - the per-communicator shared-memory segment itself:
 * create (comm rank 0), attach (the others), drop, layout.  The protocol
 * that connects them is in shm_enter.c.
 *
 * Rank 0 creates a POSIX shared-memory object with a random name (O_EXCL,
 * so concurrent jobs on the host never share one) and unlinks the name at
 * once: from then on the segment lives only as long as some process has it
 * open or mapped, so no kill at any moment leaves a file in /dev/shm (only
 * a kill of rank 0 between its shm_open and shm_unlink, two system calls,
 * could).  It then sizes the object, reserves its memory (posix_fallocate:
 * a full /dev/shm fails here, not later with SIGBUS; /dev/shm's size limit,
 * e.g. docker --shm-size, still applies), maps it and writes the geometry
 * and a random token into its header.  The other ranks open it through
 * rank 0's descriptor, /proc/<pid>/fd/<fd> (sent with the token in the
 * set-up message; it needs the ranks of a node to share a pid namespace and
 * the ptrace "read" access a same-user process has, which Yama's
 * ptrace_scope does not restrict), check the token and geometry, and map it.
 * Rank 0 closes the descriptor once the set-up is over.
 *
 * Why not memfd_create: it would not be counted against /dev/shm's limit,
 * which is how containers bound a job's shared memory, and attaching would
 * go through /proc/<pid>/fd just the same.  Why not pidfd_getfd or
 * SCM_RIGHTS: the first needs ptrace "attach" access (refused under Yama
 * ptrace_scope=1, Ubuntu's default), the second a Unix socket between ranks
 * that rcoll does not otherwise have.
 *
 * The header also carries a token of the job and the communicator (derived
 * from the job's secret, common/auth.h): a rank attaches only to a segment
 * whose job token is its own, so a name that reaches it from another job
 * (or a stale one) is refused, never used.  The object is 0600.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shm.h"
#include "shm_adapt.h"
#include "shm_reduction.h"
#include "auth.h"
#include "stream_min.h"
#include "selector.h"

#define SHM_MAGIC   0x72636f6c6c73686dULL   /* "rcollshm" */
#define SHM_VERSION 6

typedef struct {
    uint64_t         magic;
    uint32_t         version;
    int32_t          nranks;
    uint64_t         token;    /* random, also in the set-up message */
    uint64_t         size, rank_stride, slot_stride, small_max, slice, chunk;
    int32_t          nbuf;
    uint64_t         job_token;          /* rcoll__auth_token(ctx, "shm", comm id) */
    uint64_t         pair_flat_max;      /* rank 0's RCOLL_SHM_PAIR_FLAT_MAX, resolved */
} shm_header_t;

/* Why this rank has no segment, into sh->why: the shm collectives that
 * find no segment report it (shm_enter.c). */
__attribute__((format(printf, 3, 4)))
static void segment_fail(rcoll__shm_t *sh, rcoll_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
    va_end(ap);
    sh->why_status = st;
    rcoll_debug("shm: %s", sh->why);
}

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

void rcoll__shm_segment_close_fd(rcoll__shm_t *sh)
{
    if (sh->fd >= 0) {
        close(sh->fd);
        sh->fd = -1;
    }
}

void rcoll__shm_segment_drop(rcoll__shm_t *sh)
{
    if (sh->base != NULL) {
        munmap(sh->base, sh->size);
        sh->base = NULL;
    }
    rcoll__shm_segment_close_fd(sh);
}

void rcoll__shm_free(rcoll_comm_t *comm)
{
    rcoll__shm_t *sh = rcoll_coll_comm(comm)->shm;
    if (sh == NULL) {
        return;
    }
    rcoll__shm_adapt_report(comm, sh);
    rcoll__shm_split_report(comm, sh);
    rcoll__shm_segment_drop(sh);
    free(sh->cma_scratch);
    free(sh->fin);
    free(sh);
    rcoll_coll_comm(comm)->shm = NULL;
}

rcoll__shm_t *rcoll__shm_new(const rcoll_comm_t *comm)
{
    rcoll__shm_t *sh = calloc(1, sizeof(*sh));
    uint64_t *flags = calloc(7 * (size_t)comm->size, sizeof(uint64_t));
    if (sh == NULL || flags == NULL) {
        free(sh);
        free(flags);
        return NULL;
    }
    sh->p = comm->size;
    sh->me = comm->rank;
    sh->chunk_next = 1;
    sh->fd = -1;
    sh->fin = flags;
    sh->in_ready = flags + comm->size;
    sh->res_ready = flags + 2 * (size_t)comm->size;
    sh->out_done = flags + 3 * (size_t)comm->size;
    sh->peer_ok = (uint8_t *)(flags + 4 * (size_t)comm->size);
    sh->pipe_faulted = (uint8_t *)(flags + 5 * (size_t)comm->size);
    sh->pid = (int64_t *)(void *)(flags + 6 * (size_t)comm->size);
    /* no single-copy reads until the set-up agrees */
    sh->cma_bc_min = sh->cma_ag_min = sh->cma_red_min = SIZE_MAX;
    sh->cma_bc_max = sh->cma_ag_max = sh->cma_red_max = 0;
    /* No root share while ranks outnumber the CPUs: the root would wait for
     * each reader to publish its buffer, readers that may sleep waiting for
     * it (RCOLL_WAIT_SLEEP_MIN), and 4 ranks on 2 vCPUs took 3-5 ms a call
     * from 256 KiB (RCOLL_SHM_CMA=on; 22-35 us without the share). */
    int over = rcoll__shm_oversubscribed(sh);
    sh->cma_share_min = over ? SIZE_MAX : RCOLL__SHM_CMA_SHARE_MIN;
    sh->ag_rotate_min = RCOLL__SHM_AG_ROTATE_MIN;
    sh->demote = !over;   /* this rank's own business: no agreement */
    sh->red_rotate_min = RCOLL__SHM_RED_ROTATE_MIN;
    sh->red_rotate_piece = RCOLL__SHM_RED_ROTATE_PIECE;
    sh->adapt.min = SIZE_MAX;                  /* no run-time choice until the set-up agrees */
    sh->adapt.ahead = 16;
    sh->bpath.ad.min = SIZE_MAX;
    sh->bpath.ad.ahead = 16;
    /* the bcast path's try groups 32 groups (256 calls) before the root's
     * store tries (the same hash, shm_adapt.h): never the same calls */
    sh->bpath.ad.salt = 32;
    sh->rpath.min = SIZE_MAX;
    sh->rpath.ahead = 16;
    sh->rpath.salt = 64;   /* its tries on other calls than the bcast path's, for loops of both */
    sh->rspath.min = SIZE_MAX;
    sh->rspath.ahead = 16;
    sh->rspath.salt = 96;
    sh->red_pieced_min = RCOLL__SHM_RED_PIECED_MIN;
    sh->red_piece = RCOLL__SHM_RED_PIECE;
    sh->stream_min = comm->ctx ? rcoll__shm_stream_min(rcoll_ctx_config(comm->ctx))
                               : rcoll_stream_min_auto();   /* unit tests' bare comms */
    size_t tuned;
    if (comm->ctx && rcoll_ctx_config(comm->ctx)->shm_stream_min == RCOLL_CONFIG_SIZE_AUTO &&
        rcoll_selector_stream_min(comm->ctx, &tuned) > 0) {
        sh->stream_min = tuned;      /* measured by rcoll_tune (docs/tuning.md) */
    }
    sh->pair_flat_max = rcoll__shm_pair_flat_max(comm->ctx);   /* rank 0's is the one kept */
    sh->store.min = sh->agstore.min = sh->rstore.min = sh->rsstore.min = sh->bstore.min = SIZE_MAX;
    sh->over_stream_min = SIZE_MAX;
    if (comm->ctx != NULL) {
        rcoll__shm_store_offer(sh, rcoll_ctx_config(comm->ctx)->shm_adapt,
                               rcoll__shm_oversubscribed(sh));
    }
    return sh;
}

size_t rcoll__shm_pair_flat_max(rcoll_context_t *ctx)
{
    size_t v = RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT;
    if (ctx != NULL) {
        size_t set = rcoll_ctx_config(ctx)->shm_pair_flat_max;
        if (set == RCOLL_CONFIG_SIZE_AUTO) {
            (void)rcoll_selector_pair_flat_max(ctx, &v);
        } else {
            v = set;
        }
    }
    return v;
}

/* The pipeline buffers start cut into nbuf whole chunks (rcoll__shm_pipe_start
 * recuts them for a medium bcast). */
static void cut_whole_chunks(rcoll__shm_t *sh)
{
    sh->bc_piece = RCOLL__SHM_BC_PIECE;
    sh->piece = sh->chunk;
    sh->res_stride = sh->slice;
    sh->ring = (uint64_t)sh->nbuf;
    sh->over_all = 0;
}

static void geometry_from(rcoll__shm_t *sh, const shm_header_t *h)
{
    sh->size = h->size;
    sh->rank_stride = h->rank_stride;
    sh->slot_stride = h->slot_stride;
    sh->small_max = h->small_max;
    sh->slice = h->slice;
    sh->chunk = h->chunk;
    sh->nbuf = h->nbuf;
    sh->pair_flat_max = (size_t)h->pair_flat_max;
    cut_whole_chunks(sh);
}

static void geometry_to(shm_header_t *h, const rcoll__shm_t *sh)
{
    h->magic = SHM_MAGIC;
    h->version = SHM_VERSION;
    h->nranks = sh->p;
    h->size = sh->size;
    h->rank_stride = sh->rank_stride;
    h->slot_stride = sh->slot_stride;
    h->small_max = sh->small_max;
    h->slice = sh->slice;
    h->chunk = sh->chunk;
    h->nbuf = sh->nbuf;
    h->pair_flat_max = sh->pair_flat_max;
}

void rcoll__shm_layout(rcoll__shm_t *sh, size_t small_max, size_t slice, int nbuf,
                       size_t pipe_min)
{
    int p = sh->p;
    if (slice * (size_t)p > RCOLL__SHM_CHUNK_MAX) {
        slice = RCOLL__SHM_CHUNK_MAX / (size_t)p;
    }
    slice = slice / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
    if (slice < RCOLL__SHM_LINE) {
        slice = RCOLL__SHM_LINE;
    }
    sh->small_max = small_max;
    sh->slot_stride = round_up(RCOLL__SHM_LINE + small_max, RCOLL__SHM_LINE);
    sh->slice = slice;
    sh->chunk = slice * (size_t)p;
    sh->nbuf = nbuf < 2 ? 2 : nbuf;
    cut_whole_chunks(sh);
    size_t pipe = (size_t)sh->nbuf * (sh->chunk + sh->slice);
    if (pipe < pipe_min) {
        pipe = pipe_min;                      /* a bcast's ring (rcoll__shm_bc_ring_bytes) */
    }
    sh->rank_stride = round_up(sizeof(rcoll__shm_ctl_t) + 2 * sh->slot_stride + pipe, 4096);
    sh->size = 4096 + (size_t)p * sh->rank_stride;
}

/*
 * The first store to, and each process's first load from, each page of the
 * segment faults.  posix_fallocate reserves the pages but does not map
 * them, and under a hypervisor that shadows the guest's page tables (this
 * VM: PVM, Firecracker) each such fault costs 5-25 us per 4 KiB page,
 * invisible to the guest's fault counters; MAP_POPULATE did not help (every
 * access still paid, and the set-up took twice as long).  A medium bcast's
 * ring goes round the whole pipeline area, so its first dozen calls paid
 * 150-450 us each, and OSU-style warm-ups of 10 calls timed that.  Faulting
 * the pages in one go, in the first call that will use them, keeps it out
 * of the later ones:
 *
 * - a rank's own pipeline area, written once before its first pipelined
 *   collective publishes anything in it (only its owner writes a region,
 *   and nobody reads a pipeline buffer before its owner published a chunk
 *   there);
 * - a bcast root's pipeline area, read one byte per page by each reader of
 *   its first medium bcast from that root (the ring reads all of it);
 * - every rank's pipeline area, read so by every rank in its first
 *   pipelined allgather (each reads all of every other rank's);
 * - the same areas in the first call on single copy of a bcast or
 *   allgather whose path is chosen at run time: else its first try of two
 *   copies, a few calls later and timed, pays them (5-9 ms in one call).
 *
 * Other readers stay lazy: an allreduce rank reads one slice of each
 * chunk, and touching every peer's area up front would cost p x the area.
 */
void rcoll__shm_fault_in_pipe(rcoll__shm_t *sh, int r)
{
    char *area = rcoll__shm_region(sh, r) + rcoll__shm_pipe_offset(sh);
    size_t len = sh->rank_stride - rcoll__shm_pipe_offset(sh);

    if (sh->pipe_faulted[r]) {
        return;
    }
    sh->pipe_faulted[r] = 1;
    if (r == sh->me) {
        memset(area, 0, len);
        return;
    }
    uint8_t sum = 0;
    for (size_t off = 0; off < len; off += 4096) {
        sum += ((const volatile uint8_t *)area)[off];
    }
    (void)sum;
}

/* The geometry for sh->p ranks (docs/shm.md, "Memory"). */
void rcoll__shm_default_layout(rcoll__shm_t *sh)
{
    rcoll__shm_layout(sh, rcoll__shm_slot_size(sh->p), rcoll__shm_slice_size(sh->p, RCOLL__SHM_NBUF),
                      RCOLL__SHM_NBUF, rcoll__shm_bc_ring_bytes(sh->p, rcoll_l2_bytes()));
}

/* Rank 0: create, size and map a fresh segment; sh->name stays "" on failure. */
rcoll_status_t rcoll__shm_segment_create(rcoll_comm_t *comm, rcoll__shm_t *sh)
{
    shm_header_t g;
    char path[RCOLL__SHM_NAME_MAX];
    uint64_t token = 0;
    int fd = -1;

    rcoll__shm_default_layout(sh);
    memset(&g, 0, sizeof(g));
    geometry_to(&g, sh);
    g.job_token = rcoll__auth_token(comm->ctx, "shm", comm->id);
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token)) {
            token = (uint64_t)rcoll_time_now() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)tries;
        }
        snprintf(path, sizeof(path), "/rcoll-%ld-%016" PRIx64, (long)getpid(), token);
        fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot create it: shm_open(%s): %s", path,
                     strerror(errno));
        sh->name[0] = '\0';
        return RCOLL_ERR_NO_MEMORY;
    }
    shm_unlink(path);            /* nothing in /dev/shm from here on, whatever happens */
    g.token = token;
    int err = ftruncate(fd, (off_t)g.size) != 0 ? errno : posix_fallocate(fd, 0, (off_t)g.size);
    if (err != 0) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot reserve its %zu bytes in /dev/shm: %s (is "
                     "/dev/shm too small? e.g. docker --shm-size)", (size_t)g.size, strerror(err));
        goto fail;
    }
    void *base = mmap(NULL, g.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot map it (%zu bytes): %s", (size_t)g.size,
                     strerror(errno));
        goto fail;
    }
    sh->base = base;
    sh->fd = fd;
    memcpy(base, &g, sizeof(g));
    snprintf(sh->name, sizeof(sh->name), "/proc/%ld/fd/%d %016" PRIx64, (long)getpid(), fd, token);
    rcoll_debug("shm: communicator 0x%llx: segment %s, %zu bytes (%d ranks, slot %zu, slice %zu)",
                (unsigned long long)comm->id, sh->name, sh->size, sh->p, sh->small_max, sh->slice);
    return RCOLL_OK;

fail:
    close(fd);
    sh->name[0] = '\0';
    return RCOLL_ERR_NO_MEMORY;
}

/* Other ranks: map the segment rank 0 named ("/proc/<pid>/fd/<fd> <token>",
 * from the wire: only the two numbers and the token are used). */
rcoll_status_t rcoll__shm_segment_attach(rcoll_comm_t *comm, rcoll__shm_t *sh)
{
    struct stat stbuf;
    char path[RCOLL__SHM_NAME_MAX];
    long pid = 0;
    int fdnum = -1, fd;
    uint64_t token = 0;

    (void)comm;
    sh->name[sizeof(sh->name) - 1] = '\0';
    if (sscanf(sh->name, "/proc/%ld/fd/%d %" SCNx64, &pid, &fdnum, &token) != 3 || pid <= 0 ||
        fdnum < 0) {
        segment_fail(sh, RCOLL_ERR_PROTOCOL, "comm rank 0 sent a malformed segment name");
        return RCOLL_ERR_PROTOCOL;
    }
    snprintf(path, sizeof(path), "/proc/%ld/fd/%d", pid, fdnum);
    /* only a regular file is ever opened (a device or FIFO named by a bad
     * message could act on being opened) */
    int serr = stat(path, &stbuf) != 0 ? errno : 0;
    if (serr != 0 || !S_ISREG(stbuf.st_mode)) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot use comm rank 0's segment through %s: %s "
                     "(are the ranks of this node in one pid namespace?)", path,
                     serr != 0 ? strerror(serr) : "not a regular file");
        return RCOLL_ERR_NO_MEMORY;
    }
    fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot open comm rank 0's segment through %s: %s "
                     "(are the ranks of this node in one pid namespace?)", path, strerror(errno));
        return RCOLL_ERR_NO_MEMORY;
    }
    void *base = MAP_FAILED;
    if (fstat(fd, &stbuf) == 0 && S_ISREG(stbuf.st_mode) && (size_t)stbuf.st_size >= 4096) {
        base = mmap(NULL, (size_t)stbuf.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED) {
        segment_fail(sh, RCOLL_ERR_NO_MEMORY, "cannot map %s: %s", path, strerror(errno));
        return RCOLL_ERR_NO_MEMORY;
    }
    shm_header_t *h = base;
    if (h->magic != SHM_MAGIC || h->version != SHM_VERSION || h->nranks != sh->p ||
        h->token != token || h->size != (uint64_t)stbuf.st_size || h->nbuf < 2 ||
        h->size != 4096 + (uint64_t)sh->p * h->rank_stride) {
        segment_fail(sh, RCOLL_ERR_INTERNAL, "%s is not the segment this communicator expects "
                     "(magic %" PRIx64 ", %d ranks, %" PRIu64 " bytes; expected %d ranks)",
                     path, h->magic, h->nranks, h->size, sh->p);
        munmap(base, (size_t)stbuf.st_size);
        return RCOLL_ERR_INTERNAL;
    }
    if (!rcoll__auth_equal64(h->job_token, rcoll__auth_token(comm->ctx, "shm", comm->id))) {
        segment_fail(sh, RCOLL_ERR_PROTOCOL, "%s does not carry this job's token for communicator "
                     "0x%llx: refusing to use it", sh->name, (unsigned long long)comm->id);
        rcoll_error("shm: refusing segment %s: it does not carry this job's token for communicator "
                    "0x%llx", sh->name, (unsigned long long)comm->id);
        munmap(base, (size_t)stbuf.st_size);
        return RCOLL_ERR_PROTOCOL;
    }
    sh->base = base;
    geometry_from(sh, h);
    return RCOLL_OK;
}
