/*
 * bench/analyze/workload.c — the workload both recorders trace for the
 * analysis benchmark (analyze.sh): N malloc/free pairs spread over a few
 * dozen call stacks, with one block in a hundred kept (a slow leak), so the
 * analyzers have live blocks, many stacks and plenty of events to chew on.
 */
#include <stdio.h>
#include <stdlib.h>

static void *kept[1 << 16];
static unsigned nkept;

__attribute__((noinline)) static void *alloc_at(int depth, size_t size)
{
    if (depth > 0)
        return alloc_at(depth - 1, size); /* distinct stacks by depth */
    return malloc(size);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *ring[64] = {0};
    for (long i = 0; i < n; i++) {
        void *p = alloc_at((int)(i % 32), 16 + (size_t)(i % 512));
        if (i % 100 == 0 && nkept < sizeof kept / sizeof kept[0])
            kept[nkept++] = p;
        else {
            free(ring[i % 64]);
            ring[i % 64] = p;
        }
    }
    for (int i = 0; i < 64; i++)
        free(ring[i]);
    printf("workload: %ld allocations, %u kept\n", n, nkept);
    return 0;
}
