/*
 * tests/programs/diskfull.c — heap-disk-full FLAG: allocates from one stack
 * for 0.4 s, creates FLAG (the disk is full for libltr-test-enospc.so), then
 * allocates 3333 bytes from 60 stacks new to the trace for 0.5 s, removes
 * FLAG, and goes on with them for 0.5 s: the stacks were first sent while
 * nothing could be written (tests/e2e/test_disk_full.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void shallow(void)
{
    void *p = malloc(1111);
    sink = p;
    free(p);
}

__attribute__((noinline)) static int deep(int d)
{
    if (d)
        return deep(d - 1) + 1;
    void *p = malloc(3333);
    sink = p;
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    double t0 = now();
    while (now() - t0 < 0.4)
        shallow();
    FILE *f = fopen(argv[1], "w");
    if (f)
        fclose(f);
    t0 = now();
    while (now() - t0 < 0.5)
        for (int d = 0; d < 60; d++)
            deep(d);
    unlink(argv[1]);
    t0 = now();
    while (now() - t0 < 0.5)
        for (int d = 0; d < 60; d++)
            deep(d);
    return 0;
}
