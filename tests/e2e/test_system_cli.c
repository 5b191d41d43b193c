/*
 * tests/e2e/test_system_cli.c — the system provider through the ltr command
 * (docs/system-provider.md): `ltr start memory --pid P` records P's memory
 * counters as /proc shows them; the built-in profiles general and memory
 * record system events instead of starting nothing; `ltr analyze` puts the
 * private bytes beside the heap's outstanding bytes.
 */
#include "util/testutil.h"
#include "base/system_events.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LTR tu_ltr()
#define MEMHOLD tu_test_bin("ltr-test-memhold")

/* The ProcessMemory samples of pid in a trace: their private bytes (at most
 * cap) and how many; and the SystemMemory events in *sys. */
static size_t samples_of(const char *path, uint32_t pid, uint64_t *priv, size_t cap, uint64_t *sys)
{
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    size_t n = 0;
    *sys = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        const ltr_layout *l = ev->layout;
        if (!l || !l->provider || strcmp(l->provider->name, LTR_SYSTEM_PROVIDER))
            continue;
        uint64_t p = 0, v = 0;
        if (l->event_id == LTR_SYS_EV_SYSTEM_MEMORY)
            ++*sys;
        if (l->event_id != LTR_SYS_EV_PROCESS_MEMORY || ltr_event_get_u64(ev, "pid", &p) || p != pid)
            continue;
        assert_int_equal(ltr_event_get_u64(ev, "private_bytes", &v), 0);
        if (n < cap)
            priv[n] = v;
        n++;
    }
    ltr_trace_close(t);
    return n;
}

/* Private bytes of pid now, from /proc, as the docs define them. */
static uint64_t proc_private(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = tu_read_file(path);
    assert_non_null(text);
    const char *a = strstr(text, "RssAnon:"), *s = strstr(text, "VmSwap:");
    assert_non_null(a);
    uint64_t v = strtoull(a + 8, NULL, 10) + (s ? strtoull(s + 7, NULL, 10) : 0);
    free(text);
    return v * 1024;
}

/* A number after "key": in JSON text; -1 if absent. */
static long long jfield(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

/* Starts memhold MB holding until killed; returns its pid once it is ready. */
static pid_t start_memhold(int mb)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        char arg[16];
        snprintf(arg, sizeof arg, "%d", mb);
        execl(MEMHOLD, MEMHOLD, arg, "-1", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[8] = {0};
    assert_int_equal(read(fds[0], buf, 6), 6);
    close(fds[0]);
    assert_string_equal(buf, "ready\n");
    return pid;
}

/* Waits until the session's system collector has recorded at least n more events. */
static void wait_events(const char *session, long long n)
{
    long long first = -1, now = -1;
    double deadline = tu_now_s() + 30;
    while (tu_now_s() < deadline) {
        tu_result r = tu_run("%s status --instance %s", LTR, session);
        const char *line = r.out ? strstr(r.out, "System Collector") : NULL;
        long long b = 0, s = 0, f = 0, rec = -1;
        if (line)
            sscanf(line, "System Collector %lld %lld KB %lld %lld", &b, &s, &f, &rec);
        tu_free(&r);
        now = rec;
        if (first < 0)
            first = now;
        if (now >= 0 && now - first >= n)
            return;
        usleep(20000);
    }
    fail_msg("the session recorded %lld events in 30 s, not %lld more", now - first, n);
}

/* Memory counters agree with /proc within one sample: P holds its memory
 * still, so the sample after a /proc read says the same. */
static void test_memory_counters_agree_with_proc(void **state)
{
    const char *dir = *state;
    pid_t p = start_memhold(24);
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/mem.ltr", dir);
    tu_expect_ok(tu_run("%s start memory --filemode --instance m1 --pid %d --memory-interval 0.05 -o %s", LTR,
                        (int)p, trace));
    wait_events("m1", 4);
    uint64_t seen = proc_private(p);
    wait_events("m1", 4);
    tu_expect_ok(tu_run("%s stop %s --instance m1 --force", LTR, trace));
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    uint64_t priv[4096], sys;
    size_t n = samples_of(trace, (uint32_t)p, priv, 4096, &sys);
    assert_true(n >= 2 && n <= 4096);
    assert_true(sys >= n / 2); /* the machine's figure at each interval too */
    size_t equal = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(priv[i] >= 24u << 20); /* every sample sees the 24 MB held */
        equal += priv[i] == seen;
    }
    assert_true(equal >= 1);
}

/* The built-in profiles record system events rather than nothing. */
static void check_profile_records(const char *dir, const char *profile)
{
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/%s.ltr", dir, profile);
    tu_result r = tu_run("%s start %s --filemode --instance p1 --memory-interval 0.05 -o %s", LTR, profile, trace);
    assert_null(strstr(r.err, "starts nothing"));
    tu_expect_ok(r);
    wait_events("p1", 3);
    tu_expect_ok(tu_run("%s stop %s --instance p1", LTR, trace));
    tu_trace t = tu_read_trace(trace, LTR_SYSTEM_PROVIDER);
    assert_true(t.ok);
    assert_true(t.provider_events >= 3);
    assert_int_equal(t.events_lost, 0);
}

static void test_start_memory_records(void **state) { check_profile_records(*state, "memory"); }
static void test_start_general_records(void **state) { check_profile_records(*state, "general"); }

/* --pid with only the system provider is accepted; --memory-interval without it is refused. */
static void test_options(void **state)
{
    (void)state;
    tu_result r = tu_run("%s start --memory-interval 1 --instance o1", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--memory-interval"));
    tu_free(&r);
    r = tu_run("%s start memory --memory-interval 0 --instance o1", LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "0.01"));
    tu_free(&r);
}

/* analyze: private bytes over the window beside the heap's outstanding bytes,
 * and how much of them the heap explains: memhold's 24 MB of malloc are most
 * of its private bytes. */
static void test_analyze_heap_share(void **state)
{
    const char *dir = *state;
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/heapmem.ltr", dir);
    tu_expect_ok(tu_run("%s start heap memory --filemode --instance a1 --memory-interval 0.05 -o %s", LTR, trace));
    tu_expect_ok(tu_run("%s run --instance a1 -- %s 24 600", LTR, MEMHOLD));
    tu_expect_ok(tu_run("%s stop %s --instance a1", LTR, trace));
    tu_result r = tu_run("%s analyze %s --format json", LTR, trace);
    assert_int_equal(r.status, 0);
    const char *m = strstr(r.out, "\"memory\":[{");
    assert_non_null(m);
    long long samples = jfield(m, "samples"), priv = jfield(m, "private_last"), heap = jfield(m, "heap_last");
    tu_free(&r);
    assert_true(samples >= 2);
    assert_true(heap >= 24ll << 20);
    assert_true(priv >= heap && heap * 100 / priv >= 80);
    r = tu_run("%s analyze %s", LTR, trace);
    assert_non_null(strstr(r.out, "the heap explains"));
    assert_non_null(strstr(r.out, "private bytes (RssAnon + VmSwap)"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memory_counters_agree_with_proc, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_memory_records, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_general_records, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_options, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_analyze_heap_share, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
