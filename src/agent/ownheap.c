/*
 * agent/ownheap.c — the heap of the agent's own work (ownheap.h).
 *
 * Why: a traced program must lay out its heap as it does untraced. The
 * agent's own allocations (libdw's CFI caches on a thread's first walks,
 * pthread_getattr_np's reading of /proc/self/maps, module paths, the
 * producer's callocs) used to come from the program's allocator, in the
 * arena of whichever thread made them: blocks kept there moved every later
 * block of the program's, and glibc trimmed and grew the arena at other
 * points (`heap-workload 1 200000 12`: 2 944 page faults plain, 3 396 traced
 * at the default depth, 11 to 15 us each on the PVM guest). The hooks
 * (hooks.c) send every allocation a thread makes while it runs agent code
 * (agent_own()) here, and every free, realloc of a block in this range here,
 * whoever makes it: glibc frees blocks it made on the agent's behalf later
 * (a thread's dlerror buffer at its exit).
 *
 * What: one reservation of address space (PROT_NONE, no memory behind it:
 * 16 GiB, less if the address space is limited), committed from its start
 * in 1 MiB steps as a bump pointer reaches them; blocks in size classes (16
 * bytes apart up to 128, then four a power of two: at most a quarter
 * wasted), a block's class in a 16-byte header before it, freed blocks on a
 * list per class, never split nor merged. Blocks of 64 KiB and more give
 * their pages back when freed. One spin lock: the agent allocates seldom
 * (86 blocks kept, 28 freed in a worker's first stack walks). Why not an
 * existing allocator (mimalloc, a dlmalloc with mspaces): each brings
 * thousands of lines, its own TLS (which the agent keeps to words:
 * perthread.h) and its own threads' and fork's machinery, for a few
 * hundred blocks; this is a hundred lines.
 *
 * Memory comes from the mmap and mprotect system calls, not through the
 * agent's own mmap hooks (vmem.c): the program's mappings are not ours.
 */
#include "agent/ownheap.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OWN_MAX_SPAN (16ull << 30)
#define OWN_MIN_SPAN (64ull << 20)
#define COMMIT_STEP (1u << 20)
#define GIVE_BACK (64u << 10)
#define HDR 16
#define NCLASS 256
#define MAX_ALIGN (1u << 20)

typedef struct hdr {
    uint32_t cls; /* size class */
    uint32_t off; /* from the block's start to the pointer handed out */
    uint64_t spare;
} hdr;

uintptr_t own_base, own_span;
static uintptr_t top, committed; /* bump pointer; end of the read-write part */
static void *free_list[NCLASS];
static _Atomic int lock;

static void take(void)
{
    for (unsigned spins = 0; atomic_exchange_explicit(&lock, 1, memory_order_acquire); spins++)
        if (spins > 64)
            sched_yield();
}

static void give(void)
{
    atomic_store_explicit(&lock, 0, memory_order_release);
}

/* A fork child has only the forking thread: a lock another thread held is
 * nobody's, and that thread may have left a list half changed: the child
 * starts its lists empty, at the price of the blocks on them (the bump
 * pointer is one word: whole either way). */
void ownheap_after_fork(void)
{
    if (atomic_load_explicit(&lock, memory_order_relaxed)) {
        memset(free_list, 0, sizeof free_list);
        give();
    }
}

void ownheap_init(void)
{
    if (own_span)
        return;
    /* under a limit of address space, a sixteenth of it at most: the
     * program's own mappings must not fail sooner for the agent's sake
     * (none at all below a limit of 1 GiB: the agent's work then goes to
     * the real allocator, as before) */
    struct rlimit as;
    uint64_t most = OWN_MAX_SPAN;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur / 16 < most)
        most = as.rlim_cur / 16;
    uint64_t span = OWN_MAX_SPAN;
    while (span > most)
        span /= 2;
    for (; span >= OWN_MIN_SPAN; span /= 2) {
        long p = syscall(SYS_mmap, NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p < 0 && p > -4096)
            continue;
        own_base = top = committed = (uintptr_t)p;
        own_span = span;
        return;
    }
}

/* Size class of a block of n bytes (header included): class_size(class_of(n)) >= n. */
static unsigned class_of(size_t n)
{
    if (n <= 128)
        return n ? (unsigned)((n + 15) / 16) : 1;
    unsigned k = 63u - (unsigned)__builtin_clzll(n - 1); /* 2^k < n <= 2^(k+1) */
    return 9 + (k - 7) * 4 + (unsigned)(((n - 1) >> (k - 2)) + 1 - 5);
}

static size_t class_size(unsigned c)
{
    if (c <= 8)
        return 16u * c;
    unsigned k = 7 + (c - 9) / 4, q = 5 + (c - 9) % 4;
    return (size_t)q << (k - 2);
}

/* A new block from the bump pointer; 0 once the range is used up. */
static uintptr_t carve(size_t size)
{
    if (size > own_base + own_span - top)
        return 0;
    if (top + size > committed) {
        uintptr_t end = (top + size + COMMIT_STEP - 1) & ~(uintptr_t)(COMMIT_STEP - 1);
        if (end > own_base + own_span)
            end = own_base + own_span;
        if (syscall(SYS_mprotect, committed, end - committed, PROT_READ | PROT_WRITE) != 0)
            return 0;
        committed = end;
    }
    uintptr_t b = top;
    top += size;
    return b;
}

void *ownheap_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need;
    if (!own_span || align > MAX_ALIGN || (align & (align - 1)) ||
        __builtin_add_overflow(n, HDR + align - 16, &need) || need > own_span)
        return NULL;
    unsigned c = class_of(need);
    take();
    uintptr_t b = (uintptr_t)free_list[c];
    if (b)
        free_list[c] = *(void **)b;
    else
        b = carve(class_size(c));
    give();
    if (!b)
        return NULL;
    uintptr_t p = (b + HDR + align - 1) & ~(uintptr_t)(align - 1);
    hdr *h = (hdr *)(p - HDR);
    h->cls = c;
    h->off = (uint32_t)(p - b);
    return (void *)p;
}

void ownheap_free(void *p)
{
    const hdr *h = (const hdr *)((uintptr_t)p - HDR);
    unsigned c = h->cls;
    uintptr_t b = (uintptr_t)p - h->off;
    size_t size = class_size(c);
    if (size >= GIVE_BACK) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t lo = (b + HDR + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
        uintptr_t hi = (b + size) & ~(uintptr_t)(page - 1);
        if (hi > lo)
            syscall(SYS_madvise, lo, hi - lo, MADV_DONTNEED);
    }
    take();
    *(void **)b = free_list[c];
    free_list[c] = (void *)b;
    give();
}

void *ownheap_realloc(void *p, size_t n, void *(*other)(size_t))
{
    const hdr *h = (const hdr *)((uintptr_t)p - HDR);
    size_t usable = class_size(h->cls) - h->off;
    if (n <= usable && n >= usable / 2)
        return p;
    void *q = ownheap_alloc(n, 16);
    if (!q)
        q = other(n);
    if (q) {
        memcpy(q, p, n < usable ? n : usable);
        ownheap_free(p);
    }
    return q;
}
