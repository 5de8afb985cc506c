/* log.c - prefixed, levelled log lines on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "log.h"

int rcoll__log_level = RCOLL_LOG_WARN;
static int  log_rank = -1;
static char log_host[64];

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
    rcoll__log_level = level;
}

void rcoll_log_set_rank(int rank)
{
    log_rank = rank;
}

void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
{
    int saved_errno = errno;
    char msg[1024];
    va_list ap;

    if (log_host[0] == '\0') {
        gethostname(log_host, sizeof(log_host) - 1);
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    char rank[16];
    if (log_rank >= 0) {
        snprintf(rank, sizeof(rank), "r%d", log_rank);
    } else {
        snprintf(rank, sizeof(rank), "r?");
    }
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (level >= RCOLL_LOG_DEBUG) {
        fprintf(stderr, "[%s:%d %s] rcoll %-5s %s (%s:%d)\n", log_host, (int)getpid(), rank,
                rcoll_log_level_name(level), msg, base, line);
    } else {
        fprintf(stderr, "[%s:%d %s] rcoll %-5s %s\n", log_host, (int)getpid(), rank,
                rcoll_log_level_name(level), msg);
    }
    errno = saved_errno;
}
