/*
 * allreduce.c - a minimal, complete use of rcoll_allreduce.
 *
 * Every rank contributes the vector v[i] = rank + i (float32) and receives
 * the element-wise sum over all ranks.  Because the inputs are known, each
 * rank checks its result locally: sum over r of (r + i) = N*i + N(N-1)/2,
 * exact in float32 for the small values used here.
 *
 *   rcollrun -n 4 examples/allreduce [COUNT]
 *
 * Exit status: 0 when the result is right on this rank, 1 on an rcoll
 * error, 2 on a wrong result.
 */
#include <stdio.h>
#include <stdlib.h>

#include <rcoll.h>

int main(int argc, char **argv)
{
    size_t count = 1024;
    if (argc > 1) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end != '\0' || v > (1UL << 24)) {
            fprintf(stderr, "usage: %s [COUNT]   (COUNT <= 16777216 elements)\n", argv[0]);
            return 1;
        }
        count = v;
    }

    /* 1. Start rcoll.  NULL: take the settings from RCOLL_* environment
     *    variables; the launcher (rcollrun, mpirun, srun) provides PMIx. */
    rcoll_context_t *ctx = NULL;
    rcoll_status_t rc = rcoll_init(NULL, &ctx);
    if (rc != RCOLL_OK) {
        fprintf(stderr, "allreduce: rcoll_init failed: %s\n", rcoll_strerror(rc));
        return 1;
    }
    rcoll_comm_t *world = rcoll_comm_world(ctx);
    int rank = rcoll_comm_rank(world), size = rcoll_comm_size(world);

    /* 2. Buffers are ordinary memory; rcoll registers what it needs. */
    float *in = malloc((count ? count : 1) * sizeof(float));
    float *out = malloc((count ? count : 1) * sizeof(float));
    if (!in || !out) {
        fprintf(stderr, "allreduce: rank %d: out of memory for %zu elements\n", rank, count);
        rcoll_finalize(ctx);
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(rank + (int)(i % 1000));

    /* 3. The collective.  Every rank calls it with the same count, dtype
     *    and op.  (Pass RCOLL_IN_PLACE as sendbuf to reduce in `out`.) */
    rc = rcoll_allreduce(in, out, count, RCOLL_FLOAT32, RCOLL_SUM, world);
    if (rc != RCOLL_OK) {
        fprintf(stderr, "allreduce: rank %d: rcoll_allreduce failed: %s\n", rank, rcoll_strerror(rc));
        free(in);
        free(out);
        rcoll_finalize(ctx);
        return 1;
    }

    /* 4. Check against the sum computed locally. */
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float expect = (float)(size * (int)(i % 1000) + size * (size - 1) / 2);
        if (out[i] != expect) {
            if (wrong == 0)
                fprintf(stderr, "allreduce: rank %d: element %zu is %g, expected %g\n", rank, i,
                        (double)out[i], (double)expect);
            wrong++;
        }
    }
    if (wrong == 0)
        printf("rank %d of %d: allreduce of %zu float32 correct\n", rank, size, count);
    else
        fprintf(stderr, "allreduce: rank %d: %zu of %zu elements wrong\n", rank, wrong, count);

    free(in);
    free(out);

    /* 5. Stop rcoll (runs a barrier so no peer is still sending to us). */
    rc = rcoll_finalize(ctx);
    if (rc != RCOLL_OK) {
        fprintf(stderr, "allreduce: rank %d: rcoll_finalize failed: %s\n", rank, rcoll_strerror(rc));
        return 1;
    }
    return wrong ? 2 : 0;
}
