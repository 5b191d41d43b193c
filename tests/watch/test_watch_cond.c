/*
 * tests/watch/test_watch_cond.c — the watch's condition (watch/cond.c) on
 * made-up series of private bytes, the sizes it parses and prints
 * (base/units.c), the monitor's line of a poll, and the names later
 * triggers save to.
 */
#include "base/units.h"
#include "watch/watch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1024ull * 1024)

static void test_size_parse(void **state)
{
    (void)state;
    static const struct { const char *text; uint64_t bytes; } ok[] = {
        {"40M", 40 * MiB}, {"40MB", 40 * MiB}, {"40MiB", 40 * MiB}, {"40 mb", 40 * MiB},
        {"3G", 3072 * MiB}, {"512KiB", 512 * 1024}, {"512k", 512 * 1024}, {"1.5G", 1536 * MiB},
        {"100", 100}, {"100B", 100}, {"2T", 2048ull * 1024 * MiB}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        uint64_t v = 0;
        assert_int_equal(ltr_size_parse(ok[i].text, &v), 0);
        assert_true(v == ok[i].bytes);
    }
    static const char *bad[] = {"", "M", "-40M", "40X", "40 M B", "abc", "nan", "inf", " 40M", "4e"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t v = 7;
        assert_int_equal(ltr_size_parse(bad[i], &v), -EINVAL);
        assert_true(v == 7);
    }
    uint64_t v;
    assert_int_equal(ltr_size_parse("99999999T", &v), -ERANGE);
}

static void test_size_format(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(ltr_size_format(0, b, sizeof b), "0 B");
    assert_string_equal(ltr_size_format(1023, b, sizeof b), "1023 B");
    assert_string_equal(ltr_size_format(1024, b, sizeof b), "1.00 KiB");
    assert_string_equal(ltr_size_format(40 * MiB, b, sizeof b), "40.0 MiB");
    assert_string_equal(ltr_size_format(3072 * MiB, b, sizeof b), "3.00 GiB");
    assert_string_equal(ltr_size_format(500 * MiB, b, sizeof b), "500 MiB");
    assert_string_equal(ltr_size_format_signed(-(int64_t)(2 * MiB), b, sizeof b), "-2.00 MiB");
    assert_string_equal(ltr_size_format_signed((int64_t)(2 * MiB), b, sizeof b), "+2.00 MiB");
}

/* The poll at which the series first fires (1-based), and how many times it fired. */
static int first_fire(const ltr_watch_rule *r, const uint64_t *series, size_t n, int *fires)
{
    ltr_watch_cond c;
    ltr_watch_cond_init(&c, r);
    int first = 0;
    *fires = 0;
    for (size_t i = 0; i < n; i++) {
        ltr_watch_verdict v;
        ltr_watch_cond_poll(&c, series[i], &v);
        assert_true(v.waits_for[0] != 0);
        if (v.state == LTR_WATCH_FIRE) {
            assert_true(v.condition[0] != 0);
            (*fires)++;
            if (!first)
                first = (int)i + 1;
        }
    }
    return first;
}

static void test_rule_check(void **state)
{
    (void)state;
    ltr_error err;
    ltr_watch_rule none = {0}, both = {.growth = 1, .growth_auto = true}, ok = {.above = 1};
    assert_int_equal(ltr_watch_rule_check(&none, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "--private-bytes-above"));
    assert_int_equal(ltr_watch_rule_check(&both, &err), -EINVAL);
    assert_int_equal(ltr_watch_rule_check(&ok, &err), 0);
}

/* Both thresholds: the first poll where both hold, not before (growth of
 * 45 MiB below the level at poll 2, above it with growth of only 10 MiB at
 * poll 3, which is not more than 10 MiB). */
static void test_fixed_both(void **state)
{
    (void)state;
    ltr_watch_rule r = {.above = 100 * MiB, .growth = 10 * MiB};
    uint64_t s[] = {50 * MiB, 95 * MiB, 105 * MiB, 106 * MiB, 120 * MiB, 135 * MiB, 150 * MiB};
    int fires;
    assert_int_equal(first_fire(&r, s, 7, &fires), 5);
    assert_int_equal(fires, 1); /* the episode goes on: no second trigger */
}

static void test_fixed_rearms(void **state)
{
    (void)state;
    ltr_watch_rule r = {.above = 100 * MiB};
    uint64_t s[] = {90 * MiB, 101 * MiB, 102 * MiB, 95 * MiB, 101 * MiB};
    int fires;
    assert_int_equal(first_fire(&r, s, 5, &fires), 2);
    assert_int_equal(fires, 2); /* it ended (95) and started again */
}

/* What --monitor and the bundle's monitor.txt print of a poll: the one that
 * fires says the condition was met (it said "waiting for growth above 2.00
 * MiB" beside a growth of 3.05 MiB), and one where the condition holds on
 * after a trigger says it waits for it to end, not for what holds already;
 * one whose recorder did not answer says that, not a reach of 0 s. */
static void test_poll_lines(void **state)
{
    (void)state;
    ltr_watch_rule r = {.above = 100 * MiB};
    uint64_t s[] = {90 * MiB, 101 * MiB, 102 * MiB};
    ltr_watch_cond c;
    ltr_watch_cond_init(&c, &r);
    char line[3][512];
    for (int i = 0; i < 3; i++) {
        ltr_watch_poll p = {.pid = 42};
        ltr_watch_cond_poll(&c, s[i], &p.v);
        ltr_watch_poll_format(&p, 0, line[i], sizeof line[i]);
    }
    assert_non_null(strstr(line[0], "waiting for private bytes above 100 MiB"));
    assert_non_null(strstr(line[1], "condition met: trigger"));
    assert_null(strstr(line[1], "waiting for"));
    assert_non_null(strstr(line[2], "waiting for the condition to end (it held at the last trigger), then private "
                                    "bytes above 100 MiB"));
    /* a recorder that did not answer (SIGSTOP) is said so, not "reaches back 0 s" */
    ltr_watch_poll p = {.pid = 42, .no_answer = true};
    ltr_watch_cond_poll(&c, 103 * MiB, &p.v);
    ltr_watch_poll_format(&p, 0, line[0], sizeof line[0]);
    assert_non_null(strstr(line[0], "pid 42  private 103 MiB  growth +1.00 MiB  recorder does not answer  waiting"));
    assert_null(strstr(line[0], "reaches back"));
}

static void test_growth_not_on_first_poll(void **state)
{
    (void)state;
    ltr_watch_rule r = {.growth = 1 * MiB};
    uint64_t s[] = {500 * MiB, 500 * MiB, 499 * MiB};
    int fires;
    assert_int_equal(first_fire(&r, s, 3, &fires), 0);
}

/* auto: heavy transient churn (swings of 40 MiB either way, spikes of a
 * single poll up to 80 MiB) never fires; a slow steady leak of 1 MiB per poll
 * under the same churn does, once the band has moved by its width. */
static void test_auto(void **state)
{
    (void)state;
    ltr_watch_rule r = {.growth_auto = true};
    enum { N = 400 };
    uint64_t churn[N], leak[N];
    srand(7);
    for (int i = 0; i < N; i++) {
        uint64_t noise = (uint64_t)(rand() % 40) * MiB + (i % 17 == 0 ? 40 * MiB : 0);
        churn[i] = 200 * MiB + noise;
        leak[i] = 200 * MiB + noise + (uint64_t)i * MiB;
    }
    int fires;
    assert_int_equal(first_fire(&r, churn, N, &fires), 0);
    int first = first_fire(&r, leak, N, &fires);
    assert_true(first > LTR_WATCH_WARMUP_POLLS);
    assert_true(first < 200); /* 1 MiB a poll: the band (~80 MiB wide) moved within 200 polls */
    assert_true(fires >= 2);  /* and re-armed: each further band's width fires again */
}

static void test_auto_idle_floor(void **state)
{
    (void)state;
    ltr_watch_rule r = {.growth_auto = true};
    uint64_t s[20];
    for (int i = 0; i < 20; i++) /* idle during the warm-up, then +300 KiB a poll */
        s[i] = 10 * MiB + (i < LTR_WATCH_WARMUP_POLLS ? 0 : (uint64_t)(i - LTR_WATCH_WARMUP_POLLS + 1) * 300 * 1024);
    int fires;
    int first = first_fire(&r, s, 20, &fires);
    /* not on the first few hundred KiB: the floor is 1 MiB above the warm-up */
    assert_true(first > LTR_WATCH_WARMUP_POLLS + 3);
}

static void test_trace_path(void **state)
{
    (void)state;
    char dir[] = "/tmp/ltr-test-watch-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char file[256], path[300], taken[300];
    snprintf(file, sizeof file, "%s/trace.ltr", dir);
    unsigned n = 1;
    assert_int_equal(ltr_watch_trace_path(file, false, &n, path, sizeof path), 0);
    assert_string_equal(path, file);
    close(open(file, O_CREAT | O_WRONLY, 0600)); /* FILE exists: never overwritten */
    snprintf(taken, sizeof taken, "%s/trace-2.ltr", dir);
    assert_int_equal(symlink("/etc/passwd", taken), 0); /* a planted link is taken too */
    n = 1;
    assert_int_equal(ltr_watch_trace_path(file, false, &n, path, sizeof path), 0);
    snprintf(taken, sizeof taken, "%s/trace-3.ltr", dir);
    assert_string_equal(path, taken);
    assert_int_equal(n, 3);
    snprintf(file, sizeof file, "%s/noext", dir);
    n = 2;
    assert_int_equal(ltr_watch_trace_path(file, false, &n, path, sizeof path), 0);
    snprintf(taken, sizeof taken, "%s/noext-2", dir);
    assert_string_equal(path, taken);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_parse),     cmocka_unit_test(test_size_format),
        cmocka_unit_test(test_rule_check),     cmocka_unit_test(test_fixed_both),
        cmocka_unit_test(test_fixed_rearms),   cmocka_unit_test(test_poll_lines),
        cmocka_unit_test(test_growth_not_on_first_poll),
        cmocka_unit_test(test_auto),           cmocka_unit_test(test_auto_idle_floor),
        cmocka_unit_test(test_trace_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
