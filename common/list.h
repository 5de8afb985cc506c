/* list.h - a minimal intrusive doubly linked list. */
#ifndef RCOLL_LIST_H
#define RCOLL_LIST_H

#include <stddef.h>

typedef struct rcoll_list {
    struct rcoll_list *prev, *next;
} rcoll_list_t;

static inline void rcoll_list_init(rcoll_list_t *h) { h->prev = h->next = h; }
static inline int  rcoll_list_empty(const rcoll_list_t *h) { return h->next == h; }

static inline void rcoll_list_add_tail(rcoll_list_t *h, rcoll_list_t *e)
{
    e->prev = h->prev;
    e->next = h;
    h->prev->next = e;
    h->prev = e;
}

static inline void rcoll_list_del(rcoll_list_t *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

#define rcoll_container_of(_ptr, _type, _member) \
    ((_type *)((char *)(_ptr) - offsetof(_type, _member)))

/* Safe against deletion of the current element. */
#define rcoll_list_for_each_safe(_pos, _tmp, _head) \
    for ((_pos) = (_head)->next, (_tmp) = (_pos)->next; (_pos) != (_head); \
         (_pos) = (_tmp), (_tmp) = (_pos)->next)

#endif
