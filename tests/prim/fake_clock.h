/*
 * tests/prim/fake_clock.h — a clock_gettime of the test program's own (the
 * executable's definition comes before libc's), for the grain clock's tests
 * that need the clock to lie: late once, or running fast from a moment on.
 * Included by one file of each test program; it defines the function.
 */
#ifndef LTR_TESTS_FAKE_CLOCK_H
#define LTR_TESTS_FAKE_CLOCK_H

#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

static int fake_delay_next;      /* the next clock_gettime is late by 5 ms */
static uint64_t fake_from;       /* nonzero: from this clock value on, the clock runs fast */
static uint64_t fake_extra_pct;  /* by this many percent (1900: 20 times as fast) */

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    if (fake_delay_next) {
        fake_delay_next = 0;
        struct timespec d = {0, 5000000};
        nanosleep(&d, NULL); /* the thread off its CPU between rdtsc and the clock */
    }
    int rc = real(id, ts);
    uint64_t ns = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
    if (fake_from && ns > fake_from) {
        ns += (ns - fake_from) * fake_extra_pct / 100;
        ts->tv_sec = (time_t)(ns / 1000000000u);
        ts->tv_nsec = (long)(ns % 1000000000u);
    }
    return rc;
}

#endif
