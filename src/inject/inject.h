/*
 * inject/inject.h — loading a shared library into a running process without
 * gdb, and attaching ltr's heap agent to a process by pid.
 *
 * The injector (inject.c) ptraces ONE thread of the target while the others
 * keep running, waits for a moment when that thread holds no lock the loader
 * or malloc takes, makes it call dlopen(path, RTLD_NOW), and puts back every
 * register, the signal mask and the stack bytes it used, so that a system
 * call it interrupted restarts as if nothing happened. docs/attach.md gives
 * the mechanism, the safety argument and the limits.
 *
 * attach.c is the policy above it for ltr's commands: is the process
 * reachable at all, does it carry the agent already, would its agent find
 * our sessions; then the injection of libltr-heap.so.
 */
#ifndef LTR_INJECT_H
#define LTR_INJECT_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What an injection did, for the caller's report and the benchmark. */
typedef struct ltr_inject_report {
    pid_t tid;              /* the thread that made the call */
    unsigned tries;         /* interrupts until a safe moment was found */
    uint64_t call_ns;       /* from the chosen stop to the detach */
    uint64_t longest_stop_ns; /* longest time any one thread was stopped */
    bool restarted_syscall; /* the thread was in a system call that restarts */
} ltr_inject_report;

/* Default bound of the search for a safe moment. */
#define LTR_INJECT_TIMEOUT_MS 3000u

/* Checks that pid could be injected, touching nothing: it exists and is no
 * zombie, is not stopped or traced, is an x86-64 dynamically linked program
 * with libc and its dlopen, does not ignore SIGSEGV, and (best guess before
 * trying) ptrace is permitted. Returns 0, or -errno with err naming the cause
 * and the fix: -ESRCH no such process or a zombie, -EPERM not permitted,
 * -ENOEXEC static or without libc's dlopen, -EBUSY stopped or traced,
 * -ENOTSUP another architecture or a build of ltr not for x86-64. */
int ltr_inject_check(pid_t pid, ltr_error *err);

/* Makes one thread of pid call dlopen(path, RTLD_NOW). path must be absolute
 * as the target sees it (its root). Returns 0 once the library is loaded;
 * -errno otherwise with err saying why, the target as it was:
 * ltr_inject_check's codes, -ETIMEDOUT no safe moment within timeout_ms,
 * -ECHILD the process exited during the attach, -ESTALE it ran execve during
 * the attach (another program: read it afresh), -ELIBBAD dlopen failed
 * (err holds dlerror's message). rep may be NULL. */
int ltr_inject_dlopen(pid_t pid, const char *path, unsigned timeout_ms, ltr_inject_report *rep,
                      ltr_error *err);

/* ---- the heap agent (attach.c) ---------------------------------------------- */

typedef enum ltr_attach_state {
    LTR_ATTACH_ALREADY = 1, /* carried the agent already: nothing injected */
    LTR_ATTACH_INJECTED,    /* the agent was loaded now */
} ltr_attach_state;

/* Checks pid for a heap session of ours without touching it: the checks of
 * ltr_inject_check when it has no agent yet, and in every case that its
 * agent would report to this user's runtime directory (runtime_dir: ours).
 * Returns 1 if it carries the agent already, 0 if it needs one, -errno with
 * err (-EACCES: it runs as another user or with another runtime directory). */
int ltr_attach_check(pid_t pid, const char *runtime_dir, ltr_error *err);

/* ltr_attach_check, then the injection of the agent at agent_path when pid
 * has none; both again for the new program when pid runs execve meanwhile,
 * within timeout_ms in all. Returns the ltr_attach_state, or -errno with err. */
int ltr_attach_agent(pid_t pid, const char *agent_path, const char *runtime_dir, unsigned timeout_ms,
                     ltr_inject_report *rep, ltr_error *err);

/* Why pid, named by a session's --pid, has not joined it (for `ltr
 * status`): it exited, carries no agent (and why it could not get one), or
 * carries it and has not allocated since the session began. */
void ltr_attach_explain(pid_t pid, const char *runtime_dir, char *out, size_t size);
/* Whether pid runs under a seccomp filter (/proc/PID/status; false if
 * unknown), with the sentence that says what it may do to its agent in out:
 * the agent reaches the recorder through a Unix socket, which a filter may
 * refuse (systemd's RestrictAddressFamilies=), and the process then carries
 * the agent and never joins. ltr cannot read the filter itself. */
bool ltr_seccomp_said(pid_t pid, char *out, size_t size);

/* How ltr_attach_wait ended. */
typedef enum ltr_wait_end {
    LTR_WAIT_DURATION = 0, /* the duration passed */
    LTR_WAIT_SIGNAL,       /* SIGINT, SIGTERM or SIGHUP came */
    LTR_WAIT_EXITED,       /* the process exited */
} ltr_wait_end;

/* Waits until pid exits, duration_ns passes (0: no limit) or SIGINT,
 * SIGTERM or SIGHUP reaches this process (`ltr record --pid`). */
ltr_wait_end ltr_attach_wait(pid_t pid, uint64_t duration_ns);

#endif
