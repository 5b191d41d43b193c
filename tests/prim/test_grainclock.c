/*
 * tests/prim/test_grainclock.c — prim/grainclock.c, the heap agent's clock:
 * every value is CLOCK_MONOTONIC's grain at some moment of the call (never
 * a grain early or late, across many edges, on several threads at once
 * while the counter's rate is being measured), and where the kernel keeps
 * time with the CPU's counter most calls do not ask clock_gettime.
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The kernel's clock source, as grainclock.c reads it. */
static int kernel_uses_tsc(void)
{
    char buf[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f)
        return 0;
    int ok = fgets(buf, sizeof buf, f) && !strcmp(buf, "tsc\n");
    fclose(f);
    return ok;
}

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
    uint64_t start = ltr_now_ns();
    for (;;) {
        uint64_t a = ltr_now_ns();
        uint64_t g = ltr_grain_now(&c, r->grain);
        uint64_t b = ltr_now_ns();
        r->calls++;
        r->bad += g < a - a % r->grain || g > b - b % r->grain || g % r->grain;
        if (b - start > 60000000u)
            break;
    }
    r->reads = c.clock_reads;
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
        /* 100 us: a clock read per grain and thread, and those of the 2 ms
         * before the rate is known; calls come every 100 ns or so */
        if (k == 0 && kernel_uses_tsc())
            assert_true(reads * 4 < calls);
        fprintf(stderr, "grain %llu ns: %llu calls, %llu clock reads\n", (unsigned long long)grains[k],
                (unsigned long long)calls, (unsigned long long)reads);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_value_is_the_grain_of_its_moment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
