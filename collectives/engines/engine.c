/*
 * engine.c - the engines' shared helpers (engine.h).
 */
#include "engine.h"

void *rcoll__scratch(rcoll_task_t *task, size_t size, const char *what)
{
    void *p = rcoll_task_scratch(task, size ? size : 1);

    if (p == NULL) {
        rcoll_error("%s: cannot allocate %zu bytes of scratch (comm size %d, count %zu)",
                    what, size, rcoll_task_size(task), task->args.count);
    }
    return p;
}
