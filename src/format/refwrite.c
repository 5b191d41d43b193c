/*
 * format/refwrite.c — the writer's half of address references (refs.h).
 * Per (collector, pid) it counts the pnew values written so far and keeps,
 * for each address, the ordinal of the latest one; a pref whose address is
 * there within the window is written as the distance back to it (and the
 * entry dropped: a block is freed once), any other as itself. A block's
 * records are copied out of shared memory before they are parsed, so what is
 * re-encoded is what was read once, whatever a traced program writes
 * meanwhile; a record that does not parse goes on as it came (the reader
 * reports it), and one whose fields do not goes with an empty payload (the
 * reader reports it too, and spoils the rest of that block's references
 * rather than guess how many values it held). Format 5: an allocation's
 * address is first looked for in the allocator model's list of its size
 * class (allocmodel.h), which every free whose allocation is known here joins.
 * Format 6: then it may be the address just past the block's previous
 * allocation (ltr_model_next), a guess kept within the block, so that a
 * block lost or re-read alone costs nothing beyond itself. Format 7: an
 * address none of those tell is stored as its difference from the block's
 * previous one stored so (node's frees at its exit, in the order of
 * allocations long out of the window: 762 KB of its trace's 990 KB, 39 KB
 * so; docs/benchmarks.md "Addresses stored as differences").
 */
#include "format/refs.h"

#include "base/heap_events.h"
#include "format/allocmodel.h"
#include "format/compact.h"
#include "format/reader.h"

#include <string.h>
#include <stdlib.h>

#define PLAN_FIELDS 16 /* layouts with more fields are written as they come */


typedef struct plan {
    uint64_t key;
    uint8_t written; /* a METADATA chunk holding its LAYOUT reached the file */
    uint8_t nfields;
    int8_t msize; /* the allocator model's size field (as the reader finds it: ltr_layout_model_size), -1: none */
    uint8_t type[PLAN_FIELDS]; /* each field's stored type, pnew and pref included */
} plan;

typedef struct addr_ord {
    uint64_t key; /* the address */
    uint64_t ord; /* the latest pnew value with that address; its size class above LTR_MODEL_ORD_BITS */
} addr_ord;

/* One sequence of (collector, pid): values written, and for each address the
 * latest ordinal not yet referred to. */
typedef struct wring {
    uint64_t n;
    an_hmap addrs;
} wring;

/* How far back the writer lets an allocation refer to a free: the format
 * allows LTR_REFS_WINDOW, but an allocator hands out recently freed blocks,
 * and a small table of frees stays in cache. 2^14 frees back found as many
 * references as 2^18 on cc1plus (1 736 755 and 1 748 062 of 1 828 837
 * allocations; the same bytes per event) and on bench/heap (0.1 % fewer). */
#define FREES_WINDOW (1u << 14)
static const uint32_t window[2] = {LTR_REFS_WINDOW, FREES_WINDOW}; /* by the sequence referred to */

typedef struct wseq {
    wring r[2]; /* LTR_REFS_ALLOC: pnew values, LTR_REFS_FREE: pref values */
    uint64_t used; /* when a block last used it (the writer's count of uses) */
    ltr_model_list *lists[LTR_MODEL_CLASSES]; /* the allocator model's, made on first push */
    uint64_t next; /* after the block's previous allocation (format 6), 0: no guess; from 0 in each block */
    uint64_t freed1; /* the ordinal + 1 of the allocation the block's previous free named, 0: none (format 6) */
    uint64_t plain[2]; /* the block's previous pnew and pref stored as themselves, from 0 in each block (format 7) */
} wseq;

/* Processes whose tables are kept: the writer is not told when a process
 * ends, and a session beside a build runs thousands. The least recently used
 * one's tables go (its next block starts again from 0, which a reader takes
 * as a new sequence). */
#define REFS_MAX_PROCESSES 64

typedef struct seq_entry {
    uint64_t key;
    wseq *seq;
} seq_entry;

static void free_seq(wseq *s);
static void forget_lists(wseq *s);

void ltr_refwriter_init(ltr_refwriter *w)
{
    memset(w, 0, sizeof *w);
    an_hmap_init(&w->plans, sizeof(plan));
    an_hmap_init(&w->seqs, sizeof(seq_entry));
    an_hmap_init(&w->others, sizeof(uint64_t));
}

void ltr_refwriter_free(ltr_refwriter *w)
{
    size_t pos = 0;
    for (seq_entry *e; (e = an_hmap_next(&w->seqs, &pos));)
        free_seq(e->seq);
    an_hmap_free(&w->seqs);
    an_hmap_free(&w->plans);
    an_hmap_free(&w->others);
    ltr_bytes_free(&w->out);
    ltr_bytes_free(&w->in);
}

void ltr_refwriter_forget(ltr_refwriter *w)
{
    size_t pos = 0;
    for (seq_entry *e; (e = an_hmap_next(&w->seqs, &pos));) {
        for (int k = 0; k < 2; k++) {
            an_hmap_free(&e->seq->r[k].addrs);
            an_hmap_init(&e->seq->r[k].addrs, sizeof(addr_ord));
        }
        forget_lists(e->seq); /* the reader will not have seen the frees they hold */
    }
}

/* ---- layouts ----------------------------------------------------------------- */

/* The stored type of a heap layout's field: which address fields become pnew
 * or pref (one of each at most: counted in taken[]). */
static uint8_t heap_type(uint16_t event_id, const uint8_t *name, uint16_t len, uint8_t type, int taken[2])
{
    if (type != LTR_TYPE_PVAR)
        return type;
    int addr = len == 7 && !memcmp(name, "address", 7), old = len == 11 && !memcmp(name, "old_address", 11);
    if (addr && (event_id == LTR_HEAP_EV_ALLOC || event_id == LTR_HEAP_EV_REALLOC) && !(taken[0]++))
        return LTR_TYPE_PNEW;
    if (((addr && event_id == LTR_HEAP_EV_FREE) || (old && event_id == LTR_HEAP_EV_REALLOC)) && !(taken[1]++))
        return LTR_TYPE_PREF;
    return type;
}

/* One LAYOUT record's body (len bytes): converted in place, its plan made.
 * Body: u32 id, guid[16], u16 event_id, u8 level, u8 opcode, u64 keywords,
 * str name, u16 count, count x (u8 type, str name). */
static void layout(ltr_refwriter *w, const ltr_guid *heap, uint8_t *b, size_t len)
{
    if (len < 34)
        return;
    size_t off = 32 + 2 + ltr_get_u16(b + 32);
    if (off + 2 > len)
        return;
    int mine = !memcmp(b + 4, heap->b, 16) && ltr_get_u16(b + 20) >= LTR_HEAP_EV_ALLOC &&
               ltr_get_u16(b + 20) <= LTR_HEAP_EV_REALLOC;
    uint16_t count = ltr_get_u16(b + off), event_id = ltr_get_u16(b + 20);
    plan p = {.nfields = (uint8_t)count, .msize = -1};
    int planned = mine && count <= PLAN_FIELDS, taken[2] = {0, 0}, changed = 0;
    off += 2;
    for (unsigned i = 0; i < count; i++) {
        if (off + 3 > len || off + 3 + ltr_get_u16(b + off + 1) > len)
            return; /* the reader calls it a bad record; nothing converted after it matters */
        uint8_t *type = b + off;
        uint16_t nlen = ltr_get_u16(b + off + 1);
        if ((*type == LTR_TYPE_PNEW || *type == LTR_TYPE_PREF) && !w->trusted)
            *type = 0; /* not a producer's to use */
        uint8_t t = planned ? heap_type(event_id, b + off + 3, nlen, *type, taken) : *type;
        planned = planned && ltr_type_fixed_size(t) >= 0;
        if (planned)
            p.type[i] = t;
        /* "size" as the reader reads names: up to their first NUL (a name
         * "size", NUL, "x" is its size field too; a review's) */
        if (planned && t == LTR_TYPE_UVAR && p.msize < 0 && nlen >= 4 && !memcmp(b + off + 3, "size", 4) &&
            (nlen == 4 || b[off + 3 + 4] == 0))
            p.msize = (int8_t)i;
        changed |= t != *type;
        off += 3 + nlen;
    }
    uint32_t id = ltr_get_u32(b);
    int created;
    plan *old = an_hmap_get(&w->plans, id);
    if (!planned || !changed || an_hmap_get(&w->others, id)) {
        /* The reader keeps an id's first description: one not planned here
         * makes every later one of that id unplanned too, or the writer
         * would count values the reader reads as another layout's. */
        if (!old)
            an_hmap_put(&w->others, id, &created); /* without memory: planned later, as before */
        return;
    }
    if (!taken[0])
        p.msize = -1; /* only a layout with a pnew field has one (the reader's rule) */
    /* The reader keeps the first description of an id, and sizes the
     * allocator model by that one's size field: a repeat with the same
     * types but "size" elsewhere planned here would have the writer guess
     * next addresses and size classes from another field than the reader
     * (wrong addresses, not damage). Nor may a repeat replace the plan: its
     * `written` would start again at 0, and a repeat that then fails to be
     * written would drop the plan of a layout the file holds. */
    if (old && (memcmp(old->type, p.type, sizeof p.type) || old->msize != p.msize || old->nfields != p.nfields))
        return;
    off = 32 + 2 + ltr_get_u16(b + 32) + 2;
    for (unsigned i = 0; i < count; off += 3 + ltr_get_u16(b + off + 1), i++)
        b[off] = p.type[i];
    if (old)
        return; /* the same plan: the first one's, kept */
    plan *np = an_hmap_put(&w->plans, id, &created);
    if (np) {
        p.key = id;
        *np = p;
    }
    memset(w->cache_id, 0, sizeof w->cache_id); /* the map may have moved its entries */
}

int ltr_refwriter_described(const ltr_refwriter *w, uint32_t id)
{
    return an_hmap_get(&w->plans, id) != NULL || an_hmap_get(&w->others, id) != NULL;
}

void ltr_refwriter_layouts_written(ltr_refwriter *w, const uint8_t *records, size_t len, int ok)
{
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint32_t size = ltr_get_u32(records + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off)
            return;
        plan *p = ltr_get_u16(records + off) == LTR_META_LAYOUT && size >= LTR_RECORD_HEADER_SIZE + 4
                      ? an_hmap_get(&w->plans, ltr_get_u32(records + off + LTR_RECORD_HEADER_SIZE))
                      : NULL;
        if (p && ok)
            p->written = 1;
        else if (p && !p->written) {
            an_hmap_del(&w->plans, p->key);
            memset(w->cache_id, 0, sizeof w->cache_id);
        }
        off += size;
    }
}

void ltr_refwriter_layouts(ltr_refwriter *w, uint8_t *records, size_t len)
{
    ltr_guid heap;
    ltr_guid_from_name(LTR_HEAP_PROVIDER, &heap);
    for (size_t off = 0; off + LTR_RECORD_HEADER_SIZE <= len;) {
        uint32_t size = ltr_get_u32(records + off + 4);
        if (size < LTR_RECORD_HEADER_SIZE || size > len - off)
            return;
        if (ltr_get_u16(records + off) == LTR_META_LAYOUT)
            layout(w, &heap, records + off + LTR_RECORD_HEADER_SIZE, size - LTR_RECORD_HEADER_SIZE);
        off += size;
    }
}

/* ---- events ------------------------------------------------------------------ */

/* The plan of a layout id; the last one found is kept (a buffer's records
 * alternate between two or three layouts: Alloc, Free). */
static const plan *plan_of(ltr_refwriter *w, uint32_t id)
{
    unsigned c = id & (REFS_PLAN_CACHE - 1);
    if (w->cache_id[c] == id + 1)
        return w->cache_plan[c];
    const plan *p = an_hmap_get(&w->plans, id);
    w->cache_id[c] = id + 1;
    w->cache_plan[c] = p;
    return p;
}

static void forget_lists(wseq *s)
{
    for (unsigned c = 0; c < LTR_MODEL_CLASSES; c++)
        if (s->lists[c])
            ltr_model_empty(s->lists[c]);
}

static void free_seq(wseq *s)
{
    an_hmap_free(&s->r[0].addrs);
    an_hmap_free(&s->r[1].addrs);
    for (unsigned c = 0; c < LTR_MODEL_CLASSES; c++)
        free(s->lists[c]);
    free(s);
}

static void evict_one(ltr_refwriter *w)
{
    size_t pos = 0;
    seq_entry *old = NULL;
    for (seq_entry *e; (e = an_hmap_next(&w->seqs, &pos));)
        if (!old || e->seq->used < old->seq->used)
            old = e;
    if (old) {
        free_seq(old->seq);
        an_hmap_del(&w->seqs, old->key);
    }
}

/* an_hmap_keep's question: not the process's (its tables freed as it goes) */
static int not_of_pid(const void *entry, void *ctx)
{
    const seq_entry *e = entry;
    if ((uint32_t)e->key != *(const uint32_t *)ctx)
        return 1;
    free_seq(e->seq); /* asked once: a refused entry goes at once */
    return 0;
}

void ltr_refwriter_forget_process(ltr_refwriter *w, uint32_t pid)
{
    an_hmap_keep(&w->seqs, not_of_pid, &pid);
}

static wseq *seq_of(ltr_refwriter *w, uint16_t collector, uint32_t pid)
{
    int created;
    uint64_t key = (uint64_t)collector << 32 | pid;
    if (!an_hmap_get(&w->seqs, key) && w->seqs.n >= REFS_MAX_PROCESSES)
        evict_one(w); /* before the put: a delete moves entries */
    seq_entry *e = an_hmap_put(&w->seqs, key, &created);
    if (!e)
        return NULL;
    if (created) {
        e->seq = calloc(1, sizeof *e->seq);
        if (!e->seq) {
            an_hmap_del(&w->seqs, (uint64_t)collector << 32 | pid);
            return NULL;
        }
        an_hmap_init(&e->seq->r[0].addrs, sizeof(addr_ord));
        an_hmap_init(&e->seq->r[1].addrs, sizeof(addr_ord));
        /* past every count used: a process whose tables were dropped comes
         * back with numbers no reader holds for it, so a reader that lost
         * its first block cannot take an old value for a new one */
        e->seq->r[0].n = e->seq->r[1].n = w->high;
    }
    e->seq->used = ++w->uses;
    return e->seq;
}

typedef struct reach_of {
    uint64_t n;
    uint32_t reach;
} reach_of;

static int within_reach(const void *entry, void *ctx)
{
    const reach_of *r = ctx;
    return r->n - (((const addr_ord *)entry)->ord & LTR_MODEL_ORD_MASK) <= r->reach;
}

/* Keeps the addresses still within reach: a leaking process's table would
 * otherwise grow with every block it never frees. In place: the table
 * copied into a fresh one took the recorder a second at each pruning (a
 * process holding 300 000 blocks), while the traced programs' events were
 * lost for want of a free buffer (an_hmap_keep says why). */
static void prune(wring *g, uint32_t reach)
{
    if (g->addrs.n > 2 * (size_t)reach)
        an_hmap_keep(&g->addrs, within_reach, &(reach_of){g->n, reach});
}

/* The codes a block's pnew and pref fields use: format 4's references
 * only, or the allocator model's places first (5), and the next address
 * too (6), and addresses stored as differences (7). */
enum { CODES_REFS = 0, CODES_MODEL = 1, CODES_NEXT = 2, CODES_DELTA = 3 };

/* An address stored as itself (code 0): with format 7's codes, as the
 * zigzag difference from the block's previous one of its kind (k: 0 pnew,
 * 1 pref) stored so. The difference of neighbours in a heap takes a byte
 * or two where the address took five to seven; it may take up to nine
 * bytes more than a small address (writer.c's bound of a block's growth). */
static size_t put_plain(wseq *s, int codes, int k, uint64_t addr, uint8_t *o)
{
    o[0] = 0;
    if (!s || codes != CODES_DELTA)
        return 1 + ltr_put_uvar(o + 1, addr);
    uint64_t d = ltr_zigzag((int64_t)(addr - s->plain[k]));
    s->plain[k] = addr;
    return 1 + ltr_put_uvar(o + 1, d);
}

/* A pref: the distance back to the latest allocation with its address,
 * within the window (the entry is then used up: each value is referred to
 * once), and that allocation's size class in *cls; else itself. With
 * format 6's codes (next), the allocation right after the one the block's
 * previous free named is LTR_MODEL_FREED_NEXT, and distances count on. */
static size_t put_free(wseq *s, int codes, uint64_t addr, uint8_t *o, int *cls)
{
    int next = codes >= CODES_NEXT;
    addr_ord e;
    wring *allocs = s ? &s->r[LTR_REFS_ALLOC] : NULL;
    if (allocs && an_hmap_take_sized(&allocs->addrs, addr, &e, sizeof e) &&
        allocs->n - (e.ord & LTR_MODEL_ORD_MASK) <= window[LTR_REFS_ALLOC]) {
        uint64_t ord = e.ord & LTR_MODEL_ORD_MASK, after = s->freed1;
        *cls = (int)(e.ord >> LTR_MODEL_ORD_BITS);
        s->freed1 = ord + 1;
        if (next && after && ord == after)
            return ltr_put_uvar(o, LTR_MODEL_FREED_NEXT);
        return ltr_put_uvar(o, allocs->n - ord + (next ? LTR_MODEL_FREED_NEXT : 0));
    }
    if (s)
        s->freed1 = 0;
    return put_plain(s, codes, LTR_REFS_FREE, addr, o);
}

/* A pnew: its place in its class's list of freed addresses, else the
 * address after the block's previous allocation, else the event's own old
 * address (old: a realloc's, else NULL), else the distance back to the
 * latest free of its address (after those codes), else itself. */
static size_t put_alloc(wseq *s, int codes, uint64_t addr, const uint64_t *old, unsigned cls, uint8_t *o,
                        int *place)
{
    if (!s)
        return put_plain(s, codes, LTR_REFS_ALLOC, addr, o);
    int i = codes != CODES_REFS && s->lists[cls] ? ltr_model_find(s->lists[cls], addr) : -1;
    if (i >= 0) {
        *place = i;
        return ltr_put_uvar(o, (uint64_t)i + 1);
    }
    if (codes >= CODES_NEXT && s->next && addr == s->next)
        return ltr_put_uvar(o, LTR_MODEL_NEXT);
    if (codes >= CODES_NEXT && old && addr == *old)
        return ltr_put_uvar(o, LTR_MODEL_SAME);
    addr_ord e;
    wring *frees = &s->r[LTR_REFS_FREE];
    uint64_t after = codes >= CODES_NEXT ? LTR_MODEL_CODES : codes == CODES_MODEL ? LTR_MODEL_LIST : 0;
    if (an_hmap_take_sized(&frees->addrs, addr, &e, sizeof e) && frees->n - e.ord <= window[LTR_REFS_FREE])
        return ltr_put_uvar(o, frees->n - e.ord + after);
    return put_plain(s, codes, LTR_REFS_ALLOC, addr, o);
}

static void join(wring *g, uint64_t addr, unsigned cls)
{
    int created;
    addr_ord *e = an_hmap_put_sized(&g->addrs, addr, &created, sizeof *e);
    if (e)
        e->ord = g->n | (uint64_t)cls << LTR_MODEL_ORD_BITS;
    g->n++;
}

/* What an event did to its process's sequences and lists, in the reader's
 * order: the place its allocation took leaves its list, the free whose
 * class is known goes in front of its list, then both values join. A list
 * that cannot be made is a push the reader makes and this writer does not:
 * every list is forgotten (the writer's lists must stay a prefix of the
 * reader's, allocmodel.h). */
static void commit(wseq *s, const int has[2], const uint64_t addr[2], uint64_t size, int place, int fcls)
{
    unsigned cls = ltr_model_class(size);
    if (place >= 0)
        ltr_model_take(s->lists[cls], (uint32_t)place);
    if (has[1] && fcls >= 0) {
        if (!s->lists[fcls] && !(s->lists[fcls] = calloc(1, sizeof *s->lists[fcls])))
            forget_lists(s);
        else
            ltr_model_push(s->lists[fcls], addr[1], 0);
    }
    if (has[0]) {
        join(&s->r[LTR_REFS_ALLOC], addr[0], cls);
        s->next = ltr_model_next(addr[0], size);
    }
    if (has[1])
        join(&s->r[LTR_REFS_FREE], addr[1], 0);
}

/* The payload q (plen bytes) re-encoded into o (room for plen + REFS_GROWTH): its
 * length, or -1 when a field does not parse (nothing is counted then). With
 * no sequences (s NULL: a plain block) every address is stored as itself. The
 * agent wrote the address fields as pvar; an allocation's address refers to
 * the frees (an allocator hands freed blocks out again), a free's to the
 * allocations. Both are told against the sequences as they were before the
 * event, then the event's values join them. The fields are parsed first:
 * an allocation's code needs its size, which comes after its address. */
static long encode_payload(wseq *s, int codes, const plan *pl, const uint8_t *q, size_t plen, uint8_t *o)
{
    uint32_t off[PLAN_FIELDS + 1];
    uint64_t addr[2] = {0, 0}, size = 0;
    int has[2] = {0, 0};
    size_t in = 0;
    for (unsigned f = 0; f < pl->nfields; f++) {
        uint8_t t = pl->type[f];
        int ref = t == LTR_TYPE_PNEW || t == LTR_TYPE_PREF, k = t == LTR_TYPE_PREF; /* k: the sequence it joins */
        int64_t fs = ref ? (int64_t)ltr_get_uvar(q + in, plen - in, &addr[k])
                         : ltr_field_size((ltr_type)t, q + in, plen - in);
        if (fs < 0 || (ref && fs == 0))
            return -1;
        has[k] |= ref;
        if ((int)f == pl->msize)
            ltr_get_uvar(q + in, (size_t)fs, &size);
        off[f] = (uint32_t)in;
        in += (size_t)fs;
    }
    off[pl->nfields] = (uint32_t)in;
    unsigned cls = ltr_model_class(size);
    int place = -1, fcls = -1;
    size_t out = 0;
    for (unsigned f = 0; f < pl->nfields; f++) {
        uint8_t t = pl->type[f];
        if (t == LTR_TYPE_PREF)
            out += put_free(s, codes, addr[1], o + out, &fcls);
        else if (t == LTR_TYPE_PNEW)
            out += put_alloc(s, codes, addr[0], has[1] ? &addr[1] : NULL, cls, o + out, &place);
        else {
            memcpy(o + out, q + off[f], off[f + 1] - off[f]);
            out += off[f + 1] - off[f];
        }
    }
    memcpy(o + out, q + in, plen - in); /* bytes after the fields go along */
    out += plen - in;
    if (s)
        commit(s, has, addr, size, place, codes != CODES_REFS ? fcls : -1);
    return (long)out;
}

/* One record (n bytes at r, parsed as ce) of a planned layout into w->out. */
static void encode_record(ltr_refwriter *w, wseq *s, const plan *pl, const uint8_t *r, const ltr_cevent *ce)
{
    uint64_t size;
    size_t sn = ltr_get_uvar(r, ce->header, &size); /* parsed already */
    size_t inner = ce->header - sn;                 /* the layout and delta varints */
    uint8_t *dst = ltr_bytes_grow(&w->out, LTR_VARINT_MAX + inner + ce->payload + REFS_GROWTH);
    if (!dst)
        return;
    uint8_t *payload = dst + LTR_VARINT_MAX + inner;
    long pn = encode_payload(s, w->no_model ? CODES_REFS : w->no_next ? CODES_MODEL : w->no_delta ? CODES_NEXT : CODES_DELTA, pl,
                             r + ce->header, ce->payload, payload);
    if (pn < 0 || pn > (long)LTR_MAX_EVENT_PAYLOAD)
        pn = 0; /* the reader reports it: payload shorter than its fields */
    size_t hn = ltr_put_uvar(dst, inner + (size_t)pn);
    memmove(dst + hn, r + sn, inner);
    memmove(dst + hn + inner, payload, (size_t)pn);
    w->out.len -= LTR_VARINT_MAX + inner + ce->payload + REFS_GROWTH - (hn + inner + (size_t)pn);
}

int ltr_refwriter_block(ltr_refwriter *w, uint16_t collector, uint32_t pid, const uint8_t *p, size_t len,
                        int plain, uint64_t base[2])
{
    if (!w->plans.n)
        return 0;
    w->in.len = 0;
    w->out.len = 0;
    uint8_t *in = ltr_bytes_grow(&w->in, len);
    if (!in || w->in.failed) {
        w->in.failed = 0;
        return -1; /* its heap records cannot go as the agent wrote them: their layouts say pnew and pref */
    }
    memcpy(in, p, len); /* read shared memory once */
    wseq *s = NULL;
    int planned = 0;
    for (size_t off = 0; off < len;) {
        ltr_cevent ce;
        size_t n = ltr_cevent_parse(in + off, len - off, &ce);
        const plan *pl = n ? plan_of(w, ce.layout) : NULL;
        if (pl && !planned++ && !plain && (s = seq_of(w, collector, pid))) {
            base[0] = s->r[0].n;
            base[1] = s->r[1].n;
            s->next = s->freed1 = s->plain[0] = s->plain[1] = 0; /* a reader may read this block after any other, or alone */
        }
        if (!n) { /* framing the reader will report: the rest as it is */
            ltr_bytes_put_mem(&w->out, in + off, len - off);
            break;
        }
        if (pl)
            encode_record(w, s, pl, in + off, &ce);
        else
            ltr_bytes_put_mem(&w->out, in + off, n);
        off += n;
    }
    if (s) {
        prune(&s->r[0], window[0]);
        prune(&s->r[1], window[1]);
        for (int k = 0; k < 2; k++)
            w->high = s->r[k].n > w->high ? s->r[k].n : w->high;
    }
    if (w->out.failed) { /* counted, not written: nothing may refer to it */
        w->out.failed = 0;
        if (s)
            ltr_refwriter_forget(w);
        return -1;
    }
    return !planned ? 0 : s ? 1 : 2;
}
