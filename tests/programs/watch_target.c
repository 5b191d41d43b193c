/*
 * tests/programs/watch_target.c — a service for `ltr watch`'s tests
 * (tests/e2e/test_watch.c): it says "ready" with its pid, then every TICK ms
 * allocates and frees CHURN_KB of short-lived blocks (transient activity, no
 * leak), and from the first SIGUSR1 on also leaks GROW_KB per tick from
 * leak_on_signal(), in 64 KB blocks touched page by page, so its private
 * bytes grow and the growth's stack is known. With GROW_KB given as a
 * negative number it leaks -GROW_KB per tick from the start (a slow steady
 * leak, for auto's test). Runs until killed; SIGUSR2 has it kill itself
 * (SIGKILL) at its next tick, as the OOM killer would.
 *
 *     watch-target TICK_MS CHURN_KB GROW_KB
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t growing;
static void on_usr1(int sig) { (void)sig; growing = 1; }
static volatile sig_atomic_t ending;
static void on_usr2(int sig) { (void)sig; ending = 1; }

__attribute__((noinline)) static void leak_on_signal(long kb)
{
    for (long done = 0; done < kb; done += 64) {
        char *p = malloc(64 * 1024);
        if (p)
            memset(p, 7, 64 * 1024);
        __asm__ volatile("" : : "r"(p) : "memory"); /* kept: a leak, on purpose */
    }
}

__attribute__((noinline)) static void churn(long kb)
{
    void *blocks[256];
    int n = 0;
    for (long done = 0; done < kb && n < 256; done += 16) {
        blocks[n] = malloc(16 * 1024);
        if (blocks[n])
            memset(blocks[n], 1, 16 * 1024);
        n++;
    }
    while (n > 0)
        free(blocks[--n]);
}

int main(int argc, char **argv)
{
    long tick = argc > 1 ? atol(argv[1]) : 50, churn_kb = argc > 2 ? atol(argv[2]) : 1024;
    long grow_kb = argc > 3 ? atol(argv[3]) : 1024;
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, on_usr2);
    if (grow_kb < 0) {
        growing = 1;
        grow_kb = -grow_kb;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;) {
        churn(churn_kb);
        if (growing)
            leak_on_signal(grow_kb);
        if (ending) /* from the loop, not the handler: its last tick's events are made */
            raise(SIGKILL);
        struct timespec ts = {tick / 1000, (tick % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}
