/*
 * tests/programs/execrace.c — heap-exec-race: THREADS threads allocate
 * 1111-byte blocks from a shallow stack for MS milliseconds, then the
 * process execs itself as "new", which allocates 2222-byte blocks from 40
 * frames deep. The old image's last buffers are harvested by the recorder
 * while the new image's PROCESS record (which starts the pid's stacks
 * afresh) arrives: tests/e2e/test_exec_order.c checks that every 1111-byte
 * event reaches the file before that record.
 * With "noexec" after MS, it exits instead, its threads joined (a process
 * whose pid another takes again: test_exec_order).
 * Usage: heap-exec-race THREADS MS [noexec]
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;
static volatile int stop;

__attribute__((noinline)) static void old_alloc(void)
{
    void *p = malloc(1111);
    sink = p;
    free(p);
}

static void *worker(void *arg)
{
    (void)arg;
    while (!stop)
        old_alloc();
    return NULL;
}

__attribute__((noinline)) static int deep(int d)
{
    if (d)
        return deep(d - 1) + 1;
    void *p = malloc(2222);
    sink = p;
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "new")) {
        for (int i = 0; i < 3000; i++)
            deep(40 + i % 7);
        return 0;
    }
    int threads = argc > 1 ? atoi(argv[1]) : 16;
    int ms = argc > 2 ? atoi(argv[2]) : 200;
    pthread_t th[256];
    threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    usleep((useconds_t)ms * 1000);
    if (argc > 3 && !strcmp(argv[3], "noexec")) {
        stop = 1;
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        return 0;
    }
    execl("/proc/self/exe", argv[0], "new", (char *)NULL); /* the threads end with the old image */
    return 1;
}
