/*
 * inject/inject.c — the injector: one thread of a running process calls
 * dlopen(path, RTLD_NOW) because ltr, its tracer for a few milliseconds,
 * made it. No gdb, no code written into the target: only its registers and
 * a few bytes of its stack, all put back.
 *
 * The steps (docs/attach.md has the safety argument):
 *  1. PTRACE_SEIZE one thread and PTRACE_INTERRUPT it; the other threads run
 *     on (stopping them all could deadlock on a lock one of them holds).
 *  2. Judge the moment: the thread holds no lock dlopen or malloc takes if it
 *     is in the program's own code, or blocked in a waiting system call
 *     outside ld.so, with no fork (atfork handlers) and no signal
 *     handler frame on its stack, room on its stack and SIGSEGV unblocked.
 *     Otherwise detach, let it run about a millisecond, try again, thread
 *     after thread, within a bounded time.
 *  3. Save its registers (general, x87/SSE/AVX state) and signal mask; write
 *     the path below the 128-byte red zone, 16-byte aligned, and a return
 *     address of 0; point rip at dlopen with orig_rax = -1 (no system call
 *     restart on the way in). dlopen's return faults at rip 0: that SIGSEGV
 *     stop is ours and is never delivered. On NULL, dlerror the same way.
 *  4. Put everything back, including orig_rax and rax of a system call the
 *     interrupt cut: the kernel's restart logic runs when the thread resumes
 *     after the stop, so the call restarts and the program sees no EINTR.
 *     Signals that arrive meanwhile are delivered as they would have been.
 */
#include "inject/inject.h"
#include "inject/internal.h"
#include "prim/prim.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)

/* The kernel's internal restart codes, seen in rax at a stop inside a cut
 * system call (include/linux/errno.h). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define STACK_SCAN_MAX (256u << 10) /* bytes of stack searched for held locks */
#define STACK_ROOM_MIN (64u << 10)  /* stack a dlopen may need below the thread's */
#define XSTATE_MAX 16384

typedef struct tracee {
    pid_t pid, tid;
    int mem; /* /proc/PID/mem */
    bool stopped;
    uint64_t stop_start;
    struct user_regs_struct regs; /* as it stopped (syscall fixed up) */
    uint8_t xstate[XSTATE_MAX];
    size_t xlen;
    bool have_xstate;
    uint64_t sigmask;
    uint64_t longest_stop;
} tracee;

static void pause_us(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

/* Is the process still there (and not a zombie)? */
static bool process_alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Waits for the next stop of t. Returns the wait status, or -ECHILD when the
 * thread (or the whole process) is gone. */
static int wait_stop(tracee *t)
{
    for (;;) {
        int st;
        pid_t r = waitpid(t->tid, &st, __WALL | WNOHANG);
        if (r == t->tid) {
            if (WIFEXITED(st) || WIFSIGNALED(st))
                return t->stopped = false, -ECHILD;
            t->stopped = true;
            t->stop_start = ltr_now_ns();
            return st;
        }
        if (r < 0 && errno != EINTR)
            return -ECHILD;
        if (r == 0 && !process_alive(t->pid)) {
            /* The process is dying: the traced thread's exit report comes
             * next, and must be taken, or that zombie thread keeps its
             * parent from reaping the process. */
            while (waitpid(t->tid, &st, __WALL) < 0 && errno == EINTR)
                ;
            return t->stopped = false, -ECHILD;
        }
        pause_us(50);
    }
}

static void note_resume(tracee *t)
{
    if (t->stopped) {
        uint64_t d = ltr_now_ns() - t->stop_start;
        if (d > t->longest_stop)
            t->longest_stop = d;
    }
    t->stopped = false;
}

/* The system calls that fail with EINTR when a ptrace stop cuts them even
 * though no handler ran (signal(7)); at our stop their -EINTR is turned into
 * the restart the others get, so the program does not see it. Each is
 * restarted with its arguments as they were (a timeout starts again). */
static bool eintr_on_stop(long nr)
{
    switch (nr) {
    case SYS_epoll_wait: case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_semop: case SYS_semtimedop: case SYS_rt_sigtimedwait: case SYS_io_getevents:
    case SYS_msgrcv: case SYS_msgsnd: case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
    case SYS_sendto: case SYS_sendmsg: case SYS_accept: case SYS_accept4:
        return true;
    default:
        return false;
    }
}

/* Blocking waits during which libc holds no lock dlopen or malloc needs.
 * restart_syscall is what a thread runs once a stop (SIGSTOP and SIGCONT,
 * or an earlier try of ours) cut a relative nanosleep, clock_nanosleep,
 * poll or timed futex wait: the kernel resumes only those so, all of them
 * waits here. Without it, a thread that sleeps long could not be taken
 * again until its sleep ended: a program continued after a stop (as the
 * refusal of a stopped one says to do), sleeping 20 s, was refused. */
static bool waiting_syscall(long nr)
{
    switch (nr) {
    case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv: case SYS_write: case SYS_writev:
    case SYS_pwrite64: case SYS_futex: case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_restart_syscall:
    case SYS_poll:
    case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_wait4: case SYS_waitid: case SYS_pause:
    case SYS_rt_sigsuspend: case SYS_flock: case SYS_fcntl: case SYS_ioctl: case SYS_connect:
        return true;
    default:
        return eintr_on_stop(nr);
    }
}

static bool cut_syscall(const struct user_regs_struct *r)
{
    long rax = (long)r->rax;
    return (long)r->orig_rax >= 0 && (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR || rax == -ERESTARTNOHAND ||
                                      rax == -ERESTART_RESTARTBLOCK || rax == -EINTR);
}

/* A thread blocked in a system call Linux would fail with EINTR: avoided
 * when another thread will do (the fix-up in take_regs covers a race). */
static bool blocked_in_eintr_call(pid_t pid, pid_t tid)
{
    char path[96], buf[256];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    if (ltr_read_small_file(path, buf, sizeof buf) <= 0)
        return false;
    char *end;
    long nr = strtol(buf, &end, 10);
    return end != buf && nr >= 0 && eintr_on_stop(nr);
}

static int take_regs(tracee *t)
{
    if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) != 0)
        return -errno;
    if ((long)t->regs.orig_rax >= 0 && (long)t->regs.rax == -EINTR && eintr_on_stop((long)t->regs.orig_rax))
        t->regs.rax = (unsigned long long)-ERESTARTNOHAND;
    struct iovec iov = {t->xstate, sizeof t->xstate};
    t->have_xstate = ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) == 0;
    if (t->have_xstate)
        t->xlen = iov.iov_len;
    else if (ptrace(PTRACE_GETFPREGS, t->tid, 0, t->xstate) != 0)
        return -errno;
    if (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof t->sigmask, &t->sigmask) != 0)
        return -errno;
    return 0;
}

static int put_regs(tracee *t)
{
    int rc = 0;
    if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
        rc = -errno;
    struct iovec iov = {t->xstate, t->xlen};
    if (t->have_xstate ? ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov)
                       : ptrace(PTRACE_SETFPREGS, t->tid, 0, t->xstate))
        rc = rc ? rc : -errno;
    if (ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof t->sigmask, &t->sigmask) != 0)
        rc = rc ? rc : -errno;
    return rc;
}

/* Leaves thread t untraced however it stands. Stopped, it is detached. Not
 * stopped (a SIGKILL, the process's exit_group, woke it from our stop),
 * PTRACE_DETACH fails, and the thread stays traced by ltr even as a zombie:
 * its exit report then waits for ltr, and its parent cannot reap the
 * process while ltr runs (a long-running 'ltr watch' would hold a service's
 * zombie; CI's test_inject hung in the reap of a target that exited while
 * a thread was stopped). So it is interrupted and waited for: its exit
 * report taken, or its stop detached. */
static void let_go(tracee *t)
{
    if (ptrace(PTRACE_DETACH, t->tid, 0, 0) == 0 || errno != ESRCH)
        return;
    ptrace(PTRACE_INTERRUPT, t->tid, 0, 0); /* fails on a zombie: its report is there */
    int st = wait_stop(t);
    if (st < 0)
        return; /* exited, its report taken; or not ours */
    int sig = st >> 16 ? 0 : WSTOPSIG(st); /* a signal on its way: delivered */
    note_resume(t);
    ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig);
}

/* Lets the thread go: registers as they were (with a cut system call set to
 * restart), no signal. */
static void release(tracee *t, bool regs_changed)
{
    if (t->stopped && (regs_changed || (long)t->regs.orig_rax >= 0))
        put_regs(t);
    note_resume(t);
    let_go(t);
}

/* Seizes and interrupts thread tid. 0 with t stopped, or -errno (-ESRCH:
 * the thread is gone; -ECHILD: gone while we waited). */
static int seize(tracee *t, pid_t tid)
{
    t->tid = tid;
    t->stopped = false;
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
        return -errno;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) { /* it is exiting: take its exit report */
        int st;
        while (waitpid(tid, &st, __WALL) < 0 && errno == EINTR)
            ;
        return -ESRCH;
    }
    for (;;) {
        int st = wait_stop(t);
        if (st < 0)
            return st;
        if (st >> 16 == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP)
            return 0; /* our interrupt */
        if (st >> 16 == PTRACE_EVENT_STOP) {
            /* a group stop (SIGSTOP from someone): the process is being stopped */
            note_resume(t);
            ptrace(PTRACE_DETACH, tid, 0, 0);
            return -EBUSY;
        }
        /* a signal on its way to the thread: deliver it, our interrupt stays pending */
        note_resume(t);
        ptrace(PTRACE_CONT, tid, 0, (void *)(long)WSTOPSIG(st));
    }
}

static int mem_read(const tracee *t, uint64_t addr, void *buf, size_t len)
{
    ssize_t n = pread(t->mem, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

static int mem_write(const tracee *t, uint64_t addr, const void *buf, size_t len)
{
    ssize_t n = pwrite(t->mem, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Is word i, the address of the signal trampoline, the return address of a
 * signal frame? The kernel writes the frame (rt_sigframe) as the
 * trampoline's address, then the ucontext: uc_flags (UC_FP_XSTATE,
 * UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS: low bits only), uc_link (0),
 * uc_stack (3 words), and the interrupted registers, whose code segment is
 * 22 words further (0x33: 64-bit code; 0x23: 32-bit). A stale copy of the
 * address is another matter: glibc's sigaction puts it in the
 * kernel_sigaction it builds on its stack, and a word of a later frame that
 * is never written keeps it. Taken for a frame, it refused every moment of
 * the thread for as long as it stayed there (a Rust program sleeping in
 * main: its runtime calls sigaction at start-up). A frame the scan cannot
 * read whole is taken for one. */
#define FRAME_CS_WORD 24
static bool signal_frame_at(const uint64_t *w, size_t n, size_t i)
{
    if (i + FRAME_CS_WORD >= n)
        return true;
    uint16_t cs = (uint16_t)w[i + FRAME_CS_WORD];
    return (w[i + 1] & ~(uint64_t)0xff) == 0 && w[i + 2] == 0 && (cs == 0x33 || cs == 0x23);
}

/* Does the stack above rsp hold a return address into code that holds a
 * lock fork takes (its atfork handlers run under it) or a signal frame
 * (the trampoline's address, where a frame's shape follows it)? Stale
 * return addresses into fork count too: a false alarm costs a retry, never
 * safety. */
static bool stack_holds_danger(const tracee *t, const inj_target *g, const inj_range *danger, unsigned ndanger,
                               uint64_t rsp, uint64_t top)
{
    size_t len = (size_t)(top - rsp);
    if (len > STACK_SCAN_MAX)
        len = STACK_SCAN_MAX;
    len &= ~(size_t)7;
    uint64_t *w = malloc(len ? len : 8);
    if (!w)
        return true;
    bool bad = len && pread(t->mem, w, len, (off_t)rsp) != (ssize_t)len;
    for (size_t i = 0; !bad && i < len / 8; i++)
        bad = inj_in(danger, ndanger, w[i]) &&
              (!inj_in(g->restorer, g->nrestorer, w[i]) || signal_frame_at(w, len / 8, i));
    free(w);
    return bad;
}

/* Has the stopped thread's process run execve since t->mem was opened? The
 * file keeps the memory of the program it was opened on, and once an execve
 * dropped that, a read gives 0 bytes (an unmapped address gives EIO): the
 * addresses read of the program before (libc's, dlopen's, the trampoline's)
 * no longer apply, and every read of the stack failed, judged 'in a signal
 * handler' 2215 times (a perl that test_snapshot_cli attached to as its
 * shell's child was still on its way to exec it). */
static bool image_replaced(const tracee *t)
{
    char byte;
    return pread(t->mem, &byte, 1, (off_t)t->regs.rsp) == 0;
}

static bool thread_alive(pid_t pid, pid_t tid);

/* Does another thread of the process hold a lock of the loader (ld.so's
 * recursive mutexes in _rtld_global: the load lock that dlopen takes first,
 * and the others)? Our dlopen would wait for it, and ltr with it, the
 * thread stopped in our call: a library constructor that never returns, in
 * a hostile or a stuck program, hung root's `ltr start heap --pid` for good
 * with Ctrl-C held off. glibc's layout is private, so the locks are known by
 * their shape: a recursive pthread mutex, locked, owned by a live thread of
 * the process other than this one (the owner's own dlopen proceeds). A
 * false alarm costs a retry, never safety. */
#define RTLD_SCAN_MAX (64u << 10)
static bool loader_held_elsewhere(const tracee *t, const inj_target *g)
{
    size_t len = (size_t)(g->rtld_global.hi - g->rtld_global.lo) & ~(size_t)3;
    if (len > RTLD_SCAN_MAX)
        len = RTLD_SCAN_MAX;
    uint32_t *w = len ? malloc(len) : NULL;
    bool held = false;
    if (w && mem_read(t, g->rtld_global.lo, w, len) == 0)
        for (size_t i = 0; !held && i + 5 <= len / 4; i++) { /* __lock, __count, __owner, __nusers, __kind */
            int32_t owner = (int32_t)w[i + 2];
            held = (w[i + 4] & 0x7f) == PTHREAD_MUTEX_RECURSIVE_NP && w[i] && w[i + 1] && owner > 0 &&
                   owner != t->tid && thread_alive(t->pid, owner);
        }
    free(w);
    return held;
}

/* Why this stop is not a safe moment, or NULL when it is. */
static const char *judge(tracee *t, const inj_target *g)
{
    const struct user_regs_struct *r = &t->regs;
    bool in_call = cut_syscall(r);
    if (in_call) {
        if (inj_in(&g->ldso, 1, r->rip) || !waiting_syscall((long)r->orig_rax))
            return "in a system call that may hold a lock";
    } else if (inj_in(g->libcode, g->nlibcode, r->rip)) {
        return "running inside libc or the loader";
    }
    if (t->sigmask & (1ull << (SIGSEGV - 1)))
        return "SIGSEGV blocked in this thread";
    inj_range stack;
    char name[64];
    if (inj_mapping_of(t->pid, r->rsp, &stack, name, sizeof name) != 0)
        return "its stack is not mapped";
    if (strcmp(name, "[stack]") != 0 && r->rsp - stack.lo < STACK_ROOM_MIN)
        return "too little room on its stack";
    if (in_call ? stack_holds_danger(t, g, g->restorer, g->nrestorer, r->rsp, stack.hi)
                : stack_holds_danger(t, g, g->danger, g->ndanger, r->rsp, stack.hi))
        return in_call ? "in a signal handler" : "inside fork or a signal handler";
    if (loader_held_elsewhere(t, g))
        return "another thread holds a lock of the loader (inside dlopen or a library's constructor)";
    return NULL;
}

/* Runs fn(a0, a1) in the stopped thread, returns its rax in *ret. The
 * return address is 0: the SIGSEGV stop at rip 0 is the call's end. */
static int call_in(tracee *t, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t frame, uint64_t *ret,
                   ltr_error *err)
{
    struct user_regs_struct r = t->regs;
    uint64_t zero = 0;
    if (mem_write(t, frame, &zero, sizeof zero) != 0)
        return ltr_fail(err, EFAULT, "pid %d: cannot write its stack", (int)t->pid);
    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1; /* no restart logic on the way in */
    r.rsp = frame;                       /* = 8 mod 16, as after a call */
    r.eflags &= ~0x400ull;               /* DF clear, as the ABI wants at a call */
    if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) != 0)
        return errno == ESRCH ? ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)t->pid)
                              : ltr_fail(err, errno, "pid %d: PTRACE_SETREGS: %s", (int)t->pid, strerror(errno));
    note_resume(t);
    if (ptrace(PTRACE_CONT, t->tid, 0, 0) != 0)
        return ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)t->pid);
    for (;;) {
        int st = wait_stop(t);
        if (st < 0)
            return ltr_fail(err, ECHILD, "pid %d exited during the attach (nothing is left to trace)",
                            (int)t->pid);
        int sig = WSTOPSIG(st);
        if (st >> 16 == PTRACE_EVENT_STOP) {
            /* stopped (SIGSTOP, a terminal's) meanwhile: the call runs on to
             * its end, the thread running ltr's call and none of the
             * program's code, and rejoins the stop at the detach (the kernel
             * puts a thread detached during a group stop back into it).
             * Staying stopped until a SIGCONT kept ltr waiting, SIGINT held,
             * for as long as none came: a target that stopped itself during
             * the call hung root's ltr, and the SIGKILL that ended it made
             * the target crash at its return to address 0 once continued. */
            note_resume(t);
            ptrace(PTRACE_CONT, t->tid, 0, 0);
            continue;
        }
        if (sig == SIGSEGV) {
            struct user_regs_struct now;
            if (ptrace(PTRACE_GETREGS, t->tid, 0, &now) != 0)
                return ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)t->pid);
            if (now.rip == 0) {
                *ret = now.rax;
                return 0;
            }
            return ltr_fail(err, EFAULT, "pid %d: the library crashed while it was loaded (SIGSEGV at %#llx); "
                            "the signal was not delivered and the thread was put back as it was", (int)t->pid,
                            now.rip);
        }
        /* any other signal: delivered now, as it would have been */
        note_resume(t);
        ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig);
    }
}

static int read_string(const tracee *t, uint64_t addr, char *out, size_t size)
{
    if (!addr || !size)
        return -EFAULT;
    memset(out, 0, size);
    for (size_t got = 0; got + 1 < size;) {
        size_t chunk = size - 1 - got < 64 ? size - 1 - got : 64;
        if (mem_read(t, addr + got, out + got, chunk) != 0)
            return got ? 0 : -EFAULT;
        if (memchr(out + got, 0, chunk))
            return 0;
        got += chunk;
    }
    return 0;
}

/* The call itself, in the chosen stopped thread. */
static int load_in(tracee *t, const inj_target *g, const char *path, ltr_error *err)
{
    size_t len = strlen(path) + 1;
    uint64_t str = (t->regs.rsp - 128 - len) & ~15ull; /* below the red zone */
    uint64_t frame = str - 8;
    size_t saved_len = (size_t)(t->regs.rsp - 128 - frame);
    uint8_t *saved = malloc(saved_len);
    if (!saved || mem_read(t, frame, saved, saved_len) != 0 || mem_write(t, str, path, len) != 0) {
        free(saved);
        return ltr_fail(err, EFAULT, "pid %d: cannot use its stack", (int)t->pid);
    }
    uint64_t handle = 0, msg = 0;
    /* RTLD_NOW = 2; the private __libc_dlopen_mode also wants __RTLD_DLOPEN */
    uint64_t mode = g->dlopen_private ? 0x80000002ull : 2;
    int rc = call_in(t, g->dlopen_addr, str, mode, frame, &handle, err);
    if (!rc && !handle) {
        char text[400] = "no message (glibc before 2.34)";
        if (g->dlerror_addr && call_in(t, g->dlerror_addr, 0, 0, frame, &msg, err) == 0 && msg)
            read_string(t, msg, text, sizeof text);
        rc = ltr_fail(err, ELIBBAD, "pid %d: dlopen(%s) failed in the process: %s", (int)t->pid, path, text);
    }
    if (rc != -ECHILD) {
        mem_write(t, frame, saved, saved_len);
        release(t, true);
    } else {
        let_go(t); /* gone during the call; its exit report may still be ours to take */
    }
    free(saved);
    return rc;
}

/* Is thread tid of pid there and not exiting (which ptrace refuses with EPERM)? */
static bool thread_alive(pid_t pid, pid_t tid)
{
    char path[96], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    if (ltr_read_small_file(path, buf, sizeof buf) <= 0)
        return false;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The threads of pid, up to max. */
static int list_threads(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -ESRCH;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            out[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

/* Signals that would end ltr while a thread of the target runs our call: if
 * ltr died then, the call's return to address 0 would kill the target. */
static void hold_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

/* Looks for a safe moment, thread after thread, until the deadline. 0 with
 * t stopped at one, or -errno with err. */
static int find_moment(tracee *t, const inj_target *g, uint64_t deadline, unsigned *tries, ltr_error *err)
{
    pid_t tids[512];
    const char *last = "no thread could be stopped";
    for (unsigned round = 0; ltr_now_ns() < deadline; round++) {
        int n = list_threads(g->pid, tids, 512);
        if (n <= 0)
            return ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)g->pid);
        for (int k = 0; k < n && ltr_now_ns() < deadline; k++) {
            pid_t tid = tids[(k + round) % n];
            if (round < 8 && n > 1 && blocked_in_eintr_call(g->pid, tid))
                continue;
            int rc = seize(t, tid);
            if (rc == -EPERM && !process_alive(g->pid))
                return ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)g->pid);
            if (rc == -EPERM && thread_alive(g->pid, tid))
                return inj_explain_eperm(g, err);
            if (rc == -EBUSY)
                return ltr_fail(err, EBUSY, "pid %d is being stopped (SIGSTOP or a terminal): continue it "
                                "(kill -CONT %d) and try again", (int)g->pid, (int)g->pid);
            if (rc < 0) {
                if (!process_alive(g->pid))
                    return ltr_fail(err, ECHILD, "pid %d exited during the attach", (int)g->pid);
                continue; /* that thread ended */
            }
            (*tries)++;
            int got = take_regs(t);
            if (got == 0 && image_replaced(t)) {
                release(t, false);
                return ltr_fail(err, ESTALE, "pid %d started another program (execve) during the attach: "
                                "what was read of the one before does not apply to it; nothing was loaded",
                                (int)g->pid);
            }
            const char *why = got == 0 ? judge(t, g) : "its registers could not be read";
            if (!why)
                return 0;
            last = why;
            release(t, false);
            pause_us(1000);
        }
    }
    return ltr_fail(err, ETIMEDOUT, "pid %d: no safe moment to load the agent within the time allowed (%u "
                    "tries; last: %s); nothing was changed: try again, or give it more time", (int)g->pid,
                    *tries, last);
}

int ltr_inject_check(pid_t pid, ltr_error *err)
{
    static inj_target g; /* 5 KB: not on a caller's small stack */
    return inj_target_read(pid, &g, true, err);
}

int ltr_inject_dlopen(pid_t pid, const char *path, unsigned timeout_ms, ltr_inject_report *rep,
                      ltr_error *err)
{
    ltr_inject_report dummy;
    if (!rep)
        rep = &dummy;
    memset(rep, 0, sizeof *rep);
    if (!path || path[0] != '/')
        return ltr_fail(err, EINVAL, "the library to load must be an absolute path");
    inj_target *g = calloc(1, sizeof *g);
    tracee *t = calloc(1, sizeof *t);
    int rc = g && t ? 0 : ltr_fail(err, ENOMEM, "out of memory");
    int mem_errno = 0;
    if (t)
        t->mem = -1;
    if (!rc) {
        /* opened before the program is read: an execve after it makes the
         * file read nothing (image_replaced), so the addresses read are
         * never used on another program than theirs */
        char mem[64];
        snprintf(mem, sizeof mem, "/proc/%d/mem", (int)pid);
        t->pid = pid;
        t->mem = open(mem, O_RDWR | O_CLOEXEC);
        mem_errno = errno;
        rc = inj_target_read(pid, g, true, err);
    }
    if (!rc && t->mem < 0)
        rc = mem_errno == ENOENT ? ltr_fail(err, ESRCH, "pid %d: no such process", (int)pid)
                                 : inj_explain_eperm(g, err);
    if (!rc) {
        sigset_t old;
        hold_signals(&old);
        uint64_t deadline = ltr_now_ns() + (uint64_t)(timeout_ms ? timeout_ms : LTR_INJECT_TIMEOUT_MS) * 1000000u;
        rc = find_moment(t, g, deadline, &rep->tries, err);
        if (!rc) {
            uint64_t t0 = t->stop_start;
            rep->tid = t->tid;
            rep->restarted_syscall = cut_syscall(&t->regs);
            rc = load_in(t, g, path, err);
            rep->call_ns = ltr_now_ns() - t0;
        }
        rep->longest_stop_ns = t->longest_stop;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (t && t->mem >= 0)
        close(t->mem);
    free(g);
    free(t);
    return rc;
}

#else /* not x86-64 */

int ltr_inject_check(pid_t pid, ltr_error *err)
{
    return ltr_fail(err, ENOTSUP, "attaching to a running process is implemented for x86-64 only; start the "
                    "program with the agent instead ('ltr run -- CMD')");
}

int ltr_inject_dlopen(pid_t pid, const char *path, unsigned timeout_ms, ltr_inject_report *rep,
                      ltr_error *err)
{
    return ltr_inject_check(pid, err);
}

#endif
