/* log.c - prefixed, levelled log lines on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "log.h"

__thread rcoll_log_state_t rcoll__log = { .level = RCOLL_LOG_WARN, .rank = -1 };

static const char *const level_names[] = { "error", "warn", "info", "debug", "trace" };

int rcoll_log_level_parse(const char *s)
{
    for (int i = 0; i <= RCOLL_LOG_TRACE; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            return i;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        return RCOLL_LOG_WARN;
    }
    if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0') {
        return s[0] - '0';
    }
    return -1;
}

const char *rcoll_log_level_name(int level)
{
    return (level >= 0 && level <= RCOLL_LOG_TRACE) ? level_names[level] : "unknown";
}

void rcoll_log_set_level(int level)
{
    rcoll__log.level = level;
}

void rcoll_log_set_rank(int rank)
{
    rcoll__log.rank = rank;
}

void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
{
    int saved_errno = errno;
    char msg[1024], host[64] = "";
    va_list ap;

    gethostname(host, sizeof(host) - 1);      /* not cached: no shared state to race on */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    char rank[16];
    if (rcoll__log.rank >= 0) {
        snprintf(rank, sizeof(rank), "r%d", rcoll__log.rank);
    } else {
        snprintf(rank, sizeof(rank), "r?");
    }
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (level >= RCOLL_LOG_DEBUG) {
        fprintf(stderr, "[%s:%d %s] rcoll %-5s %s (%s:%d)\n", host, (int)getpid(), rank,
                rcoll_log_level_name(level), msg, base, line);
    } else {
        fprintf(stderr, "[%s:%d %s] rcoll %-5s %s\n", host, (int)getpid(), rank,
                rcoll_log_level_name(level), msg);
    }
    errno = saved_errno;
}
