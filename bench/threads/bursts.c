/*
 * bench/threads/bursts.c — many threads allocating in bursts at once, the
 * case where a buffer held per thread bounds how many threads can record
 * (issue 17): THREADS threads start together (a barrier), then each does
 * ROUNDS bursts of BURST malloc/free pairs with a short sleep between bursts,
 * so that most threads are alive, and hold whatever a tracer gives a thread,
 * all the time. Prints the operations done (each malloc and each free is one)
 * and the time they took, as bench/heap/workload.c does.
 *
 *     bursts THREADS ROUNDS BURST
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t start;
static unsigned rounds, burst;

static void *run(void *arg)
{
    (void)arg;
    void *p[64];
    pthread_barrier_wait(&start);
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < burst; i++) {
            p[i % 64] = malloc(16 + (i * 40) % 1000);
            if (i % 64 == 63)
                for (unsigned k = 0; k < 64; k++)
                    free(p[k]);
        }
        for (unsigned k = 0; k < burst % 64; k++)
            free(p[k]);
        usleep(1000);
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
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
    burst = argc > 3 ? (unsigned)atoi(argv[3]) : 256;
    if (threads < 1 || threads > 10000 || rounds < 1 || burst < 1)
        return fprintf(stderr, "usage: bursts THREADS ROUNDS BURST\n"), 2;
    pthread_t *th = calloc(threads, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024); /* 1000 threads: 64 MB of stacks, not 8 GB */
    pthread_barrier_init(&start, NULL, threads + 1);
    unsigned made = 0;
    for (; made < threads; made++)
        if (pthread_create(&th[made], &attr, run, NULL) != 0)
            return fprintf(stderr, "bursts: could only start %u threads\n", made), 1;
    uint64_t t0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < made; i++)
        pthread_join(th[i], NULL);
    uint64_t ns = now_ns(CLOCK_MONOTONIC) - t0, cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    uint64_t ops = (uint64_t)threads * rounds * burst * 2;
    printf("ops %llu ns %llu cpu_ns %llu\n", (unsigned long long)ops, (unsigned long long)ns,
           (unsigned long long)cpu);
    free(th);
    return 0;
}
