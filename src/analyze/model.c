/*
 * analyze/model.c — the heap model of model.h.
 *
 * Window rules, with [from, to] the window: an allocation at ts < from is
 * "allocated outside" (AO), inside otherwise (AI); allocations after `to` are
 * ignored. A free inside the window ends its block as FI; a free after `to`
 * leaves the block outstanding at the window's end (FO), so it is counted at
 * once and the block dropped; a free before `from` ends a block that never
 * mattered to the window.
 *
 * A temporary allocation is memory churn that a pool or a stack buffer would
 * avoid. Counted as heaptrack_print counts it (accumulatedtracedata.cpp): a
 * free (a realloc's free half too, a realloc being a free and then an
 * allocation) whose thread's heap event before it was an allocation of the
 * same size and stack as the freed block (heaptrack compares those, not the
 * address), allocated inside the window. heaptrack looks at the process's
 * order of events; here it is the thread's, since threads' events at one
 * time come in no known order (ties below): in a process of one thread
 * both are the same. A free of a block never seen is no event of that
 * order, as heaptrack's interpreter drops it.
 *
 * The agent stamps events to 100 us, so threads often share a time, and
 * the time-order stage cannot know the order of their events within it: a
 * thread's free of a block and another's allocation of its address at that
 * time may come allocation first. Where the order met does not alternate
 * at an address (a free that finds no block there, an allocation over a
 * live one), the address's events at that time are held back (tie_hold)
 * until the process's first event of a later time, then put in an order of
 * the threads' events that alternates (ties.h) and modelled in it
 * (tie_settle). The address's events at that time modelled already are
 * taken back and held back with them (tie_retract): the time order may
 * have put them too early. Then every free ends a block some order of the
 * threads' events gives it, and a free that finds none or an allocation
 * over a block is one that no order explains: a free of a block the trace
 * never saw, a free the trace lacks.
 *
 * What the window needs of a live block is whether it was allocated inside
 * (an allocation after the window is not kept, so that is ts >= from),
 * settled once, as a bit beside its stack index (live.h). With the
 * whole trace as the window (the default) every window test is known true:
 * the batch loop is compiled twice, once with the tests and once without.
 */
#include "analyze/model.h"
#include "analyze/ties.h"
#include "prim/prim.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* an_live.stack: the index in an_proc.stacks | LIVE_INSIDE */
#define LIVE_INSIDE 0x80000000u /* allocated inside the window */
#define MAX_STACKS (LIVE_INSIDE - 1) /* stack indexes leave that bit free, and the last with it is AN_LIVE_FREE */

typedef struct an_pending {
    uint64_t addr;
    uint64_t ts;
    uint32_t tid;
    uint32_t count; /* frees of the address at ts met before their allocations */
} an_pending;

/* An event held back at an_proc.tie_ts (model.c's header). */
typedef struct an_tie_op {
    uint64_t addr, size;
    uint32_t tid, stack; /* an allocation's an_live.stack (its stack's index, inside bit); a free's size and
                          * stack: its thread's allocation just before (an_thread), to tell a temporary */
    uint32_t rank;       /* its address's among those held back (an_contest) */
    uint8_t alloc;       /* an allocation, or a free */
    uint8_t realloc;     /* a free: of a realloc */
} an_tie_op;

/* A free modelled at an_proc.freed_ts, of block, kept so that it can be
 * taken back when another thread's events of the address at that time show
 * that it may have come too early (tie_retract). */
typedef struct an_freed_at {
    an_live block; /* as it was; block.addr 0: taken back already */
    uint64_t size; /* the block's (an_lives_size) */
    uint32_t block_tid; /* the thread that allocated it (an_lives_tid) */
    uint32_t tid;
    uint32_t prev; /* the free of its address kept before it (an index in an_proc.freed_at), or UINT32_MAX */
    uint8_t realloc, temporary; /* as an_tie_op's, and what end_freed was told */
} an_freed_at;
/* The frees kept at one time: at most FREED_MAX (a trace whose every
 * event has one time keeps memory bounded), the last of each address
 * found through an open-addressing index of them (an_freed_ix), at most
 * half full, its entries of other times told by their epoch. */
#define FREED_MAX AN_FREED_MAX
typedef struct an_freed_ix {
    uint64_t addr;
    uint32_t at;    /* the last free of addr kept (an_proc.freed_at) */
    uint32_t epoch; /* the time's (an_proc.freed_epoch); 0: empty */
} an_freed_ix;
/* Events held back at one time: past it they are settled at once (a trace
 * whose every event has one time, each a tie, keeps memory bounded). */
#define TIE_HOLD_MAX AN_TIES_HOLD

typedef struct an_contest {
    uint64_t addr;
    uint32_t rank; /* in the order the addresses were held back */
} an_contest;

/* A thread's last heap event, if an allocation inside the window: its size
 * and an_live.stack (stack 0: none, never an inside block's), so that a free
 * next of a block of both is a temporary (model.c's header). */
typedef struct an_thread {
    uint64_t tid;
    uint64_t size;
    uint32_t stack;
} an_thread;

typedef struct an_index {
    uint64_t stack_id;
    uint32_t index;
} an_index;

/* The hot path's functions are inlined into the batch loop (an_model_feed). */
#define HOT static inline __attribute__((always_inline))

HOT unsigned hist_bucket(uint64_t size) { return size ? 64u - (unsigned)__builtin_clzll(size) : 0u; }

unsigned an_hist_bucket(uint64_t size) { return hist_bucket(size); }

void an_model_init(an_model *m, uint64_t from, uint64_t to)
{
    memset(m, 0, sizeof *m);
    m->from = from;
    m->to = to;
}

static void proc_free(an_proc *p)
{
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].cells) {
            an_hmap_free(p->stacks[i].cells);
            free(p->stacks[i].cells);
        }
    an_lives_free(&p->live);
    an_hmap_free(&p->pending);
    an_hmap_free(&p->contested);
    an_hmap_free(&p->threads);
    an_hmap_free(&p->stack_index);
    free(p->tie_ops);
    free(p->freed_at);
    free(p->freed_ix);
    ltr_table_free(p->dense, p->ndense, sizeof *p->dense);
    ltr_table_free(p->stacks, p->capstacks, sizeof *p->stacks);
    free(p->series);
    free(p);
}

void an_model_free(an_model *m)
{
    for (size_t i = 0; i < m->nprocs; i++)
        proc_free(m->procs[i]);
    free(m->procs);
    free(m->probes);
    an_vmem_free(&m->vm);
    an_files_free(&m->files);
    memset(m, 0, sizeof *m);
}

static an_proc *proc_new(uint32_t pid)
{
    an_proc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pid = pid;
    an_lives_init(&p->live);
    an_hmap_init(&p->pending, sizeof(an_pending));
    an_hmap_init(&p->contested, sizeof(an_contest));
    an_hmap_init(&p->threads, sizeof(an_thread));
    an_hmap_init(&p->stack_index, sizeof(an_index));
    return p;
}

static bool end_model(an_model *m, an_proc *p, uint64_t ts);
static an_proc *current_of(an_model *m, uint32_t pid);

/* The model of the pid's image that tid's bits name (AN_GEN_SHIFT), made
 * at its first event (ts); an older image's then ends there: the exec that
 * replaced it took its memory. */
static an_proc *proc_of(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts)
{
    uint32_t gen = tid >> AN_GEN_SHIFT;
    if (m->last && m->last->pid == pid && m->last->gen == gen)
        return m->last;
    an_proc *older = NULL;
    for (size_t i = 0; i < m->nprocs; i++) {
        an_proc *q = m->procs[i];
        if (q->pid == pid && q->gen == gen)
            return m->last = q;
        if (q->pid == pid && q->gen < gen && (!older || q->gen > older->gen))
            older = q;
    }
    if (m->nprocs == m->capprocs) {
        size_t cap = m->capprocs ? m->capprocs * 2 : 8;
        an_proc **v = realloc(m->procs, cap * sizeof *v);
        if (!v)
            return NULL;
        m->procs = v;
        m->capprocs = cap;
    }
    an_proc *p = proc_new(pid);
    if (!p)
        return NULL;
    p->gen = gen;
    m->procs[m->nprocs++] = p;
    if (older && !older->ended)
        end_model(m, older, ts > older->last_ts ? ts - 1 : older->last_ts);
    return m->last = p;
}

/* Slot for stack_id in the dense index, grown on demand; NULL when the id is
 * too far beyond the stacks seen for a dense array to stay bounded by them.
 * A table (prim/table.c): past 1 MiB a mapping whose growth is zero pages
 * already, touched only up to the highest id written. Grown by realloc,
 * each doubling cleared its new half and copied the old: cc1plus's trace,
 * whose 67 240 stacks have ids past 524 288, cleared all of a 4 MiB index
 * in the heap and copied 2 MiB into it (4.1 M instructions; 4 MiB of
 * malloc's peak, docs/benchmarks.md, "The analysis's fixed cost and
 * memory (session 40)"). */
static uint32_t *dense_slot(an_proc *p, uint32_t stack_id)
{
    if (stack_id < p->ndense)
        return &p->dense[stack_id];
    if (stack_id >= AN_DENSE_STACKS + 8 * (uint64_t)p->nstacks)
        return NULL;
    size_t old = p->ndense;
    if (ltr_table_reserve((void **)&p->dense, &p->ndense, stack_id, sizeof *p->dense, 256) != 0)
        return NULL;
    /* a mapping's growth is zero already (prim.h: the index is never cut) */
    if (p->ndense * sizeof *p->dense <= LTR_TABLE_MAPPED)
        memset(p->dense + old, 0, (p->ndense - old) * sizeof *p->dense);
    return &p->dense[stack_id];
}

/* The index of its stacks again, for an event of an ended process that
 * came late; -1 without memory. */
static int reindex(an_proc *p)
{
    p->unindexed = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        uint32_t *dense = dense_slot(p, p->stacks[i].stack_id);
        an_index *ix = dense ? NULL : an_hmap_put(&p->stack_index, p->stacks[i].stack_id, NULL);
        if (!dense && !ix)
            return p->unindexed = 1, -1;
        if (dense)
            *dense = (uint32_t)i + 1;
        else
            ix->index = (uint32_t)i;
    }
    return 0;
}

/* stack_of for an id not in the dense index yet, or beyond it. */
static int64_t stack_slow(an_proc *p, uint32_t stack_id, uint64_t ts)
{
    if (p->unindexed && reindex(p) != 0)
        return -1;
    uint32_t *dense = dense_slot(p, stack_id);
    if (dense && *dense)
        return *dense - 1;
    const an_index *seen = dense && p->stack_index.n ? an_hmap_get(&p->stack_index, stack_id) : NULL;
    if (seen) /* met when its id was still too large for the dense index */
        return *dense = seen->index + 1, seen->index;
    int created = 1;
    an_index *ix = dense ? NULL : an_hmap_put(&p->stack_index, stack_id, &created);
    if (!dense && !ix)
        return -1;
    if (!created)
        return ix->index;
    if (p->nstacks == MAX_STACKS) {
        if (ix)
            an_hmap_del(&p->stack_index, stack_id);
        return -1;
    }
    /* called only when full: bench/heap's trace makes a stack for every
     * other allocation, and each call was 39 instructions (callgrind) */
    if (p->nstacks >= p->capstacks &&
        ltr_table_reserve((void **)&p->stacks, &p->capstacks, p->nstacks, sizeof *p->stacks, 64) != 0) {
        if (ix)
            an_hmap_del(&p->stack_index, stack_id);
        return -1;
    }
    an_stack *s = &p->stacks[p->nstacks];
    memset(s, 0, sizeof *s);
    s->pid = p->pid;
    s->key = p->image_key ? p->image_key : p->pid;
    s->stack_id = stack_id;
    s->first_ts = ts;
    if (ix)
        ix->index = (uint32_t)p->nstacks;
    else
        *dense = (uint32_t)p->nstacks + 1;
    return (int64_t)p->nstacks++;
}

/* Index of the stack entry of stack_id, created at its first use; -1 without memory. */
HOT int64_t stack_of(an_proc *p, uint32_t stack_id, uint64_t ts)
{
    if (stack_id < p->ndense && p->dense[stack_id])
        return p->dense[stack_id] - 1;
    return stack_slow(p, stack_id, ts);
}

static void add_type(an_proc *p, an_stack *s, enum an_type t, uint64_t size)
{
    s->type[t].count++;
    s->type[t].bytes += size;
    p->type[t].count++;
    p->type[t].bytes += size;
}

static void sub_type(an_proc *p, an_stack *s, enum an_type t, uint64_t size)
{
    s->type[t].count--;
    s->type[t].bytes -= size;
    p->type[t].count--;
    p->type[t].bytes -= size;
}

/* whole: the window is the whole trace (a constant where it is inlined). */
HOT int in_window(const an_model *m, uint64_t ts, int whole) { return whole || (ts >= m->from && ts <= m->to); }
HOT int after_window(const an_model *m, uint64_t ts, int whole) { return !whole && ts > m->to; }

/* p's time is over (an event of a later one came, it settled its events
 * held back, or it ended): the end of its peak's time if that
 * (an_proc.peak_time_end_bytes). Once a time, not on every event: 0.5 %
 * of the analysis's instructions on every free and allocation. */
static void peak_time_over(an_proc *p, uint64_t ts)
{
    if (ts == p->peak_ts)
        p->peak_time_end_bytes = p->cur_bytes;
}

static void note_peak(an_model *m, an_proc *p, uint64_t ts)
{
    if (!p->peak_set || p->cur_bytes > p->peak_bytes) {
        p->peak_bytes = p->cur_bytes;
        p->peak_ts = ts;
        p->peak_set = 1;
        if (ts < p->last_ts) /* a late event's: its time is over already, touch will not come back to it */
            p->peak_time_end_bytes = p->cur_bytes;
    }
    if (!m->peak_set || m->cur_bytes > m->peak_bytes) {
        m->peak_bytes = m->cur_bytes;
        m->peak_ts = ts;
        m->peak_set = 1;
    }
}

static void touch(an_proc *p, uint64_t ts)
{
    if (!p->first_ts || ts < p->first_ts)
        p->first_ts = ts;
    if (ts > p->last_ts) {
        peak_time_over(p, p->last_ts);
        p->last_ts = ts;
    }
}

/* thread_of when the thread is not the one of the last event. */
static an_thread *thread_slow(an_model *m, an_proc *p, uint32_t tid)
{
    an_thread *t = an_hmap_put_sized(&p->threads, tid, NULL, sizeof *t);
    if (!t)
        m->oom = 1;
    p->last_tid = tid;
    p->last_thread = t; /* only this function puts into threads, so t stays valid until it moves on */
    return t;
}

/* The thread's last allocation, which the next event of the thread replaces. */
HOT an_thread *thread_of(an_model *m, an_proc *p, uint32_t tid)
{
    if (p->last_thread && p->last_tid == tid)
        return p->last_thread; /* events come in runs of one thread (buffer blocks) */
    return thread_slow(m, p, tid);
}

/* The thread's event (t NULL: without memory): an allocation of size at
 * live stack (an_live.stack), of which one before the window is none. */
HOT void thread_alloc(an_thread *t, uint64_t size, uint32_t live_stack)
{
    if (!t)
        return;
    t->size = size;
    t->stack = live_stack & LIVE_INSIDE ? live_stack : 0;
}

/* A free, of t's thread (t NULL: without memory). */
HOT void thread_free(an_thread *t)
{
    if (t)
        t->stack = 0;
}

/* Whether a free of b (of b_size bytes) is a temporary, its thread's event
 * before it an allocation of size at stack (an_thread's). */
HOT int is_temporary(uint64_t size, uint32_t stack, const an_live *b, uint64_t b_size)
{
    return stack && stack == b->stack && size == b_size;
}

/* Counts a block that an allocation inside the window created. */
HOT void count_call(an_model *m, an_proc *p, an_stack *s, uint64_t ts, uint64_t size, int whole)
{
    if (!in_window(m, ts, whole))
        return;
    p->allocs++;
    p->alloc_bytes += size;
    p->hist[hist_bucket(size)]++;
    s->calls.count++;
    s->calls.bytes += size;
}

#define SERIES_FIRST_WIDTH 1000000ull /* 1 ms: the series' and the cells' first width */

/* ---- cells (an_cell): each stack's blocks by allocation and free time ---- */

static uint32_t cell_index(const an_model *m, uint64_t ts)
{
    return ts <= m->cell_base ? 0 : (uint32_t)((ts - m->cell_base) / m->cell_width);
}

/* A stack's cells: a map of 4 slots at first, since most stacks have one
 * or two cells; at hmap's 64 slots of 24 bytes, the 830 000 stacks of a
 * shell loop's 1762 processes held 1.3 GB of cells (ltr report peaked at
 * 1.8 GB, ltr analyze at 0.4). */
static void cells_init(an_hmap *h)
{
    an_hmap_init(h, sizeof(an_cell));
    h->first = 4;
}

/* Every stack's cells onto a grid twice as wide. */
static void cells_widen(an_model *m)
{
    m->cell_width *= 2;
    for (size_t i = 0; i < m->nprocs; i++)
        for (size_t k = 0; k < m->procs[i]->nstacks; k++) {
            an_hmap *h = m->procs[i]->stacks[k].cells, old;
            if (!h)
                continue;
            old = *h;
            cells_init(h);
            size_t pos = 0;
            an_cell *c;
            while ((c = an_hmap_next(&old, &pos))) {
                uint32_t a = (uint32_t)(c->key >> 32) / 2, f = (uint32_t)c->key;
                int created;
                an_cell *n = an_hmap_put(h, (uint64_t)a << 32 | (f == AN_CELL_NEVER ? f : f / 2), &created);
                if (!n) {
                    m->oom = 1;
                    continue;
                }
                n->count += c->count;
                n->bytes += c->bytes;
            }
            an_hmap_free(&old);
        }
}

/* A block of s, allocated at alloc_ts, freed at free_ts (0: not in the window). */
static void cell_add(an_model *m, an_stack *s, uint64_t alloc_ts, uint64_t free_ts, uint64_t size)
{
    if (!m->cell_width)
        m->cell_width = SERIES_FIRST_WIDTH;
    uint64_t last = free_ts > alloc_ts ? free_ts : alloc_ts;
    while (cell_index(m, last) >= AN_CELLS)
        cells_widen(m);
    if (!s->cells && !(s->cells = calloc(1, sizeof *s->cells))) {
        m->oom = 1;
        return;
    }
    if (!s->cells->esize)
        cells_init(s->cells);
    uint32_t f = free_ts ? cell_index(m, free_ts) : AN_CELL_NEVER;
    int created;
    an_cell *c = an_hmap_put(s->cells, (uint64_t)cell_index(m, alloc_ts) << 32 | f, &created);
    if (!c) {
        m->oom = 1;
        return;
    }
    c->count++;
    c->bytes += size;
}

/* cell_add taken back (a free taken back, tie_retract). */
static void cell_sub(an_model *m, an_stack *s, uint64_t alloc_ts, uint64_t free_ts, uint64_t size)
{
    uint64_t key = (uint64_t)cell_index(m, alloc_ts) << 32 | (free_ts ? cell_index(m, free_ts) : AN_CELL_NEVER);
    an_cell *c = s->cells ? an_hmap_get(s->cells, key) : NULL;
    if (!c)
        return;
    c->bytes -= size;
    if (--c->count == 0)
        an_hmap_del(s->cells, key);
}

/* A block allocated at ts inside the window and outstanding at its end:
 * the time span of such blocks tells a steady leak from a one-time
 * allocation (docs/analysis.md, "Growth"). */
static void note_held(an_stack *s, uint64_t ts)
{
    if (!s->held_first || ts < s->held_first)
        s->held_first = ts;
    if (ts > s->held_last)
        s->held_last = ts;
}

/* A block ends at free_ts: its impacting type, if the window cares (ai: it
 * was allocated inside the window, at alloc_ts). Returns whether it ended
 * inside the window. */
HOT int end_block(an_model *m, an_proc *p, an_stack *s, int ai, uint64_t alloc_ts, uint64_t free_ts,
                  uint64_t size, int whole)
{
    if (after_window(m, free_ts, whole)) {
        add_type(p, s, ai ? AN_AIFO : AN_AOFO, size);
        if (ai)
            note_held(s, alloc_ts);
        if (m->series)
            cell_add(m, s, alloc_ts, 0, size);
    } else if (whole || free_ts >= m->from) {
        add_type(p, s, ai ? AN_AIFI : AN_AOFI, size);
        p->frees++;
        if (m->series)
            cell_add(m, s, alloc_ts, free_ts, size);
        return 1;
    }
    return 0;
}

/* One of the stack's own blocks, allocated at born, freed at ts inside the
 * window (an_stack.freed). */
HOT void note_freed(an_stack *s, uint64_t born, uint64_t ts, uint64_t size)
{
    s->freed.count++;
    s->freed.bytes += size;
    if (born > s->freed_born_last)
        s->freed_born_last = born;
    if (ts > s->freed_last)
        s->freed_last = ts;
}

/* A free of a block the model held (about to leave the live map, or to be
 * overwritten there) of size bytes: ends it, temporary or not (a realloc
 * that grows a block is not churn: is_realloc). */
HOT void end_freed(an_model *m, an_proc *p, const an_live *b, uint64_t size, uint64_t ts, int is_realloc,
                   int temporary, int whole)
{
    an_stack *s = &p->stacks[b->stack & ~LIVE_INSIDE];
    int ai = (b->stack & LIVE_INSIDE) != 0; /* also: allocated inside the window, since not after it */
    s->temporary += (uint64_t)temporary;
    /* a window that begins after blocks were allocated has its peak at the
     * first event in it; over the whole trace each allocation noted it
     * already, and nothing since raised the outstanding bytes above it */
    if (!whole && in_window(m, ts, 0))
        note_peak(m, p, ts);
    if (end_block(m, p, s, ai, b->ts, ts, size, whole) && !is_realloc && !temporary)
        note_freed(s, b->ts, ts, size);
    p->cur_bytes -= size;
    p->cur_count--;
    m->cur_bytes -= size;
}

/* end_freed taken back (tie_retract): the block is outstanding again. A
 * block freed after the window keeps its note_held (it is outstanding at
 * the window's end whichever free ends it), and its stack's freed times
 * (an_stack.freed_*) stay: the free taken back comes again at that time
 * unless its block stays live to the end. */
static void unend_freed(an_model *m, an_proc *p, const an_live *b, uint64_t size, uint64_t ts, int is_realloc,
                        int temporary)
{
    an_stack *s = &p->stacks[b->stack & ~LIVE_INSIDE];
    int ai = (b->stack & LIVE_INSIDE) != 0;
    s->temporary -= (uint64_t)temporary;
    if (after_window(m, ts, 0)) {
        sub_type(p, s, ai ? AN_AIFO : AN_AOFO, size);
        if (m->series)
            cell_sub(m, s, b->ts, 0, size);
    } else if (ts >= m->from) {
        sub_type(p, s, ai ? AN_AIFI : AN_AOFI, size);
        p->frees--;
        if (m->series)
            cell_sub(m, s, b->ts, ts, size);
        if (!is_realloc && !temporary) {
            s->freed.count--;
            s->freed.bytes -= size;
        }
    }
    p->cur_bytes += size;
    p->cur_count++;
    m->cur_bytes += size;
}

static void keep_pending(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr)
{
    int created;
    an_pending *f = an_hmap_put(&p->pending, addr, &created);
    if (!f) {
        m->oom = 1;
        return;
    }
    /* frees of one address at one time, ahead of their allocations (the
     * freeing thread's run handed on first: the other allocates it again
     * and again within that time, each time it was freed), each wait for
     * theirs; one at another time is of a block never seen */
    if (!created && f->ts != ts) {
        if (in_window(m, f->ts, 0))
            p->unseen_frees += f->count;
        f->count = 0;
    }
    f->ts = ts;
    f->tid = tid;
    f->count++;
}

/* A block put at its address: outstanding from ts (stack: an_live.stack). */
HOT void hold_block(an_model *m, an_proc *p, an_live *b, uint64_t size, uint32_t stack, uint32_t tid, uint64_t ts)
{
    if (an_lives_set_size(&p->live, b, size) != 0 || an_lives_set_tid(&p->live, b, tid) != 0)
        m->oom = 1; /* its size or thread may be off: the analysis says it ran out of memory */
    b->stack = stack;
    b->ts = ts;
    p->cur_bytes += size;
    p->cur_count++;
    m->cur_bytes += size;
    if (stack & LIVE_INSIDE) /* in the window: not after it */
        note_peak(m, p, ts);
}

/* An allocation over the live block b, whose free the trace lacks
 * (implicit_frees): b ends there. */
static void alloc_over(an_model *m, an_proc *p, an_live *b, uint64_t size, uint32_t stack, uint32_t tid, uint64_t ts)
{
    an_live old = *b;
    end_freed(m, p, &old, an_lives_size(&p->live, b), ts, 1, 0, 0);
    p->implicit_frees++;
    hold_block(m, p, b, size, stack, tid, ts);
}

/* ---- ties (model.c's header, ties.h): an address's events at one time held back ---- */

/* Whether another thread's events at ts may come (the thread of the event
 * at ts counted in p->threads): a process of one thread has its events in
 * its order, and holding them back would only move its peak within ts;
 * but at its first time, threads that each came with an event of it then
 * (a trace that starts mid-stream) may not all be counted yet. */
HOT int many_threads(const an_proc *p, uint64_t ts) { return p->threads.n > 1 || ts == p->first_ts; }

/* Room for one more event held back; NULL without memory. */
static an_tie_op *tie_room(an_model *m, an_proc *p)
{
    if (ltr_reserve((void **)&p->tie_ops, &p->captied, p->tied, sizeof *p->tie_ops, 16) != 0) {
        m->oom = 1;
        return NULL;
    }
    return &p->tie_ops[p->tied];
}

/* Holds back an event of thread tid (rank: its address's), which then is
 * its thread's last as if modelled: a free keeps its thread's allocation
 * just before, to tell whether the block it ends is a temporary. */
static void tie_put(an_model *m, an_proc *p, uint32_t rank, uint32_t tid, uint64_t addr, uint64_t size,
                    uint32_t stack, int alloc, int is_realloc)
{
    an_tie_op *op = tie_room(m, p);
    if (!op)
        return;
    an_thread *t = thread_of(m, p, tid);
    if (!alloc && t) {
        size = t->size;
        stack = t->stack;
    }
    *op = (an_tie_op){.addr = addr, .size = size, .tid = tid, .stack = stack, .rank = rank,
                      .alloc = (uint8_t)alloc, .realloc = (uint8_t)is_realloc};
    p->tied++;
    if (alloc)
        thread_alloc(t, size, stack);
    else
        thread_free(t);
}

/* addr's events at ts are held back from now on: its rank among the
 * addresses held back, or -1 without memory. */
static int64_t tie_contest(an_model *m, an_proc *p, uint64_t addr, uint64_t ts)
{
    int created;
    an_contest *c = an_hmap_put(&p->contested, addr, &created);
    if (!c) {
        m->oom = 1;
        return -1;
    }
    if (created)
        c->rank = (uint32_t)p->contested.n - 1;
    p->tie_ts = ts; /* the first one's, or the same: tie_hold settles those of another time first */
    return c->rank;
}

/* A held-back event in the order found: a free that finds no block waits
 * for a late allocation, or is of a block never seen (keep_pending); an
 * allocation over a block ends it, its free missing (implicit_frees). */
static void tie_apply(an_model *m, an_proc *p, const an_tie_op *op)
{
    uint64_t ts = p->tie_ts;
    if (!op->alloc) {
        uint32_t *slot = an_lives_find(&p->live, op->addr);
        if (!slot) {
            if (!after_window(m, ts, 0))
                keep_pending(m, p, op->tid, ts, op->addr);
            return;
        }
        const an_live *b = an_lives_at(&p->live, slot);
        uint64_t size = an_lives_size(&p->live, b);
        end_freed(m, p, b, size, ts, op->realloc, is_temporary(op->size, op->stack, b, size), 0);
        an_lives_remove(&p->live, slot);
        return;
    }
    int created;
    an_live *b = an_lives_put(&p->live, op->addr, &created);
    if (!b) {
        m->oom = 1;
        return;
    }
    if (!created)
        alloc_over(m, p, b, op->size, op->stack, op->tid, ts);
    else
        hold_block(m, p, b, op->size, op->stack, op->tid, ts);
}

/* One address's held-back events (ops idx[0..n), in the order met): in an
 * order of its threads' that alternates from what the address holds now
 * (ties.h), or as met when one thread's or without memory. steps and
 * order: room for n. */
static void tie_settle_address(an_model *m, an_proc *p, const uint32_t *idx, size_t n, an_tie_step *steps,
                               uint32_t *order)
{
    const an_tie_op *ops = p->tie_ops;
    int one = 1; /* one thread's: in its order */
    for (size_t i = 0; i < n; i++) {
        steps[i] = (an_tie_step){.thread = ops[idx[i]].tid, .alloc = ops[idx[i]].alloc};
        one &= steps[i].thread == steps[0].thread;
    }
    int live = an_lives_find(&p->live, ops[idx[0]].addr) != NULL;
    if (one || an_ties_order(steps, n, live, order, NULL) < 0)
        for (size_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
    for (size_t i = 0; i < n; i++)
        tie_apply(m, p, &ops[idx[order[i]]]);
}

/* Every event held back goes into the model, each address's in an order
 * that alternates; the addresses in the order they were held back. */
static void tie_settle(an_model *m, an_proc *p)
{
    size_t n = p->tied, naddr = p->contested.n;
    uint32_t *idx = malloc((2 * n + naddr + 1) * sizeof *idx);
    an_tie_step *steps = malloc(n * sizeof *steps);
    if (!idx || !steps) { /* as met */
        m->oom = 1;
        for (size_t i = 0; i < n; i++)
            tie_apply(m, p, &p->tie_ops[i]);
    } else {
        uint32_t *order = idx + n, *at = order + n; /* at: where each rank's events start */
        memset(at, 0, (naddr + 1) * sizeof *at);
        for (size_t i = 0; i < n; i++)
            at[p->tie_ops[i].rank + 1]++;
        for (size_t r = 0; r < naddr; r++)
            at[r + 1] += at[r];
        for (size_t i = 0; i < n; i++) /* by rank, each rank's in the order met */
            idx[at[p->tie_ops[i].rank]++] = (uint32_t)i;
        for (size_t r = 0, from = 0; r < naddr; from = at[r++])
            if (at[r] > from) {
                tie_settle_address(m, p, idx + from, at[r] - from, steps, order);
                an_hmap_del(&p->contested, p->tie_ops[idx[from]].addr);
            }
    }
    free(idx);
    free(steps);
    p->tied = 0;
    peak_time_over(p, p->tie_ts); /* its events came after the time's end was taken (touch) */
    if (p->contested.n) { /* without memory above, or an address held back with no event (no memory either) */
        an_hmap_free(&p->contested);
        an_hmap_init(&p->contested, sizeof(an_contest));
    }
}

/* An event of p at ts while events are held back: those settle first
 * when ts is another time; 1 when it is held back too (its address's are). */
static int tie_hold(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr, uint64_t size,
                    uint32_t stack, int alloc, int is_realloc)
{
    if (ts != p->tie_ts || p->tied >= TIE_HOLD_MAX) {
        tie_settle(m, p);
        return 0;
    }
    const an_contest *c = an_hmap_get(&p->contested, addr);
    if (!c)
        return 0;
    tie_put(m, p, c->rank, tid, addr, size, stack, alloc, is_realloc);
    return 1;
}

/* What the ties kept of a process whose events are settled (its end):
 * as large as its most events of one time (up to AN_FREED_MAX frees kept
 * and AN_TIES_HOLD held back), so kept, 2 000 ended processes of two
 * threads that freed 3 000 blocks at one time held 600 MB, the live set
 * nothing. A frees' list of another time is never read (freed_before). */
static void tie_release(an_proc *p)
{
    free(p->tie_ops);
    p->tie_ops = NULL;
    p->tied = p->captied = 0;
    an_hmap_free(&p->contested);
    free(p->freed_at);
    free(p->freed_ix);
    p->freed_at = NULL;
    p->freed_ix = NULL;
    p->nfreed_at = p->capfreed_at = p->capfreed_ix = 0;
    p->freed_ts = 0;
    p->freed_epoch = 0;
}

/* addr's slot in the index of the frees kept: its entry of this time, or
 * the one where it goes. */
HOT an_freed_ix *freed_slot(const an_proc *p, uint64_t addr)
{
    size_t mask = p->capfreed_ix - 1;
    size_t i = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 32) & mask;
    while (p->freed_ix[i].epoch == p->freed_epoch && p->freed_ix[i].addr != addr)
        i = (i + 1) & mask;
    return &p->freed_ix[i];
}

/* Room for one more free kept: the index twice as large (the frees kept
 * at this time put in again) and the list grown, up to FREED_MAX; -1 past
 * it or without memory. */
static int freed_grow(an_proc *p)
{
    if (p->nfreed_at >= FREED_MAX)
        return -1;
    if ((p->nfreed_at + 1) * 2 > p->capfreed_ix) {
        size_t cap = p->capfreed_ix ? 2 * p->capfreed_ix : 256;
        an_freed_ix *ix = calloc(cap, sizeof *ix);
        if (!ix)
            return -1;
        free(p->freed_ix);
        p->freed_ix = ix;
        p->capfreed_ix = cap;
        for (size_t i = 0; i < p->nfreed_at; i++)
            *freed_slot(p, p->freed_at[i].block.addr) =
                (an_freed_ix){.addr = p->freed_at[i].block.addr, .at = (uint32_t)i, .epoch = p->freed_epoch};
    }
    if (p->nfreed_at == p->capfreed_at)
        return ltr_reserve((void **)&p->freed_at, &p->capfreed_at, p->nfreed_at, sizeof *p->freed_at, 64);
    return 0;
}

/* A free of thread tid at ts about to end block b, kept for tie_retract
 * while ts lasts (past FREED_MAX or without memory it is not: a tie there
 * then settles from what the model holds). On every free of a process of
 * threads that share times (bench/heap's), so inline and without a look
 * of its thread of its own. */
HOT void note_freed_at(an_proc *p, const an_live *b, uint64_t size, uint32_t tid, uint64_t ts, int is_realloc,
                       int temporary)
{
    if (ts != p->freed_ts || !p->freed_epoch) {
        p->nfreed_at = 0;
        p->freed_ts = ts;
        if (++p->freed_epoch == 0 && p->freed_ix) { /* wrapped: every entry is of another time */
            memset(p->freed_ix, 0, p->capfreed_ix * sizeof *p->freed_ix);
            p->freed_epoch = 1;
        }
    }
    if (((p->nfreed_at + 1) * 2 > p->capfreed_ix || p->nfreed_at == p->capfreed_at) && freed_grow(p) != 0)
        return;
    an_freed_ix *x = freed_slot(p, b->addr);
    an_freed_at *f = &p->freed_at[p->nfreed_at];
    f->block = *b;
    f->size = size;
    f->block_tid = an_lives_tid(&p->live, b);
    f->tid = tid;
    f->prev = x->epoch == p->freed_epoch ? x->at : UINT32_MAX;
    f->realloc = (uint8_t)is_realloc;
    f->temporary = (uint8_t)temporary;
    *x = (an_freed_ix){.addr = b->addr, .at = (uint32_t)p->nfreed_at++, .epoch = p->freed_epoch};
}

/* The last free of addr kept at ts before `after` (NULL: the last of all),
 * or NULL; one taken back already is not. */
static an_freed_at *freed_before(an_proc *p, uint64_t addr, uint64_t ts, const an_freed_at *after)
{
    uint32_t i = UINT32_MAX;
    if (after)
        i = after->prev;
    else if (p->freed_ts == ts && p->freed_ix) {
        const an_freed_ix *x = freed_slot(p, addr);
        i = x->epoch == p->freed_epoch ? x->at : UINT32_MAX;
    }
    return i < p->nfreed_at && p->freed_at[i].block.addr == addr ? &p->freed_at[i] : NULL;
}

/* An event held back again by tie_retract (n: those already). */
static void tie_unput(an_model *m, an_proc *p, const an_tie_op *op, size_t *n)
{
    an_tie_op *to = tie_room(m, p);
    if (!to)
        return;
    *to = *op;
    p->tied++;
    (*n)++;
}

/* addr's events at ts modelled so far held back again (rank: its
 * address's), and what they did undone: the time order may have put them
 * before another thread's events of the address at ts that came first
 * (its free and allocation of the address, strerror's message in threads
 * that follow each other; a free of the block there before, the other
 * thread's free then finding nothing). From the block live there, back
 * through the frees at ts (an_proc.freed_at) and the blocks they ended,
 * to a block from before ts or none. */
static void tie_retract(an_model *m, an_proc *p, uint64_t addr, uint64_t ts, uint32_t rank)
{
    uint32_t *slot = an_lives_find(&p->live, addr);
    size_t n = 0, first = p->tied;
    an_freed_at *f = NULL;
    for (;;) {
        an_live *b = slot ? an_lives_at(&p->live, slot) : NULL;
        if (b && b->ts != ts)
            break; /* live since before ts: nothing of the address at ts before */
        if (b) { /* its allocation, at ts */
            uint64_t size = an_lives_size(&p->live, b);
            tie_unput(m, p, &(an_tie_op){.addr = addr, .size = size, .tid = an_lives_tid(&p->live, b),
                                         .stack = b->stack, .rank = rank, .alloc = 1}, &n);
            p->cur_bytes -= size;
            p->cur_count--;
            m->cur_bytes -= size;
            an_lives_remove(&p->live, slot);
        }
        f = freed_before(p, addr, ts, f);
        int created;
        an_live *back = f ? an_lives_put(&p->live, addr, &created) : NULL;
        if (!back)
            break;
        *back = (an_live){.addr = addr, .ts = f->block.ts, .stack = f->block.stack};
        if (an_lives_set_size(&p->live, back, f->size) != 0 || an_lives_set_tid(&p->live, back, f->block_tid) != 0)
            m->oom = 1;
        unend_freed(m, p, back, f->size, ts, f->realloc, f->temporary);
        tie_unput(m, p, &(an_tie_op){.addr = addr, .tid = f->tid, .rank = rank, .realloc = f->realloc,
                                     .size = f->temporary ? f->size : 0, /* its thread's allocation before, */
                                     .stack = f->temporary ? f->block.stack : 0}, &n); /* as far as it told */
        f->block.addr = 0;
        slot = an_lives_find(&p->live, addr);
    }
    for (size_t i = 0; i < n / 2; i++) { /* met last first: in the order met */
        an_tie_op x = p->tie_ops[first + i];
        p->tie_ops[first + i] = p->tie_ops[first + n - 1 - i];
        p->tie_ops[first + n - 1 - i] = x;
    }
}

/* An event at ts that does not alternate with what the model holds at
 * addr (a free finding no block, an allocation over one): the address's
 * events at ts are held back from here, with those tie_retract takes back. */
static void tie_begin(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr, uint64_t size,
                      uint32_t stack, int alloc, int is_realloc)
{
    int64_t rank = tie_contest(m, p, addr, ts);
    if (rank < 0)
        return;
    tie_retract(m, p, addr, ts, (uint32_t)rank);
    tie_put(m, p, (uint32_t)rank, tid, addr, size, stack, alloc, is_realloc);
}

/* A free (or the free half of a realloc) in process p. */
HOT void free_in(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr, int is_realloc,
                 int whole)
{
    touch(p, ts);
    if (p->contested.n && tie_hold(m, p, tid, ts, addr, 0, 0, 0, is_realloc))
        return;
    uint32_t *slot = an_lives_find(&p->live, addr);
    if (slot) { /* read in place: end_freed touches no live block (a copy was 4 % of the model's instructions) */
        const an_live *b = an_lives_at(&p->live, slot);
        uint64_t size = an_lives_size(&p->live, b);
        an_thread *t = thread_of(m, p, tid);
        int temporary = t && is_temporary(t->size, t->stack, b, size);
        thread_free(t);
        if (many_threads(p, ts)) /* tie_retract may take it back */
            note_freed_at(p, b, size, tid, ts, is_realloc, temporary);
        end_freed(m, p, b, size, ts, is_realloc, temporary, whole);
        an_lives_remove(&p->live, slot);
        return;
    }
    thread_of(m, p, tid); /* counted (many_threads); its last allocation stays: a block never seen is no event
                             of the temporaries' order (model.c's header) */
    if (after_window(m, ts, whole))
        ;
    else if (many_threads(p, ts)) /* another thread's allocation at ts may still come */
        tie_begin(m, p, tid, ts, addr, 0, 0, 0, is_realloc);
    else /* one thread's events are in its order: a block never seen, or one late */
        keep_pending(m, p, tid, ts, addr);
}

static void free_block(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr, int is_realloc)
{
    an_proc *p = proc_of(m, pid, tid, ts);
    if (!p) {
        m->oom = 1;
        return;
    }
    free_in(m, p, tid, ts, addr, is_realloc, 0);
}

void an_model_free_block(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr)
{
    free_block(m, pid, tid, ts, addr, 0);
}

/* An allocation whose free was already met (its event came late). A free
 * of the allocating thread's own at that time came before it (one
 * thread's events at one time are in its order, order.c): it was of a
 * block never seen, and this one took its address (a flight recorder's
 * save of a cache that frees its oldest entry and allocates the next
 * within 100 us: every entry was said freed at once, AIFI, and the cache
 * held nothing). */
static int pair_pending(an_model *m, an_proc *p, an_stack *s, uint32_t tid, uint64_t ts, uint64_t addr,
                        uint64_t size)
{
    an_pending *f = an_hmap_get(&p->pending, addr);
    if (!f || f->ts < ts || (f->ts == ts && f->tid == tid))
        return 0;
    uint64_t free_ts = f->ts;
    if (--f->count == 0)
        an_hmap_del(&p->pending, addr);
    end_block(m, p, s, ts >= m->from, ts, free_ts, size, 0);
    return 1;
}

/* An allocation (or the allocation half of a realloc) in process p. */
HOT void alloc_in(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr, uint64_t size,
                  uint32_t stack, int whole)
{
    touch(p, ts);
    if (after_window(m, ts, whole))
        return;
    int64_t si = stack_of(p, stack, ts);
    if (si < 0) {
        m->oom = 1;
        return;
    }
    an_stack *s = &p->stacks[si];
    uint32_t live_stack = (uint32_t)si | (whole || ts >= m->from ? LIVE_INSIDE : 0);
    count_call(m, p, s, ts, size, whole);
    if (p->contested.n && tie_hold(m, p, tid, ts, addr, size, live_stack, 1, 0))
        return;
    if (p->pending.n && pair_pending(m, p, s, tid, ts, addr, size)) {
        /* the thread's last allocation is no longer the one before: a free of
         * that one next is no temporary (and this block's free came first) */
        thread_free(thread_of(m, p, tid));
        return;
    }
    int created;
    an_live *b = an_lives_put(&p->live, addr, &created);
    if (!b) {
        m->oom = 1;
        return;
    }
    if (!created && (thread_of(m, p, tid), many_threads(p, ts))) { /* its free may come at ts from another thread */
        tie_begin(m, p, tid, ts, addr, size, live_stack, 1, 0);
        return;
    }
    if (!created)
        alloc_over(m, p, b, size, live_stack, tid, ts);
    else
        hold_block(m, p, b, size, live_stack, tid, ts);
    thread_alloc(thread_of(m, p, tid), size, live_stack);
}

void an_model_alloc(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t addr,
                    uint64_t size, uint32_t stack)
{
    an_proc *p = proc_of(m, pid, tid, ts);
    if (!p) {
        m->oom = 1;
        return;
    }
    alloc_in(m, p, tid, ts, addr, size, stack, 0);
}

void an_model_realloc(an_model *m, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t old_addr,
                      uint64_t addr, uint64_t size, uint32_t stack)
{
    free_block(m, pid, tid, ts, old_addr, 1);
    an_model_alloc(m, pid, tid, ts, addr, size, stack);
}

/* Events: a memory latency of work at a few ns each. perl's leak, an
 * allocation an event, a new slot of a 16 MiB index each, found 8 too
 * near: 16 took 0.96 of its analysis's CPU time, 32 0.96 of that
 * (cc1plus's and bench/heap's, their tables in the cache, unchanged). */
#define AN_PREFETCH_AHEAD 32

/* Inlined early (HOT): as plain static inline functions GCC 12 took them
 * for functions without side effects and dropped their calls, and with them
 * every prefetch (tests/build/check-prefetch.sh). With them back, perl's
 * leak of 2 M blocks: 0.78 of the analysis's CPU time. */
HOT void prefetch_event(an_lives_ahead a, const an_event *e)
{
    an_lives_prefetch_ahead(a, e->addr);
    if (e->op == AN_OP_REALLOC)
        an_lives_prefetch_ahead(a, e->old_addr);
}

/* The series of outstanding bytes (an_point): a new bucket when ts passes the
 * last one's end; at AN_SERIES_MAX buckets, widths double and neighbours
 * merge (their highest), so a process keeps at most that many points
 * however long the trace. */

static void series_merge(an_proc *p)
{
    uint64_t w = p->series_width * 2;
    size_t o = 0;
    for (size_t i = 0; i < p->nseries; i++) {
        uint64_t start = p->series[i].ts - p->series[i].ts % w;
        if (o && p->series[o - 1].ts == start) {
            if (p->series[i].bytes > p->series[o - 1].bytes)
                p->series[o - 1].bytes = p->series[i].bytes;
        } else {
            p->series[o++] = (an_point){start, p->series[i].bytes};
        }
    }
    p->nseries = o;
    p->series_width = w;
    p->series_end = p->series[o - 1].ts + w;
}

static void series_note(an_model *m, an_proc *p, uint64_t ts)
{
    if (p->nseries && ts < p->series_end) {
        if (p->cur_bytes > p->series[p->nseries - 1].bytes)
            p->series[p->nseries - 1].bytes = p->cur_bytes;
        return;
    }
    if (!p->series) {
        p->series = malloc(AN_SERIES_MAX * sizeof *p->series);
        p->series_width = SERIES_FIRST_WIDTH;
        if (!p->series) {
            m->oom = 1;
            m->series = 0;
            return;
        }
    }
    while (p->nseries == AN_SERIES_MAX || (p->nseries && ts - p->series[0].ts >= AN_SERIES_MAX * p->series_width))
        series_merge(p);
    uint64_t start = ts - ts % p->series_width;
    p->series[p->nseries++] = (an_point){start, p->cur_bytes};
    p->series_end = start + p->series_width;
}

/* One event of the batch loop; series: whether the model keeps one, which
 * it returns (0 once it had no memory). */
HOT int feed_event(an_model *m, an_proc *p, uint32_t tid, const an_event *e, int whole, int series)
{
    switch (e->op) {
    case AN_OP_ALLOC: alloc_in(m, p, tid, e->ts, e->addr, e->size, e->stack, whole); break;
    case AN_OP_FREE: free_in(m, p, tid, e->ts, e->addr, 0, whole); break;
    default:
        free_in(m, p, tid, e->ts, e->old_addr, 1, whole);
        alloc_in(m, p, tid, e->ts, e->addr, e->size, e->stack, whole);
        break;
    }
    if (!series)
        return 0;
    series_note(m, p, e->ts);
    return m->series;
}

/* The batch loop, inlined twice: whole is a constant in each. The events
 * with one AN_PREFETCH_AHEAD after them, then the last ones, so that no
 * event asks whether it has one: real's analysis 1 859.0 -> 1 839.5 M
 * instructions (cachegrind, session 39). */
HOT void feed_run(an_model *m, an_proc *p, uint32_t tid, const an_event *ev, size_t n, int whole)
{
    an_lives_ahead a = an_lives_ahead_of(&p->live);
    for (size_t i = 0; i < n && i < AN_PREFETCH_AHEAD; i++)
        prefetch_event(a, &ev[i]);
    int series = m->series; /* in a register: the stores of the events' work might be it */
    const an_event *e = ev, *end = ev + n;
    /* by pointer, not index: the compiler kept both, the index in memory */
    for (const an_event *last = n > AN_PREFETCH_AHEAD ? end - AN_PREFETCH_AHEAD : ev; e < last; e++) {
        prefetch_event(a, e + AN_PREFETCH_AHEAD);
        series = feed_event(m, p, tid, e, whole, series);
    }
    for (; e < end; e++)
        series = feed_event(m, p, tid, e, whole, series);
}

/* Probes come in runs of their own (memory.c commits them as thread 0). They
 * ask about a process without making one: a process with no heap event is
 * not in the heap report. */
/* Mapping and file events go to their models (vmem.h, files.h), in the window of now
 * (the analysis may set it after an_model_init). */
static void vm_feed(an_model *m, uint32_t pid, const an_event *ev, size_t n)
{
    an_vmem *v = &m->vm;
    v->from = m->from;
    v->to = m->to;
    if (!m->files.fds.esize)
        an_files_init(&m->files);
    m->files.from = m->from;
    m->files.to = m->to;
    for (size_t i = 0; i < n; i++) {
        const an_event *e = &ev[i];
        switch (e->op) {
        case AN_OP_VM_MAP: an_vmem_map(v, pid, e->ts, e->addr, e->size, e->stack, (uint32_t)e->old_addr); break;
        case AN_OP_VM_UNMAP: an_vmem_unmap(v, pid, e->ts, e->addr, e->size); break;
        case AN_OP_VM_REMAP_FROM: an_vmem_remap_from(v, pid, e->ts, e->addr, e->size); break;
        case AN_OP_VM_REMAP_TO: an_vmem_remap_to(v, pid, e->ts, e->addr, e->size, e->stack); break;
        case AN_OP_VM_DISCARD: an_vmem_discard(v, pid, e->ts, e->size); break;
        case AN_OP_FILE_OPEN:
            an_files_open(&m->files, pid, e->ts, (int64_t)e->addr, (uint32_t)e->size, e->old_addr);
            break;
        case AN_OP_FILE_CLOSE:
            an_files_close(&m->files, pid, e->ts, (int64_t)e->addr, e->size, e->old_addr, (int)e->stack);
            break;
        default: break;
        }
    }
    m->oom |= v->oom | m->files.oom;
}

static void probe(an_model *m, uint32_t pid, const an_event *ev, size_t n)
{
    an_proc *p = current_of(m, pid);
    for (size_t i = 0; i < n; i++) {
        /* events held back at an earlier time have all come (time order):
         * their bytes are the process's now, though no event of it came
         * since to settle them (a process that idles after a tie) */
        if (p && p->contested.n && p->tie_ts < ev[i].ts)
            tie_settle(m, p);
        if (ltr_reserve((void **)&m->probes, &m->capprobes, m->nprobes, sizeof *m->probes, 64) != 0) {
            m->oom = 1;
            return;
        }
        m->probes[m->nprobes++] = (an_probe){ev[i].addr, p ? p->cur_bytes : 0, p != NULL};
    }
}

/* A process's live blocks into their stacks' and its AIFO and AOFO, as
 * add_type and note_held of each in turn (integer sums, and the process's
 * summed apart: the order does not show), read straight from the live
 * table's array: perl's leak ends with 2 M blocks, and add_type and
 * note_held of each through an_lives_next took 92.8 M instructions (9.3 %
 * of its analysis, cachegrind), all after the model's last batch, which
 * the report waits for; 62.5 M this way (the array's bounds and the
 * stacks in registers: the stores to the stacks might have been them). */
static void held_at_end(an_proc *p)
{
    const an_lives *t = &p->live;
    if (!t->nblocks) /* a process that allocated nothing has no array: NULL + 0 is undefined */
        return;
    const an_live *b = t->blocks, *end = b + t->nblocks;
    an_stack *stacks = p->stacks;
    an_amount in = {0}, out = {0};
    for (; b < end; b++) {
        uint32_t stack = b->stack;
        if (stack == AN_LIVE_FREE)
            continue;
        an_stack *s = &stacks[stack & ~LIVE_INSIDE];
        uint64_t size = an_lives_size(t, b);
        if (stack & LIVE_INSIDE) {
            s->type[AN_AIFO].count++;
            s->type[AN_AIFO].bytes += size;
            in.count++;
            in.bytes += size;
            note_held(s, b->ts);
        } else {
            s->type[AN_AOFO].count++;
            s->type[AN_AOFO].bytes += size;
            out.count++;
            out.bytes += size;
        }
    }
    p->type[AN_AIFO].count += in.count;
    p->type[AN_AIFO].bytes += in.bytes;
    p->type[AN_AOFO].count += out.count;
    p->type[AN_AOFO].bytes += out.bytes;
}

/* A process's blocks still live are outstanding at the window's end
 * (AIFO/AOFO), its frees never paired unseen; its tables go but the
 * live one, which the caller frees or keeps. */
static void proc_finish(an_model *m, an_proc *p)
{
    if (p->contested.n)
        tie_settle(m, p);
    tie_release(p);
    peak_time_over(p, p->last_ts);
    held_at_end(p);
    size_t pos = 0;
    an_live *b;
    while (m->series && (b = an_lives_next(&p->live, &pos)))
        cell_add(m, &p->stacks[b->stack & ~LIVE_INSIDE], b->ts, 0, an_lives_size(&p->live, b));
    an_pending *f;
    pos = 0;
    while ((f = an_hmap_next(&p->pending, &pos)))
        p->unseen_frees += in_window(m, f->ts, 0) ? f->count : 0;
    an_hmap_free(&p->pending);
    an_hmap_free(&p->threads);
    p->last_thread = NULL;
}

void an_model_finish(an_model *m)
{
    for (size_t i = 0; i < m->nprocs; i++)
        proc_finish(m, m->procs[i]);
}

/* The model of the pid's last image met, or NULL. */
static an_proc *current_of(an_model *m, uint32_t pid)
{
    an_proc *p = NULL;
    for (size_t i = 0; i < m->nprocs; i++)
        if (m->procs[i]->pid == pid && (!p || m->procs[i]->gen > p->gen))
            p = m->procs[i];
    return p;
}

/* Ends p's model at ts: what it still holds is outstanding at the window's
 * end, and its tables go; false if an event of it after ts came before
 * (the end came late, its chunk behind those events, or the pid was
 * reused, or the process ran on: its blocks live now are not the ended
 * image's). */
static bool end_model(an_model *m, an_proc *p, uint64_t ts)
{
    if (p->last_ts > ts)
        return false;
    proc_finish(m, p);
    an_lives_free(&p->live);
    /* what only its events to come would use: 134 MiB of the analysis
     * of 7 038 short processes (pyenv's shims); its stacks table cut to
     * its stacks (ltr_table_shrink: a realloc of one that is a mapping of
     * its own crashed on cc1plus's trace) */
    ltr_table_shrink((void **)&p->stacks, &p->capstacks, p->nstacks, sizeof *p->stacks);
    ltr_table_free(p->dense, p->ndense, sizeof *p->dense);
    p->dense = NULL;
    p->ndense = 0;
    an_hmap_free(&p->stack_index);
    p->unindexed = 1;
    m->cur_bytes -= p->cur_bytes <= m->cur_bytes ? p->cur_bytes : m->cur_bytes;
    p->cur_bytes = p->cur_count = 0;
    p->ended = 1;
    p->end_ts = ts;
    return true;
}

/* AN_OP_END: the process ended at ts (the recorder saw its last producer go),
 * all its events before (in time order): what it still held is outstanding
 * at the window's end, as at the trace's end, and its tables go now. A
 * build's compilers leave their blocks to exit: 75 perls of 100 000 blocks
 * each kept 7.5 M blocks in the model to the end (815 MB). Its memory left
 * with it: the outstanding bytes of all processes together (their peak) no
 * longer count it. An event of it that comes later still (late) is taken as
 * any other. An exec's end (exec_image n > 0) ends image n - 1 of the pid
 * (AN_GEN_SHIFT), not its newest: a traced exec's new image may have
 * events stamped before it. */
static void proc_end(an_model *m, uint32_t pid, uint64_t exec_image, uint64_t ts)
{
    an_proc *p = NULL;
    if (!exec_image) {
        p = current_of(m, pid);
        /* an image an exec's end ended, and no event of it since: the
         * process ran on as a program outside the session, so a plain end
         * of the pid now is another connection's going (a daemon that
         * closed every fd, then exec'd: its orphan, done when the untraced
         * program exits). Taken, it moved the image's end there and said it
         * exited, not replaced by an exec. */
        if (p && p->ended && p->exec_end)
            return;
    } else /* an exec's end: of the image it names, whichever came since (time order) */
        for (size_t i = 0; i < m->nprocs && !p; i++)
            if (m->procs[i]->pid == pid &&
                m->procs[i]->gen == (exec_image - 1 < AN_GEN_MAX ? exec_image - 1 : AN_GEN_MAX))
                p = m->procs[i];
    if (p && end_model(m, p, ts))
        p->exec_end = exec_image != 0;
}

void an_model_feed(an_model *m, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    if (n && ev[0].op == AN_OP_PROBE) {
        probe(m, pid, ev, n);
        return;
    }
    if (n && ev[0].op == AN_OP_END) { /* a run of its own (AN_END_TID) */
        proc_end(m, pid, ev[0].size, ev[0].ts);
        return;
    }

    if (n && ev[0].op >= AN_OP_VM_MAP) {
        vm_feed(m, pid, ev, n);
        return;
    }
    an_proc *p = proc_of(m, pid, tid, n ? ev[0].ts : 0);
    if (!p) {
        m->oom = 1;
        return;
    }
    if (p->ended && n && ev[n - 1].ts > p->end_ts)
        p->ended = 0; /* the pid again, after its end: a process of its own (late ones are its own) */
    if (m->from == 0 && m->to == UINT64_MAX)
        feed_run(m, p, tid, ev, n, 1);
    else
        feed_run(m, p, tid, ev, n, 0);
}
