/*
 * tests/inject/probe.c — the tiny library the injector tests load: its
 * constructor appends "loaded PID TID" to $INJECT_PROBE_OUT, so a test knows
 * it ran, in which process; with $INJECT_PROBE_EXIT set it ends the process
 * instead (a target that exits during the attach).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void probe_loaded(void)
{
    if (getenv("INJECT_PROBE_EXIT"))
        _exit(atoi(getenv("INJECT_PROBE_EXIT")));
    const char *out = getenv("INJECT_PROBE_OUT");
    if (!out)
        return;
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "loaded %d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
    if (write(fd, line, (size_t)n) != n)
        abort();
    close(fd);
}
