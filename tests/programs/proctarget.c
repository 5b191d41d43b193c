/*
 * tests/programs/proctarget.c — a process the system provider's tests steer
 * one step at a time, so that each step can be checked in the trace before
 * the next: commands on stdin, an answer line on stdout for each.
 *   t  start a thread that names itself "worker-x" and waits
 *   e  end that thread (joined)
 *   l  dlopen libz.so.1        u  dlclose it
 *   k  fork a child that waits, kill it with SIGTERM, reap it (says its pid)
 *   x  exit with status 7
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int gate[2];

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker-x");
    char c;
    if (read(gate[0], &c, 1) < 0) {
        /* ended either way */
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    void *lib = NULL;
    int c;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe(gate) != 0)
        return 1;
    while ((c = getchar()) != EOF) {
        switch (c) {
        case 't':
            pthread_create(&t, NULL, worker, NULL);
            printf("t\n");
            break;
        case 'e':
            if (write(gate[1], "e", 1) != 1)
                return 1;
            pthread_join(t, NULL);
            printf("e\n");
            break;
        case 'l':
            lib = dlopen("libz.so.1", RTLD_NOW);
            printf("%s\n", lib ? "l" : dlerror());
            break;
        case 'u':
            if (lib)
                dlclose(lib);
            printf("u\n");
            break;
        case 'k': {
            pid_t child = fork();
            if (child == 0) {
                for (;;)
                    pause();
            }
            kill(child, SIGTERM);
            waitpid(child, NULL, 0);
            printf("%d\n", (int)child);
            break;
        }
        case 'x':
            exit(7);
        }
    }
    return 0;
}
