/*
 * profiles/lazylib.c — loading a shared library at its first use (lazylib.h):
 * `ltr analyze` needs neither libxml2 nor libarchive, and loading them at
 * start-up was most of what its start-up cost.
 */
#include "profiles/lazylib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *lazy_handle(ltr_lazylib *lib)
{
    void *h = __atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL); /* twice from two threads: one more reference, harmless */
    if (h)
        __atomic_store_n(&lib->handle, h, __ATOMIC_RELEASE);
    return h;
}

void *ltr_lazy_sym(ltr_lazylib *lib, const char *name)
{
    void *h = lazy_handle(lib), *sym = h ? dlsym(h, name) : NULL;
    if (!sym) {
        const char *why = dlerror();
        fprintf(stderr, "ltr: cannot load %s%s%s, needed %s: %s (%s)\n", h ? name : lib->soname,
                h ? " from " : "", h ? lib->soname : "", lib->needed_for, why ? why : "not found",
                h ? "a version older than the one ltr was built with?" : "install it, or the package that ships it");
        exit(127);
    }
    return sym;
}
