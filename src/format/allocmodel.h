/*
 * format/allocmodel.h — the allocator model of format 5 (docs/trace-format.md,
 * "The allocator model"), shared by the writer (refwrite.c) and the reader
 * (refseq.c), which must keep exactly the same lists. An allocator hands a
 * freed block out again to a request of the same size class, most recently
 * freed first (glibc's tcache and fastbins are such lists), so an
 * allocation's address is most often one of the few last frees of its class:
 * its place in that list takes a few bits where a reference into all frees
 * took about a byte and a half. On cc1plus's trace the allocations'
 * addresses went from 1 373 K to 857 K compressed (docs/benchmarks.md).
 *
 * Format 6 adds the other way an allocator hands out memory: a block cut
 * from the end of its free space (glibc's top chunk) starts where the
 * previous one cut so ended, one chunk (the request, its 8-byte header,
 * rounded to 16, at least 32 bytes) further. A thread's allocations in a
 * growing heap are such runs: perl's 200 K fresh strings took 278 KB of
 * addresses, told so about 1 KB (docs/benchmarks.md, "The next address").
 */
#ifndef LTR_FORMAT_ALLOCMODEL_H
#define LTR_FORMAT_ALLOCMODEL_H

#include "base/records.h"

#include <stdint.h>

/* Entries per list (a pnew code 1..LTR_MODEL_LIST is a place in one). */
#define LTR_MODEL_LIST 16u
/* Format 6 (LTR_BLOCK_FLAG_NEXT): the pnew code of "the address after the
 * block's previous allocation", and of "the event's own old address" (a
 * realloc that stays in place: rust's growing strings, 99 000 of its 99 015
 * reallocs); references count on from LTR_MODEL_CODES. */
#define LTR_MODEL_NEXT (LTR_MODEL_LIST + 1u)
#define LTR_MODEL_SAME (LTR_MODEL_LIST + 2u)
#define LTR_MODEL_CODES LTR_MODEL_SAME
/* Format 6: the pref code of "the allocation right after the one the
 * block's previous free named" (a structure torn down in the order it was
 * built: rust's map entries, a key and its value, allocated and freed side
 * by side); distances count on from 2. */
#define LTR_MODEL_FREED_NEXT 1u
#define LTR_MODEL_CLASSES 256u

/* The size class of a request: glibc's chunk sizes up to 1 KiB (the size
 * plus its 8-byte header, in steps of 16: requests 0 to 24 share one), then
 * four classes for each power of two. Any function would keep the re-encoding
 * exact; this one finds most reuses. */
static inline unsigned ltr_model_class(uint64_t size)
{
    if (size <= 1024)
        return (unsigned)((size + 23) >> 4); /* 1..65 */
    unsigned k = 63u - (unsigned)__builtin_clzll(size); /* 10..63 */
    unsigned c = 66u + (k - 10u) * 4u + (unsigned)((size >> (k - 2u)) & 3u);
    return c < LTR_MODEL_CLASSES ? c : LTR_MODEL_CLASSES - 1u;
}

/* Where an allocator cutting blocks one after another would put the block
 * after one of `size` bytes at addr: glibc's chunk of that request (its
 * header, 16-byte steps, 32 bytes at least); 0 (no guess) for a size no
 * allocator could give. Any function keeps the re-encoding exact: this one
 * finds glibc's runs. */
static inline uint64_t ltr_model_next(uint64_t addr, uint64_t size)
{
    if (size > (1ull << 62))
        return 0;
    uint64_t chunk = (size + 23u) & ~(uint64_t)15u;
    return addr + (chunk < 32u ? 32u : chunk);
}

/* One class's list of freed addresses, most recent first: a ring, so that
 * a push costs one store and a take only the places before it (most
 * allocations take place 0 or 1). A reader that knows a free's class but
 * not its address (its allocation's address was lost) keeps its place,
 * marked unknown: the places after it stay right. */
typedef struct ltr_model_list {
    uint32_t n;       /* entries, at most LTR_MODEL_LIST */
    uint32_t head;    /* the slot of place 0 */
    uint32_t unknown; /* bit i: the address at place i is not known (readers only) */
    uint64_t a[LTR_MODEL_LIST];
} ltr_model_list;

_Static_assert(LTR_MODEL_LIST <= 32 && (LTR_MODEL_LIST & (LTR_MODEL_LIST - 1)) == 0,
               "a list is a ring of a power of two, its unknown places a 32-bit mask");

static inline uint64_t ltr_model_at(const ltr_model_list *l, uint32_t i)
{
    return l->a[(l->head + i) & (LTR_MODEL_LIST - 1u)];
}

/* No entry: what the writer and reader do to every list when they can no
 * longer be sure of what the other holds. */
static inline void ltr_model_empty(ltr_model_list *l)
{
    l->n = 0;
    l->unknown = 0;
}

/* A free's address goes in front; the oldest falls off a full list. */
static inline void ltr_model_push(ltr_model_list *l, uint64_t addr, int unknown)
{
    l->head = (l->head - 1u) & (LTR_MODEL_LIST - 1u); /* on a full list, the oldest's slot */
    l->a[l->head] = addr;
    l->n += l->n < LTR_MODEL_LIST;
    if (l->unknown | (uint32_t)unknown) /* none, the writer's always and a reader's mostly: no shifting of nothing */
        l->unknown = (uint32_t)(((uint64_t)l->unknown << 1) & ((1ull << l->n) - 1u)) | (unknown != 0);
}

/* The entry at place i (< n) leaves the list: the places before it move up one. */
static inline void ltr_model_take(ltr_model_list *l, uint32_t i)
{
    for (uint32_t j = i; j > 0; j--)
        l->a[(l->head + j) & (LTR_MODEL_LIST - 1u)] = l->a[(l->head + j - 1u) & (LTR_MODEL_LIST - 1u)];
    l->head = (l->head + 1u) & (LTR_MODEL_LIST - 1u);
    l->n--;
    uint32_t below = (uint32_t)((1ull << i) - 1u);
    if (l->unknown)
        l->unknown = (l->unknown & below) | (uint32_t)(((uint64_t)l->unknown >> (i + 1u)) << i);
}

/* Where addr is in the list, or -1. */
static inline int ltr_model_find(const ltr_model_list *l, uint64_t addr)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (ltr_model_at(l, i) == addr)
            return (int)i;
    return -1;
}

/* An ordinal and a class packed in one word: a sequence's ordinal stays
 * far below 2^55 (bases from LTR_REFS_BASE_MAX on are damage), bit 55 is
 * the reader's "address unknown", the class takes the top byte. */
#define LTR_MODEL_ORD_BITS 56
#define LTR_MODEL_ORD_MASK ((1ull << 55) - 1u)
#define LTR_MODEL_UNKNOWN (1ull << 55)
#define LTR_REFS_BASE_MAX (1ull << 54)

#endif
