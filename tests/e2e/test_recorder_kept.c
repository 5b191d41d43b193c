/*
 * tests/e2e/test_recorder_kept.c — what a recording keeps when things go
 * wrong (issue 10): a file-mode recorder killed with SIGKILL leaves a trace
 * whose counters say what was lost up to its last flush (item 9), and markers
 * survive a memory-mode ring that wraps many times (item 17).
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")

/* The trace a file-mode session is writing: at its -o path, or beside it as
 * .part while it records. */
static tu_trace read_growing(const char *path)
{
    char part[600];
    snprintf(part, sizeof part, "%s.part", path);
    return tu_read_trace(access(part, F_OK) == 0 ? part : path, "Test.Producer");
}

static void test_killed_recorder_keeps_counters(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s/killed.ltr", dir);
    tu_expect_ok(tu_run("%s start --filemode -o %s --instance kc --buffer-size 4 --buffers 4 "
                     "--provider Test.Producer", LTR, path));
    long rec = tu_session_pid("kc", "recorder pid ");
    assert_true(rec > 0);
    /* Events are lost for sure: the recorder is stopped once the producer
     * attached (by its first event) and before its threads write, so the
     * four buffers of 4 KB fill and stay full (eight threads and four
     * buffers alone lost none once: on a loaded machine the recorder kept up
     * with the threads, the flake helper's 10 rounds of two at once). */
    tu_result p = tu_run("%s --threads 8 --events 3000 --size 100 --wait-enabled 5 --ready-file %s/ready "
                         "--go-file %s/go & p=$!; "
                         "while [ ! -e %s/ready ] && kill -0 $p 2>/dev/null; do sleep 0.01; done; "
                         "[ -e %s/ready ] && kill -STOP %ld && touch %s/go; wait $p",
                         PRODUCER, dir, dir, dir, dir, rec, dir);
    kill((pid_t)rec, SIGCONT);
    assert_int_equal(p.status, 0);
    long long written = tu_field(p.out, "written"), lost = tu_field(p.out, "lost");
    tu_free(&p);
    assert_int_equal(written + lost, 24001);
    assert_true(lost > 0);
    /* The producer is gone: the next flush writes counters that account for
     * everything. Wait for them (a loaded machine may take a while). */
    tu_trace t = {0};
    for (double end = tu_now_s() + 20; tu_now_s() < end; usleep(100000)) {
        t = read_growing(path);
        if (t.has_counters && t.events_lost == (uint64_t)lost && t.events_written == (uint64_t)written)
            break;
    }
    assert_true(t.has_counters);
    tu_expect_ok(tu_run("kill -9 $(%s status --instance kc | sed -n 's/.*recorder pid \\([0-9]*\\).*/\\1/p')", LTR));
    /* What the killed recorder left: every event in the trace or counted lost. */
    t = read_growing(path);
    assert_false(t.complete);
    assert_true(t.has_counters);
    assert_int_equal(t.events_lost, (uint64_t)lost);
    assert_int_equal(t.process_events_lost, (uint64_t)lost);
    assert_int_equal(t.events_written, (uint64_t)written);
    assert_int_equal(t.provider_events, (uint64_t)written);
}

/* A marker, then a ring far too small for what follows: it wraps again and
 * again, and the marker is still in the save, usable by analyze. */
static void check_marker_kept(const char *dir, const char *mode, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.ltr", dir, name);
    tu_expect_ok(tu_run("%s start %s --instance %s --buffer-size 4 --buffers 8 --provider Test.Producer", LTR,
                     mode, name));
    tu_expect_ok(tu_run("%s marker --instance %s 'before the wraps'", LTR, name));
    tu_result p = tu_run("%s --events 20000 --size 16 --wait-enabled 5", PRODUCER);
    assert_int_equal(p.status, 0);
    tu_free(&p);
    tu_expect_ok(tu_run("%s marker --instance %s 'after the wraps'", LTR, name));
    if (!*mode) {
        char saved[600];
        snprintf(saved, sizeof saved, "%s/%s-saved.ltr", dir, name);
        tu_expect_ok(tu_run("%s save --instance %s %s", LTR, name, saved));
        tu_trace s = tu_read_trace(saved, "Test.Producer");
        assert_true(s.ok && s.complete);
        assert_true(s.events_overwritten > 10000); /* eight 4 KB buffers hold far fewer */
        assert_int_equal(s.markers, 2);
    }
    tu_expect_ok(tu_run("%s stop --instance %s %s", LTR, name, path));
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    assert_int_equal(t.markers, 2);
    assert_int_equal(t.damage, 0);
    tu_result a = tu_run("%s analyze %s --from 'before the wraps' --to 'after the wraps'", LTR, path);
    if (a.status != 0)
        fprintf(stderr, "analyze: %s%s", a.out, a.err);
    assert_int_equal(a.status, 0);
    tu_free(&a);
}

static void test_markers_survive_wraps(void **state)
{
    check_marker_kept(*state, "", "mk");
}

static void test_markers_in_file_mode(void **state)
{
    check_marker_kept(*state, "--filemode", "mkf");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_killed_recorder_keeps_counters, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_markers_survive_wraps, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_markers_in_file_mode, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
