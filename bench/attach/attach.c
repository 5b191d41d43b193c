/*
 * bench/attach/attach.c — how long an attach stops the target, seen from the
 * target: a thread of it reads the clock in a tight loop and reports the
 * longest gap between two reads. Each run starts a fresh target (a ticking
 * main thread, which the injector finds in user code at once, and one
 * thread allocating: two busy threads for the two CPUs of the project's VM), lets it tick 300 ms alone (the gap the machine itself
 * causes), then loads libltr-heap.so into it with the injector (dormant: no
 * session) and lets it tick 300 ms more. Prints per run the baseline gap,
 * the gap of the attach window, and the injector's own figure (from the
 * chosen stop to the detach).
 * With "alone", the target has the ticking thread only: the injector must
 * stop that one, and its gap is the stop itself.
 *   usage: attach AGENT.so [RUNS [alone]]
 */
#include "inject/inject.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *churn(void *arg)
{
    (void)arg;
    for (;;) {
        void *p = malloc(64 + (size_t)(now_ns() & 1023));
        free(p);
    }
    return NULL;
}

/* The target: ticks for ms milliseconds, writes its longest gap (ns) to
 * fd. The loop reads the TSC, in the program's own code, so that the
 * injector may stop this very thread; cycles become ns by the clock. */
static void tick(int fd, unsigned ms)
{
    uint64_t t0 = now_ns(), c0 = __builtin_ia32_rdtsc(), last = c0, worst = 0, end = t0 + (uint64_t)ms * 1000000u;
    for (unsigned i = 0;; i++) {
        uint64_t c = __builtin_ia32_rdtsc();
        if (c - last > worst)
            worst = c - last;
        last = c;
        if ((i & 4095) == 0 && now_ns() >= end)
            break;
    }
    double ns_per_cycle = (double)(now_ns() - t0) / (double)(__builtin_ia32_rdtsc() - c0);
    uint64_t ns = (uint64_t)((double)worst * ns_per_cycle);
    if (write(fd, &ns, sizeof ns) != sizeof ns)
        _exit(1);
}

static void target(int fd, bool alone)
{
    pthread_t th;
    if (!alone)
        pthread_create(&th, NULL, churn, NULL);
    tick(fd, 300); /* alone */
    tick(fd, 300); /* the attach comes during this one */
    _exit(0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: attach AGENT.so [RUNS]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    bool alone = argc > 3 && !strcmp(argv[3], "alone");
    double base[256], gap[256], call[256];
    if (runs < 1 || runs > 256)
        runs = 10;
    for (int r = 0; r < runs; r++) {
        int fds[2];
        if (pipe(fds))
            return 1;
        pid_t p = fork();
        if (p == 0) {
            close(fds[0]);
            target(fds[1], alone);
        }
        close(fds[1]);
        uint64_t b = 0, g = 0;
        if (read(fds[0], &b, sizeof b) != sizeof b)
            return 1;
        usleep(50000);
        ltr_error err;
        ltr_inject_report rep;
        if (ltr_inject_dlopen(p, argv[1], 3000, &rep, &err) != 0) {
            fprintf(stderr, "attach: %s\n", err.msg);
            return 1;
        }
        if (read(fds[0], &g, sizeof g) != sizeof g)
            return 1;
        waitpid(p, NULL, 0);
        close(fds[0]);
        base[r] = (double)b / 1e6;
        gap[r] = (double)g / 1e6;
        call[r] = (double)rep.call_ns / 1e6;
        printf("run %2d: longest gap alone %6.3f ms, with the attach %6.3f ms; injector: %s thread, %u tries, "
               "stop to detach %6.3f ms\n", r, base[r], gap[r], rep.tid == p ? "the ticking" : "the other",
               rep.tries, call[r]);
    }
    qsort(base, (size_t)runs, sizeof *base, cmp);
    qsort(gap, (size_t)runs, sizeof *gap, cmp);
    qsort(call, (size_t)runs, sizeof *call, cmp);
    printf("median of %d runs: gap alone %.3f ms, gap with the attach %.3f ms (max %.3f), stop to detach %.3f ms\n",
           runs, base[runs / 2], gap[runs / 2], gap[runs - 1], call[runs / 2]);
    return 0;
}
