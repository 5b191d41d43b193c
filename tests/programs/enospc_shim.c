/*
 * tests/programs/enospc_shim.c — libltr-test-enospc.so: preloaded into
 * `ltr record` (and so its recorder), pwrite to a file whose name holds
 * ".ltr" fails with ENOSPC while the file named by $LTR_TEST_DISK_FULL
 * exists: a disk full for a moment, as long as the traced program wants
 * (tests/e2e/test_disk_full.c). Nothing else is touched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static int is_trace(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = 0;
    return strstr(target, ".ltr") != NULL;
}

/* The write itself by system call, not dlsym(RTLD_NEXT): in the sanitized
 * build ASan's start-up writes before the loader can answer. */
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    const char *flag = getenv("LTR_TEST_DISK_FULL");
    if (flag && access(flag, F_OK) == 0 && is_trace(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite64")));
