/*
 * verbs_pagemap.c - fingerprints of the physical pages behind a range, from
 * /proc/self/pagemap (one 64-bit entry per page: bit 63 present, bits 0-54
 * the page frame number).  A registration pins its pages, so while it lives
 * no other mapping can get those frames: if the user unmaps the buffer and
 * maps new memory at the same address, the frames differ and the cache sees
 * it.  Linux shows frame numbers only to processes with CAP_SYS_ADMIN; for
 * others they read as 0 and rcoll__verbs_pagemap_open() says so.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "verbs_rcache.h"

#define PM_PRESENT (1ull << 63)
#define PM_PFN     ((1ull << 55) - 1)

static int read_entries(int fd, uintptr_t first_page, uint64_t *buf, size_t n)
{
    size_t want = n * sizeof(uint64_t);
    ssize_t got = pread(fd, buf, want, (off_t)(first_page * sizeof(uint64_t)));

    return got == (ssize_t)want ? 0 : -1;
}

int rcoll__verbs_pagemap_open(void)
{
    volatile char probe = 1;             /* on the stack: a page of ours that is present */
    long page = sysconf(_SC_PAGESIZE);
    uint64_t entry = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return -1;
    }
    probe = 2;
    if (read_entries(fd, (uintptr_t)&probe / (uintptr_t)page, &entry, 1) != 0 ||
        !(entry & PM_PRESENT) || (entry & PM_PFN) == 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int rcoll__verbs_pagemap_fingerprint(int fd, uintptr_t start, uintptr_t end, uint64_t *fp)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t buf[512];
    uint64_t h = 1469598103934665603ull;          /* FNV-1a */
    uintptr_t p = start / (uintptr_t)page, last = (end + (uintptr_t)page - 1) / (uintptr_t)page;

    while (p < last) {
        size_t n = last - p < 512 ? last - p : 512;
        if (read_entries(fd, p, buf, n) != 0) {
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t pfn = buf[i] & PM_PFN;
            if (!(buf[i] & PM_PRESENT) || pfn == 0) {
                return -1;
            }
            for (int b = 0; b < 8; b++) {
                h = (h ^ ((pfn >> (8 * b)) & 0xff)) * 1099511628211ull;
            }
        }
        p += n;
    }
    *fp = h;
    return 0;
}
