/*
 * analyze/blocks.c — the analyzer's fast path: reads the heap records of a
 * compact buffer block itself (format/blocks.h, "Block-level reading") in one
 * loop — size, layout id and timestamp delta varints, then the fields by the
 * layout's plan (source.c) — and feeds them to the model in batches of one
 * thread's events (sink.h). It takes only records the generic path would take
 * as they are: at anything else (a layout it has no plan for, a record that
 * does not parse) it stops, and analyze.c hands that record to
 * ltr_trace_next, which applies the damage rules. The reader's counts are
 * reported per run, so `ltr info` and the analysis see the same figures.
 * A column block (format 5) it reads from its columns' values, decoded
 * whole beforehand (by the read-ahead thread, or here), or a record at a
 * time from the columns once the generic path took one of its records.
 * Why not the reader's per-event path: its generic event and field lookup
 * were over a third of the analysis time (docs/analysis.md, "Speed").
 */
#include "analyze/internal.h"
#include "analyze/sink.h"
#include "base/varint.h"
#include "format/blocks.h"
#include "prim/prim.h"

#include <stdlib.h>
#include <string.h>

/* Layout ids the plans are indexed by, grown as ids come; higher ones go the
 * generic way. Each process registers its own layouts, so ids grow with the
 * processes: fixed at 4096, the events of every process after about the
 * 700th went the generic way (200 pyenv python3 starts, 8 202 processes). */
#define AN_FAST_LAYOUT_IDS_FIRST 4096
#define AN_FAST_LAYOUT_IDS_MAX (1u << 22)

enum { PLAN_UNSEEN = 0, PLAN_NONE = -1 };

struct an_blocks {
    ltr_trace *trace;
    an_decoder *dec;
    an_fast_plan *plans;   /* by layout id; kind PLAN_UNSEEN until the reader knows the layout */
    size_t nids;           /* ids plans, counts and used have room for */
    uint64_t *counts;      /* events per layout id decoded since the last report */
    uint32_t *used;        /* layout ids with counts, for the report */
    size_t nused;
    uint32_t *vals;        /* a column block's values, decoded ahead (col_vals) */
    size_t capvals;
    uint64_t *big;
    size_t capbig;
    struct col_vals *cvals;
    size_t capcvals;
    ltr_colvals *got;      /* the values decoded here, when the read-ahead thread did not */
    size_t capgot;
    an_event *wev;         /* a window's events, built a column at a time (run_window) */
    ltr_refev *refs;       /* and their references */
    uint16_t *lists;       /* each table entry's records in a window (window_entries) */
    struct col_at *at;     /* where each column stood when the window began */
    size_t capat;
    int ahead;             /* column blocks decoded ahead (LTR_ANALYZE_AHEAD=0: not, to compare) */
};

an_blocks *an_blocks_new(ltr_trace *t, an_decoder *d)
{
    an_blocks *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->trace = t;
    b->dec = d;
    b->ahead = an_decodes_ahead();
    b->nids = AN_FAST_LAYOUT_IDS_FIRST;
    b->plans = calloc(b->nids, sizeof *b->plans);
    b->counts = calloc(b->nids, sizeof *b->counts);
    b->used = calloc(b->nids, sizeof *b->used);
    if (!b->plans || !b->counts || !b->used) {
        an_blocks_free(b);
        return NULL;
    }
    return b;
}

int an_decodes_ahead(void)
{
    const char *e = getenv("LTR_ANALYZE_AHEAD");
    return !e || strcmp(e, "0") != 0;
}

void an_blocks_free(an_blocks *b)
{
    if (!b)
        return;
    free(b->plans);
    free(b->counts);
    free(b->used);
    free(b->vals);
    free(b->big);
    free(b->cvals);
    free(b->got);
    free(b->wev);
    free(b->refs);
    free(b->lists);
    free(b->at);
    free(b);
}

/* Room for layout id `id` in the plans (0: past the bound, or no memory:
 * the generic way). */
static __attribute__((noinline)) int ids_grow(an_blocks *b, uint64_t id)
{
    if (id >= AN_FAST_LAYOUT_IDS_MAX)
        return 0;
    size_t n = b->nids;
    while (n <= id)
        n *= 2;
    an_fast_plan *p = realloc(b->plans, n * sizeof *p);
    if (p)
        b->plans = p;
    uint64_t *c = p ? realloc(b->counts, n * sizeof *c) : NULL;
    if (c)
        b->counts = c;
    uint32_t *u = c ? realloc(b->used, n * sizeof *u) : NULL;
    if (!u)
        return 0; /* what grew stays grown; nids is what all three hold */
    b->used = u;
    memset(b->plans + b->nids, 0, (n - b->nids) * sizeof *p);
    memset(b->counts + b->nids, 0, (n - b->nids) * sizeof *c);
    b->nids = n;
    return 1;
}

static inline __attribute__((always_inline)) int has_id(an_blocks *b, uint64_t id)
{
    return id < b->nids || ids_grow(b, id);
}

/* The plan of a layout id, settled when the reader first knows the layout
 * (layouts are never redefined until a rewind, which ends the stream). */
static __attribute__((noinline)) const an_fast_plan *plan_first(an_blocks *b, uint64_t id);

static inline __attribute__((always_inline)) const an_fast_plan *plan_of(an_blocks *b, uint64_t id)
{
    an_fast_plan *p = &b->plans[id];
    return p->kind != PLAN_UNSEEN ? p : plan_first(b, id);
}

static const an_fast_plan *plan_first(an_blocks *b, uint64_t id)
{
    an_fast_plan *p = &b->plans[id];
    const ltr_layout *l = ltr_trace_layout_find(b->trace, (uint32_t)id);
    if (!l)
        return p; /* not described yet: the generic path reports it */
    an_fast_plan_make(b->dec, l, p);
    if (p->kind <= 0)
        p->kind = PLAN_NONE;
    return p;
}

/* Reads every field of a payload by its plan; 0 if the payload is short or a
 * varint bad (the generic path then calls it damage). A pnew or pref field's
 * address is read when stored as itself; else its code goes to code[]
 * (format 4), to be resolved by the caller. */
static inline __attribute__((always_inline)) int read_fields(const an_fast_plan *pl, const uint8_t *q,
                                                            const uint8_t *end, const uint8_t *bend,
                                                            uint64_t val[AN_F_COUNT + 1], uint64_t code[2],
                                                            uint64_t addr[2])
{
    for (unsigned i = 0; i < pl->nfields; i++) {
        unsigned w = pl->width[i];
        if (w == AN_FAST_REF) {
            int k = (int)i == pl->ref[1];
            size_t n = an_uvar(q, (size_t)(end - q), (size_t)(bend - q), &code[k]);
            if (!n)
                return 0;
            q += n;
            if (code[k] == 0) { /* the address follows */
                if (!(n = an_uvar(q, (size_t)(end - q), (size_t)(bend - q), &addr[k])))
                    return 0;
                q += n;
            }
        } else if (!w) {
            size_t n = an_uvar(q, (size_t)(end - q), (size_t)(bend - q), &val[pl->slot[i]]);
            if (!n)
                return 0;
            q += n;
        } else {
            if ((size_t)(end - q) < w)
                return 0;
            val[pl->slot[i]] = an_fixed_le(q, w);
            q += w;
        }
    }
    return 1;
}

/* Format 4 and 5: the event's pnew and pref addresses, resolved against the
 * sequences and lists as they were before it (a pnew refers to frees, a
 * pref to allocations), then joined to them. 0, or -1 for a reference the
 * generic path must report (nothing joined then). */
static inline __attribute__((always_inline)) int resolve_refs(struct ltr_refseq *refs, const an_fast_plan *pl,
                                                               ltr_refev *e, uint64_t val[AN_F_COUNT + 1])
{
    e->has[0] = pl->ref[0] >= 0;
    e->has[1] = pl->ref[1] >= 0;
    e->size = val[AN_F_SIZE];
    if (ltr_refseq_apply_event(refs, e) < 0)
        return -1;
    for (int k = 0; k < 2; k++)
        if (pl->ref[k] >= 0)
            val[pl->slot[pl->ref[k]]] = e->addr[k];
    return 0;
}

_Static_assert((int)AN_OP_ALLOC == (int)AN_ALLOC && (int)AN_OP_FREE == (int)AN_FREE &&
                   (int)AN_OP_REALLOC == (int)AN_REALLOC,
               "a plan's kind is the model's op");

static void count_layouts(an_blocks *b, uint64_t id, uint64_t n)
{
    if (!n) /* an entry without a plan may name any id */
        return;
    if (!b->counts[id])
        b->used[b->nused++] = (uint32_t)id;
    b->counts[id] += n;
}

static void count_layout(an_blocks *b, uint64_t id) { count_layouts(b, id, 1); }

/* Tells the reader what the run took: framing, summary, process, thread and layout counts. */
static void report(an_blocks *b, const ltr_block_run *run)
{
    ltr_trace_block_consumed(b->trace, run);
    for (size_t i = 0; i < b->nused; i++) {
        uint32_t id = b->used[i];
        ltr_trace_count_layout(b->trace, b->plans[id].layout, b->counts[id]);
        b->counts[id] = 0;
    }
    b->nused = 0;
}

/* Parses one compact record header the way ltr_cevent_parse does; returns
 * the payload start, or NULL when the generic path must take the record. */
static inline __attribute__((always_inline)) const uint8_t *
record_header(const uint8_t *r, const uint8_t *end, const uint8_t **rend, uint64_t *layout, uint64_t *delta)
{
    uint64_t size;
    size_t n = an_uvar(r, (size_t)(end - r), (size_t)(end - r), &size);
    if (!n || size > LTR_CEVENT_MAX_SIZE || size > (size_t)(end - r) - n)
        return NULL;
    const uint8_t *q = r + n;
    *rend = q + size;
    size_t ln = an_uvar(q, (size_t)size, (size_t)(end - q), layout);
    size_t tn = ln ? an_uvar(q + ln, (size_t)size - ln, (size_t)(end - q) - ln, delta) : 0;
    if (!tn || size - ln - tn > LTR_MAX_EVENT_PAYLOAD)
        return NULL;
    return q + ln + tn;
}

/* Where the records a run takes go: their events, in the sink's room (when fed). */
typedef struct taker {
    an_sink *sk;
    const ltr_block_view *v;
    int feed;
    an_event *ev;
    size_t room, n; /* events written at ev */
} taker;

/* A record taken: its event to the sink, its time to the run (its layout the caller counts). */
static inline __attribute__((always_inline)) void take_event(taker *t, ltr_block_run *run, uint64_t ts,
                                                             const uint64_t val[AN_F_COUNT + 1], int kind)
{
    if (t->feed) {
        if (t->n == t->room) {
            an_sink_commit(t->sk, t->v->pid, t->v->tid, t->n);
            t->ev = an_sink_room(t->sk, t->v->pid, t->v->tid, &t->room);
            t->n = 0;
        }
        t->ev[t->n++] = (an_event){.ts = ts, .addr = val[AN_F_ADDR], .old_addr = val[AN_F_OLD],
                                   .size = val[AN_F_SIZE], .stack = (uint32_t)val[AN_F_STACK],
                                   .op = (uint32_t)kind};
    }
    if (!run->records++)
        run->first_ts = ts;
    run->min_ts = ts < run->min_ts ? ts : run->min_ts;
    run->max_ts = ts > run->max_ts ? ts : run->max_ts;
}

/* A record taken: its event, time and layout. */
static inline __attribute__((always_inline)) void take(an_blocks *b, taker *t, ltr_block_run *run, uint64_t ts,
                                                       const uint64_t val[AN_F_COUNT + 1], int kind, uint64_t id)
{
    take_event(t, run, ts, val, kind);
    count_layout(b, id);
}

/* ---- column blocks: the records read from their columns ---- */

/* The next varint of a column at *pos (not moved when there is none). */
static inline __attribute__((always_inline)) int col_uvar(const ltr_colcursor *c, size_t *pos, uint64_t *v)
{
    size_t n = an_uvar(c->p + *pos, c->len - *pos, c->len - *pos, v);
    *pos += n;
    return n != 0;
}

/* The next record's time delta (zigzag) from the time column at *pos and
 * *state (the cursor's pos and prev, not moved), as the reader rebuilds it:
 * a varint, or the next of its runs (format 8). */
static inline __attribute__((always_inline)) int col_time(const ltr_colcursor *c, size_t *pos, uint64_t *state,
                                                          uint64_t *z)
{
    return c->transform == LTR_COLUMN_RUNS ? ltr_coltime_next(c, pos, state, z) : col_uvar(c, pos, z);
}

/* One field's value from its column as the plan reads it (a pnew or pref:
 * its code, and after a code of 0 the address), with the column's position
 * and delta value moved in pos[] and prev (committed by the caller once the
 * whole record is read). 0 when the column has no value left or it is bad:
 * the rebuilt record would not be read either. */
static inline __attribute__((always_inline)) int col_field(const ltr_colcursor *c, unsigned w, size_t *pos,
                                                           uint64_t *prev, uint64_t *val, uint64_t *code,
                                                           uint64_t *addr)
{
    if (w == AN_FAST_REF)
        return col_uvar(c, pos, code) && (*code != 0 || col_uvar(c, pos, addr));
    if (w) {
        if (c->len - *pos < w)
            return 0;
        *val = an_fixed_le(c->p + *pos, w);
        *pos += w;
        return 1;
    }
    if (c->transform != LTR_COLUMN_DELTA)
        return col_uvar(c, pos, val);
    uint64_t z;
    if (!col_uvar(c, pos, &z))
        return 0;
    *prev += (uint64_t)ltr_unzigzag(z);
    *val = *prev;
    return 1;
}

/* The columns of the next record's fields, read into val[], code[] and
 * addr[] by the plan; their new positions and delta values in pos[] and
 * prev[] (the cursors are not moved). 0 when one has no value. */
static inline __attribute__((always_inline)) int col_fields(const ltr_colview *cv, const ltr_colentry *e,
                                                            const an_fast_plan *pl, size_t *pos, uint64_t *prev,
                                                            uint64_t val[AN_F_COUNT + 1], uint64_t code[2],
                                                            uint64_t addr[2])
{
    for (uint32_t j = 0; j < e->k; j++) {
        const ltr_colcursor *c = &cv->cols[e->col0 + j];
        int k = (int)j == pl->ref[1];
        pos[j] = c->pos;
        prev[j] = c->prev;
        if (!col_field(c, pl->width[j], &pos[j], &prev[j], &val[pl->slot[j]], &code[k], &addr[k]))
            return 0;
    }
    return 1;
}

/* The records of a column block read straight from its columns, a whole
 * record at a time: the same checks the reader's rebuilding makes (a value
 * missing or bad, an index past the table), so it takes exactly the records
 * the reader would, and leaves the rest to it with the cursors where that
 * record starts. 1 when every record of the block was taken. */
static int run_columns(an_blocks *b, an_sink *sk, const ltr_block_view *v, int feed, uint64_t *records)
{
    ltr_colview *cv = v->cols;
    ltr_colcursor *ic = &cv->cols[0], *tc = &cv->cols[1];
    ltr_block_run run = {.min_ts = UINT64_MAX, .last_ts = v->ts};
    uint64_t ts = v->ts;
    taker out = {.sk = sk, .v = v, .feed = feed};
    while (run.records < cv->left) {
        size_t ipos = ic->pos, tpos = tc->pos, pos[AN_FAST_FIELDS];
        uint64_t idx, delta, tstate = tc->prev, prev[AN_FAST_FIELDS], val[AN_F_COUNT + 1] = {0};
        ltr_refev e = {.code = {0, 0}, .addr = {0, 0}};
        if (!col_uvar(ic, &ipos, &idx) || idx >= cv->nt)
            break;
        const ltr_colentry *ce = &cv->tab[idx];
        const an_fast_plan *pl = ce->whole || !has_id(b, ce->id) ? NULL : plan_of(b, ce->id);
        if (!pl || pl->kind <= 0 || pl->nfields != ce->k || !col_time(tc, &tpos, &tstate, &delta) ||
            !col_fields(cv, ce, pl, pos, prev, val, e.code, e.addr))
            break;
        if ((pl->ref[0] >= 0 || pl->ref[1] >= 0) && resolve_refs(v->refs, pl, &e, val) < 0)
            break; /* the generic path reports it */
        ic->pos = ipos;
        tc->pos = tpos;
        tc->prev = tstate;
        for (uint32_t j = 0; j < ce->k; j++) {
            cv->cols[ce->col0 + j].pos = pos[j];
            cv->cols[ce->col0 + j].prev = prev[j];
        }
        ts += (uint64_t)ltr_unzigzag(delta);
        take(b, &out, &run, ts, val, pl->kind, ce->id);
    }
    an_sink_commit(sk, v->pid, v->tid, out.n);
    run.last_ts = ts;
    uint32_t left = cv->left;
    report(b, &run);
    *records = run.records;
    return run.records == left;
}

/* ---- column blocks, their columns decoded ahead ----
 *
 * Reading a record at a time from its columns interleaves a varint from
 * each column with the choice of how to read it; decoding each column whole
 * first, in a loop of its own, and then taking the records from the values
 * costs less: on cc1plus's trace (3.6 M events) `ltr analyze` took 0.93 of
 * the CPU (paired timing -n 15; the column loop 21 ms, the records from its
 * values 43 ms, against 62 ms for the interleaved reading). A block is
 * decoded ahead only when no record of it was taken yet and it is not too
 * large (COLS_AHEAD_MAX): once the generic path took one of its records (a
 * layout without a plan, damage), the rest of the block is read the
 * interleaved way above, so a block that mixes other events with the heap's
 * is never decoded twice. */

#define COLS_AHEAD_MAX LTR_COLVALS_BLOCK_MAX /* bytes of columns: 12 MiB of values at most */
#define ENTRY_PLANS 64 /* table entries a block may have to be read so: the heap's layouts are a few */

typedef struct col_vals {
    const uint32_t *v;   /* LTR_COLVAL_BIG: the next of big */
    const uint64_t *big;
    uint32_t n, i, bi;   /* values decoded, taken, big ones taken */
    uint32_t nbig;       /* big ones in all: once bi is there, none of the rest is LTR_COLVAL_BIG */
    size_t end;          /* the column's position after the n values */
    uint64_t prev;       /* a delta column's value after them */
} col_vals;

/* Where a column stood when a window began, to put it back. */
typedef struct col_at {
    uint32_t i, bi;
} col_at;

#define WINDOW 512



/* Every column of a fresh block's values in b->cvals: those the read-ahead
 * thread decoded, else decoded here; 0 when the block is not one to read so
 * (taken from already, too large, no memory). */
static int decode_columns(an_blocks *b, const ltr_colview *cv)
{
    size_t room = ltr_colview_value_room(cv);
    if (!b->ahead || cv->ncols < 2 || cv->cols[0].pos || room > COLS_AHEAD_MAX || cv->nt > ENTRY_PLANS ||
        ltr_reserve((void **)&b->cvals, &b->capcvals, cv->ncols, sizeof *b->cvals, 64) != 0 ||
        ltr_reserve((void **)&b->got, &b->capgot, cv->ncols, sizeof *b->got, 64) != 0 ||
        ltr_reserve((void **)&b->at, &b->capat, cv->ncols, sizeof *b->at, 64) != 0 ||
        (!b->wev && !(b->wev = malloc(WINDOW * sizeof *b->wev))) ||
        (!b->refs && !(b->refs = malloc(WINDOW * sizeof *b->refs))) ||
        (!b->lists && !(b->lists = malloc(ENTRY_PLANS * WINDOW * sizeof *b->lists))))
        return 0;
    const ltr_colvals *got = cv->ahead;
    if (!got) {
        if (ltr_reserve((void **)&b->vals, &b->capvals, room, sizeof *b->vals, 4096) != 0 ||
            ltr_reserve((void **)&b->big, &b->capbig, room, sizeof *b->big, 4096) != 0)
            return 0;
        ltr_colview_values(cv, b->vals, b->big, b->got);
        got = b->got;
    }
    for (size_t k = 0; k < cv->ncols; k++)
        b->cvals[k] = (col_vals){.v = got[k].v, .big = got[k].big, .n = got[k].n, .nbig = got[k].nbig,
                                 .end = got[k].end, .prev = got[k].prev};
    return 1;
}

/* How the records of one entry of a block's table are read from the
 * values, settled once a block (the plan, and each field's column checked
 * to be of the plan's kind, as col_field reads it): kind 0 when they are
 * the generic path's. */
typedef struct entry_plan {
    int kind;
    uint32_t layout, k;
    int8_t ref[2];          /* the pnew and pref fields' indexes, -1: none */
    uint8_t ref_slot[2];    /* where their addresses go in val[] */
    uint8_t has[2];         /* ref[k] >= 0: the records' ltr_refev.has */
    int sized;              /* a value field has the slot AN_F_SIZE (the references' size: else 0) */
    uint64_t taken;         /* records taken, for the layout counts */
    struct {
        col_vals *c;
        uint8_t slot;       /* where a value goes in val[] */
        int8_t ref;         /* -1: a value; 0 a pnew, 1 a pref: a code, and after a code of 0 the address */
    } f[AN_FAST_FIELDS];
} entry_plan;

static void entry_settle(an_blocks *b, const ltr_colview *cv, uint64_t e, col_vals *vals, entry_plan *ep)
{
    const ltr_colentry *ce = &cv->tab[e];
    const an_fast_plan *pl = ce->whole || !has_id(b, ce->id) ? NULL : plan_of(b, ce->id);
    *ep = (entry_plan){.kind = 0, .layout = ce->id, .k = ce->k};
    if (!pl || pl->kind <= 0 || pl->nfields != ce->k)
        return;
    for (uint32_t j = 0; j < ce->k; j++) {
        const ltr_colcursor *c = &cv->cols[ce->col0 + j];
        int ref = pl->width[j] != AN_FAST_REF ? -1 : (int)j == pl->ref[1];
        if (ref >= 0 ? c->transform == LTR_COLUMN_DELTA || c->fixed : pl->width[j] != c->fixed)
            return;
        ep->f[j].c = &vals[ce->col0 + j];
        ep->f[j].slot = pl->slot[j];
        ep->f[j].ref = (int8_t)ref;
    }
    for (int k = 0; k < 2; k++) {
        ep->ref[k] = pl->ref[k];
        ep->ref_slot[k] = pl->ref[k] >= 0 ? pl->slot[pl->ref[k]] : AN_F_COUNT;
        ep->has[k] = pl->ref[k] >= 0;
    }
    for (uint32_t j = 0; j < ce->k; j++)
        ep->sized |= ep->f[j].ref < 0 && ep->f[j].slot == AN_F_SIZE;
    ep->kind = pl->kind;
}

/* Each cursor where the records taken leave it: past the values taken. */
static void place_cursors(ltr_colview *cv, const col_vals *vals)
{
    for (size_t k = 0; k < cv->ncols; k++) {
        ltr_colcursor *c = &cv->cols[k];
        const col_vals *d = &vals[k];
        if (d->i == d->n) {
            c->pos = d->end;
            c->prev = d->prev;
            continue;
        }
        for (uint32_t t = 0; t < d->i; t++) { /* a block left part-way (rare): step over the values taken */
            uint64_t z;
            if (c->transform == LTR_COLUMN_RUNS)
                ltr_coltime_next(c, &c->pos, &c->prev, &z);
            else
                c->pos += c->fixed ? c->fixed : an_uvar(c->p + c->pos, c->len - c->pos, c->len - c->pos, &z);
        }
        if (d->i && c->transform == LTR_COLUMN_DELTA && !c->fixed)
            c->prev = d->v[d->i - 1] != LTR_COLVAL_BIG ? d->v[d->i - 1] : d->big[d->bi - 1];
    }
}

/* The window's loops over its records are unrolled by 4 (#pragma GCC
 * unroll): GCC kept each to one record a round, its count, compare and
 * jump a third of the smaller ones (cc1plus's trace: run_decoded 244.9 M
 * instructions to 213.4 M, callgrind: the values', the addresses' and
 * the times' loops 19.8 M of it, the references' and the index's 11.7 M;
 * whole analysis 1 734.2 M to 1 702.7 M, perl's leak 812.9 M to 789.3 M,
 * cachegrind). apply_run's loop (refseq.c) GCC leaves as it is. */

/* The records of a window are read a column at a time, not a record at a
 * time: the layout index column first (each record's table entry), then
 * each entry's field columns straight into its records' scratch, then the
 * records in order (references resolved, timestamps, events out). Reading
 * record by record, each field asked which column, whether the column had
 * a value left and where its value went: on cc1plus's trace that was 210
 * instructions a record (callgrind), most of the main thread's own work.
 * WINDOW records at a time keeps the scratch in the cache (36 KiB). */

/* The values of one field of an entry's n records of a window (recs: their
 * places), into their scratch; how many records had theirs (the column ran
 * out at the next: its position is then mid-record, and the window walks
 * its columns again, window_rewalk). */
/* A value into an event's field for a plan's slot (AN_F_COUNT: none). */
static inline __attribute__((always_inline)) void put_slot(an_event *e, unsigned slot, uint64_t x)
{
    switch (slot) {
    case AN_F_ADDR: e->addr = x; break;
    case AN_F_OLD: e->old_addr = x; break;
    case AN_F_SIZE: e->size = x; break;
    case AN_F_STACK: e->stack = (uint32_t)x; break;
    default: break;
    }
}

/* The records of a window all of one table entry, in order: 0, 1, 2, ...
 * (window_entries.recs; its loops then index by the count itself). */
#define IOTA4(n) n, n + 1, n + 2, n + 3
#define IOTA16(n) IOTA4(n), IOTA4(n + 4), IOTA4(n + 8), IOTA4(n + 12)
#define IOTA64(n) IOTA16(n), IOTA16(n + 16), IOTA16(n + 32), IOTA16(n + 48)
#define IOTA256(n) IOTA64(n), IOTA64(n + 64), IOTA64(n + 128), IOTA64(n + 192)
static const uint16_t IOTA[WINDOW] = {IOTA256(0), IOTA256(256)};
_Static_assert(WINDOW == 512, "IOTA holds a window");

/* field_values' loop for a value field of one slot (a constant where it is
 * inlined); a size goes to the records' references too (refs: when they
 * have any), in the loop that has it at hand. bigs: whether a value may
 * stand for one of big (a constant too: sizes and stack ids seldom do);
 * iota: recs is IOTA (a constant too). */
static inline __attribute__((always_inline)) uint32_t slot_run(col_vals *c, unsigned slot, const uint16_t *recs,
                                                               uint32_t n, an_event *ev, ltr_refev *refs, int bigs,
                                                               int iota)
{
    const uint32_t *v = c->v + c->i;
    const uint64_t *big = c->big;
    /* one bound, not the records' and the values' each time round */
    uint32_t bi = c->bi, lim = n < c->n - c->i ? n : c->n - c->i;
#pragma GCC unroll 4
    for (uint32_t t = 0; t < lim; t++) {
        uint32_t x = v[t], r = iota ? t : recs[t];
        uint64_t y = !bigs || x != LTR_COLVAL_BIG ? x : big[bi++];
        put_slot(&ev[r], slot, y);
        if (refs)
            refs[r].size = y;
    }
    c->i += lim;
    c->bi = bi;
    return lim;
}

static inline __attribute__((always_inline)) uint32_t slot_values(col_vals *c, unsigned slot, const uint16_t *recs,
                                                                  uint32_t n, an_event *ev, ltr_refev *refs)
{
    int bigs = c->bi != c->nbig;
    if (recs == IOTA)
        return bigs ? slot_run(c, slot, recs, n, ev, refs, 1, 1) : slot_run(c, slot, recs, n, ev, refs, 0, 1);
    return bigs ? slot_run(c, slot, recs, n, ev, refs, 1, 0) : slot_run(c, slot, recs, n, ev, refs, 0, 0);
}

/* field_values' loop for a pnew's (ref 0) or a pref's (ref 1) codes, and
 * after a code of 0 the address; ref and iota (recs is IOTA) constants
 * where inlined: a code's place in its ltr_refev a fixed offset, and no
 * list to look the record up in (cc1plus's trace: run_decoded 262.9 M
 * instructions to 255.3 M, callgrind). */
static inline __attribute__((always_inline)) uint32_t ref_values(col_vals *c, int ref, const uint16_t *recs,
                                                                 uint32_t n, ltr_refev *refs, int iota,
                                                                 uint16_t shape)
{
    const uint32_t *v = c->v;
    const uint64_t *big = c->big;
    uint32_t i = c->i, bi = c->bi, end = c->n, t = 0;
#pragma GCC unroll 4
    for (; t < n && i < end; t++) {
        uint32_t x = v[i++];
        uint64_t code = x != LTR_COLVAL_BIG ? x : big[bi++];
        ltr_refev *e = &refs[iota ? t : recs[t]];
        memcpy(e->has, &shape, sizeof shape);
        e->code[ref] = code;
        if (code == 0) {
            if (i == end)
                break;
            uint32_t y = v[i++];
            e->addr[ref] = y != LTR_COLVAL_BIG ? y : big[bi++];
        }
    }
    c->i = i;
    c->bi = bi;
    return t;
}

/* One field's values of an entry's records (has: the entry's references'
 * fields, its records' ltr_refev.has: a pnew's reference reads the size). */
static uint32_t field_values(col_vals *c, int ref, unsigned slot, const uint16_t *recs, uint32_t n, an_event *ev,
                             ltr_refev *refs, const uint8_t has[2])
{
    int pnew = has[0];
    uint16_t shape;
    memcpy(&shape, has, sizeof shape);
    switch (ref < 0 ? slot : AN_F_COUNT + 1) {
    case AN_F_ADDR: return slot_values(c, AN_F_ADDR, recs, n, ev, NULL);
    case AN_F_OLD: return slot_values(c, AN_F_OLD, recs, n, ev, NULL);
    case AN_F_SIZE: return slot_values(c, AN_F_SIZE, recs, n, ev, pnew ? refs : NULL);
    case AN_F_STACK: return slot_values(c, AN_F_STACK, recs, n, ev, NULL);
    case AN_F_COUNT: return slot_values(c, AN_F_COUNT, recs, n, ev, NULL);
    default: break;
    }
    if (recs == IOTA)
        return ref ? ref_values(c, 1, recs, n, refs, 1, shape) : ref_values(c, 0, recs, n, refs, 1, shape);
    return ref ? ref_values(c, 1, recs, n, refs, 0, shape) : ref_values(c, 0, recs, n, refs, 0, shape);
}

/* A value taken from c, without its use. */
static inline void skip_value(col_vals *c)
{
    c->bi += c->v[c->i++] == LTR_COLVAL_BIG;
}

/* The window's field columns put back where the first `taken` records of
 * the window leave them (from where the window found them, at[]): a record
 * stopped the window before the columns' ends were reached together. */
static void window_rewalk(const entry_plan *eps, const uint32_t *idx, uint32_t taken, const col_at *at,
                          col_vals *vals, size_t ncols)
{
    for (size_t k = 2; k < ncols; k++) {
        vals[k].i = at[k].i;
        vals[k].bi = at[k].bi;
    }
    for (uint32_t r = 0; r < taken; r++) {
        const entry_plan *ep = &eps[idx[r]];
        for (uint32_t j = 0; j < ep->k; j++) {
            col_vals *c = ep->f[j].c;
            uint32_t x = c->v[c->i];
            skip_value(c);
            if (ep->f[j].ref >= 0 && x == 0)
                skip_value(c);
        }
    }
}

typedef struct window_ctx {
    an_blocks *b;
    const ltr_block_view *v;
    entry_plan *eps;
    col_vals *vals;
    taker *out;
    ltr_block_run *run;
    uint64_t ts;
    /* each entry's kind beside, for the look of every record (an
     * entry_plan's place is a multiplication); its has[] is written with
     * the references' codes, not by that look: 4 instructions a record
     * (cc1plus's trace: run_decoded 255.3 M instructions to 244.9 M, callgrind) */
    uint32_t kind[ENTRY_PLANS];
} window_ctx;

/* The addresses the references resolved, into the fields of an entry's
 * first n records, those the window took (recs: in order; the slot a
 * constant where inlined). */
static inline __attribute__((always_inline)) void refs_out(const uint16_t *recs, uint32_t n, int k, unsigned slot,
                                                           an_event *ev, const ltr_refev *refs)
{
    if (recs == IOTA)
#pragma GCC unroll 4
        for (uint32_t t = 0; t < n; t++)
            put_slot(&ev[t], slot, refs[t].addr[k]);
    else
#pragma GCC unroll 4
        for (uint32_t t = 0; t < n; t++)
            put_slot(&ev[recs[t]], slot, refs[recs[t]].addr[k]);
}

/* An entry's records' resolved addresses into their events, the pnew's
 * then the pref's (as the plan's read puts them), an entry at a time: a
 * record at a time, each looked its entry's plan up again. */
static void entry_refs_out(const entry_plan *ep, const uint16_t *recs, uint32_t n, an_event *ev, const ltr_refev *refs)
{
    for (int k = 0; k < 2; k++)
        switch (ep->ref[k] < 0 ? AN_F_COUNT : ep->ref_slot[k]) {
        case AN_F_ADDR: refs_out(recs, n, k, AN_F_ADDR, ev, refs); break;
        case AN_F_OLD: refs_out(recs, n, k, AN_F_OLD, ev, refs); break;
        case AN_F_SIZE: refs_out(recs, n, k, AN_F_SIZE, ev, refs); break;
        case AN_F_STACK: refs_out(recs, n, k, AN_F_STACK, ev, refs); break;
        default: break;
        }
}

/* A window's records grouped by table entry: entry e's records in order
 * in lists[e][0..cnt[e]), or, when all are one entry's, IOTA (perl's leak:
 * nearly every window). Each entry's list of its own, written as the
 * index column is read: counting the entries first, then filling one list
 * at their offsets, was another pass of 8 instructions a record (cc1plus's
 * trace: run_decoded 286.7 M instructions to 262.9 M, callgrind, with each
 * record's entry read from the index column again where a window stops
 * short, not kept; the whole analysis of perl's leak, whose windows are
 * IOTA, 2.3 M more, cachegrind). */
typedef struct window_entries {
    uint16_t (*lists)[WINDOW];
    int one; /* all records are one entry's */
    uint32_t cnt[ENTRY_PLANS];
} window_entries;

/* Entry e's records in the window, in order. */
static inline const uint16_t *entry_recs(const window_entries *we, uint32_t e)
{
    return we->one ? IOTA : we->lists[e];
}

/* The times of a window's lim records from the delta column, after ts,
 * with the run's least and most (bigs: as slot_run's; deltas seldom are);
 * the last. A thread's times seldom go back: while none does, the least
 * and most are the first and the last, and the loop only notes whether a
 * delta was negative (zigzag: odd), not both at every record (cc1plus's
 * trace: 1 962.6 M instructions to 1 952.7 M, cachegrind). */
static inline __attribute__((always_inline)) uint64_t stamps(col_vals *dt, an_event *ev, uint32_t lim, uint64_t ts,
                                                             ltr_block_run *run, int bigs)
{
    const uint32_t *v = dt->v + dt->i;
    const uint64_t *big = dt->big;
    uint32_t bi = dt->bi;
    uint64_t lo = run->min_ts, hi = run->max_ts, odd = 0, start = ts; /* in registers: the stores to ev[] might be them */
#pragma GCC unroll 4
    for (uint32_t r = 0; r < lim; r++) {
        uint64_t z = !bigs || v[r] != LTR_COLVAL_BIG ? v[r] : big[bi++];
        odd |= z;
        ts += (uint64_t)ltr_unzigzag(z);
        ev[r].ts = ts;
    }
    /* past 2^64 the times go back too: without a big delta the window's
     * sum is below 2^41, so it wrapped if it ended below its start */
    int back = (odd & 1) || bigs || ts < start;
    for (uint32_t r = 0; r < lim && back; r++) {
        lo = ev[r].ts < lo ? ev[r].ts : lo;
        hi = ev[r].ts > hi ? ev[r].ts : hi;
    }
    if (lim && !back) {
        lo = ev[0].ts < lo ? ev[0].ts : lo;
        hi = ts > hi ? ts : hi;
    }
    dt->i += lim;
    dt->bi = bi;
    run->min_ts = lo;
    run->max_ts = hi;
    return ts;
}

/* The window's records before lim: references resolved (a failure stops
 * the window there: the generic path reports it), their addresses out,
 * timestamps, the entries' counts. How many were taken. */
static uint32_t window_records(window_ctx *w, const window_entries *we, an_event *ev, ltr_refev *refs, uint32_t lim)
{
    uint32_t nt = (uint32_t)w->v->cols->nt;
    lim = (uint32_t)ltr_refseq_apply_events(w->v->refs, refs, lim);
    for (uint32_t e = 0; e < nt; e++) {
        entry_plan *ep = &w->eps[e];
        const uint16_t *recs = entry_recs(we, e);
        uint32_t t = we->cnt[e];
        while (t && recs[t - 1] >= lim) /* the entry's records the window took */
            t--;
        if (t && (ep->ref[0] >= 0 || ep->ref[1] >= 0))
            entry_refs_out(ep, recs, t, ev, refs);
        ep->taken += t;
    }
    col_vals *dt = &w->vals[1];
    ltr_block_run *run = w->run;
    uint64_t ts = dt->bi == dt->nbig ? stamps(dt, ev, lim, w->ts, run, 0) : stamps(dt, ev, lim, w->ts, run, 1);
    if (lim && !run->records)
        run->first_ts = ev[0].ts;
    run->records += lim;
    w->ts = ts;
    if (w->out->feed) /* the window was built in the sink's room (run_decoded) */
        w->out->n += lim;
    return lim;
}

/* Up to m records (each with its index and time values there): how many
 * were taken; fewer when one cannot be (an index past the table or of an
 * entry without a plan, a field column out of values, a reference that
 * does not resolve), with every column where that record starts. */
static uint32_t run_window(window_ctx *w, uint32_t m, an_event *ev, ltr_refev *refs, col_at *at)
{
    const ltr_colview *cv = w->v->cols;
    col_vals *vals = w->vals, *ix = &vals[0];
    window_entries we;
    uint32_t lim = m, nt = (uint32_t)cv->nt;
    const uint32_t *iv = ix->v + ix->i;
    const uint32_t *kind = w->kind; /* in registers: the stores to ev[] and refs[] might be them */
    we.lists = (uint16_t(*)[WINDOW])w->b->lists;
    uint16_t *to[ENTRY_PLANS]; /* where each entry's next record goes */
    for (uint32_t e = 0; e < nt; e++)
        to[e] = we.lists[e];
#pragma GCC unroll 4
    for (uint32_t r = 0; r < m; r++) {
        uint32_t x = iv[r]; /* LTR_COLVAL_BIG is past any table */
        if (x >= nt || !kind[x]) {
            lim = r;
            break;
        }
        if (nt > 1) /* else all windows are IOTA: perl's leak, the lists' stores 2.3 M instructions in all */
            *to[x]++ = (uint16_t)r;
        ev[r] = (an_event){.op = kind[x]};
    }
    for (uint32_t e = 0; e < nt; e++)
        we.cnt[e] = nt > 1 ? (uint32_t)(to[e] - we.lists[e]) : lim;
    we.one = lim && we.cnt[iv[0]] == lim;
    for (size_t k = 2; k < cv->ncols; k++)
        at[k] = (col_at){vals[k].i, vals[k].bi};
    uint32_t full = lim; /* records whose fields the columns hold */
    for (uint32_t e = 0; e < cv->nt; e++) {
        const entry_plan *ep = &w->eps[e];
        const uint16_t *recs = entry_recs(&we, e);
        for (uint32_t j = 0; we.cnt[e] && j < ep->k; j++) {
            uint32_t t = field_values(ep->f[j].c, ep->f[j].ref, ep->f[j].slot, recs, we.cnt[e], ev, refs, ep->has);
            if (t < we.cnt[e] && recs[t] < full)
                full = recs[t];
        }
        for (uint32_t t = 0; ep->has[0] && !ep->sized && t < we.cnt[e]; t++)
            refs[recs[t]].size = 0; /* as the model's size field of a layout without one (a free's is not read) */
        for (uint32_t t = 0; !ep->has[0] && !ep->has[1] && t < we.cnt[e]; t++)
            memset(refs[recs[t]].has, 0, sizeof refs->has); /* the others' are written with their codes */
    }
    uint32_t taken = window_records(w, &we, ev, refs, full);
    ix->i += taken;
    if (taken < lim)
        window_rewalk(w->eps, iv, taken, at, vals, cv->ncols); /* each record's entry: its index */
    return taken;
}

/* run_columns over the values decoded ahead: the same records taken, the
 * same cursors left. */
static int run_decoded(an_blocks *b, an_sink *sk, const ltr_block_view *v, int feed, uint64_t *records)
{
    ltr_colview *cv = v->cols;
    col_vals *vals = b->cvals, *ix = &vals[0], *dt = &vals[1];
    entry_plan eps[ENTRY_PLANS];
    for (uint64_t e = 0; e < cv->nt; e++)
        entry_settle(b, cv, e, vals, &eps[e]);
    ltr_block_run run = {.min_ts = UINT64_MAX, .last_ts = v->ts};
    taker out = {.sk = sk, .v = v, .feed = feed};
    window_ctx w = {.b = b, .v = v, .eps = eps, .vals = vals, .out = &out, .run = &run, .ts = v->ts};
    for (uint64_t e = 0; e < cv->nt; e++)
        w.kind[e] = (uint32_t)eps[e].kind;
    while (run.records < cv->left) {
        uint32_t m = cv->left - run.records;
        m = m < ix->n - ix->i ? m : ix->n - ix->i;
        m = m < dt->n - dt->i ? m : dt->n - dt->i;
        m = m < WINDOW ? m : WINDOW;
        an_event *ev = b->wev;
        if (out.feed) { /* built where the events go: copying them there was 4 % of the main thread (cc1plus) */
            if (out.n == out.room) {
                an_sink_commit(sk, v->pid, v->tid, out.n);
                out.ev = an_sink_room(sk, v->pid, v->tid, &out.room);
                out.n = 0;
            }
            m = m < out.room - out.n ? m : (uint32_t)(out.room - out.n);
            ev = out.ev + out.n;
        }
        if (!m || run_window(&w, m, ev, b->refs, b->at) < m)
            break;
    }
    for (uint64_t e = 0; e < cv->nt; e++)
        count_layouts(b, eps[e].layout, eps[e].taken);
    an_sink_commit(sk, v->pid, v->tid, out.n);
    place_cursors(cv, vals);
    run.last_ts = w.ts;
    uint32_t left = cv->left;
    report(b, &run);
    *records = run.records;
    return run.records == left;
}

int an_blocks_run(an_blocks *b, an_sink *sk, const ltr_block_view *v, int feed, uint64_t *records)
{
    if (v->cols)
        return decode_columns(b, v->cols) ? run_decoded(b, sk, v, feed, records)
                                          : run_columns(b, sk, v, feed, records);
    const uint8_t *r = v->rec, *end = v->rec + v->left;
    ltr_block_run run = {.min_ts = UINT64_MAX, .last_ts = v->ts};
    uint64_t ts = v->ts;
    taker out = {.sk = sk, .v = v, .feed = feed};
    while (r < end) {
        const uint8_t *rend, *q;
        uint64_t id, delta, val[AN_F_COUNT + 1] = {0};
        if (!(q = record_header(r, end, &rend, &id, &delta)) || !has_id(b, id))
            break;
        const an_fast_plan *pl = plan_of(b, id);
        ltr_refev e = {.code = {0, 0}, .addr = {0, 0}};
        if (pl->kind <= 0 || !read_fields(pl, q, rend, end, val, e.code, e.addr))
            break;
        if ((pl->ref[0] >= 0 || pl->ref[1] >= 0) && resolve_refs(v->refs, pl, &e, val) < 0)
            break; /* the generic path reports it */
        ts += (uint64_t)ltr_unzigzag(delta);
        take(b, &out, &run, ts, val, pl->kind, id);
        r = rend;
    }
    an_sink_commit(sk, v->pid, v->tid, out.n);
    run.bytes = (size_t)(r - v->rec);
    run.last_ts = ts;
    report(b, &run);
    *records = run.records;
    return r == end;
}
