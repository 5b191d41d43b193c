/*
 * tests/programs/diskfull.c — heap-disk-full FLAG: allocates from one stack
 * for 0.4 s, creates FLAG.shallow and waits for FLAG (the disk is full for
 * libltr-test-enospc.so), which the test creates once the trace holds those
 * allocations (ltr flush: on a loaded machine the recorder had written none
 * of them before the disk was full when this program made FLAG itself),
 * then allocates 3333 bytes from 60 stacks new to the trace for 0.5 s,
 * removes FLAG, and goes on with them for 0.5 s: the stacks were first sent
 * while nothing could be written (tests/e2e/test_disk_full.c).
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
    char said[4096];
    snprintf(said, sizeof said, "%s.shallow", argv[1]);
    FILE *f = fopen(said, "w");
    if (!f)
        return 3;
    fclose(f);
    for (int i = 0; access(argv[1], F_OK) != 0; i++) {
        if (i > 6000) /* a minute: the test is gone */
            return 3;
        usleep(10000);
    }
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
