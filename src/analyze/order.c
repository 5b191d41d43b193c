/*
 * analyze/order.c — the time-order stage of order.h: a queue per thread
 * (pid, tid), filled in place by the decoder, and a min-heap of the queues
 * that hold events, keyed by the time of their first event. Handing on takes
 * the oldest queue's events up to the time of the next oldest queue's first
 * one in a single run, so a thread that runs alone costs one heap look per
 * run, not per event.
 */
#include "analyze/order.h"
#include "base/hmap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define Q_FIRST 16  /* events of a new queue: a trace may name very many threads */
#define Q_ROOM 1024 /* events of room a large queue keeps free, so that writes come in long runs */
#define Q_KEEP 1024 /* an emptied queue larger than this gives its memory back */

typedef struct oq {
    an_event *ev;
    size_t head, tail, cap; /* a ring of cap (a power of two) events; waiting: positions [head, tail) */
    size_t hpos;            /* index in the heap + 1; 0 while empty */
    uint32_t pid, tid;
} oq;

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
    uint64_t late;
};

an_order *an_order_new(size_t hold, an_order_emit emit, void *ctx)
{
    an_order *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->hold = hold ? hold : AN_ORDER_HOLD_FILE;
    o->emit = emit;
    o->ctx = ctx;
    an_hmap_init(&o->map, sizeof(oq_ref));
    return o;
}

void an_order_free(an_order *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->nq; i++) {
        free(o->qs[i]->ev);
        free(o->qs[i]);
    }
    free(o->qs);
    free(o->heap);
    an_hmap_free(&o->map);
    free(o);
}

uint64_t an_order_late(const an_order *o) { return o->late; }

/* The merge order: by time; at one time (the heap agent stamps events to
 * 100 us, so threads often share one) frees first, since a block freed by
 * one thread and handed out again to another within that time must be
 * freed before it is allocated again. */
static inline int before(const an_event *a, const an_event *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->op == AN_OP_FREE && b->op != AN_OP_FREE);
}

static inline an_event *at(const oq *q, size_t pos) { return &q->ev[pos & (q->cap - 1)]; }
static inline const an_event *first(const oq *q) { return at(q, q->head); }

static void heap_set(an_order *o, size_t i, oq *q)
{
    o->heap[i] = q;
    q->hpos = i + 1;
}

static void sift_up(an_order *o, size_t i)
{
    oq *q = o->heap[i];
    while (i > 0 && before(first(q), first(o->heap[(i - 1) / 2]))) {
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
        if (c + 1 < o->nheap && before(first(o->heap[c + 1]), first(o->heap[c])))
            c++;
        if (!before(first(o->heap[c]), first(q)))
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
    r->index = (uint32_t)o->nq;
    o->qs[o->nq++] = q;
    return o->cur = q;
}

an_event *an_order_room(an_order *o, uint32_t pid, uint32_t tid, size_t *room)
{
    oq *q = queue_of(o, pid, tid);
    if (!q)
        return NULL;
    size_t n = q->tail - q->head;
    if (q->cap - n < (q->cap >= 2 * Q_ROOM ? Q_ROOM : 1)) { /* grow the ring, its events in order from 0 */
        size_t cap = q->cap ? q->cap * 2 : Q_FIRST;
        an_event *v = malloc(cap * sizeof *v);
        if (!v)
            return NULL;
        for (size_t done = 0; done < n;) {
            size_t k = q->cap - ((q->head + done) & (q->cap - 1));
            k = k < n - done ? k : n - done;
            memcpy(v + done, at(q, q->head + done), k * sizeof *v);
            done += k;
        }
        free(q->ev);
        q->ev = v;
        q->cap = cap;
        q->head = 0;
        q->tail = n;
    }
    size_t end = q->cap - (q->tail & (q->cap - 1)); /* to the ring's end */
    *room = end < q->cap - n ? end : q->cap - n;
    return at(q, q->tail);
}

/* Hands on up to count events, oldest first. */
static void release(an_order *o, size_t count)
{
    while (count && o->nheap) {
        oq *q = o->heap[0];
        const an_event *next = NULL; /* the next oldest queue's first event */
        for (size_t c = 1; c <= 2 && c < o->nheap; c++)
            if (!next || before(first(o->heap[c]), next))
                next = first(o->heap[c]);
        size_t k = 1, avail = q->tail - q->head;
        while (k < avail && k < count && (!next || !before(next, at(q, q->head + k))))
            k++;
        uint64_t last = at(q, q->head + k - 1)->ts;
        size_t part = q->cap - (q->head & (q->cap - 1)); /* the run may wrap round the ring */
        o->emit(o->ctx, q->pid, q->tid, first(q), k < part ? k : part);
        if (k > part)
            o->emit(o->ctx, q->pid, q->tid, q->ev, k - part);
        if (!o->out_set || last > o->out_ts)
            o->out_ts = last;
        o->out_set = 1;
        q->head += k;
        o->held -= k;
        count -= k;
        if (q->head < q->tail) {
            sift_down(o, 0);
            continue;
        }
        q->hpos = 0;
        q->head = q->tail = 0;
        if (q->cap > Q_KEEP) {
            free(q->ev);
            q->ev = NULL;
            q->cap = 0;
        }
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
 * back into those waiting, only as far back as they reach. False without
 * memory (the events stay as they came). */
static bool merge_back(an_order *o, oq *q, size_t n)
{
    an_event *run = malloc(n * sizeof *run);
    if (!run)
        return false;
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

void an_order_commit(an_order *o, size_t n)
{
    oq *q = o->cur;
    if (!n || !q)
        return;
    const an_event *e = at(q, q->tail); /* what the last room gave: contiguous */
    for (size_t i = 0; o->out_set && i < n && e[i].ts < o->out_ts; i++)
        o->late++; /* a thread's events are in time order: the late ones come first */
    int was_empty = q->head == q->tail;
    /* By time only: before()'s frees-first rule is for ties between
     * threads; one thread's events at one time are in its order already. */
    bool behind = !was_empty && e->ts < at(q, q->tail - 1)->ts;
    q->tail += n;
    o->held += n;
    if (behind)
        merge_back(o, q, n);
    if (was_empty) {
        heap_set(o, o->nheap++, q);
        sift_up(o, o->nheap - 1);
    }
    if (o->held > o->hold) /* hand on an eighth more than needed: longer runs, fewer heap looks */
        release(o, o->held - o->hold + o->hold / 8);
}

void an_order_drain(an_order *o) { release(o, o->held); }
