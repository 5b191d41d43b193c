/*
 * bench/byname/startup.c — how long a program takes to start and end: runs
 * it N times (fork, exec, wait; output to /dev/null) and prints the median
 * and the mean of the wall-clock times in microseconds. bench/byname/run.sh
 * runs it with and without the by-name setting.
 * Usage: startup N PROGRAM [ARGS...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return fprintf(stderr, "usage: startup N PROGRAM [ARGS...]\n"), 2;
    int n = atoi(argv[1]);
    double *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1)), sum = 0;
    for (int i = 0; i < n; i++) {
        double start = now_us();
        pid_t p = fork();
        if (p == 0) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            dup2(null, 2);
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        int status;
        waitpid(p, &status, 0);
        t[i] = now_us() - start;
        sum += t[i];
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("%8.0f %8.0f\n", t[n / 2], sum / n);
    return 0;
}
