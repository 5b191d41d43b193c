/*
 * agent/credentials.c — setuid, seteuid, setreuid and setresuid, replaced
 * (agent.map; redirect.c when the agent comes late) so that a process that
 * stops being the user whose registry it mapped gives that registry up
 * (ltr_registry_leave): a root service traced by name whose workers become
 * www-data (nginx's) kept root's registry mapped writable, and code run in
 * such a worker could enable or disable root's sessions' providers and
 * forge what root's `ltr` commands read (docs/design.md, "A shim in every
 * process").
 *
 * Each calls the next definition and returns exactly what it returned,
 * with its errno; only after a call that succeeded does it look (a
 * getresuid, and when the registry goes one mmap and a close; the
 * sessions' memory goes with it: ltr_producer_leave). syscall(2) is
 * replaced too, for the same three calls made through it (daemons that
 * call setresuid so): a program's other system calls pass through it
 * with six words of arguments, as glibc's own passes them on. One made
 * by a `syscall` instruction of the program's own (Go's RawSyscall) is
 * seen by the agent's check of the uids every 10 ms while it records
 * (emit.c, grain_now), or when the process next tries to attach
 * (producer.c, connect_session). The setgid family needs nothing: the
 * registry is its owner's alone (0600).
 */
#include "agent/agent.h"
#include "agent/redirect.h"
#include "event/registry.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The call's result, the registry given up after a success, errno as the call left it. */
static int after(int rc)
{
    if (rc == 0 && redirect_arrival() != AGENT_DUPLICATE) {
        agent_busy++; /* the agent's own work: its mmap and close are not the program's */
        ltr_producer_leave();
        agent_leave();
    }
    return rc;
}

/* The next definition of name, looked up once (a race looks it up twice: the same answer). */
static void *next_of(void **cache, const char *name)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f) {
        f = agent_next_sym(name);
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    if (!f)
        errno = ENOSYS;
    return f;
}

typedef int (*set1_fn)(uid_t);
typedef int (*set2_fn)(uid_t, uid_t);
typedef int (*set3_fn)(uid_t, uid_t, uid_t);

EXPORT int setuid(uid_t uid)
{
    static void *next;
    set1_fn f = (set1_fn)next_of(&next, "setuid");
    return f ? after(f(uid)) : -1;
}

EXPORT int seteuid(uid_t euid)
{
    static void *next;
    set1_fn f = (set1_fn)next_of(&next, "seteuid");
    return f ? after(f(euid)) : -1;
}

EXPORT int setreuid(uid_t ruid, uid_t euid)
{
    static void *next;
    set2_fn f = (set2_fn)next_of(&next, "setreuid");
    return f ? after(f(ruid, euid)) : -1;
}

EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
    static void *next;
    set3_fn f = (set3_fn)next_of(&next, "setresuid");
    return f ? after(f(ruid, euid, suid)) : -1;
}

#if defined(__x86_64__) || defined(__aarch64__)
typedef long (*syscall_fn)(long, long, long, long, long, long, long);
static void *next_syscall;

/* The system call itself, as glibc's syscall(2) makes it (-1 and errno
 * for a result in [-4095, -1]): the agent's own calls of syscall(2) (its
 * heap's mmap, the clock source's read) come here, preloaded, before the
 * next definition is known, and looking it up then (dlsym) may allocate. */
static __attribute__((noinline)) long raw_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
    long rc;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a3, r8 __asm__("r8") = a4, r9 __asm__("r9") = a5;
    __asm__ volatile("syscall"
                     : "=a"(rc)
                     : "0"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#else
    register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a0, x1 __asm__("x1") = a1;
    register long x2 __asm__("x2") = a2, x3 __asm__("x3") = a3, x4 __asm__("x4") = a4;
    register long x5 __asm__("x5") = a5;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    rc = x0;
#endif
    if ((unsigned long)rc > -4096ul) {
        errno = (int)-rc;
        return -1;
    }
    return rc;
}

void credentials_init(void)
{
    __atomic_store_n(&next_syscall, agent_next_sym("syscall"), __ATOMIC_RELEASE);
}

/* The call, and after a setuid, setreuid or setresuid that succeeded the
 * registry given up (after). */
static long call_next(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
    syscall_fn f = (syscall_fn)__atomic_load_n(&next_syscall, __ATOMIC_ACQUIRE);
    return f ? f(nr, a0, a1, a2, a3, a4, a5) : raw_syscall(nr, a0, a1, a2, a3, a4, a5);
}

static __attribute__((noinline)) long call_and_leave(long nr, long a0, long a1, long a2, long a3, long a4,
                                                     long a5)
{
    return after((int)call_next(nr, a0, a1, a2, a3, a4, a5));
}

/* syscall(2) takes its arguments as a variadic function; on x86-64 and
 * AArch64 Linux a caller passes them as to one of seven longs (registers,
 * then the stack), so the hook takes seven and passes seven on, as glibc's
 * own reads six after the number; other calls go on by a jump. callgrind
 * of 100 000 syscall(SYS_getppid), instructions a call added to glibc's
 * 11: 42 read with va_arg, 30 as seven longs tested after the call, now
 * 12. */
EXPORT long agent_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5) __asm__("syscall");
EXPORT long agent_syscall(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
    if (__builtin_expect(nr == SYS_setuid || nr == SYS_setreuid || nr == SYS_setresuid, 0))
        return call_and_leave(nr, a0, a1, a2, a3, a4, a5);
    return call_next(nr, a0, a1, a2, a3, a4, a5);
}
#else
void credentials_init(void) {}
#endif
