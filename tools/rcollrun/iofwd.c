/*
 * Forwarding of the ranks' stdout/stderr, a line at a time, so that lines
 * of different ranks never mix.  With --tag-output each line starts with
 * "[RANK] ".  A line longer than the buffer limit goes out in pieces; the
 * tail of a stream without a final newline goes out at EOF.
 */
#define _GNU_SOURCE
#include "rcollrun.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define STREAM_INIT_CAP  4096
#define STREAM_MAX_CAP   (1u << 20)
#define READ_BUDGET      (64u << 10)   /* per call, so one rank cannot starve others */
#define WRITE_STALL_MS   30000

static bool dest_broken[3];

/* Writes every byte of iov to fd; our stdout may be a slow or non-blocking
 * pipe.  After a hard error (EPIPE: the reader went away) the destination is
 * dropped and the ranks' output is discarded, but still drained. */
static void write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0 && !dest_broken[fd]) {
        ssize_t n = writev(fd, iov, cnt);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                if (poll(&p, 1, WRITE_STALL_MS) > 0)
                    continue;
            }
            dest_broken[fd] = true;
            return;
        }
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
}

/* Writes len bytes of s as (part of) one line; newline says whether they
 * end the line, extra_nl appends a newline the rank did not write. */
static void emit(rcollrun_stream_t *s, const char *data, size_t len, bool tag, bool ends_line,
                 bool extra_nl)
{
    char prefix[24];
    struct iovec iov[3];
    int cnt = 0;

    if (tag && !s->midline) {
        int plen = snprintf(prefix, sizeof(prefix), "[%d] ", s->rank);
        iov[cnt].iov_base = prefix;
        iov[cnt++].iov_len = (size_t)plen;
    }
    if (len > 0) {
        iov[cnt].iov_base = (void *)data;
        iov[cnt++].iov_len = len;
    }
    if (extra_nl) {
        iov[cnt].iov_base = "\n";
        iov[cnt++].iov_len = 1;
    }
    write_all(s->dest, iov, cnt);
    s->midline = !(ends_line || extra_nl);
}

/* Forwards every complete line in the buffer and keeps the rest. */
static void flush_lines(rcollrun_stream_t *s, bool tag)
{
    size_t start = 0;
    char *nl;

    while (start < s->len && (nl = memchr(s->buf + start, '\n', s->len - start)) != NULL) {
        size_t end = (size_t)(nl - s->buf) + 1;
        rcollrun_where_scan(s->rank, s->buf + start, end - start);
        emit(s, s->buf + start, end - start, tag, true, false);
        start = end;
    }
    if (start > 0) {
        memmove(s->buf, s->buf + start, s->len - start);
        s->len -= start;
    }
    if (s->len == STREAM_MAX_CAP) {  /* one enormous line: pass it on in pieces */
        emit(s, s->buf, s->len, tag, false, false);
        s->len = 0;
    }
}

void rcollrun_stream_init(rcollrun_stream_t *s, int fd, int dest, int rank)
{
    memset(s, 0, sizeof(*s));
    s->fd = fd;
    s->dest = dest;
    s->rank = rank;
}

bool rcollrun_stream_read(rcollrun_stream_t *s, bool tag)
{
    size_t budget = READ_BUDGET;

    while (s->fd >= 0 && budget > 0) {
        ssize_t n;

        if (s->len == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : STREAM_INIT_CAP;
            char *b;

            if (cap > STREAM_MAX_CAP)
                cap = STREAM_MAX_CAP;
            b = realloc(s->buf, cap);
            if (b == NULL) {            /* no memory: pass on what we have */
                emit(s, s->buf, s->len, tag, false, false);
                s->len = 0;
                continue;
            }
            s->buf = b;
            s->cap = cap;
        }
        n = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (n > 0) {
            s->len += (size_t)n;
            budget -= (size_t)n < budget ? (size_t)n : budget;
            flush_lines(s, tag);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        rcollrun_stream_close(s, tag);  /* EOF, or a read error */
        return false;
    }
    return s->fd >= 0;
}

void rcollrun_stream_close(rcollrun_stream_t *s, bool tag)
{
    if (s->fd < 0)
        return;
    if (s->len > 0)
        emit(s, s->buf, s->len, tag, false, tag);
    else if (tag && s->midline)
        emit(s, NULL, 0, false, false, true);
    s->len = 0;
    close(s->fd);
    s->fd = -1;
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}
