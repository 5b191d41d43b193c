/*
 * tests/programs/overlap.c — a traced program whose peak needs the threads'
 * events in time order (test_analyze.c, test_peak_in_time_order). Each
 * thread writes its own buffer, and the trace holds each buffer's events
 * together, so in file order one thread's allocation and free come before
 * the other's.
 *   together: two threads allocate 8 MiB and 4 MiB, hold both at once (a
 *             barrier), then free them: the peak is 12 MiB, at the later
 *             of the two allocations.
 *   later:    the main thread holds 2 MiB; a thread started after it
 *             allocates 1 MiB and frees it: the peak is 3 MiB at that
 *             allocation, which comes later in time than the 2 MiB but, in
 *             a buffer of its own, earlier in the file.
 *   behind:   a thread allocates 8 MiB and waits; the main thread holds 4
 *             MiB over 350 000 allocations and frees, frees it, makes as
 *             many again, and lets the thread free its block: the peak is
 *             12 MiB, at the main thread's allocation, though the thread's
 *             buffer comes in the file 1.4 M events after its allocation
 *             (written when it exits): behind the 256 K events the
 *             analysis holds at first.
 * Between steps the program waits for the clock's next 100 us: the agent
 * stamps events to that grain, and events of two threads with one timestamp
 * have no order in the trace.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_barrier_t held;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

#define GRAIN_NS 100000 /* the heap agent stamps events to 100 us (AGENT_TS_GRAIN_NS) */

/* Until the clock the agent stamps events with is in its next grain: what
 * comes next has a later timestamp than what came before (events of two
 * threads with one timestamp have no order in the trace). */
static void clock_moves_on(void)
{
    long long t = now_ns() / GRAIN_NS;
    while (now_ns() / GRAIN_NS <= t)
        ;
}

static void *hold(void *arg)
{
    size_t size = (size_t)arg;
    char *p = malloc(size);
    if (p)
        memset(p, 1, 4096);
    pthread_barrier_wait(&held); /* both blocks are live here */
    clock_moves_on();
    free(p);
    return NULL;
}

static void *briefly(void *arg)
{
    char *p = malloc((size_t)arg);
    if (p)
        p[0] = 1;
    clock_moves_on(); /* held for a moment of its own: frees of one timestamp are taken first */
    free(p);
    return NULL;
}

static int together(void)
{
    pthread_t t[2];
    pthread_barrier_init(&held, NULL, 2);
    if (pthread_create(&t[0], NULL, hold, (void *)(size_t)(8u << 20)) ||
        pthread_create(&t[1], NULL, hold, (void *)(size_t)(4u << 20)))
        return 1;
    return pthread_join(t[0], NULL) || pthread_join(t[1], NULL);
}

static int later(void)
{
    char *kept = malloc(2u << 20);
    if (!kept)
        return 1;
    kept[0] = 1;
    clock_moves_on(); /* the thread's allocation comes later in time */
    pthread_t t;
    if (pthread_create(&t, NULL, briefly, (void *)(size_t)(1u << 20)) || pthread_join(t, NULL))
        return 1;
    free(kept);
    return 0;
}

static pthread_barrier_t started, done;

static void *waits(void *arg)
{
    char *p = malloc((size_t)arg);
    if (p)
        memset(p, 1, 4096);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&done);
    free(p);
    return NULL;
}

static void churn(int n)
{
    for (int i = 0; i < n; i++) {
        void *volatile q = malloc(32 + (size_t)(i & 63));
        free(q);
    }
}

static int behind(void)
{
    pthread_t t;
    pthread_barrier_init(&started, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    if (pthread_create(&t, NULL, waits, (void *)(size_t)(8u << 20)))
        return 1;
    pthread_barrier_wait(&started);
    clock_moves_on();
    char *kept = malloc(4u << 20);
    if (!kept)
        return 1;
    kept[0] = 1;
    churn(350000);
    clock_moves_on();
    free(kept);
    churn(350000);
    pthread_barrier_wait(&done);
    return pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "behind"))
        return behind();
    if (argc == 2 && !strcmp(argv[1], "together"))
        return together();
    if (argc == 2 && !strcmp(argv[1], "later"))
        return later();
    return 2;
}
