/*
 * tests/prim/test_grainclock.c — prim/grainclock.c, the heap agent's clock:
 * every value is CLOCK_MONOTONIC's grain at some moment of the call (never
 * a grain early or late, across many edges, on several threads at once
 * while the counter's rate is being measured), and where the kernel keeps
 * time with the CPU's counter (tsc, or kvm-clock read by the vDSO) most
 * calls do not ask clock_gettime; which clock sources and costs of the
 * clock's read let it use the counter.
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Whether the grain clock should read the counter on this machine, found
 * apart from grainclock.c: clock source tsc, or kvm-clock read by the vDSO
 * (clock_gettime far cheaper than the same clock by system call). */
static int counter_expected(void)
{
    char buf[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f)
        return 0;
    int got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!got || strcmp(buf, "kvm-clock\n"))
        return got && !strcmp(buf, "tsc\n");
    struct timespec ts;
    uint64_t t0 = ltr_now_ns();
    for (int i = 0; i < 1000; i++)
        clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t1 = ltr_now_ns();
    for (int i = 0; i < 1000; i++)
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (t1 - t0) * 2 < ltr_now_ns() - t1;
}

/* calls and reads count from the rate's measure on (5 ms in), those
 * before it being clock reads all */
typedef struct run {
    uint64_t grain, calls, bad, reads;
} run;

/* Calls for at least 60 ms (past the 2 ms the rate takes to measure): each
 * value between the grains of the clock read just before and just after. */
static void *bracket(void *arg)
{
    run *r = arg;
    ltr_grain_clock c;
    memset(&c, 0, sizeof c);
    uint64_t start = ltr_now_ns(), early_reads = 0;
    bool early = true;
    for (;;) {
        uint64_t a = ltr_now_ns();
        uint64_t g = ltr_grain_now(&c, r->grain);
        uint64_t b = ltr_now_ns();
        r->calls++;
        r->bad += g < a - a % r->grain || g > b - b % r->grain || g % r->grain;
        if (early && b - start > 5000000u) {
            /* this call came 2 ms after the first (the base), so the rate
             * is known: the calls so far read the clock, however many a
             * loaded machine let run in those 5 ms */
            early = false;
            early_reads = c.clock_reads;
            r->calls = 0;
        }
        if (b - start > 60000000u)
            break;
    }
    r->reads = c.clock_reads - early_reads;
    return NULL;
}

static void test_every_value_is_the_grain_of_its_moment(void **state)
{
    (void)state;
    enum { THREADS = 4 };
    static const uint64_t grains[2] = {100000, 1000}; /* the agent's; one that passes an edge every few calls */
    for (int k = 0; k < 2; k++) {
        pthread_t t[THREADS];
        run r[THREADS];
        memset(r, 0, sizeof r);
        for (int i = 0; i < THREADS; i++) {
            r[i].grain = grains[k];
            assert_int_equal(pthread_create(&t[i], NULL, bracket, &r[i]), 0);
        }
        uint64_t calls = 0, reads = 0;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
            assert_int_equal(r[i].bad, 0);
            calls += r[i].calls;
            reads += r[i].reads;
        }
        assert_true(calls > 10000);
        /* 100 us: a clock read per grain and thread once the rate is known
         * (a run at load 20+, session 40, failed when the 2 ms before it
         * counted: their calls all read the clock, and fewer came after);
         * calls come every 100 ns or so */
        if (k == 0 && counter_expected())
            assert_true(reads * 4 < calls);
        fprintf(stderr, "grain %llu ns: %llu calls, %llu clock reads%s\n", (unsigned long long)grains[k],
                (unsigned long long)calls, (unsigned long long)reads,
                ltr_grain_counter_dropped() ? " (counter dropped)" : "");
    }
}

/* The counter under kvm-clock only when the vDSO reads it (its fallback, the
 * system call, costs as much as the call it is compared with); never under
 * another clock source, whatever the costs. */
static void test_which_clocks_trust_the_counter(void **state)
{
    (void)state;
#if defined(__x86_64__)
    assert_true(ltr_grain_counter_trusted("tsc", 0, 0));
    assert_true(ltr_grain_counter_trusted("kvm-clock", 147, 2200)); /* a PVM guest's */
    assert_true(ltr_grain_counter_trusted("kvm-clock", 40, 300));
    assert_false(ltr_grain_counter_trusted("kvm-clock", 2300, 2200)); /* the vDSO's fallback */
    assert_false(ltr_grain_counter_trusted("kvm-clock", 160, 300));
    assert_false(ltr_grain_counter_trusted("kvm-clock", 0, 0));
#endif
    assert_false(ltr_grain_counter_trusted("hpet", 147, 2200));
    assert_false(ltr_grain_counter_trusted("acpi_pm", 0, 0));
    assert_false(ltr_grain_counter_trusted("", 147, 2200));
    assert_false(ltr_grain_counter_trusted("tsc-early", 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_clocks_trust_the_counter),
        cmocka_unit_test(test_every_value_is_the_grain_of_its_moment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
