/*
 * tests/programs/manystacks.c — a program of many distinct call stacks:
 * 2^DEPTH paths through one recursive function with two call sites (a
 * path's bits choose the site at each level, so each path has its own
 * return addresses), a small block allocated and freed at the end of each.
 * 2^14 stacks put the analysis's table of this process's stacks past a
 * megabyte, where it is a mapping of its own (prim/table.c), which the
 * analysis of its end once resized with realloc and crashed on.
 */
#include <stdlib.h>

static void __attribute__((noinline)) leaf(unsigned side)
{
    void *volatile p = malloc(16 + side);
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

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 14;
    for (unsigned path = 0; path < (1u << depth); path++)
        step(depth, path, 0);
    return 0;
}
