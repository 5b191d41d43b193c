/*
 * tests/e2e/test_enablement.c — provider enablement: levels and keywords per
 * session, one provider in several sessions each getting only what it asked
 * for, and a running process seeing enablement come and go.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")


static void run_ok(const char *fmt, const char *a, const char *b)
{
    tu_result r = tu_run(fmt, a, b);
    if (r.status)
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

/* Runs the producer with an event of this level and keywords; returns what it wrote. */
static long long produce(int level, const char *keywords)
{
    tu_result r = tu_run("%s --events 100 --level %d --keywords %s", PRODUCER, level, keywords);
    assert_int_equal(r.status, 0);
    long long w = tu_field(r.out, "written");
    tu_free(&r);
    return w;
}

static uint64_t events_in(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.ltr", dir, name);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok);
    return t.provider_events;
}

static void test_levels_and_keywords_per_session(void **state)
{
    const char *dir = *state;
    /* a: keywords 0x2, up to level 3 (warning); b: everything */
    run_ok("%s start --instance a --provider Test.Producer:0x2:3%s", LTR, "");
    run_ok("%s start --instance b --provider Test.Producer%s", LTR, "");
    assert_int_equal(produce(4, "0x1"), 100); /* b only (level 4 > 3, keyword 0x1 not in 0x2) */
    assert_int_equal(produce(3, "0x2"), 200); /* both */
    assert_int_equal(produce(2, "0x4"), 100); /* b only: keyword 0x4 not in a's mask */
    assert_int_equal(produce(5, "0x2"), 100); /* b only: too verbose for a */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%%s stop --instance a %s/a.ltr%%s", dir);
    run_ok(cmd, LTR, "");
    snprintf(cmd, sizeof cmd, "%%s stop --instance b %s/b.ltr%%s", dir);
    run_ok(cmd, LTR, "");
    assert_int_equal(events_in(dir, "a"), 100);
    assert_int_equal(events_in(dir, "b"), 400);
}

static void test_not_enabled_costs_nothing_and_writes_nothing(void **state)
{
    run_ok("%s start --instance other --provider Some.Other.Provider%s", LTR, "");
    tu_result r = tu_run("%s --events 1000", PRODUCER);
    assert_int_equal(tu_field(r.out, "written"), 0);
    assert_int_equal(tu_field(r.out, "skipped"), 1000);
    assert_int_equal(tu_field(r.out, "enabled"), 0);
    tu_free(&r);
    run_ok("%s cancel --instance other%s", LTR, "");
}

static long long status_events(const char *name)
{
    tu_result r = tu_run("%s status --instance %s | awk '$1==\"events\" {print $6}'", LTR, name);
    long long v = r.status == 0 && r.out[0] ? atoll(r.out) : -1;
    tu_free(&r);
    return v;
}

static void test_enablement_changes_while_running(void **state)
{
    const char *dir = *state;
    char out[512];
    snprintf(out, sizeof out, "%s/producer.out", dir);
    /* The producer starts with no session: its provider is disabled. It waits
     * to be enabled, writes, then waits to be disabled, all in one process. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s --threads 2 --events 500 --wait-enabled 20 --wait-disabled 20 > %s 2>&1 &",
             PRODUCER, out);
    tu_result bg = tu_run("%s", cmd);
    assert_int_equal(bg.status, 0);
    tu_free(&bg);
    usleep(300000);
    run_ok("%s start --instance live --provider Test.Producer%s", LTR, "");
    long long seen = 0;
    for (int i = 0; i < 200 && seen < 1000; i++) {
        usleep(50000);
        seen = status_events("live");
    }
    assert_int_equal(seen, 1000);
    snprintf(cmd, sizeof cmd, "%%s stop --instance live %s/live.ltr%%s", dir);
    run_ok(cmd, LTR, "");
    /* The running producer saw the session go away. */
    tu_result r = {0};
    for (int i = 0; i < 200; i++) {
        usleep(50000);
        tu_free(&r);
        r = tu_run("cat %s", out);
        if (strstr(r.out, "enabled="))
            break;
    }
    assert_int_equal(tu_field(r.out, "written"), 1000);
    assert_int_equal(tu_field(r.out, "enabled"), 0);
    tu_free(&r);
    assert_int_equal(events_in(dir, "live"), 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_levels_and_keywords_per_session, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_not_enabled_costs_nothing_and_writes_nothing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_enablement_changes_while_running, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
