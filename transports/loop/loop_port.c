/*
 * loop_port.c - the part of a loop instance that its peers reach: an inbox,
 * the live registrations and a dead flag, under one mutex, reference counted
 * by the owner and by every instance connected to it.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "loop_int.h"

loop_port_t *rcoll__loop_port_create(int rank, int size)
{
    loop_port_t *port = calloc(1, sizeof(*port));
    if (port == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&port->lock, NULL) != 0) {
        free(port);
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    port->magic = LOOP_MAGIC;
    port->nonce = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
                  ((uint64_t)(uintptr_t)port << 7) ^ ((uint64_t)getpid() << 40);
    port->rank = rank;
    port->size = size;
    port->tail = &port->head;
    port->next_mr_id = 1;
    atomic_init(&port->refs, 1);
    return port;
}

void rcoll__loop_port_ref(loop_port_t *port)
{
    atomic_fetch_add_explicit(&port->refs, 1, memory_order_relaxed);
}

static void free_msgs(loop_msg_t *m)
{
    while (m != NULL) {
        loop_msg_t *next = m->next;
        free(m);
        m = next;
    }
}

void rcoll__loop_port_unref(loop_port_t *port)
{
    if (atomic_fetch_sub_explicit(&port->refs, 1, memory_order_acq_rel) != 1) {
        return;
    }
    free_msgs(port->head);
    rcoll__loop_mr_free_all(port->mrs);
    pthread_mutex_destroy(&port->lock);
    port->magic = 0;
    free(port);
}

rcoll_status_t rcoll__loop_port_post(loop_port_t *port, loop_msg_t *msg)
{
    msg->next = NULL;
    pthread_mutex_lock(&port->lock);
    int dead = port->dead;
    if (!dead) {
        *port->tail = msg;
        port->tail = &msg->next;
    }
    pthread_mutex_unlock(&port->lock);
    return dead ? RCOLL_ERR_PEER_FAILED : RCOLL_OK;
}

loop_msg_t *rcoll__loop_port_take(loop_port_t *port)
{
    pthread_mutex_lock(&port->lock);
    loop_msg_t *m = port->head;
    port->head = NULL;
    port->tail = &port->head;
    pthread_mutex_unlock(&port->lock);
    return m;
}

void rcoll__loop_port_kill(loop_port_t *port)
{
    pthread_mutex_lock(&port->lock);
    port->dead = 1;
    loop_msg_t *msgs = port->head;
    struct rcoll_tl_mr *mrs = port->mrs;
    port->head = NULL;
    port->tail = &port->head;
    port->mrs = NULL;
    pthread_mutex_unlock(&port->lock);
    free_msgs(msgs);
    rcoll__loop_mr_free_all(mrs);
}
