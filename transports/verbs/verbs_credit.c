/* verbs_credit.c - credit accounting for eager SENDs; see verbs_credit.h. */
#include "verbs_credit.h"

void rcoll__verbs_credit_init(rcoll_verbs_credit_t *c, uint32_t depth)
{
    c->depth = depth;
    c->sent = c->peer_freed = c->freed = c->reported = 0;
}

uint32_t rcoll__verbs_credit_avail(const rcoll_verbs_credit_t *c)
{
    uint32_t outstanding = c->sent - c->peer_freed;

    return outstanding >= c->depth ? 0 : c->depth - outstanding;
}

int rcoll__verbs_credit_take(rcoll_verbs_credit_t *c)
{
    if (rcoll__verbs_credit_avail(c) == 0) {
        return 0;
    }
    c->sent++;
    return 1;
}

int rcoll__verbs_credit_update(rcoll_verbs_credit_t *c, uint32_t cumulative)
{
    uint32_t advance = cumulative - c->peer_freed;
    uint32_t outstanding = c->sent - c->peer_freed;

    if (advance == 0 || advance > UINT32_MAX / 2) {
        return 0;                       /* same or older report */
    }
    if (advance > outstanding) {
        return -1;                      /* more than we ever sent */
    }
    c->peer_freed = cumulative;
    return 0;
}

void rcoll__verbs_credit_freed(rcoll_verbs_credit_t *c)
{
    c->freed++;
}

uint32_t rcoll__verbs_credit_report(rcoll_verbs_credit_t *c)
{
    c->reported = c->freed;
    return c->freed;
}

int rcoll__verbs_credit_report_due(const rcoll_verbs_credit_t *c)
{
    uint32_t waiting = c->freed - c->reported;
    uint32_t threshold = c->depth / 2 > 0 ? c->depth / 2 : 1;

    return waiting >= threshold;
}
