/*
 * tests/programs/manystacks.c — a program of many distinct call stacks:
 * 2^DEPTH paths through two functions that call each other (a path's bits
 * choose the call site at each level), a small block allocated and freed at
 * the end of each. 2^14 stacks put the analysis's table of this process's
 * stacks past a megabyte, where it is a mapping of its own (prim/table.c),
 * which the analysis of its end once resized with realloc and crashed on.
 */
#include <stdlib.h>

static void __attribute__((noinline)) left(int depth, unsigned path);
static void __attribute__((noinline)) right(int depth, unsigned path);

static void __attribute__((noinline)) leaf(void)
{
    void *volatile p = malloc(16);
    free(p);
}

static void __attribute__((noinline)) left(int depth, unsigned path)
{
    if (depth == 0)
        leaf();
    else if (path & 1)
        left(depth - 1, path >> 1);
    else
        right(depth - 1, path >> 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

static void __attribute__((noinline)) right(int depth, unsigned path)
{
    if (depth == 0)
        leaf();
    else if (path & 1)
        left(depth - 1, path >> 1);
    else
        right(depth - 1, path >> 1);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 14;
    for (unsigned path = 0; path < (1u << depth); path++)
        left(depth, path);
    return 0;
}
