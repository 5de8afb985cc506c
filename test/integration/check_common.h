/*
 * check_common.h - what the multi-process checks share: data that every rank
 * can regenerate from (rank, index), the expected results of reductions
 * computed locally (no communication), guarded buffers and small helpers.
 *
 * Values are chosen so that every partial result of every op is exactly
 * representable in its type (small integers times a power of two for floats,
 * no integer overflow), so results are compared exactly, floats included, in
 * whatever order the library combines the ranks' contributions.
 */
#ifndef CHECK_COMMON_H
#define CHECK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"

/* op value meaning "no reduction": data for bcast / allgather. */
#define CHECK_OP_COPY ((rcoll_op_t)-1)

int  check_dtype_is_float(rcoll_datatype_t dt);
int  check_op_is_bitwise(rcoll_op_t op);
/* 1 if (dt, op) is a valid combination (bitwise ops: integer types only). */
int  check_pair_valid(rcoll_datatype_t dt, rcoll_op_t op);

/*
 * Fill buf[0..n) with the contribution of world rank `rank` for elements
 * idx0..idx0+n-1.  wsize is the world size (used to place the few factors
 * != +-1 of products), salt makes each case's data different.
 */
void check_fill(rcoll_datatype_t dt, rcoll_op_t op, int rank, int wsize, size_t idx0,
                size_t n, uint64_t salt, void *buf);

/* out[0..n) = op over ranks[0..nranks) of their contributions. */
void check_expect(rcoll_datatype_t dt, rcoll_op_t op, const int *ranks, int nranks,
                  int wsize, size_t idx0, size_t n, uint64_t salt, void *out);

/*
 * Compare got with expected (n elements).  Returns the first differing
 * index, or (size_t)-1 if equal.  Floats that differ only in the sign of a
 * zero count as equal.
 */
size_t check_compare(rcoll_datatype_t dt, const void *got, const void *exp, size_t n);

/* Format element i of buf as text (decimal, hex for bitwise data). */
void check_format(rcoll_datatype_t dt, const void *buf, size_t i, char *out, size_t len);

/*
 * A buffer with guard bytes before and after, its start offset by `offset`
 * bytes (0..7) from a 64-byte boundary so that unaligned buffers get tested.
 */
typedef struct check_buf {
    unsigned char *raw;
    unsigned char *ptr;     /* what the library gets */
    size_t         bytes;   /* usable bytes at ptr */
    size_t         offset;
    unsigned       seed;    /* of the guard pattern */
} check_buf_t;

int  check_buf_alloc(check_buf_t *b, size_t bytes, size_t offset);
void check_buf_free(check_buf_t *b);
/* Fill the usable bytes with a junk pattern (so stale data is noticed). */
void check_buf_junk(check_buf_t *b);
/* 0 if both guards are intact; else -1 or +1 (before/after) and *where =
 * the byte offset from ptr (negative before). */
int  check_buf_guards(const check_buf_t *b, long *where);

/* Seconds from a monotonic clock. */
double check_now(void);
void   check_sleep(double seconds);

/* "a,b,c" contains word (an empty list contains everything). */
int check_list_has(const char *list, const char *word);

/* Parse a size like "8192", "8k", "1M" (powers of 1024); 0 on success. */
int check_parse_size(const char *s, size_t *out);

/*
 * The start every check program shares: parse its only option (-v, sets
 * *verbose), rcoll_init with config (may be NULL), and the world rank and
 * size.  Returns 0, or the exit status to leave with (2: usage, 1: init
 * failed; the reason printed).
 */
int check_start(const char *prog, int argc, char **argv, const char *const *config,
                rcoll_context_t **ctx, int *wrank, int *wsize, int *verbose);

/* Print "FAIL <prog> rank <rank>: <what> returned <st> (<text>)" and _exit(1). */
void check_fatal(const char *prog, int rank, const char *what, rcoll_status_t st)
    __attribute__((noreturn));

/* Complete a request with rcoll_test() polling; bounded by deadline_s. */
rcoll_status_t check_test_loop(rcoll_request_t *req, double deadline_s);

/* Unset environment variables that would make rcoll see a launch. */
void check_unset_launch_env(void);

#endif

/* ---- collectives on a group, posted now and verified later ---- */

typedef enum {
    CHECK_ALLREDUCE, CHECK_BCAST, CHECK_BARRIER, CHECK_REDUCE, CHECK_ALLGATHER,
    CHECK_REDUCE_SCATTER
} check_kind_t;

const char *check_kind_name(check_kind_t kind);

/* A communicator and who is in it, as the test expects it to be. */
typedef struct check_group {
    const char   *name;
    rcoll_comm_t *comm;
    int           n;            /* expected size */
    int           me;           /* expected rank of this process */
    int           members[256]; /* world rank of each comm rank */
    int           wsize;        /* world size */
} check_group_t;

/*
 * The expected group of this process when world ranks r have colors[r] and
 * keys[r]: ranks of the same color ordered by key, then world rank.  Returns
 * 0, or -1 if this process's color is negative (no group).
 */
int check_group_expect(check_group_t *g, const char *name, int wsize, int wrank,
                       const int *colors, const int *keys);

typedef struct check_op {
    check_kind_t        kind;
    const check_group_t *g;
    rcoll_datatype_t    dt;
    rcoll_op_t          op;      /* ignored for bcast / allgather / barrier */
    size_t              count;   /* allgather / reduce_scatter: per rank */
    int                 root;    /* bcast / reduce: comm rank */
    int                 inplace;
    uint64_t            salt;
    /* filled by check_op_post */
    unsigned char      *sbuf, *rbuf;
    rcoll_request_t    *req;
} check_op_t;

/* Allocate and fill the buffers, then post the nonblocking collective
 * (blocking = 1: run the blocking call instead; req stays NULL). */
rcoll_status_t check_op_post(check_op_t *o, int blocking);
/* After completion: 0 if the result is right, else -1 with a reason. */
int  check_op_verify(const check_op_t *o, char *why, size_t len);
void check_op_free(check_op_t *o);
