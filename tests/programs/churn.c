/*
 * tests/programs/churn.c — a traced program for the memory-mode test: fills
 * the flight recorder with many blocks that it frees much later, so the saved
 * tail holds frees of allocations it never saw, then leaks 10 x 100 bytes at
 * the very end, which the tail does hold.
 */
#include <stdlib.h>

#define BLOCKS 20000

int main(void)
{
    static void *p[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        p[i] = malloc(48);
    for (int i = 0; i < BLOCKS; i++)
        free(p[i]);
    for (int i = 0; i < 10; i++)
        p[i] = malloc(100);
    return p[9] == NULL;
}
