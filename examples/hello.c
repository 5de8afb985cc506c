/*
 * hello.c - the smallest rcoll program: start, say who we are, stop.
 *
 *   rcollrun -n 4 examples/hello
 *   mpirun -n 4 examples/hello          (Open MPI's mpirun as PMIx server)
 *   srun --mpi=pmix -n 4 examples/hello
 *
 * prints one line per rank: "hello from rank R of N on HOST".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>

#include <rcoll.h>

int main(void)
{
    rcoll_context_t *ctx = NULL;
    rcoll_status_t rc = rcoll_init(NULL, &ctx);
    if (rc != RCOLL_OK) {
        fprintf(stderr, "hello: rcoll_init failed: %s\n", rcoll_strerror(rc));
        return 1;
    }

    char host[256] = "unknown";
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';

    rcoll_comm_t *world = rcoll_comm_world(ctx);
    printf("hello from rank %d of %d on %s\n", rcoll_comm_rank(world), rcoll_comm_size(world), host);
    fflush(stdout);

    rc = rcoll_finalize(ctx);
    if (rc != RCOLL_OK) {
        fprintf(stderr, "hello: rcoll_finalize failed: %s\n", rcoll_strerror(rc));
        return 1;
    }
    return 0;
}
