/*
 * tests/prim/test_grainclock_slew.c — prim/grainclock.c while the clock is
 * slewed faster than the 2 % margin allows. CLOCK_MONOTONIC follows
 * adjtimex's tick and frequency: chronyd on Linux slews by up to 83 333 ppm
 * by default (maxslewrate), by adjusting the tick (up to 10 %). Here the
 * clock runs 6 % fast from a moment on, after the rate was measured at the
 * normal speed (clock_gettime replaced, as in test_grainclock_preempt.c).
 * Every stamp must still be its call's grain (prim.h: never earlier).
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

static void test_a_slewed_clock_gives_no_early_stamp(void **state)
{
    (void)state;
    const uint64_t grain = 100000; /* the agent's */
    ltr_grain_clock c;
    memset(&c, 0, sizeof c);
    uint64_t start = ltr_now_ns();
    while (ltr_now_ns() - start < 10000000u) /* the rate measured at the normal speed */
        ltr_grain_now(&c, grain);
    fake_extra_pct = 6;
    fake_from = ltr_now_ns();
    uint64_t reads0 = c.clock_reads;
    stamp_tally t = stamps_between_reads(&c, grain, fake_from);
    uint64_t early = t.early;
    fake_from = 0;
    fprintf(stderr, "%llu calls, %llu clock reads, %llu stamps a grain early (up to %llu ns before the grain)\n",
            (unsigned long long)t.calls, (unsigned long long)(c.clock_reads - reads0), (unsigned long long)early,
            (unsigned long long)t.worst_early);
    assert_int_equal(early, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_slewed_clock_gives_no_early_stamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
