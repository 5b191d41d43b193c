/*
 * format/refseq.c — the reader's half of address references (format 4,
 * docs/trace-format.md "Address references"): per (collector, pid), two
 * sequences in file order, the pnew values (allocations' addresses) and the
 * pref values (frees' addresses), so that a field's "the value n back" in the
 * other sequence can be turned into the address it stands for. Each block
 * says where both counts stand, so a chunk lost to damage leaves a gap:
 * references into it, and only those, fail. A slot remembers which ordinal it
 * holds, so a gap or a wrap never hands out another value's address.
 *
 * Memory: 64 KiB per sequence, or 4 MiB (LTR_REFS_WINDOW slots of 16 bytes)
 * for one of more than 4096 values.
 */
#include "format/reader.h"
#include "format/blocks.h"

#include <stdlib.h>
#include <string.h>

typedef struct ltr_refslot {
    uint64_t ord1; /* the ordinal held + 1; 0: empty */
    uint64_t addr;
} ltr_refslot;

typedef struct ring {
    uint64_t n;        /* ordinal of the next value */
    ltr_refslot *slot; /* ordinal o at o % cap; NULL until the first */
    uint32_t cap;      /* REFS_SMALL, then LTR_REFS_WINDOW */
} ring;

/* A sequence starts with 64 KiB of slots (from the heap, not a mapping of
 * its own: a trace of thousands of processes must not run into the
 * mapping limit) and gets the whole window at once when it needs more.
 * Doubling step by step instead was a tenth of `ltr analyze` on bench/heap's
 * trace: copies, and unmapping the old rings (TLB shootdowns of the
 * reader's other threads). */
#define REFS_SMALL 4096u

struct ltr_refseq {
    ring r[2];   /* LTR_REFS_ALLOC: pnew values; LTR_REFS_FREE: pref values */
    int spoiled; /* a record of this block could not be read: how many values it held is unknown */
};

/* Bases this high are damage: no process makes 2^62 allocations, and the
 * ordinal arithmetic stays far from wrapping. */
#define REFS_BASE_MAX (1ull << 62)

typedef struct seq_entry {
    uint64_t key;
    struct ltr_refseq *seq;
} seq_entry;

void ltr_refs_init(ltr_refs *r) { an_hmap_init(&r->seqs, sizeof(seq_entry)); }

void ltr_refs_free(ltr_refs *r)
{
    size_t pos = 0;
    for (seq_entry *e; (e = an_hmap_next(&r->seqs, &pos));) {
        free(e->seq->r[0].slot);
        free(e->seq->r[1].slot);
        free(e->seq);
    }
    an_hmap_free(&r->seqs);
    an_hmap_init(&r->seqs, sizeof(seq_entry));
}

static void rebase(ring *g, uint64_t base)
{
    if (base < g->n && g->slot) { /* never written so: forget rather than trust old slots */
        free(g->slot);
        g->slot = NULL;
    }
    g->n = base;
}

struct ltr_refseq *ltr_refs_block(ltr_refs *r, uint16_t collector, uint32_t pid, uint64_t alloc_base,
                                  uint64_t free_base)
{
    int created;
    seq_entry *e = an_hmap_put(&r->seqs, (uint64_t)collector << 32 | pid, &created);
    if (!e)
        return NULL;
    if (created && !(e->seq = calloc(1, sizeof *e->seq))) {
        an_hmap_del(&r->seqs, (uint64_t)collector << 32 | pid);
        return NULL;
    }
    struct ltr_refseq *s = e->seq;
    rebase(&s->r[LTR_REFS_ALLOC], alloc_base);
    rebase(&s->r[LTR_REFS_FREE], free_base);
    s->spoiled = alloc_base >= REFS_BASE_MAX || free_base >= REFS_BASE_MAX;
    return s;
}

void ltr_refseq_spoil(struct ltr_refseq *s)
{
    if (s)
        s->spoiled = 1;
}

int ltr_refseq_resolve(const struct ltr_refseq *s, int which, uint64_t code, uint64_t *addr)
{
    if (!s || s->spoiled)
        return -1;
    const ring *g = &s->r[which];
    if (!g->slot || code == 0 || code > g->n || code > LTR_REFS_WINDOW)
        return -1;
    uint64_t o = g->n - code;
    const ltr_refslot *slot = &g->slot[o & (g->cap - 1)];
    if (slot->ord1 != o + 1)
        return -1;
    *addr = slot->addr;
    return 0;
}

/* The ring at its full size, every value it held kept; -1 without memory. */
static int widen(ring *g)
{
    ltr_refslot *slot = calloc(LTR_REFS_WINDOW, sizeof *slot);
    if (!slot)
        return -1;
    for (uint32_t i = 0; i < g->cap; i++)
        if (g->slot[i].ord1)
            slot[(g->slot[i].ord1 - 1) & (LTR_REFS_WINDOW - 1)] = g->slot[i];
    free(g->slot);
    g->slot = slot;
    g->cap = LTR_REFS_WINDOW;
    return 0;
}

void ltr_refseq_append(struct ltr_refseq *s, int which, uint64_t addr)
{
    if (!s || s->spoiled)
        return;
    ring *g = &s->r[which];
    if (!g->slot && (g->slot = calloc(REFS_SMALL, sizeof *g->slot)))
        g->cap = REFS_SMALL;
    if (!g->slot) {
        g->n++; /* unknown: its references fail */
        return;
    }
    ltr_refslot *at = &g->slot[g->n & (g->cap - 1)];
    if (g->cap < LTR_REFS_WINDOW && at->ord1 && g->n - (at->ord1 - 1) <= LTR_REFS_WINDOW && widen(g) == 0)
        at = &g->slot[g->n & (g->cap - 1)]; /* else the oldest is overwritten: its references fail */
    *at = (ltr_refslot){g->n + 1, addr};
    g->n++;
}

void ltr_refseq_skip(struct ltr_refseq *s, int which)
{
    if (s && !s->spoiled)
        s->r[which].n++; /* its slot keeps an older number: references to this one fail */
}
