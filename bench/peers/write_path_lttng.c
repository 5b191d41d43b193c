/*
 * bench/peers/write_path_lttng.c — the write-path benchmark of
 * bench/write_path.c with an LTTng-UST tracepoint instead of an ltr event:
 * same payload, same thread counts, same output lines.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"

#include "../bench_threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long per_thread;

static void *writer(void *arg)
{
    for (long i = 0; i < per_thread; i++)
        lttng_ust_tracepoint(ltr_bench, tick, (uint64_t)i, 42u);
    return NULL;
}

static void run(int threads, int quiet)
{
    double dt = bench_run_threads(threads, writer);
    double total = (double)per_thread * threads;
    if (!quiet)
        printf("lttng-ust     threads=%d events=%.0f  %.2f M events/s  %.1f ns/event (per thread)\n", threads,
           total, total / dt / 1e6, dt * 1e9 / per_thread);
}

int main(int argc, char **argv)
{
    per_thread = argc > 1 ? atol(argv[1]) : 2000000;
    for (int i = 0; i < 500 && !lttng_ust_tracepoint_enabled(ltr_bench, tick); i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (!lttng_ust_tracepoint_enabled(ltr_bench, tick)) {
        fprintf(stderr, "write_path_lttng: the tracepoint was not enabled (is lttng-sessiond running?)\n");
        return 1;
    }
    run(1, 1); /* warm-up: the first pass over the ring takes its page faults */
    for (int threads = 1; threads <= 4; threads *= 2)
        run(threads, 0);
    return 0;
}
