/*
 * tests/inject/probe.c — the tiny library the injector tests load: its
 * constructor appends "loaded PID TID" to $INJECT_PROBE_OUT, so a test knows
 * it ran, in which process; with $INJECT_PROBE_EXIT set it ends the process
 * instead (a target that exits during the attach); with $INJECT_PROBE_HOLD
 * set to N it writes a byte to fd $INJECT_PROBE_HOLD_FD and then sleeps N
 * seconds first, inside the loader's lock (a constructor that does not
 * return, for the attach's loader-lock check); with $INJECT_PROBE_STOP set it
 * stops its process (SIGSTOP) first, as a stop from outside during the call.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void probe_loaded(void)
{
    if (getenv("INJECT_PROBE_EXIT"))
        _exit(atoi(getenv("INJECT_PROBE_EXIT")));
    if (getenv("INJECT_PROBE_STOP"))
        kill(getpid(), SIGSTOP);
    if (getenv("INJECT_PROBE_HOLD")) {
        if (write(atoi(getenv("INJECT_PROBE_HOLD_FD") ? getenv("INJECT_PROBE_HOLD_FD") : "-1"), "h", 1) != 1)
            abort();
        sleep((unsigned)atoi(getenv("INJECT_PROBE_HOLD")));
    }
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
