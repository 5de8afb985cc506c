/*
 * comm_check - sub-communicators: split and dup, collectives on several
 * communicators at once, no cross-talk, free and re-create.  The cases are
 * in comm_cases.c.
 *
 * Launch with any PMIx launcher:  rcollrun -n 5 test/integration/comm_check [-v]
 */
#include <stdio.h>

#include "rcoll.h"
#include "check_common.h"
#include "check_suites.h"

int main(int argc, char **argv)
{
    rcoll_context_t *ctx;
    int wrank, wsize, verbose = 0;
    int rc = check_start("comm_check", argc, argv, NULL, &ctx, &wrank, &wsize, &verbose);
    if (rc != 0) {
        return rc;
    }
    rc = comm_check_run(ctx, verbose);
    rcoll_status_t st = rcoll_finalize(ctx);
    if (st != RCOLL_OK) {
        fprintf(stderr, "FAIL comm_check rank %d: rcoll_finalize returned %s\n", wrank,
                rcoll_strerror(st));
        return 1;
    }
    return rc;
}
