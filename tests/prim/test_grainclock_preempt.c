/*
 * tests/prim/test_grainclock_preempt.c — prim/grainclock.c when its two
 * reads disagree, with clock_gettime replaced here (the executable's
 * definition comes first) so that it is certain:
 * - the thread that takes the calibration's first sample is held up between
 *   its rdtsc and its clock_gettime (a preemption, a hypervisor's steal, a
 *   page fault on the vvar page): the rate must not come out too high, or
 *   the edges would lie past the real ones and stamps come out early (found
 *   by a review: 686 485 of 977 913 stamps early, by up to 300 us);
 * - the counter falls far behind the clock after calibration (the kernel
 *   gave up on the TSC): the counter is turned off and every later stamp
 *   is the clock's.
 * The tests run in this order: the second needs the rate the first made.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "prim/prim.h"
#include "prim/fake_clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Far past what a loose rate could hide: the rate is a lower bound, and
 * under load (a CI run) a held-up sample left it low enough that a clock
 * twice as fast went unnoticed. */
#define FAST 20u

static void test_a_late_first_sample_gives_early_stamps(void **state)
{
    (void)state;
    const uint64_t grain = 100000; /* the agent's */
    ltr_grain_clock c;
    memset(&c, 0, sizeof c);
    uint64_t start = ltr_now_ns();
    fake_delay_next = 1; /* consumed inside this first ltr_grain_now, after its rdtsc */
    ltr_grain_now(&c, grain);
    assert_int_equal(fake_delay_next, 0);
    stamp_tally t = stamps_between_reads(&c, grain, start);
    uint64_t bad = t.early + t.late;
    fprintf(stderr, "%llu calls, %llu stamps outside their call's grains, up to %llu us early\n",
            (unsigned long long)t.calls, (unsigned long long)bad, (unsigned long long)t.worst_early / 1000);
    assert_int_equal(bad, 0);
}

static void test_a_counter_behind_the_clock_is_dropped(void **state)
{
    (void)state;
    const uint64_t grain = 100000;
    ltr_grain_clock c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < 1000; i++) /* on the counter: the rate is known (the test before) */
        ltr_grain_now(&c, grain);
    fake_extra_pct = (FAST - 1) * 100;
    fake_from = ltr_now_ns();
    uint64_t start = fake_from, calls = 0, bad = 0, last_reads = 0, last_calls = 0;
    for (;;) {
        uint64_t a = ltr_now_ns();
        uint64_t g = ltr_grain_now(&c, grain);
        uint64_t b = ltr_now_ns();
        calls++;
        /* past the first 10 ms of real time (a grain's stamps may be early
         * before the counter is caught out), every stamp within its call */
        if (b - start > FAST * 10000000ull) {
            bad += g < a - a % grain || g > b - b % grain;
            last_calls++;
            if (!last_reads)
                last_reads = c.clock_reads;
        }
        if (b - start > FAST * 40000000ull)
            break;
    }
    fake_from = 0;
    assert_int_equal(bad, 0);
    /* the counter off: every call of the last stretch read the clock */
    assert_int_equal(c.clock_reads - last_reads + 1, last_calls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_late_first_sample_gives_early_stamps),
        cmocka_unit_test(test_a_counter_behind_the_clock_is_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
