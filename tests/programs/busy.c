/*
 * tests/programs/busy.c — a program whose CPU time is known to be spent in one
 * function: busy_spin, called through two others, spins for MS milliseconds
 * of CPU (default 1500) after "ready" on stdout and a byte on stdin. Built
 * without frame pointers: the samples' stacks must come from CFI. It keeps
 * one block of 123457 bytes made in busy_spin: its heap stack and the CPU
 * samples' share their outer frames (ltr-test-busy-stripped: both unnamed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *volatile kept;

__attribute__((noinline)) double busy_spin(double ms)
{
    kept = malloc(123457);
    volatile double x = 0;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end)
        for (int i = 0; i < 10000; i++)
            x += i * 0.5;
    return x;
}

__attribute__((noinline)) double busy_middle(double ms) { return busy_spin(ms) + 1; }
__attribute__((noinline)) double busy_outer(double ms) { return busy_middle(ms) + 1; }

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 1500;
    printf("ready\n");
    fflush(stdout);
    char c;
    if (read(0, &c, 1) < 0)
        return 1;
    return busy_outer(ms) < 0;
}
