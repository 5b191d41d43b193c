/*
 * tests/e2e/test_watch.c — `ltr watch` end to end against
 * tests/programs/watch_target.c, a service that churns and, from SIGUSR1
 * on, leaks from leak_on_signal(): it triggers on the first poll where both
 * conditions hold and not before, once by default, and the saved trace's top
 * outstanding stack is the leak's, with the marker and the snapshot in it;
 * auto fires on a slow leak after its warm-up; --support-bundle writes its
 * .tar.zst beside the trace, with the files it lists, past a planted name
 * (and past one taken during the save, held till then by the enospc shim);
 * SIGTERM and SIGINT leave no session, recorder or runtime file behind and
 * write nothing, nor turn off heap snapshots the user had enabled; a
 * watched --pid that exits (kills itself) has its recording saved, with the
 * leak it ran before and a bundle that says why, and ends it with status 3; by
 * --name a restarted service is followed, of two the one watched is
 * said once, one started through a link is named by its executable, one
 * of another user is said with its user; the systemd unit verifies and its
 * command line runs; bad input is refused before anything starts, an
 * attach refused is said whole; a relative --record-to is the caller's; the
 * heap agent's own memory is never taken for growth. The by-name tests
 * watch a copy of watch-target of their own name (tu_own_program): another
 * run's watch-target beside them on the machine was watched instead.
 * Attaching
 * the agent needs ptrace: as root here (CI runs as root), the tests skip
 * otherwise. The trace holds no process event of another process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/system_events.h"
#include "base/units.h"
#include "util/testutil.h"

#include <ltr/trace.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LTR tu_ltr()
#define DEADLINE_S 90.0
#define LTR_WATCH_WARMUP_POLLS_E2E 6 /* src/watch/watch.h LTR_WATCH_WARMUP_POLLS; e2e tests see the binary only */

/* Every process spawned by the test running, killed by its teardown: a
 * failed assertion does not leave a watch or a service behind. */
static pid_t spawned[16];
static char spawned_out[16][512]; /* where each writes, for expect_exit's message */
static int nspawned;

static int teardown(void **state)
{
    for (int i = 0; i < nspawned; i++)
        if (kill(spawned[i], SIGKILL) == 0)
            waitpid(spawned[i], NULL, 0);
    nspawned = 0;
    return tu_teardown_sandbox(state);
}

/* A shell command in the background, its stdout and stderr into out. */
static pid_t spawn(const char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pid_t spawn(const char *out, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out, "w", stdout) || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    if (nspawned < (int)(sizeof spawned / sizeof *spawned)) {
        snprintf(spawned_out[nspawned], sizeof *spawned_out, "%s", out);
        spawned[nspawned++] = pid;
    }
    return pid;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Waits until the file holds text n times (or the deadline: fails). */
static char *wait_for(const char *path, const char *text, int n)
{
    double end = tu_now_s() + DEADLINE_S;
    for (;;) {
        char *s = tu_read_file(path);
        int k = 0;
        for (const char *p = s ? s : ""; (p = strstr(p, text)); p++)
            k++;
        if (k >= n)
            return s;
        free(s);
        if (tu_now_s() > end)
            fail_msg("'%s' did not appear %d times in %s", text, n, path);
        nap_ms(50);
    }
}

/* pid, reaped, is no longer the teardown's to kill: it may name another process now. */
static void forget(pid_t pid)
{
    for (int i = 0; i < nspawned; i++)
        if (spawned[i] == pid) {
            nspawned--;
            memcpy(spawned_out[i], spawned_out[nspawned], sizeof *spawned_out);
            spawned[i--] = spawned[nspawned];
        }
}

static int wait_exit(pid_t pid)
{
    double end = tu_now_s() + DEADLINE_S;
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (tu_now_s() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("ltr watch did not end");
        }
        nap_ms(50);
    }
    forget(pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits for pid, spawned, to exit with want; else fails with what it
 * wrote: a watch that exited 1 once under load (session 38) left its
 * status alone to go by. */
static void expect_exit(pid_t pid, int want)
{
    char out[512] = "";
    for (int i = 0; i < nspawned; i++)
        if (spawned[i] == pid)
            memcpy(out, spawned_out[i], sizeof out); /* forget() moves the entries */
    int st = wait_exit(pid);
    if (st != want) {
        char *said = out[0] ? tu_read_file(out) : NULL;
        fail_msg("exit status %d, not %d; it wrote:\n%s", st, want, said ? said : "(nothing)");
    }
}

/* The service prog, started without ltr; its pid from its "ready" line. */
static pid_t start_program(const char *dir, const char *prog, const char *name, const char *args)
{
    char out[512];
    snprintf(out, sizeof out, "%s/%s.out", dir, name);
    spawn(out, "exec %s %s", prog, args);
    char *s = wait_for(out, "ready", 1);
    pid_t pid = (pid_t)atoi(strstr(s, "ready") + 6);
    free(s);
    assert_true(pid > 0);
    return pid;
}

static pid_t start_target(const char *dir, const char *name, const char *args)
{
    return start_program(dir, tu_test_bin("watch-target"), name, args);
}

static bool skip_unless_root(void)
{
    if (geteuid() == 0)
        return false;
    printf("skipped: attaching the agent to the service needs ptrace, here as root\n");
    return true;
}

/* Whether the line at line (up to its newline) holds text. */
static bool line_has(const char *line, const char *text)
{
    const char *at = strstr(line, text), *end = strchr(line, '\n');
    return at && (!end || at < end);
}

/* The growth of a monitor line ("growth +38.1 MiB"), bytes. */
static int64_t growth_of(const char *line)
{
    const char *g = strstr(line, "growth ");
    assert_non_null(g);
    g += 7;
    int sign = *g == '-' ? -1 : 1;
    g += *g == '+' || *g == '-';
    char num[32];
    size_t n = strcspn(g, " ");
    snprintf(num, sizeof num, "%.*s %.3s", (int)n, g, g + n + 1);
    uint64_t v = 0;
    if (strncmp(num, "0 B", 3) && ltr_size_parse(num, &v) != 0)
        fail_msg("cannot read the growth of '%s'", line);
    return sign * (int64_t)v;
}

static void test_trigger_on_growth(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 1024 2048"); /* +40 MiB/s once signalled */
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --growth-above 8M "
                         "--private-bytes-above 1M --interval 0.5 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 4)); /* four polls of the steady service: no trigger */
    char *s = tu_read_file(out);
    assert_null(strstr(s, "trigger"));
    free(s);
    char path[512];
    snprintf(path, sizeof path, "%s/t.ltr", dir);
    assert_int_equal(access(path, F_OK), -1);
    kill(svc, SIGUSR1);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    s = tu_read_file(out);
    /* once (the default), right after the first poll where both held: that
     * poll's line says so. Its growth is shown rounded: the service grows 2
     * MiB a tick, and a poll that comes after exactly four shows 8 MiB and
     * a few KiB as "+8.00 MiB" (under load this test failed so: "no line
     * showed growth over 8 MiB"); no poll before it showed more. */
    const char *t = strstr(s, "trigger 1: ");
    assert_non_null(t);
    assert_null(strstr(t + 1, "trigger 2"));
    assert_non_null(strstr(t, path));
    const char *met = NULL;
    for (const char *line = s; line && *line && line < t; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (!line_has(line, "  pid "))
            continue;
        if (line_has(line, "condition met"))
            met = met ? met : line;
        else if (!met)
            assert_true(growth_of(line) <= 8 << 20);
    }
    assert_non_null(met);
    assert_true(growth_of(met) >= 8 << 20);
    assert_true(strchr(met, '\n') + 1 == t - strlen("ltr watch: ")); /* the next line */
    free(s);
    /* the trace: the leak on top, the marker with the condition, a snapshot */
    tu_result a = tu_run("%s analyze %s --top 1", LTR, path);
    assert_int_equal(a.status, 0);
    const char *held = strstr(a.out, "stacks holding memory");
    assert_non_null(held);
    const char *next = strstr(held, "stacks with the most");
    const char *leak = strstr(held, "leak_on_signal");
    assert_true(leak && (!next || leak < next));
    tu_free(&a);
    tu_result d = tu_run("%s dump %s", LTR, path);
    assert_non_null(strstr(d.out, "ltr watch: trigger 1: pid"));
    assert_non_null(strstr(d.out, "SnapshotEnd"));
    tu_free(&d);
    /* the names of its frames went into it, to read it elsewhere */
    tu_result i = tu_run("%s info %s", LTR, path);
    assert_non_null(strstr(i.out, " addresses named where it was recorded"));
    assert_non_null(strstr(i.out, "damage:      none"));
    tu_free(&i);
    snprintf(path, sizeof path, "%s/t-2.ltr", dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* --growth-above auto on a slow steady leak under churn: it fires, not
 * before its warm-up and the polls the rise must hold, and the trace names
 * the leak. (That heavy churn without a leak does not fire is checked
 * exactly, on series of polls, in tests/watch/test_watch_cond.c, and
 * measured on python3 and perl in bench/watch.) */
static void test_auto_fires_on_slow_leak(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 512 -128"); /* 2.5 MiB/s from the start */
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --growth-above auto --interval 0.3 --monitor",
                    LTR, (int)svc, dir);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    char *s = tu_read_file(out);
    const char *t = strstr(s, "trigger 1: ");
    if (!t)
        fail_msg("no trigger: %s", s);
    assert_non_null(strstr(t, "stayed above"));
    int polls = 0;
    for (const char *p = s; (p = strstr(p, "  pid ")) && p < t; p++)
        polls++;
    if (polls < LTR_WATCH_WARMUP_POLLS_E2E + 3)
        fail_msg("fired after %d polls, within the warm-up: %s", polls, s);
    free(s);
    char path[512];
    snprintf(path, sizeof path, "%s/t.ltr", dir);
    tu_result a = tu_run("%s analyze %s --top 1", LTR, path);
    assert_int_equal(a.status, 0);
    const char *held = strstr(a.out, "stacks holding memory");
    assert_non_null(held);
    const char *leak = strstr(held, "leak_on_signal"), *next = strstr(held, "stacks with the most");
    assert_true(leak && (!next || leak < next));
    tu_free(&a);
}

/* --support-bundle: a bundle beside the trace with the listed files; a name
 * planted where the first bundle would go is skipped, never followed. */
static void test_support_bundle(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    char victim[512], planted[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(planted, sizeof planted, "%s/t.tar.zst", dir);
    tu_write_file(dir, "victim", "keep me\n");
    assert_int_equal(symlink(victim, planted), 0);
    pid_t svc = start_target(dir, "svc", "50 256 2048");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --growth-above 8M --interval 0.3 "
                         "--support-bundle --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 2));
    kill(svc, SIGUSR1);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    char *s = tu_read_file(out);
    char want[600];
    snprintf(want, sizeof want, "trace saved to %s/t-2.ltr, support bundle %s/t-2.tar.zst", dir, dir);
    if (!strstr(s, want))
        fail_msg("wanted '%s' in: %s", want, s);
    free(s);
    char *v = tu_read_file(victim);
    assert_string_equal(v, "keep me\n");
    free(v);
    snprintf(want, sizeof want, "%s/t.ltr", dir);
    assert_int_equal(access(want, F_OK), -1);
    tu_result x = tu_run("cd %s && tar --zstd -xf t-2.tar.zst && find t-2 -type f | sort", dir);
    assert_int_equal(x.status, 0);
    static const char *const entries[] = {"t-2/README.txt", "t-2/proc/status", "t-2/proc/smaps_rollup",
                                          "t-2/proc/maps", "t-2/proc/limits", "t-2/proc/cmdline",
                                          "t-2/profile.txt", "t-2/status.txt", "t-2/monitor.txt",
                                          "t-2/recorder.log", "t-2/host/uname.txt", "t-2/host/meminfo",
                                          "t-2/host/uptime", "t-2/host/cpuinfo"};
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++)
        if (!strstr(x.out, entries[i]))
            fail_msg("the bundle has no %s: %s", entries[i], x.out);
    assert_null(strstr(x.out, "environ"));
    tu_free(&x);
    static const char *const facts[][2] = {
        {"proc/status", "RssAnon:"},        {"proc/cmdline", "watch-target"},
        {"status.txt", "session 'watch-"},  {"status.txt", "reaches back"},
        {"monitor.txt", "  private "},      {"profile.txt", "Profile: heap"},
        {"README.txt", "trigger 1 at "},    {"host/meminfo", "MemAvailable:"},
        {"recorder.log", "started (memory mode)"},
    };
    for (size_t i = 0; i < sizeof facts / sizeof *facts; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/t-2/%s", dir, facts[i][0]);
        char *text = tu_read_file(path);
        if (!text || !strstr(text, facts[i][1]))
            fail_msg("%s does not say '%s'", facts[i][0], facts[i][1]);
        free(text);
    }
}

/* Nothing triggers; SIGTERM or Ctrl-C (SIGINT) ends it: the session and its
 * recorder are gone, nothing of it is left in the runtime directory, nothing
 * was written, and the service runs on undisturbed. */
static void test_signal_leaves_nothing(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    static const int sigs[] = {SIGTERM, SIGINT};
    pid_t svc = start_target(dir, "svc", "50 256 0");
    for (size_t i = 0; i < 2; i++) {
        char out[512];
        snprintf(out, sizeof out, "%s/watch%zu.out", dir, i);
        pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                             "--interval 0.2 --monitor", LTR, (int)svc, dir);
        free(wait_for(out, "  pid ", 2));
        tu_result st = tu_run("%s status", LTR);
        const char *rec = strstr(st.out, "recorder pid ");
        assert_non_null(strstr(st.out, "session 'watch-"));
        assert_non_null(rec);
        pid_t recorder = (pid_t)atoi(rec + strlen("recorder pid "));
        tu_free(&st);
        kill(w, sigs[i]);
        expect_exit(w, 0);
        char *s = tu_read_file(out);
        assert_non_null(strstr(s, "ended by"));
        free(s);
        st = tu_run("%s status", LTR);
        assert_null(strstr(st.out, "watch-"));
        tu_free(&st);
        double end = tu_now_s() + DEADLINE_S; /* the recorder exits after its reply */
        while (kill(recorder, 0) == 0 && tu_now_s() < end)
            nap_ms(20);
        assert_int_equal(kill(recorder, 0), -1);
        tu_result ls = tu_run("ls -A %s/run", dir);
        if (strstr(ls.out, "watch-"))
            fail_msg("left in the runtime directory: %s", ls.out);
        tu_free(&ls);
        char path[512];
        snprintf(path, sizeof path, "%s/t.ltr", dir);
        assert_int_equal(access(path, F_OK), -1);
    }
    /* and the service was never disturbed: it still runs */
    assert_int_equal(kill(svc, 0), 0);
    kill(svc, SIGKILL);
}

/* Heap snapshots the user enabled before the watch (periodic ones for a
 * slow leak's --trend) are left on when it ends; it turned them off. */
static void test_snapshots_of_others_stay(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    tu_expect_ok(tu_run("%s start heapsnapshot --instance slow", LTR));
    tu_expect_ok(tu_run("%s snapshotconfig heap --pid %d enable", LTR, (int)svc));
    tu_expect_ok(tu_run("%s enableperiodicsnapshot heap 60 %d", LTR, (int)svc));
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 2));
    kill(w, SIGTERM);
    expect_exit(w, 0);
    tu_result r = tu_run("%s snapshotconfig heap --pid %d", LTR, (int)svc);
    if (!strstr(r.out, "enabled, table kept, a snapshot every 60 s"))
        fail_msg("the user's snapshots after the watch: %s%s", r.out, r.err);
    tu_free(&r);
    /* and one the watch turned on itself goes off again at its end */
    tu_expect_ok(tu_run("%s snapshotconfig heap --pid %d disable", LTR, (int)svc));
    snprintf(out, sizeof out, "%s/watch2.out", dir);
    w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                   "--interval 0.2 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 2));
    kill(w, SIGTERM);
    expect_exit(w, 0);
    r = tu_run("%s snapshotconfig heap --pid %d", LTR, (int)svc);
    assert_non_null(strstr(r.out, "disabled"));
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel --instance slow", LTR));
    kill(svc, SIGKILL);
}

/* Killed outright, the watch's session is cancelled by its recorder. */
static void test_killed_watch_cancels(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 1));
    kill(w, SIGKILL);
    expect_exit(w, 128 + SIGKILL);
    double end = tu_now_s() + DEADLINE_S;
    for (;;) {
        tu_result st = tu_run("%s status", LTR);
        bool gone = !strstr(st.out, "watch-");
        tu_free(&st);
        if (gone)
            break;
        assert_true(tu_now_s() < end);
        nap_ms(100);
    }
    kill(svc, SIGKILL);
}

/* Its session stopped or cancelled by another command, or its recorder
 * killed: the watch ends with an error saying which. It polled on for good,
 * every line "recorder does not answer", and its next trigger would have
 * had nothing to save. */
static void test_session_gone_ends_watch(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 1));
    tu_result st = tu_run("%s status", LTR);
    const char *name = strstr(st.out, "session 'watch-");
    assert_non_null(name);
    int wpid = atoi(name + strlen("session 'watch-"));
    tu_free(&st);
    tu_expect_ok(tu_run("%s cancel --instance watch-%d", LTR, wpid));
    expect_exit(w, 1);
    char *s = tu_read_file(out);
    if (!strstr(s, "was stopped or cancelled by another command") || !strstr(s, "the watch ends"))
        fail_msg("the watch of a cancelled session said:\n%s", s);
    free(s);
    /* its recorder killed: said so, and its dead session forgotten, not
     * left in 'ltr status' for the user to cancel */
    snprintf(out, sizeof out, "%s/watch2.out", dir);
    w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 100G "
                   "--interval 0.2 --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "  pid ", 1));
    st = tu_run("%s status", LTR);
    const char *rec = strstr(st.out, "recorder pid ");
    assert_non_null(rec);
    kill((pid_t)atoi(rec + strlen("recorder pid ")), SIGKILL);
    tu_free(&st);
    expect_exit(w, 1);
    s = tu_read_file(out);
    if (!strstr(s, "its recorder died (killed or crashed)") || !strstr(s, "the watch ends"))
        fail_msg("the watch of a killed recorder said:\n%s", s);
    free(s);
    st = tu_run("%s status", LTR);
    assert_null(strstr(st.out, "watch-"));
    tu_free(&st);
    assert_int_equal(kill(svc, 0), 0); /* the service runs on */
    kill(svc, SIGKILL);
}

static void test_pid_gone(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 1024");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --growth-above 1G --interval 0.2 "
                         "--support-bundle --monitor", LTR, (int)svc, dir);
    free(wait_for(out, "heap agent to settle", 1)); /* its heap events come into the session */
    kill(svc, SIGUSR1);
    nap_ms(500);
    kill(svc, SIGUSR2); /* it kills itself, as the OOM killer would: its parent (we) reaps it later */
    expect_exit(w, 3);
    char *s = tu_read_file(out);
    char want[1200];
    snprintf(want, sizeof want, "ltr watch: pid %d exited (killed by SIGKILL); the last ", (int)svc);
    const char *said = strstr(s, want);
    snprintf(want, sizeof want, " s it recorded saved to %s/t.ltr, support bundle %s/t.tar.zst\n", dir, dir);
    if (!said || !strstr(said, want))
        fail_msg("wanted the exit and the save said in:\n%s", s);
    assert_null(strstr(s, "error")); /* said once, as what it is */
    free(s);
    /* the lead-up to its end: the leak it started before */
    tu_result a = tu_run("%s analyze %s/t.ltr --top 3", LTR, dir);
    assert_int_equal(a.status, 0);
    if (!strstr(a.out, "leak_on_signal"))
        fail_msg("the saved trace does not name the leak's stack:\n%s", a.out);
    tu_free(&a);
    tu_result d = tu_run("%s dump %s/t.ltr | grep -c 'exited (killed by SIGKILL)'", LTR, dir);
    assert_int_equal(atoi(d.out), 1); /* the marker */
    tu_free(&d);
    tu_expect_ok(tu_run("cd %s && tar --zstd -xf t.tar.zst", dir));
    char readme[600];
    snprintf(readme, sizeof readme, "%s/t/README.txt", dir);
    char *r = tu_read_file(readme);
    snprintf(want, sizeof want, "as pid %d ended: the process exited (killed by SIGKILL)", (int)svc);
    if (!r || !strstr(r, want))
        fail_msg("the bundle's README does not say '%s':\n%s", want, r ? r : "(none)");
    free(r);
}

/* By name: the service restarted (a new pid) is followed. */
static void test_name_follows_restart(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    const char *own, *prog = tu_own_program(dir, "watch-target", "wt", &own);
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --name %s --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2 --monitor", LTR, own, dir);
    free(wait_for(out, "waiting for one", 1)); /* none runs yet: it says it waits */
    pid_t a = start_program(dir, prog, "a", "50 256 0");
    char want[64];
    snprintf(want, sizeof want, "watching pid %d", (int)a);
    free(wait_for(out, want, 1));
    kill(a, SIGKILL);
    pid_t b = start_program(dir, prog, "b", "50 256 0");
    snprintf(want, sizeof want, "watching pid %d", (int)b);
    free(wait_for(out, want, 1));
    snprintf(want, sizeof want, "  pid %d  private", (int)b);
    free(wait_for(out, want, 1));
    kill(w, SIGTERM);
    expect_exit(w, 0);
    kill(b, SIGKILL);
}

/* By name, a service started through a link: ps calls it by the link's
 * name, its executable has another. Watch waits for the name given, and
 * says the pid and the name that watches it (it waited in silence for
 * good: --name python3 beside a running python3 -> python3.11). */
static void test_name_of_a_link_said(void **state)
{
    const char *dir = *state;
    char out[512], link[32]; /* this run's own: no other test's process is called so */
    snprintf(link, sizeof link, "svc-%d", (int)getpid());
    snprintf(out, sizeof out, "%s/svc.out", dir);
    spawn(out, "ln -s %s %s/%s && exec %s/%s 50 256 0", tu_test_bin("watch-target"), dir, link, dir, link);
    free(wait_for(out, "ready", 1));
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --name %s --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2", LTR, link, dir);
    free(wait_for(out, "runs watch-target: --name watch-target watches it", 1));
    kill(w, SIGTERM);
    expect_exit(w, 0);
}

/* The same said of an executable whose file name holds a terminal's escape
 * sequences (a title, a screen erase): its program chose it, watch says it
 * to root's terminal, with '?' for the control characters (they went out as
 * they were). */
static void test_name_of_a_hostile_exe_said_shown(void **state)
{
    const char *dir = *state;
    char out[512], link[32];
    snprintf(link, sizeof link, "svc-%d", (int)getpid());
    snprintf(out, sizeof out, "%s/svc.out", dir);
    spawn(out, "e=\"%s/$(printf 'wt\\033]0;T\\007\\033[2J')\" && cp %s \"$e\" && ln -s \"$e\" %s/%s && exec %s/%s 50 256 0",
          dir, tu_test_bin("watch-target"), dir, link, dir, link);
    free(wait_for(out, "ready", 1));
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --name %s --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2", LTR, link, dir);
    char *s = wait_for(out, "watches it", 1);
    kill(w, SIGTERM);
    expect_exit(w, 0);
    if (strchr(s, '\033') || strchr(s, '\007') || !strstr(s, "runs wt?]0;T??[2J: --name"))
        fail_msg("the executable's name not shown without its control characters:\n%s", s);
    free(s);
}

/* By name, a service of another user (systemd's User=): the watch reaches
 * only its own user's processes, and says which runs and as whom, and how
 * to watch it, not "no process named NAME runs yet" (a root watch on a
 * service run as nobody said only that, while it ran). */
static void test_name_of_another_user_said(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    const char *own, *prog = tu_own_program(dir, "watch-target", "wt", &own);
    assert_int_equal(chmod(dir, 0755), 0); /* nobody runs the copy from there */
    char out[512], want[160];
    snprintf(out, sizeof out, "%s/svc.out", dir);
    spawn(out, "exec setpriv --reuid=65534 --regid=65534 --clear-groups %s 50 256 0", prog);
    char *s = wait_for(out, "ready", 1);
    pid_t svc = (pid_t)atoi(strstr(s, "ready") + 6);
    free(s);
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --name %s --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2", LTR, own, dir);
    snprintf(want, sizeof want, "pid %d, named %s, runs as user nobody (uid 65534)", (int)svc, own);
    free(wait_for(out, want, 1));
    free(wait_for(out, "run ltr as nobody", 1));
    kill(w, SIGTERM);
    expect_exit(w, 0);
    /* ltr start --name says the same */
    tu_result r = tu_run("%s start heap --name %s && %s cancel", LTR, own, LTR);
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, want))
        fail_msg("ltr start --name did not say '%s':\n%s", want, r.err);
    tu_free(&r);
}

/* By name with two processes of the name: which one is watched is said
 * once (it was said twice, by the start's look and the first poll's), with
 * the other's pid and how to watch it instead. */
static void test_name_two_said_once(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    const char *own, *prog = tu_own_program(dir, "watch-target", "wt", &own);
    pid_t a = start_program(dir, prog, "a", "50 256 0");
    pid_t b = start_program(dir, prog, "b", "50 256 0");
    char out[512], named[64];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --name %s --record-to %s/t.ltr --private-bytes-above 100G "
                         "--interval 0.2 --monitor", LTR, own, dir);
    free(wait_for(out, "  private ", 2)); /* two polls after it chose */
    char *s = tu_read_file(out);
    int said = 0;
    snprintf(named, sizeof named, "2 processes are named %s:", own);
    for (const char *p = s; (p = strstr(p, named)); p++)
        said++;
    if (said != 1)
        fail_msg("which process is watched said %d times:\n%s", said, s);
    /* and the other one by its pid, with how to watch it instead: the first
     * found of a prefork service is its master, which does not grow */
    char first[96], other[160];
    snprintf(first, sizeof first, "watching pid %d, the first found", (int)a);
    pid_t o = strstr(s, first) ? b : a;
    snprintf(other, sizeof other, "the other: %d (--pid PID watches one of them)", (int)o);
    if (!strstr(s, other))
        fail_msg("the other process is not named, wanted '%s' in:\n%s", other, s);
    free(s);
    kill(w, SIGTERM);
    expect_exit(w, 0);
    kill(a, SIGKILL);
    kill(b, SIGKILL);
}

/* `ltr watch --pid svc` until its trigger (private bytes above 1M, at once
 * for the targets' 50 MB) saved dir/trace, and exited 0; env goes before
 * it on its command line. */
static void watch_till_saved_env(const char *dir, pid_t svc, const char *trace, const char *env, const char *extra)
{
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "%s exec %s watch --pid %d --record-to %s/%s --private-bytes-above 1M --interval 1 %s",
                    env, LTR, (int)svc, dir, trace, extra);
    expect_exit(w, 0);
}

static void watch_till_saved(const char *dir, pid_t svc, const char *trace, const char *extra)
{
    watch_till_saved_env(dir, svc, trace, "", extra);
}

/* The trace is the target's: another process with periodic heap snapshots
 * (a --trend session's, enabled before) is not in it, neither its snapshots
 * nor its memory counters (a watch on rleak saved two python3 services'
 * snapshots, listed before the target's own). */
static void test_other_snapshots_not_recorded(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    pid_t other = start_target(dir, "other", "50 256 0");
    tu_expect_ok(tu_run("%s start heapsnapshot --instance slow && %s snapshotconfig heap --pid %d enable && "
                        "%s enableperiodicsnapshot heap 1 %d", LTR, LTR, (int)other, LTR, (int)other));
    watch_till_saved(dir, svc, "o.ltr", "");
    tu_expect_ok(tu_run("%s disableperiodicsnapshot heap %d && %s cancel --instance slow", LTR, (int)other, LTR));
    kill(svc, SIGKILL);
    kill(other, SIGKILL);
    tu_result r = tu_run("%s analyze %s/o.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    char want[64], unwanted[64];
    snprintf(want, sizeof want, "process %d at ", (int)svc);
    snprintf(unwanted, sizeof unwanted, "process %d ", (int)other);
    if (!strstr(r.out, want) || strstr(r.out, unwanted))
        fail_msg("wanted the target's snapshot (%s) and nothing of pid %d in:\n%s", want, (int)other, r.out);
    tu_free(&r);
}

/* The Ltr.System process events (ProcessStart, ProcessExec, ProcessExit)
 * of the trace at path: those of pid in *own, the others' returned. */
static long others_process_events(const char *path, uint32_t pid, long *own)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    long others = 0;
    *own = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        uint64_t p;
        if (!l || !l->provider || strcmp(l->provider->name, LTR_SYSTEM_PROVIDER) ||
            (l->event_id != LTR_SYS_EV_PROCESS_START && l->event_id != LTR_SYS_EV_PROCESS_EXEC &&
             l->event_id != LTR_SYS_EV_PROCESS_EXIT) ||
            ltr_event_get_u64(ev, "pid", &p))
            continue;
        if (p == pid)
            ++*own;
        else
            others++;
    }
    ltr_trace_close(t);
    return others;
}

/* The trace is the target's in its process events too: as root the
 * system provider sees every process on the machine through the kernel's
 * process connector, and a 6 s watch's trace held 1 818 ProcessStart, 1 652
 * ProcessExec and 1 685 ProcessExit of other processes, names and
 * executables (a new user's, whose trace goes out with a support bundle).
 * Other processes come and go all through the watch here; the target's own
 * ProcessStart is there. */
static void test_other_processes_not_recorded(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    char busy[512];
    snprintf(busy, sizeof busy, "%s/busy.out", dir);
    spawn(busy, "while :; do /bin/true; sleep 0.02; done");
    watch_till_saved(dir, svc, "p.ltr", "");
    kill(svc, SIGKILL);
    char path[512];
    snprintf(path, sizeof path, "%s/p.ltr", dir);
    long own, others = others_process_events(path, (uint32_t)svc, &own);
    if (others || !own)
        fail_msg("%ld process events of other processes (wanted none), %ld of the target's (wanted some)",
                 others, own);
}

/* A child that makes a directory at dir/name once a temporary of that name
 * (name.XXXXXX.part) is created there, told by inotify at once; with every,
 * at the name of each temporary whose name begins so (name-2.ltr's too).
 * The watch it plants against runs with the enospc shim holding its saves
 * while dir/hold exists (watch_held): the planter removes it once planted,
 * so the name is taken before the save can publish its file, in every run
 * (planted after the save in 117 of 373 runs without the hold, the case
 * then checked nothing). Without every it exits 0 when it planted while
 * the temporary was still there (the save not done), 3 when the save had
 * ended (the temporary gone, or the name the trace's), 1 when mkdir failed
 * otherwise. Returns its pid. */
static pid_t plant_at_temporary(const char *dir, const char *name, bool every)
{
    char hold[512];
    snprintf(hold, sizeof hold, "%s/hold", dir);
    tu_write_file(dir, "hold", "");
    int fd = inotify_init1(IN_CLOEXEC);
    assert_true(fd >= 0 && inotify_add_watch(fd, dir, IN_CREATE) >= 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char buf[8192], path[4200], part[4200];
        size_t n = strlen(name);
        for (ssize_t len; (len = read(fd, buf, sizeof buf)) > 0;)
            for (char *p = buf; p < buf + len; p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len) {
                const char *f = ((struct inotify_event *)p)->name;
                size_t flen = strlen(f), stem = strrchr(name, '.') ? (size_t)(strrchr(name, '.') - name) : n;
                if (every && !strncmp(f, name, stem) && flen > 12 && !strcmp(f + flen - 5, ".part")) {
                    snprintf(path, sizeof path, "%s/%.*s", dir, (int)(flen - 12), f); /* less .XXXXXX.part */
                    int made = mkdir(path, 0700) == 0;
                    unlink(hold);
                    if (!made)
                        _exit(1);
                } else if (!strncmp(f, name, n) && f[n] == '.' && strstr(f + n, ".part")) {
                    snprintf(path, sizeof path, "%s/%s", dir, name);
                    snprintf(part, sizeof part, "%s/%s", dir, f);
                    int made = mkdir(path, 0700) == 0, late = !made && errno == EEXIST;
                    late |= access(part, F_OK) != 0;
                    unlink(hold);
                    _exit(late ? 3 : made ? 0 : 1);
                }
            }
        unlink(hold);
        _exit(2);
    }
    close(fd);
    if (nspawned < (int)(sizeof spawned / sizeof *spawned))
        spawned[nspawned++] = pid;
    return pid;
}

/* watch_till_saved with its saves held while dir/hold exists (the enospc
 * shim, preloaded into the watch and so its recorder: see
 * plant_at_temporary). */
static void watch_held(const char *dir, pid_t svc, const char *trace, const char *extra)
{
    char env[1200];
    /* ASan (the sanitized build) wants its runtime first: the shim goes first here, as in test_disk_full */
    snprintf(env, sizeof env,
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" LD_PRELOAD=%s/libltr-test-enospc.so "
             "LTR_TEST_HOLD_SAVE=%s/hold",
             tu_test_bin(""), dir);
    watch_till_saved_env(dir, svc, trace, env, extra);
}

/* A name taken while the save writes its temporary (as another user can in
 * /tmp once the temporary shows; a directory here, which never touches a
 * trace) moves the trace to the next name, as one taken before does: it
 * ended the watch, exit 1, the trigger's trace lost ("already exists ...
 * --force replaces it"). The save is held till the name is taken: it is
 * taken during the save in every run, or the case fails. */
static void test_name_taken_during_save(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    char out[512], planted[512];
    snprintf(planted, sizeof planted, "%s/leak.ltr", dir);
    pid_t planter = plant_at_temporary(dir, "leak.ltr", false);
    watch_held(dir, svc, "leak.ltr", "--no-symbols");
    kill(svc, SIGKILL);
    int st = wait_exit(planter);
    if (st != 0)
        fail_msg("the planter exited %d: wanted 0, leak.ltr taken while the save's temporary was there "
                 "(3: the save had ended, 1: mkdir failed, 2: no temporary seen)", st);
    struct stat sb;
    assert_int_equal(lstat(planted, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    tu_result r = tu_run("%s info %s/leak-2.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    snprintf(out, sizeof out, "%s/watch.out", dir);
    free(wait_for(out, "saving to the next name", 1));
}

/* Another user who takes each name as each save's temporary shows (the
 * planter above, at every temporary) made the watch save again and again
 * at the next name, and end after 16 saves: exit 1, the trigger's trace
 * lost ('leak-16.ltr already exists'). The finished file moves to the next
 * free name instead, saved once. */
static void test_every_name_taken_during_save(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    plant_at_temporary(dir, "leak.ltr", true);
    watch_held(dir, svc, "leak.ltr", "--no-symbols");
    kill(svc, SIGKILL);
    char planted[512];
    snprintf(planted, sizeof planted, "%s/leak.ltr", dir);
    struct stat st;
    assert_int_equal(lstat(planted, &st), 0);
    assert_true(S_ISDIR(st.st_mode)); /* taken during the save: held till then */
    tu_result r = tu_run("%s info %s/leak-2.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    r = tu_run("ls %s | grep -c 'part$'", dir);
    assert_int_equal(atoi(r.out), 0); /* no temporary left behind */
    tu_free(&r);
}

/* A trigger whose save fails (a full disk: the enospc shim, preloaded
 * into the watch and so its recorder) ends the watch, exit 1, and takes
 * its session along: it said so, not the recorder's answer to 'ltr save'
 * ('...; the session is still running, as it was: save again to a
 * writable path', printed by a watch that then cancelled it). */
static void test_failed_save_ends_the_watch_said(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    tu_write_file(dir, "full", "");
    tu_result r = tu_run("ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" LTR_TEST_DISK_FULL=%s/full "
                         "LD_PRELOAD=%s/libltr-test-enospc.so %s watch --pid %d --record-to %s/t.ltr "
                         "--private-bytes-above 1K --interval 0.2 --no-symbols",
                         dir, tu_test_bin(""), LTR, (int)svc, dir);
    kill(svc, SIGKILL);
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "trigger 1: the trace could not be saved: ") || !strstr(r.err, "No space left on device") ||
        !strstr(r.err, "the watch ends, and its session with it") || strstr(r.err, "still running"))
        fail_msg("wanted the failed save and the end of the watch said, as they are:\n%s", r.err);
    tu_free(&r);
    tu_result st = tu_run("%s status", LTR);
    assert_non_null(strstr(st.out, "o session is running"));
    tu_free(&st);
    tu_result ls = tu_run("ls %s | grep -c 'ltr' || true", dir);
    assert_int_equal(atoi(ls.out), 0); /* no trace, no temporary left */
    tu_free(&ls);
}

/* Limited to the target, the session still records the target's memory
 * counters: the recorder writes them through a connection of its own, which
 * the target's pid does not name (limiting every collector to the target
 * denied it the system collector: the trigger's trace had 0 Ltr.System
 * events, and analyze no private bytes beside the heap). */
static void test_target_memory_counters_recorded(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    watch_till_saved(dir, svc, "m.ltr", "--memory-interval 0.2");
    kill(svc, SIGKILL);
    tu_result r = tu_run("%s analyze %s/m.ltr --pid %d", LTR, dir, (int)svc);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, ": memory counters, ") || !strstr(r.out, "private bytes (RssAnon + VmSwap)"))
        fail_msg("the target's memory counters are not in the trace:\n%s", r.out);
    tu_free(&r);
}

/* --record-to a relative path is the caller's: the trace and its bundle go
 * to the directory watch was started in (the recorder's is another), and
 * that is the path it says and names the frames in. */
static void test_record_to_relative(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "50 256 0");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "cd %s && exec %s watch --pid %d --record-to rel.ltr --private-bytes-above 1M "
                         "--interval 0.2 --support-bundle", dir, LTR, (int)svc);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    char *s = tu_read_file(out), want[1200];
    snprintf(want, sizeof want, "trace saved to %s/rel.ltr, support bundle %s/rel.tar.zst", dir, dir);
    if (!strstr(s, want) || strstr(s, "warning"))
        fail_msg("wanted '%s' and no warning in: %s", want, s);
    free(s);
    snprintf(want, sizeof want, "%s/rel.ltr", dir);
    tu_result i = tu_run("%s info %s", LTR, want);
    assert_int_equal(i.status, 0);
    assert_non_null(strstr(i.out, " addresses named where it was recorded"));
    tu_free(&i);
}

/* The heap agent's own memory (some MiB, at once when it joins the
 * process) is not the service's growth: on a service growing slowly,
 * --growth-above 1M neither fires nor shows a poll growing by it. */
static void test_agent_memory_is_not_growth(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_target(dir, "svc", "500 0 -64"); /* 128 KiB/s from the start */
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --growth-above 1M --interval 0.5 "
                         "--max-triggers 100 --monitor",
                    LTR, (int)svc, dir);
    char *s = wait_for(out, "  pid ", 8);
    kill(w, SIGTERM);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    free(s);
    s = tu_read_file(out);
    if (strstr(s, "trigger"))
        fail_msg("triggered on the agent's memory: %s", s);
    for (const char *line = s; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(strchr(line, ' ') ? strchr(line, ' ') : "", "  pid ", 6) && growth_of(line) > 1 << 20)
            fail_msg("a poll grew by more than 1 MiB: %s", s);
    free(s);
}

/* Runs argv (from PATH) in the background, once it runs (tu_start_argv):
 * the teardown's to kill until reaped. */
static pid_t start_argv(char *const argv[])
{
    pid_t pid = tu_start_argv(argv);
    if (nspawned < (int)(sizeof spawned / sizeof *spawned))
        spawned[nspawned++] = pid;
    return pid;
}

/* `ltr watch --pid svc` with a threshold never reached, until text appears
 * n times in its output; then the watch and svc are ended. Returns the
 * watch's output up to then. */
static char *watch_until(const char *dir, pid_t svc, const char *text, int n)
{
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 3G --interval 0.2 "
                         "--monitor", LTR, (int)svc, dir);
    char *s = wait_for(out, text, n);
    kill(w, SIGTERM);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    waitpid(svc, NULL, 0);
    forget(svc);
    return s;
}

/* A process that never allocates (sleep) never lets the heap agent join:
 * past the settling polls the watch goes on by its private bytes, and says
 * so once (it showed "waiting for private bytes above ..." as if heap
 * events were recorded: a review). */
static void test_agent_never_joins_said(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_argv((char *[]){"sleep", "60", NULL});
    char *s = watch_until(dir, svc, "has not joined it", 1);
    assert_non_null(strstr(s, "watched by its private bytes"));
    free(s);
}

/* A service that closes every descriptor, the agent's connection too, after
 * it joined (a daemon's close-all) is traced still: the watch said "the
 * heap agent has not joined it" and went on by its private bytes. The
 * recorder's 'joined' list says it joined (control-protocol.md). The perl
 * allocates (push and shift: a 'my $x' in a loop keeps its buffer and calls
 * malloc no more) and closes its fds once its agent has attached (the
 * session's eventfd, which the recorder hands over after it noted the join,
 * is among its fds), then every 10 loops: the watch's polls, 0.2 s apart,
 * do not see it attached. It closed every 10 loops from the start before:
 * an attach the recorder answered later than the first one's 250 ms wait
 * (under load) was left pending, closed with the rest, and not taken. */
static void test_joined_then_closed_not_said_unjoined(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    pid_t svc = start_argv((char *[]){"perl", "-MPOSIX", "-e",
                                      "sub attached { opendir(my $d, '/proc/self/fd') or return 0; "
                                      "grep { (readlink(\"/proc/self/fd/$_\") // '') eq 'anon_inode:[eventfd]' } "
                                      "readdir $d } "
                                      "my ($joined, @a); while (1) { for (1..10) { push @a, 'a' x 1000; "
                                      "shift @a if @a > 50; select(undef, undef, undef, 0.001) } "
                                      "$joined ||= attached(); next unless $joined; "
                                      "POSIX::close($_) for 3..POSIX::sysconf(POSIX::_SC_OPEN_MAX()) }",
                                      NULL});
    char *s = watch_until(dir, svc, "  pid ", 8); /* past the 5 settling polls */
    if (strstr(s, "has not joined"))
        fail_msg("a process that joined and closed its connection was said never joined:\n%s", s);
    free(s);
}

/* The refusal of an attach is said once, whole: "--pid N: pid N would
 * look for sessions in ...". */
static void test_attach_refusal_said_whole(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    char out[512];
    snprintf(out, sizeof out, "%s/svc.out", dir);
    spawn(out, "exec env LTR_RUNTIME_DIR=%s/elsewhere %s 50 256 0", dir, tu_test_bin("watch-target"));
    char *s = wait_for(out, "ready", 1);
    pid_t svc = (pid_t)atoi(strstr(s, "ready") + 6);
    free(s);
    tu_result r = tu_run("%s watch --pid %d --record-to %s/t.ltr --growth-above 1M", LTR, (int)svc, dir);
    char want[1024];
    snprintf(want, sizeof want, "--pid %d: pid %d would look for sessions in %s/elsewhere", (int)svc, (int)svc,
             dir);
    if (r.status != 1 || !strstr(r.err, want))
        fail_msg("wanted '%s': status %d: %s", want, r.status, r.err);
    tu_free(&r);
    kill(svc, SIGKILL);
}

/* A copy of s with every from replaced by to (malloc'd). */
static char *replace(const char *s, const char *from, const char *to)
{
    size_t n = 0, lf = strlen(from), lt = strlen(to);
    for (const char *p = s; (p = strstr(p, from)); p += lf)
        n++;
    char *out = malloc(strlen(s) + n * lt + 1), *o = out;
    assert_non_null(out);
    for (const char *p = s, *q; ; p = q + lf) {
        q = strstr(p, from);
        size_t k = q ? (size_t)(q - p) : strlen(p);
        memcpy(o, p, k);
        o += k;
        if (!q)
            break;
        memcpy(o, to, lt);
        o += lt;
    }
    *o = 0;
    return out;
}

/* The line of text that starts with key, without the key (malloc'd). */
static char *unit_value(const char *text, const char *key)
{
    for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, key, strlen(key)))
            return strndup(line + strlen(key), strcspn(line + strlen(key), "\n"));
    fail_msg("the unit has no %s line", key);
    return NULL;
}

/* The systemd unit template: systemd-analyze verify finds nothing to say of
 * an instance, and its command line, run as systemd would for the instance
 * of this run's copy of watch-target with the default options, watches that
 * process and ends cleanly on SIGTERM (systemd's KillSignal). */
static void test_systemd_unit(void **state)
{
    const char *dir = *state;
    if (skip_unless_root())
        skip();
    char *unit = tu_read_file(LTR_WATCH_UNIT);
    assert_non_null(unit);
    char *exec = unit_value(unit, "ExecStart=");
    char *env = unit_value(unit, "Environment=\"LTR_WATCH_OPTIONS=");
    env[strcspn(env, "\"")] = 0;
    assert_non_null(strstr(exec, " watch --name %i "));
    /* the instance, with the ltr under test in place of the installed one */
    char *installed = strndup(exec, strcspn(exec, " "));
    char *local = replace(unit, installed, LTR);
    const char *own, *prog = tu_own_program(dir, "watch-target", "wt", &own);
    char path[512];
    snprintf(path, sizeof path, "%s/ltr-watch@%s.service", dir, own);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(local, f);
    fclose(f);
    tu_result v = tu_run("command -v systemd-analyze >/dev/null || exit 77; systemd-analyze verify %s", path);
    if (v.status == 77)
        printf("systemd-analyze is not installed: the unit's syntax is not checked here\n");
    else if (v.status != 0 || v.out[0] || v.err[0])
        fail_msg("systemd-analyze verify: status %d: %s%s", v.status, v.out, v.err);
    tu_free(&v);
    /* its command line, as systemd expands it */
    char state_dir[512];
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    assert_int_equal(mkdir(state_dir, 0700), 0);
    char *a = replace(exec, installed, LTR), *b = replace(a, "/var/lib/ltr-watch/%i", state_dir),
         *c = replace(b, "%i", own), *cmd = replace(c, "$LTR_WATCH_OPTIONS", env);
    pid_t svc = start_program(dir, prog, "svc", "50 256 0");
    char out[512];
    snprintf(out, sizeof out, "%s/watch.out", dir);
    pid_t w = spawn(out, "exec %s", cmd);
    char want[64];
    snprintf(want, sizeof want, "watching pid %d", (int)svc);
    free(wait_for(out, want, 1));
    kill(w, SIGTERM);
    expect_exit(w, 0);
    kill(svc, SIGKILL);
    free(cmd), free(c), free(b), free(a), free(local), free(installed), free(env), free(exec), free(unit);
}

/* A libarchive that cannot write a bundle (here not libarchive at all: a
 * library of the tests in its name's place, as an older one lacks a
 * function) is said at the start, nothing started. It was found at the
 * trigger: the watch ended there (127), its trace saved and never said,
 * the bundle's .part file left beside it. */
static void test_bundle_library_checked_at_start(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("mkdir -p %s/lib && cp %s %s/lib/libarchive.so.13", dir, tu_test_bin("libheapdl.so"), dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    pid_t svc = start_target(dir, "svc", "50 256 2048");
    r = tu_run("LD_LIBRARY_PATH=%s/lib timeout 20 %s watch --pid %d --record-to %s/t.ltr --private-bytes-above 1 "
               "--interval 0.3 --support-bundle", dir, LTR, (int)svc, dir);
    kill(svc, SIGKILL);
    if (r.status == 0 || r.status == 124 || !strstr(r.err, "libarchive.so.13") || strstr(r.out, "started") ||
        strstr(r.err, "started"))
        fail_msg("status %d (124: still watching after 20 s), said:\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    tu_result ls = tu_run("ls %s | grep -c -e ltr -e part", dir);
    assert_string_equal(ls.out, "0\n"); /* no trace, no part of a bundle */
    tu_free(&ls);
}

static void test_refusals(void **state)
{
    const char *dir = *state;
    static const struct { const char *args; int status; const char *says; } cases[] = {
        {"--pid 1 --record-to %s/t.ltr", 2, "give a condition"},
        {"--pid 1 --record-to %s/t.ltr --growth-above 40Q", 2, "--growth-above '40Q'"},
        {"--pid 1 --record-to %s/t.ltr --private-bytes-above 0", 2, "above 0"},
        {"--record-to %s/t.ltr --growth-above 1M", 2, "--pid PID or --name NAME"},
        {"--pid 1 --name x --record-to %s/t.ltr --growth-above 1M", 2, "one of them"},
        {"--pid 1 --growth-above 1M --record-to %s/no/such/dir/t.ltr", 1, "its directory"},
        {"--pid 1 --growth-above 1M --record-to %s", 1, "is a directory"},
        {"--pid 1 --growth-above 1M --interval 0 --record-to %s/t.ltr", 2, "--interval"},
        {"--pid 1 --growth-above 1M --record-to %s/t.ltr nosuchprofile", 2, "nosuchprofile"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[1024];
        snprintf(args, sizeof args, cases[i].args, dir);
        tu_result r = tu_run("%s watch %s", LTR, args);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].says))
            fail_msg("ltr watch %s: status %d, said: %s", args, r.status, r.err);
        tu_free(&r);
    }
    tu_result r = tu_run("%s watch --pid 4194000 --growth-above 1M --record-to %s/t.ltr", LTR, dir);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "no such process"));
    tu_free(&r);
    tu_result st = tu_run("%s status", LTR); /* nothing was started */
    assert_null(strstr(st.out, "watch-"));
    tu_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trigger_on_growth, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_auto_fires_on_slow_leak, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_support_bundle, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_signal_leaves_nothing, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_killed_watch_cancels, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_snapshots_of_others_stay, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_pid_gone, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_session_gone_ends_watch, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_of_a_link_said, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_of_a_hostile_exe_said_shown, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_two_said_once, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_of_another_user_said, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_follows_restart, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_systemd_unit, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_bundle_library_checked_at_start, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_record_to_relative, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_other_snapshots_not_recorded, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_other_processes_not_recorded, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_name_taken_during_save, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_every_name_taken_during_save, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_failed_save_ends_the_watch_said, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_target_memory_counters_recorded, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_agent_never_joins_said, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_joined_then_closed_not_said_unjoined, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_agent_memory_is_not_growth, tu_setup_sandbox, teardown),
        cmocka_unit_test_setup_teardown(test_attach_refusal_said_whole, tu_setup_sandbox, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
