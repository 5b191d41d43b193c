/*
 * tests/programs/gone_shim.c — libltr-test-gone.so: a target that ends
 * between two of ltr's looks at it, on demand. Preloaded into `ltr start
 * --pid` with $LTR_TEST_ENVIRON_GONE set, opening /proc/PID/environ fails
 * with ENOENT, as it does when PID exits after ltr checked that it runs
 * (a new user's review met it once in 20 attaches of a program that ends
 * at once, and was told "/proc/PID/environ: No such file or directory"
 * rather than that the process was gone; tests/e2e/test_attach.c). Every
 * other open goes to the kernel as it was asked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int is_environ(const char *path)
{
    if (!getenv("LTR_TEST_ENVIRON_GONE") || strncmp(path, "/proc/", 6) != 0)
        return 0;
    const char *p = path + 6;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > path + 6 && strcmp(p, "/environ") == 0;
}

/* By system call, not dlsym(RTLD_NEXT): in the sanitized build ASan's
 * start-up opens files before the loader can answer (as enospc_shim.c) */
int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (is_environ(path)) {
        errno = ENOENT;
        return -1;
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));
