/*
 * agent/signals.c — the program's signal handlers, held back while the agent
 * runs on the thread they would interrupt.
 *
 * Why: a handler that leaves by siglongjmp (timeouts in interpreters and
 * older C code) abandons whatever it interrupted. Inside the agent that was
 * the reentrancy guard (up for good: the thread was never traced again and
 * nothing counted its events as lost), a lock (prep_lock, mod_lock, the
 * producer's), a claimed frame node others wait for, or a reserved event.
 * Blocking signals around every event costs two system calls; instead the
 * handlers the program installs with sigaction or signal are installed
 * behind a wrapper. A signal that finds the agent busy on its thread is
 * kept (with its siginfo) and sent again to the thread as the agent leaves
 * (agent_leave, agent.h), when the handler may do what it likes.
 *
 * Not held: faults the kernel raises for the instruction that ran (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS with si_code > 0: returning would
 * run it again), handlers with SA_RESETHAND (held, the signal's second
 * delivery would find the default action), and what a program installs by
 * the raw system call.
 */
#include "agent/agent.h"
#include "agent/perthread.h"
#include "agent/redirect.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define NSIGS 65

__thread uint64_t agent_held __attribute__((tls_model("initial-exec")));
/* The siginfo of the first signals held during one stay in the agent
 * (agent_thread.held), which is short: more than AGENT_HELD_INFO at once, or
 * on a thread whose block is not mapped yet (a handler maps nothing), go
 * again without theirs (tgkill). */
static agent_thread *held_block(void)
{
    return agent_blocks[AGENT_BLOCK_THREAD];
}

/* What the program asked for, per signal; wrapped[s]: installed behind ours. */
static struct sigaction prog[NSIGS];
static _Atomic bool wrapped[NSIGS];
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);

static bool is_fault(int sig, const siginfo_t *si)
{
    bool fault_sig = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                     sig == SIGTRAP || sig == SIGSYS;
    return fault_sig && si && si->si_code > 0;
}

static void call_program(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *p = &prog[sig];
    if (p->sa_flags & SA_SIGINFO)
        p->sa_sigaction(sig, si, uc);
    else if (p->sa_handler != SIG_IGN && p->sa_handler != SIG_DFL)
        p->sa_handler(sig);
}

static void wrapper(int sig, siginfo_t *si, void *uc)
{
    if (agent_busy && sig > 0 && sig < NSIGS && !is_fault(sig, si)) {
        agent_thread *t = held_block();
        for (int i = 0; t && si && i < AGENT_HELD_INFO; i++)
            if (!t->held[i].sig || t->held[i].sig == sig) {
                t->held[i].sig = sig;
                t->held[i].info = *si;
                break;
            }
        agent_held |= 1ull << sig;
        return;
    }
    call_program(sig, si, uc);
}

void signals_release(void)
{
    int e = errno;
    while (agent_held) {
        int sig = __builtin_ctzll(agent_held);
        agent_held &= ~(1ull << sig);
        /* to this thread, with the siginfo it came with when it was kept */
        int sent = -1;
        agent_thread *t = held_block();
        for (int i = 0; t && i < AGENT_HELD_INFO; i++)
            if (t->held[i].sig == sig) {
                t->held[i].sig = 0;
                sent = (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), sig,
                                    &t->held[i].info);
            }
        if (sent != 0)
            syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
    }
    errno = e;
}

static bool resolve(void)
{
    if (!real_sigaction) {
        agent_busy++;
        real_sigaction = agent_next_sym("sigaction");
        agent_busy--;
    }
    return real_sigaction != NULL;
}

static bool wants_wrapper(int sig, const struct sigaction *act)
{
    if (sig <= 0 || sig >= NSIGS || (act->sa_flags & SA_RESETHAND))
        return false;
    return (act->sa_flags & SA_SIGINFO) ||
           (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN);
}

/* The agent's sigaction, also for signal() below: a call to "sigaction"
 * from the agent's own code binds to libc's when the agent came late. */
static int wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!resolve()) {
        errno = ENOSYS;
        return -1;
    }
    struct sigaction was_prog = sig > 0 && sig < NSIGS ? prog[sig] : (struct sigaction){0};
    bool was_wrapped = sig > 0 && sig < NSIGS && wrapped[sig];
    int rc;
    if (act && wants_wrapper(sig, act)) {
        struct sigaction w = *act;
        w.sa_flags |= SA_SIGINFO;
        w.sa_sigaction = wrapper;
        prog[sig] = *act; /* before the wrapper can run with it */
        rc = real_sigaction(sig, &w, old);
        if (rc == 0)
            wrapped[sig] = true;
        else
            prog[sig] = was_prog;
    } else {
        rc = real_sigaction(sig, act, old);
        if (rc == 0 && act && sig > 0 && sig < NSIGS)
            wrapped[sig] = false;
    }
    if (rc == 0 && old && was_wrapped) /* the program's handler, not ours */
        *old = was_prog;
    return rc;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return wrap_sigaction(sig, act, old);
}

/* glibc's signal() calls its sigaction internally, past the hook above. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;
    sigemptyset(&act.sa_mask);
    if (sig > 0 && sig < NSIGS)
        sigaddset(&act.sa_mask, sig);
    if (wrap_sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}
