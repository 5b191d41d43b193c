/*
 * bench/agent/dormant.c — what the heap agent costs a program when no
 * session enables it: ns per malloc+free pair (and per new+delete-sized
 * malloc of 64 bytes), best of 5 rounds of 10 M pairs. Run by run.sh three
 * ways: without the agent, with it preloaded, and dlopen'ed late
 * (`dormant AGENT`, as ltr's injector loads it).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Through a pointer the compiler cannot see through: every call is made. */
static void *(*volatile do_malloc)(size_t) = malloc;
static void (*volatile do_free)(void *) = free;

int main(int argc, char **argv)
{
    if (argc > 1 && !dlopen(argv[1], RTLD_NOW)) {
        fprintf(stderr, "dormant: %s\n", dlerror());
        return 1;
    }
    /* After the load: the redirected slots are what the program calls. */
    do_malloc = malloc;
    do_free = free;
    enum { N = 10000000 };
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ns();
        for (int i = 0; i < N; i++)
            do_free(do_malloc(64));
        double ns = (now_ns() - t0) / N;
        best = ns < best ? ns : best;
    }
    printf("%.1f ns per malloc+free pair\n", best);
    return 0;
}
