/*
 * tests/agent/late_caller.c — liblatecaller.so, with RUNPATH $ORIGIN/late-sub:
 * dlopens liblatesub.so by its bare name, which only its own RUNPATH finds
 * (the agent's dlopen wrapper must search as ld.so would for this caller),
 * and returns what sub_alloc allocated.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *caller_alloc(void **fn)
{
    void *h = dlopen("liblatesub.so", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "liblatecaller: %s\n", dlerror());
        return NULL;
    }
    void *(*sub_alloc)(void) = (void *(*)(void))dlsym(h, "sub_alloc");
    *fn = (void *)sub_alloc;
    return sub_alloc ? sub_alloc() : NULL;
}
