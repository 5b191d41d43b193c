/*
 * tests/programs/enospc_shim.c — libltr-test-enospc.so: a disk that fails or
 * stalls when a test says so, preloaded into `ltr record` or `ltr start` (and
 * so their recorder). pwrite to a file whose name holds ".ltr" fails with
 * ENOSPC while the file named by $LTR_TEST_DISK_FULL exists: a disk full for
 * a moment, as long as the traced program wants (tests/e2e/test_disk_full.c).
 * While the file named by $LTR_TEST_HOLD_SAVE exists, such a write waits
 * instead, for as long as no request waits for the recorder, and the
 * rename that publishes such a file waits: a save that does not end while a
 * test needs it, whatever the machine's speed, and that goes on only to let
 * the recorder answer what comes meanwhile, as it does between the blocks
 * it writes (tests/e2e/test_nowait.c). Nothing else is touched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int is_trace_name(const char *name) { return strstr(name, ".ltr") != NULL; }

static int is_trace(int fd)
{
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = 0;
    return is_trace_name(target);
}

static int flag_set(const char *var)
{
    const char *flag = getenv(var);
    return flag && access(flag, F_OK) == 0;
}

/* Whether a request waits for this process: a connection on a listening
 * socket, or bytes on a connected one (one whose peer hung up is no
 * request: it stays readable until the recorder's loop sees it go). */
static int request_waiting(void)
{
    DIR *d = opendir("/proc/self/fd");
    int waiting = 0;
    for (struct dirent *e; d && !waiting && (e = readdir(d));) {
        int fd = atoi(e->d_name);
        struct stat st;
        struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
        if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        waiting = poll(&p, 1, 0) == 1 && (p.revents & POLLIN) && !(p.revents & (POLLHUP | POLLRDHUP | POLLERR));
    }
    if (d)
        closedir(d);
    return waiting;
}

/* Waits while the file named by $LTR_TEST_HOLD_SAVE exists, unless
 * answering may (a request waits for the recorder). */
static void hold_save(int answering)
{
    while (flag_set("LTR_TEST_HOLD_SAVE") && !(answering && request_waiting()))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* The write itself by system call, not dlsym(RTLD_NEXT): in the sanitized
 * build ASan's start-up writes before the loader can answer. */
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    if ((flag_set("LTR_TEST_HOLD_SAVE") || flag_set("LTR_TEST_DISK_FULL")) && is_trace(fd)) {
        hold_save(1);
        if (flag_set("LTR_TEST_DISK_FULL")) {
            errno = ENOSPC;
            return -1;
        }
    }
    return syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite64")));

int renameat2(int olddirfd, const char *old, int newdirfd, const char *new, unsigned int flags)
{
    if (is_trace_name(old))
        hold_save(0);
    return (int)syscall(SYS_renameat2, olddirfd, old, newdirfd, new, flags);
}

int rename(const char *old, const char *new) { return renameat2(AT_FDCWD, old, AT_FDCWD, new, 0); }
