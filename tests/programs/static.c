/*
 * tests/programs/static.c — a statically linked program: its malloc is its own
 * copy of the C library's, which no preloaded agent can replace, so
 * `ltr record` must say it saw nothing rather than write an empty trace
 * silently (test_heap.c).
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    char *p = malloc(4100);
    if (!p)
        return 1;
    snprintf(p, 4100, "allocated");
    puts(p);
    free(p);
    return 0;
}
