/*
 * bench/heap/workload.c — an allocation-heavy program for comparing heap
 * tracers (run.sh): several threads, each allocating at the bottom of call
 * chains of varying depth (5..40 frames), mixed sizes (mostly small, some
 * page-sized, a few large), reallocs, and frees in an order unrelated to the
 * allocation order. Built without frame pointers, like distributed binaries.
 * Prints the operations done and the time they took, measured inside the
 * program so that tracers' start-up and post-processing do not count, and
 * the CPU time of the whole process (all threads, user and system), which
 * other programs running on the machine disturb less than the wall time.
 *
 *     workload THREADS OPS_PER_THREAD [DEPTH]
 *
 * With DEPTH, every chain is that deep instead (issue 17's single-thread
 * deep-stack workload is `workload 1 N 12`: the depth of a typical service's
 * allocation sites, where the varying 5..40 frames favour no tracer).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 4096

typedef struct worker {
    uint64_t rng, ops, done;
    int depth; /* every chain this deep; 0: 5..40 */
    void *slot[SLOTS];
} worker;

static uint64_t next(worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static size_t pick_size(worker *w)
{
    uint64_t r = next(w) % 1000;
    if (r < 900)
        return 8 + next(w) % 256;
    if (r < 995)
        return 256 + next(w) % 8192;
    return 65536 + next(w) % 200000;
}

/* One operation at the bottom of the chain: allocate into a random slot,
 * reallocating or freeing what was there. */
static void leaf(worker *w)
{
    unsigned i = (unsigned)(next(w) % SLOTS);
    void *p = w->slot[i];
    uint64_t r = next(w) % 10;
    if (p && r < 2) {
        w->slot[i] = realloc(p, pick_size(w));
    } else if (p && r < 6) {
        free(p);
        w->slot[i] = NULL;
    } else {
        free(p);
        w->slot[i] = r & 1 ? malloc(pick_size(w)) : calloc(1, pick_size(w));
        w->done += p != NULL;
    }
    w->done++;
}

volatile unsigned sink;

/* The call chain: 40 levels of distinct functions, two at each level; the
 * innermost 11 levels pick one of the two at random, the others always the
 * first. So stacks differ by path as in a real program (at most 36 x 2^11
 * distinct allocation stacks, most allocations on the frequent ones), and no
 * return address repeats within a stack. The work after each call keeps it
 * from being a tail call. */
#define MAX_LEVEL 40
typedef void (*level_fn)(worker *w, int depth);
static level_fn levels[2][MAX_LEVEL + 1];

static inline void go(worker *w, int depth)
{
    if (depth == 0)
        leaf(w);
    else
        levels[depth < 11 ? next(w) & 1 : 0][depth - 1](w, depth - 1);
}

#define LEVEL(n)                                                                    \
    __attribute__((noinline)) static void level_a##n(worker *w, int d) { go(w, d); sink += n; } \
    __attribute__((noinline)) static void level_b##n(worker *w, int d) { go(w, d); sink -= n; }
#define LEVELS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) \
    X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) \
    X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40)
LEVELS(LEVEL)

static void setup_levels(void)
{
#define SET(n) levels[0][n] = level_a##n; levels[1][n] = level_b##n;
    LEVELS(SET)
#undef SET
}

static void *run(void *arg)
{
    worker *w = arg;
    while (w->done < w->ops) {
        int depth = w->depth ? w->depth : 5 + (int)(next(w) % 36);
        levels[0][depth](w, depth);
    }
    for (unsigned i = 0; i < SLOTS; i++) {
        free(w->slot[i]);
        w->done += w->slot[i] != NULL;
    }
    return NULL;
}

static uint64_t now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    uint64_t ops = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    int depth = argc > 3 ? atoi(argv[3]) : 0;
    if (threads < 1 || threads > 64 || ops == 0 || depth < 0 || depth > MAX_LEVEL)
        return fprintf(stderr, "usage: workload THREADS OPS_PER_THREAD [DEPTH 1..%d]\n", MAX_LEVEL), 2;
    setup_levels();
    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t th[64];
    uint64_t t0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < threads; i++) {
        w[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
        w[i].ops = ops;
        w[i].depth = depth;
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += w[i].done;
    }
    uint64_t ns = now_ns(CLOCK_MONOTONIC) - t0, cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    printf("ops %llu ns %llu cpu_ns %llu\n", (unsigned long long)total, (unsigned long long)ns,
           (unsigned long long)cpu);
    free(w);
    return 0;
}
