/*
 * analyze/sink.h — where the analyzer's heap events go on their way to the
 * model (model.h): straight in, or through a model thread on the other core
 * while the main thread goes on decoding. Either way the model sees the
 * events in time order (order.h): each thread's in the order committed,
 * threads merged by timestamp. Either way the results are the same.
 *
 * Events are written in place (no copy): the decoder asks for room, writes
 * events of one thread there and commits them. With a thread, full batches
 * go through a small ring, so memory stays bounded whatever the trace size.
 */
#ifndef LTR_ANALYZE_SINK_H
#define LTR_ANALYZE_SINK_H

#include "analyze/model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct an_sink an_sink;

/* A trace's file size does not say how many events it holds: the model
 * thread's default start, after this many (sink.c). */
#define AN_SINK_THREAD_LATER ((uint64_t)1 << 18)

/* A sink feeding m, which it owns until an_sink_close. threaded 1: the model
 * runs on a thread of its own (direct when the thread cannot start); n > 1:
 * so once n events were committed (AN_SINK_THREAD_LATER); 0: direct.
 * in_order: threads are merged by time, at most hold events waiting (0: the
 * default); else the model takes them as committed. NULL when memory runs out. */
an_sink *an_sink_new(an_model *m, uint64_t threaded, int in_order, size_t hold);
/* Where to write the next events of (pid, tid): *room >= 1 of them. Valid
 * until the next commit. */
an_event *an_sink_room(an_sink *s, uint32_t pid, uint32_t tid, size_t *room);
/* The first n events written at the last room are (pid, tid)'s, in order. */
void an_sink_commit(an_sink *s, uint32_t pid, uint32_t tid, size_t n);
/* What is still to come, as order.h's an_order_bound: the events that
 * waited for the time order and need not go on to the model now. */
void an_sink_bound(an_sink *s, uint32_t pid, uint32_t tid, uint64_t first, int sorted, uint64_t rest);
/* A first pass that is analyzed again once an event comes too late for the
 * time order (analyze.c): from the first late event on, the model is fed
 * nothing more (its figures will not be reported), while the order stage
 * goes on counting what came late and how far behind. */
void an_sink_stop_when_late(an_sink *s);
/* Whether the model stopped being fed (an_sink_stop_when_late). */
int an_sink_stopped(const an_sink *s);
/* Every event committed is in the model when this returns (m->late says
 * how many came too late for the time order), and the thread is gone;
 * frees s. NULL is ignored. */
void an_sink_close(an_sink *s);

#endif
