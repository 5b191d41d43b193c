/*
 * agent/stacks.c — the call stack of each allocation, and the per-process
 * frame trie that gives each distinct stack an id.
 *
 * Unwinding reads the DWARF call frame information (.eh_frame), so stacks
 * are right in code built without frame pointers (Debian's libraries): the
 * agent's own unwinder (unwind.c, rules cached per address) for the common
 * case, libunwind's unw_backtrace for stacks it gives up on (signal frames,
 * DWARF expressions). LTR_HEAP_UNWIND=libunwind uses libunwind only;
 * LTR_HEAP_UNWIND=check unwinds each stack both ways, compares, and says at
 * exit (stderr) how many stacks each way gave and how many differed.
 *
 * Stacks share their outer frames, as in heaptrack: a node of the trie is
 * (parent node, return address), a stack's id is the id of its innermost
 * node, and a new stack costs only the nodes it does not share (the cost of
 * new stacks was most of the agent's overhead when each was stored and
 * written whole). A known stack costs one probe of a cache keyed by a hash
 * of its frames. Both tables are lock-free (a thread that first sees a node
 * claims an empty slot with a CAS and publishes the id once the node is in),
 * so threads never wait for each other except for the few instructions of a
 * publish. Each node remembers, per session slot, that its FRAME_NODES record
 * was claimed and written; an event names a stack only after all its nodes
 * are in the session's metadata region (docs/heap-events.md).
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

#define PREFIX_BITS 21 /* prefix table: 32 MiB of address space */
#define PREFIX_SLOTS (1u << PREFIX_BITS)
#define MAX_NODES (1u << 20)
/* New nodes stop this far below MAX_NODES: the check and the id's fetch_add
 * are not one step, and threads racing past the check still get an entry. */
#define NODE_LIMIT (MAX_NODES - 65536u)
#define MAX_PROBES 128
#define MAX_DEPTH 256

/* A frame node of the trie: the frame ip called from the frames of node
 * parent (0: ip is the outermost frame). Indexed by node id. */
typedef struct fnode {
    uint64_t ip;
    uint32_t parent;
    _Atomic uint32_t claimed, written; /* bit s: its record in session slot s */
    uint32_t slot;                     /* its slot in the prefix table */
} fnode;

/* The prefix table: a node is the prefix of a stack (its outermost frames),
 * found by two hashes of those frames: key is the first (0: empty slot), val
 * holds 24 bits of the second (VAL_CHECK), the node's id (0 while the id is
 * not in yet) and, in VAL_WRITTEN, a copy of the node's written bits of
 * session slots 0..7: a known stack is then published without reading its
 * node, a cache miss per event.
 * Slots are never freed, and a prefix is added only once the prefix one frame
 * shorter is in: if a prefix is there, so are all of its own prefixes, which
 * is what lets a new stack find its longest known prefix by bisection. */
typedef struct pslot {
    _Atomic uint64_t key, val;
} pslot;
#define VAL_CHECK(h2) ((uint64_t)((h2) >> 8) << 40)
#define VAL_WRITTEN(s) ((s) < 8 ? 1ull << (32 + (s)) : 0)

static pslot *prefixes;
static fnode *nodes;
static _Atomic uint32_t next_node;
/* Per page of the prefix table: written to already. A page's first access
 * must be a write: a read maps the shared zero page, and the write that
 * follows then replaces it with a TLB shootdown of every CPU running the
 * program (a third of the whole run's time on the benchmark when most stacks
 * were new). */
#define PREFIX_PAGES (PREFIX_SLOTS * sizeof(pslot) / 4096)
static _Atomic uint8_t prefix_touched[PREFIX_PAGES];

static int depth = 64;
static uint32_t pid; /* of this process (getpid is a system call per record) */
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

/* Address space, touched as used. Huge pages where the system gives them:
 * the hashed tables are probed at random, and with 4 KiB pages nearly every
 * probe of a new stack's frames missed the TLB (about 20 ns/op on the
 * benchmark). (They once seemed to crash the recorder; the cause was a
 * producer giving back a session's memory too early, fixed in producer.c.) */
static void *reserve_space(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
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
    prefixes = reserve_space(sizeof(pslot) * PREFIX_SLOTS);
    nodes = reserve_space(sizeof(fnode) * MAX_NODES);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

bool stacks_in_agent(uintptr_t ip)
{
    return ip >= agent_lo && ip < agent_hi;
}

/* Two independent hashes of each prefix of the n frames f (innermost
 * first): h1[k], h2[k] of the outermost k frames, k = 1..n. 96 bits of them
 * tell a prefix. */
static void hash_prefixes(void *const *f, int n, uint64_t *h1, uint32_t *h2)
{
    uint64_t a = 0x9e3779b97f4a7c15ull, b = 0xc2b2ae3d27d4eb4full;
    for (int k = 1; k <= n; k++) {
        uint64_t x = (uint64_t)(uintptr_t)f[n - k];
        a = (a ^ x) * 0xff51afd7ed558ccdull;
        a ^= a >> 32;
        b = (b + x) * 0xc4ceb9fe1a85ec53ull;
        b ^= b >> 29;
        h1[k] = a | 1;
        h2[k] = (uint32_t)(b >> 32);
    }
}

/* Probe i of the prefix table for h1, its page written to first. */
static pslot *prefix_slot(uint64_t h1, uint32_t i)
{
    size_t slot = (h1 + i) & (PREFIX_SLOTS - 1), page = slot * sizeof(pslot) / 4096;
    if (__builtin_expect(!atomic_load_explicit(&prefix_touched[page], memory_order_relaxed), 0)) {
        atomic_fetch_add((_Atomic uint8_t *)((char *)prefixes + page * 4096), 0); /* write fault */
        atomic_store_explicit(&prefix_touched[page], 1, memory_order_relaxed);
    }
    return &prefixes[slot];
}

/* The id in slot e if it holds prefix (h1, h2), else 0; waits for an id not
 * in yet. */
static uint32_t slot_id(pslot *e, uint64_t key, uint64_t h1, uint32_t h2)
{
    if (key != h1)
        return 0;
    uint64_t v;
    while (!(v = atomic_load_explicit(&e->val, memory_order_acquire)))
        sched_yield();
    return v >> 40 << 40 == VAL_CHECK(h2) ? (uint32_t)v : 0;
}

/* The node of prefix (h1, h2) and its slot, {0, 0} if none. */
static stack_ref prefix_find(uint64_t h1, uint32_t h2)
{
    for (uint32_t i = 0; i < MAX_PROBES; i++) {
        pslot *e = prefix_slot(h1, i);
        uint64_t key = atomic_load_explicit(&e->key, memory_order_acquire);
        if (!key)
            break;
        uint32_t id = slot_id(e, key, h1, h2);
        if (id)
            return (stack_ref){id, (uint32_t)(e - prefixes)};
    }
    return (stack_ref){0, 0};
}

/* The node of prefix (h1, h2) and its slot, its innermost frame ip below
 * node parent, added if no thread did; {0, 0} when the table is full. */
static stack_ref prefix_add(uint64_t h1, uint32_t h2, uint32_t parent, uint64_t ip)
{
    for (uint32_t i = 0; i < MAX_PROBES; i++) {
        pslot *e = prefix_slot(h1, i);
        uint64_t key = atomic_load_explicit(&e->key, memory_order_acquire);
        if (!key) {
            if (atomic_load_explicit(&next_node, memory_order_relaxed) >= NODE_LIMIT)
                break;
            if (atomic_compare_exchange_strong(&e->key, &key, h1)) {
                uint32_t id = atomic_fetch_add(&next_node, 1) + 1;
                nodes[id].ip = ip;
                nodes[id].parent = parent;
                nodes[id].slot = (uint32_t)(e - prefixes);
                atomic_store_explicit(&e->val, VAL_CHECK(h2) | id, memory_order_release);
                return (stack_ref){id, nodes[id].slot};
            }
        }
        uint32_t id = slot_id(e, key, h1, h2);
        if (id)
            return (stack_ref){id, (uint32_t)(e - prefixes)};
    }
    return (stack_ref){0, 0};
}

/* The longest prefix of the n frames that is in the table, known to be
 * shorter than n: its length (0: none) and node. New stacks mostly differ
 * from known ones in their few innermost frames: it looks 1, 2, 3, 4, then
 * 8, 16... frames in from the innermost (the first four probes' misses
 * overlapping, prefetched together), then bisects. */
static int longest_prefix(int n, const uint64_t *h1, const uint32_t *h2, uint32_t *node)
{
    int lo = 0, hi = n; /* prefix lo is in (or is the root), hi is not */
    *node = 0;
    for (int k = n - 1; k > 0 && k >= n - 4; k--)
        __builtin_prefetch(&prefixes[h1[k] & (PREFIX_SLOTS - 1)]);
    for (int step = 1; n - step > lo; step = step < 4 ? step + 1 : step * 2) {
        uint32_t id = prefix_find(h1[n - step], h2[n - step]).id;
        if (id) {
            lo = n - step;
            *node = id;
            break;
        }
        hi = n - step;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        uint32_t id = prefix_find(h1[mid], h2[mid]).id;
        if (id) {
            lo = mid;
            *node = id;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static stack_ref lookup_or_add(void *const *f, int n, bool rescan)
{
    if (n == 0)
        return (stack_ref){0, 0};
    uint64_t h1[n + 1];
    uint32_t h2[n + 1];
    hash_prefixes(f, n, h1, h2);
    stack_ref ref = prefix_find(h1[n], h2[n]);
    if (ref.id)
        return ref;
    for (int k = longest_prefix(n, h1, h2, &ref.id) + 1; k <= n; k++)
        if (!(ref = prefix_add(h1[k], h2[k], ref.id, (uint64_t)(uintptr_t)f[n - k])).id)
            return ref; /* full: no more stacks */
    if (rescan)
        modules_rescan(true); /* new code may have been loaded */
    return ref;
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
    snprintf(line, sizeof line, "ltr-heap[%d]: %u frame nodes\n", (int)getpid(),
             (unsigned)atomic_load(&next_node));
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
    if (!prefixes || !nodes || depth == 0)
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

/* Node records waiting to be appended: consecutive nodes of one path,
 * outermost first, so each is the parent of the next. */
typedef struct node_batch {
    uint16_t n;
    uint32_t id[MAX_DEPTH];
} node_batch;

/* Appends one FRAME_NODES record of the batch and marks its nodes written. */
static void flush(node_batch *b, uint32_t bit, ltr_attach *a)
{
    if (!b->n)
        return;
    uint8_t rec[LTR_RECORD_HEADER_SIZE + 10 + 12 * MAX_DEPTH];
    uint32_t size = LTR_RECORD_HEADER_SIZE + 10 + 12u * b->n;
    ltr_put_u16(rec, LTR_META_FRAME_NODES);
    ltr_put_u16(rec + 2, 0);
    ltr_put_u32(rec + 4, size);
    ltr_put_u32(rec + 8, pid);
    ltr_put_u32(rec + 12, nodes[b->id[0]].parent);
    ltr_put_u16(rec + 16, b->n);
    for (uint16_t i = 0; i < b->n; i++) {
        ltr_put_u32(rec + 18 + 12u * i, b->id[i]);
        ltr_put_u64(rec + 22 + 12u * i, nodes[b->id[i]].ip);
    }
    ltr_shm_meta_append(a->shm, rec, size);
    for (uint16_t i = 0; i < b->n; i++)
        atomic_fetch_or_explicit(&nodes[b->id[i]].written, bit, memory_order_release);
    b->n = 0;
}

/* Writes the nodes of stack ref that session slot s lacks, outermost first,
 * so that a node's parent is always before it. A node another thread is
 * writing is waited for, after this thread's own claims are written: a
 * waiting thread holds no unwritten claim, so waits never form a cycle. */
void stacks_publish(stack_ref ref, unsigned s, ltr_attach *a)
{
    _Atomic uint64_t *hint = &prefixes[ref.slot].val;
    if (atomic_load_explicit(hint, memory_order_acquire) & VAL_WRITTEN(s))
        return;
    uint32_t bit = 1u << s, chain[MAX_DEPTH];
    int n = 0;
    for (uint32_t id = ref.id; id && n < MAX_DEPTH; id = nodes[id].parent) {
        if (atomic_load_explicit(&nodes[id].written, memory_order_acquire) & bit)
            break;
        chain[n++] = id;
    }
    node_batch b;
    b.n = 0;
    while (n--) {
        fnode *nd = &nodes[chain[n]];
        if (!(atomic_fetch_or(&nd->claimed, bit) & bit)) {
            b.id[b.n++] = chain[n];
            continue;
        }
        flush(&b, bit, a);
        while (!(atomic_load_explicit(&nd->written, memory_order_acquire) & bit))
            sched_yield();
    }
    flush(&b, bit, a);
    atomic_fetch_or_explicit(hint, VAL_WRITTEN(s), memory_order_release);
}

static void forget(uint32_t keep)
{
    uint32_t n = atomic_load(&next_node);
    uint64_t hints = 0;
    for (unsigned s = 0; s < 8; s++)
        hints |= keep & (1u << s) ? 0 : VAL_WRITTEN(s);
    for (uint32_t id = 1; nodes && id <= n; id++) {
        atomic_fetch_and(&nodes[id].claimed, keep);
        atomic_fetch_and(&nodes[id].written, keep);
        atomic_fetch_and(&prefixes[nodes[id].slot].val, ~hints);
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
