/*
 * format/refseq.c — the reader's half of address references (format 4,
 * docs/trace-format.md "Address references"): per (collector, pid), the pnew
 * values met in file order, so that a pref field's "the value n back" can be
 * turned into the address it stands for. Each block says where its process's
 * count stands (ref_base), so a chunk lost to damage leaves a gap: references
 * into it, and only those, fail. A slot remembers which ordinal it holds, so
 * a gap or a wrap never hands out another value's address.
 *
 * Memory: at most LTR_REFS_WINDOW slots of 16 bytes per process (4 MiB), and
 * only as many as its values back to the oldest still referable.
 */
#include "format/reader.h"
#include "format/blocks.h"

#include <stdlib.h>
#include <string.h>

typedef struct ltr_refslot {
    uint64_t ord1; /* the ordinal held + 1; 0: empty */
    uint64_t addr;
} ltr_refslot;

struct ltr_refseq {
    uint64_t n;        /* ordinal of the next pnew value */
    ltr_refslot *ring; /* ordinal o at o & (cap - 1) */
    uint32_t cap;      /* a power of two, up to LTR_REFS_WINDOW */
    int spoiled;       /* a record of this block could not be read: how many values it held is unknown */
};

/* Bases this high are damage: no process makes 2^62 allocations, and the
 * ordinal arithmetic stays far from wrapping. */
#define REFS_BASE_MAX (1ull << 62)
#define REFS_FIRST_CAP 256u

typedef struct seq_entry {
    uint64_t key;
    struct ltr_refseq *seq;
} seq_entry;

void ltr_refs_init(ltr_refs *r) { an_hmap_init(&r->seqs, sizeof(seq_entry)); }

void ltr_refs_free(ltr_refs *r)
{
    size_t pos = 0;
    for (seq_entry *e; (e = an_hmap_next(&r->seqs, &pos));) {
        free(e->seq->ring);
        free(e->seq);
    }
    an_hmap_free(&r->seqs);
    an_hmap_init(&r->seqs, sizeof(seq_entry));
}

struct ltr_refseq *ltr_refs_block(ltr_refs *r, uint16_t collector, uint32_t pid, uint64_t base)
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
    if (base < s->n && s->ring) /* never written so: forget rather than trust old slots */
        memset(s->ring, 0, (size_t)s->cap * sizeof *s->ring);
    s->n = base;
    s->spoiled = base >= REFS_BASE_MAX;
    return s;
}

void ltr_refseq_spoil(struct ltr_refseq *s)
{
    if (s)
        s->spoiled = 1;
}

int ltr_refseq_resolve(const struct ltr_refseq *s, uint64_t code, uint64_t *addr)
{
    if (!s || s->spoiled || !s->ring || code == 0 || code > s->n || code > LTR_REFS_WINDOW)
        return -1;
    uint64_t o = s->n - code;
    const ltr_refslot *slot = &s->ring[o & (s->cap - 1)];
    if (slot->ord1 != o + 1)
        return -1;
    *addr = slot->addr;
    return 0;
}

/* Doubles the ring, keeping every value it holds. 0, or -1 without memory
 * (the oldest values are then overwritten sooner: their references fail). */
static int grow(struct ltr_refseq *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : REFS_FIRST_CAP;
    ltr_refslot *ring = calloc(cap, sizeof *ring);
    if (!ring)
        return -1;
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->ring[i].ord1)
            ring[(s->ring[i].ord1 - 1) & (cap - 1)] = s->ring[i];
    free(s->ring);
    s->ring = ring;
    s->cap = cap;
    return 0;
}

void ltr_refseq_append(struct ltr_refseq *s, uint64_t addr)
{
    if (!s || s->spoiled)
        return;
    /* grow only when the slot holds a value still within the window */
    while (!s->ring || (s->cap < LTR_REFS_WINDOW && s->ring[s->n & (s->cap - 1)].ord1 &&
                        s->n - (s->ring[s->n & (s->cap - 1)].ord1 - 1) <= LTR_REFS_WINDOW))
        if (grow(s) < 0)
            break;
    if (s->ring)
        s->ring[s->n & (s->cap - 1)] = (ltr_refslot){s->n + 1, addr};
    s->n++;
}
