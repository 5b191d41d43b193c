/*
 * analyze/order.c — the time-order stage of order.h: a queue per thread
 * (pid, tid), filled in place by the decoder, and a min-heap of the queues
 * that hold events, keyed by the time of their first event. Handing on takes
 * the oldest queue's events up to the time of the next oldest queue's first
 * one in a single run, so a thread that runs alone costs one heap look per
 * run, not per event.
 *
 * A queue is a ring of segments of 256 events, taken from and given back to
 * a pool shared by the queues: a queue that grows never copies what it
 * holds, and memory a thread's queue handed on is what the next one fills.
 * A ring of events that doubled (copying) touched twice what it held: on
 * bench/heap's trace, whose 205 000 events all wait (fewer than the hold),
 * the copies and the page faults of the new rings were a third of the
 * analysis (perf: memcpy 24 % with the faults it took, an_order_room 14 %).
 */
#include "analyze/order.h"
#include "base/hmap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SEG_SHIFT 8 /* 256 events (10 KiB) a segment: a trace may name a thousand threads */
#define SEG ((size_t)1 << SEG_SHIFT)
_Static_assert(SEG == AN_ORDER_SEGMENT, "order.h says the size");
#define TIE_LOOK 8 /* how far into a queue's events at one time q_before looks for a free */
#define CHECKPOINTS 1024 /* of the times handed on: a late event's distance to within 1/512 of the trace */

typedef struct oq {
    an_event **seg;         /* ring of scap (a power of two) segment pointers */
    size_t scap;
    size_t head, tail;      /* positions, from 0 on: waiting [head, tail); segment s holds s * SEG.. */
    size_t hpos;            /* index in the heap + 1; 0 while empty */
    size_t sorted_from;     /* the events from here to tail are in time order (note_handed) */
    an_event *spare;        /* the segment a room at a segment's start gave, nothing committed in it yet */
    const an_event *fst;    /* at(q, head) while it holds events: the heap's comparisons read it often */
    /* What its events at its first one's time free among its next TIE_LOOK
     * (frees_soon), gathered when head was look_at - 1 (0: to gather): two
     * threads at one time compare again after each run of one of them, the
     * other's first events the same. */
    size_t look_at;
    uint32_t nlook;
    uint64_t look[TIE_LOOK - 1];
    uint32_t pid, tid;
    uint32_t id;            /* made id-th: the last tie-break (q_before) */
} oq;

typedef struct proc_out {
    uint64_t key; /* pid (late_key) */
    uint64_t ts;
} proc_out;

typedef struct oq_ref {
    uint64_t key; /* pid << 32 | tid */
    uint32_t index;
} oq_ref;

struct an_order {
    size_t hold, held;
    an_order_emit emit;
    void *ctx;
    an_hmap map;            /* key -> index in qs */
    oq **qs;
    size_t nq, capq;
    oq *cur;                /* the queue of the last room */
    oq **heap;              /* the queues holding events, oldest first event at the top */
    size_t nheap;
    uint64_t out_ts;        /* latest time handed on */
    int out_set;
    uint64_t late, late_across; /* later than their own process's time handed on; than another's only */
    an_hmap proc_out;       /* pid -> latest time handed on of that process (proc_out) */
    struct proc_out *po;    /* the last run's entry (threads of one process take turns), or NULL */
    uint64_t committed, moved; /* events committed, events merge_back moved (MERGE_BUDGET) */
    an_event **pool;        /* segments handed on, for the next to fill */
    size_t npool, cappool;
    an_order_retire retire; /* or segments handed on go there, to come back with an_order_recycle */
    /* How far behind the late events came (an_order_hold_needed): the events
     * handed on so far, and every cp_every of them the latest time handed on
     * then, thinned to every other one when CHECKPOINTS are taken. */
    uint64_t handed, cp_every, behind;
    uint64_t cp_ts[CHECKPOINTS], cp_handed[CHECKPOINTS];
    size_t ncp;
    /* an_order_bound: the thread whose events are being read, and what comes */
    uint64_t flow_key, flow_next, rest;
    int flow_sorted;
};

/* Segments a queue holds: those of [head, tail), and the one tail is in. */
static size_t seg_first(const oq *q) { return q->head >> SEG_SHIFT; }
static size_t seg_end(const oq *q) { return (q->tail + SEG - 1) >> SEG_SHIFT; }

static an_event *seg_get(an_order *o)
{
    return o->npool ? o->pool[--o->npool] : malloc(SEG * sizeof(an_event));
}

static void seg_put(an_order *o, an_event *seg)
{
    if (o->npool == o->cappool) {
        size_t cap = o->cappool ? 2 * o->cappool : 64;
        an_event **v = realloc(o->pool, cap * sizeof *v);
        if (!v) {
            free(seg);
            return;
        }
        o->pool = v;
        o->cappool = cap;
    }
    o->pool[o->npool++] = seg;
}

void an_order_set_retire(an_order *o, an_order_retire retire) { o->retire = retire; }

void an_order_recycle(an_order *o, an_event *seg) { seg_put(o, seg); }

an_order *an_order_new(size_t hold, an_order_emit emit, void *ctx)
{
    an_order *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->hold = hold ? hold : AN_ORDER_HOLD_FILE;
    o->cp_every = SEG;
    o->emit = emit;
    o->ctx = ctx;
    an_hmap_init(&o->map, sizeof(oq_ref));
    an_hmap_init(&o->proc_out, sizeof(proc_out));
    return o;
}

void an_order_free(an_order *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->nq; i++) {
        oq *q = o->qs[i];
        for (size_t k = seg_first(q); k < seg_end(q); k++)
            free(q->seg[k & (q->scap - 1)]);
        free(q->spare);
        free(q->seg);
        free(q);
    }
    for (size_t i = 0; i < o->npool; i++)
        free(o->pool[i]);
    free(o->pool);
    free(o->qs);
    free(o->heap);
    an_hmap_free(&o->map);
    an_hmap_free(&o->proc_out);
    free(o);
}

uint64_t an_order_late(const an_order *o) { return o->late; }
uint64_t an_order_late_across(const an_order *o) { return o->late_across; }

/* Each release hands on an eighth of the hold more than it must (an_order_commit):
 * at least 7/8 of it waits. */
size_t an_order_hold_needed(const an_order *o)
{
    return o->late ? (size_t)((o->hold + o->behind) * 8 / 7 + SEG) : 0;
}

/* A late event at ts: the events handed on since the time handed on first
 * passed ts (at the checkpoint's grain: an upper bound) would have had to
 * wait too. */
static void note_behind(an_order *o, uint64_t ts)
{
    size_t lo = 0, hi = o->ncp;
    while (lo < hi) { /* the first checkpoint later than ts: their times only grow */
        size_t mid = lo + (hi - lo) / 2;
        if (o->cp_ts[mid] > ts)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint64_t behind = o->handed - (lo ? o->cp_handed[lo - 1] : 0);
    if (behind > o->behind)
        o->behind = behind;
}

/* n more events handed on, the latest time handed on now out_ts. */
static void note_count(an_order *o, size_t n)
{
    uint64_t before = o->handed;
    o->handed += n;
    if (o->handed / o->cp_every == before / o->cp_every)
        return;
    if (o->ncp == CHECKPOINTS) { /* every other one, and half as often from now on */
        for (size_t i = 0; i < CHECKPOINTS / 2; i++) {
            o->cp_ts[i] = o->cp_ts[2 * i + 1];
            o->cp_handed[i] = o->cp_handed[2 * i + 1];
        }
        o->ncp = CHECKPOINTS / 2;
        o->cp_every *= 2;
    }
    o->cp_ts[o->ncp] = o->out_ts;
    o->cp_handed[o->ncp++] = o->handed;
}

/* The merge order: by time; at one time (the heap agent stamps events to
 * 100 us, so threads often share one) frees first, since a block freed by
 * one thread and handed out again to another within that time must be
 * freed before it is allocated again. */
static inline int before(const an_event *a, const an_event *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->op == AN_OP_FREE && b->op != AN_OP_FREE);
}

static inline an_event *at(const oq *q, size_t pos)
{
    return &q->seg[(pos >> SEG_SHIFT) & (q->scap - 1)][pos & (SEG - 1)];
}
static inline const an_event *first(const oq *q) { return q->fst; }

static void heap_set(an_order *o, size_t i, oq *q)
{
    o->heap[i] = q;
    q->hpos = i + 1;
}

/* The addresses q's events at its first event's time, among its next
 * TIE_LOOK, free (a free's, a realloc's old block), into q->look. */
static void gather_frees(oq *q)
{
    const an_event *e = first(q);
    uint64_t ts = e->ts;
    size_t end = q->tail - q->head > TIE_LOOK ? q->head + TIE_LOOK : q->tail;
    q->nlook = 0;
    q->look_at = q->head + 1;
    for (size_t k = q->head + 1; k < end; k++) {
        e = k & (SEG - 1) ? e + 1 : at(q, k); /* the next in its segment, but at a segment's start */
        if (e->ts != ts)
            return;
        if (e->op == AN_OP_FREE || e->op == AN_OP_REALLOC)
            q->look[q->nlook++] = e->op == AN_OP_FREE ? e->addr : e->old_addr;
    }
}

/* Whether q's events at its first event's time, among its next TIE_LOOK,
 * free addr. */
static int frees_soon(oq *q, uint64_t addr)
{
    if (q->look_at != q->head + 1)
        gather_frees(q);
    for (uint32_t i = 0; i < q->nlook; i++)
        if (q->look[i] == addr)
            return 1;
    return 0;
}

/* The queues' order in the heap: before() of their first events, and at
 * one time where both are allocations, first the thread that frees, at
 * that time, the address the other allocates: it held the address before
 * the other was handed it. Successive short threads (a thread per
 * request) reuse one arena's addresses within 100 us, and half the time the
 * later thread's allocation went first: its block ended there as displaced
 * when the earlier one's came, its own free later unseen, and a block it
 * kept was not counted (a program whose odd threads each kept one block of
 * 100 B: 279 of 300 held, 21 said "allocated again without a free"). Not
 * only its next event: a thread per request that allocates a temporary
 * and a buffer, then frees the temporary (strerror's), had its successor's
 * temporary go first 5 times in 500 threads, each said "allocated again"
 * and its free then "of a block never seen". */
static inline int q_before(oq *a, oq *b)
{
    const an_event *x = first(a), *y = first(b);
    if (before(x, y))
        return 1;
    if (before(y, x))
        return 0;
    if (x->op == AN_OP_ALLOC && y->op == AN_OP_ALLOC && a->pid == b->pid) {
        int fa = frees_soon(a, y->addr), fb = frees_soon(b, x->addr);
        if (fa != fb) /* each freeing what the other allocates says nothing */
            return fa;
    }
    /* Otherwise the queue made first: an order of the events alone, not of
     * when each queue came into the heap, so that handing on by a trace's
     * index (an_order_bound) gives what holding them all gives. */
    return a->id < b->id;
}

static void sift_up(an_order *o, size_t i)
{
    oq *q = o->heap[i];
    while (i > 0 && q_before(q, o->heap[(i - 1) / 2])) {
        heap_set(o, i, o->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(o, i, q);
}

static void sift_down(an_order *o, size_t i)
{
    oq *q = o->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= o->nheap)
            break;
        if (c + 1 < o->nheap && q_before(o->heap[c + 1], o->heap[c]))
            c++;
        if (!q_before(o->heap[c], q))
            break;
        heap_set(o, i, o->heap[c]);
        i = c;
    }
    heap_set(o, i, q);
}

/* The queue of (pid, tid), made at its first event; NULL without memory. */
static oq *queue_of(an_order *o, uint32_t pid, uint32_t tid)
{
    if (o->cur && o->cur->pid == pid && o->cur->tid == tid)
        return o->cur;
    int created;
    oq_ref *r = an_hmap_put(&o->map, (uint64_t)pid << 32 | tid, &created);
    if (!r)
        return NULL;
    if (!created)
        return o->cur = o->qs[r->index];
    if (o->nq == o->capq) {
        size_t cap = o->capq ? o->capq * 2 : 16;
        oq **v = realloc(o->qs, cap * sizeof *v);
        if (v)
            o->qs = v;
        oq **h = v ? realloc(o->heap, cap * sizeof *h) : NULL;
        if (h) {
            o->heap = h;
            o->capq = cap;
        }
    }
    oq *q = o->nq < o->capq ? calloc(1, sizeof *q) : NULL;
    if (!q) {
        an_hmap_del(&o->map, (uint64_t)pid << 32 | tid);
        return NULL;
    }
    q->pid = pid;
    q->tid = tid;
    q->id = (uint32_t)o->nq;
    r->index = (uint32_t)o->nq;
    o->qs[o->nq++] = q;
    return o->cur = q;
}

/* Room in the segment ring for one more segment; false without memory. */
static bool seg_ring_room(oq *q)
{
    size_t first = seg_first(q), end = seg_end(q);
    if (end - first < q->scap)
        return true;
    size_t cap = q->scap ? 2 * q->scap : 4;
    an_event **v = malloc(cap * sizeof *v);
    if (!v)
        return false;
    for (size_t k = first; k < end; k++) /* a segment's place is its number modulo the ring */
        v[k & (cap - 1)] = q->seg[k & (q->scap - 1)];
    free(q->seg);
    q->seg = v;
    q->scap = cap;
    return true;
}

an_event *an_order_room(an_order *o, uint32_t pid, uint32_t tid, size_t *room)
{
    oq *q = queue_of(o, pid, tid);
    if (!q)
        return NULL;
    size_t in_seg = q->tail & (SEG - 1);
    if (!in_seg) { /* tail starts a segment of its own: the one given there before if none of it was used */
        an_event *seg = q->spare ? q->spare : seg_ring_room(q) ? seg_get(o) : NULL;
        if (!seg)
            return NULL;
        q->seg[(q->tail >> SEG_SHIFT) & (q->scap - 1)] = q->spare = seg;
    }
    *room = SEG - in_seg;
    return at(q, q->tail);
}

/* Whose time handed on a queue's events are measured against: its
 * process's, but for an exec's end (AN_EXEC_END_TID), which is no event of
 * the process's own: the recorder saw the old image's connection close
 * after the new image's first events, which come after it in the file
 * (test_peak_in_time_order's driver: a shell's child exec'ing the program,
 * one of its events taken as late). A plain end (AN_END_TID) stays the
 * process's: its events that come after it, stamped before, are late (the
 * model ended it before them; the analysis runs again holding more), not
 * only late across with "each process's figures are exact" (a save's ends
 * come before its blocks: LTR_ANALYZE_HOLD=1000 on one said so). */
static uint64_t late_key(const oq *q)
{
    return q->tid == AN_EXEC_END_TID ? (uint64_t)q->pid | 1ull << 32 : q->pid;
}

/* Notes a run of n events of one process handed on (ev: contiguous, a run
 * never leaves its segment): the latest times handed on, and the events
 * later than them, counted late. An event later than its own process's
 * latest time is late; later only than another process's, late across
 * (docs/analysis.md). A run known in time order (sorted) is settled from
 * its first and last events, with only its late prefix read: on cc1plus's
 * trace, whose one thread's events wait 256 K behind the decoder, reading
 * each event's time here was a cache miss an event on the main thread. */
static void note_handed(an_order *o, proc_out *po, int created, const an_event *ev, size_t n, bool sorted)
{
    size_t i = 0;
    if (sorted && n) {
        if (po && !created && ev[0].ts < po->ts)
            note_behind(o, ev[0].ts); /* the earliest of the run: the farthest behind */
        if (po && !created)
            for (; i < n && ev[i].ts < po->ts; i++)
                o->late++;
        if (o->out_set)
            for (; i < n && ev[i].ts < o->out_ts; i++)
                o->late_across++;
        uint64_t last = ev[n - 1].ts; /* the latest of the run */
        if (po && (created || last > po->ts))
            po->ts = last;
        if (!o->out_set || last > o->out_ts)
            o->out_ts = last;
        o->out_set = 1;
        note_count(o, n);
        return;
    }
    for (; i < n; i++) {
        uint64_t t = ev[i].ts;
        if (po && !created && t < po->ts) {
            o->late++;
            note_behind(o, t);
        } else if (o->out_set && t < o->out_ts)
            o->late_across++;
        if (po && (created || t > po->ts))
            po->ts = t, created = 0;
        if (!o->out_set || t > o->out_ts)
            o->out_ts = t;
        o->out_set = 1;
    }
    note_count(o, n);
}

/* Hands on up to count events, oldest first, each older than until. */
static void release(an_order *o, size_t count, uint64_t until)
{
    while (count && o->nheap && first(o->heap[0])->ts < until) {
        oq *q = o->heap[0];
        const an_event *next = NULL; /* the next oldest queue's first event */
        for (size_t c = 1; c <= 2 && c < o->nheap; c++)
            if (!next || before(first(o->heap[c]), next))
                next = first(o->heap[c]);
        /* a run ends at the next oldest queue's first event, or its own segment's end */
        size_t avail = q->tail - q->head, part = SEG - (q->head & (SEG - 1));
        size_t k = 1, most = avail < count ? avail : count;
        most = most < part ? most : part;
        const an_event *run = first(q); /* most stays within its segment */
        if (!next && until == UINT64_MAX)
            k = most; /* alone: the run is all it may hand on, its events untouched */
        /* at a time the next queue's first event has too, the heap decides (q_before) */
        while (k < most && (!next || before(&run[k], next)) && run[k].ts < until)
            k++;
        /* Later than a time handed on: late (a run left where it came too).
         * Late only against another process's events changes none of its
         * own figures (processes are modelled apart), only the peak of all
         * of them together: counted apart. A compiler driver's buffer, written
         * when it exits, came after its child's whole trace: g++'s warning
         * made a review doubt figures that were exact. */
        int created = 0;
        uint64_t key = late_key(q);
        proc_out *po = o->po && o->po->key == key ? o->po : an_hmap_put(&o->proc_out, key, &created);
        o->po = po; /* a put may move the entries: only the last one is kept */
        note_handed(o, po, created, run, k, q->head >= q->sorted_from);
        o->emit(o->ctx, q->pid, q->tid, run, k);
        size_t before_seg = seg_first(q);
        q->head += k;
        o->held -= k;
        count -= k;
        for (size_t s = before_seg; s < seg_first(q) && s < seg_end(q); s++) { /* segments handed on */
            an_event *seg = q->seg[s & (q->scap - 1)];
            o->retire ? o->retire(o->ctx, seg) : seg_put(o, seg);
        }
        if (q->head < q->tail) {
            q->fst = k < part ? run + k : at(q, q->head); /* a run ends within its segment, or at its end */
            sift_down(o, 0);
            continue;
        }
        q->hpos = 0;
        if (--o->nheap) {
            heap_set(o, 0, o->heap[o->nheap]);
            sift_down(o, 0);
        }
    }
}

/* A thread's events come in time order, except from the CPUs' buffers
 * (ring.h, docs/trace-format.md "Per-CPU buffers"): a thread that moved
 * between CPUs has events in two buffers, which the recorder may write in
 * either order. The n new events (in order among themselves) are merged
 * back into those waiting, only as far back as they reach. Each merge moves
 * the events it reaches past, so runs that each reach far back cost the
 * held events' number again and again: real.ltr with its last chunk
 * copied once took 2.6 s instead of 0.3 (a review), and a crafted file of
 * many tiny blocks, each far behind, could take hours. So the events moved
 * stay within MERGE_BUDGET of those committed; past it a run stays where it
 * came, counted late (the report says so), as it is without memory.
 * Honest traces move far fewer: a CPU's buffer reaches back by what the
 * thread wrote in the other's. False when the run was left as it came. */
#define MERGE_PER_EVENT 64
#define MERGE_BASE 65536
#define MERGE_BUDGET(o) ((o)->committed * MERGE_PER_EVENT + MERGE_BASE)

/* How many waiting events of q (before its n new ones) are later than ts. */
static size_t later_than(const oq *q, size_t n, uint64_t ts)
{
    size_t lo = q->head, hi = q->tail - n;
    while (lo < hi) { /* first position later than ts: the waiting events are in order */
        size_t mid = lo + (hi - lo) / 2;
        if (at(q, mid)->ts > ts)
            hi = mid;
        else
            lo = mid + 1;
    }
    return q->tail - n - lo;
}

static bool merge_back(an_order *o, oq *q, size_t n)
{
    size_t reach = later_than(q, n, at(q, q->tail - n)->ts);
    if (o->moved + reach > MERGE_BUDGET(o))
        return false;
    an_event *run = malloc(n * sizeof *run);
    if (!run)
        return false;
    o->moved += reach;
    for (size_t k = 0; k < n; k++)
        run[k] = *at(q, q->tail - n + k);
    size_t old = q->tail - n, out = q->tail;
    for (size_t j = n; j > 0;) {
        if (old > q->head && run[j - 1].ts < at(q, old - 1)->ts) /* time only: one thread's ties keep their order */
            *at(q, --out) = *at(q, --old);
        else
            *at(q, --out) = run[--j];
    }
    free(run);
    if (q->hpos) /* its first event may be earlier now */
        sift_up(o, q->hpos - 1);
    return true;
}

static uint64_t bound_now(const an_order *o) { return o->flow_next < o->rest ? o->flow_next : o->rest; }

void an_order_bound(an_order *o, uint32_t pid, uint32_t tid, uint64_t first, int sorted, uint64_t rest)
{
    o->flow_key = (uint64_t)pid << 32 | tid;
    o->flow_next = first;
    o->flow_sorted = sorted;
    o->rest = rest;
    release(o, o->held, bound_now(o));
}

/* n events committed to q: with its thread's events in time order, those
 * older than its last are all here (an_order_bound). */
static void flow_on(an_order *o, const oq *q)
{
    if (!o->flow_sorted || o->flow_key != ((uint64_t)q->pid << 32 | q->tid))
        return;
    uint64_t last = at(q, q->tail - 1)->ts;
    if (last > o->flow_next) {
        o->flow_next = last;
        release(o, o->held, bound_now(o));
    }
}

void an_order_commit(an_order *o, size_t n)
{
    oq *q = o->cur;
    if (!n || !q)
        return;
    const an_event *e = at(q, q->tail); /* what the last room gave: contiguous */
    int was_empty = q->head == q->tail;
    /* its first events at one time, which q_before looks at, grow: */
    int regroup = !was_empty && q->tail - q->head < TIE_LOOK && at(q, q->tail - 1)->ts == first(q)->ts;
    /* By time only: before()'s frees-first rule is for ties between
     * threads; one thread's events at one time are in its order already. */
    bool behind = !was_empty && e->ts < at(q, q->tail - 1)->ts;
    q->spare = NULL; /* its segment holds events now */
    size_t old_tail = q->tail, descent = 0; /* the last new event earlier than the one before */
    for (size_t j = 1; j < n; j++) /* read while the decoder's writes are in the cache */
        descent = e[j].ts < e[j - 1].ts ? j : descent;
    q->tail += n;
    q->look_at = 0; /* its events at its first one's time may be more, or merged into */
    o->held += n;
    o->committed += n;
    if (!behind)
        q->sorted_from = descent ? old_tail + descent : q->sorted_from;
    else if (!merge_back(o, q, n)) /* left where it came: counted late as it is handed on */
        q->sorted_from = old_tail + descent;
    else if (descent || q->sorted_from > q->head)
        q->sorted_from = q->tail; /* a merge into events not known in order: not known either */
    if (was_empty) {
        q->fst = at(q, q->head);
        heap_set(o, o->nheap++, q);
        sift_up(o, o->nheap - 1);
    } else if (regroup && q->hpos) { /* its place in the heap again */
        sift_up(o, q->hpos - 1);
        sift_down(o, q->hpos - 1);
    }
    flow_on(o, q);
    if (o->held > o->hold) /* hand on an eighth more than needed: longer runs, fewer heap looks */
        release(o, o->held - o->hold + o->hold / 8, UINT64_MAX);
}

void an_order_drain(an_order *o) { release(o, o->held, UINT64_MAX); }

