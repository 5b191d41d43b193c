/*
 * tests/programs/phases.c — a traced program with three phases and known
 * blocks, for the window test: it writes the CLOCK_MONOTONIC time of the two
 * phase boundaries to stdout (write(2), no stdio buffer to allocate), and
 * the test analyzes the window between them:
 *   AOFO a1 1000   (before, never freed)      AOFI a2 2000 (before, freed inside)
 *   AIFI b1 3000   (inside, freed inside)     AIFO b2 4000 + b3 5000 (b3 freed after)
 * plus blocks wholly before (a3) or after (c1) the window, which must not count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *keep[8];

static void boundary(void)
{
    struct timespec ts;
    struct timespec nap = {0, 30 * 1000 * 1000};
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char line[64];
    int n = snprintf(line, sizeof line, "%lld\n", (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
    if (write(1, line, (size_t)n) != n)
        exit(1);
    nanosleep(&nap, NULL);
}

int main(void)
{
    keep[0] = malloc(1000); /* a1 */
    keep[1] = malloc(2000); /* a2 */
    free(malloc(100));      /* a3 */
    boundary();
    void *b1 = malloc(3000);
    keep[2] = malloc(4000); /* b2 */
    keep[3] = malloc(5000); /* b3 */
    free(keep[1]);
    free(b1);
    boundary();
    free(keep[3]);
    keep[4] = malloc(6000); /* c1 */
    return 0;
}
