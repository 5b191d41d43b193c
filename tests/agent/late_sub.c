/*
 * tests/agent/late_sub.c — liblatesub.so, in tests/late-sub/: found only
 * through the RUNPATH ($ORIGIN/late-sub) of liblatecaller.so, which
 * dlopens it by its bare name after the agent came (late_target.cpp).
 */
#include <stdlib.h>

volatile int sub_sink;

__attribute__((noinline)) void *sub_alloc(void)
{
    void *p = malloc(3700);
    sub_sink++;
    return p;
}
