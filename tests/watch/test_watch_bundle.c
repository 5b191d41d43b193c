/*
 * tests/watch/test_watch_bundle.c — the support bundle writer in-process
 * (src/watch/bundle.c): its name beside a trace; a bundle of this very
 * process that tar opens, with the inputs it was given and the facts read
 * from /proc; a file that cannot be read named in MISSING.txt; one saved
 * as the process ended says so and how; none of another process that has
 * the watched pid now (it ended); and a path
 * that exists (a planted symlink too) refused, left as it was, with no
 * temporary file left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"
#include "system/system.h"
#include "watch/watch.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_bundle_path(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(ltr_watch_bundle_path("/d/trace.ltr", out, sizeof out), 0);
    assert_string_equal(out, "/d/trace.tar.zst");
    assert_int_equal(ltr_watch_bundle_path("/d.x/trace-2.ltr", out, sizeof out), 0);
    assert_string_equal(out, "/d.x/trace-2.tar.zst");
    assert_int_equal(ltr_watch_bundle_path("trace", out, sizeof out), 0);
    assert_string_equal(out, "trace.tar.zst");
    assert_int_equal(ltr_watch_bundle_path("/a/very/long/name/indeed.ltr", out, 16), -ENAMETOOLONG);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, ".."));
    closedir(d);
    return n;
}

static ltr_watch_bundle inputs(const char *log)
{
    static const char history[] = "2026-11-24 10:00:00  pid 1  private 3.00 MiB  growth 0 B\n";
    return (ltr_watch_bundle){.trigger = 2, .pid = (uint32_t)getpid(),
                              .start_ticks = ltr_proc_start_ticks(getpid()), .condition = "growth +9 MiB",
                              .trace = "/x/t-2.ltr", .profile_text = "Profile: heap\n",
                              .status_error = "the session is not running", .history = history,
                              .history_len = sizeof history - 1, .log_path = log};
}

static void test_bundle_of_this_process(void **state)
{
    const char *dir = *state;
    char path[512], log[512];
    snprintf(path, sizeof path, "%s/b.tar.zst", dir);
    snprintf(log, sizeof log, "%s/no-such.log", dir);
    ltr_watch_bundle in = inputs(log);
    ltr_error err;
    if (ltr_watch_bundle_write(path, &in, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(count_entries(dir), 1); /* the bundle, no temporary file */
    tu_result x = tu_run("cd %s && tar --zstd -xf b.tar.zst && cat b/README.txt b/profile.txt b/monitor.txt "
                         "b/MISSING.txt b/proc/status", dir);
    assert_int_equal(x.status, 0);
    assert_non_null(strstr(x.out, "trigger 2 at "));
    assert_non_null(strstr(x.out, "growth +9 MiB"));
    assert_non_null(strstr(x.out, "/x/t-2.ltr"));
    assert_non_null(strstr(x.out, "Profile: heap"));
    assert_non_null(strstr(x.out, "private 3.00 MiB"));
    /* what could not be had is said, with why */
    assert_non_null(strstr(x.out, "status.txt: the session is not running"));
    assert_non_null(strstr(x.out, "recorder.log: "));
    assert_non_null(strstr(x.out, "No such file"));
    char want[64];
    snprintf(want, sizeof want, "Pid:\t%d", (int)getpid()); /* this process's own status */
    assert_non_null(strstr(x.out, want));
    tu_free(&x);
    snprintf(path, sizeof path, "%s/b/proc/environ", dir);
    assert_int_equal(access(path, F_OK), -1);
}

/* A bundle saved as the process ended says so, and how, not "trigger N"
 * (ltr watch --pid of a process killed by the OOM killer). */
static void test_bundle_at_exit_says_why(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s/e.tar.zst", dir);
    ltr_watch_bundle in = inputs(NULL);
    in.at_exit = true;
    in.condition = "the process exited (killed by SIGKILL)";
    ltr_error err;
    if (ltr_watch_bundle_write(path, &in, &err) != 0)
        fail_msg("%s", err.msg);
    tu_result x = tu_run("cd %s && tar --zstd -xf e.tar.zst && cat e/README.txt", dir);
    assert_int_equal(x.status, 0);
    char want[128];
    snprintf(want, sizeof want, "as pid %d ended: the process exited (killed by SIGKILL)\n", (int)getpid());
    if (!strstr(x.out, want) || strstr(x.out, "trigger 2"))
        fail_msg("wanted '%s' and no trigger in:\n%s", want, x.out);
    tu_free(&x);
}

/* The process watched by pid ended and another one has its pid now (this
 * one, started at another time than the one watched): the bundle holds
 * none of the other's /proc files, and says why. It held them as the
 * watched process's: a command line with a password on it, its maps. */
static void test_pid_of_another_process_not_bundled(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s/o.tar.zst", dir);
    ltr_watch_bundle in = inputs(NULL);
    in.start_ticks++;
    ltr_error err;
    if (ltr_watch_bundle_write(path, &in, &err) != 0)
        fail_msg("%s", err.msg);
    tu_result x = tu_run("cd %s && tar --zstd -xf o.tar.zst && ls o; cat o/MISSING.txt", dir);
    assert_int_equal(x.status, 0);
    char want[128];
    snprintf(want, sizeof want, "pid %d is another process's now", (int)getpid());
    if (strstr(x.out, "proc\n") || !strstr(x.out, want))
        fail_msg("wanted no proc/ and '%s' in:\n%s", want, x.out);
    tu_free(&x);
}

static void test_existing_path_refused(void **state)
{
    const char *dir = *state;
    char path[512], victim[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(path, sizeof path, "%s/b.tar.zst", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(victim, path), 0);
    ltr_watch_bundle in = inputs(NULL);
    ltr_error err;
    assert_int_equal(ltr_watch_bundle_write(path, &in, &err), -EEXIST);
    assert_non_null(strstr(err.msg, "b.tar.zst"));
    char *v = tu_read_file(victim);
    assert_string_equal(v, "keep");
    free(v);
    assert_int_equal(count_entries(dir), 2); /* victim and the symlink: no temporary file */
    snprintf(path, sizeof path, "%s/no/such/dir/b.tar.zst", dir);
    assert_true(ltr_watch_bundle_write(path, &in, &err) < 0);
    assert_non_null(strstr(err.msg, "no/such/dir"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundle_path),
        cmocka_unit_test_setup_teardown(test_bundle_of_this_process, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_pid_of_another_process_not_bundled, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_existing_path_refused, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_bundle_at_exit_says_why, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
