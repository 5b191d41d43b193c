/*
 * agent/fallback.c — libunwind, for the stacks the agent's own unwinder
 * (unwind.c) gives up on, used only while the pipe libunwind validates
 * memory through is still its own.
 *
 * libunwind opens a pipe when it starts (tdep_init, at the agent's first
 * call into it) and, where it follows a frame without unwind information
 * (a JIT's code, a frame chain it guesses), tests each page it reads by
 * reading a byte from one end and writing the page's first byte into the
 * other; a read that fails closes both numbers and opens a new pipe. It
 * never checks that the numbers are still its pipe. A daemon that closes
 * every fd after the agent started, and opens its own files, has them in
 * those numbers: heap-target's closeall mode had a file read from, and two
 * files closed under it, by one allocation made from code without unwind
 * information. libunwind has no switch for it, and its remote interface
 * (own memory accessors) is not in the local library the agent links.
 *
 * So the agent learns the pipe's numbers when libunwind opens it (a pipe
 * opened and closed just before takes the lowest free numbers, which
 * libunwind's then takes: checked, both ends of one pipe, non-blocking)
 * and calls libunwind only while both numbers are still that pipe (two
 * fstat, only on this rare path: python3's start had no stack left to
 * libunwind). Once they are not, or were never known (libunwind started
 * before the agent), a stack the agent's unwinder gives up on goes without
 * its frames: the event is recorded, under stack 0. LTR_HEAP_UNWIND=check
 * says how many went so.
 */
#define UNW_LOCAL_ONLY
#include "agent/agent.h"
#include "agent/unwind.h"

#include <fcntl.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

static int pipe_fd[2] = {-1, -1};
static dev_t pipe_dev;
static ino_t pipe_ino;
static _Atomic bool pipe_ours; /* false for good once not */
static _Atomic uint64_t n_refused;

/* Whether fd is an end of libunwind's pipe, opened for access mode acc. */
static bool pipe_end(int fd, int acc, struct stat *st)
{
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    return fl >= 0 && (fl & O_ACCMODE) == acc && (fl & O_NONBLOCK) && fstat(fd, st) == 0 &&
           S_ISFIFO(st->st_mode);
}

void fallback_init(void)
{
    int probe[2];
    bool probed = pipe2(probe, O_CLOEXEC) == 0;
    if (probed) {
        close(probe[0]);
        close(probe[1]);
    }
    /* libunwind starts here (tdep_init), opening its pipe */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    struct stat r, w;
    if (probed && pipe_end(probe[0], O_RDONLY, &r) && pipe_end(probe[1], O_WRONLY, &w) &&
        r.st_dev == w.st_dev && r.st_ino == w.st_ino) {
        pipe_fd[0] = probe[0];
        pipe_fd[1] = probe[1];
        pipe_dev = r.st_dev;
        pipe_ino = r.st_ino;
        atomic_store(&pipe_ours, true);
    }
}

/* Both numbers still libunwind's pipe (a fork child shares it; an exec
 * closes it, and the new image's agent starts again). */
static bool pipe_intact(void)
{
    if (!atomic_load_explicit(&pipe_ours, memory_order_relaxed))
        return false;
    struct stat a, b;
    if (fstat(pipe_fd[0], &a) == 0 && fstat(pipe_fd[1], &b) == 0 && a.st_dev == pipe_dev &&
        a.st_ino == pipe_ino && b.st_dev == pipe_dev && b.st_ino == pipe_ino)
        return true;
    atomic_store_explicit(&pipe_ours, false, memory_order_relaxed);
    return false;
}

int fallback_backtrace(void **buf, int max)
{
    if (!pipe_intact()) {
        atomic_fetch_add_explicit(&n_refused, 1, memory_order_relaxed);
        return -1;
    }
    if (!agent_loader_enter()) /* libunwind looks objects up in the loader's list; a fork holds it */
        return -1;
    int n = unw_backtrace(buf, max);
    agent_loader_leave();
    return n;
}

uint64_t fallback_refused(void)
{
    return atomic_load_explicit(&n_refused, memory_order_relaxed);
}
