/*
 * check_suites.h - the integration checks' bodies, each over a context it
 * is given and with no global state, so that a process under a launcher and
 * a thread with its own context (oob_threads) run the same cases.  Each
 * returns 0 if every rank passed, 1 if some rank failed; a status error from
 * rcoll ends the whole process (_exit(1)), as peers would wait forever.
 */
#ifndef CHECK_SUITES_H
#define CHECK_SUITES_H

#include "rcoll.h"

/* comm_cases.c: split, dup, concurrent collectives on several communicators. */
int comm_check_run(rcoll_context_t *ctx, int verbose);

#endif
