/*
 * analyze/hmap.c — the open-addressing map of hmap.h. The capacity is a power
 * of two and the table grows at 70 % load, so a probe stays short.
 */
#include "analyze/hmap.h"

#include <stdlib.h>
#include <string.h>

static inline size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33; /* murmur3 finalizer: addresses differ mostly in middle bits */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static inline uint64_t key_at(const an_hmap *m, size_t i)
{
    uint64_t k;
    memcpy(&k, m->slots + i * m->esize, sizeof k);
    return k;
}

void an_hmap_init(an_hmap *m, size_t entry_size)
{
    memset(m, 0, sizeof *m);
    m->esize = entry_size;
}

void an_hmap_free(an_hmap *m)
{
    free(m->slots);
    free(m->used);
    m->slots = m->used = NULL;
    m->cap = m->n = 0;
}

void *an_hmap_get(const an_hmap *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return NULL;
        if (key_at(m, i) == key)
            return m->slots + i * m->esize;
    }
}

static int grow(an_hmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint8_t *slots = malloc(cap * m->esize), *used = calloc(cap, 1);
    if (!slots || !used) {
        free(slots);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t j = slot_of(key_at(m, i), cap);
        while (used[j])
            j = (j + 1) & (cap - 1);
        used[j] = 1;
        memcpy(slots + j * m->esize, m->slots + i * m->esize, m->esize);
    }
    free(m->slots);
    free(m->used);
    m->slots = slots;
    m->used = used;
    m->cap = cap;
    return 0;
}

void *an_hmap_put(an_hmap *m, uint64_t key, int *created)
{
    if ((m->n + 1) * 10 > m->cap * 7 && grow(m) < 0)
        return NULL;
    size_t i = slot_of(key, m->cap);
    for (; m->used[i]; i = (i + 1) & (m->cap - 1)) {
        if (key_at(m, i) == key) {
            if (created)
                *created = 0;
            return m->slots + i * m->esize;
        }
    }
    m->used[i] = 1;
    m->n++;
    uint8_t *e = m->slots + i * m->esize;
    memset(e, 0, m->esize);
    memcpy(e, &key, sizeof key);
    if (created)
        *created = 1;
    return e;
}

int an_hmap_del(an_hmap *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, i = slot_of(key, m->cap);
    while (m->used[i] && key_at(m, i) != key)
        i = (i + 1) & mask;
    if (!m->used[i])
        return 0;
    /* backward shift: pull later entries of the probe run into the hole when
     * their home slot does not lie (cyclically) between the hole and them */
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = slot_of(key_at(m, j), m->cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            memcpy(m->slots + i * m->esize, m->slots + j * m->esize, m->esize);
            i = j;
        }
    }
    m->used[i] = 0;
    m->n--;
    return 1;
}

void *an_hmap_next(const an_hmap *m, size_t *pos)
{
    for (; *pos < m->cap; (*pos)++)
        if (m->used[*pos])
            return m->slots + (*pos)++ * m->esize;
    return NULL;
}
