/*
 * shm.h - the intra-node shared-memory algorithms' common parts: the
 * per-communicator segment, its layout, the order in which collectives use
 * it, and the flags ranks wait on.  See docs/shm.md.
 *
 * Every collective run by a shm algorithm on a communicator gets an
 * operation number k = 1, 2, ... (the same on every rank: all ranks call
 * the collectives of a communicator in the same order and the selector's
 * choice is the same everywhere).  Operations on one communicator use the
 * segment one after the other on each rank.
 *
 * Layout: a header page, then one region per rank:
 *   8 flag lines  done (last k finished), in_ready, res_ready, out_done
 *                 (last pipeline chunk id through each stage), cma_read
 *                 (last k whose single-copy reads are over: shm_cma.c),
 *                 slot_fill, bc_read, bc_call (shm_reduction.c, shm_adapt.h)
 *   ident line    pid and mapping address, for single-copy reads
 *   2 slots       small collectives, by k parity: a line starting with the
 *                 k whose data follows at byte 8 if it fits the rest of the
 *                 line (tiny payloads share the flag's cache line), else
 *                 at byte 64 (line-aligned copies)
 *   nbuf inputs   pipeline chunks (chunk bytes each)
 *   nbuf results  one slice each (slice bytes)
 *   (room)        to at least pipe_min bytes (rcoll__shm_layout) from the
 *                 inputs on: a bcast's
 *                 ring runs over all of it (rcoll__shm_bc_ring_bytes)
 * Chunk ids are global to the communicator and only grow, so every flag
 * test is "value >= id" and never confuses two collectives.
 */
#ifndef RCOLL_SHM_H
#define RCOLL_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "coll_comm.h"
#include "fault_hook.h"
#include "shm_copy.h"

#define RCOLL__SHM_LINE      64
#define RCOLL__SHM_NBUF      4            /* pipeline depth (chunk buffers) */
#define RCOLL__SHM_SMALL     (64 * 1024)  /* slot size: the largest flat collective */
#define RCOLL__SHM_SMALL_PAIR (256 * 1024) /* the same for 2 ranks (measured, docs/shm.md) */
#define RCOLL__SHM_FLAT_TOTAL (128 * 1024) /* more ranks: flat allreduce while p * bytes <= this */
#define RCOLL__SHM_SLICE     (128 * 1024) /* default pipeline slice per rank */
#define RCOLL__SHM_CHUNK_MAX (512 * 1024) /* slices shrink to keep a chunk <= this */
#define RCOLL__SHM_BC_PIECE  (64 * 1024) /* medium bcast pipeline chunk (shm_bcast.c) */
/* A 2-rank allgather of blocks from RCOLL__SHM_AG_ROTATE_MIN up to one
 * chunk moves each block through a piece of its own size that rotates over
 * the whole pipeline area (shm_allgather.c): the slot it used before was
 * rewritten every other call over lines the other rank still held.  8 KiB:
 * the two even at 4 KiB, the slots 1.5-1.7x faster at 1-2 KiB (Zen 4 VM,
 * docs/shm.md "The allgather's rotating pieces"). */
#define RCOLL__SHM_AG_ROTATE_MIN (8 * 1024)
/* The same for a 2-rank reduce from RCOLL__SHM_RED_ROTATE_MIN bytes up to
 * one chunk, in pieces of RCOLL__SHM_RED_ROTATE_PIECE (shm_reduction.c;
 * Xeon VM, docs/shm.md "The 2-rank reduce's rotating pieces"). */
#define RCOLL__SHM_RED_ROTATE_MIN   (8 * 1024)
#define RCOLL__SHM_RED_ROTATE_PIECE (32 * 1024)
#define RCOLL__SHM_NAME_MAX  64
#define RCOLL__SHM_CMA_PIECE (64 * 1024) /* a single-copy reduce's piece (shm_reduce_cma.c) */
#define RCOLL__SHM_CMA_SHARE_MIN (16 * 1024) /* the least root's share of a single-copy bcast (shm_bcast.c) */
/* A flat reduce from RCOLL__SHM_RED_PIECED_MIN bytes fills its slots in
 * pieces of RCOLL__SHM_RED_PIECE (shm_reduction.c).  8 KiB: 2-rank A/B on
 * the Xeon VM (docs/shm.md) against 1, 4, 16 and 64 KiB; smaller pieces
 * pay a flag line per piece, larger ones leave less of the copy to overlap. */
#define RCOLL__SHM_RED_PIECED_MIN (4 * 1024)
#define RCOLL__SHM_RED_PIECE      (8 * 1024)
/* ...and in at most RCOLL__SHM_RED_PIECES pieces: every piece raises a
 * flag line the root is polling, which costs the writer a line round trip
 * (~0.45 us in the AMD VM's slow phase), so 32 pieces of 8 KiB put 14 us
 * into a 256 KiB reduce.  At most 8 (pieces of n / 8 from 64 KiB on): the
 * 2-rank reduce of 128 KiB 8.5 -> 6.8 us, 256 KiB 16.6 -> 11.8 (docs/shm.md). */
#define RCOLL__SHM_RED_PIECES     8
/* The memory bound (docs/shm.md, "Memory"): the slots of all ranks together
 * take at most RCOLL__SHM_SLOT_BUDGET beyond 2 ranks (slots shrink with the
 * rank count, down to RCOLL__SHM_SLOT_MIN), the pipeline input buffers of all
 * ranks at most RCOLL__SHM_PIPE_BUDGET (slices shrink with the square of the
 * rank count, down to one line), so a communicator of 256 ranks on a node
 * maps < 64 MiB.  Up to 8 ranks neither budget binds (the geometry measured
 * in docs/shm.md). */
#define RCOLL__SHM_SLOT_BUDGET (8u << 20)
#define RCOLL__SHM_SLOT_MIN    (4 * 1024)
#define RCOLL__SHM_PIPE_BUDGET (48u << 20)
/* A bcast's ring runs over a rank's whole pipeline area, which is at least
 * four times this core's L2 cache (sysconf; 1 MiB where unknown) and at
 * most RCOLL__SHM_BC_RING_MAX, and so that the rings of all ranks together
 * stay within RCOLL__SHM_BC_RING_BUDGET (rcoll__shm_bc_ring_bytes): the root
 * then rewrites a piece only after the reader's L2 has let its lines go.
 * With a ring of one L2 (2 ranks' 4 x 256 KiB input buffers, 1 MiB L2) the
 * root's copy-in wrote over lines the reader still held: a 2-rank two-copy
 * bcast of 1 MiB took 52-66 us with plain copies out, 118-148 streaming
 * them, against 40-42 with 4 MiB (2 MiB: 45-49; 8 MiB: 42-45; docs/shm.md,
 * "The bcast's ring"). */
#define RCOLL__SHM_BC_RING_MAX    (8u << 20)
#define RCOLL__SHM_BC_RING_BUDGET (24u << 20)

/* Diagnostic steps (task->wait_step) of the shm algorithms. */
#define RCOLL__SHM_STEP_SLOT    1u   /* waiting for a peer to finish reading my slot */
#define RCOLL__SHM_STEP_ARRIVE  2u   /* waiting for a peer's contribution */
#define RCOLL__SHM_STEP_CMA     3u   /* waiting for a peer to finish reading my buffer */
#define RCOLL__SHM_STEP_ADAPT   4u   /* waiting for rank 0 to fix this collective's path */
#define RCOLL__SHM_STEP_CHUNK   16u  /* + chunk index: a pipeline stage */

typedef struct {
    _Atomic uint64_t v;
    char             pad[RCOLL__SHM_LINE - sizeof(uint64_t)];
} rcoll__shm_flag_t;

/* Single-copy reads (shm_cma.c): who this rank is, for process_vm_readv,
 * written once at set-up: its pid and where it mapped the segment; rank
 * 0's also the sizes that go single copy (every rank takes rank 0's, so
 * they agree even where settings differ). */
typedef struct {
    int64_t  pid;
    uint64_t base;
    uint64_t cma_lo[3], cma_hi[3];  /* bcast, allgather, reduce; none: lo > hi */
} rcoll__shm_ident_t;
_Static_assert(sizeof(rcoll__shm_ident_t) == RCOLL__SHM_LINE, "one cache line");

typedef struct {
    rcoll__shm_flag_t done, in_ready, res_ready, out_done;
    rcoll__shm_flag_t cma_read;   /* last k whose single-copy reads are over here */
    rcoll__shm_flag_t slot_fill;  /* a flat reduce's slot filling up: k << 20 | pieces in it
                                   * (rcoll__shm_slot_write_pieces); only grows */
    rcoll__shm_flag_t bc_read;    /* a leaf's timed small-bcast copy-out: k << 24 | ns
                                   * (shm_adapt.h, bstore) */
    rcoll__shm_flag_t bc_call;    /* this rank's last bcast whose path was chosen at run
                                   * time: k << 24 | ns (shm_adapt.h, bpath) */
    rcoll__shm_ident_t ident;
} rcoll__shm_ctl_t;

typedef enum {
    RCOLL__SHM_SETUP = 0,
    RCOLL__SHM_READY,
    RCOLL__SHM_UNAVAILABLE,   /* all ranks agreed: no segment (sh->why); shm collectives fail */
    RCOLL__SHM_FAILED         /* set-up messages failed */
} rcoll__shm_state_t;

/* The adaptive allgather's state (shm_adapt.h). */
#define RCOLL__SHM_ADAPT_NENT 4      /* entries {eff, bits} in the ring */
#define RCOLL__SHM_ADAPT_NB   12     /* size classes: [2^(13+b), 2^(14+b)), the last open */
typedef struct {
    size_t   min;            /* blocks from min bytes adapt (rank 0's offer); SIZE_MAX: none */
    uint64_t horizon;        /* the last horizon read (it only grows) */
    unsigned ahead;          /* rank 0: how far it fixes the paths ahead of its k */
    /* rank 0 only: what it published, and its timings */
    uint64_t horizon_pub, nent, eff[RCOLL__SHM_ADAPT_NENT];
    uint32_t bits, want;     /* bit b: class b single copy; bit NB + b: it tries rarely */
    int      started;        /* want was set from the fixed sizes (the first entry to publish) */
    double   est[RCOLL__SHM_ADAPT_NB][2];   /* ns per call, [class][single copy] */
    uint32_t nsamp[RCOLL__SHM_ADAPT_NB][2];
    uint8_t  last[RCOLL__SHM_ADAPT_NB];     /* path of the class's previous call + 1 (0: none) */
    uint32_t run[RCOLL__SHM_ADAPT_NB];      /* timed calls of the current try burst */
    uint64_t changes;        /* entries published */
    uint64_t chaos;          /* tests: nonzero (a random state): publish random choices */
    uint64_t salt;           /* added to k / BURST before the try hash: the bcast's path
                              * tries must not fall on its root's store tries */
} rcoll__shm_adapt_t;

/* A timed call of this rank's awaiting the other ranks' times of the same
 * call (shm_adapt.h, rcoll__shm_times_collect). */
typedef struct {
    uint64_t k;              /* the call (0: none) */
    uint64_t ns;             /* this rank's own time */
    size_t   n;              /* its size */
    int      path, try;      /* the way it took (a store kind, a path); part of a try */
    int      asked;          /* times the others were asked for it (at most 2) */
} rcoll__shm_pending_t;

/* The bcast's run-time path choice (shm_adapt.h, "bpath"): a chooser like
 * the allgather's, and rank 0's call waiting for the others' times. */
typedef struct {
    rcoll__shm_adapt_t   ad;
    rcoll__shm_pending_t pend;
} rcoll__shm_bpath_t;

/* The flat allreduce's copy into its slot and the two-copy allgather's into
 * the segment: plain or streaming stores, rank 0's run-time choice per size
 * class (shm_adapt.h, "store", "agstore", "rstore" and "rsstore"). */
typedef struct {
    size_t   min;            /* vectors from min bytes choose; SIZE_MAX: none */
    uint32_t want;           /* rank 0: bit b: class b streams */
    double   est[RCOLL__SHM_ADAPT_NB][2];   /* ns per call, [class][streaming] */
    uint32_t nsamp[RCOLL__SHM_ADAPT_NB][2];
    uint64_t changes;        /* choices changed (rank 0) */
    uint64_t jumps;          /* of those, on a jump of the kind in use (rank 0) */
    uint64_t chaos;          /* tests: nonzero (a random state): choose at random */
    int      published;      /* rank 0: its choice is in the header page's store word */
    uint32_t seen;           /* rank 0: bit b: class b's first timed call was dropped */
    uint8_t  jump[RCOLL__SHM_ADAPT_NB];   /* rank 0: timed calls in a row of the kind in
                                           * use at 2x its estimate or more */
} rcoll__shm_store_t;

/* The small bcast root's copy into its slot: plain or streaming stores,
 * each root's run-time choice per size class (shm_adapt.h, "bstore"). */
typedef struct {
    size_t   min;            /* bcasts from min bytes choose; SIZE_MAX: none */
    uint32_t want;           /* as root: bit b: class b streams; bit NB + b: tried rarely */
    double   est[RCOLL__SHM_ADAPT_NB][2];   /* ns per call, [class][streaming] */
    uint32_t nsamp[RCOLL__SHM_ADAPT_NB][2];
    uint8_t  last[RCOLL__SHM_ADAPT_NB];     /* kind of the class's previous timed call + 1 */
    uint32_t run[RCOLL__SHM_ADAPT_NB];      /* timed calls of the current try */
    rcoll__shm_pending_t pend;   /* the timed root call awaiting its leaves' times (its
                                  * own: the copy into the slot; path: the store kind) */
    uint64_t changes;        /* choices changed */
    uint64_t chaos;          /* tests: nonzero (a random state): choose at random */
} rcoll__shm_bstore_t;

/* A single-copy reduce root's slice of the vector (shm_reduce_cma.c): in
 * RCOLL__SHM_SPLIT_ONE parts, per size class [2^b, 2^(b+1)) bytes, what
 * this rank uses when it is the root.  Every other rank reads it from the
 * root's descriptor, so they always agree. */
#define RCOLL__SHM_SPLIT_ONE   1024
#define RCOLL__SHM_SPLIT_STEP  8      /* the balance moves by this per call */
#define RCOLL__SHM_SPLIT_NB    48
typedef struct {
    int      mode;           /* 0 even slices (RCOLL_SHM_ADAPT=off), 1 balanced at run time,
                              * 2 at random (tests) */
    uint64_t chaos;          /* mode 2: the random state */
    uint64_t moves;          /* balancing steps taken */
    uint16_t root[RCOLL__SHM_SPLIT_NB];   /* 0: not set yet (even) */
} rcoll__shm_split_t;

/* Per-communicator private state (rcoll_coll_comm(comm)->shm). */
typedef struct rcoll__shm {
    rcoll__shm_state_t state;
    int       p, me;
    uint64_t  next_op;       /* k of the last collective posted */
    uint64_t  completed;     /* every collective up to k = completed is over here (finished
                              * or abandoned): the turn is completed + 1's */
    uint64_t  over;          /* bit i: collective completed + 2 + i is over already (ended
                              * out of turn: abandoned while queued; shm_enter.c) */
    uint64_t  chunk_next;    /* id of the next pipeline chunk */
    uint64_t  bar_last;      /* k of this rank's last barrier here (shm_barrier.c) */
    char     *base;
    size_t    size;
    size_t    rank_stride, slot_stride, small_max, slice, chunk;
    int       nbuf;
    size_t    bc_piece;   /* a medium bcast's chunk (RCOLL__SHM_BC_PIECE) */
    size_t    ag_rotate_min; /* 2-rank allgather blocks rotate from this (RCOLL__SHM_AG_ROTATE_MIN) */
    int       demote;        /* slot lines handed to L3 (rcoll__shm_demote): a core per rank */
    size_t    red_rotate_min;   /* 2-rank reduce vectors rotate from this (RCOLL__SHM_RED_ROTATE_MIN) */
    size_t    red_rotate_piece; /* in pieces of this (RCOLL__SHM_RED_ROTATE_PIECE; whole lines) */
    size_t    stream_min; /* receive buffers from this size on are written with
                           * streaming stores (shm_copy.h, RCOLL_SHM_STREAM_MIN) */
    size_t    over_stream_min; /* the node's ranks outnumber its CPUs (no store choice
                                * there): a bcast root's copy into the segment and the
                                * flat allreduce's copy-in stream from this size;
                                * SIZE_MAX: plain (rcoll__shm_store_offer) */
    size_t    pair_flat_max; /* 2 ranks: allreduces up to this take the flat path
                              * (RCOLL_SHM_PAIR_FLAT_MAX; rank 0's, in the header) */
    /* How the pipeline buffers are cut up now: the pipelined collectives
     * use nbuf input pieces of one chunk each and nbuf result buffers of one
     * slice, a 2-rank allreduce nbuf / 2 of twice that (pair pieces), a
     * medium bcast ring pieces of bc_piece over the inputs and results
     * (rcoll__shm_pipe_start); res_stride: one result buffer's bytes in
     * this cut; fence: every chunk id up to it must be through everywhere
     * before a piece is rewritten (set when the cut changes: a new piece
     * may overlap any earlier one). */
    size_t    piece, res_stride;
    uint64_t  ring, fence;
    int       over_all;   /* the cut runs over the whole pipeline area (a bcast's) */
    int       setup_next;    /* set-up: peers whose message is posted */
    int       fd;            /* rank 0 during set-up: the (unlinked) segment's fd, else -1 */
    char      name[RCOLL__SHM_NAME_MAX];   /* also the set-up message: "/proc/<pid>/fd/<fd> <token>" */
    uint8_t   my_ok, verdict;               /* set-up: attached here; all attached */
    uint8_t  *peer_ok;                      /* rank 0: each rank's my_ok */
    uint8_t  *pipe_faulted;                 /* rcoll__shm_fault_in_pipe done, per rank */
    char      why[192];                     /* set-up failed: why, as this rank knows it */
    rcoll_status_t why_status;
    /* last values read of each rank's flags (they only grow) */
    uint64_t *fin, *in_ready, *res_ready, *out_done;
    /* Single-copy reads (shm_cma.c): which sizes read the peers' buffers
     * with process_vm_readv (shm_cma.h; all SIZE_MAX: none; agreed at
     * set-up): bcast from cma_bc_min up to cma_bc_max bytes, allgather
     * blocks from cma_ag_min to cma_ag_max, reduce vectors from cma_red_min
     * to cma_red_max (RCOLL_SHM_CMA=auto: the tune file's `shm` lines, else
     * the defaults of selector_tune.c); pid: each
     * rank's, copied out of the segment at set-up. */
    size_t    cma_bc_min, cma_bc_max, cma_ag_min, cma_ag_max, cma_red_min, cma_red_max;
    int64_t  *pid;
    size_t    cma_share_min;          /* single-copy bcast: the root writes a share from this */
    /* flat reduce from red_pieced_min bytes: slots filled in pieces of
     * red_piece bytes, a line multiple (shm_reduction.c; RCOLL__SHM_RED_*) */
    size_t    red_pieced_min, red_piece;
    char     *cma_scratch;            /* single-copy reduce: 2 pieces (shm_reduce_cma.c) */
    rcoll__shm_adapt_t adapt;         /* the allgather's run-time path choice (shm_adapt.h) */
    rcoll__shm_bpath_t bpath;         /* the bcast's run-time path choice (shm_adapt.h) */
    rcoll__shm_adapt_t rpath;         /* the reduce's run-time path choice (shm_adapt.h) */
    rcoll__shm_adapt_t rspath;        /* the reduce_scatter's (shm_adapt.h) */
    rcoll__shm_store_t store;         /* the flat allreduce's store choice (shm_adapt.h) */
    rcoll__shm_store_t agstore;       /* the allgather's stores into the segment (shm_adapt.h) */
    rcoll__shm_store_t rstore;        /* the reduce's stores into the segment (shm_adapt.h) */
    rcoll__shm_store_t rsstore;       /* the reduce_scatter's (shm_adapt.h) */
    rcoll__shm_bstore_t bstore;       /* the small bcast root's store choice (shm_adapt.h) */
    rcoll__shm_split_t split;         /* a single-copy reduce root's slice (shm_reduce_cma.c) */
} rcoll__shm_t;

/* ---- single-copy reads (shm_cma.c) ---- */

/* More ranks on the node than online CPUs (the same on every rank). */
int rcoll__shm_oversubscribed(const rcoll__shm_t *sh);

/* Set-up: this rank's ident line (pid, mapping), before it reports in. */
void rcoll__shm_cma_ident(rcoll_comm_t *comm, rcoll__shm_t *sh);
/* Set-up: 1 if this rank's settings allow single-copy reads and it can read
 * rank r's memory (process_vm_readv of r's ident line through r's
 * mapping); else 0, with why (logged at debug). */
int rcoll__shm_cma_probe(rcoll_comm_t *comm, rcoll__shm_t *sh, int r);
/* Set-up over with a segment: ok is the agreed verdict on single-copy
 * reads; sets the sizes (sh->cma_*) and copies the pids out of the segment. */
void rcoll__shm_cma_ready(rcoll_comm_t *comm, rcoll__shm_t *sh, int ok);

/* ---- the segment (shm_segment.c) ---- */

/* Rank 0: create, reserve and map a fresh segment, unlinked at once (the
 * others open it through rank 0's open descriptor, sh->name); on failure
 * sh->name is "", sh->base NULL and sh->why says why. */
rcoll_status_t rcoll__shm_segment_create(rcoll_comm_t *comm, rcoll__shm_t *sh);
/* Others: map the segment named sh->name and take its geometry; on failure
 * sh->why says why. */
rcoll_status_t rcoll__shm_segment_attach(rcoll_comm_t *comm, rcoll__shm_t *sh);
/* Fault in rank r's pipeline buffers once (see shm_segment.c): this
 * rank's own by writing them (before it first publishes a chunk), a bcast
 * root's by reading them. */
void rcoll__shm_fault_in_pipe(rcoll__shm_t *sh, int r);
/* Rank 0: every rank has attached or given up: close the descriptor the
 * others opened the segment through. */
void rcoll__shm_segment_close_fd(rcoll__shm_t *sh);
/* Unmap (and close the descriptor if still open). */
void rcoll__shm_segment_drop(rcoll__shm_t *sh);
/* Drop the segment and free the state (rcoll_coll_comm_fini). */
void rcoll__shm_free(rcoll_comm_t *comm);

/* A shm algorithm's per-task bookkeeping; first member of its state. */
typedef struct {
    rcoll__shm_t  *sh;
    uint64_t       k;
    uint64_t       word;      /* k's slot word: k and this call's signature */
    int            stage;
    rcoll_status_t error;     /* a peer's slot showed a different call (shm_pipe.h) */
} rcoll__shm_op_t;

/*
 * Slot words: collective k's slot word holds k in its low
 * RCOLL__SHM_K_BITS bits and 24 bits of the call's signature (collective,
 * count, datatype, op, root: task->sig) above, so a reader that finds k with another
 * signature knows the ranks called different collectives and fails with
 * RCOLL_ERR_PROTOCOL instead of reading the wrong bytes.  Checking costs
 * nothing on the fast path: the reader compares the whole word with the
 * one it expects and looks closer only when they differ.
 */
#define RCOLL__SHM_K_BITS 40
#define RCOLL__SHM_K_MASK ((1ull << RCOLL__SHM_K_BITS) - 1)

static inline uint64_t rcoll__shm_slot_word(uint64_t k, uint64_t sig)
{
    return (k & RCOLL__SHM_K_MASK) | (sig & 0xffffff) << RCOLL__SHM_K_BITS;
}

/* The path a call takes (2: single copy, or a reduce_scatter's pipeline;
 * 1: the other), fixed or chosen at run time, folded into its slot word
 * before anything is published: a rank on the other path then sees another
 * signature and fails with RCOLL_ERR_PROTOCOL instead of taking one path's
 * bytes for the other's (a reduce root on two copies once folded a
 * single-copy descriptor into its result when the path choice disagreed). */
static inline void rcoll__shm_word_path(rcoll__shm_op_t *op, int path)
{
    if (path == 2) {
        op->word ^= 1ull << 63;
    }
}

/*
 * RCOLL_OK once the task may use the segment: the communicator is all on
 * this node, the segment is set up (the first collective sets it up), and
 * the earlier shm collectives on the communicator have finished here.
 * RCOLL_INPROGRESS until then, or an error (logged): among them, when the
 * ranks agreed that there is no segment (e.g. /dev/shm full): the task
 * switches to the point-to-point algorithm the selector picks without shm
 * and RCOLL_INPROGRESS is returned (the next progress call runs it; a
 * communicator whose creation did not agree on a segment, docs/shm.md), or
 * where shm was forced the cause (RCOLL_ERR_NO_MEMORY).
 */
rcoll_status_t rcoll__shm_enter(rcoll_task_t *task, rcoll__shm_op_t *op);

/* The collective is complete on this rank: publish done = k. */
void rcoll__shm_leave(rcoll_task_t *task, rcoll__shm_op_t *op);

/* The algorithms' abort hook (rcoll_alg_t.abort): every shm state begins
 * with its rcoll__shm_op_t. */
void rcoll__shm_abort(rcoll_task_t *task);

/* 1 when every rank has finished collective k - 2, so this rank may
 * overwrite its slot k & 1; else 0 with task->wait_peer set. */
int rcoll__shm_slots_free(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t k);

/* Before a pipelined collective of nchunks chunks moved through input
 * pieces of `piece` bytes (sh->chunk; m x sh->chunk where m divides nbuf;
 * or less than a chunk for a medium bcast): cut the input buffers into
 * pieces of that size (fencing off every earlier chunk if the cut changes)
 * and return the id of its first chunk.  m chunks to a piece cut the
 * result buffers into nbuf / m of m slices each.  over_all (a bcast, which
 * has no results; pieces smaller than a chunk always): the pieces run on
 * over the whole pipeline area, results and all (rcoll__shm_pipe_bytes). */
uint64_t rcoll__shm_pipe_start(rcoll__shm_t *sh, size_t piece, size_t nchunks, int over_all);

/* 1 once every other rank is through the chunk that used this rank's input
 * piece of chunk g before (out_done), so it may be rewritten; else 0, with
 * task->wait_peer set (step RCOLL__SHM_STEP_CHUNK + c). */
int rcoll__shm_piece_free(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c);

/* Chunk g (number c of its collective, for diagnostics) of len bytes from
 * src into this rank's input piece, once every other rank is through the
 * chunk that used the piece before, then raise in_ready to g.  0 (with
 * task->wait_peer set) while some rank is not.  Streaming stores where
 * `stream` (shm_copy.h). */
int rcoll__shm_put_chunk_kind(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c,
                              const void *src, size_t len, int stream);
/* rcoll__shm_put_chunk_kind that also copies the chunk into priv, a private
 * buffer, in the same pass over src (rcoll__shm_copy_two); priv NULL: the
 * segment only, as rcoll__shm_put_chunk_kind. */
int rcoll__shm_put_chunk_two(rcoll_task_t *task, rcoll__shm_t *sh, uint64_t g, size_t c,
                             const void *src, size_t len, int stream, void *priv);

/* A pipelined collective whose last chunk id is g is complete here: raise
 * all of this rank's chunk flags to g (it is done with every buffer up to
 * g), then rcoll__shm_leave. */
void rcoll__shm_pipe_leave(rcoll_task_t *task, rcoll__shm_op_t *op, uint64_t g);

/* The cost model's verdict: INFINITY unless the shm path can run. */
double rcoll__shm_cost(const rcoll_model_t *m, int nranks, int ppn, double bytes_moved);

/* Private state for comm (not yet set up); NULL if out of memory. */
rcoll__shm_t *rcoll__shm_new(const rcoll_comm_t *comm);

/* Fill sh's geometry (slot size small_max, pipeline slice per rank and
 * depth nbuf, capped so a chunk stays <= RCOLL__SHM_CHUNK_MAX, and a
 * pipeline area of at least pipe_min bytes per rank) and size. */
void rcoll__shm_layout(rcoll__shm_t *sh, size_t small_max, size_t slice, int nbuf,
                       size_t pipe_min);

/* The geometry for sh->p ranks: rcoll__shm_layout with
 * rcoll__shm_slot_size(p), rcoll__shm_slice_size(p, RCOLL__SHM_NBUF),
 * RCOLL__SHM_NBUF and rcoll__shm_bc_ring_bytes(p, this core's L2)
 * (docs/shm.md, "Memory"). */
void rcoll__shm_default_layout(rcoll__shm_t *sh);

/* 1 if an allreduce of `bytes` on p ranks takes the flat path (every rank
 * reduces every slot) rather than the pipeline, given slots of
 * rcoll__shm_slot_size(p); rcoll__shm_flat for a segment set up already. */
static inline int rcoll__shm_flat_fits(size_t bytes, int p)
{
    if (p <= 2) {
        return bytes <= RCOLL__SHM_SMALL_PAIR;
    }
    return bytes <= RCOLL__SHM_SMALL && bytes * (size_t)p <= RCOLL__SHM_FLAT_TOTAL;
}

static inline int rcoll__shm_flat(const rcoll__shm_t *sh, size_t bytes)
{
    return bytes <= sh->small_max && rcoll__shm_flat_fits(bytes, sh->p);
}

/* The same for an allreduce, which on 2 ranks goes flat only up to
 * pair_flat_max: its pipeline halves what crosses between cores, and from a
 * few KiB that beats the flat path's fewer hand-overs (docs/shm.md, "The
 * 2-rank allreduce's flat limit"); a reduce keeps the slot's limit (its
 * pieced flat path overlaps the root's folds with the copies). */
static inline int rcoll__shm_ar_flat(const rcoll__shm_t *sh, size_t bytes)
{
    return rcoll__shm_flat(sh, bytes) && (sh->p > 2 || bytes <= sh->pair_flat_max);
}

/* RCOLL_SHM_PAIR_FLAT_MAX resolved for a new segment (auto: the tune file's
 * line, else the default; ctx NULL: the default). */
size_t rcoll__shm_pair_flat_max(rcoll_context_t *ctx);

/* Copy-only collectives (bcast, allgather) use the slots up to 64 KiB even
 * where the slots are larger (2 ranks): above that their pipeline overlaps
 * one rank's copy-in with the others' copy-out, which the slot path cannot
 * (bcast 256 KiB: 10.0 us pipelined vs 12.4 through the slot). */
static inline size_t rcoll__shm_copy_slot_max(const rcoll__shm_t *sh)
{
    return sh->small_max < RCOLL__SHM_SMALL ? sh->small_max : RCOLL__SHM_SMALL;
}

/* Slot size for p ranks.  With 2 ranks the flat allreduce (each rank reads
 * the other's slot) beats the 3-stage pipeline up to 256 KiB: 6-13% at
 * 100-256 KiB (A/B, 2026-11-29); with more ranks every rank would read
 * p - 1 slots, so the pipeline takes over sooner and the slots stay small:
 * 64 KiB, and beyond 64 ranks RCOLL__SHM_SLOT_BUDGET / (2 p) (a line
 * multiple, at least RCOLL__SHM_SLOT_MIN).  Never below what the flat
 * allreduce needs (RCOLL__SHM_FLAT_TOTAL / p <= the budget / (2 p)). */
static inline size_t rcoll__shm_slot_size(int p)
{
    if (p <= 2) {
        return RCOLL__SHM_SMALL_PAIR;
    }
    size_t s = RCOLL__SHM_SLOT_BUDGET / (2 * (size_t)p) / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
    return s > RCOLL__SHM_SMALL ? RCOLL__SHM_SMALL : s < RCOLL__SHM_SLOT_MIN ? RCOLL__SHM_SLOT_MIN : s;
}

/* Pipeline slice per rank for p ranks and nbuf chunk buffers: the default
 * RCOLL__SHM_SLICE, at most RCOLL__SHM_CHUNK_MAX / p (a chunk is p slices),
 * and so that the input buffers of all ranks, p * nbuf * p * slice, stay
 * within RCOLL__SHM_PIPE_BUDGET; a line multiple, at least one line. */
static inline size_t rcoll__shm_slice_size(int p, int nbuf)
{
    size_t pp = (size_t)(p < 1 ? 1 : p), s = RCOLL__SHM_SLICE;
    if (s * pp > RCOLL__SHM_CHUNK_MAX) {
        s = RCOLL__SHM_CHUNK_MAX / pp;
    }
    if (s * pp * pp * (size_t)nbuf > RCOLL__SHM_PIPE_BUDGET) {
        s = RCOLL__SHM_PIPE_BUDGET / (pp * pp * (size_t)nbuf);
    }
    s = s / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
    return s < RCOLL__SHM_LINE ? RCOLL__SHM_LINE : s;
}

/* n rounded up to whole cache lines. */
static inline size_t rcoll__shm_lines(size_t n)
{
    return (n + RCOLL__SHM_LINE - 1) / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
}

/* The piece size of a flat reduce of n bytes whose slots fill in pieces:
 * sh->red_piece, or n / RCOLL__SHM_RED_PIECES (rounded up to a line) if
 * that is larger. */
static inline size_t rcoll__shm_red_piece_for(const rcoll__shm_t *sh, size_t n)
{
    size_t q = rcoll__shm_lines(n / RCOLL__SHM_RED_PIECES);
    return q > sh->red_piece ? q : sh->red_piece;
}

/* The reduction engine (rcoll__shm_red_t): shm_reduction.h.  The slot
 * read / write and the chunk pipeline driver: engines/shm_pipe.h. */

/* ---- layout ---- */

static inline char *rcoll__shm_region(const rcoll__shm_t *sh, int r)
{
    return sh->base + 4096 + (size_t)r * sh->rank_stride;
}

static inline rcoll__shm_ctl_t *rcoll__shm_ctl(const rcoll__shm_t *sh, int r)
{
    return (rcoll__shm_ctl_t *)(void *)rcoll__shm_region(sh, r);
}

static inline _Atomic uint64_t *rcoll__shm_slot_seq(const rcoll__shm_t *sh, int r, uint64_t k)
{
    return (_Atomic uint64_t *)(void *)(rcoll__shm_region(sh, r) + sizeof(rcoll__shm_ctl_t) +
                                        (size_t)(k & 1) * sh->slot_stride);
}

/* Payloads of up to RCOLL__SHM_INLINE bytes share the sequence word's
 * line (one line moves between cores); larger ones start on the next line,
 * so that copies and reductions use line-aligned vector accesses instead
 * of splitting every one across two lines. */
#define RCOLL__SHM_INLINE (RCOLL__SHM_LINE - sizeof(uint64_t))

static inline char *rcoll__shm_slot_data(const rcoll__shm_t *sh, int r, uint64_t k, size_t n)
{
    return (char *)(void *)rcoll__shm_slot_seq(sh, r, k) +
           (n <= RCOLL__SHM_INLINE ? sizeof(uint64_t) : RCOLL__SHM_LINE);
}

/* Where a region's pipeline buffers (inputs, then results) begin. */
static inline size_t rcoll__shm_pipe_offset(const rcoll__shm_t *sh)
{
    return sizeof(rcoll__shm_ctl_t) + 2 * sh->slot_stride;
}

/* A rank's pipeline area: its input and result buffers, and up to the
 * end of its region (rcoll__shm_layout's pipe_min, page rounding). */
static inline size_t rcoll__shm_pipe_bytes(const rcoll__shm_t *sh)
{
    return sh->rank_stride - rcoll__shm_pipe_offset(sh);
}

/* The least pipeline area per rank for p ranks and an L2 cache of l2 bytes
 * (0: not known, taken as 1 MiB): 4 x l2, at most RCOLL__SHM_BC_RING_MAX
 * and RCOLL__SHM_BC_RING_BUDGET / p, a line multiple. */
static inline size_t rcoll__shm_bc_ring_bytes(int p, size_t l2)
{
    size_t want = 4 * (l2 > 0 ? l2 : (size_t)1 << 20);
    size_t cap = RCOLL__SHM_BC_RING_BUDGET / (size_t)(p < 1 ? 1 : p);
    if (want > RCOLL__SHM_BC_RING_MAX) {
        want = RCOLL__SHM_BC_RING_MAX;
    }
    if (want > cap) {
        want = cap;
    }
    return want / RCOLL__SHM_LINE * RCOLL__SHM_LINE;
}

/* Chunk g's input piece: g mod ring of the pieces the input buffers are cut
 * into now (nbuf chunks, unless a medium bcast cut them smaller, or a
 * bcast's ring runs over the whole pipeline area). */
static inline char *rcoll__shm_in(const rcoll__shm_t *sh, int r, uint64_t g)
{
    return rcoll__shm_region(sh, r) + rcoll__shm_pipe_offset(sh) + (size_t)(g % sh->ring) * sh->piece;
}

/* Chunk g's result buffer (a cut of whole chunks: g mod ring of res_stride
 * bytes each, after the input buffers). */
static inline char *rcoll__shm_res(const rcoll__shm_t *sh, int r, uint64_t g)
{
    return rcoll__shm_region(sh, r) + rcoll__shm_pipe_offset(sh) + (size_t)sh->nbuf * sh->chunk +
           (size_t)(g % sh->ring) * sh->res_stride;
}

/* ---- flags ---- */

static inline void rcoll__shm_publish(rcoll__shm_flag_t *f, uint64_t *cache, uint64_t v)
{
    atomic_store_explicit(&f->v, v, memory_order_release);
    *cache = v;
}

/* 1 if the flag is at least want (an acquire: what its owner wrote before
 * raising it is visible); cache holds the last value read. */
static inline int rcoll__shm_flag_ge(const rcoll__shm_flag_t *f, uint64_t *cache, uint64_t want)
{
    if (*cache >= want) {
        return 1;
    }
    uint64_t v = atomic_load_explicit(&((rcoll__shm_flag_t *)f)->v, memory_order_acquire);
    *cache = v;
    return v >= want;
}

/* Chunk g may be written into buffers last used by chunk g - ring once the
 * flag says that chunk (and the fence, see rcoll__shm_pipe_start) is through. */
static inline uint64_t rcoll__shm_reuse_id(const rcoll__shm_t *sh, uint64_t g)
{
    uint64_t id = g > sh->ring ? g - sh->ring : 0;
    return id > sh->fence ? id : sh->fence;
}

static inline void rcoll__shm_waiting(rcoll_task_t *task, int peer, uint32_t step)
{
    task->wait_peer = peer;
    task->wait_step = step;
}

/* Ask for every line of a peer's freshly written data at once.  The lines
 * sit modified in the writer's cache; a copy or reduction that misses on
 * them one after the other is bound by the cross-core latency, while
 * prefetches issued together overlap the transfers (2-rank allreduce of
 * 1-16 KiB 15-20% faster, A/B).  Up to RCOLL__SHM_PREFETCH_MAX bytes: the
 * streaming prefetcher takes over on longer runs. */
#define RCOLL__SHM_PREFETCH_MAX (64 * 1024)

static inline void rcoll__shm_prefetch(const void *p, size_t n)
{
    const char *c = p;
    if (n > RCOLL__SHM_PREFETCH_MAX) {
        n = RCOLL__SHM_PREFETCH_MAX;
    }
    for (size_t off = 0; off < n; off += RCOLL__SHM_LINE) {
        __builtin_prefetch(c + off, 0, 3);
    }
}

/* Hand the cache lines of [p, p + n) over to the shared L3 (CLDEMOTE, a
 * hint: on x86-64 CPUs without it, AMD's included, the encoding is a
 * reserved NOP), where the ranks have a core each (sh->demote).  A slot's
 * writer after writing it, so that its readers take the lines from L3
 * instead of from the writer's own caches, and a reader after reading it,
 * so that the writer's next stores there (two calls on) need not take them
 * back from the reader's caches: the two cross-core hand-overs of every
 * slot.  Both sides or neither: either alone gained nothing.  Not where
 * ranks outnumber the CPUs: a reader then often runs on the writer's core
 * and found the lines in L3 instead of its own caches (4 ranks on 2
 * vCPUs, 4 KiB allgather 3.5 -> 4.9 us).  docs/shm.md, "Slot lines handed
 * to L3". */
static inline void rcoll__shm_demote(const rcoll__shm_t *sh, const void *p, size_t n)
{
#if defined(__x86_64__)
    if (!sh->demote) {
        return;
    }
    const char *c = p;
    for (size_t off = 0; off < n; off += RCOLL__SHM_LINE) {
        __asm__ volatile(".byte 0x0f, 0x1c, 0x00" : : "a"(c + off) : "memory");   /* cldemote (%rax) */
    }
#else
    (void)sh;
    (void)p;
    (void)n;
#endif
}

/* Mark progress for RCOLL_TIMEOUT (long pipelined collectives). */
static inline void rcoll__shm_progressed(rcoll_task_t *task)
{
    task->progress_count++;
}

#endif
