/*
 * tests/programs/memhold.c — a program whose private memory is known: it
 * mallocs MB megabytes in 1 MB blocks, touches every page, says "ready" on
 * stdout, then holds it for MS milliseconds (or until killed, with MS -1)
 * and exits without freeing. The system provider's tests compare what ltr
 * recorded of it with /proc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int mb = argc > 1 ? atoi(argv[1]) : 16;
    long ms = argc > 2 ? atol(argv[2]) : -1;
    for (int i = 0; i < mb; i++) {
        char *p = malloc(1 << 20);
        if (!p)
            return 1;
        memset(p, 1, 1 << 20);
    }
    printf("ready\n");
    fflush(stdout);
    if (ms < 0)
        for (;;)
            pause();
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return 0;
}
