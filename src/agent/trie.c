/*
 * agent/trie.c — the heap agent's per-process frame trie (trie.h): nodes
 * (parent node, return address), numbered as created, and the prefix table
 * that finds the node of a path from two hashes of its frames, so that a
 * known stack costs one probe, whatever its depth.
 *
 * Lookups are lock-free. Adding takes a spin lock, held for the few nodes of
 * one new stack: one writer at a time numbers nodes without an atomic counter
 * that every new node moved between CPUs, never adds a prefix twice, and
 * publishes a slot whole (its value, then its key), so readers never wait
 * for a half-written one.
 *
 * The table starts at 2^15 slots and grows 2x when half full, up to 2^21
 * (2^20 nodes): most of its cost on bench/heap was the kernel zeroing its
 * pages, 32 MiB touched at random when it was made for the most nodes a
 * process may have (about 60 ns per operation). One thread grows it while the
 * others go on adding to the current one (the copy took milliseconds, and
 * threads waiting for the lock meanwhile cost ~45 ns per operation): it
 * copies the slots without the lock, then, with it, those added since, and
 * makes the new table current. Adders wait for it only once the table is
 * 9/16 full (wait_for_room). A lookup that began on an older table still
 * finds every node that was in it, and a prefix it misses there is looked for
 * again under the lock before it is added. Older tables are never unmapped (a
 * lookup may be reading one): they add up to less than the current one.
 */
#include "agent/trie.h"

#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define MIN_BITS 15
#define MAX_BITS 21
#define NTABLES (MAX_BITS - MIN_BITS + 1)
#define MAX_PROBES 128

/* A slot (pslot, trie.h): key is the prefix's first hash (0: empty), val
 * holds 24 bits of the second (VAL_CHECK), the node's id and, in TRIE_HINT
 * bits, a copy of the node's written bits of session slots 0..7: a known
 * stack is then published without reading its node, a cache miss per event.
 * A prefix is added only once the prefix one frame shorter is in: if a
 * prefix is there, so are all of its own prefixes, which is what lets a new
 * stack find its longest known prefix by bisection (stacks.c). */
#define VAL_CHECK(h2) ((uint64_t)((h2) >> 8) << 40)
#define VAL_CHECK_MASK (~0ull << 40)
#define VAL_HINTS (0xffull << 32)

fnode *trie_nodes;
static trie_table tables[NTABLES];
static _Atomic(const trie_table *) current;

/* Written by every new node, read by no lookup: a line of its own. */
static struct {
    _Alignas(64) atomic_int lock;
    _Atomic uint32_t count; /* nodes 1..count are in */
    unsigned forgets;       /* trie_forget calls, under the lock */
    atomic_int growing;     /* GROW_*: a thread is making the next table */
} adds;
enum { GROW_IDLE, GROW_BUSY, GROW_FAILED };

static void *map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* Huge pages where the system gives them: slots are probed at random, and
     * with 4 KiB pages nearly every probe of a big table missed the TLB. From
     * 2 MiB (a table of 2^17 slots, bench/heap's from its 32 768th node on):
     * a table is written whole at once (table_make), and on the PVM guest
     * 4 KiB pages took 0.73 ms for 2 MiB and 1.5 ms for 4 MiB, huge pages
     * 0.19 and 0.37 (MADV_POPULATE_WRITE, medians of 3; docs/benchmarks.md,
     * session 39). Not the 512 KiB and 1 MiB tables: no huge page fits, and
     * one made for them (0.1 to 2 ms on the project's VMs) would be most of
     * it unused, in every process that allocates. */
    if (bytes >= (2u << 20))
        madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* A new table of 2^bits slots, its pages written now: a page first read would
 * map the zero page, and the write after it costs a TLB shootdown of every
 * CPU running the program; faulting them in one go is also cheaper than one
 * by one, and a table is half full before it is replaced anyway. */
static bool table_make(trie_table *t, unsigned bits)
{
    size_t bytes = sizeof(pslot) << bits;
    pslot *p = map(bytes);
    if (!p)
        return false;
    if (madvise(p, bytes, MADV_POPULATE_WRITE) != 0)
        for (size_t off = 0; off < bytes; off += 4096)
            ((volatile char *)p)[off] = 0;
    t->slot = p;
    t->mask = ((uint64_t)1 << bits) - 1;
    return true;
}

/* The two polynomials' bases (odd: their powers never vanish mod 2^64). */
#define BASE_A 0xff51afd7ed558ccdull
#define BASE_B 0xc4ceb9fe1a85ec53ull

/* BASE_A^i and BASE_B^i, i from 0: the weight of a path's frame i places
 * out from its innermost; and their inverses (trie_init). */
uint64_t trie_pow[TRIE_SUM_MAX][2];
static uint64_t inv_pow[TRIE_MAX_PATH + 1][2];

static inline uint64_t h1_of(uint64_t a) { return (a ^ a >> 29) | 1; }
static inline uint32_t h2_of(uint64_t b) { return (uint32_t)(b >> 32); }

/* x's inverse mod 2^64, x odd: Newton's steps, each doubling the bits
 * right (x * x = 1 mod 8: 3 bits to start). */
static uint64_t inverse(uint64_t x)
{
    uint64_t y = x;
    for (int i = 0; i < 5; i++)
        y *= 2 - x * y;
    return y;
}

void trie_path_sums(void *const *f, int n, uint64_t s[2])
{
    s[0] = s[1] = 0;
    for (int i = 0; i < n; i++)
        trie_sum_frame(s, f[i], i);
}

void trie_hash_sums(const uint64_t s[2], uint64_t *h1, uint32_t *h2)
{
    *h1 = h1_of(s[0]);
    *h2 = h2_of(s[1]);
}

void trie_hashes_start(trie_hashes *h, void *const *f, int n, const uint64_t total[2])
{
    h->f = f;
    h->n = n;
    h->summed = 0;
    h->near = 0;
    h->inner[0][0] = h->inner[0][1] = 0;
    h->total[0] = total[0];
    h->total[1] = total[1];
}

/* Makes the sums of h's innermost frames up to q of them. */
static inline __attribute__((always_inline)) void sum_inner(trie_hashes *h, int q)
{
    for (int i = h->summed; i < q; i++) {
        h->inner[i + 1][0] = h->inner[i][0];
        h->inner[i + 1][1] = h->inner[i][1];
        trie_sum_frame(h->inner[i + 1], h->f[i], i);
    }
    h->summed = q > h->summed ? q : h->summed;
}

/* The sums of the prefix of h's outermost n - q frames, inner[q] made. */
static inline void sums_without_inner(const trie_hashes *h, int q, uint64_t s[2])
{
    s[0] = (h->total[0] - h->inner[q][0]) * inv_pow[q][0];
    s[1] = (h->total[1] - h->inner[q][1]) * inv_pow[q][1];
}

/* The sums of the prefix of h's outermost k frames, 0 <= k <= n. */
static void prefix_sums(trie_hashes *h, int k, uint64_t s[2])
{
    int q = h->n - k;
    sum_inner(h, q);
    sums_without_inner(h, q, s);
}

void trie_prefix_hash(trie_hashes *h, int k, uint64_t *h1, uint32_t *h2)
{
    int q = h->n - k;
    if (q >= 1 && q <= h->near) {
        *h1 = h->near_h1[q - 1];
        *h2 = h->near_h2[q - 1];
        return;
    }
    uint64_t s[2];
    prefix_sums(h, k, s);
    trie_hash_sums(s, h1, h2);
}

/* One pass, its sums inlined: a call of trie_prefix_hash for each, and the
 * search's calls for the same prefixes again, were 70 instructions a prefix
 * and 6.1 prefixes a new stack, 129 instructions an event on bench/heap,
 * where half the stacks are new (callgrind; docs/benchmarks.md, session 39). */
void trie_hash_near(trie_hashes *h, const trie_table *t)
{
    int m = h->n - 1 < TRIE_NEAR ? h->n - 1 : TRIE_NEAR;
    sum_inner(h, m);
    for (int q = 1; q <= m; q++) {
        uint64_t s[2];
        uint32_t h2;
        sums_without_inner(h, q, s);
        trie_hash_sums(s, &h->near_h1[q - 1], &h2);
        h->near_h2[q - 1] = h2;
        if (t)
            trie_prefetch(t, h->near_h1[q - 1]);
    }
    h->near = m > 0 ? m : 0;
}

bool trie_init(void)
{
    trie_pow[0][0] = trie_pow[0][1] = 1;
    for (int i = 1; i < TRIE_SUM_MAX; i++) {
        trie_pow[i][0] = trie_pow[i - 1][0] * BASE_A;
        trie_pow[i][1] = trie_pow[i - 1][1] * BASE_B;
    }
    uint64_t inv_a = inverse(BASE_A), inv_b = inverse(BASE_B);
    inv_pow[0][0] = inv_pow[0][1] = 1;
    for (int i = 1; i <= TRIE_MAX_PATH; i++) {
        inv_pow[i][0] = inv_pow[i - 1][0] * inv_a;
        inv_pow[i][1] = inv_pow[i - 1][1] * inv_b;
    }
    trie_nodes = map(sizeof(fnode) * TRIE_MAX_NODES);
    return trie_nodes != NULL;
}

const trie_table *trie_current(void)
{
    return atomic_load_explicit(&current, memory_order_acquire);
}

stack_ref trie_find(const trie_table *t, uint64_t h1, uint32_t h2)
{
    for (uint64_t i = 0; i < MAX_PROBES; i++) {
        pslot *e = &t->slot[(h1 + i) & t->mask];
        uint64_t key = atomic_load_explicit(&e->key, memory_order_acquire);
        if (!key)
            break;
        if (key == h1) {
            uint64_t v = atomic_load_explicit(&e->val, memory_order_relaxed);
            if ((v & VAL_CHECK_MASK) == VAL_CHECK(h2))
                return (stack_ref){.id = (uint32_t)v, .hint = &e->val};
        }
    }
    return (stack_ref){0};
}

/* ---- adding: under the lock ------------------------------------------------ */

static void lock_adds(void)
{
    for (int spins = 0; atomic_exchange_explicit(&adds.lock, 1, memory_order_acquire);)
        while (atomic_load_explicit(&adds.lock, memory_order_relaxed)) {
            if (++spins < 100) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            } else {
                sched_yield(); /* the holder may not be running */
            }
        }
}

static void unlock_adds(void)
{
    atomic_store_explicit(&adds.lock, 0, memory_order_release);
}

/* The slot of t holding (key, check), else the empty one it would go in;
 * NULL if neither is within MAX_PROBES. */
static pslot *table_place(const trie_table *t, uint64_t key, uint64_t check)
{
    for (uint64_t i = 0; i < MAX_PROBES; i++) {
        pslot *e = &t->slot[(key + i) & t->mask];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
        if (!k || (k == key && (atomic_load_explicit(&e->val, memory_order_relaxed) &
                                VAL_CHECK_MASK) == check))
            return e;
    }
    return NULL;
}

/* Value first, key last: a reader that sees the key sees the value. */
static void slot_fill(pslot *e, uint64_t key, uint64_t val)
{
    atomic_store_explicit(&e->val, val, memory_order_relaxed);
    atomic_store_explicit(&e->key, key, memory_order_release);
}

/* Copies slot (key, val) into t unless it is there; false if no place. */
static bool copy_slot(const trie_table *t, uint64_t key, uint64_t val)
{
    pslot *e = table_place(t, key, val & VAL_CHECK_MASK);
    if (e && !atomic_load_explicit(&e->key, memory_order_relaxed))
        slot_fill(e, key, val);
    return e != NULL;
}

/* Copies every slot of from into t, a batch at a time with the places
 * prefetched (their misses overlap: twice as fast). Hints set in from after
 * a slot is copied are lost: a missing hint only means reading the node. */
static bool copy_table(const trie_table *from, const trie_table *t)
{
    enum { BATCH = 16 };
    uint64_t key[BATCH], val[BATCH];
    for (uint64_t i = 0; i <= from->mask;) {
        int n = 0;
        for (; n < BATCH && i <= from->mask; i++) {
            key[n] = atomic_load_explicit(&from->slot[i].key, memory_order_acquire);
            if (!key[n])
                continue;
            val[n] = atomic_load_explicit(&from->slot[i].val, memory_order_relaxed);
            trie_prefetch(t, key[n++]);
        }
        for (int k = 0; k < n; k++)
            if (!copy_slot(t, key[k], val[k]))
                return false;
    }
    return true;
}

static void clear_hints(const trie_table *t, uint64_t hints)
{
    for (uint64_t i = 0; i <= t->mask; i++)
        if (atomic_load_explicit(&t->slot[i].key, memory_order_relaxed))
            atomic_fetch_and(&t->slot[i].val, ~hints);
}

/* Makes the next table after old and copies old into it; adds go on into old
 * meanwhile, and are copied last, under the lock, with the switch. Called
 * with adds.growing GROW_BUSY. False, and nothing changed, if there is no memory
 * or a slot found no place. */
static bool grow(const trie_table *old)
{
    size_t next = (size_t)(old - tables) + 1;
    lock_adds();
    uint32_t n0 = atomic_load_explicit(&adds.count, memory_order_relaxed);
    unsigned forgets = adds.forgets;
    unlock_adds();
    trie_table *t = &tables[next];
    if (!table_make(t, MIN_BITS + (unsigned)next) || !copy_table(old, t))
        return false;
    lock_adds();
    bool ok = true;
    uint32_t n = atomic_load_explicit(&adds.count, memory_order_relaxed);
    for (uint32_t id = n0 + 1; ok && id <= n; id++) {
        pslot *e = &old->slot[trie_nodes[id].slot];
        ok = copy_slot(t, atomic_load_explicit(&e->key, memory_order_relaxed),
                       atomic_load_explicit(&e->val, memory_order_relaxed));
    }
    if (ok && forgets != adds.forgets)
        clear_hints(t, VAL_HINTS); /* the copy may hold hints from before */
    if (ok) /* nodes[].slot of nodes copied stays old's: only nodes added to
             * the current table are looked up by it (above) */
        atomic_store_explicit(&current, t, memory_order_release);
    unlock_adds();
    return ok;
}

/* Grows the table if it is half full and no other thread is at it. A grow
 * that failed is not tried again (the table fills up to MAX_PROBES). */
static void maybe_grow(void)
{
    const trie_table *t = atomic_load_explicit(&current, memory_order_acquire);
    int idle = GROW_IDLE;
    if (!t || atomic_load_explicit(&adds.count, memory_order_relaxed) < (t->mask + 1) / 2 ||
        t == &tables[NTABLES - 1] || !atomic_compare_exchange_strong(&adds.growing, &idle, GROW_BUSY))
        return;
    bool ok = t != atomic_load_explicit(&current, memory_order_acquire) || grow(t); /* or grown meanwhile */
    atomic_store(&adds.growing, ok ? GROW_IDLE : GROW_FAILED);
}

static void wait_for_grow(void)
{
    while (atomic_load_explicit(&adds.growing, memory_order_acquire) == GROW_BUSY)
        sched_yield();
}

/* Waits while another thread grows the table and it is over 9/16 full: with
 * more threads than CPUs, the others could fill it before the grower runs
 * again, and probe runs grow long fast above that (at 3/4, adds found no
 * slot within MAX_PROBES with 8 threads on 2 CPUs). */
static void wait_for_room(void)
{
    const trie_table *t = atomic_load_explicit(&current, memory_order_acquire);
    if (t && atomic_load_explicit(&adds.count, memory_order_relaxed) >= (t->mask + 1) / 16 * 9)
        wait_for_grow();
}

/* The node of prefix (h1, h2), ip below node parent, added if not in;
 * {0, NULL} when the trie is full. */
static stack_ref add_node(uint64_t h1, uint32_t h2, uint32_t parent, uint64_t ip)
{
    uint32_t n = atomic_load_explicit(&adds.count, memory_order_relaxed);
    const trie_table *t = atomic_load_explicit(&current, memory_order_relaxed);
    pslot *e = table_place(t, h1, VAL_CHECK(h2));
    if (!e)
        return (stack_ref){0};
    if (atomic_load_explicit(&e->key, memory_order_relaxed))
        return (stack_ref){.id = (uint32_t)atomic_load_explicit(&e->val, memory_order_relaxed),
                            .hint = &e->val};
    if (n + 1 >= TRIE_MAX_NODES)
        return (stack_ref){0};
    uint32_t id = n + 1;
    fnode *nd = &trie_nodes[id];
    nd->ip = ip;
    nd->parent = parent;
    atomic_store_explicit(&nd->claimed, 0, memory_order_relaxed);
    atomic_store_explicit(&nd->written, 0, memory_order_relaxed);
    nd->slot = (uint32_t)(e - t->slot);
    /* counted before it is findable: a fork child of a thread stopped in
     * between then leaves a gap in the ids, never gives one id twice */
    atomic_store_explicit(&adds.count, id, memory_order_relaxed);
    slot_fill(e, h1, VAL_CHECK(h2) | id);
    return (stack_ref){.id = id, .hint = &e->val};
}

/* The first table comes with the first stack: a process that is never traced
 * (the agent dormant) touches none of its memory. Under the lock; false if
 * there is no table and no memory for one. */
static bool first_table(void)
{
    if (atomic_load_explicit(&current, memory_order_relaxed))
        return true;
    if (!table_make(&tables[0], MIN_BITS))
        return false;
    atomic_store_explicit(&current, &tables[0], memory_order_release);
    return true;
}

/* The prefixes below from - 1 follow from it by the chain (prefix k + 1 =
 * prefix k * base + its next frame): two multiplies a node, no inverse. */
stack_ref trie_add(int from, trie_hashes *h, uint32_t parent)
{
    stack_ref ref = {.id = parent};
    uint64_t s[2];
    prefix_sums(h, from - 1, s); /* not under the lock */
    maybe_grow();
    wait_for_room();
    lock_adds();
    if (!first_table()) {
        unlock_adds();
        return (stack_ref){0}; /* no memory: no stacks */
    }
    for (int k = from; k <= h->n; k++) {
        const void *ip = h->f[h->n - k];
        uint64_t m = trie_mix(ip), h1;
        uint32_t h2;
        s[0] = s[0] * trie_pow[1][0] + m;
        s[1] = s[1] * trie_pow[1][1] + m;
        trie_hash_sums(s, &h1, &h2);
        stack_ref r;
        while (!(r = add_node(h1, h2, ref.id, (uint64_t)(uintptr_t)ip)).id &&
               atomic_load(&adds.growing) == GROW_BUSY) {
            unlock_adds(); /* no slot: the grow under way makes room */
            wait_for_grow();
            lock_adds();
        }
        if (!(ref = r).id)
            break;
    }
    unlock_adds();
    return ref;
}

uint32_t trie_count(void)
{
    return atomic_load_explicit(&adds.count, memory_order_relaxed);
}

/* Under the lock; a grow that copied hints meanwhile clears them (forgets). */
void trie_forget(uint32_t keep)
{
    uint64_t hints = 0;
    for (unsigned s = 0; s < 8; s++)
        hints |= keep & (1u << s) ? 0 : TRIE_HINT(s);
    lock_adds();
    adds.forgets++;
    const trie_table *cur = atomic_load_explicit(&current, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&adds.count, memory_order_relaxed);
    for (uint32_t id = 1; cur && id <= n; id++) {
        atomic_fetch_and(&trie_nodes[id].claimed, keep);
        atomic_fetch_and(&trie_nodes[id].written, keep);
    }
    /* older tables too: a lookup that began before a grow may read one */
    for (const trie_table *t = tables; cur && t <= cur; t++)
        clear_hints(t, hints);
    unlock_adds();
}

void trie_after_fork(void)
{
    atomic_store(&adds.lock, 0);
    atomic_store(&adds.growing, GROW_IDLE); /* the table it was making is dropped */
}
