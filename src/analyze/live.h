/*
 * analyze/live.h — the model's table of a process's live blocks: the blocks
 * in one array, appended as they come (a freed block's place taken again by
 * the next), and an index by address of 4-byte block numbers beside it.
 * It was an open-addressing map of the blocks themselves (base/hmap.h), at
 * most half full: perl's leak of 2 M blocks grew it by doubling to 2^22
 * slots of 32 bytes, 128 MiB, and the kernel zeroing the 256 MiB its
 * growth touched was two thirds of the analysis's samples (perf,
 * docs/benchmarks.md, "Where the leak's analysis goes"). Now the blocks are
 * 48 MiB grown by mremap (prim/table.c: no copy, no page touched twice) and
 * the index 16 MiB, each slot a block's number and, above it, bits of the
 * block's address (an_lives_tag); its growth reads the blocks in order, not
 * the slots.
 * The index keeps base/hmap.h's home slots keyed by page (a page's blocks
 * near each other) and its deletion by backward shift (no tombstones).
 * The hot paths are inline: the model's batch loop is built around them.
 */
#ifndef LTR_ANALYZE_LIVE_H
#define LTR_ANALYZE_LIVE_H

#include "base/hmap.h"

#include <stddef.h>
#include <stdint.h>

/* 24 bytes (32 with a 64-bit size and the thread in it: perl's leak of
 * 2 M live blocks touched 64 MiB of fresh pages for them, 48 now): the
 * rare sizes of AN_LIVE_BIG and more are kept aside by address
 * (an_lives.big), and the thread beside the blocks only once a second
 * thread allocates (an_lives.tids). */
typedef struct an_live {
    uint64_t addr;
    uint64_t ts;    /* allocated at: a stack's outstanding blocks' spread in time (an_stack.held_*) */
    uint32_t size;  /* an_lives_size's; a free place's: the next free place + 1 (0: none) */
    uint32_t stack; /* the model's (model.c); AN_LIVE_FREE: a free place */
} an_live;

#define AN_LIVE_FREE UINT32_MAX /* no stack index of the model's with its inside bit (MAX_STACKS) */
#define AN_LIVE_BIG UINT32_MAX  /* an_live.size of a block whose size is in an_lives.big */

/* A block's size of AN_LIVE_BIG or more, by its address. */
typedef struct an_live_big {
    uint64_t addr, size;
} an_live_big;

typedef struct an_lives {
    an_live *blocks;
    size_t nblocks, capblocks; /* places used (live or free), and room */
    uint32_t free;             /* the first free place + 1, 0: none */
    /* cap slots, a power of two: 0 empty, else a block's place + 1 in the
     * bits of place (places stay under cap / 2: a new one is made only when
     * every place is live, and the index grows at half load), its
     * an_lives_tag in the bits above */
    uint32_t *index;
    size_t cap, n;             /* n: live blocks */
    unsigned shift;            /* 64 - log2(cap), as an_hmap's */
    uint32_t place;            /* the bits of a slot's place: cap - 1, all of them past 2^32 slots */
    unsigned tagshift;         /* where the tag starts: log2(cap), at most 32 (no tag) */
    an_hmap big;               /* address -> an_live_big: the live blocks' sizes of AN_LIVE_BIG and more */
    /* each place's allocating thread, made when a
     * thread other than tid0 allocates while another block lives: before,
     * every live block is tid0's (a process of one thread never has it) */
    uint32_t *tids;
    size_t captids;            /* at least capblocks */
    uint32_t tid0;
} an_lives;

void an_lives_init(an_lives *t);
void an_lives_free(an_lives *t);
/* Room for one more block (index under half full, a place for it); -1 without memory. */
int an_lives_room(an_lives *t);
/* Out-of-line parts of an_lives_set_size and an_lives_set_tid; -1 without memory. */
uint64_t an_lives_big_size(const an_lives *t, uint64_t addr);
int an_lives_set_size_slow(an_lives *t, an_live *b, uint64_t size);
int an_lives_set_tid_slow(an_lives *t, an_live *b, uint32_t tid);
/* Iteration over the live blocks: *pos starts at 0; NULL at the end. */
an_live *an_lives_next(const an_lives *t, size_t *pos);

/* an_lives_home of an index of mask + 1 slots (shift: an_lives.shift). */
static inline size_t an_lives_home_in(unsigned shift, size_t mask, uint64_t addr)
{
    uint64_t g = addr >> 4;
    size_t base = (size_t)(((g >> AN_HMAP_NEAR_BITS) * 0x9e3779b97f4a7c15ull) >> shift);
    return (base + 2 * (size_t)(g & ((1u << AN_HMAP_NEAR_BITS) - 1))) & mask;
}

static inline size_t an_lives_home(const an_lives *t, uint64_t addr)
{
    /* an_hmap_home_in(addr, 1, t->shift), its mask cap - 1 read, not made
     * from the shift: about 3 a slot's home, on every event's probe and
     * prefetch (cachegrind: 1 % of the analysis's instructions) */
    return an_lives_home_in(t->shift, t->cap - 1, addr);
}

/* Bits of an address in its slot above the block's place, so that a probe
 * passes the slots of other blocks without reading them: perl's leak, every
 * allocation a new address, spent 56 % of the model's samples comparing
 * the address of the block in a slot on its way to an empty one. Both the
 * granule in the page (a page's blocks in one run) and the page (other
 * pages' runs). They were a byte in an array of their own: a probe read
 * two lines, and the leak's 2^22 slots took 4 MiB more of fresh pages.
 * 32 - log2(cap) bits: 10 at the leak's 2^22 slots, none past 2^32. */
static inline uint32_t an_lives_tag(const an_lives *t, uint64_t addr)
{
    return (uint32_t)(((addr >> 4) ^ (addr >> 12)) << t->tagshift);
}

/* The block a filled slot's value x names. */
static inline an_live *an_lives_block_of(const an_lives *t, uint32_t x) { return &t->blocks[(x & t->place) - 1]; }

/* A live block's size. */
static inline uint64_t an_lives_size(const an_lives *t, const an_live *b)
{
    return b->size != AN_LIVE_BIG ? b->size : an_lives_big_size(t, b->addr);
}

/* A live block's size set; -1 without memory. */
static inline int an_lives_set_size(an_lives *t, an_live *b, uint64_t size)
{
    if (size >= AN_LIVE_BIG || b->size == AN_LIVE_BIG)
        return an_lives_set_size_slow(t, b, size);
    b->size = (uint32_t)size;
    return 0;
}

/* The thread that allocated a live block. */
static inline uint32_t an_lives_tid(const an_lives *t, const an_live *b)
{
    return t->tids ? t->tids[b - t->blocks] : t->tid0;
}

/* A live block's thread set (after an_lives_put); -1 without memory. */
static inline int an_lives_set_tid(an_lives *t, an_live *b, uint32_t tid)
{
    if (t->tids)
        t->tids[b - t->blocks] = tid;
    else if (tid != t->tid0)
        return an_lives_set_tid_slow(t, b, tid);
    return 0;
}

/* The index slot of addr's block, or the empty slot that ends its run. */
static inline uint32_t *an_lives_slot(const an_lives *t, uint64_t addr)
{
    size_t mask = t->cap - 1;
    uint32_t tag = an_lives_tag(t, addr), place = t->place;
    for (size_t i = an_lives_home(t, addr);; i = (i + 1) & mask) {
        uint32_t x = t->index[i];
        if (!x || ((x & ~place) == tag && t->blocks[(x & place) - 1].addr == addr))
            return &t->index[i];
    }
}

/* addr's block, made (all but its address zero, *created 1) when absent:
 * its size and thread set next (an_lives_set_size, an_lives_set_tid);
 * NULL only without memory. Valid until the next put. */
static inline an_live *an_lives_put(an_lives *t, uint64_t addr, int *created)
{
    if (((t->n + 1) * 2 > t->cap || (!t->free && t->nblocks == t->capblocks)) && an_lives_room(t) != 0)
        return NULL;
    uint32_t *slot = an_lives_slot(t, addr);
    *created = !*slot;
    if (*slot)
        return an_lives_block_of(t, *slot);
    size_t at = t->free ? t->free - 1 : t->nblocks++;
    an_live *b = &t->blocks[at];
    t->free = t->free ? (uint32_t)b->size : 0;
    *b = (an_live){.addr = addr};
    *slot = ((uint32_t)at + 1) | an_lives_tag(t, addr);
    t->n++;
    return b;
}

/* The index slot of addr's live block, or NULL: the block stays valid
 * until an_lives_remove of the slot (or a put), so that the model reads it
 * in place instead of a copy. */
static inline uint32_t *an_lives_find(const an_lives *t, uint64_t addr)
{
    if (!t->n)
        return NULL;
    uint32_t *slot = an_lives_slot(t, addr);
    return *slot ? slot : NULL;
}

/* The block of a slot an_lives_find gave. */
static inline an_live *an_lives_at(const an_lives *t, const uint32_t *slot) { return an_lives_block_of(t, *slot); }

/* The block of a slot an_lives_find gave leaves the table. */
static inline void an_lives_remove(an_lives *t, uint32_t *slot)
{
    uint32_t x = *slot;
    an_live *b = an_lives_block_of(t, x);
    if (b->size == AN_LIVE_BIG)
        an_hmap_del(&t->big, b->addr);
    b->stack = AN_LIVE_FREE;
    b->size = t->free;
    t->free = x & t->place;
    /* backward shift: pull later entries of the run into the hole when
     * their home slot does not lie (cyclically) between the hole and them */
    size_t mask = t->cap - 1, i = (size_t)(slot - t->index);
    for (size_t j = (i + 1) & mask; (x = t->index[j]) != 0; j = (j + 1) & mask)
        if (((j - an_lives_home(t, an_lives_block_of(t, x)->addr)) & mask) >= ((j - i) & mask)) {
            t->index[i] = x;
            i = j;
        }
    t->index[i] = 0;
    t->n--;
}

/* Removes addr's block, copying it to out first (its size, if AN_LIVE_BIG,
 * an_lives_size's before); 1 if it was there. */
static inline int an_lives_take(an_lives *t, uint64_t addr, an_live *out)
{
    uint32_t *slot = an_lives_find(t, addr);
    if (!slot)
        return 0;
    *out = *an_lives_at(t, slot);
    an_lives_remove(t, slot);
    return 1;
}

/* Prefetches are inlined early: GCC 12 took plain static inline functions
 * holding only __builtin_prefetch for functions without side effects and
 * dropped their calls (tests/build/check-prefetch.sh). */
#define AN_LIVES_PREFETCH static inline __attribute__((always_inline)) void

/* The index as a batch of events found it, for the prefetches of the
 * index slots of events a few ahead, in registers across the batch
 * instead of read from the table at each (real's analysis 1 839.5 ->
 * 1 822.8 M instructions, cachegrind, session 39): a prefetch into an
 * index that grew since (or into the one slot of none, before the first
 * block) is a hint wasted, not a fault (the address an integer until then). */
typedef struct an_lives_ahead {
    uintptr_t index;
    size_t mask;
    unsigned shift;
} an_lives_ahead;

static inline an_lives_ahead an_lives_ahead_of(const an_lives *t)
{
    static const uint32_t none;
    if (!t->cap)
        return (an_lives_ahead){.index = (uintptr_t)&none, .mask = 0, .shift = 63};
    return (an_lives_ahead){.index = (uintptr_t)t->index, .mask = t->cap - 1, .shift = t->shift};
}

/* The index slot of addr, for an event a few ahead. */
AN_LIVES_PREFETCH an_lives_prefetch_ahead(an_lives_ahead a, uint64_t addr)
{
    __builtin_prefetch((const void *)(a.index + an_lives_home_in(a.shift, a.mask, addr) * sizeof(uint32_t)));
}

#endif
