/* transport.c - the list of backends, in order of preference. */
#include <string.h>
#include "transport.h"

/* transports/loop: in-memory, ranks are contexts in one process (tests). */
extern const rcoll_tl_ops_t rcoll_tl_loop_ops;

const rcoll_tl_ops_t *const rcoll_tl_backends[] = {
    &rcoll_tl_ucx_ops,
    &rcoll_tl_verbs_ops,
    &rcoll_tl_loop_ops,
    NULL
};

const rcoll_tl_ops_t *rcoll_tl_find(const char *name)
{
    for (int i = 0; rcoll_tl_backends[i] != NULL; i++) {
        if (strcmp(rcoll_tl_backends[i]->name, name) == 0) {
            return rcoll_tl_backends[i];
        }
    }
    return NULL;
}
