/*
 * tests/recorder/test_reach.c — recorder/reach.c in-process: the --pid's of
 * a session attached one by one, each with its typed result (injected now,
 * carrying the agent already, or not reached and why). Needs ptrace of a
 * child, which root and the child's own user may do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "prim/prim.h"
#include "recorder/reach.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_reach_pids(void **state)
{
    (void)state;
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    pid_t sleeper = fork();
    if (sleeper == 0) {
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    usleep(300000); /* exec'd: a dynamically linked program with libc */
    static ltr_session_config cfg;
    cfg.npids = 2;
    cfg.pids[0] = (uint32_t)gone;
    cfg.pids[1] = (uint32_t)sleeper;
    char rundir[4096];
    ltr_error err;
    assert_int_equal(ltr_runtime_dir(rundir, sizeof rundir, &err), 0);
    static ltr_reached out[LTR_MAX_SESSION_PIDS];
    int n = ltr_session_reach_pids(&cfg, rundir, out, &err);
    if (out[1].state < 0)
        fprintf(stderr, "pid %u: %s\n", out[1].pid, out[1].why.msg);
    assert_int_equal(n, 1);
    assert_true(out[0].state < 0);
    assert_non_null(strstr(out[0].why.msg, "no such process"));
    assert_int_equal(out[1].state, LTR_ATTACH_INJECTED);
    assert_int_equal(ltr_session_reach_pids(&cfg, rundir, out, &err), 1); /* a second session */
    assert_int_equal(out[1].state, LTR_ATTACH_ALREADY);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reach_pids)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
