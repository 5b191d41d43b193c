/*
 * tests/prim/fake_clock.h — a clock_gettime of the test program's own (the
 * executable's definition comes before libc's), for the grain clock's tests
 * that need the clock to lie: late once, or running fast from a moment on;
 * and the loop both use to hold stamps to the clock read around them.
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

/* What the grain clock stamped for 60 ms of the clock from start, each
 * stamp between two clock reads: the calls, the stamps below the grain of
 * the read before (early, and the most by how much) and past the grain of
 * the read after (late). Needs prim/prim.h (ltr_grain_now). */
typedef struct stamp_tally {
    uint64_t calls, early, late, worst_early;
} stamp_tally;

static stamp_tally stamps_between_reads(ltr_grain_clock *c, uint64_t grain, uint64_t start)
{
    stamp_tally t = {0};
    for (;;) {
        uint64_t a = ltr_now_ns();
        uint64_t g = ltr_grain_now(c, grain);
        uint64_t b = ltr_now_ns();
        t.calls++;
        uint64_t lo = a - a % grain;
        if (g < lo) {
            t.early++;
            if (lo - g > t.worst_early)
                t.worst_early = lo - g;
        } else if (g > b - b % grain) {
            t.late++;
        }
        if (b - start > 60000000u)
            return t;
    }
}

#endif
