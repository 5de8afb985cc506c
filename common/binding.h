/* binding.h - the CPU binding this process found (hwloc), for log lines and rcoll_info. */
#ifndef RCOLL_BINDING_H
#define RCOLL_BINDING_H

#include <stddef.h>

/* "bound to PUs 3 (1 of 8 cores)" or "not bound: ...", into buf (code in src/binding.c). */
void rcoll_binding_describe(char *buf, size_t len);

#endif
