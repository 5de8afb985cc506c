/*
 * check_suites.h - the integration checks' bodies, each over a context it
 * is given and with no global state, so that a process under a launcher and
 * a thread with its own context (oob_threads) run the same cases.  Each
 * returns 0 if every rank passed, 1 if some rank failed; a status error from
 * rcoll ends the whole process (_exit(1)), as peers would wait forever.
 */
#ifndef CHECK_SUITES_H
#define CHECK_SUITES_H

#include <stdio.h>
#include "rcoll.h"

/* coll_cases.c: every collective x algorithm x dtype x op x count ... */
typedef struct {
    int         quick, verbose;
    const char *coll_list, *alg_list, *count_list;   /* NULL: all */
} coll_check_opts_t;

int  coll_check_run(rcoll_context_t *ctx, const coll_check_opts_t *opt);
/* 1 if name is one of the collectives --coll takes; print them all. */
int  coll_check_known(const char *name);
void coll_check_print_names(FILE *out);

/* comm_cases.c: split, dup, concurrent collectives on several communicators. */
int comm_check_run(rcoll_context_t *ctx, int verbose);

#endif
