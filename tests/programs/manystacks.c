/*
 * tests/programs/manystacks.c — a program of many distinct call stacks:
 * 2^DEPTH paths through one recursive function with two call sites (a
 * path's bits choose the site at each level, so each path has its own
 * return addresses), a small block allocated and freed at the end of each.
 * 2^14 stacks put the analysis's table of this process's stacks past a
 * megabyte, where it is a mapping of its own (prim/table.c), which the
 * analysis of its end once resized with realloc and crashed on.
 *
 * "manystacks DEPTH DIR ROUNDS": one allocation, then ROUNDS times every
 * path, round r after the file DIR/go.r exists and creating DIR/done.r
 * after it; the last round's blocks are of 32 and 33 bytes: the same
 * stacks again and again, with time between for a test to stop, resume or
 * flush the recorder.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t base = 16;

static void __attribute__((noinline)) leaf(unsigned side)
{
    void *volatile p = malloc(base + side);
    free(p);
}

static void __attribute__((noinline)) step(int depth, unsigned path, unsigned side)
{
    if (depth == 0)
        leaf(side);
    else if (path & 1) /* the two calls differ (side), so that no optimizer merges them */
        step(depth - 1, path >> 1, 1);
    else
        step(depth - 1, path >> 1, 0);
    __asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

static void every_path(int depth)
{
    for (unsigned path = 0; path < (1u << depth); path++)
        step(depth, path, 0);
}

/* Waits at most 60 s for file to exist. */
static int wait_for(const char *file)
{
    for (int i = 0; i < 6000; i++) {
        if (access(file, F_OK) == 0)
            return 1;
        usleep(10000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 14;
    if (argc <= 3) {
        every_path(depth);
        return 0;
    }
    void *volatile first = malloc(1); /* the agent attaches */
    free(first);
    int rounds = atoi(argv[3]);
    for (int r = 0; r < rounds; r++) {
        char go[4096], done[4096];
        snprintf(go, sizeof go, "%s/go.%d", argv[2], r);
        snprintf(done, sizeof done, "%s/done.%d", argv[2], r);
        if (!wait_for(go))
            return 3;
        if (r == rounds - 1)
            base = 32;
        every_path(depth);
        int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            return 4;
        close(fd);
    }
    return 0;
}
