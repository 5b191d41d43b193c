/*
 * bench/write_path.c — the producer write path: how many events per second a
 * thread writes into a running session, and what a disabled event costs.
 * Run by bench/write-path.sh, which starts the session; prints one line per
 * measurement. A benchmark, not a test: it asserts nothing.
 */
#include <ltr/provider.h>

#include "bench_threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

LTR_PROVIDER_DEFINE(bench_provider, "Ltr.Bench");
LTR_PROVIDER_DEFINE(off_provider, "Ltr.Bench.Disabled");
static const ltr_field_desc fields[] = {{"seq", LTR_TYPE_U64}, {"value", LTR_TYPE_U32}};
LTR_EVENT_DEFINE(ev_bench, bench_provider, 1, LTR_LEVEL_INFO, 0x1, "Bench", fields);
LTR_EVENT_DEFINE(ev_off, off_provider, 1, LTR_LEVEL_INFO, 0x1, "Off", fields);

static long per_thread;
static _Atomic unsigned long long lost_total;

static void *writer(void *arg)
{
    unsigned long long lost = 0;
    for (long i = 0; i < per_thread; i++) {
        ltr_write_result res;
        const ltr_value v[] = {LTR_U64(i), LTR_U32(42)};
        ltr_event_write_values(&ev_bench, v, 2, &res);
        lost += res.sessions_lost;
    }
    lost_total += lost;
    return NULL;
}

static void run(int threads, int quiet)
{
    lost_total = 0;
    double dt = bench_run_threads(threads, writer);
    double total = (double)per_thread * threads;
    if (!quiet)
        printf("ltr enabled   threads=%d events=%.0f  %.2f M events/s  %.1f ns/event (per thread)  lost=%llu\n",
           threads, total, total / dt / 1e6, dt * 1e9 / per_thread, lost_total);
}

static void run_disabled(void)
{
    long n = per_thread * 10;
    double t0 = bench_now_s();
    for (long i = 0; i < n; i++) {
        LTR_WRITE(&ev_off, LTR_U64(i), LTR_U32(42));
        __asm__ volatile("" ::: "memory"); /* keep the loop */
    }
    double dt = bench_now_s() - t0;
    printf("ltr disabled  threads=1 events=%ld  %.2f ns/event\n", n, dt * 1e9 / (double)n);
}

int main(int argc, char **argv)
{
    per_thread = argc > 1 ? atol(argv[1]) : 2000000;
    if (ltr_provider_register(&bench_provider) || ltr_provider_register(&off_provider)) {
        fprintf(stderr, "write_path: cannot register providers\n");
        return 1;
    }
    for (int i = 0; i < 500 && !ltr_event_enabled(&ev_bench); i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (!ltr_event_enabled(&ev_bench)) {
        fprintf(stderr, "write_path: start a session with --provider Ltr.Bench first\n");
        return 1;
    }
    run_disabled();
    run(1, 1); /* warm-up: the first pass over the ring takes its page faults */
    for (int threads = 1; threads <= 4; threads *= 2)
        run(threads, 0);
    return 0;
}
