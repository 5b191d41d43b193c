/*
 * tests/inject/test_inject.c — src/inject in-process: the injector loads
 * probe.so into target programs (tests/inject/target.c) blocked in read(),
 * epoll_wait(), nanosleep() and a condition variable, busy in four threads,
 * with SIGSEGV blocked in the main thread, sleeping on after a stop and a
 * continue (restart_syscall), beside a stale copy of the signal
 * trampoline's address, exiting during the attach (a thread held stopped
 * killed under the injector among them), running execve during
 * it, and held in its start-up before libc is mapped;
 * each target checks its own calls and exits 0 only if none saw an EINTR it
 * did not expect or a wrong result. Then every refusal, target untouched
 * (a thread inside a signal handler among them).
 * ptrace needs the right to trace the target: these tests run as root (CI
 * does) or with ptrace allowed for our own children; the ones that need root
 * (another user) skip otherwise, saying so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "inject/inject.h"
#include "prim/prim.h"
#include "util/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The target's parent is a small process of its own, as with a real service
 * (ltr is never the parent of what it attaches to): it reports the target's
 * pid and then its wait status through a pipe. */
typedef struct target {
    pid_t pid, parent;
    int status; /* the parent's pipe */
    int in;   /* its stdin */
    FILE *out; /* its stdout */
    char probe_out[256];
} target;

static char probe[4096];

/* Starts target MODE with extra environment (NAME=VALUE or NULL). */
static target spawn(const char *mode, const char *env1, const char *env2)
{
    target t = {0};
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    snprintf(t.probe_out, sizeof t.probe_out, "%s/probe-%s.out", getenv("TMPDIR"), mode);
    unlink(t.probe_out);
    int report[2];
    assert_int_equal(pipe2(report, O_CLOEXEC), 0);
    t.parent = fork();
    assert_true(t.parent >= 0);
    pid_t child = t.parent ? -1 : fork();
    if (child > 0) {
        int st = 0;
        close(in[1]);
        close(out[0]);
        if (write(report[1], &child, sizeof child) != sizeof child || waitpid(child, &st, 0) != child ||
            write(report[1], &st, sizeof st) != sizeof st)
            _exit(1);
        _exit(0);
    }
    if (child == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        setenv("INJECT_PROBE_OUT", t.probe_out, 1);
        if (env1)
            putenv((char *)env1);
        if (env2)
            putenv((char *)env2);
        execl(tu_test_bin("inject-target"), "inject-target", mode, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(report[1]);
    t.status = report[0];
    assert_int_equal(read(t.status, &t.pid, sizeof t.pid), (ssize_t)sizeof t.pid);
    t.in = in[1];
    t.out = fdopen(out[0], "r");
    return t;
}

static void expect_ready(target *t)
{
    char line[64] = "";
    assert_non_null(fgets(line, sizeof line, t->out));
    assert_string_equal(line, "ready\n");
}

/* spawn, then waits for its "ready". */
static target start(const char *mode, const char *env1, const char *env2)
{
    target t = spawn(mode, env1, env2);
    expect_ready(&t);
    return t;
}

/* Waits until thread tid of t sleeps in a system call (so the attach finds
 * it there, not on its way in). */
static void wait_blocked(pid_t pid, pid_t tid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    for (double end = tu_now_s() + 10; tu_now_s() < end;) {
        char *s = tu_read_file(path);
        char *p = s ? strrchr(s, ')') : NULL;
        int sleeping = p && p[2] == 'S';
        free(s);
        if (sleeping)
            return;
        usleep(1000);
    }
    fail_msg("thread %d never blocked", (int)tid);
}

/* The target's wait status, from its parent. */
static int reap(target *t)
{
    int st = -1;
    assert_int_equal(read(t->status, &st, sizeof st), (ssize_t)sizeof st);
    waitpid(t->parent, NULL, 0);
    close(t->status);
    if (t->in >= 0)
        close(t->in);
    fclose(t->out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int finish(target *t)
{
    if (write(t->in, "go\n", 3) != 3)
        return -1;
    close(t->in); /* busy reads to the end of its input */
    t->in = -1;
    return reap(t);
}

static int probe_lines(const target *t)
{
    char *s = tu_read_file(t->probe_out);
    int n = 0;
    for (char *p = s; p && (p = strstr(p, "loaded ")); p++)
        n++;
    free(s);
    return n;
}

static void inject_ok(target *t, ltr_inject_report *rep)
{
    ltr_error err = {0};
    int rc = ltr_inject_dlopen(t->pid, probe, 5000, rep, &err);
    if (rc)
        fail_msg("inject: %s", err.msg);
    assert_int_equal(probe_lines(t), 1);
}

static void blocked_mode(const char *mode, bool expect_restart)
{
    target t = start(mode, NULL, NULL);
    wait_blocked(t.pid, t.pid);
    ltr_inject_report rep;
    inject_ok(&t, &rep);
    assert_int_equal(rep.tid, t.pid);
    if (expect_restart)
        assert_true(rep.restarted_syscall);
    assert_int_equal(finish(&t), 0); /* the target saw no EINTR and read its line */
}

static void test_blocked_in_read(void **state) { blocked_mode("read", true); }
static void test_blocked_in_epoll_wait(void **state) { blocked_mode("epoll", true); }

static void test_in_nanosleep(void **state)
{
    double t0 = tu_now_s();
    blocked_mode("sleep", true);
    /* the sleep was restarted for what remained, not cut short */
    assert_true(tu_now_s() - t0 >= 1.9);
}

/* A thread that a stop cut in a relative sleep sleeps on in restart_syscall:
 * a wait like the sleep itself (it was refused until the sleep ended). */
static void test_in_sleep_restarted_after_a_stop(void **state)
{
    double t0 = tu_now_s();
    target t = start("longsleep", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    kill(t.pid, SIGSTOP);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)t.pid);
    for (double end = tu_now_s() + 10; tu_now_s() < end; usleep(1000)) {
        char *s = tu_read_file(path), *p = s ? strrchr(s, ')') : NULL;
        bool stopped = p && p[2] == 'T';
        free(s);
        if (stopped)
            break;
    }
    kill(t.pid, SIGCONT);
    wait_blocked(t.pid, t.pid);
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)t.pid);
    char *sc = tu_read_file(path);
    assert_non_null(sc);
    assert_int_equal(atoi(sc), SYS_restart_syscall);
    free(sc);
    ltr_error err = {0};
    ltr_inject_report rep;
    if (ltr_inject_dlopen(t.pid, probe, 2000, &rep, &err) != 0)
        fail_msg("inject: %s", err.msg);
    assert_int_equal(probe_lines(&t), 1);
    assert_int_equal(finish(&t), 0);
    assert_true(tu_now_s() - t0 >= 5.9); /* the sleep went on for what remained */
}

/* The signal trampoline's address in a word of the stack, with no signal
 * frame around it, is no reason to refuse; a real frame is. */
static void test_trampoline_word_is_not_a_handler(void **state)
{
    target t = start("trampoline-word", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    ltr_inject_report rep;
    inject_ok(&t, &rep);
    assert_int_equal(finish(&t), 0);
}

static void test_refuse_inside_a_signal_handler(void **state)
{
    target t = start("inhandler", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    ltr_error err = {0};
    assert_int_equal(ltr_inject_dlopen(t.pid, probe, 300, NULL, &err), -ETIMEDOUT);
    if (!strstr(err.msg, "signal handler"))
        fail_msg("expected a signal handler in: %s", err.msg);
    assert_int_equal(probe_lines(&t), 0);
    assert_int_equal(finish(&t), 0);
}

static void test_condvar_wait(void **state)
{
    target t = start("cond", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    inject_ok(&t, NULL);
    assert_int_equal(finish(&t), 0);
}

static void test_busy_threads(void **state)
{
    target t = start("busy", NULL, NULL);
    ltr_inject_report rep;
    inject_ok(&t, &rep);
    /* a second load is dlopen's own no-op: the constructor does not run again */
    ltr_error err;
    assert_int_equal(ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err), 0);
    assert_int_equal(probe_lines(&t), 1);
    assert_int_equal(finish(&t), 0);
}

static void test_segv_blocked_thread_is_avoided(void **state)
{
    target t = start("segvmask", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    ltr_inject_report rep;
    inject_ok(&t, &rep);
    assert_int_not_equal(rep.tid, t.pid); /* main blocks SIGSEGV: the other thread made the call */
    assert_int_equal(finish(&t), 0);
}

static void test_exit_during_call(void **state)
{
    target t = start("read", "INJECT_PROBE_EXIT=7", NULL);
    wait_blocked(t.pid, t.pid);
    ltr_error err;
    assert_int_equal(ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err), -ECHILD);
    assert_non_null(strstr(err.msg, "exited during the attach"));
    assert_int_equal(reap(&t), 7); /* its own exit, not a signal of ours */
}

static void test_exit_while_looking(void **state)
{
    /* both threads live inside libc's memset: no safe moment comes before it
     * exits by itself; the attach must end with that, not hang */
    target t = start("libc", NULL, NULL);
    ltr_error err;
    double t0 = tu_now_s();
    int rc = ltr_inject_dlopen(t.pid, probe, 20000, NULL, &err);
    assert_true(tu_now_s() - t0 < 15);
    if (rc != 0 && rc != -ECHILD) /* a rare moment in the vDSO's clock_gettime is a safe one */
        fail_msg("%d %s", rc, err.msg);
    assert_int_equal(reap(&t), 0);
}

/* A process that exits (exit_group, from its other thread) while the
 * injector holds its main thread stopped: the attach ends, and no thread of
 * it stays traced, for a thread ptrace holds stays traced as a zombie, and
 * its parent could not reap the process while ltr ran. CI's
 * test_exit_while_looking hung so once, in the reap. Twenty times over. */
static void test_exit_while_held(void **state)
{
    for (int i = 0; i < 20; i++) {
        target t = start("exit-when-held", NULL, NULL);
        ltr_error err;
        int rc = ltr_inject_dlopen(t.pid, probe, 10000, NULL, &err);
        if (rc == 0) /* a moment outside memset, rare, was a safe one: loaded */
            kill(t.pid, SIGKILL);
        else if (rc != -ECHILD)
            fail_msg("round %d: %d %s", i, rc, err.msg);
        struct pollfd p = {t.status, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1)
            fail_msg("round %d: pid %d, which exited during the attach, was not reaped by its parent in 10 s: "
                     "a thread of it left traced", i, (int)t.pid);
        int st = reap(&t);
        assert_true(st == 0 || (rc == 0 && st == 128 + SIGKILL));
    }
}

/* A helper process that writes a line to t's stdin once a tracer holds t
 * (TracerPid): the injector is at work then, its view of t read. */
static pid_t line_when_traced(const target *t)
{
    pid_t h = fork();
    assert_true(h >= 0);
    if (h)
        return h;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)t->pid);
    for (double end = tu_now_s() + 10; tu_now_s() < end;) {
        char *s = tu_read_file(path), *p = s ? strstr(s, "TracerPid:") : NULL;
        int tracer = p ? atoi(p + 10) : 0;
        free(s);
        if (tracer)
            _exit(write(t->in, "x\n", 2) == 2 ? 0 : 1);
    }
    _exit(1);
}

static void expect_helper_done(pid_t h)
{
    int st = -1;
    assert_int_equal(waitpid(h, &st, 0), h);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A process that runs execve while the injector looks for a moment is
 * another program: libc's addresses read of the one before do not apply,
 * and /proc/PID/mem opened on it reads nothing. Every stack read failed,
 * refused 3 s long as 'in a signal handler' (test_snapshot_cli's perl,
 * attached to as its shell's child was still on its way to exec it); now
 * the injector says so at once, and the attach takes the new program. */
static void test_exec_during_attach(void **state)
{
    target t = start("exec-read", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    pid_t h = line_when_traced(&t);
    ltr_error err = {0};
    int rc = ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err);
    expect_helper_done(h);
    if (rc != -ESTALE || !strstr(err.msg, "started another program"))
        fail_msg("an execve during the injection: %d %s", rc, err.msg);
    assert_int_equal(probe_lines(&t), 0);
    assert_int_equal(finish(&t), 0);

    char dir[4096];
    assert_int_equal(ltr_runtime_dir(dir, sizeof dir, &err), 0);
    target u = start("exec-read", NULL, NULL);
    wait_blocked(u.pid, u.pid);
    h = line_when_traced(&u);
    rc = ltr_attach_agent(u.pid, probe, dir, 5000, NULL, &err);
    expect_helper_done(h);
    if (rc != LTR_ATTACH_INJECTED)
        fail_msg("an execve during the attach: %d %s", rc, err.msg);
    assert_int_equal(probe_lines(&u), 1); /* in the program it exec'd */
    assert_int_equal(finish(&u), 0);
}

/* Right after its execve a program maps the loader alone, libc next: it
 * was refused as 'statically linked' (test_snapshot_cli's attach to a perl
 * its shell had just exec'd, 1 in 100 runs). A FIFO as LD_PRELOAD holds its
 * loader there until a helper opens and closes it (the preload is then
 * skipped, said on stderr). */
static void test_attach_during_start_up(void **state)
{
    char fifo[512], env[600];
    snprintf(fifo, sizeof fifo, "%s/preload-fifo", getenv("TMPDIR"));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(env, sizeof env, "LD_PRELOAD=%s", fifo);
    target t = spawn("read", env, NULL);
    wait_blocked(t.pid, t.pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)t.pid);
    char *maps = tu_read_file(path);
    assert_null(strstr(maps, "libc.so")); /* held before libc */
    free(maps);
    pid_t h = fork();
    assert_true(h >= 0);
    if (h == 0) {
        usleep(200000);
        int fd = open(fifo, O_WRONLY | O_CLOEXEC);
        _exit(fd >= 0 && close(fd) == 0 ? 0 : 1);
    }
    ltr_error err = {0};
    int rc = ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err);
    expect_helper_done(h);
    if (rc != 0)
        fail_msg("inject during the start-up: %s", err.msg);
    expect_ready(&t);
    assert_int_equal(probe_lines(&t), 1);
    assert_int_equal(finish(&t), 0);
}

/* Another thread inside the loader's lock (a constructor that sleeps 4 s):
 * no moment of main is safe, since its dlopen would wait, and ltr with it
 * (a constructor that never returns hung root's ltr for good). Once the
 * lock is let go, the attach goes through. */
static void test_loader_lock_held_by_another_thread(void **state)
{
    char lib[4200];
    snprintf(lib, sizeof lib, "INJECT_HOLD_LIB=%s", probe);
    target t = start("loaderlock", lib, "INJECT_PROBE_HOLD=4");
    wait_blocked(t.pid, t.pid);
    ltr_error err = {0};
    int rc = ltr_inject_dlopen(t.pid, probe, 1000, NULL, &err);
    /* the message names the last thread's reason: main's, or the holder's */
    if (rc != -ETIMEDOUT || (!strstr(err.msg, "holds a lock of the loader") && !strstr(err.msg, "SIGSEGV blocked")))
        fail_msg("expected no safe moment, main's for the loader's lock: %d %s", rc, err.msg);
    assert_int_equal(probe_lines(&t), 0); /* the holder's constructor has not returned */
    for (double end = tu_now_s() + 30; probe_lines(&t) == 0 && tu_now_s() < end;) /* the holder lets go */
        usleep(10000);
    if ((rc = ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err)) != 0)
        fail_msg("after the lock was let go: %s", err.msg);
    assert_int_equal(finish(&t), 0);
}

/* The state letter of /proc/PID/stat, or 0. */
static char proc_state(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *s = tu_read_file(path);
    char *p = s ? strrchr(s, ')') : NULL;
    char c = p ? p[2] : 0;
    free(s);
    return c;
}

/* The process is stopped (SIGSTOP) during the call: the call ends and the
 * thread rejoins the stop at the detach, so the process is still stopped
 * when the attach returns, and reads its line once continued. Listening for
 * the SIGCONT instead hung ltr, SIGINT held, for as long as none came, and
 * past it too (the trap that follows a SIGCONT was listened to again): a
 * helper continues the target after 20 s here, and kills it 10 s later. */
static void test_stopped_during_call(void **state)
{
    target t = start("read", "INJECT_PROBE_STOP=1", NULL);
    wait_blocked(t.pid, t.pid);
    pid_t helper = fork();
    if (helper == 0) {
        sleep(20);
        kill(t.pid, SIGCONT);
        sleep(10);
        kill(t.pid, SIGKILL); /* a wait that the SIGCONT did not end either */
        _exit(0);
    }
    ltr_error err = {0};
    int rc = ltr_inject_dlopen(t.pid, probe, 5000, NULL, &err);
    char st = proc_state(t.pid);
    for (double end = tu_now_s() + 10; st == 'R' && tu_now_s() < end; st = proc_state(t.pid))
        usleep(1000); /* the detached thread on its way back into the stop */
    kill(helper, SIGKILL);
    waitpid(helper, NULL, 0);
    if (rc != 0)
        fail_msg("inject: %s", err.msg);
    assert_int_equal(st, 'T'); /* returned while the stop holds, not at a SIGCONT */
    assert_int_equal(probe_lines(&t), 1);
    kill(t.pid, SIGCONT);
    assert_int_equal(finish(&t), 0); /* its read saw no EINTR */
}

/* ---- refusals ------------------------------------------------------------- */

static void expect_refusal(pid_t pid, int code, const char *words)
{
    ltr_error err = {0};
    assert_int_equal(ltr_inject_dlopen(pid, probe, 2000, NULL, &err), -code);
    if (!strstr(err.msg, words))
        fail_msg("expected \"%s\" in: %s", words, err.msg);
}

static void test_refuse_no_such_process(void **state)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    expect_refusal(p, ESRCH, "no such process");
}

static void test_refuse_zombie(void **state)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    for (double end = tu_now_s() + 10; tu_now_s() < end;) { /* until it is a zombie */
        char *s = tu_read_file(path);
        char *z = s ? strrchr(s, ')') : NULL;
        int zombie = z && z[2] == 'Z';
        free(s);
        if (zombie)
            break;
        usleep(1000);
    }
    expect_refusal(p, ESRCH, "zombie");
    waitpid(p, NULL, 0);
}

static void test_refuse_static(void **state)
{
    target t = {0};
    int in[2];
    assert_int_equal(pipe(in), 0);
    t.pid = fork();
    if (t.pid == 0) {
        dup2(in[0], 0);
        close(in[1]);
        execl(tu_test_bin("inject-static"), "inject-static", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    wait_blocked(t.pid, t.pid);
    expect_refusal(t.pid, ENOEXEC, "statically linked");
    close(in[1]);
    int st;
    waitpid(t.pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* untouched: it read its end of file */
}

static void test_refuse_stopped_and_traced(void **state)
{
    target t = start("read", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    kill(t.pid, SIGSTOP);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)t.pid);
    for (double end = tu_now_s() + 10; tu_now_s() < end; usleep(1000)) {
        char *s = tu_read_file(path), *z = s ? strrchr(s, ')') : NULL;
        int stopped = z && z[2] == 'T';
        free(s);
        if (stopped)
            break;
    }
    int st;
    expect_refusal(t.pid, EBUSY, "kill -CONT");
    kill(t.pid, SIGCONT);
    /* traced by someone else (here: us, as a debugger would) */
    assert_int_equal(ptrace(PTRACE_SEIZE, t.pid, 0, 0), 0);
    expect_refusal(t.pid, EBUSY, "being traced by pid");
    ptrace(PTRACE_INTERRUPT, t.pid, 0, 0);
    waitpid(t.pid, &st, __WALL);
    ptrace(PTRACE_DETACH, t.pid, 0, 0);
    assert_int_equal(probe_lines(&t), 0);
    assert_int_equal(finish(&t), 0);
}

static void test_refuse_relative_path_and_ignored_segv(void **state)
{
    target t = start("read", NULL, NULL);
    ltr_error err;
    assert_int_equal(ltr_inject_dlopen(t.pid, "probe.so", 1000, NULL, &err), -EINVAL);
    assert_int_equal(finish(&t), 0);
}

/* Another user's process, and attaching as another user: needs root, to
 * be both users. */
static void test_refuse_other_user(void **state)
{
    if (geteuid() != 0) {
        printf("skipped: needs root to run a process as another user\n");
        skip();
    }
    target t = start("read", NULL, NULL);
    wait_blocked(t.pid, t.pid);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t p = fork();
    if (p == 0) { /* as nobody, without CAP_SYS_PTRACE */
        if (setgid(65534) || setuid(65534))
            _exit(99);
        ltr_error err = {0};
        int rc = ltr_inject_dlopen(t.pid, probe, 1000, NULL, &err);
        dprintf(fds[1], "%d %s", rc, err.msg);
        _exit(0);
    }
    close(fds[1]);
    char buf[1024] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    assert_true(n > 0);
    waitpid(p, NULL, 0);
    int rc = atoi(buf);
    assert_true(rc == -EPERM || rc == -ESRCH); /* ESRCH: /proc hides it (hidepid) */
    if (rc == -EPERM && !strstr(buf, "another user") && !strstr(buf, "Yama"))
        fail_msg("message: %s", buf);
    assert_int_equal(probe_lines(&t), 0);
    assert_int_equal(finish(&t), 0);
    /* and ltr_attach_check refuses a process of another user for our sessions */
    pid_t q = fork();
    if (q == 0) {
        if (setgid(65534) || setuid(65534))
            _exit(99);
        execl(tu_test_bin("inject-target"), "inject-target", "sleep", (char *)NULL);
        _exit(127);
    }
    char dir[4096];
    ltr_error err;
    assert_int_equal(ltr_runtime_dir(dir, sizeof dir, &err), 0);
    /* until it has exec'd and ld.so has mapped libc (before, it is a
     * program without libc's dlopen, refused as such: ENOEXEC) */
    for (double end = tu_now_s() + 10; tu_now_s() < end; usleep(1000)) {
        char path[64], exe[256] = "";
        snprintf(path, sizeof path, "/proc/%d/exe", (int)q);
        if (readlink(path, exe, sizeof exe - 1) <= 0 || !strstr(exe, "inject-target"))
            continue;
        tu_result m = tu_run("grep -c 'libc\\.so' /proc/%d/maps", (int)q);
        bool mapped = atoi(m.out) > 0;
        tu_free(&m);
        if (mapped)
            break;
    }
    assert_int_equal(ltr_attach_check(q, dir, &err), -EACCES);
    assert_non_null(strstr(err.msg, "runs as user"));
    kill(q, SIGKILL);
    waitpid(q, NULL, 0);
}

static void test_attach_check_runtime_dir(void **state)
{
    char dir[4096];
    ltr_error err;
    assert_int_equal(ltr_runtime_dir(dir, sizeof dir, &err), 0);
    target t = start("read", NULL, NULL);
    int rc = ltr_attach_check(t.pid, dir, &err);
    if (rc != 0) /* same environment: it needs the agent */
        fail_msg("%d %s", rc, err.msg);
    assert_int_equal(finish(&t), 0);
    char other[512], env[600];
    snprintf(other, sizeof other, "%s/other", getenv("TMPDIR"));
    mkdir(other, 0700);
    snprintf(env, sizeof env, "LTR_RUNTIME_DIR=%s", other);
    target u = start("read", env, NULL);
    assert_int_equal(ltr_attach_check(u.pid, dir, &err), -EACCES);
    assert_non_null(strstr(err.msg, "LTR_RUNTIME_DIR="));
    assert_int_equal(finish(&u), 0);
}

int main(void)
{
    const char *p = tu_test_bin("libinjectprobe.so");
    snprintf(probe, sizeof probe, "%s", p);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_blocked_in_read, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_blocked_in_epoll_wait, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_in_nanosleep, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_in_sleep_restarted_after_a_stop, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_trampoline_word_is_not_a_handler, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_inside_a_signal_handler, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_condvar_wait, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_busy_threads, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_segv_blocked_thread_is_avoided, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_exit_during_call, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_exit_while_looking, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_exit_while_held, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_exec_during_attach, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attach_during_start_up, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_loader_lock_held_by_another_thread, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stopped_during_call, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_no_such_process, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_zombie, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_static, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_stopped_and_traced, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_relative_path_and_ignored_segv, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refuse_other_user, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attach_check_runtime_dir, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
