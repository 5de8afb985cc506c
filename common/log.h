/*
 * log.h - rcoll's logging.  Every line is prefixed with host, pid and rank:
 *   [node1:12345 r3] rcoll WARN  message
 * The level comes from RCOLL_LOG_LEVEL (error, warn, info, debug, trace;
 * default warn).  Logging never changes errno.
 */
#ifndef RCOLL_LOG_H
#define RCOLL_LOG_H

#include <stdarg.h>

typedef enum {
    RCOLL_LOG_ERROR = 0,
    RCOLL_LOG_WARN,
    RCOLL_LOG_INFO,
    RCOLL_LOG_DEBUG,
    RCOLL_LOG_TRACE
} rcoll_log_level_t;

extern int rcoll__log_level;

/* Parse "error".."trace" (or 0..4); returns -1 if unknown. */
int  rcoll_log_level_parse(const char *s);
const char *rcoll_log_level_name(int level);
void rcoll_log_set_level(int level);
/* Rank shown in the prefix; -1 before the bootstrap knows it. */
void rcoll_log_set_rank(int rank);
void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define rcoll_log(_lvl, ...) \
    do { if ((_lvl) <= rcoll__log_level) rcoll_log_printf((_lvl), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define rcoll_error(...) rcoll_log(RCOLL_LOG_ERROR, __VA_ARGS__)
#define rcoll_warn(...)  rcoll_log(RCOLL_LOG_WARN,  __VA_ARGS__)
#define rcoll_info(...)  rcoll_log(RCOLL_LOG_INFO,  __VA_ARGS__)
#define rcoll_debug(...) rcoll_log(RCOLL_LOG_DEBUG, __VA_ARGS__)
#define rcoll_trace(...) rcoll_log(RCOLL_LOG_TRACE, __VA_ARGS__)

#endif
