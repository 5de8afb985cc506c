/*
 * loop_int.h - the in-memory backend's objects (see README.md).
 *
 * An instance (struct rcoll_tl) is driven by one thread.  What other
 * instances touch lives in its port: the inbox they post to, the
 * registrations they put into, and the dead flag; all of it under the
 * port's mutex.  A port is reference counted (its owner plus every instance
 * connected to it), so a peer that closed still has a port that says
 * "dead" instead of freed memory.
 */
#ifndef RCOLL_LOOP_INT_H
#define RCOLL_LOOP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include "transport.h"

#define LOOP_MAGIC    0x6c6f6f7072636f6cull   /* "looprcol" */
#define LOOP_MAX_MSG  (1u << 20)

enum { LOOP_MSG_DATA, LOOP_MSG_DEAD };

typedef struct loop_msg {
    struct loop_msg *next;
    int              src;        /* world rank of the sender */
    int              kind;       /* LOOP_MSG_* */
    size_t           len;
    uint8_t          data[];
} loop_msg_t;

struct rcoll_tl_mr {
    struct rcoll_tl_mr *next;    /* in the owner port's list of live registrations */
    uint64_t            id;      /* never reused within a port */
    uint8_t            *addr;
    size_t              len;
    unsigned            access;  /* RCOLL_TL_ACCESS_* */
};

typedef struct loop_port {
    uint64_t            magic;   /* LOOP_MAGIC while the port exists */
    uint64_t            nonce;   /* tells this port from a later one at the same address */
    int                 rank, size;
    atomic_int          refs;
    pthread_mutex_t     lock;
    /* under lock: */
    int                 dead;
    loop_msg_t         *head, **tail;
    struct rcoll_tl_mr *mrs;
    uint64_t            next_mr_id;
} loop_port_t;

/* The published address: this process's pid guards against a blob from
 * another process, magic and nonce against a stale or foreign one. */
typedef struct {
    uint64_t magic;
    uint64_t pid;
    uint64_t port;
    uint64_t nonce;
    int32_t  rank, size;
} loop_addr_t;

/* The packed remote key. */
typedef struct {
    uint64_t magic;
    uint64_t port;
    uint64_t nonce;
    uint64_t id;
    uint64_t addr;
    uint64_t len;
} loop_rkey_t;

/* A put or get that has finished, waiting for progress() to report it. */
typedef struct loop_done {
    struct loop_done      *next;
    rcoll_tl_completion_t *comp;
    rcoll_status_t         status;
} loop_done_t;

enum { LOOP_PEER_OK, LOOP_PEER_FAILED, LOOP_PEER_REPORTED };

struct rcoll_tl {
    loop_port_t          *port;
    loop_port_t         **peers;      /* size entries; NULL until connect() */
    uint8_t              *state;      /* LOOP_PEER_* per world rank */
    int                   to_report;  /* some state[] is LOOP_PEER_FAILED */
    loop_done_t          *done_head, **done_tail;
    rcoll_tl_callbacks_t  cb;
    loop_addr_t           addr;
    unsigned              caps_off;   /* capabilities withheld (tests: no PUT runs the pull protocol) */
};

/* loop_port.c */
loop_port_t   *rcoll__loop_port_create(int rank, int size);
void           rcoll__loop_port_ref(loop_port_t *port);
void           rcoll__loop_port_unref(loop_port_t *port);
/* Append msg to port's inbox; RCOLL_ERR_PEER_FAILED (msg not taken) if the port is dead. */
rcoll_status_t rcoll__loop_port_post(loop_port_t *port, loop_msg_t *msg);
/* Take the whole inbox, oldest first. */
loop_msg_t    *rcoll__loop_port_take(loop_port_t *port);
/* Mark dead: later posts and puts fail; the inbox and registrations are dropped. */
void           rcoll__loop_port_kill(loop_port_t *port);

/* loop_tl.c: a peer turned out dead; report it from the next progress(). */
void           rcoll__loop_peer_failed(struct rcoll_tl *tl, int peer);
/* loop_mr.c: the memory ops, and freeing the registrations a closed port leaves behind. */
rcoll_status_t rcoll__loop_mem_reg(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                                   rcoll_tl_mr_t **mr);
rcoll_status_t rcoll__loop_pack_rkey(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len);
void           rcoll__loop_mem_dereg(rcoll_tl_t *tl, rcoll_tl_mr_t *mr);
rcoll_status_t rcoll__loop_put(rcoll_tl_t *tl, int peer, const void *laddr, size_t len,
                               uint64_t raddr, const void *rkey, size_t rkey_len,
                               rcoll_tl_completion_t *comp);
rcoll_status_t rcoll__loop_get(rcoll_tl_t *tl, int peer, void *laddr, size_t len,
                               uint64_t raddr, const void *rkey, size_t rkey_len,
                               rcoll_tl_completion_t *comp);
void           rcoll__loop_abort_peer(rcoll_tl_t *tl, int peer, const char *why);
void           rcoll__loop_mr_free_all(struct rcoll_tl_mr *list);

#endif
