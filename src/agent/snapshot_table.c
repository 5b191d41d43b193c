/*
 * agent/snapshot_table.c — the live-block table of heap snapshots
 * (snapshot.h): open addressing keyed by address, in 64 shards each with its
 * own spin lock, so that threads allocating at once rarely meet and a
 * snapshot holds up only the shard it copies.
 *
 * An entry is 16 bytes: the address (47 bits of user space, 8-aligned, kept
 * as addr >> 3) beside the stack id (20 bits, the trie's limit), and the size
 * (40 bits) beside the allocation time in seconds (24 bits: 194 days, then it
 * stays there). Linear probing with backward-shift deletion: no tombstones,
 * so a table that churns does not fill up with them. Memory comes from mmap,
 * never from the allocator the agent hooks; a shard doubles at 3/4 full.
 */
#include "agent/snapshot.h"
#include "prim/prim.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#define SHARDS 64
#define FIRST_CAP 128u /* entries of a shard's first array: 2 KB, 128 KB in all */
#define STACK_BITS 20
#define STACK_MASK ((1u << STACK_BITS) - 1)
#define TIME_MAX ((1u << 24) - 1)

typedef struct shard {
    _Alignas(64) _Atomic uint32_t lock;
    uint64_t *e; /* 2 words per entry: key, value; key 0 = empty */
    uint64_t mask;
    uint64_t n;
} shard;

static shard shards[SHARDS];
static _Atomic uint64_t untracked;

static inline uint64_t hash_of(uint64_t addr3)
{
    return addr3 * 0x9E3779B97F4A7C15ull;
}

static inline shard *shard_of(uint64_t h)
{
    return &shards[h >> 58];
}

static inline uint64_t home_of(uint64_t h, uint64_t mask)
{
    return (h >> 20) & mask;
}

static void lock(shard *s)
{
    for (unsigned spins = 0; atomic_exchange_explicit(&s->lock, 1, memory_order_acquire);) {
        while (atomic_load_explicit(&s->lock, memory_order_relaxed))
            if (++spins > 64)
                sched_yield(); /* the holder is copying or growing the shard */
    }
}

static void unlock(shard *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static uint64_t *map_entries(uint64_t cap, int populate)
{
    void *p = mmap(NULL, cap * 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The slot of key's address in s, or the empty slot where it would go. */
static uint64_t find(const shard *s, uint64_t h, uint64_t addr3)
{
    uint64_t i = home_of(h, s->mask);
    while (s->e[2 * i] && s->e[2 * i] >> STACK_BITS != addr3)
        i = (i + 1) & s->mask;
    return i;
}

/* Doubles s (or makes its first array); false if there is no memory. */
static bool grow(shard *s)
{
    uint64_t cap = s->e ? (s->mask + 1) * 2 : FIRST_CAP;
    uint64_t *ne = map_entries(cap, 0), *old = s->e, oldcap = s->e ? s->mask + 1 : 0;
    if (!ne)
        return false;
    s->e = ne;
    s->mask = cap - 1;
    for (uint64_t j = 0; j < oldcap; j++) {
        uint64_t k = old[2 * j];
        if (!k)
            continue;
        uint64_t i = find(s, hash_of(k >> STACK_BITS), k >> STACK_BITS);
        ne[2 * i] = k;
        ne[2 * i + 1] = old[2 * j + 1];
    }
    if (old)
        munmap(old, oldcap * 16);
    return true;
}

static bool addr_ok(uintptr_t addr)
{
    return addr && !(addr & 7) && (uint64_t)addr >> 47 == 0;
}

static void put(uintptr_t addr, uint64_t key, uint64_t val)
{
    uint64_t addr3 = (uint64_t)addr >> 3, h = hash_of(addr3);
    shard *s = shard_of(h);
    lock(s);
    if ((!s->e || (s->n + 1) * 4 > (s->mask + 1) * 3) && !grow(s) &&
        (!s->e || s->n + 1 > s->mask)) {
        unlock(s);
        atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
        return;
    }
    uint64_t i = find(s, h, addr3);
    if (!s->e[2 * i])
        s->n++;
    /* a key already there is a block freed while the table was not kept:
     * the address is handed out again, the new block replaces it */
    s->e[2 * i] = key;
    s->e[2 * i + 1] = val;
    unlock(s);
}

void snap_table_insert(uintptr_t addr, uint64_t size, uint32_t stack, uint32_t now_s)
{
    if (!addr_ok(addr)) {
        atomic_fetch_add_explicit(&untracked, 1, memory_order_relaxed);
        return;
    }
    uint64_t key = ((uint64_t)addr >> 3) << STACK_BITS | (stack & STACK_MASK);
    uint64_t val = (size > SNAP_SIZE_MAX ? SNAP_SIZE_MAX : size) |
                   (uint64_t)(now_s > TIME_MAX ? TIME_MAX : now_s) << 40;
    put(addr, key, val);
}

/* Backward-shift deletion of slot i: the entries after it that would be
 * found past it move back, so probes never cross a hole they should not. */
static void delete_at(shard *s, uint64_t i)
{
    uint64_t m = s->mask;
    for (uint64_t j = (i + 1) & m; s->e[2 * j]; j = (j + 1) & m) {
        uint64_t home = home_of(hash_of(s->e[2 * j] >> STACK_BITS), m);
        if (((j - home) & m) >= ((j - i) & m)) {
            s->e[2 * i] = s->e[2 * j];
            s->e[2 * i + 1] = s->e[2 * j + 1];
            i = j;
        }
    }
    s->e[2 * i] = s->e[2 * i + 1] = 0;
    s->n--;
}

bool snap_table_take(uintptr_t addr, uint64_t out[2])
{
    if (!addr_ok(addr))
        return false;
    uint64_t addr3 = (uint64_t)addr >> 3, h = hash_of(addr3);
    shard *s = shard_of(h);
    if (!__atomic_load_n(&s->e, __ATOMIC_RELAXED))
        return false; /* the block came before the table */
    lock(s);
    bool found = false;
    if (s->e) {
        uint64_t i = find(s, h, addr3);
        if ((found = s->e[2 * i] != 0)) {
            out[0] = s->e[2 * i];
            out[1] = s->e[2 * i + 1];
            delete_at(s, i);
        }
    }
    unlock(s);
    return found;
}

void snap_table_remove(uintptr_t addr)
{
    uint64_t e[2];
    snap_table_take(addr, e);
}

void snap_table_put_back(uintptr_t addr, const uint64_t e[2])
{
    put(addr, e[0], e[1]);
}

/* The walk's copy of one shard: mapped, kept from walk to walk. */
static uint64_t *scratch;
static uint64_t scratch_cap; /* entries */

static bool scratch_fit(uint64_t n)
{
    if (n <= scratch_cap)
        return true;
    uint64_t cap = scratch_cap ? scratch_cap : FIRST_CAP;
    while (cap < n)
        cap *= 2;
    /* its pages made now: faulting them in while a shard is held would
     * lengthen the pause of the program's threads */
    uint64_t *p = map_entries(cap, MAP_POPULATE);
    if (!p)
        return false;
    if (scratch)
        munmap(scratch, scratch_cap * 16);
    scratch = p;
    scratch_cap = cap;
    return true;
}

int snap_table_walk(uint32_t now_s, void (*fn)(const snap_block *b, void *arg), void *arg,
                    uint64_t *pause_ns)
{
    *pause_ns = 0;
    for (unsigned k = 0; k < SHARDS; k++) {
        shard *s = &shards[k];
        uint64_t n = 0;
        for (;;) {
            /* sized outside the lock (mmap is slow); a shard that grew past
             * the copy meanwhile is looked at again */
            if (!scratch_fit(__atomic_load_n(&s->n, __ATOMIC_RELAXED) + 64))
                return -ENOMEM;
            lock(s);
            if (s->n <= scratch_cap)
                break;
            unlock(s);
        }
        uint64_t t0 = ltr_now_ns();
        for (uint64_t i = 0; s->e && i <= s->mask; i++)
            if (s->e[2 * i]) {
                scratch[2 * n] = s->e[2 * i];
                scratch[2 * n + 1] = s->e[2 * i + 1];
                n++;
            }
        unlock(s);
        uint64_t held = ltr_now_ns() - t0;
        *pause_ns = held > *pause_ns ? held : *pause_ns;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t t = (uint32_t)(scratch[2 * i + 1] >> 40);
            snap_block b = {.size = scratch[2 * i + 1] & SNAP_SIZE_MAX,
                            .stack = (uint32_t)(scratch[2 * i] & STACK_MASK),
                            .age_s = now_s > t ? now_s - t : 0};
            fn(&b, arg);
        }
    }
    return 0;
}

void snap_table_clear(void)
{
    for (unsigned k = 0; k < SHARDS; k++) {
        shard *s = &shards[k];
        lock(s);
        if (s->e)
            munmap(s->e, (s->mask + 1) * 16);
        s->e = NULL;
        s->mask = s->n = 0;
        unlock(s);
    }
    atomic_store(&untracked, 0);
}

void snap_table_stats(uint64_t *blocks, uint64_t *table_bytes, uint64_t *not_kept)
{
    *blocks = *table_bytes = 0;
    for (unsigned k = 0; k < SHARDS; k++) {
        shard *s = &shards[k];
        *blocks += __atomic_load_n(&s->n, __ATOMIC_RELAXED);
        *table_bytes += __atomic_load_n(&s->e, __ATOMIC_RELAXED) ? (s->mask + 1) * 16 : 0;
    }
    *not_kept = atomic_load(&untracked);
}

void snap_table_after_fork(void)
{
    /* The child is another process: its table starts when it is enabled. A
     * lock another thread held at the fork is free here. */
    for (unsigned k = 0; k < SHARDS; k++) {
        shard *s = &shards[k];
        if (s->e)
            munmap(s->e, (s->mask + 1) * 16);
        s->e = NULL;
        s->mask = s->n = 0;
        atomic_store(&s->lock, 0);
    }
    atomic_store(&untracked, 0);
}
