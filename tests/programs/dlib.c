/*
 * tests/programs/dlib.c — libheapdl.so, loaded and unloaded at run time by the
 * dlopen test: its MODULE records and the stack of its allocation.
 */
#include <stdlib.h>

volatile int dl_sink;

__attribute__((noinline)) void *dl_alloc(void)
{
    void *p = malloc(3600);
    dl_sink++;
    return p;
}

/* The many-copies test (tests/programs/dlmany.c): a size that names the copy
 * and its load. */
__attribute__((noinline)) void *dl_alloc_n(size_t n)
{
    void *p = malloc(n);
    dl_sink++;
    return p;
}
