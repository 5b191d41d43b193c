/*
 * bench/bench_threads.h — the timing both write-path programs share (ltr's,
 * write_path.c, and LTTng-UST's, peers/write_path_lttng.c), so that the two
 * figures printed side by side are measured the same way.
 */
#ifndef LTR_BENCH_THREADS_H
#define LTR_BENCH_THREADS_H

#include <pthread.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs fn on `threads` threads (at most 64) at once; the seconds until all ended. */
static inline double bench_run_threads(int threads, void *(*fn)(void *))
{
    pthread_t t[64];
    double t0 = bench_now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, fn, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return bench_now_s() - t0;
}

#endif
