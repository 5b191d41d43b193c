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
 */
#include "analyze/sink.h"
#include "analyze/order.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SINK_EVENTS 16384 /* per batch: handoffs stay rare (4096 measured slower) */
#define SINK_RUNS 2048 /* threads that interleave in time make runs of a few events */
#define SINK_BATCHES 8

typedef struct sink_run {
    uint32_t pid, tid;
    size_t n;
} sink_run;

typedef struct sink_batch {
    size_t n, nruns;
    sink_run runs[SINK_RUNS];
    an_event ev[SINK_EVENTS];
} sink_batch;

struct an_sink {
    an_model *model;
    int threaded;
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
};

static void feed_batch(an_model *m, sink_batch *b)
{
    const an_event *ev = b->ev;
    for (size_t i = 0; i < b->nruns; i++) {
        an_model_feed(m, b->runs[i].pid, b->runs[i].tid, ev, b->runs[i].n);
        ev += b->runs[i].n;
    }
    b->n = b->nruns = 0;
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
    if (!s->batches)
        return -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->filled, NULL);
    pthread_cond_init(&s->drained, NULL);
    if (pthread_create(&s->thread, NULL, model_thread, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->filled);
        pthread_cond_destroy(&s->drained);
        free(s->batches);
        s->batches = NULL;
        return -1;
    }
    s->threaded = 1;
    return 0;
}

static void ordered(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n);

an_sink *an_sink_new(an_model *m, int threaded, int in_order, size_t hold)
{
    an_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->model = m;
    if (in_order && !(s->order = an_order_new(hold, ordered, s)))
        m->unordered = 1;
    if (!(threaded && start_thread(s) == 0) && !(s->batches = calloc(1, sizeof *s->batches))) {
        an_order_free(s->order);
        free(s);
        return NULL;
    }
    s->fill = s->batches;
    return s;
}

/* The batch being written is complete: to the model (direct), or into the
 * ring, waiting for a free batch to write next (threaded). */
static void flush(an_sink *s)
{
    if (!s->fill->n)
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
    pthread_mutex_unlock(&s->lock);
}

static an_event *batch_room(an_sink *s, size_t *room)
{
    if (s->fill->n == SINK_EVENTS || s->fill->nruns == SINK_RUNS)
        flush(s);
    *room = SINK_EVENTS - s->fill->n;
    return &s->fill->ev[s->fill->n];
}

static void batch_commit(an_sink *s, uint32_t pid, uint32_t tid, size_t n)
{
    sink_batch *b = s->fill;
    if (!n)
        return;
    sink_run *last = b->nruns ? &b->runs[b->nruns - 1] : NULL;
    if (last && last->pid == pid && last->tid == tid)
        last->n += n;
    else
        b->runs[b->nruns++] = (sink_run){.pid = pid, .tid = tid, .n = n};
    b->n += n;
}

/* Events out of the order stage, oldest first. */
static void ordered(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    an_sink *s = ctx;
    if (!s->threaded) { /* the model reads them where they wait: no copy */
        flush(s);
        an_model_feed(s->model, pid, tid, ev, n);
        return;
    }
    while (n) {
        size_t room, k;
        an_event *dst = batch_room(s, &room);
        k = n < room ? n : room;
        memcpy(dst, ev, k * sizeof *ev);
        batch_commit(s, pid, tid, k);
        ev += k;
        n -= k;
    }
}

an_event *an_sink_room(an_sink *s, uint32_t pid, uint32_t tid, size_t *room)
{
    an_event *e = s->order ? an_order_room(s->order, pid, tid, room) : NULL;
    if (s->order && !e) { /* out of memory: what waits goes on, the rest as it comes */
        an_order_drain(s->order);
        s->model->late += an_order_late(s->order);
        s->model->unordered = 1;
        an_order_free(s->order);
        s->order = NULL;
    }
    s->to_order = e != NULL;
    return e ? e : batch_room(s, room);
}

void an_sink_commit(an_sink *s, uint32_t pid, uint32_t tid, size_t n)
{
    if (s->to_order)
        an_order_commit(s->order, n);
    else
        batch_commit(s, pid, tid, n);
}

void an_sink_close(an_sink *s)
{
    if (!s)
        return;
    if (s->order) {
        an_order_drain(s->order);
        s->model->late += an_order_late(s->order);
        an_order_free(s->order);
    }
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
    free(s->batches);
    free(s);
}
