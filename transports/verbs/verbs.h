/*
 * verbs.h - what the raw verbs backend offers besides rcoll_tl_verbs_ops:
 * device listing and availability for `rcoll_info --devices` and tests.
 * The core does not include this: it learns availability through the ops
 * table's probe (verbs_probe in verbs_tl.c).
 */
#ifndef RCOLL_VERBS_H
#define RCOLL_VERBS_H

#include <stddef.h>
#include <stdio.h>
#include "config.h"

/* Every device and port: kind (IB, RoCE v1, RoCE v2, iWARP), state, MTU,
 * speed, and the GID rcoll would use (index and address). */
void rcoll_verbs_print_devices(FILE *out, const rcoll_config_t *cfg);

/*
 * 1 if a device with an active port is usable under cfg (RCOLL_NET_DEVICES
 * honoured), else 0.  `why` gets the chosen device, port and kind
 * ("siw0:1 iWARP"), or the reason none is usable.
 */
int rcoll_verbs_available(const rcoll_config_t *cfg, char *why, size_t len);

/* 1 if the port the backend would choose under cfg is iWARP (UCX cannot use it). */
int rcoll_verbs_is_iwarp(const rcoll_config_t *cfg);

#endif
