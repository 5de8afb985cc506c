/*
 * log.h - rcoll's logging.  Every line is prefixed with host, pid and rank:
 *   [node1:12345 r3] rcoll WARN  message
 * The level comes from RCOLL_LOG_LEVEL (error, warn, info, debug, trace;
 * default warn).  Logging never changes errno.
 *
 * Level and rank belong to a context, but the log macros take no context:
 * each thread has a copy of the state of the context it last entered
 * (rcoll_log_enter, called where the API is entered with a context or
 * communicator: init, the argument checks of the collectives, test, wait,
 * progress, config_set).  Entering is one 8-byte store; testing a level is
 * one thread-local load, as cheap as the process-global it replaced.  A
 * thread that entered no context logs at warn with rank "?".
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

typedef struct {
    int level;          /* lines above it are dropped; -1: none at all */
    int rank;           /* shown in the prefix; -1 before the bootstrap knows it */
} rcoll_log_state_t;

/* The calling thread's state.  initial-exec: a direct %fs-relative access,
 * no __tls_get_addr call (librcoll is linked or preloaded, not loaded late). */
extern __thread rcoll_log_state_t rcoll__log __attribute__((tls_model("initial-exec")));

/* Make state the calling thread's log state. */
static inline void rcoll_log_enter(const rcoll_log_state_t *state)
{
    rcoll__log = *state;
}

/* Parse "error".."trace" (or 0..4); returns -1 if unknown. */
int  rcoll_log_level_parse(const char *s);
const char *rcoll_log_level_name(int level);
/* Set the calling thread's level / rank (tools and tests without a context). */
void rcoll_log_set_level(int level);
void rcoll_log_set_rank(int rank);
void rcoll_log_printf(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define rcoll_log(_lvl, ...) \
    do { if ((_lvl) <= rcoll__log.level) rcoll_log_printf((_lvl), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define rcoll_error(...) rcoll_log(RCOLL_LOG_ERROR, __VA_ARGS__)
#define rcoll_warn(...)  rcoll_log(RCOLL_LOG_WARN,  __VA_ARGS__)
#define rcoll_info(...)  rcoll_log(RCOLL_LOG_INFO,  __VA_ARGS__)
#define rcoll_debug(...) rcoll_log(RCOLL_LOG_DEBUG, __VA_ARGS__)
#define rcoll_trace(...) rcoll_log(RCOLL_LOG_TRACE, __VA_ARGS__)

#endif
