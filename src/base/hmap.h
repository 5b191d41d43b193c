/*
 * base/hmap.h — an open-addressing hash map from u64 keys to fixed-size
 * entries stored inline. The analyzer keeps every live allocation in one of
 * these, so it is built for that: no allocation per entry, linear probing,
 * Fibonacci hashing, key 0 marking an empty slot (the entry of key 0, if any,
 * is kept aside), and deletion by backward shift (no tombstones, so a long
 * trace full of malloc/free pairs never degrades the table).
 * In base/ (below every part) because symbols uses it as well as analyze.
 *
 * The *_sized functions are inline for the hot paths: called with a constant
 * entry size, the compiler turns the slot arithmetic and copies into a few
 * instructions. The plain functions are the same for everyone else.
 */
#ifndef LTR_BASE_HMAP_H
#define LTR_BASE_HMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Every entry starts with its u64 key. */
typedef struct an_hmap {
    uint8_t *slots; /* cap entries of esize bytes; a slot whose key is 0 is empty */
    uint8_t *zero;  /* the entry of key 0, or NULL */
    size_t esize, cap, n; /* n counts the entry of key 0 too */
    unsigned shift; /* 64 - log2(cap): the hash is the top bits of key * 2^64/phi */
    unsigned first; /* slots of the first table, a power of two; 0 (an_hmap_init's): 64 */
    unsigned near;  /* keys are addresses: nearby ones get nearby slots (an_hmap_init_addresses) */
} an_hmap;

void an_hmap_init(an_hmap *m, size_t entry_size);
/* A map keyed by heap addresses: the blocks of a 4 KiB page get home slots
 * in order, two slots a 16-byte granule, the pages spread by the hash. A
 * program's allocations and frees walk its heap in order (a growing heap is
 * cut block after block), so its events walk the table in order too, where
 * a hash of the whole address sent each to a cache line and a page of its
 * own (docs/benchmarks.md, "Live blocks near each other": perl's leak of
 * 2 M blocks, the analysis's CPU 0.78 of before). Two slots a granule, not
 * one: session 3 took one back because pages of 16-byte blocks (jemalloc's
 * smallest class; glibc's is 32) filled whole runs, and deleting 2 M of
 * them in random order took 87 ns against the hash's 35; so 40 (2 M blocks
 * at 32 and 112 bytes: 38 and 37 against 35 and 30; inserts 22 and 26
 * against 35). On cc1plus's events the mean probe is 1.44 slots (hash:
 * 1.51), the longest 26 (24). */
void an_hmap_init_addresses(an_hmap *m, size_t entry_size);
void an_hmap_free(an_hmap *m);
/* The entry of key, or NULL. */
void *an_hmap_get(const an_hmap *m, uint64_t key);
/* The entry of key, created zeroed (key set) if absent; *created says which.
 * NULL only when memory runs out. Pointers into the map are valid until the next put/del. */
void *an_hmap_put(an_hmap *m, uint64_t key, int *created);
/* Removes key's entry if present; returns 1 if it was there. */
int an_hmap_del(an_hmap *m, uint64_t key);
/* Iteration: *pos starts at 0; returns the next entry or NULL at the end. */
void *an_hmap_next(const an_hmap *m, size_t *pos);
/* Removes, in place, every entry that keep(entry, ctx) says no to (0); it
 * may be asked twice about an entry it keeps, once about one it removes. Use it rather than filling a fresh
 * map from another's iteration: that puts keys in the order of their hash
 * into a map still too small for them, where they share a few home slots
 * and each probe runs the length of their cluster, which is quadratic (the
 * trace writer's pruning of 262 144 addresses so took a second). */
void an_hmap_keep(an_hmap *m, int (*keep)(const void *entry, void *ctx), void *ctx);

/* FNV-1a over n bytes, from h (AN_HASH_START to begin): the key of an entry
 * found by its bytes (strings, paths), which the caller compares again. */
#define AN_HASH_START 0xcbf29ce484222325ull
static inline uint64_t an_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
/* Out-of-line parts of the inline functions: key 0, and growing before an insert. */
void *an_hmap_put_slow(an_hmap *m, uint64_t key, int *created);
int an_hmap_take_zero(an_hmap *m, void *out);

#define AN_HMAP_NEAR_BITS 8 /* granules of 16 bytes kept together: a page */
static inline size_t an_hmap_home_in(uint64_t key, unsigned near, unsigned shift)
{
    if (!near)
        return (size_t)((key * 0x9e3779b97f4a7c15ull) >> shift);
    uint64_t g = key >> 4;
    size_t base = (size_t)(((g >> AN_HMAP_NEAR_BITS) * 0x9e3779b97f4a7c15ull) >> shift);
    return (base + 2 * (size_t)(g & ((1u << AN_HMAP_NEAR_BITS) - 1))) & (((size_t)1 << (64 - shift)) - 1);
}

static inline size_t an_hmap_home(const an_hmap *m, uint64_t key)
{
    return an_hmap_home_in(key, m->near, m->shift);
}

static inline uint64_t an_hmap_key(const uint8_t *entry)
{
    uint64_t k;
    memcpy(&k, entry, sizeof k);
    return k;
}

static inline void *an_hmap_get_sized(const an_hmap *m, uint64_t key, size_t esize)
{
    if (!key)
        return m->zero;
    if (!m->cap)
        return NULL;
    for (size_t i = an_hmap_home(m, key);; i = (i + 1) & (m->cap - 1)) {
        uint8_t *e = m->slots + i * esize;
        uint64_t k = an_hmap_key(e);
        if (k == key)
            return e;
        if (!k)
            return NULL;
    }
}

static inline void *an_hmap_put_sized(an_hmap *m, uint64_t key, int *created, size_t esize)
{
    if (!key || (m->n + 1) * 2 > m->cap) /* grows at half load: short probe runs */
        return an_hmap_put_slow(m, key, created);
    for (size_t i = an_hmap_home(m, key);; i = (i + 1) & (m->cap - 1)) {
        uint8_t *e = m->slots + i * esize;
        uint64_t k = an_hmap_key(e);
        if (k == key) {
            if (created)
                *created = 0;
            return e;
        }
        if (!k) {
            memset(e, 0, esize);
            memcpy(e, &key, sizeof key);
            m->n++;
            if (created)
                *created = 1;
            return e;
        }
    }
}

/* Removes key's entry, copying it to out first (out may be NULL); 1 if it was there. */
static inline int an_hmap_take_sized(an_hmap *m, uint64_t key, void *out, size_t esize)
{
    if (!key)
        return an_hmap_take_zero(m, out);
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, i = an_hmap_home(m, key);
    uint64_t k;
    while ((k = an_hmap_key(m->slots + i * esize)) != key) {
        if (!k)
            return 0;
        i = (i + 1) & mask;
    }
    if (out)
        memcpy(out, m->slots + i * esize, esize);
    /* backward shift: pull later entries of the probe run into the hole when
     * their home slot does not lie (cyclically) between the hole and them */
    for (size_t j = (i + 1) & mask; (k = an_hmap_key(m->slots + j * esize)) != 0; j = (j + 1) & mask) {
        if (((j - an_hmap_home(m, k)) & mask) >= ((j - i) & mask)) {
            memcpy(m->slots + i * esize, m->slots + j * esize, esize);
            i = j;
        }
    }
    memset(m->slots + i * esize, 0, sizeof key);
    m->n--;
    return 1;
}

#endif
