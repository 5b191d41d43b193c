/*
 * bench/analyze/model_bench.c — the heap model alone (src/analyze/model.c),
 * without the trace reader: replays the allocation pattern of workload.c
 * (malloc/free pairs through a ring of RING live blocks, one block in a
 * hundred kept, 32 stacks) and prints model events per second, best of
 * five rounds. With a large RING the live map outgrows the caches, as in a
 * program holding millions of blocks. A benchmark, not a test.
 *   usage: model_bench [N [RING]]   (defaults 2000000, 64)
 */
#include "analyze/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round; returns the events fed to the model. */
static uint64_t round_once(long n, size_t ring_size, uint64_t *ring)
{
    an_model m;
    an_model_init(&m, 0, UINT64_MAX);
    uint64_t events = 0, next = 0x10000;
    for (size_t i = 0; i < ring_size; i++)
        ring[i] = 0;
    for (long i = 0; i < n; i++) {
        uint64_t addr = next;
        next += 16 * (1 + (uint64_t)(i % 7)); /* addresses as a bump allocator hands them out */
        an_model_alloc(&m, 1, 1, (uint64_t)i * 2, addr, 16 + (uint64_t)(i % 512), 1 + (uint32_t)(i % 32));
        events++;
        if (i % 100 == 0)
            continue; /* kept: a slow leak */
        uint64_t *slot = &ring[(size_t)i % ring_size];
        if (*slot) {
            an_model_free_block(&m, 1, 1, (uint64_t)i * 2 + 1, *slot);
            events++;
        }
        *slot = addr;
    }
    an_model_finish(&m);
    if (m.oom)
        fprintf(stderr, "model_bench: out of memory\n");
    an_model_free(&m);
    return events;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    size_t ring_size = argc > 2 ? (size_t)atol(argv[2]) : 64;
    uint64_t *ring = ring_size ? malloc(ring_size * sizeof *ring) : NULL;
    if (n <= 0 || !ring) {
        fprintf(stderr, "usage: model_bench [N [RING]] (N, RING > 0)\n");
        return 2;
    }
    double best = 0;
    uint64_t events = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        events = round_once(n, ring_size, ring);
        double dt = now_s() - t0;
        if (r == 0 || dt < best)
            best = dt;
    }
    printf("model: %llu events (live ring %zu) in %.1f ms: %.1f M events/s\n", (unsigned long long)events,
           ring_size, best * 1e3, (double)events / best / 1e6);
    free(ring);
    return 0;
}
