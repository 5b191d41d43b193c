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
 * A temporary allocation is one whose free is the very next heap event of the
 * thread that allocated it (heaptrack's definition): memory churn that a
 * pool or a stack buffer would avoid.
 *
 * The agent stamps events to 100 us, so threads often share a time, and
 * the time-order stage puts a free first only where both are at the heads
 * of their threads' runs: a thread's free of a block and another's
 * allocation of its address at that time may come allocation first. That
 * allocation ends the block there (its address was handed out again: it
 * was freed), and the block is remembered as displaced; the free that
 * follows at that time, from another thread, is its own, already counted,
 * not the new block's (so is one from the allocating thread that finds its
 * new block gone: displaced_by_itself; and one from the displaced block's
 * own thread later that finds nothing there: displaced_free). One that
 * does not come is a free missing, as when
 * a thread allocates an address it never freed (node's trace: 13 such
 * frees counted missing, and 13 of the new blocks freed as never seen).
 * A free put first the other way may be taken for the wrong block: for
 * one its thread frees itself at that time and allocates again, the free
 * being the new block's; that thread's own free then gives the other back
 * to wait for the next allocation there (note_taken, untake). And a
 * thread's allocation whose own free at that time found nothing pairs
 * with another thread's free there then, its own free taking the block
 * that one was taken for (take_other).
 *
 * What the window needs of a live block is whether it was allocated inside
 * (an allocation after the window is not kept, so that is ts >= from),
 * settled once, as a bit beside its stack index (live.h). With the
 * whole trace as the window (the default) every window test is known true:
 * the batch loop is compiled twice, once with the tests and once without.
 */
#include "analyze/model.h"
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

typedef struct an_displaced {
    uint64_t addr;
    uint64_t ts;    /* when the allocation there ended it */
    uint32_t tid;   /* the thread of that allocation (the last, if several) */
    uint32_t owner; /* the thread of the block it ended (the last, if several) */
    uint32_t count; /* blocks displaced there at ts whose frees have not come yet */
} an_displaced;

typedef struct an_thread {
    uint64_t tid;
    uint64_t addr; /* last allocation of the thread, 0 once anything else happened */
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
    an_hmap_free(&p->displaced);
    an_hmap_free(&p->threads);
    an_hmap_free(&p->stack_index);
    free(p->taken);
    free(p->dense);
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
    an_hmap_init(&p->displaced, sizeof(an_displaced));
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
 * too far beyond the stacks seen for a dense array to stay bounded by them. */
static uint32_t *dense_slot(an_proc *p, uint32_t stack_id)
{
    if (stack_id < p->ndense)
        return &p->dense[stack_id];
    if (stack_id >= AN_DENSE_STACKS + 8 * (uint64_t)p->nstacks)
        return NULL;
    size_t n = p->ndense ? p->ndense : 256;
    while (n <= stack_id)
        n *= 2;
    uint32_t *v = realloc(p->dense, n * sizeof *v);
    if (!v)
        return NULL;
    memset(v + p->ndense, 0, (n - p->ndense) * sizeof *v);
    p->dense = v;
    p->ndense = n;
    return &v[stack_id];
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
    if (ltr_table_reserve((void **)&p->stacks, &p->capstacks, p->nstacks, sizeof *p->stacks, 64) != 0) {
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

/* whole: the window is the whole trace (a constant where it is inlined). */
HOT int in_window(const an_model *m, uint64_t ts, int whole) { return whole || (ts >= m->from && ts <= m->to); }
HOT int after_window(const an_model *m, uint64_t ts, int whole) { return !whole && ts > m->to; }

static void note_peak(an_model *m, an_proc *p, uint64_t ts)
{
    if (!p->peak_set || p->cur_bytes > p->peak_bytes) {
        p->peak_bytes = p->cur_bytes;
        p->peak_ts = ts;
        p->peak_set = 1;
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
    if (ts > p->last_ts)
        p->last_ts = ts;
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

/* Counts a block that an allocation inside the window created. */
/* The thread's last allocation, which the next event of the thread replaces. */
HOT an_thread *thread_of(an_model *m, an_proc *p, uint32_t tid)
{
    if (p->last_thread && p->last_tid == tid)
        return p->last_thread; /* events come in runs of one thread (buffer blocks) */
    return thread_slow(m, p, tid);
}

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

/* A free of a block the model held (already out of the live map, or about to
 * be overwritten there): ends it and says whether it was temporary (a realloc
 * that grows a block is not churn: is_realloc). */
HOT void end_live(an_model *m, an_proc *p, const an_live *b, uint32_t tid, uint64_t ts, int is_realloc,
                  int whole)
{
    an_stack *s = &p->stacks[b->stack & ~LIVE_INSIDE];
    int ai = (b->stack & LIVE_INSIDE) != 0; /* also: allocated inside the window, since not after it */
    an_thread *t = thread_of(m, p, tid);
    int temporary = t && !is_realloc && t->addr == b->addr && b->tid == tid && ai;
    s->temporary += (uint64_t)temporary;
    if (t)
        t->addr = 0;
    /* a window that begins after blocks were allocated has its peak at the
     * first event in it; over the whole trace each allocation noted it
     * already, and nothing since raised the outstanding bytes above it */
    if (!whole && in_window(m, ts, 0))
        note_peak(m, p, ts);
    if (end_block(m, p, s, ai, b->ts, ts, b->size, whole) && !is_realloc && !temporary)
        note_freed(s, b->ts, ts, b->size);
    p->cur_bytes -= b->size;
    p->cur_count--;
    m->cur_bytes -= b->size;
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

/* A free at ts by thread by, taken for the block there of thread owner: a
 * block allocated before, or one allocated at ts after the free was met
 * (pair_pending). Threads share times (100 us), and the block may be
 * another's to free, which a free of the address at ts that then finds
 * nothing there shows (untake, pair_pending). Kept by address, the last
 * at each and the thread of another's before it (direct-mapped: one that
 * another address displaces is a heuristic lost). */
static size_t taken_slot(uint64_t addr) { return (size_t)(((addr >> 4) * 0x9E3779B97F4A7C15ull) >> 54); }
_Static_assert(AN_TAKEN == 1024, "taken_slot's shift keeps 10 bits");

static void note_taken(an_proc *p, uint64_t addr, uint64_t ts, uint32_t owner, uint32_t by)
{
    if (!p->taken && !(p->taken = calloc(AN_TAKEN, sizeof *p->taken)))
        return; /* the rules below then do not apply: as when another free displaced the entry */
    struct an_taken *k = &p->taken[taken_slot(addr)];
    int same = k->addr == addr && k->ts == ts;
    k->other = same && k->by != by ? k->by : same ? k->other : 0;
    k->addr = addr;
    k->ts = ts;
    k->owner = owner;
    k->by = by;
}

/* The thread of entry k's last free (other 0) or of the one before (1),
 * taken out of it: it is another block's (once). */
static uint32_t taken_out(struct an_taken *k, int other)
{
    uint32_t by = other ? k->other : k->by;
    if (!other) {
        k->by = k->other;
        k->owner = 0; /* not known of the one before */
    }
    k->other = 0;
    if (!k->by)
        k->addr = 0;
    return by;
}

/* The entry of addr at ts, or NULL. */
static struct an_taken *taken_at(an_proc *p, uint64_t addr, uint64_t ts)
{
    struct an_taken *k = p->taken ? &p->taken[taken_slot(addr)] : NULL;
    return k && k->addr == addr && k->ts == ts ? k : NULL;
}

/* A free at ts, of an address the model does not hold, from the thread
 * whose block there another thread's free at ts was taken for: that block
 * was this free's (one thread's events at one time are in its order), and
 * the other free waits for a later allocation there at ts. A thread that
 * frees a block (its own from before, or one it allocated at ts) and
 * allocates its address again within 100 us, the new block handed to a
 * new thread that frees it (Python's thread start and end: a
 * 16-byte block and the thread's state for each thread), had the new
 * thread's free, put first by the time order, taken for the old block:
 * its own thread's free then said of a block never seen, and the new
 * block ended at the next allocation of its address, said freed without a
 * free (python3 -m http.server, a thread per request: 61 of each in 200
 * requests, though every free was in the trace). 1 when it was such a free. */
static int untake(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr)
{
    struct an_taken *k = taken_at(p, addr, ts);
    if (!k || k->owner != tid || k->by == tid)
        return 0;
    keep_pending(m, p, taken_out(k, 0), ts, addr);
    return 1;
}

/* For an allocation at ts whose thread's own free there at ts waits
 * (came before it, found nothing): another thread's free there at ts, taken
 * for a block, whose thread then takes it (0 if none). The waiting free was
 * that block's, and the other is this allocation's. Threads that pass
 * blocks to each other (a queue, slots each takes a block from and puts one
 * into), glibc handing a thread back the block it freed last: thread A
 * allocates X, B frees it and allocates X again, A frees that, all within
 * 100 us; handed on A's run first, A's free took A's own block, B's free
 * found nothing and its allocation stayed live for ever (4 threads of
 * 200 000 such steps: 2 556 frees of blocks never seen and as many false
 * leaks). Not at the free itself: the next allocation there may be
 * another thread's, the free's own then (Python's thread starts above). */
static uint32_t take_other(an_proc *p, uint64_t addr, uint64_t ts, uint32_t tid)
{
    struct an_taken *k = taken_at(p, addr, ts);
    if (!k || (k->by == tid && (!k->other || k->other == tid)))
        return 0;
    return taken_out(k, k->by == tid);
}

/* A block ended by another thread's allocation of its address at ts. Several
 * may be at one time (the allocating thread's run handed on ahead of the
 * freeing one's: it takes the address again and again, each time the other
 * freed it): each of their frees may follow. */
static void note_displaced(an_model *m, an_proc *p, uint64_t addr, uint64_t ts, uint32_t tid, uint32_t owner)
{
    int created;
    an_displaced *d = an_hmap_put(&p->displaced, addr, &created);
    if (!d) {
        m->oom = 1;
        p->implicit_frees++;
        return;
    }
    if (!created && d->ts != ts) {
        p->implicit_frees += d->count; /* those displaced before: their frees never came */
        d->count = 0;
    }
    d->ts = ts;
    d->tid = tid;
    d->owner = owner;
    d->count++;
}

/* A free of an address where blocks were displaced: at that time and from
 * another thread than the allocation's, it is one displaced block's own,
 * already counted (1); at a later time, one from the displaced block's own
 * thread that finds nothing there is its free too (1): the time order put
 * that block's allocation first among two threads' at one time, the other
 * thread's allocation and free of the address before it in truth (threads
 * one after another each allocating and freeing a block glibc hands the
 * next one, strerror's message: 262 to 361 of 5 000 threads said freed
 * without a free and as many frees of blocks never seen); otherwise their
 * frees never came, and this one is for what is there now (0). */
static int displaced_free(an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr)
{
    an_displaced *d = an_hmap_get(&p->displaced, addr);
    if (!d || (ts == d->ts && tid == d->tid))
        return 0; /* the new block's own thread: the displaced block's free may still come */
    if (ts == d->ts || (tid == d->owner && !an_lives_find(&p->live, addr))) {
        if (--d->count == 0)
            an_hmap_del(&p->displaced, addr);
        return 1;
    }
    p->implicit_frees += d->count;
    an_hmap_del(&p->displaced, addr);
    return 0;
}

/* A free at ts, of an address the model does not hold, from the thread
 * whose allocation there at ts displaced a block whose free has not come:
 * that thread's own block there was freed already, so this free is the
 * displaced one's (already counted), made by the thread that then takes the
 * address again. Threads passing blocks to each other within 100 us
 * (thread A allocates X twice, B's free of the first between them, in
 * truth) met it. 1 when it was such a free. */
static int displaced_by_itself(an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr)
{
    an_displaced *d = p->displaced.n ? an_hmap_get(&p->displaced, addr) : NULL;
    if (!d || d->ts != ts || d->tid != tid)
        return 0;
    if (--d->count == 0)
        an_hmap_del(&p->displaced, addr);
    return 1;
}

/* A free (or the free half of a realloc) in process p. */
HOT void free_in(an_model *m, an_proc *p, uint32_t tid, uint64_t ts, uint64_t addr, int is_realloc,
                 int whole)
{
    touch(p, ts);
    if (p->displaced.n && displaced_free(p, tid, ts, addr)) {
        an_thread *t = thread_of(m, p, tid);
        if (t)
            t->addr = 0;
        return;
    }
    uint32_t *slot = an_lives_find(&p->live, addr);
    int held = slot != NULL;
    if (held) { /* read in place: end_live touches no live block (a copy was 4 % of the model's instructions) */
        const an_live *b = an_lives_at(&p->live, slot);
        if (b->tid != tid || p->threads.n > 1) /* a process of one thread has no other's free to wait for */
            note_taken(p, addr, ts, b->tid, tid);
        end_live(m, p, b, tid, ts, is_realloc, whole);
        an_lives_remove(&p->live, slot);
    } else if (!after_window(m, ts, whole) && !displaced_by_itself(p, tid, ts, addr) && !untake(m, p, tid, ts, addr))
        keep_pending(m, p, tid, ts, addr);
    an_thread *t = held ? NULL : thread_of(m, p, tid);
    if (t)
        t->addr = 0;
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

/* An allocation whose free was already met (another thread's block came
 * first). A free of the allocating thread's own at that time came before
 * it (one thread's events at one time are in its order, order.c): it was
 * of a block never seen, and this one took its address (a flight
 * recorder's save of a cache that frees its oldest entry and allocates the
 * next within 100 us: every entry was said freed at once, AIFI, and the
 * cache held nothing). */
static int pair_pending(an_model *m, an_proc *p, an_stack *s, uint32_t tid, uint64_t ts, uint64_t addr,
                        uint64_t size)
{
    an_pending *f = an_hmap_get(&p->pending, addr);
    if (!f || f->ts < ts)
        return 0;
    uint64_t free_ts = f->ts;
    uint32_t free_tid = f->tid;
    int swapped = f->ts == ts && f->tid == tid;
    if (swapped && !(free_tid = take_other(p, addr, ts, tid)))
        return 0;
    if (--f->count == 0)
        an_hmap_del(&p->pending, addr);
    /* after take_other, no owner: a later free of this thread's there that
     * finds nothing is of a block allocated later still, not this one
     * (untake gave the other free back, to wait for this thread's next
     * allocation, which cannot pair with it: a free of a block never seen
     * and that allocation a false leak, where thread 1 frees its block and
     * allocates X, thread 2 frees X, allocates it and frees it again) */
    note_taken(p, addr, ts, swapped ? 0 : tid, free_tid);
    count_call(m, p, s, ts, size, 0);
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
    if (p->pending.n && pair_pending(m, p, s, tid, ts, addr, size))
        return;
    int created;
    an_live *b = an_lives_put(&p->live, addr, &created);
    if (!b) {
        m->oom = 1;
        return;
    }
    if (!created) { /* the address cannot be handed out twice: the block there was freed */
        an_live old = *b;
        note_displaced(m, p, addr, ts, tid, old.tid); /* by another thread at this time, maybe: its free may follow */
        end_live(m, p, &old, old.tid, ts, 1, whole);
    }
    int inside = whole || ts >= m->from;
    b->size = size;
    b->stack = (uint32_t)si | (inside ? LIVE_INSIDE : 0);
    b->tid = tid;
    b->ts = ts;
    p->cur_bytes += size;
    p->cur_count++;
    m->cur_bytes += size;
    count_call(m, p, s, ts, size, whole);
    if (inside) /* in the window: not after it */
        note_peak(m, p, ts);
    an_thread *t = thread_of(m, p, tid);
    if (t)
        t->addr = addr;
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

#define AN_PREFETCH_AHEAD 8 /* events: about a memory latency of work at a few ns each */

/* Inlined early (HOT): as plain static inline functions GCC 12 took them
 * for functions without side effects and dropped their calls, and with them
 * every prefetch (tests/build/check-prefetch.sh). With them back, perl's
 * leak of 2 M blocks: 0.78 of the analysis's CPU time. */
HOT void prefetch_event(const an_proc *p, const an_event *e)
{
    an_lives_prefetch_slot(&p->live, e->addr);
    if (e->op == AN_OP_REALLOC)
        an_lives_prefetch_slot(&p->live, e->old_addr);
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

/* The batch loop, inlined twice: whole is a constant in each. */
HOT void feed_run(an_model *m, an_proc *p, uint32_t tid, const an_event *ev, size_t n, int whole)
{
    for (size_t i = 0; i < n && i < AN_PREFETCH_AHEAD; i++)
        prefetch_event(p, &ev[i]);
    for (size_t i = 0; i < n; i++) {
        const an_event *e = &ev[i];
        if (i + AN_PREFETCH_AHEAD < n)
            prefetch_event(p, &ev[i + AN_PREFETCH_AHEAD]);
        switch (e->op) {
        case AN_OP_ALLOC: alloc_in(m, p, tid, e->ts, e->addr, e->size, e->stack, whole); break;
        case AN_OP_FREE: free_in(m, p, tid, e->ts, e->addr, 0, whole); break;
        default:
            free_in(m, p, tid, e->ts, e->old_addr, 1, whole);
            alloc_in(m, p, tid, e->ts, e->addr, e->size, e->stack, whole);
            break;
        }
        if (m->series)
            series_note(m, p, e->ts);
    }
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
        if (ltr_reserve((void **)&m->probes, &m->capprobes, m->nprobes, sizeof *m->probes, 64) != 0) {
            m->oom = 1;
            return;
        }
        m->probes[m->nprobes++] = (an_probe){ev[i].addr, p ? p->cur_bytes : 0, p != NULL};
    }
}

/* A process's blocks still live are outstanding at the window's end
 * (AIFO/AOFO), its frees never paired unseen; its tables go but the
 * live one, which the caller frees or keeps. */
static void proc_finish(an_model *m, an_proc *p)
{
    size_t pos = 0;
    an_live *b;
    while ((b = an_lives_next(&p->live, &pos))) {
        an_stack *s = &p->stacks[b->stack & ~LIVE_INSIDE];
        add_type(p, s, b->stack & LIVE_INSIDE ? AN_AIFO : AN_AOFO, b->size);
        if (b->stack & LIVE_INSIDE)
            note_held(s, b->ts);
        if (m->series)
            cell_add(m, s, b->ts, 0, b->size);
    }
    an_pending *f;
    pos = 0;
    while ((f = an_hmap_next(&p->pending, &pos)))
        p->unseen_frees += in_window(m, f->ts, 0) ? f->count : 0;
    an_hmap_free(&p->pending);
    an_displaced *d;
    pos = 0;
    while ((d = an_hmap_next(&p->displaced, &pos)))
        p->implicit_frees += d->count; /* displaced, and their frees never came */
    an_hmap_free(&p->displaced);
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
    free(p->dense);
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
