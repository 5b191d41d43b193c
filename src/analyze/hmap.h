/*
 * analyze/hmap.h — an open-addressing hash map from u64 keys to fixed-size
 * entries stored inline. The analyzer keeps every live allocation in one of
 * these, so it is built for that: no allocation per entry, linear probing,
 * and deletion by backward shift (no tombstones, so a long trace full of
 * malloc/free pairs never degrades the table).
 */
#ifndef LTR_ANALYZE_HMAP_H
#define LTR_ANALYZE_HMAP_H

#include <stddef.h>
#include <stdint.h>

/* Every entry starts with its u64 key. */
typedef struct an_hmap {
    uint8_t *slots;   /* cap entries of esize bytes; a slot is empty when used[i] == 0 */
    uint8_t *used;
    size_t esize, cap, n;
} an_hmap;

void an_hmap_init(an_hmap *m, size_t entry_size);
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

#endif
