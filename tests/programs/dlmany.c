/*
 * tests/programs/dlmany.c — heap-target's "dlmany N" mode: N copies of
 * libheapdl.so (TMPDIR/dlmany-I.so, made by the test), loaded and unloaded
 * so that copies come where others were, each allocating through its own
 * dl_alloc_n; test_heap.c checks that every allocation's innermost frame is
 * found in the copy that made it.
 *
 * Copy I's allocations are DLMANY_SIZE + 1000 * PHASE + I bytes:
 *   phase 0  every copy loaded, each allocating;
 *   phase 1  the even copies closed through libc's own dlclose (the agent's
 *            is not called: it does not look) and loaded again in reverse
 *            order, so that they land in each other's places; then copy 1
 *            closed through dlclose, where the agent looks and finds every
 *            unload and every load at once (copies loaded where other
 *            copies were must be told apart); then each even copy
 *            allocating;
 *   phase 2  the other odd copies closed through dlclose (the agent looks
 *            at each), then the even ones allocating again.
 * The look is made at a dlclose, not left to the next event: the agent
 * looks at an event only when its unwinder met an address outside the
 * modules it knows, and a copy loaded where another was is not outside.
 * Each phase calls from a function of its own, so that every allocation
 * is a stack of its own.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define DLMANY_SIZE 50000 /* test_heap.c's too */

typedef void *(*alloc_fn)(size_t);

static volatile int dlmany_sink;

/* One caller per phase; their bodies differ so that none is folded into another. */
__attribute__((noinline)) static void call0(alloc_fn f, size_t n)
{
    free(f(n));
    dlmany_sink += 1;
}

__attribute__((noinline)) static void call1(alloc_fn f, size_t n)
{
    free(f(n));
    dlmany_sink += 2;
}

__attribute__((noinline)) static void call2(alloc_fn f, size_t n)
{
    free(f(n));
    dlmany_sink += 3;
}

static void *open_copy(const char *tmp, int i)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/dlmany-%d.so", tmp, i);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        exit(1);
    }
    return h;
}

static alloc_fn alloc_of(void *h)
{
    alloc_fn f = (alloc_fn)dlsym(h, "dl_alloc_n");
    if (!f) {
        fprintf(stderr, "dl_alloc_n: %s\n", dlerror());
        exit(1);
    }
    return f;
}

static void close_with(int (*close_fn)(void *), void *h)
{
    if (close_fn(h) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        exit(1);
    }
}

int mode_dlmany(int n);
int mode_dlmany(int n)
{
    const char *tmp = getenv("TMPDIR");
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    /* libc's handle finds libc's own definition, not the preloaded agent's */
    int (*libc_dlclose)(void *) = libc ? (int (*)(void *))dlsym(libc, "dlclose") : NULL;
    void **h = n > 0 ? calloc((size_t)n, sizeof *h) : NULL;
    if (!tmp || !libc_dlclose || !h)
        return fprintf(stderr, "TMPDIR, libc's dlclose, N\n"), 1;
    for (int i = 0; i < n; i++) {
        h[i] = open_copy(tmp, i);
        call0(alloc_of(h[i]), DLMANY_SIZE + (size_t)i);
    }
    for (int i = 0; i < n; i += 2)
        close_with(libc_dlclose, h[i]);
    for (int i = (n - 1) & ~1; i >= 0; i -= 2)
        h[i] = open_copy(tmp, i);
    if (n > 1)
        close_with(dlclose, h[1]);
    for (int i = 0; i < n; i += 2)
        call1(alloc_of(h[i]), DLMANY_SIZE + 1000 + (size_t)i);
    for (int i = 3; i < n; i += 2)
        close_with(dlclose, h[i]);
    for (int i = 0; i < n; i += 2)
        call2(alloc_of(h[i]), DLMANY_SIZE + 2000 + (size_t)i);
    printf("dlmany %d\n", n);
    return 0;
}
