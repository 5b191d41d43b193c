/*
 * agent/hooks.c — the functions the agent replaces: the malloc family, C++
 * operator new and delete in all their forms, dlclose (modules may go),
 * pthread_setname_np (thread names) and pthread_getattr_np (see agent.h). Each calls the next definition in the
 * lookup order (dlsym RTLD_NEXT: glibc, or another allocator preloaded after
 * us; when the agent came late, the one the process was bound to: redirect.h)
 * and reports what it did to emit.c.
 *
 * Allocations made before the real functions are known (by dlsym itself, or
 * by constructors that run before ours) come from a small static arena;
 * freeing such a block does nothing. Those made while the thread runs the
 * agent's own work (agent_own: libdw, libunwind, libc on its behalf) come
 * from the agent's heap (ownheap.h), and a block of it goes back there
 * whoever frees it: the program's heap sees only the program's calls.
 *
 * This file is built with frame pointers (CMakeLists.txt): a hook hands its
 * frame (HOOK_FRAME) to emit.c, and the stack is unwound from the hook's
 * caller on, not through the agent's own frames first.
 */
#include "agent/agent.h"
#include "agent/ownheap.h"
#include "agent/perthread.h"
#include "agent/redirect.h"
#include "agent/snapshot.h"
#include "agent/unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define HOOK_FRAME __builtin_frame_address(0)

__thread int agent_busy __attribute__((tls_model("initial-exec")));
__thread int agent_in_getattr __attribute__((tls_model("initial-exec")));

/* ---- the next definitions ------------------------------------------------- */

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    int (*dlclose)(void *);
    int (*setname)(pthread_t, const char *);
    int (*getattr)(pthread_t, pthread_attr_t *);
} real;

static int resolving;

#define next_sym agent_next_sym

static void resolve(void)
{
    if (resolving)
        return;
    resolving = 1;
    real.calloc = next_sym("calloc");
    real.free = next_sym("free");
    real.realloc = next_sym("realloc");
    real.reallocarray = next_sym("reallocarray");
    real.posix_memalign = next_sym("posix_memalign");
    real.aligned_alloc = next_sym("aligned_alloc");
    real.memalign = next_sym("memalign");
    real.valloc = next_sym("valloc");
    real.pvalloc = next_sym("pvalloc");
    real.dlclose = next_sym("dlclose");
    real.setname = next_sym("pthread_setname_np");
    real.getattr = next_sym("pthread_getattr_np");
    __atomic_store_n(&real.malloc, (void *(*)(size_t))next_sym("malloc"), __ATOMIC_RELEASE);
}

/* ---- the bootstrap arena -------------------------------------------------- */

static _Alignas(64) uint8_t boot_arena[256 << 10];
static size_t boot_used;

/* A 16-byte header before each block keeps its size, for realloc. */
static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
    if (n > sizeof boot_arena || start + n > sizeof boot_arena)
        return NULL;
    boot_used = start + n;
    memcpy(boot_arena + start - 16, &n, sizeof n);
    return boot_arena + start; /* static memory: zeroed, never reused */
}

static bool is_boot(const void *p)
{
    return (const uint8_t *)p >= boot_arena && (const uint8_t *)p < boot_arena + sizeof boot_arena;
}

/* True when the real allocator is usable; false while resolving it. */
static inline bool ready(void)
{
    if (__builtin_expect(__atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL, 1))
        return true;
    resolve();
    return real.malloc != NULL;
}

/* ---- the agent's own heap -------------------------------------------------- */

/* A block of the agent's heap for its own work, zeroed if asked; NULL when
 * that heap has none (the caller then takes the real allocator's). */
static void *own(size_t n, size_t align, bool zero)
{
    void *p = ownheap_alloc(n, align);
    if (p && zero)
        memset(p, 0, n);
    return p;
}

/* Frees and reallocs of its blocks come from the program's code too (glibc
 * frees at a thread's exit what it made for the agent): the guard holds the
 * program's signal handlers off the heap's lock meanwhile. */
static void own_free(void *p)
{
    agent_busy++;
    ownheap_free(p);
    agent_leave();
}

static void *own_realloc(void *old, size_t n)
{
    if (!n) { /* glibc's realloc(p, 0): freed, NULL */
        own_free(old);
        return NULL;
    }
    agent_busy++;
    void *p = ownheap_realloc(old, n, real.malloc);
    agent_leave();
    return p;
}

__attribute__((constructor(101))) static void agent_start(void)
{
    agent_blocks_init();
    agent_busy++;
    enum agent_arrival how = redirect_decide(); /* before ready(): where the real ones are */
    /* Preloaded, every call of the process's to the malloc family, the
     * agent's own and ld.so's included, reaches the hooks, which tell its
     * blocks by address. Arrived late, the agent's own calls and ld.so's
     * are bound to libc's and are not redirected (redirect.c), while
     * libdw's and libc's are: a frame libdw allocated for the agent, then
     * freed by unwind.c, reached libc's free (`free(): invalid pointer`,
     * test_honest's test_stop_joined_then_closed). So only then. */
    if (how == AGENT_PRELOADED)
        ownheap_init();
    ready();
    credentials_init();
    if (own_span)
        pthread_atfork(NULL, NULL, ownheap_after_fork);
    agent_leave();
    if (how != AGENT_DUPLICATE) /* the first copy records; this one stays inert */
        emit_init();
    if (redirect_injected())
        ltr_producer_set_injected();
}

/* ---- C allocation functions ------------------------------------------------ */

EXPORT void *malloc(size_t n)
{
    if (!ready())
        return boot_alloc(n, 16);
    void *p;
    if (__builtin_expect(agent_own(), 0) && (p = own(n, 16, false)))
        return p;
    p = real.malloc(n);
    if (p && agent_wanted())
        emit_alloc(p, n, FN_MALLOC, HOOK_FRAME);
    return p;
}

EXPORT void *calloc(size_t n, size_t m)
{
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ready())
        return boot_alloc(total, 16);
    void *p;
    if (__builtin_expect(agent_own(), 0) && (p = own(total, 16, true)))
        return p;
    p = real.calloc(n, m);
    if (p && agent_wanted())
        emit_alloc(p, total, FN_CALLOC, HOOK_FRAME);
    return p;
}

EXPORT void free(void *p)
{
    if (!p || is_boot(p))
        return;
    if (__builtin_expect(ownheap_has(p), 0)) {
        own_free(p);
        return;
    }
    if (agent_wanted())
        emit_free(p, FN_FREE);
    if (ready())
        real.free(p);
}

static void *boot_realloc(void *old, size_t n)
{
    size_t oldn;
    memcpy(&oldn, (uint8_t *)old - 16, sizeof oldn);
    void *p = malloc(n);
    if (p)
        memcpy(p, old, oldn < n ? oldn : n);
    return p;
}

/* What a realloc did, as docs/heap-events.md says it is recorded. fn is
 * realloc or reallocarray. */
static void report_realloc(void *old, void *p, size_t n, int fn, const void *frame)
{
    if (!old) {
        if (p)
            emit_alloc(p, n, fn, frame);
    } else if (p && n) {
        emit_realloc(old, p, n, fn, frame);
    } else if (!n && !p) {
        emit_free(old, fn);
    } else if (!n) { /* an allocator that returned a new minimal block for size 0 */
        emit_realloc(old, p, 0, fn, frame);
    }
}

EXPORT void *realloc(void *old, size_t n)
{
    if (old && is_boot(old))
        return boot_realloc(old, n);
    if (__builtin_expect(old && ownheap_has(old), 0))
        return own_realloc(old, n);
    if (!ready())
        return old ? NULL : boot_alloc(n, 16);
    void *q;
    if (__builtin_expect(!old && agent_own(), 0) && (q = own(n, 16, false)))
        return q;
    if (!agent_wanted())
        return real.realloc(old, n);
    uint64_t kept[2];
    bool took = snapshot_realloc_begin(old, kept);
    void *p = real.realloc(old, n);
    if (took && !p && n)
        snapshot_realloc_failed(old, kept);
    if (p || (old && !n))
        report_realloc(old, p, n, FN_REALLOC, HOOK_FRAME);
    return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
    size_t total;
    if (__builtin_mul_overflow(n, m, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if ((old && (is_boot(old) || ownheap_has(old))) || !ready() || agent_own())
        return realloc(old, total);
    if (!agent_wanted())
        return real.reallocarray(old, n, m);
    uint64_t kept[2];
    bool took = snapshot_realloc_begin(old, kept);
    agent_busy += AGENT_PASS; /* glibc's reallocarray calls realloc: one event, not two */
    void *p = real.reallocarray(old, n, m);
    agent_pass_leave();
    if (took && !p && total)
        snapshot_realloc_failed(old, kept);
    if (p || (old && !total))
        report_realloc(old, p, total, FN_REALLOCARRAY, HOOK_FRAME);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!ready()) {
        *out = boot_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    void *p;
    if (__builtin_expect(agent_own(), 0) && (p = own(n, align, false))) {
        *out = p;
        return 0;
    }
    int rc = real.posix_memalign(out, align, n);
    if (rc == 0 && agent_wanted())
        emit_alloc(*out, n, FN_POSIX_MEMALIGN, HOOK_FRAME);
    return rc;
}

/* aligned_alloc, memalign, valloc, pvalloc: same shape. */
#define ALIGNED_HOOK(name, fn, params, args, align, size)         \
    EXPORT void *name params                                      \
    {                                                             \
        if (!ready())                                             \
            return boot_alloc(size, align);                       \
        void *p;                                                  \
        if (__builtin_expect(agent_own(), 0) &&                   \
            (p = own(size, align, false)))                        \
            return p;                                             \
        p = real.name args;                                       \
        if (p && agent_wanted())                                  \
            emit_alloc(p, size, fn, HOOK_FRAME);                  \
        return p;                                                 \
    }
ALIGNED_HOOK(aligned_alloc, FN_ALIGNED_ALLOC, (size_t al, size_t n), (al, n), al, n)
ALIGNED_HOOK(memalign, FN_MEMALIGN, (size_t al, size_t n), (al, n), al, n)
ALIGNED_HOOK(valloc, FN_VALLOC, (size_t n), (n), 4096, n)
ALIGNED_HOOK(pvalloc, FN_PVALLOC, (size_t n), (n), 4096, n)

/* ---- C++ operator new and delete --------------------------------------------
 * The next operator new (libstdc++) keeps its semantics (new_handler,
 * std::bad_alloc); it calls malloc, which must not count a second time, so
 * the guard is up around it, and comes down again if it throws (cleanup). */

static void guard_down(int *unused)
{
    agent_pass_leave();
}

typedef void *(*new_fn)(size_t, ...);
typedef void (*delete_fn)(void *, ...);

static void *lookup(void **cache, const char *name)
{
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f) {
        f = next_sym(name);
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    return f;
}

#define NEW_HOOK(sym, fn, params, args)                                   \
    EXPORT void *sym params                                               \
    {                                                                     \
        static void *next;                                                \
        void *p;                                                          \
        {                                                                 \
            agent_busy += AGENT_PASS;                                     \
            int guard __attribute__((cleanup(guard_down))) = 0;           \
            (void)guard;                                                  \
            new_fn f = (new_fn)lookup(&next, #sym);                       \
            p = f ? f args : malloc(n);                                   \
        }                                                                 \
        if (p && agent_wanted())                                          \
            emit_alloc(p, n, fn, HOOK_FRAME);                             \
        return p;                                                         \
    }

typedef struct nothrow_t nothrow_t;
NEW_HOOK(_Znwm, FN_NEW, (size_t n), (n))
NEW_HOOK(_Znam, FN_NEW_ARR, (size_t n), (n))
NEW_HOOK(_ZnwmRKSt9nothrow_t, FN_NEW_NOTHROW, (size_t n, const nothrow_t *t), (n, t))
NEW_HOOK(_ZnamRKSt9nothrow_t, FN_NEW_ARR_NOTHROW, (size_t n, const nothrow_t *t), (n, t))
NEW_HOOK(_ZnwmSt11align_val_t, FN_NEW_AL, (size_t n, size_t al), (n, al))
NEW_HOOK(_ZnamSt11align_val_t, FN_NEW_ARR_AL, (size_t n, size_t al), (n, al))
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, FN_NEW_AL_NOTHROW,
         (size_t n, size_t al, const nothrow_t *t), (n, al, t))
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, FN_NEW_ARR_AL_NOTHROW,
         (size_t n, size_t al, const nothrow_t *t), (n, al, t))

#define DELETE_HOOK(sym, fn, params, args)                                \
    EXPORT void sym params                                                \
    {                                                                     \
        static void *next;                                                \
        if (!p || is_boot(p))                                             \
            return;                                                       \
        if (agent_wanted())                                               \
            emit_free(p, fn);                                             \
        agent_busy += AGENT_PASS;                                         \
        delete_fn f = (delete_fn)lookup(&next, #sym);                     \
        if (f)                                                            \
            f args;                                                       \
        else if (ready())                                                 \
            real.free(p);                                                 \
        agent_pass_leave();                                               \
    }

DELETE_HOOK(_ZdlPv, FN_DELETE, (void *p), (p))
DELETE_HOOK(_ZdaPv, FN_DELETE_ARR, (void *p), (p))
DELETE_HOOK(_ZdlPvm, FN_DELETE_SIZED, (void *p, size_t n), (p, n))
DELETE_HOOK(_ZdaPvm, FN_DELETE_ARR_SIZED, (void *p, size_t n), (p, n))
DELETE_HOOK(_ZdlPvSt11align_val_t, FN_DELETE_AL, (void *p, size_t al), (p, al))
DELETE_HOOK(_ZdaPvSt11align_val_t, FN_DELETE_ARR_AL, (void *p, size_t al), (p, al))
DELETE_HOOK(_ZdlPvmSt11align_val_t, FN_DELETE_SIZED_AL, (void *p, size_t n, size_t al), (p, n, al))
DELETE_HOOK(_ZdaPvmSt11align_val_t, FN_DELETE_ARR_SIZED_AL, (void *p, size_t n, size_t al),
            (p, n, al))
DELETE_HOOK(_ZdlPvRKSt9nothrow_t, FN_DELETE_NOTHROW, (void *p, const nothrow_t *t), (p, t))
DELETE_HOOK(_ZdaPvRKSt9nothrow_t, FN_DELETE_ARR_NOTHROW, (void *p, const nothrow_t *t), (p, t))
DELETE_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, FN_DELETE_AL_NOTHROW,
            (void *p, size_t al, const nothrow_t *t), (p, al, t))
DELETE_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, FN_DELETE_ARR_AL_NOTHROW,
            (void *p, size_t al, const nothrow_t *t), (p, al, t))

/* ---- loader and threads ----------------------------------------------------- */

EXPORT int dlclose(void *handle)
{
    if (!ready() || !real.dlclose)
        return -1;
    int rc = real.dlclose(handle);
    if (rc == 0)
        unwind_flush(); /* a library loaded later at the same place has other rules */
    if (rc == 0 && agent_wanted()) {
        agent_busy++;
        modules_rescan(false);
        agent_leave();
    }
    return rc;
}

EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    if (!ready() || !real.setname)
        return ENOSYS;
    int rc = real.setname(th, name);
    if (rc == 0 && pthread_equal(th, pthread_self()))
        emit_thread_renamed();
    else if (rc == 0)
        emit_other_thread_renamed();
    return rc;
}

EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
    if (!ready() || !real.getattr)
        return ENOSYS;
    agent_in_getattr++;
    int rc = real.getattr(th, attr);
    agent_in_getattr--;
    return rc;
}
