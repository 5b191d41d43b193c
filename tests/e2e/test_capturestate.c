/*
 * tests/e2e/test_capturestate.c — `ltr capturestate` as a user runs it, on
 * flight recorders small enough that a run overwrites them many times:
 * - the system provider's process, thread and module events of a target
 *   are gone from a save once overwritten, and back (rundown=true, with the
 *   thread's name and the modules' paths) in a save after capturestate;
 * - a heap session's stacks need nothing: a stack first used long before
 *   (its records written then) still symbolizes in a save whose ring kept
 *   only its last use, with or without capturestate; a thread name set by
 *   prctl (unseen by the agent) is in the save only after capturestate,
 *   for a container's thread by the tid its own namespace gives it;
 * - the refusals: no session, a bad session name, an argument too many.
 */
#include "util/testutil.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char *dir;

static int fresh(void **state)
{
    int rc = tu_setup_sandbox(state);
    dir = *state;
    return rc;
}

static int done(void **state)
{
    tu_result r = tu_run("touch %s/exit; [ -f %s/sleep.pid ] && kill $(cat %s/sleep.pid); true", dir, dir, dir);
    tu_free(&r);
    return tu_teardown_sandbox(state);
}

static void expect(tu_result r, int status, const char *in_err)
{
    if (r.status != status || (in_err && !strstr(r.err, in_err)))
        fail_msg("status %d (expected %d), stderr lacks '%s':\n%s%s", r.status, status, in_err ? in_err : "",
                 r.out, r.err);
    tu_free(&r);
}

/* Saves the session to DIR/name and returns its dump. */
static char *save_dump(const char *name)
{
    tu_expect_ok(tu_run("%s save --force %s/%s", tu_ltr(), dir, name));
    tu_result r = tu_run("%s dump %s/%s", tu_ltr(), dir, name);
    assert_int_equal(r.status, 0);
    free(r.err);
    return r.out;
}

static int lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        n += strstr(line, a) && (!b || strstr(line, b));
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

static void test_system_state_after_overwrite(void **state)
{
    /* processes are followed through /proc, also as root: only the target */
    setenv("LTR_SYSTEM_NO_CONNECTOR", "1", 1);
    tu_result r = tu_run("sleep 120 > /dev/null 2>&1 & echo $! > %s/sleep.pid; echo $!", dir);
    unsigned pid = (unsigned)atoi(r.out);
    tu_free(&r);
    assert_true(pid > 0);
    tu_expect_ok(tu_run("%s start --provider Ltr.System:0x7 --provider Test.Producer --memory-interval 0.01 "
                        "--buffers 4 --buffer-size 4 --pid %u",
                        tu_ltr(), pid));
    char mod[64], start[64], thread[64];
    snprintf(mod, sizeof mod, "Ltr.System/ModuleLoad pid=%u ", pid);
    snprintf(start, sizeof start, "Ltr.System/ProcessStart pid=%u ", pid);
    snprintf(thread, sizeof thread, "Ltr.System/ThreadStart pid=%u tid=%u name=\"sleep\"", pid, pid);
    /* the target's first events were there, then the ring goes round until they are not */
    char *dump = NULL;
    for (double end = tu_now_s() + 60;;) {
        free(dump);
        tu_expect_ok(tu_run("%s --events 20000 --wait-enabled 10 > /dev/null", tu_test_bin("ltr-test-producer")));
        dump = save_dump("before.ltr");
        if (!lines_with(dump, mod, NULL) && !lines_with(dump, start, NULL) && lines_with(dump, "ProcessMemory", NULL))
            break;
        if (tu_now_s() > end)
            fail_msg("the target's first events were never overwritten:\n%.2000s", dump);
    }
    free(dump);

    r = tu_run("%s capturestate", tu_ltr());
    if (r.status != 0 || !strstr(r.out, "the system provider wrote the state of 1 process(es), 1 thread(s) and "))
        fail_msg("capturestate (%d): %s%s", r.status, r.out, r.err);
    tu_free(&r);
    dump = save_dump("after.ltr");
    if (lines_with(dump, start, "rundown=true") != 1 || lines_with(dump, thread, "rundown=true") != 1 ||
        lines_with(dump, mod, "libc.so.6\" rundown=true") != 1 || lines_with(dump, mod, "/sleep\" rundown=true") != 1)
        fail_msg("the target's state is not in the save after capturestate:\n%s", dump);
    free(dump);
    tu_expect_ok(tu_run("%s cancel", tu_ltr()));
    unsetenv("LTR_SYSTEM_NO_CONNECTOR");
}

/* A heap session's metadata is never overwritten: a stack whose records
 * came long before the ring's tail still symbolizes. */
/* Threads of the trace at path with this name. */
static int threads_named(const char *path, const char *name)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) > 0) {
    }
    int n = 0;
    for (size_t i = 0; i < ltr_trace_thread_count(t); i++) {
        const ltr_thread *th = ltr_trace_thread_at(t, i);
        n += th->known && th->name && !strcmp(th->name, name);
    }
    ltr_trace_close(t);
    return n;
}

static void test_heap_stacks_need_no_capture(void **state)
{
    tu_expect_ok(tu_run("%s start heap --buffers 4 --buffer-size 4", tu_ltr()));
    tu_expect_ok(tu_run("%s run -- %s %s 100000 > %s/run.out 2>&1 &", tu_ltr(), tu_test_bin("state-target"), dir, dir));
    char path[700];
    snprintf(path, sizeof path, "%s/done", dir);
    for (double end = tu_now_s() + 60; access(path, F_OK) != 0; usleep(10000))
        if (tu_now_s() > end)
            fail_msg("state-target did not finish");
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            tu_result r = tu_run("%s capturestate", tu_ltr());
            assert_int_equal(r.status, 0);
            assert_non_null(strstr(r.out, "does not record the system provider"));
            assert_non_null(strstr(r.out, "bytes of metadata read) are kept"));
            tu_free(&r);
        }
        char *dump = save_dump("heap.ltr");
        assert_int_equal(lines_with(dump, "size=7777", NULL), 1); /* the first block's event is overwritten */
        free(dump);
        char trace[700];
        snprintf(trace, sizeof trace, "%s/heap.ltr", dir);
        /* renamed by prctl, which the agent does not see: named by capturestate */
        assert_int_equal(threads_named(trace, "renamed-main"), round);
        tu_result r = tu_run("%s analyze %s/heap.ltr --format json --top 0", tu_ltr(), dir);
        assert_int_equal(r.status, 0);
        if (!strstr(r.out, "keep_site") || strstr(r.out, "\"events_overwritten\":0,"))
            fail_msg("the stack of the last block is not named, or nothing was overwritten:\n%s", r.out);
        tu_free(&r);
    }
    tu_expect_ok(tu_run("touch %s/exit", dir));
    tu_expect_ok(tu_run("%s cancel", tu_ltr()));
}

/* The tid of the one thread of the trace at path with this name, with its
 * pid; 0 if none or several. */
static uint32_t tid_named(const char *path, const char *name, uint32_t *pid)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) > 0) {
    }
    uint32_t tid = 0;
    for (size_t i = 0, n = 0; i < ltr_trace_thread_count(t); i++) {
        const ltr_thread *th = ltr_trace_thread_at(t, i);
        if (th->known && th->name && !strcmp(th->name, name) && ++n == 1) {
            tid = th->tid;
            *pid = th->pid;
        } else if (th->known && th->name && !strcmp(th->name, name)) {
            tid = 0;
        }
    }
    ltr_trace_close(t);
    return tid;
}

/* A container's thread renamed by prctl after its first event: capturestate
 * names it by the tid its heap events carry, its own namespace's (what
 * gettid() says there), under the recorder's pid for its process. It named
 * it by our tid, /proc/PID/task's: a thread of no event, and the thread of
 * the events kept the agent's first name. */
static void test_container_thread_named_by_its_own_tid(void **state)
{
    if (!tu_pid_namespaces_allowed())
        skip();
    tu_write_file(dir, "ns.py", tu_ns_worker_py);
    tu_expect_ok(tu_run("%s start heap --filemode -o %s/ns.ltr", tu_ltr(), dir));
    tu_expect_ok(tu_run("%s run -- unshare --pid --fork --mount-proc /usr/bin/python3 %s/ns.py %s "
                        "> %s/run.out 2>&1 &", tu_ltr(), dir, dir, dir));
    char path[700];
    snprintf(path, sizeof path, "%s/tid", dir);
    char *text = NULL;
    for (double end = tu_now_s() + 60; !(text = tu_read_file(path)) || !*text; usleep(10000)) {
        free(text);
        if (tu_now_s() > end)
            fail_msg("the python3 in its pid namespace did not start its thread");
    }
    uint32_t own = (uint32_t)atoi(text), pid = 0;
    free(text);
    tu_result r = tu_run("%s capturestate", tu_ltr());
    assert_int_equal(r.status, 0);
    tu_free(&r);
    tu_expect_ok(tu_run("touch %s/exit", dir));
    tu_expect_ok(tu_run("%s stop %s/ns.ltr --force", tu_ltr(), dir));
    snprintf(path, sizeof path, "%s/ns.ltr", dir);
    uint32_t tid = tid_named(path, "ns-worker", &pid);
    if (tid != own || pid == own)
        fail_msg("the thread renamed ns-worker (tid %u in its namespace) is named as tid %u of pid %u", own, tid,
                 pid);
}

static void test_capturestate_refusals(void **state)
{
    expect(tu_run("%s capturestate", tu_ltr()), 1, "no session named 'ltr' is running");
    expect(tu_run("%s capturestate --instance ../x", tu_ltr()), 2, "may hold only");
    expect(tu_run("%s capturestate now", tu_ltr()), 2, "usage: ltr capturestate");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_system_state_after_overwrite, fresh, done),
        cmocka_unit_test_setup_teardown(test_heap_stacks_need_no_capture, fresh, done),
        cmocka_unit_test_setup_teardown(test_container_thread_named_by_its_own_tid, fresh, done),
        cmocka_unit_test_setup_teardown(test_capturestate_refusals, fresh, done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
