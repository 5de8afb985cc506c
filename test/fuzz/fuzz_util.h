/*
 * fuzz_util.h - what the libFuzzer targets share: a failed check ends the
 * run with a message (libFuzzer then saves the input as a crash), and a
 * cursor that takes bytes from the front of the input.
 */
#ifndef RCOLL_FUZZ_UTIL_H
#define RCOLL_FUZZ_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sanitizer/common_interface_defs.h>

/* An invariant the code under test broke: report and abort (a crash to
 * libFuzzer, which saves the input).  The report goes through the
 * sanitizers' report stream too: test/fuzz/run discards stderr
 * (-close_fd_mask=2, for the library's own log lines), not that stream. */
#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                 \
        }                                                                      \
    } while (0)

__attribute__((noreturn, format(printf, 4, 5)))
static inline void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char msg[768];
    int n = snprintf(msg, sizeof(msg), "fuzz check failed at %s:%d: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(msg)) {
        vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    }
    va_end(ap);
    fprintf(stderr, "%s\n", msg);
    __sanitizer_report_error_summary(msg);
    abort();
}

/* Unset every RCOLL_* variable but RCOLL_TEST_*: a target's settings are
 * the defaults and its own, whatever the suite exports around it. */
static inline void fuzz_clear_env(void)
{
    extern char **environ;
    char name[256];
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e != NULL && *e != NULL; e++) {
            const char *eq = strchr(*e, '=');
            size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
            if (strncmp(*e, "RCOLL_", 6) == 0 && strncmp(*e, "RCOLL_TEST_", 11) != 0 &&
                n < sizeof(name)) {
                memcpy(name, *e, n);
                name[n] = '\0';
                unsetenv(name);
                again = 1;       /* environ changed under us: start over */
                break;
            }
        }
    }
}

typedef struct {
    const uint8_t *p;
    size_t         left;
} fuzz_in_t;

/* The next byte; 0 once the input is used up. */
static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    if (in->left == 0) {
        return 0;
    }
    in->left--;
    return *in->p++;
}

static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (uint64_t)fuzz_u8(in) << (8 * i);
    }
    return v;
}

/* Up to n bytes (fewer at the end of the input): a pointer into the input. */
static inline const uint8_t *fuzz_bytes(fuzz_in_t *in, size_t n, size_t *got)
{
    const uint8_t *p = in->p;
    *got = n < in->left ? n : in->left;
    in->p += *got;
    in->left -= *got;
    return p;
}

#endif
