/*
 * analyze/sink.c — the event sink of sink.h. Events are gathered in batches
 * (runs of one thread's events, each fed with an_model_feed). Direct: a full
 * batch is fed at once on the caller's thread. Threaded: full batches go
 * into a ring of SINK_BATCHES; the model thread feeds them in order while the
 * producer fills the next, and the producer waits only when every batch is
 * full (the model is behind) — bounded memory, and a batch is never touched
 * by both threads at once (the ring's counts, under the lock, say whose it is).
 *
 * Before the batches, the events pass the time-order stage (order.h): the
 * decoder writes them into their thread's queue, and they come out oldest
 * first, into the batches (threaded) or straight into the model (direct).
 * A batch names the runs of events where they wait in the order stage's
 * segments instead of holding a copy: the segments go back to the stage
 * once the model thread fed the batch. Copying them was 4.6 % of the
 * analysis of cc1plus's trace, on the main thread (perf).
 */
#include "analyze/sink.h"
#include "analyze/order.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SINK_EVENTS 16384 /* per batch: handoffs stay rare (4096 measured slower) */
#define SINK_RUNS 2048 /* threads that interleave in time make runs of a few events */
#define SINK_BATCHES 8
/* AN_SINK_THREAD_LATER: events fed directly before the model gets its
 * thread, by default. A trace's file size does not tell its events: perl's leak of 2 M
 * events is a file of 90 KB (the allocator model tells its addresses in a
 * few bits), which the file-size rule left without the thread, the model
 * then the main thread's 70 %; with it, the analysis took 0.101 s of wall
 * time against 0.120 (paired timing, 11 runs). */

typedef struct sink_run {
    uint32_t pid, tid;
    const an_event *ev;
    size_t n;
} sink_run;

typedef struct sink_batch {
    size_t n, nruns, ndone; /* events, runs, segments done */
    sink_run runs[SINK_RUNS];
    an_event *done[SINK_RUNS]; /* the order stage's segments whose events were all handed on */
    an_event *ev;              /* SINK_EVENTS written in place (no order stage); NULL until then */
} sink_batch;

struct an_sink {
    an_model *model;
    int threaded;
    uint64_t later;      /* not 0: direct until that many events were committed, then threaded */
    uint64_t committed;  /* events committed */
    an_order *order;     /* NULL: events go in as committed (no memory, or asked so) */
    int to_order;        /* the last room was the order stage's */
    sink_batch *batches; /* 1 direct, SINK_BATCHES threaded */
    sink_batch *fill;    /* the batch being written */
    /* threaded: batches [head, head + full) wait for the model, in order;
     * the one at head is being fed while busy */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t filled, drained;
    size_t head, full;
    int closing;
    /* segments of fed batches, for the order stage again (under the lock) */
    an_event **fed;
    size_t nfed;
    int dropping, oom;   /* batch_room had no memory: the room is scratch */
    int stop_when_late, stopped; /* an_sink_stop_when_late; and an event came late since */
    an_event scratch;
};

static void feed_batch(an_model *m, sink_batch *b)
{
    for (size_t i = 0; i < b->nruns; i++)
        an_model_feed(m, b->runs[i].pid, b->runs[i].tid, b->runs[i].ev, b->runs[i].n);
    b->n = b->nruns = 0;
}

/* A fed batch's segments, for the main thread to give back (under the lock). */
static void batch_fed(an_sink *s, sink_batch *b)
{
    memcpy(s->fed + s->nfed, b->done, b->ndone * sizeof *b->done);
    s->nfed += b->ndone;
    b->ndone = 0;
}

/* The segments the model is done with, back to the order stage (or freed
 * when it is gone); under the lock. */
static void give_back(an_sink *s)
{
    for (size_t i = 0; i < s->nfed; i++)
        s->order ? an_order_recycle(s->order, s->fed[i]) : free(s->fed[i]);
    s->nfed = 0;
}

static void *model_thread(void *arg)
{
    an_sink *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->full && !s->closing)
            pthread_cond_wait(&s->filled, &s->lock);
        if (!s->full)
            break; /* closing, and everything fed */
        sink_batch *b = &s->batches[s->head];
        pthread_mutex_unlock(&s->lock);
        feed_batch(s->model, b);
        pthread_mutex_lock(&s->lock);
        batch_fed(s, b);
        s->head = (s->head + 1) % SINK_BATCHES;
        s->full--;
        pthread_cond_signal(&s->drained);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int start_thread(an_sink *s)
{
    s->batches = calloc(SINK_BATCHES, sizeof *s->batches);
    s->fed = malloc(SINK_BATCHES * SINK_RUNS * sizeof *s->fed); /* every batch's segments at most */
    if (!s->batches || !s->fed) {
        free(s->batches);
        free(s->fed);
        s->batches = NULL;
        s->fed = NULL;
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->filled, NULL);
    pthread_cond_init(&s->drained, NULL);
    if (pthread_create(&s->thread, NULL, model_thread, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->filled);
        pthread_cond_destroy(&s->drained);
        free(s->batches);
        free(s->fed);
        s->batches = NULL;
        s->fed = NULL;
        return -1;
    }
    s->threaded = 1;
    return 0;
}

static void ordered(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n);
static void retired(void *ctx, an_event *seg);

an_sink *an_sink_new(an_model *m, uint64_t threaded, int in_order, size_t hold)
{
    an_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->model = m;
    if (in_order && !(s->order = an_order_new(hold, ordered, s)))
        m->unordered = 1;
    s->later = threaded > 1 ? threaded : 0;
    if (!(threaded == 1 && start_thread(s) == 0) && !(s->batches = calloc(1, sizeof *s->batches))) {
        an_order_free(s->order);
        free(s);
        return NULL;
    }
    if (s->threaded && s->order)
        an_order_set_retire(s->order, retired);
    s->fill = s->batches;
    return s;
}

/* The batch being written is complete: to the model (direct), or into the
 * ring, waiting for a free batch to write next (threaded). */
static void flush(an_sink *s)
{
    if (!s->fill->n && !s->fill->ndone)
        return;
    if (!s->threaded) {
        feed_batch(s->model, s->fill);
        return;
    }
    pthread_mutex_lock(&s->lock);
    s->full++;
    pthread_cond_signal(&s->filled);
    while (s->full == SINK_BATCHES)
        pthread_cond_wait(&s->drained, &s->lock);
    s->fill = &s->batches[(s->head + s->full) % SINK_BATCHES];
    give_back(s);
    pthread_mutex_unlock(&s->lock);
}

/* Waits until the model has fed every batch, and takes their segments back. */
static void settle(an_sink *s)
{
    flush(s);
    if (!s->threaded)
        return;
    pthread_mutex_lock(&s->lock);
    while (s->full)
        pthread_cond_wait(&s->drained, &s->lock);
    give_back(s);
    pthread_mutex_unlock(&s->lock);
}

/* Room in the batch for n more events in one run (n <= SINK_EVENTS). */
static sink_batch *batch_for(an_sink *s, size_t n)
{
    if (s->fill->n + n > SINK_EVENTS || s->fill->nruns == SINK_RUNS)
        flush(s);
    return s->fill;
}

/* Events written in place, without the order stage; without memory for
 * them, a slot whose event is dropped (and the model told: s->oom). */
static an_event *batch_room(an_sink *s, size_t *room)
{
    sink_batch *b = batch_for(s, 1);
    s->dropping = !b->ev && !(b->ev = malloc(SINK_EVENTS * sizeof *b->ev));
    s->oom |= s->dropping;
    *room = s->dropping ? 1 : SINK_EVENTS - b->n;
    return s->dropping ? &s->scratch : &b->ev[b->n];
}

/* n events of (pid, tid) at ev join the batch, after its last run if they continue it. */
static void batch_add(sink_batch *b, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    if (!n)
        return;
    sink_run *last = b->nruns ? &b->runs[b->nruns - 1] : NULL;
    if (last && last->pid == pid && last->tid == tid && last->ev + last->n == ev)
        last->n += n;
    else
        b->runs[b->nruns++] = (sink_run){.pid = pid, .tid = tid, .ev = ev, .n = n};
    b->n += n;
}

static void batch_commit(an_sink *s, uint32_t pid, uint32_t tid, size_t n)
{
    sink_batch *b = s->fill;
    if (n && !s->dropping) /* n 0: maybe no room was asked for, b->ev still NULL (NULL + 0 is undefined) */
        batch_add(b, pid, tid, b->ev + b->n, n);
}

/* Events out of the order stage, oldest first: the model reads them where
 * they wait (runs never cross a segment, so n <= AN_ORDER_SEGMENT). */
static void ordered(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    an_sink *s = ctx;
    if (s->stop_when_late && (s->stopped || an_order_late(s->order))) {
        s->stopped = 1;
        return;
    }
    if (!s->threaded) {
        flush(s);
        an_model_feed(s->model, pid, tid, ev, n);
        return;
    }
    batch_add(batch_for(s, n), pid, tid, ev, n);
}

/* A segment whose events are all in batches: back to the stage once they are fed. */
/* Once the model is fed nothing (an_sink_stop_when_late), a batch fills
 * with segments alone: they go to the model thread, and back to the stage,
 * every 16 K events, not every 2048 segments (20 MiB the stage took anew
 * meanwhile: node's trace peaked at 140 MB instead of 134). */
#define STOPPED_SEGMENTS (SINK_EVENTS / AN_ORDER_SEGMENT)

static void retired(void *ctx, an_event *seg)
{
    an_sink *s = ctx;
    if (s->fill->ndone >= (s->stopped ? STOPPED_SEGMENTS : SINK_RUNS)) /* >=: it may stop with more */
        flush(s);
    s->fill->done[s->fill->ndone++] = seg;
}

/* Everything the order stage holds to the model, and the stage gone (once
 * the model is done with its segments). */
static void drop_order(an_sink *s)
{
    an_order_drain(s->order);
    s->model->late += an_order_late(s->order);
    s->model->late_across += an_order_late_across(s->order);
    if (an_order_hold_needed(s->order) > s->model->hold_needed)
        s->model->hold_needed = an_order_hold_needed(s->order);
    settle(s);
    an_order_free(s->order);
    s->order = NULL;
}

/* Enough events came to pay for the model's thread: what the direct batch
 * holds goes to the model first, then the thread starts (between a commit
 * and the next room, so the order stage is not handing events out). Direct
 * to the end when it cannot start. */
static void thread_now(an_sink *s)
{
    s->later = 0;
    flush(s);
    sink_batch *direct = s->batches;
    if (start_thread(s) != 0) {
        s->batches = direct;
        return;
    }
    free(direct->ev);
    free(direct);
    if (s->order)
        an_order_set_retire(s->order, retired);
    s->fill = s->batches;
}

an_event *an_sink_room(an_sink *s, uint32_t pid, uint32_t tid, size_t *room)
{
    if (s->later && s->committed >= s->later)
        thread_now(s);
    an_event *e = s->order ? an_order_room(s->order, pid, tid, room) : NULL;
    if (s->order && !e) { /* out of memory: what waits goes on, the rest as it comes */
        drop_order(s);
        s->model->unordered = 1;
    }
    s->to_order = e != NULL;
    return e ? e : batch_room(s, room);
}

void an_sink_commit(an_sink *s, uint32_t pid, uint32_t tid, size_t n)
{
    s->committed += n;
    if (s->to_order)
        an_order_commit(s->order, n);
    else
        batch_commit(s, pid, tid, n);
}

void an_sink_bound(an_sink *s, uint32_t pid, uint32_t tid, uint64_t first, int sorted, uint64_t rest)
{
    if (s->order)
        an_order_bound(s->order, pid, tid, first, sorted, rest);
}

void an_sink_stop_when_late(an_sink *s) { s->stop_when_late = s->order != NULL; }
int an_sink_stopped(const an_sink *s) { return s->stopped; }

void an_sink_close(an_sink *s)
{
    if (!s)
        return;
    if (s->order)
        drop_order(s);
    flush(s);
    if (s->threaded) {
        pthread_mutex_lock(&s->lock);
        s->closing = 1;
        pthread_cond_signal(&s->filled);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->filled);
        pthread_cond_destroy(&s->drained);
    }
    s->model->oom |= s->oom;
    for (size_t i = 0; s->batches && i < (s->threaded ? SINK_BATCHES : 1); i++)
        free(s->batches[i].ev);
    free(s->batches);
    free(s->fed);
    free(s);
}
