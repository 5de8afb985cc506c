/*
 * shm_segment.c - the per-communicator shared-memory segment: set up lazily
 * by the first shm collective on the communicator, then used by one shm
 * collective at a time (in posting order) on each rank.
 *
 * Set-up: comm rank 0 creates a POSIX shared-memory object with a random
 * name (O_EXCL, so concurrent jobs on the host never share one), sizes and
 * maps it, writes the geometry into its header and sends the name to every
 * other rank with rcoll's own point-to-point messages (tag STEP_SETUP of the
 * first collective).  Each rank maps it and counts itself in the header;
 * the last to do so unlinks the name, so nothing is left in /dev/shm even
 * if the job dies later.  Rank 0 also unlinks at communicator destruction
 * in case some rank never attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shm.h"

#define SHM_MAGIC   0x72636f6c6c73686dULL   /* "rcollshm" */
#define SHM_VERSION 1
#define STEP_SETUP  0x5e70u
#define SETUP_BATCH 32          /* sends in flight (RCOLL_TASK_MAX_OPS is 64) */

enum {
    ST_START = 0,   /* not yet numbered */
    ST_SETUP,       /* waiting for the segment */
    ST_SEND,        /* rank 0: sending the name */
    ST_RECV,        /* others: receiving the name */
    ST_ORDER,       /* waiting for the earlier shm collectives here */
    ST_ENTERED
};

typedef struct {
    uint64_t         magic;
    uint32_t         version;
    int32_t          nranks;
    uint64_t         size, rank_stride, slot_stride, small_max, slice, chunk;
    int32_t          nbuf;
    _Atomic int32_t  attached;
} shm_header_t;

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static void shm_free(rcoll_comm_t *comm)
{
    rcoll__shm_t *sh = comm->shm;
    if (sh == NULL) {
        return;
    }
    if (sh->base != NULL) {
        munmap(sh->base, sh->size);
    }
    if (sh->me == 0 && !sh->unlinked && sh->name[0] != '\0') {
        shm_unlink(sh->name);    /* ENOENT when the last rank to attach did it */
    }
    free(sh->fin);
    free(sh);
    comm->shm = NULL;
    comm->shm_free = NULL;
}

rcoll__shm_t *rcoll__shm_new(const rcoll_comm_t *comm)
{
    rcoll__shm_t *sh = calloc(1, sizeof(*sh));
    uint64_t *flags = calloc(4 * (size_t)comm->size, sizeof(uint64_t));
    if (sh == NULL || flags == NULL) {
        free(sh);
        free(flags);
        return NULL;
    }
    sh->p = comm->size;
    sh->me = comm->rank;
    sh->chunk_next = 1;
    sh->fin = flags;
    sh->in_ready = flags + comm->size;
    sh->res_ready = flags + 2 * (size_t)comm->size;
    sh->out_done = flags + 3 * (size_t)comm->size;
    return sh;
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
}

void rcoll__shm_layout(rcoll__shm_t *sh, size_t small_max, size_t slice, int nbuf)
{
    int p = sh->p;
    if (slice * (size_t)p > RCOLL__SHM_CHUNK_MAX) {
        slice = RCOLL__SHM_CHUNK_MAX / (size_t)p;
    }
    slice = slice / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
    if (slice < 4096) {
        slice = 4096;
    }
    sh->small_max = small_max;
    sh->slot_stride = round_up(sizeof(uint64_t) + small_max, RCOLL__SHM_LINE);
    sh->slice = slice;
    sh->chunk = slice * (size_t)p;
    sh->nbuf = nbuf < 2 ? 2 : nbuf;
    sh->rank_stride = round_up(sizeof(rcoll__shm_ctl_t) + 2 * sh->slot_stride +
                               (size_t)sh->nbuf * (sh->chunk + sh->slice), 4096);
    sh->size = 4096 + (size_t)p * sh->rank_stride;
}

/* Rank 0: create, size and map a fresh segment; sh->name stays "" on failure. */
static rcoll_status_t segment_create(rcoll_comm_t *comm, rcoll__shm_t *sh)
{
    shm_header_t g;
    int fd = -1;

    rcoll__shm_layout(sh, RCOLL__SHM_SMALL, RCOLL__SHM_SLICE, RCOLL__SHM_NBUF);
    memset(&g, 0, sizeof(g));
    geometry_to(&g, sh);
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        uint64_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
            rnd = (uint64_t)rcoll_time_now() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)tries;
        }
        snprintf(sh->name, sizeof(sh->name), "/rcoll-%ld-%016" PRIx64, (long)getpid(), rnd);
        fd = shm_open(sh->name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        rcoll_error("shm: cannot create a shared-memory segment for communicator 0x%llx "
                    "(%d ranks): shm_open(%s): %s", (unsigned long long)comm->id, sh->p,
                    sh->name, strerror(errno));
        sh->name[0] = '\0';
        return RCOLL_ERR_NO_MEMORY;
    }
    if (ftruncate(fd, (off_t)g.size) != 0) {
        rcoll_error("shm: cannot size the shared-memory segment %s to %zu bytes (is /dev/shm "
                    "full?): %s", sh->name, (size_t)g.size, strerror(errno));
        goto fail_unlink;
    }
    void *base = mmap(NULL, g.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        rcoll_error("shm: cannot map the shared-memory segment %s (%zu bytes): %s", sh->name,
                    (size_t)g.size, strerror(errno));
        goto fail_unlink;
    }
    close(fd);
    sh->base = base;
    shm_header_t *h = base;
    memcpy(h, &g, offsetof(shm_header_t, attached));
    atomic_store_explicit(&h->attached, 1, memory_order_release);
    rcoll_debug("shm: communicator 0x%llx: segment %s, %zu bytes (%d ranks, slot %zu, slice %zu)",
                (unsigned long long)comm->id, sh->name, sh->size, sh->p, sh->small_max, sh->slice);
    return RCOLL_OK;

fail_unlink:
    close(fd);
    shm_unlink(sh->name);
    sh->name[0] = '\0';
    return RCOLL_ERR_NO_MEMORY;
}

/* Other ranks: map the segment rank 0 named. */
static rcoll_status_t segment_attach(rcoll_comm_t *comm, rcoll__shm_t *sh)
{
    struct stat stbuf;
    int fd;

    sh->name[sizeof(sh->name) - 1] = '\0';
    if (sh->name[0] == '\0') {
        rcoll_error("shm: communicator 0x%llx: rank 0 (world rank %d) could not create the "
                    "shared-memory segment (see its error)", (unsigned long long)comm->id,
                    comm->world_ranks[0]);
        return RCOLL_ERR_NO_MEMORY;
    }
    fd = shm_open(sh->name, O_RDWR, 0);
    if (fd < 0) {
        rcoll_error("shm: cannot open the shared-memory segment %s created by rank 0 of "
                    "communicator 0x%llx: %s", sh->name, (unsigned long long)comm->id,
                    strerror(errno));
        return RCOLL_ERR_NO_MEMORY;
    }
    void *base = MAP_FAILED;
    if (fstat(fd, &stbuf) == 0 && (size_t)stbuf.st_size >= 4096) {
        base = mmap(NULL, (size_t)stbuf.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED) {
        rcoll_error("shm: cannot map the shared-memory segment %s: %s", sh->name, strerror(errno));
        return RCOLL_ERR_NO_MEMORY;
    }
    shm_header_t *h = base;
    if (h->magic != SHM_MAGIC || h->version != SHM_VERSION || h->nranks != sh->p ||
        h->size != (uint64_t)stbuf.st_size) {
        rcoll_error("shm: segment %s is not the one this communicator expects (magic %" PRIx64
                    ", %d ranks, %" PRIu64 " bytes; expected %d ranks)", sh->name, h->magic,
                    h->nranks, h->size, sh->p);
        munmap(base, (size_t)stbuf.st_size);
        return RCOLL_ERR_INTERNAL;
    }
    sh->base = base;
    geometry_from(sh, h);
    if (atomic_fetch_add_explicit(&h->attached, 1, memory_order_acq_rel) == sh->p - 1) {
        shm_unlink(sh->name);
        sh->unlinked = 1;
    }
    return RCOLL_OK;
}

/* Rank 0 sends the name in batches; RCOLL_OK when all sends are done. */
static rcoll_status_t setup_send(rcoll_task_t *task, rcoll__shm_t *sh)
{
    for (;;) {
        rcoll_status_t st = rcoll_task_test(task);
        if (st != RCOLL_OK) {
            return st;
        }
        if (sh->setup_sent >= sh->p - 1) {
            return RCOLL_OK;
        }
        int last = sh->setup_sent + SETUP_BATCH;
        if (last > sh->p - 1) {
            last = sh->p - 1;
        }
        for (int r = sh->setup_sent + 1; r <= last; r++) {
            st = rcoll_task_send(task, r, STEP_SETUP, sh->name, sizeof(sh->name));
            if (st != RCOLL_OK) {
                return st;
            }
        }
        sh->setup_sent = last;
    }
}

static rcoll_status_t setup_fail(rcoll__shm_t *sh, rcoll_status_t st)
{
    sh->state = RCOLL__SHM_FAILED;
    return st;
}

static rcoll_status_t check_usable(rcoll_task_t *task)
{
    rcoll_comm_t *comm = task->comm;
    const char *coll = rcoll_coll_name(task->args.type);

    if (comm->local_size != comm->size) {
        rcoll_error("%s algorithm shm: not supported on communicator 0x%llx: only %d of its %d "
                    "ranks are on this node (%s); it needs every rank on one node, so do not "
                    "force it here (RCOLL_*_ALGORITHM)", coll, (unsigned long long)comm->id,
                    comm->local_size, comm->size, comm->ctx->hostname);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    /* RCOLL_SHM=0 keeps the selector from choosing shm; a forced choice wins. */
    return RCOLL_OK;
}

rcoll_status_t rcoll__shm_enter(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll_comm_t *comm = task->comm;
    rcoll__shm_t *sh = op->sh;
    rcoll_status_t st;

    for (;;) {
        switch (op->stage) {
        case ST_START:
            if ((st = check_usable(task)) != RCOLL_OK) {
                return st;
            }
            if (comm->shm == NULL) {
                comm->shm = rcoll__shm_new(comm);
                if (comm->shm == NULL) {
                    rcoll_error("shm: out of memory for the state of communicator 0x%llx",
                                (unsigned long long)comm->id);
                    return RCOLL_ERR_NO_MEMORY;
                }
                comm->shm_free = shm_free;
            }
            sh = op->sh = comm->shm;
            op->k = ++sh->next_op;
            op->stage = ST_SETUP;
            break;
        case ST_SETUP:
            if (sh->state == RCOLL__SHM_READY) {
                op->stage = ST_ORDER;
                break;
            }
            if (sh->state == RCOLL__SHM_FAILED) {
                rcoll_error("%s algorithm shm: the shared-memory segment of communicator 0x%llx "
                            "could not be set up (see the first error)",
                            rcoll_coll_name(task->args.type), (unsigned long long)comm->id);
                return RCOLL_ERR_NOT_SUPPORTED;
            }
            if (op->k != 1) {
                return RCOLL_INPROGRESS;     /* the first collective sets it up */
            }
            if (sh->me == 0) {
                segment_create(comm, sh);    /* on failure, the others get an empty name */
                op->stage = ST_SEND;
            } else {
                st = rcoll_task_recv(task, 0, STEP_SETUP, sh->name, sizeof(sh->name));
                if (st != RCOLL_OK) {
                    return setup_fail(sh, st);
                }
                op->stage = ST_RECV;
            }
            break;
        case ST_SEND:
            st = setup_send(task, sh);
            if (st == RCOLL_INPROGRESS) {
                return st;
            }
            if (st != RCOLL_OK) {
                return setup_fail(sh, st);
            }
            if (sh->base == NULL) {
                return setup_fail(sh, RCOLL_ERR_NO_MEMORY);
            }
            sh->state = RCOLL__SHM_READY;
            op->stage = ST_ORDER;
            break;
        case ST_RECV:
            st = rcoll_task_test(task);
            if (st == RCOLL_INPROGRESS) {
                return st;
            }
            if (st == RCOLL_OK) {
                st = segment_attach(comm, sh);
            }
            if (st != RCOLL_OK) {
                return setup_fail(sh, st);
            }
            sh->state = RCOLL__SHM_READY;
            op->stage = ST_ORDER;
            break;
        case ST_ORDER:
            if (sh->completed + 1 != op->k) {
                task->wait_peer = -1;
                return RCOLL_INPROGRESS;
            }
            op->stage = ST_ENTERED;
            return RCOLL_OK;
        case ST_ENTERED:
            return RCOLL_OK;
        default:
            rcoll_error("shm: bad stage %d", op->stage);
            return RCOLL_ERR_INTERNAL;
        }
    }
}

void rcoll__shm_leave(rcoll_task_t *task, rcoll__shm_op_t *op)
{
    rcoll__shm_t *sh = op->sh;
    (void)task;
    sh->completed = op->k;
    rcoll__shm_publish(&rcoll__shm_ctl(sh, sh->me)->done, &sh->fin[sh->me], op->k);
}

int rcoll__shm_slots_free(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t k)
{
    if (k <= 2) {
        return 1;
    }
    for (int q = 0; q < sh->p; q++) {
        if (!rcoll__shm_flag_ge(&rcoll__shm_ctl(sh, q)->done, &sh->fin[q], k - 2)) {
            rcoll__shm_waiting(task, q, RCOLL__SHM_STEP_SLOT);
            return 0;
        }
    }
    return 1;
}

void rcoll__shm_pipe_finish(rcoll__shm_t *sh, uint64_t g)
{
    rcoll__shm_ctl_t *c = rcoll__shm_ctl(sh, sh->me);
    int me = sh->me;
    if (sh->in_ready[me] < g) {
        rcoll__shm_publish(&c->in_ready, &sh->in_ready[me], g);
    }
    if (sh->res_ready[me] < g) {
        rcoll__shm_publish(&c->res_ready, &sh->res_ready[me], g);
    }
    if (sh->out_done[me] < g) {
        rcoll__shm_publish(&c->out_done, &sh->out_done[me], g);
    }
}

/* Nominal figures for this path on one node: a flag round trip between
 * cores, a little more per rank scanned, and memcpy-class bandwidth. */
#define SHM_ALPHA      0.3e-6
#define SHM_ALPHA_RANK 0.05e-6
#define SHM_BETA       (1.0 / 20.0e9)

double rcoll__shm_cost(const rcoll_model_t *m, int nranks, int ppn, double bytes_moved)
{
    if (!m->shm || ppn != nranks) {
        return INFINITY;
    }
    return SHM_ALPHA + SHM_ALPHA_RANK * nranks + bytes_moved * SHM_BETA;
}
