/*
 * whereis_table.c - the node's where-is-everyone table: made, found and
 * mapped at init without ever having a name (whereis.h, docs/reliability.md).
 *
 * Before the address exchange every rank (of a job of more than one) makes
 * a candidate table: a memfd (no name in /dev/shm or anywhere; sealed
 * against shrinking, so a mapping can never lose its pages), holding only
 * a header with a random nonce; its blob carries its pid, the descriptor's
 * number and the nonce (addr_where_t).  After the exchange the ranks of a
 * node agree, from the same blobs, on the lowest rank of the node that
 * offered one: its candidate is the node's table.  That rank maps its own
 * and keeps the descriptor open until its finalize; the others open it
 * through /proc/<pid>/fd/<fd> (as the shm segments are attached,
 * collectives/shm/shm_segment.c: the ranks of a node share a pid namespace,
 * as under rcollrun --nodes, and a same-user process may open another's
 * descriptors there), check its header's nonce against the blob's, grow it
 * to the node's size if nobody has yet, map it, and close their own
 * candidates.  The table lives as long as a rank of the node has it open
 * or mapped: a kill at any moment, inside rcoll_init or after, leaves
 * nothing behind.  Where memfd_create is refused (an old kernel, seccomp,
 * vm.memfd_noexec=2) the candidate is a POSIX object unlinked right after
 * its creation: only a kill between those two system calls could leave it.
 *
 * The blob is authenticated by the bootstrap but still input from another
 * process: the pid and descriptor must be in range, only a regular file is
 * opened, and one whose header does not carry the blob's magic and nonce
 * (another namespace's pid, a reused descriptor) is refused.  A rank that
 * cannot use the owner's table (refused, another user, ptrace restrictions,
 * the owner already dead) warns once and runs without it: its report knows
 * only itself on this node, and this node's ranks do not see it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "whereis.h"

#define WHERE_MAGIC 0x72636f6c6c776865ULL    /* "rcollwhe" */

/* The table's header; the entries (rcoll_where_rank_t) follow it. */
typedef struct {
    uint64_t magic;
    uint64_t nonce;            /* the owner's, also in its blob */
    uint64_t pad[6];
} where_hdr_t;

_Static_assert(sizeof(where_hdr_t) == 64, "the header keeps the entries 64-byte aligned");

static uint64_t random_nonce(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x)) {
        x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(rcoll_time_now() * 1e9);
    }
    return x != 0 ? x : 1;
}

/* A shared-memory file without a name; -1 if none can be had. */
static int anonymous_fd(uint64_t nonce)
{
    int fd = memfd_create("rcoll-where", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd >= 0) {
        (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);
        return fd;
    }
    rcoll_debug("whereis: memfd_create: %s; using a POSIX object unlinked at once", strerror(errno));
    char name[64];
    snprintf(name, sizeof(name), "/rcoll-where-%ld-%016" PRIx64, (long)getpid(), nonce);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        shm_unlink(name);
    } else {
        rcoll_debug("whereis: shm_open %s: %s", name, strerror(errno));
    }
    return fd;
}

static struct rcoll_whereis *whereis_new(rcoll_context_t *ctx)
{
    if (ctx->whereis == NULL && (ctx->whereis = calloc(1, sizeof(*ctx->whereis))) != NULL) {
        ctx->whereis->fd = -1;
        ctx->whereis->owner = -1;
    }
    return ctx->whereis;
}

void rcoll_whereis_prepare(rcoll_context_t *ctx, addr_where_t *pub)
{
    memset(pub, 0, sizeof(*pub));
    struct rcoll_whereis *w = whereis_new(ctx);
    if (w == NULL || ctx->size < 2 || w->fd >= 0) {
        return;
    }
    uint64_t nonce = random_nonce();
    int fd = anonymous_fd(nonce);
    if (fd < 0) {
        return;
    }
    where_hdr_t h = { .magic = WHERE_MAGIC, .nonce = nonce };
    if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
        rcoll_debug("whereis: writing the candidate table's header: %s", strerror(errno));
        close(fd);
        return;
    }
    w->fd = fd;
    w->fd_nonce = nonce;
    *pub = (addr_where_t){ .pid = (int64_t)getpid(), .fd = fd, .nonce = nonce };
}

void rcoll_whereis_offer(rcoll_context_t *ctx, int r, const addr_where_t *pub)
{
    struct rcoll_whereis *w = whereis_new(ctx);
    if (w != NULL) {
        w->owner = r;
        w->offer = *pub;
    }
}

/* Open the owner's candidate through /proc: the descriptor, or -1 with why. */
static int open_offer(const addr_where_t *o, char *path, size_t path_len, char *why, size_t len)
{
    if (o->pid <= 0 || o->pid > INT32_MAX || o->fd < 0 || o->nonce == 0) {
        snprintf(why, len, "its address names no usable table (pid %" PRId64 ", descriptor %d)",
                 o->pid, (int)o->fd);
        return -1;
    }
    snprintf(path, path_len, "/proc/%" PRId64 "/fd/%d", o->pid, (int)o->fd);
    /* only a regular file is ever opened (a device or FIFO could act on it) */
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "%s: not a regular file", path);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
    }
    return fd;
}

/* Check that fd is the table with this nonce, size it and map it; 0, or -1 with why. */
static int map_table(struct rcoll_whereis *w, int fd, uint64_t nonce, char *why, size_t len)
{
    struct stat st;
    where_hdr_t h;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(h) ||
        pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != WHERE_MAGIC ||
        h.nonce != nonce) {
        snprintf(why, len, "not the table its address names (another pid namespace, or its "
                 "descriptor reused?)");
        return -1;
    }
    /* Every rank grows it to the same size (the node's ranks count alike);
     * the seal keeps anyone from shrinking it under a mapping. */
    if ((size_t)st.st_size < w->len && ftruncate(fd, (off_t)w->len) != 0 &&
        (fstat(fd, &st) != 0 || (size_t)st.st_size < w->len)) {
        snprintf(why, len, "sizing it to %zu bytes: %s", w->len, strerror(errno));
        return -1;
    }
    void *base = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(why, len, "mapping %zu bytes: %s", w->len, strerror(errno));
        return -1;
    }
    w->base = base;
    w->ranks = (rcoll_where_rank_t *)(void *)((char *)base + sizeof(where_hdr_t));
    return 0;
}

/* Map the owner's table; 0, or -1 after the one warning. */
static int attach(rcoll_context_t *ctx, struct rcoll_whereis *w)
{
    char why[200] = "", path[64];
    snprintf(path, sizeof(path), "%s", w->owner == ctx->rank ? "its own descriptor" : "its address");
    w->len = sizeof(where_hdr_t) + (size_t)ctx->local_size * sizeof(rcoll_where_rank_t);
    int rc;
    if (w->owner == ctx->rank) {
        rc = map_table(w, w->fd, w->fd_nonce, why, sizeof(why));
    } else {
        int fd = open_offer(&w->offer, path, sizeof(path), why, sizeof(why));
        rc = fd < 0 ? -1 : map_table(w, fd, w->offer.nonce, why, sizeof(why));
        if (fd >= 0) {
            close(fd);
        }
    }
    if (rc != 0) {
        rcoll_warn("where is everyone: cannot use this node's table (world rank %d's, through %s): "
                   "%s; this rank's timeout reports will not know the state of its node's other "
                   "ranks, nor they its", w->owner, path, why);
    }
    return rc;
}

void rcoll_whereis_init(rcoll_context_t *ctx)
{
    struct rcoll_whereis *w = whereis_new(ctx);
    ctx->where_me = calloc(1, sizeof(rcoll_where_rank_t));   /* until the table is there */
    if (w != NULL && w->owner < 0 && ctx->size > 1 && ctx->local_size > 1) {
        rcoll_warn("where is everyone: no rank of this node could make a table; timeout reports "
                   "will not know the state of this node's other ranks");
    }
    if (w != NULL && ctx->where_me != NULL && ctx->size > 1 && ctx->local_size > 1 &&
        w->owner >= 0 && (w->local_of = malloc(sizeof(int) * (size_t)ctx->size)) != NULL &&
        attach(ctx, w) == 0) {
        int me = -1, n = 0;
        for (int r = 0; r < ctx->size; r++) {
            int same = ctx->node_of[r] == ctx->node_of[ctx->rank];
            w->local_of[r] = same ? n++ : -1;
            me = r == ctx->rank ? w->local_of[r] : me;
        }
        free(ctx->where_me);
        ctx->where_me = &w->ranks[me];
        atomic_store(&ctx->where_me->world_rank, ctx->rank);
        atomic_store(&ctx->where_me->pid, (int64_t)getpid());
    } else if (w != NULL) {
        free(w->local_of);
        w->local_of = NULL;
    }
    /* Only the owner's candidate lives on, for ranks still to open it. */
    if (w != NULL && w->fd >= 0 && (w->owner != ctx->rank || w->base == NULL)) {
        close(w->fd);
        w->fd = -1;
    }
}

void rcoll_whereis_fini(rcoll_context_t *ctx)
{
    struct rcoll_whereis *w = ctx->whereis;
    if (w != NULL && w->base != NULL) {
        atomic_store(&ctx->where_me->pid, 0);
        munmap(w->base, w->len);
    } else {
        free(ctx->where_me);
    }
    ctx->where_me = NULL;
    if (w != NULL) {
        if (w->fd >= 0) {
            close(w->fd);
        }
        free(w->local_of);
        free(w);
    }
    ctx->whereis = NULL;
}
