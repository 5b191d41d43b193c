/*
 * agent/vmem.c — VirtualAllocation (Ltr.System keyword 0x10,
 * docs/system-provider.md): the mappings the program makes itself. mmap,
 * mmap64, munmap, mremap, madvise that gives pages back (MADV_DONTNEED,
 * MADV_FREE, MADV_REMOVE), brk and sbrk are replaced like the malloc family
 * (hooks.c; redirected by redirect.c when the agent comes late); each calls
 * the next definition and, when a session enables the keyword, writes an
 * event with the caller's stack (sysev.c). The event layouts are in
 * docs/heap-events.md, "Mappings".
 *
 * glibc's own mappings (malloc's arenas and large blocks, thread stacks,
 * stdio buffers, the loader) use its internal entry points, not the PLT, so
 * they are not seen here: those are the heap events' business, and the rest
 * is libc's. A call the agent makes itself passes through (agent_busy).
 *
 * Until the next definitions are known (a mapping made before the agent's
 * constructor, by another preloaded library's) the hooks make the system
 * call themselves, which is what glibc's wrappers do.
 *
 * Built with frame pointers (CMakeLists.txt), as hooks.c: a hook hands its
 * frame to the stack capture.
 */
#include "agent/redirect.h"
#include "agent/sysev.h"
#include "base/heap_events.h"
#include "base/records.h"
#include "base/system_events.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define HOOK_FRAME __builtin_frame_address(0)
/* A session wants the event, and the call is not the agent's own (its
 * shared memory and rings, mapped and unmapped in a fork child's handler
 * too, where agent_busy is not set). */
#define WANTED() (sysev_wanted() && !stacks_in_agent((uintptr_t)__builtin_return_address(0)))

static const ltr_field_desc map_fields[] = {
    {"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR}, {"stack", LTR_TYPE_UVAR}, {"prot", LTR_TYPE_UVAR},
    {"flags", LTR_TYPE_UVAR},   {"fd", LTR_TYPE_IVAR},   {"offset", LTR_TYPE_UVAR}, {"function", LTR_TYPE_U8}};
static const ltr_field_desc unmap_fields[] = {
    {"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR}, {"stack", LTR_TYPE_UVAR}, {"function", LTR_TYPE_U8}};
static const ltr_field_desc remap_fields[] = {
    {"old_address", LTR_TYPE_PVAR}, {"old_size", LTR_TYPE_UVAR}, {"address", LTR_TYPE_PVAR},
    {"size", LTR_TYPE_UVAR},        {"stack", LTR_TYPE_UVAR},    {"flags", LTR_TYPE_UVAR},
    {"function", LTR_TYPE_U8}};
static const ltr_field_desc discard_fields[] = {
    {"address", LTR_TYPE_PVAR}, {"size", LTR_TYPE_UVAR}, {"stack", LTR_TYPE_UVAR}, {"advice", LTR_TYPE_UVAR},
    {"function", LTR_TYPE_U8}};
LTR_EVENT_DEFINE(ev_map, agent_sys_provider, LTR_VM_EV_MAP, LTR_LEVEL_INFO, LTR_SYSKW_VMEM, "VirtualAlloc",
                 map_fields);
LTR_EVENT_DEFINE(ev_unmap, agent_sys_provider, LTR_VM_EV_UNMAP, LTR_LEVEL_INFO, LTR_SYSKW_VMEM, "VirtualFree",
                 unmap_fields);
LTR_EVENT_DEFINE(ev_remap, agent_sys_provider, LTR_VM_EV_REMAP, LTR_LEVEL_INFO, LTR_SYSKW_VMEM,
                 "VirtualRealloc", remap_fields);
LTR_EVENT_DEFINE(ev_discard, agent_sys_provider, LTR_VM_EV_DISCARD, LTR_LEVEL_INFO, LTR_SYSKW_VMEM,
                 "VirtualDiscard", discard_fields);

/* One event's values; which apply depends on the event. */
typedef struct vm_event {
    ltr_event_desc *d;
    uint64_t old, old_size, addr, size, prot, flags, offset, advice;
    int64_t fd;
    uint8_t fn;
} vm_event;

static uint32_t encode(const void *ctx, uint32_t stack, uint8_t *p)
{
    const vm_event *e = ctx;
    size_t n = 0;
    if (e->d == &ev_remap) {
        n += ltr_put_uvar(p + n, e->old);
        n += ltr_put_uvar(p + n, e->old_size);
    }
    n += ltr_put_uvar(p + n, e->addr);
    n += ltr_put_uvar(p + n, e->size);
    n += ltr_put_uvar(p + n, stack);
    if (e->d == &ev_map) {
        n += ltr_put_uvar(p + n, e->prot);
        n += ltr_put_uvar(p + n, e->flags);
        n += ltr_put_uvar(p + n, ltr_zigzag(e->fd));
        n += ltr_put_uvar(p + n, e->offset);
    } else if (e->d == &ev_remap) {
        n += ltr_put_uvar(p + n, e->flags);
    } else if (e->d == &ev_discard) {
        n += ltr_put_uvar(p + n, e->advice);
    }
    p[n++] = e->fn;
    return (uint32_t)n;
}

static void put(const vm_event *e, const void *frame)
{
    sysev_emit(e->d, LTR_SYSKW_VMEM, frame, true, encode, e);
}

/* ---- the next definitions ------------------------------------------------- */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef int (*madvise_fn)(void *, size_t, int);
typedef int (*brk_fn)(void *);
typedef void *(*sbrk_fn)(intptr_t);

static struct {
    mmap_fn mmap, mmap64;
    munmap_fn munmap;
    mremap_fn mremap;
    madvise_fn madvise;
    brk_fn brk;
    sbrk_fn sbrk;
} next;

/* Looked up by the constructor, after hooks.c's (the loader is usable by
 * then); before it, the hooks make the system calls. */
__attribute__((constructor(102))) static void vmem_resolve(void)
{
    next.mmap = (mmap_fn)agent_next_sym("mmap");
    next.mmap64 = (mmap_fn)agent_next_sym("mmap64");
    next.munmap = (munmap_fn)agent_next_sym("munmap");
    next.mremap = (mremap_fn)agent_next_sym("mremap");
    next.madvise = (madvise_fn)agent_next_sym("madvise");
    next.brk = (brk_fn)agent_next_sym("brk");
    next.sbrk = (sbrk_fn)agent_next_sym("sbrk");
}

static void *call_mmap(mmap_fn f, void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (f)
        return f(addr, len, prot, flags, fd, off);
    long rc = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return rc == -1 ? MAP_FAILED : (void *)rc;
}

/* ---- the hooks ------------------------------------------------------------ */

static void report_map(void *p, size_t len, int prot, int flags, int fd, off_t off, uint8_t fn, const void *frame)
{
    put(&(vm_event){.d = &ev_map, .addr = (uintptr_t)p, .size = len, .prot = (unsigned)prot,
                    .flags = (unsigned)flags, .fd = (flags & MAP_ANONYMOUS) ? -1 : fd, .offset = (uint64_t)off,
                    .fn = fn},
        frame);
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = call_mmap(next.mmap, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && WANTED())
        report_map(p, len, prot, flags, fd, off, LTR_VM_FN_MMAP, HOOK_FRAME);
    return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = call_mmap(next.mmap64, addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && WANTED())
        report_map(p, len, prot, flags, fd, off, LTR_VM_FN_MMAP64, HOOK_FRAME);
    return p;
}

EXPORT int munmap(void *addr, size_t len)
{
    int rc = next.munmap ? next.munmap(addr, len) : (int)(syscall(SYS_munmap, addr, len));
    if (rc == 0 && WANTED())
        put(&(vm_event){.d = &ev_unmap, .addr = (uintptr_t)addr, .size = len, .fn = LTR_VM_FN_MUNMAP},
            HOOK_FRAME);
    return rc;
}

EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) { /* the fifth argument is there only then */
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    void *p = next.mremap ? next.mremap(old, old_len, len, flags, want)
                          : (void *)(syscall(SYS_mremap, old, old_len, len, flags, want));
    if (p != MAP_FAILED && WANTED())
        put(&(vm_event){.d = &ev_remap, .old = (uintptr_t)old, .old_size = old_len, .addr = (uintptr_t)p,
                        .size = len, .flags = (unsigned)flags, .fn = LTR_VM_FN_MREMAP},
            HOOK_FRAME);
    return p;
}

/* The advice values that give the pages back (the mapping stays). */
static bool gives_back(int advice)
{
    return advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
    int rc = next.madvise ? next.madvise(addr, len, advice)
                          : (int)(syscall(SYS_madvise, addr, len, advice));
    if (rc == 0 && gives_back(advice) && WANTED())
        put(&(vm_event){.d = &ev_discard, .addr = (uintptr_t)addr, .size = len, .advice = (unsigned)advice,
                        .fn = LTR_VM_FN_MADVISE},
            HOOK_FRAME);
    return rc;
}

/* The break moved from a to b: a mapping grown or given back. */
static void report_break(uintptr_t a, uintptr_t b, uint8_t fn, const void *frame)
{
    if (b > a)
        report_map((void *)a, b - a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, fn, frame);
    else if (b < a)
        put(&(vm_event){.d = &ev_unmap, .addr = b, .size = a - b, .fn = fn}, frame);
}

/* The current break, as sbrk(0) says it; 0 when unknown. */
static uintptr_t current_break(void)
{
    void *p = next.sbrk ? next.sbrk(0) : (void *)-1;
    return p == (void *)-1 ? 0 : (uintptr_t)p;
}

EXPORT int brk(void *addr)
{
    if (!next.brk) /* a constructor before the agent's */
        next.brk = (brk_fn)agent_next_sym("brk");
    if (!next.brk) {
        errno = ENOMEM;
        return -1;
    }
    bool want = WANTED();
    uintptr_t was = want ? current_break() : 0;
    int rc = next.brk(addr);
    if (rc == 0 && want && was)
        report_break(was, (uintptr_t)addr, LTR_VM_FN_BRK, HOOK_FRAME);
    return rc;
}

EXPORT void *sbrk(intptr_t incr)
{
    if (!next.sbrk)
        next.sbrk = (sbrk_fn)agent_next_sym("sbrk");
    if (!next.sbrk) {
        errno = ENOMEM;
        return (void *)-1;
    }
    void *was = next.sbrk(incr);
    if (was != (void *)-1 && incr && WANTED())
        report_break((uintptr_t)was, (uintptr_t)was + (uintptr_t)incr, LTR_VM_FN_SBRK, HOOK_FRAME);
    return was;
}
