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
 * Format 5 adds the allocator model (allocmodel.h): per sequence, lists of
 * freed addresses by size class, which this reader keeps as the writer did.
 * It trusts only what it saw happen: after a gap, or a free whose class it
 * cannot know, its lists start again empty, and a place past a list's end
 * fails like a reference into a gap. What the writer's lists hold is then
 * always a prefix of what the reader's do (allocmodel.h).
 *
 * Format 6 adds the next address: the one just past the block's previous
 * allocation (ltr_model_next), known when that allocation's address was; a
 * guess from an unknown one fails like a reference into a gap. And a
 * realloc's new address may be its old one, known when that one is (a
 * pref is resolved before the pnew of its event).
 *
 * Format 7 stores an address that is none of those as its difference from
 * the previous one of its kind stored so in the block: known whenever the
 * block's records before it were read, since those are all in the block.
 *
 * Memory: 64 KiB per sequence, or 4 MiB (LTR_REFS_WINDOW slots of 16 bytes)
 * for one of more than 4096 values; 136 bytes per size class used.
 */
#include "format/reader.h"
#include "format/allocmodel.h"
#include "format/blocks.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct ltr_refslot {
    uint64_t ord1; /* the ordinal held + 1 (LTR_MODEL_ORD_MASK), an allocation's size class above; 0: empty */
    uint64_t addr;
} ltr_refslot;

typedef struct ring {
    uint64_t n;        /* ordinal of the next value */
    ltr_refslot *slot; /* ordinal o at o % cap; NULL until the first */
    uint32_t cap;      /* REFS_FIRST, REFS_SMALL, then LTR_REFS_WINDOW */
    int mapped;        /* slot is a mapping of its own (slots_new) */
} ring;

/* A sequence starts with 1 KiB of slots, then 64 KiB (from the heap, not a
 * mapping of its own: a trace of thousands of processes must not run into
 * the mapping limit), and gets the whole window at once when it needs more.
 * Doubling step by step instead was a tenth of `ltr analyze` on bench/heap's
 * trace: copies, and unmapping the old rings (TLB shootdowns of the
 * reader's other threads). Starting at 64 KiB, a crafted trace of 20 000
 * processes of two events each (170 KB) took `ltr info` 2.3 GB. */
#define REFS_FIRST 64u
#define REFS_SMALL 4096u

/* cap zeroed slots for g. The window's 4 MiB is a mapping of its own,
 * whose pages the kernel hands out zeroed as they are first touched:
 * calloc took it from the analysis's heap, made ahead of its use
 * (cli/analysis-args.c), so it cleared all of it, and every page then
 * faulted in (bench/heap's trace: 8 MiB of memset, 3.4 % of `ltr
 * analyze`'s instructions, for two rings that each use 1.8 MiB). Smaller
 * rings stay in the heap, and so does the window where a mapping cannot
 * be had (thousands of processes at the mapping limit). */
static ltr_refslot *slots_new(ring *g, uint32_t cap)
{
    g->mapped = 0;
    if (cap == LTR_REFS_WINDOW) {
        size_t bytes = (size_t)cap * sizeof(ltr_refslot);
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            madvise(p, bytes, MADV_HUGEPAGE); /* as the heap it replaces */
            g->mapped = 1;
            return p;
        }
    }
    return calloc(cap, sizeof(ltr_refslot));
}

static void slots_free(ring *g)
{
    if (g->mapped)
        munmap(g->slot, (size_t)g->cap * sizeof *g->slot);
    else
        free(g->slot);
    g->slot = NULL;
    g->mapped = 0;
}

struct ltr_refseq {
    ring r[2];   /* LTR_REFS_ALLOC: pnew values; LTR_REFS_FREE: pref values */
    int spoiled; /* a record of this block could not be read: how many values it held is unknown */
    int model;   /* this block's pnew codes use the allocator model (LTR_BLOCK_FLAG_MODEL) */
    int next;    /* and format 6's codes (LTR_BLOCK_FLAG_NEXT): LTR_MODEL_NEXT, _SAME, references after them */
    uint64_t after; /* the next address after the block's last allocation; 0: none known */
    uint64_t freed1; /* the ordinal + 1 of the allocation the block's last free named; 0: none known */
    int delta;   /* and format 7's: an address stored as itself is a difference (LTR_BLOCK_FLAG_DELTA) */
    uint64_t plain[2]; /* the block's last pnew and pref stored as themselves (format 7's differences count from them) */
    ltr_model_list **lists; /* LTR_MODEL_CLASSES by size class, each made when first pushed to; NULL until then */
};

typedef struct seq_entry {
    uint64_t key;
    struct ltr_refseq *seq;
} seq_entry;

void ltr_refs_init(ltr_refs *r) { an_hmap_init(&r->seqs, sizeof(seq_entry)); }

static void seq_free(struct ltr_refseq *s)
{
    slots_free(&s->r[0]);
    slots_free(&s->r[1]);
    for (unsigned c = 0; s->lists && c < LTR_MODEL_CLASSES; c++)
        free(s->lists[c]);
    free(s->lists);
    free(s);
}

void ltr_refs_free(ltr_refs *r)
{
    size_t pos = 0;
    for (seq_entry *e; (e = an_hmap_next(&r->seqs, &pos));)
        seq_free(e->seq);
    an_hmap_free(&r->seqs);
    an_hmap_init(&r->seqs, sizeof(seq_entry));
    r->collectors = 0;
}

/* Without it the rings of every process stayed to the end: `ltr analyze` of
 * 200 `python3 -c pass` through pyenv's shims (7 038 processes, 1 374 of
 * them past a ring's first 4096 values) held 1.8 GB. */
int ltr_refs_drop_pid(ltr_refs *r, uint32_t pid, const struct ltr_refseq *keep)
{
    int kept = 0;
    for (uint32_t c = 0; c < r->collectors; c++) {
        uint64_t key = (uint64_t)c << 32 | pid;
        seq_entry *e = an_hmap_get(&r->seqs, key);
        if (!e)
            continue;
        kept |= e->seq == keep;
        seq_free(e->seq);
        an_hmap_del(&r->seqs, key);
    }
    return kept;
}

/* The lists can no longer be trusted: a free went into one this reader cannot tell. */
static void distrust(struct ltr_refseq *s)
{
    for (unsigned c = 0; s->lists && c < LTR_MODEL_CLASSES; c++)
        if (s->lists[c])
            ltr_model_empty(s->lists[c]);
}

static void rebase(ring *g, uint64_t base)
{
    if (base < g->n && g->slot) /* never written so: forget rather than trust old slots */
        slots_free(g);
    g->n = base;
}

struct ltr_refseq *ltr_refs_block(ltr_refs *r, uint16_t collector, uint32_t pid, uint64_t alloc_base,
                                  uint64_t free_base, uint16_t flags)
{
    int model = (flags & LTR_BLOCK_FLAG_MODEL) != 0, next = model && (flags & LTR_BLOCK_FLAG_NEXT);
    int created;
    seq_entry *e = an_hmap_put(&r->seqs, (uint64_t)collector << 32 | pid, &created);
    if (!e)
        return NULL;
    if (created && !(e->seq = calloc(1, sizeof *e->seq))) {
        an_hmap_del(&r->seqs, (uint64_t)collector << 32 | pid);
        return NULL;
    }
    if (collector >= r->collectors)
        r->collectors = (uint32_t)collector + 1;
    struct ltr_refseq *s = e->seq;
    if (alloc_base != s->r[LTR_REFS_ALLOC].n || free_base != s->r[LTR_REFS_FREE].n)
        distrust(s); /* values were lost, and with them what they did to the lists */
    rebase(&s->r[LTR_REFS_ALLOC], alloc_base);
    rebase(&s->r[LTR_REFS_FREE], free_base);
    s->spoiled = alloc_base >= LTR_REFS_BASE_MAX || free_base >= LTR_REFS_BASE_MAX;
    s->model = model;
    s->next = next;
    s->delta = next && (flags & LTR_BLOCK_FLAG_DELTA);
    s->after = s->freed1 = 0; /* the writer guesses within a block only */
    s->plain[0] = s->plain[1] = 0;
    return s;
}

void ltr_refseq_spoil(struct ltr_refseq *s)
{
    if (s)
        s->spoiled = 1;
}

/* The value `code` back in a sequence: 0 and its address, or -1 if
 * unknown. The class stored with it is set either way when the slot holds
 * that value (an allocation whose address was lost still has its size). */
static inline __attribute__((always_inline)) int resolve(const struct ltr_refseq *s, int which, uint64_t code,
                                                         uint64_t *addr, int *cls, int f6)
{
    if (!f6 && (!s || s->spoiled))
        return -1;
    const ring *g = &s->r[which];
    if (!g->slot || code - 1 >= g->n || code > LTR_REFS_WINDOW) /* code 0 too */
        return -1;
    uint64_t o = g->n - code;
    const ltr_refslot *slot = &g->slot[o & (g->cap - 1)];
    uint64_t w = slot->ord1;
    *cls = (int)(w >> LTR_MODEL_ORD_BITS);
    if ((w & (LTR_MODEL_ORD_MASK | LTR_MODEL_UNKNOWN)) == o + 1) { /* held, known: one compare */
        *addr = slot->addr;
        return 0;
    }
    if ((w & LTR_MODEL_ORD_MASK) != o + 1)
        *cls = -1; /* another value's: not even its class */
    return -1;
}

/* The ring at its full size, every value it held kept; -1 without memory. */
static int widen(ring *g)
{
    uint32_t cap = g->cap < REFS_SMALL ? REFS_SMALL : LTR_REFS_WINDOW;
    ring wide = {.n = g->n, .cap = cap};
    if (!(wide.slot = slots_new(&wide, cap)))
        return -1;
    for (uint32_t i = 0; i < g->cap; i++)
        if (g->slot[i].ord1)
            wide.slot[((g->slot[i].ord1 & LTR_MODEL_ORD_MASK) - 1) & (cap - 1)] = g->slot[i];
    slots_free(g);
    *g = wide;
    return 0;
}

/* A value joins its sequence; an unknown one keeps its number and class, and nothing resolves to it. */
static inline __attribute__((always_inline)) void append(struct ltr_refseq *s, int which, uint64_t addr,
                                                         unsigned cls, int unknown)
{
    ring *g = &s->r[which];
    if (!g->slot && (g->slot = slots_new(g, REFS_FIRST)))
        g->cap = REFS_FIRST;
    if (!g->slot) {
        g->n++; /* unknown: its references fail */
        return;
    }
    ltr_refslot *at = &g->slot[g->n & (g->cap - 1)];
    if (g->cap < LTR_REFS_WINDOW && at->ord1 &&
        g->n - ((at->ord1 & LTR_MODEL_ORD_MASK) - 1) <= LTR_REFS_WINDOW && widen(g) == 0)
        at = &g->slot[g->n & (g->cap - 1)]; /* else the oldest is overwritten: its references fail */
    *at = (ltr_refslot){(g->n + 1) | (unknown ? LTR_MODEL_UNKNOWN : 0) | (uint64_t)cls << LTR_MODEL_ORD_BITS,
                        unknown ? 0 : addr};
    g->n++;
}

/* ---- one event's fields ------------------------------------------------------ */

/* A pref code's distance back: format 6's LTR_MODEL_FREED_NEXT names the
 * allocation after the one the block's last free named (0, failing, when
 * that is not known or not behind this event), and distances count on. */
static inline __attribute__((always_inline)) uint64_t free_distance(const struct ltr_refseq *s, uint64_t code,
                                                               int f6)
{
    if (!f6 && (!s || !s->next))
        return code;
    if (code != LTR_MODEL_FREED_NEXT)
        return code - LTR_MODEL_FREED_NEXT;
    uint64_t n = s->r[LTR_REFS_ALLOC].n;
    return s->freed1 && s->freed1 < n ? n - s->freed1 : 0;
}

/* An address stored as itself: in a format 7 block, the difference from
 * the block's previous one of its kind (known unless a record before it
 * could not be read: the differences it held are lost with it). */
static inline __attribute__((always_inline)) int stored_plain(const struct ltr_refseq *s, int k, uint64_t stored,
                                                              uint64_t *addr, int f6)
{
    if (!s || !s->delta) {
        *addr = stored;
        return 1;
    }
    *addr = s->plain[k] + (uint64_t)ltr_unzigzag(stored);
    return f6 || !s->spoiled;
}

/* What resolving an event found, for its commit: ltr_refev's ok, place
 * and free_class. A run keeps it in registers: stored in the event, each
 * byte store of ok may alias the sequence's fields, and the compiler read
 * them again from memory after it (ltr_refseq_apply_events on cc1plus's
 * trace: 437.4 M instructions, 415.0 M so, cachegrind). */
typedef struct found {
    uint64_t addr[2]; /* ltr_refev's, resolved */
    uint8_t ok[2];
    int place, free_class;
    unsigned cls;  /* the pnew's size class (its event's size), taken once */
    uint64_t dist; /* the pref's distance back (free_distance), when it has a code: the
                    * commit took it again (its loads after the list's stores, which may
                    * alias): apply_events on cc1plus's trace 324.4 M instructions to
                    * 309.1 M with resolve's one compare for code 0 and past the count */
} found;

/* f6: s is a readable block's (not spoiled) with format 6's codes, the
 * common case, a constant where inlined: the checks of the other kinds go.
 * h0, h1: the event's has[], constants too in a run's loop (the event's
 * shape: an allocation, a free, a realloc). */
static inline __attribute__((always_inline)) int resolve_event(const struct ltr_refseq *s, const ltr_refev *e,
                                                               found *f, int f6, int h0, int h1)
{
    f->addr[0] = e->addr[0];
    f->addr[1] = e->addr[1];
    f->ok[0] = f->ok[1] = 1;
    f->place = -1;
    f->free_class = -1;
    f->cls = h0 ? ltr_model_class(e->size) : 0;
    f->dist = h1 && e->code[1] ? free_distance(s, e->code[1], f6) : 0;
    if (h1 && e->code[1])
        f->ok[1] = resolve(s, LTR_REFS_ALLOC, f->dist, &f->addr[1], &f->free_class, f6) == 0;
    else if (h1)
        f->ok[1] = (uint8_t)stored_plain(s, 1, e->addr[1], &f->addr[1], f6);
    if (h0 && !e->code[0])
        f->ok[0] = (uint8_t)stored_plain(s, 0, e->addr[0], &f->addr[0], f6);
    else if (h0) {
        uint64_t c = e->code[0];
        int unused;
        if ((f6 || (s && s->model)) && c <= LTR_MODEL_LIST) {
            const ltr_model_list *l = (!f6 && s->spoiled) || !s->lists ? NULL : s->lists[f->cls];
            f->ok[0] = l && c - 1 < l->n && !(l->unknown >> (c - 1) & 1u);
            if (l && c - 1 < l->n)
                f->place = (int)(c - 1); /* taken even when unknown: the places after it stay right */
            if (f->ok[0])
                f->addr[0] = ltr_model_at(l, (uint32_t)(c - 1));
        } else if ((f6 || (s && s->next)) && c == LTR_MODEL_NEXT) {
            f->ok[0] = s->after != 0 && (f6 || !s->spoiled);
            f->addr[0] = s->after;
        } else if ((f6 || (s && s->next)) && c == LTR_MODEL_SAME) {
            f->ok[0] = h1 && f->ok[1] && (f6 || !s->spoiled);
            f->addr[0] = f->addr[1];
        } else {
            uint64_t back = f6 ? c - LTR_MODEL_CODES
                            : !s || !s->model ? c
                            : s->next ? c - LTR_MODEL_CODES : c - LTR_MODEL_LIST;
            f->ok[0] = resolve(s, LTR_REFS_FREE, back, &f->addr[0], &unused, f6) == 0;
        }
    }
    return f->ok[0] && f->ok[1] ? 0 : -1;
}

/* The list of a class, made on first use; NULL without memory (then distrusted). */
static ltr_model_list *list_of(struct ltr_refseq *s, unsigned cls)
{
    if (!s->lists && !(s->lists = calloc(LTR_MODEL_CLASSES, sizeof *s->lists)))
        distrust(s);
    else if (!s->lists[cls] && !(s->lists[cls] = calloc(1, sizeof *s->lists[cls])))
        distrust(s); /* the push cannot be kept: no list may be trusted past it */
    return s->lists ? s->lists[cls] : NULL;
}

static inline __attribute__((always_inline)) void commit_event(struct ltr_refseq *s, const ltr_refev *e,
                                                               const found *f, int f6, int h0, int h1)
{
    if (!f6 && (!s || s->spoiled))
        return;
    if (f6 || s->model) {
        if (f->place >= 0) /* a pnew's: the event's size is read only with one */
            ltr_model_take(s->lists[f->cls], (uint32_t)f->place);
        ltr_model_list *l;
        if (h1 && e->code[1] && f->free_class < 0)
            distrust(s); /* the writer put this free in a list; which one is unknown here */
        else if (h1 && f->free_class >= 0 &&
                 ((l = s->lists ? s->lists[f->free_class] : NULL) || (l = list_of(s, (unsigned)f->free_class))))
            ltr_model_push(l, f->addr[1], !f->ok[1]); /* made lists without a call: 1.5 % of cc1plus's analysis */
    }
    /* a value that could not be resolved holds its place, unknown: an
     * allocation keeps its class for the free that will name it; a free's
     * slot keeps an older number, so references to it fail */
    if ((f6 || s->next) && h1) {
        /* the allocation a free named is known by its number even when its
         * address is not (the writer numbered it): a free told as the one
         * after it fails only where any reference to that allocation
         * would. Before the event's allocation joins: distances count from
         * the count before it. */
        uint64_t d = e->code[1] ? f->dist : 0, n = s->r[LTR_REFS_ALLOC].n;
        s->freed1 = d && d <= n ? n - d + 1 : 0;
    }
    for (int k = 0; s->delta && k < 2; k++)
        if ((k ? h1 : h0) && !e->code[k] && f->ok[k])
            s->plain[k] = f->addr[k];
    if (h0) {
        append(s, LTR_REFS_ALLOC, f->addr[0], f->cls, !f->ok[0]);
        s->after = f->ok[0] ? ltr_model_next(f->addr[0], e->size) : 0;
    }
    if (h1)
        f->ok[1] ? append(s, LTR_REFS_FREE, f->addr[1], 0, 0) : (void)s->r[LTR_REFS_FREE].n++;
}

int ltr_refseq_resolve_event(const struct ltr_refseq *s, ltr_refev *e)
{
    found f;
    int rc = resolve_event(s, e, &f, 0, e->has[0], e->has[1]);
    memcpy(e->addr, f.addr, sizeof e->addr);
    memcpy(e->ok, f.ok, sizeof e->ok);
    e->place = f.place;
    e->free_class = f.free_class;
    return rc;
}

void ltr_refseq_commit_event(struct ltr_refseq *s, const ltr_refev *e)
{
    found f = {{e->addr[0], e->addr[1]}, {e->ok[0], e->ok[1]}, e->place, e->free_class,
               e->has[0] ? ltr_model_class(e->size) : 0, e->has[1] && e->code[1] ? free_distance(s, e->code[1], 0) : 0};
    commit_event(s, e, &f, 0, e->has[0], e->has[1]);
}

/* Both for one event, its addresses resolved into it; 0 when it does not
 * resolve (nothing changed then). */
static inline __attribute__((always_inline)) int apply_one(struct ltr_refseq *s, ltr_refev *e, int f6, int h0, int h1)
{
    found f;
    if (resolve_event(s, e, &f, f6, h0, h1) < 0)
        return 0;
    commit_event(s, e, &f, f6, h0, h1);
    if (h0) /* the other's is as it was */
        e->addr[0] = f.addr[0];
    if (h1)
        e->addr[1] = f.addr[1];
    return 1;
}

/* One call for a consumer that leaves unresolved events to the generic
 * path: measured on cc1plus's trace, the two calls apart cost the analysis
 * about 10 ns an event more than this. */
int ltr_refseq_apply_event(struct ltr_refseq *s, ltr_refev *e)
{
    return apply_one(s, e, 0, e->has[0], e->has[1]) ? 0 : -1;
}

/* The same, in one call for a run of events: on cc1plus's trace a call an
 * event (its arguments built and the function's registers saved each time)
 * was about 45 instructions of the 300 the analysis's main thread spent an
 * event (callgrind). Format 6's events take a loop for each shape (a pnew,
 * a pref, both: has[] read as one word), in which the checks of which
 * fields the event has are constants, and its size class is taken once:
 * cc1plus's trace, ltr_refseq_apply_events 401.0 M instructions to 327.4 M
 * (111 to 91 an event; callgrind, the main thread). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SHAPE(h0, h1) ((h0) | (h1) << 8)
#else
#define SHAPE(h0, h1) ((h0) << 8 | (h1))
#endif
static inline __attribute__((always_inline)) size_t apply_run(struct ltr_refseq *s, ltr_refev *e, size_t n, int f6)
{
    for (size_t i = 0; i < n; i++) {
        int ok;
        uint16_t shape; /* has[] in one load */
        memcpy(&shape, e[i].has, sizeof shape);
        switch (f6 ? shape : SHAPE(2, 2)) {
        case SHAPE(0, 0): continue;
        case SHAPE(1, 0): ok = apply_one(s, &e[i], f6, 1, 0); break;
        case SHAPE(0, 1): ok = apply_one(s, &e[i], f6, 0, 1); break;
        case SHAPE(1, 1): ok = apply_one(s, &e[i], f6, 1, 1); break;
        default: ok = (!e[i].has[0] && !e[i].has[1]) || apply_one(s, &e[i], f6, e[i].has[0], e[i].has[1]); break;
        }
        if (!ok)
            return i;
    }
    return n;
}

/* A block's kind does not change within a run (only ltr_refs_block and
 * ltr_refseq_spoil set it), so format 6's readable blocks, all of a
 * recording of today's, take a loop without the other kinds' checks:
 * cc1plus's trace, 142 instructions an event to 128 (cachegrind). */
size_t ltr_refseq_apply_events(struct ltr_refseq *s, ltr_refev *e, size_t n)
{
    if (s && !s->spoiled && s->model && s->next)
        return apply_run(s, e, n, 1);
    return apply_run(s, e, n, 0);
}
