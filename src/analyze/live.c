/*
 * analyze/live.c — the live-block table of live.h: room for a block (the
 * blocks' array grown without a copy, the index doubled at half load and
 * filled again from the blocks, in their order), the sizes and threads
 * kept beside the blocks, and iteration.
 */
#include "analyze/live.h"
#include "prim/prim.h"

#include <string.h>

void an_lives_init(an_lives *t)
{
    memset(t, 0, sizeof *t);
    an_hmap_init(&t->big, sizeof(an_live_big));
}

void an_lives_free(an_lives *t)
{
    ltr_table_free(t->blocks, t->capblocks, sizeof *t->blocks);
    ltr_table_free(t->index, t->cap, sizeof *t->index);
    if (t->tids)
        ltr_table_free(t->tids, t->captids, sizeof *t->tids);
    an_hmap_free(&t->big);
    an_lives_init(t);
}

uint64_t an_lives_big_size(const an_lives *t, uint64_t addr)
{
    const an_live_big *e = an_hmap_get(&t->big, addr);
    return e ? e->size : AN_LIVE_BIG;
}

int an_lives_set_size_slow(an_lives *t, an_live *b, uint64_t size)
{
    if (size < AN_LIVE_BIG) {
        an_hmap_del(&t->big, b->addr);
        b->size = (uint32_t)size;
        return 0;
    }
    int created;
    an_live_big *e = an_hmap_put(&t->big, b->addr, &created);
    if (!e)
        return -1;
    e->size = size;
    b->size = AN_LIVE_BIG;
    return 0;
}

int an_lives_set_tid_slow(an_lives *t, an_live *b, uint32_t tid)
{
    if (t->n == 1) { /* b alone: no other thread's block to tell apart */
        t->tid0 = tid;
        return 0;
    }
    if (ltr_table_reserve((void **)&t->tids, &t->captids, t->capblocks - 1, sizeof *t->tids, t->capblocks) != 0)
        return -1; /* as large as the blocks' */
    for (size_t at = 0; at < t->nblocks; at++)
        t->tids[at] = t->tid0;
    t->tids[b - t->blocks] = tid;
    return 0;
}

/* Past this many slots the index grows four times at once: each growth
 * puts every live block in again, reading the blocks (a leak of 2 M
 * blocks: 17 % of perf's samples at doublings), and a table a quarter
 * full has shorter runs to probe and shift (cc1plus's 32 K to 64 K live
 * blocks: 2^18 slots, not 2^17; its analysis 0.94 of the CPU time, from
 * 2^20); at most 40 bytes of index a live block, not 20. Below it, a
 * table that fits the cache (80 KiB) stays small. */
#define INDEX_QUADRUPLE ((size_t)1 << 14)

/* The index at two or four times its slots, every live block in it again. */
static int grow_index(an_lives *t)
{
    size_t want = t->cap < INDEX_QUADRUPLE ? t->cap : t->cap * 3; /* doubled until it holds slot want */
    size_t old = t->cap;
    if (ltr_table_reserve((void **)&t->index, &t->cap, want, sizeof *t->index, 64) != 0)
        return -1;
    /* a mapping's growth is zero already (prim.h; the index is never cut):
     * clearing all of it was 22.4 M instructions of perl's leak (2.2 %) */
    memset(t->index, 0, (t->cap * sizeof *t->index > LTR_TABLE_MAPPED ? old : t->cap) * sizeof *t->index);
    t->shift = 64 - (unsigned)__builtin_ctzll(t->cap);
    t->place = t->cap > UINT32_MAX ? UINT32_MAX : (uint32_t)(t->cap - 1);
    t->tagshift = t->cap > UINT32_MAX ? 32 : 64 - t->shift;
    size_t mask = t->cap - 1;
    for (size_t at = 0; at < t->nblocks; at++) {
        if (t->blocks[at].stack == AN_LIVE_FREE)
            continue;
        size_t i = an_lives_home(t, t->blocks[at].addr);
        while (t->index[i])
            i = (i + 1) & mask;
        t->index[i] = ((uint32_t)at + 1) | an_lives_tag(t, t->blocks[at].addr);
    }
    return 0;
}

int an_lives_room(an_lives *t)
{
    /* the threads' array first: it is never shorter than the blocks' */
    if (!t->free && t->tids && ltr_table_reserve((void **)&t->tids, &t->captids, t->nblocks, sizeof *t->tids, 64) != 0)
        return -1;
    if (!t->free && (t->nblocks >= UINT32_MAX - 1 || /* places are numbered + 1 in 32 bits */
                     ltr_table_reserve((void **)&t->blocks, &t->capblocks, t->nblocks, sizeof *t->blocks, 64) != 0))
        return -1;
    return (t->n + 1) * 2 > t->cap ? grow_index(t) : 0;
}

an_live *an_lives_next(const an_lives *t, size_t *pos)
{
    for (; *pos < t->nblocks; (*pos)++)
        if (t->blocks[*pos].stack != AN_LIVE_FREE)
            return &t->blocks[(*pos)++];
    return NULL;
}
