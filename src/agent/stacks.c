/*
 * agent/stacks.c — the call stack of each allocation, and the per-process
 * table that gives each distinct stack an id.
 *
 * Unwinding reads the DWARF call frame information (.eh_frame), so stacks
 * are right in code built without frame pointers (Debian's libraries): the
 * agent's own unwinder (unwind.c, rules cached per address) for the common
 * case, libunwind's unw_backtrace for stacks it gives up on (signal frames,
 * DWARF expressions). LTR_HEAP_UNWIND=libunwind uses libunwind only;
 * LTR_HEAP_UNWIND=check unwinds each stack both ways, compares, and says at
 * exit (stderr) how many stacks each way gave and how many differed.
 *
 * The table is lock-free (a thread that first sees a stack claims an empty
 * entry with a CAS and publishes the id when the frames are in), so threads
 * never wait for each other except for the few instructions of a publish.
 * Each entry remembers, per session slot, that its STACK record was claimed
 * and written; an event names a stack only after the record is in the
 * session's metadata region.
 */
#define UNW_LOCAL_ONLY
#include "agent/agent.h"
#include "agent/unwind.h"
#include "format/records.h"

#include <libunwind.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TABLE_BITS 20
#define TABLE_SIZE (1u << TABLE_BITS)
#define MAX_PROBES 128
#define MAX_DEPTH 256
#define ARENA_FRAMES (64u << 20) /* 512 MiB of address space, touched as used */

typedef struct sentry {
    _Atomic uint64_t hash; /* 0: empty */
    _Atomic uint32_t id;   /* 0: frames not in yet */
    uint16_t nframes;
    uint16_t pad;
    uint64_t off; /* first frame in the arena */
    _Atomic uint32_t claimed, written; /* bit s: STACK record of session slot s */
} sentry;

static sentry *table;
/* Per page of the table: written to already. A page's first access must be
 * a write: a read maps the shared zero page, and the write that follows then
 * replaces it with a TLB shootdown of every CPU running the program (a third
 * of the whole run's time on the benchmark when most stacks were new). */
#define TABLE_PAGES (TABLE_SIZE * sizeof(sentry) / 4096)
static _Atomic uint8_t table_touched[TABLE_PAGES];
static uint64_t *arena;
static uint32_t *slot_of_id; /* entry of each id, to walk the used entries */
static _Atomic uint64_t arena_used;
static _Atomic uint32_t next_id;
static int depth = 64;
static uint32_t pid; /* of this process (getpid is a system call per STACK record) */
enum { UNWIND_FAST, UNWIND_LIBUNWIND, UNWIND_CHECK };
static int unwind_mode = UNWIND_FAST;
static _Atomic uint64_t n_fast, n_fallback, n_mismatch; /* stacks, for UNWIND_CHECK */
static uintptr_t agent_lo, agent_hi;

static int find_agent(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t self = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        lo = start < lo ? start : lo;
        hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
    }
    if (self < lo || self >= hi)
        return 0;
    agent_lo = lo;
    agent_hi = hi;
    return 1;
}

static void *reserve_space(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void stacks_init(void)
{
    const char *d = getenv("LTR_HEAP_DEPTH");
    if (d && *d) {
        long v = strtol(d, NULL, 10);
        depth = v < 0 ? 0 : v > MAX_DEPTH ? MAX_DEPTH : (int)v;
    }
    pid = (uint32_t)getpid();
    const char *u = getenv("LTR_HEAP_UNWIND");
    if (u && !strcmp(u, "libunwind"))
        unwind_mode = UNWIND_LIBUNWIND;
    else if (u && !strcmp(u, "check"))
        unwind_mode = UNWIND_CHECK;
    dl_iterate_phdr(find_agent, (void *)(uintptr_t)stacks_init);
    table = reserve_space(sizeof(sentry) * TABLE_SIZE);
    arena = reserve_space(sizeof(uint64_t) * ARENA_FRAMES);
    slot_of_id = reserve_space(sizeof(uint32_t) * TABLE_SIZE);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

bool stacks_in_agent(uintptr_t ip)
{
    return ip >= agent_lo && ip < agent_hi;
}

static uint64_t hash_frames(void *const *f, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | 1;
}

static uint32_t fill_entry(sentry *e, uint32_t slot, void *const *f, int n)
{
    uint64_t off = atomic_fetch_add(&arena_used, (uint64_t)n);
    if (off + (uint64_t)n > ARENA_FRAMES)
        n = 0; /* out of room: the stack is recorded without frames */
    for (int i = 0; i < n; i++)
        arena[off + (uint64_t)i] = (uint64_t)(uintptr_t)f[i];
    e->off = off;
    e->nframes = (uint16_t)n;
    uint32_t id = atomic_fetch_add(&next_id, 1) + 1;
    slot_of_id[id] = slot;
    atomic_store_explicit(&e->id, id, memory_order_release);
    return id;
}

static bool same_frames(const sentry *e, void *const *f, int n)
{
    if (e->nframes != n)
        return false;
    for (int i = 0; i < n; i++)
        if (arena[e->off + (uint64_t)i] != (uint64_t)(uintptr_t)f[i])
            return false;
    return true;
}

static sentry *entry(uint32_t slot)
{
    size_t page = (size_t)slot * sizeof(sentry) / 4096;
    if (__builtin_expect(!atomic_load_explicit(&table_touched[page], memory_order_relaxed), 0)) {
        atomic_fetch_add(&table[page * 4096 / sizeof(sentry)].hash, 0); /* write fault */
        atomic_store_explicit(&table_touched[page], 1, memory_order_relaxed);
    }
    return &table[slot];
}

static stack_ref lookup_or_add(void *const *f, int n, bool rescan)
{
    uint64_t h = hash_frames(f, n);
    for (uint32_t probe = 0; probe < MAX_PROBES; probe++) {
        uint32_t slot = (uint32_t)(h + probe) & (TABLE_SIZE - 1);
        sentry *e = entry(slot);
        uint64_t have = atomic_load_explicit(&e->hash, memory_order_acquire);
        if (!have) {
            if (atomic_load(&next_id) + 1 >= TABLE_SIZE / 2)
                return (stack_ref){0, 0}; /* table full enough: no more stacks */
            if (atomic_compare_exchange_strong(&e->hash, &have, h)) {
                uint32_t id = fill_entry(e, slot, f, n);
                if (rescan)
                    modules_rescan(true); /* new code may have been loaded */
                return (stack_ref){id, slot};
            }
        }
        if (have != h)
            continue;
        uint32_t id;
        while (!(id = atomic_load_explicit(&e->id, memory_order_acquire)))
            sched_yield();
        if (same_frames(e, f, n))
            return (stack_ref){id, slot};
    }
    return (stack_ref){0, 0};
}

/* Index of the caller's frame in buf: past the unwinder's own frames (at
 * most a few, libunwind's) and then the agent's (the hook, emit). */
static int first_caller_frame(void *const *buf, int n)
{
    int i = 0;
    while (i < n && i < 8 && !stacks_in_agent((uintptr_t)buf[i]))
        i++;
    while (i < n && stacks_in_agent((uintptr_t)buf[i]))
        i++;
    return i;
}

static void say(const char *msg)
{
    ssize_t rc = write(2, msg, strlen(msg));
    (void)rc;
}

/* UNWIND_CHECK: the fast stack a (n frames from the caller on) against
 * libunwind's; the first few differences are told in full. */
static void check_against_libunwind(void *const *a, int n, int max)
{
    void *b[MAX_DEPTH + 16];
    int m = unw_backtrace(b, max);
    int j = first_caller_frame(b, m);
    m = m - j > depth ? depth : m - j;
    if (m == n && !memcmp(a, b + j, sizeof(void *) * (size_t)n))
        return;
    if (atomic_fetch_add(&n_mismatch, 1) >= 5)
        return;
    char line[160];
    snprintf(line, sizeof line, "ltr-heap[%d]: unwind check: fast %d frames, libunwind %d\n",
             (int)getpid(), n, m);
    say(line);
    for (int k = 0; k < n || k < m; k++) {
        snprintf(line, sizeof line, "  %2d %18p %18p%s\n", k, k < n ? a[k] : NULL,
                 k < m ? b[j + k] : NULL, k < n && k < m && a[k] == b[j + k] ? "" : "  <--");
        say(line);
    }
}

__attribute__((destructor)) static void check_report(void)
{
    if (unwind_mode != UNWIND_CHECK)
        return;
    char line[160];
    snprintf(line, sizeof line,
             "ltr-heap[%d]: unwind check: %llu fast, %llu fallback, %llu mismatched\n",
             (int)getpid(), (unsigned long long)n_fast, (unsigned long long)n_fallback,
             (unsigned long long)n_mismatch);
    say(line);
}

/* For a stack from the fast unwinder: whether it met objects loaded or
 * unloaded since the last time (it looks them up for every new address),
 * so that modules.c need not ask the loader at every new stack (a third of
 * the benchmark's time when it did). */
static bool modules_moved(void)
{
    static _Atomic unsigned seen;
    unsigned gen = unwind_modules_generation();
    return atomic_exchange_explicit(&seen, gen, memory_order_relaxed) != gen;
}

stack_ref stacks_capture(void)
{
    if (!table || !arena || !slot_of_id || depth == 0)
        return (stack_ref){0, 0};
    void *buf[MAX_DEPTH + 16];
    int n = unwind_mode == UNWIND_LIBUNWIND ? -1 : unwind_fast(buf, depth + 16);
    bool fast = n >= 0;
    if (!fast)
        n = unw_backtrace(buf, depth + 16);
    int i = first_caller_frame(buf, n);
    int count = n - i > depth ? depth : n - i;
    if (unwind_mode == UNWIND_CHECK) {
        atomic_fetch_add(fast ? &n_fast : &n_fallback, 1);
        if (fast)
            check_against_libunwind(buf + i, count, depth + 16);
    }
    return lookup_or_add(buf + i, count, !fast || modules_moved());
}

static void append_record(const sentry *e, uint32_t id, ltr_attach *a)
{
    uint8_t rec[LTR_RECORD_HEADER_SIZE + 10 + 8 * MAX_DEPTH];
    uint32_t size = LTR_RECORD_HEADER_SIZE + 10 + 8u * e->nframes;
    ltr_put_u16(rec, 5 /* LTR_META_STACK */);
    ltr_put_u16(rec + 2, 0);
    ltr_put_u32(rec + 4, size);
    ltr_put_u32(rec + 8, pid);
    ltr_put_u32(rec + 12, id);
    ltr_put_u16(rec + 16, e->nframes);
    memcpy(rec + 18, arena + e->off, 8u * e->nframes);
    ltr_shm_meta_append(a->shm, rec, size);
}

void stacks_publish(stack_ref ref, unsigned s, ltr_attach *a)
{
    sentry *e = &table[ref.slot];
    uint32_t bit = 1u << s;
    if (atomic_load_explicit(&e->written, memory_order_acquire) & bit)
        return;
    if (atomic_fetch_or(&e->claimed, bit) & bit) {
        /* another thread is writing it: our event must not come first */
        while (!(atomic_load_explicit(&e->written, memory_order_acquire) & bit))
            sched_yield();
        return;
    }
    append_record(e, ref.id, a);
    atomic_fetch_or_explicit(&e->written, bit, memory_order_release);
}

static void forget(uint32_t keep)
{
    uint32_t n = atomic_load(&next_id);
    for (uint32_t id = 1; table && id <= n; id++) {
        sentry *e = &table[slot_of_id[id]];
        atomic_fetch_and(&e->claimed, keep);
        atomic_fetch_and(&e->written, keep);
    }
}

void stacks_forget_session(unsigned s)
{
    forget(~(1u << s));
}

void stacks_after_fork(void)
{
    /* The child is a process of its own: its sessions hold none of its stacks
     * yet. Ids stay: they are per process, and the child's are its parent's. */
    forget(0);
    pid = (uint32_t)getpid();
    unwind_after_fork();
}
