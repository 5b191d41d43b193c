/*
 * recorder/launch.c — starting the recorder as a daemon: double fork, a new
 * session id, and a pipe on which it says "OK" or why it could not start.
 * A recorder that belongs to its launcher (`ltr record`) also gets the read
 * end of a pipe whose write end only the launcher holds: the kernel closes it
 * however the launcher ends, SIGKILL included, and the recorder sees the
 * hang-up. (PR_SET_PDEATHSIG cannot serve: the daemon's parent is the
 * intermediate process, gone at once.) It is a socket pair, so that the
 * recorder can also leave a note on it for the launcher: a session of
 * `ltr record` stopped by another command, whose trace went elsewhere.
 */
#include "recorder/recorder.h"
#include "prim/prim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The launcher's argument strings, one after another in memory: what
 * /proc/PID/cmdline reads (the recorder's title is written over them). */
static char *title_area;
static size_t title_size;

void ltr_recorder_title_area(int argc, char **argv)
{
    char *end = argc > 0 ? argv[0] : NULL;
    for (int i = 0; i < argc; i++) {
        if (argv[i] != end)
            return; /* not one after another: no title (never seen from execve) */
        end += strlen(argv[i]) + 1;
    }
    title_area = argc > 0 ? argv[0] : NULL;
    title_size = argc > 0 ? (size_t)(end - argv[0]) : 0;
}

/* What ps, pgrep and pkill see of the recorder: its name (comm) and command
 * line say what it is and which session, not the command that launched it.
 * The title is cut to the launcher's arguments' length (`ltr start heap`
 * leaves 13 bytes: "ltr-recorder"). */
static void set_title(const ltr_session_config *cfg)
{
    prctl(PR_SET_NAME, "ltr-recorder", 0, 0, 0);
    if (!title_area || title_size < 2)
        return;
    memset(title_area, 0, title_size);
    int n = snprintf(title_area, title_size, "ltr-recorder --instance %s", cfg->name);
    /* The kernel reads the whole argument area, its NULs as empty arguments
     * ('ltr info' listed 60 of them), unless its last byte is not a NUL:
     * then it reads up to the first NUL (setproctitle's case, proc(5)). */
    if (n >= 0 && (size_t)n + 1 < title_size)
        title_area[title_size - 1] = ' ';
}

static void close_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* The daemon's session is its alone, and with it its autogroup, the group
 * the scheduler shares the CPU between first: raised like the recorder's
 * own nice (setup.c), when it may be (root, CAP_SYS_NICE). The session of
 * anything else is never touched: it would raise the programs in it too. */
static void raise_session_share(void)
{
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* a kernel without autogroups */
    if (dprintf(fd, "%d", LTR_RECORDER_NICE) < 0) {
        /* not privileged: setup.c logs that the priority stays */
    }
    close(fd);
}

/* keep: gets the launcher's end of the controller pair (-1 if none), else it
 * stays open, unseen, until this process ends. */
/* The recorder's side of the launch, in the forked child: a daemon in its
 * own session (the double fork), which never returns. */
__attribute__((noreturn)) static void run_daemon(const ltr_session_config *cfg, const int p[2], const int ctl[2])
{
    close(p[0]);
    if (ctl[1] >= 0)
        close(ctl[1]);
    /* the launcher's own handlers (ltr start's, while it attaches) are
     * not the recorder's: it takes these signals by signalfd once set up */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    setsid();
    pid_t grandchild = fork();
    if (grandchild != 0)
        _exit(grandchild < 0 ? 1 : 0);
    raise_session_share();
    set_title(cfg);
    if (chdir("/") != 0) {
        /* the recorder uses absolute paths only */
    }
    _exit(ltr_recorder_run(cfg, p[1], ctl[0]));
}

/* What the recorder wrote to the launch pipe until it closed it: "OK", or
 * "<errno> <message>" from its failed setup; 0 for OK, else the failure in
 * err. */
static int read_outcome(int fd, ltr_error *err)
{
    char msg[sizeof err->msg];
    size_t used = 0;
    ssize_t n;
    while (used < sizeof msg - 1 && (n = read(fd, msg + used, sizeof msg - 1 - used)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        used += (size_t)n;
    }
    msg[used] = 0;
    if (!strcmp(msg, "OK"))
        return 0;
    char *text = NULL;
    long code = strtol(msg, &text, 10);
    if (!used || code <= 0 || !text || *text != ' ')
        return ltr_fail(err, EIO, "%s", used ? msg : "the recorder exited while starting");
    return ltr_fail(err, (int)code, "%s", text + 1);
}

static int launch(const ltr_session_config *cfg, int *keep, ltr_error *err)
{
    int rc = ltr_session_config_check(cfg, err);
    if (rc)
        return rc;
    int p[2], ctl[2] = {-1, -1};
    if (pipe2(p, O_CLOEXEC) != 0)
        return ltr_fail(err, errno, "pipe: %s", strerror(errno));
    if ((cfg->stop_output[0] || cfg->cancel_when_orphaned) && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
        close(p[0]);
        close(p[1]);
        return ltr_fail(err, errno, "pipe: %s", strerror(errno));
    }
    pid_t child = fork();
    if (child < 0) {
        close(p[0]);
        close(p[1]);
        close_pipe(ctl);
        return ltr_fail(err, errno, "fork: %s", strerror(errno));
    }
    if (child == 0)
        run_daemon(cfg, p, ctl);
    close(p[1]);
    if (ctl[0] >= 0)
        close(ctl[0]); /* ctl[1] stays open, close-on-exec, until this process ends */
    int status;
    waitpid(child, &status, 0);
    rc = read_outcome(p[0], err);
    close(p[0]);
    if (rc == 0) {
        if (keep)
            *keep = ctl[1];
    } else if (ctl[1] >= 0) {
        close(ctl[1]);
    }
    return rc;
}

int ltr_recorder_launch(const ltr_session_config *cfg, ltr_error *err)
{
    return launch(cfg, NULL, err);
}

int ltr_recorder_launch_controlled(const ltr_session_config *cfg, int *note_fd, ltr_error *err)
{
    *note_fd = -1;
    return launch(cfg, note_fd, err);
}

int ltr_recorder_note(int note_fd, int timeout_ms, char *note, size_t size)
{
    struct pollfd p = {.fd = note_fd, .events = POLLIN};
    size_t used = 0;
    note[0] = 0;
    while (used < size - 1 && !memchr(note, '\n', used) && poll(&p, 1, timeout_ms) > 0) {
        ssize_t n = read(note_fd, note + used, size - 1 - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    note[used] = 0;
    return used ? 1 : 0;
}
