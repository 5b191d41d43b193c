/*
 * base/hmap.c — the open-addressing map of hmap.h: growing (capacity a
 * power of two, doubled at half load so a probe stays short), the entry of
 * key 0, and the plain entry points for maps off the hot path.
 */
#include "base/hmap.h"

#include <stdlib.h>
#include <sys/mman.h>

/* Slots of a MiB and more are a mapping of their own, advised huge pages.
 * The analysis's table of live blocks grows with the live set: perl with a
 * hash of 2 M entries left 2.1 M blocks, a table of 256 MiB, which malloc
 * maps (past its threshold) without the advice: 235 000 page faults, 0.4 s
 * of system time in a 0.9 s analysis (heaptrack_print took 0.46 s). */
#define SLOTS_MAPPED ((size_t)1 << 20)

static void *slots_new(size_t bytes)
{
    if (bytes < SLOTS_MAPPED)
        return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); /* fresh pages are zero: as calloc's */
    return p;
}

static void slots_free(void *p, size_t bytes)
{
    if (bytes < SLOTS_MAPPED)
        free(p);
    else if (p)
        munmap(p, bytes);
}

/* Growing reads the old slots once, in order, and the hash keeps the order
 * of home slots (the top bits of key * 2^64/phi: a home h becomes 2h or
 * 2h + 1), so the new table fills about twice as fast as the old one is
 * read: a mapped old table is unmapped behind the scan, a chunk at a time,
 * and the two together hold no more than the new one. Unmapped at the end,
 * they held 1.5 times it (perl's hash of 1 M strings, 2 M live blocks: the
 * analysis's peak 221 MB, of which 192 the table growing from 64 to 128). */
#define RELEASE_CHUNK ((size_t)2 << 20)

static size_t release_behind(uint8_t *old, size_t old_bytes, size_t gone, size_t read)
{
    /* what is left stays a mapping slots_free knows as one (SLOTS_MAPPED) */
    if (old_bytes < SLOTS_MAPPED || read - gone < RELEASE_CHUNK || old_bytes - gone < RELEASE_CHUNK + SLOTS_MAPPED)
        return gone;
    munmap(old + gone, RELEASE_CHUNK);
    return gone + RELEASE_CHUNK;
}

void an_hmap_init(an_hmap *m, size_t entry_size)
{
    memset(m, 0, sizeof *m);
    m->esize = entry_size;
}

void an_hmap_init_addresses(an_hmap *m, size_t entry_size)
{
    an_hmap_init(m, entry_size);
    m->near = 1;
}

void an_hmap_free(an_hmap *m)
{
    slots_free(m->slots, m->cap * m->esize);
    free(m->zero);
    m->slots = m->zero = NULL;
    m->cap = m->n = 0;
}

void *an_hmap_get(const an_hmap *m, uint64_t key) { return an_hmap_get_sized(m, key, m->esize); }

void *an_hmap_put(an_hmap *m, uint64_t key, int *created)
{
    return an_hmap_put_sized(m, key, created, m->esize);
}

int an_hmap_del(an_hmap *m, uint64_t key) { return an_hmap_take_sized(m, key, NULL, m->esize); }

static int grow(an_hmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : m->first ? m->first : 64;
    if (cap > SIZE_MAX / 2 / m->esize)
        return -1;
    uint8_t *slots = slots_new(cap * m->esize);
    if (!slots)
        return -1;
    unsigned shift = 64 - (unsigned)__builtin_ctzll(cap);
    size_t old_bytes = m->cap * m->esize, gone = 0;
    for (size_t i = 0; i < m->cap; i++) {
        const uint8_t *e = m->slots + i * m->esize;
        uint64_t key = an_hmap_key(e);
        if (key) {
            size_t j = an_hmap_home_in(key, m->near, shift);
            while (an_hmap_key(slots + j * m->esize))
                j = (j + 1) & (cap - 1);
            memcpy(slots + j * m->esize, e, m->esize);
        }
        gone = release_behind(m->slots, old_bytes, gone, (i + 1) * m->esize);
    }
    if (m->slots) /* none before the first growth */
        slots_free(m->slots + gone, old_bytes - gone);
    m->slots = slots;
    m->cap = cap;
    m->shift = shift;
    return 0;
}

void *an_hmap_put_slow(an_hmap *m, uint64_t key, int *created)
{
    if (!key) {
        if (created)
            *created = !m->zero;
        if (!m->zero && (m->zero = calloc(1, m->esize)))
            m->n++;
        return m->zero;
    }
    void *e = an_hmap_get_sized(m, key, m->esize);
    if (e) {
        if (created)
            *created = 0;
        return e;
    }
    if (grow(m) < 0)
        return NULL;
    return an_hmap_put_sized(m, key, created, m->esize);
}

int an_hmap_take_zero(an_hmap *m, void *out)
{
    if (!m->zero)
        return 0;
    if (out)
        memcpy(out, m->zero, m->esize);
    free(m->zero);
    m->zero = NULL;
    m->n--;
    return 1;
}

void *an_hmap_next(const an_hmap *m, size_t *pos)
{
    for (; *pos < m->cap; (*pos)++)
        if (an_hmap_key(m->slots + *pos * m->esize))
            return m->slots + (*pos)++ * m->esize;
    if (*pos == m->cap && m->zero) {
        (*pos)++;
        return m->zero;
    }
    return NULL;
}

void an_hmap_keep(an_hmap *m, int (*keep)(const void *entry, void *ctx), void *ctx)
{
    if (m->zero && !keep(m->zero, ctx))
        an_hmap_take_zero(m, NULL);
    /* a removal pulls later entries of its run back, into this slot or ones
     * after it: the slot is looked at again, and nothing not yet looked at
     * lands behind the scan (an entry of a run that wrapped around to the
     * start was looked at already, and may be asked again) */
    for (size_t i = 0; i < m->cap;) {
        const uint8_t *e = m->slots + i * m->esize;
        uint64_t key = an_hmap_key(e);
        if (key && !keep(e, ctx))
            an_hmap_take_sized(m, key, NULL, m->esize);
        else
            i++;
    }
}
