/*
 * sim_harness.h - runs a collective algorithm's real code on p simulated
 * ranks in one process, over a fake point-to-point layer that replaces the
 * core's rcoll_task_send/recv/test/scratch (and logging): a test using it is
 * linked from the algorithm sources, not from librcoll.
 *
 * The fake network checks what the real one relies on:
 *  - a receive's length equals the matching send's; (peer, step) names one
 *    message per direction within the collective; no message to oneself or
 *    to a rank outside the communicator; optionally no empty message;
 *  - at most RCOLL_TASK_MAX_OPS ops between two successful tests, and no
 *    rank finishing with ops pending or messages left unmatched at the end;
 *  - rendezvous mode: the send buffer is read when the message is delivered
 *    and must not change while it is in flight (checksummed); eager mode:
 *    the data is copied when posted and the send completes at once;
 *  - scratch is 64-byte aligned and nothing is written past its end.
 * Messages are delivered in random order after random delays and ranks are
 * progressed in random order (both from `seed`); a sweep in which nothing
 * can happen while every rank has started is a deadlock.
 *
 * Cost per operation is O(1) (matching by hash, delivery from a ready list),
 * and every table grows with p, so the same harness runs schedules at large
 * rank counts (the algorithms' rank arithmetic over real buffers).
 */
#ifndef RCOLL_SIM_HARNESS_H
#define RCOLL_SIM_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include "core.h"

typedef struct {
    int         p;              /* ranks */
    int         rndv;           /* 1: rendezvous semantics, 0: eager */
    int         forbid_empty;   /* 1: a zero-length message is a failure */
    unsigned    seed;
    size_t      segment_size;   /* the context's RCOLL_SEGMENT_SIZE */
    const int  *start_sweep;    /* the sweep at which rank r enters; NULL: all at 0 */
    /* Optional: called for every message as it is delivered. */
    void      (*trace)(void *arg, int src, int dst, uint32_t step, size_t len, long sweep);
    void       *trace_arg;
} sim_config_t;

typedef struct {
    long last_start;            /* the sweep at which the last rank entered */
    long first_done;            /* the sweep at which the first rank finished */
    long sweeps;
    long messages;
    char failure[512];          /* why sim_run failed */
} sim_result_t;

/* Run alg with args[r] on every rank r until all return RCOLL_OK.
 * Returns 0, or -1 with res->failure set. */
int sim_run(const sim_config_t *cfg, const rcoll_alg_t *alg, const rcoll_coll_args_t *args,
            sim_result_t *res);

#endif
