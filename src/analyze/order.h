/*
 * analyze/order.h — puts the analyzer's heap events back in time order
 * before the model sees them. A trace holds each thread's events in time
 * order, but the buffers of different threads interleave in the order the
 * recorder wrote them (docs/trace-format.md, "EVENTS chunks"): a memory-mode
 * save writes the ring oldest-released first and the buffers still being
 * filled last, a file-mode recorder writes a buffer when it is full and the
 * filled part of the others once a second. The peak, the pairing of a free
 * with its allocation when an address is reused across threads, and the
 * window's edges need the global order: each thread's events wait in a queue
 * of their own, and a k-way merge (a heap of the queues by their first
 * event's time) hands them on, oldest first.
 *
 * Memory stays bounded: at most `hold` events wait (more would grow with the
 * trace, not with the live set). Past that the oldest are handed on; an event
 * that comes later than what was already handed on is "late": it still goes
 * to the model (whose pending frees pair a free met before its allocation),
 * and is counted so that the report can say its figures may be off.
 */
#ifndef LTR_ANALYZE_ORDER_H
#define LTR_ANALYZE_ORDER_H

#include "analyze/model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct an_order an_order;

/* Where ordered events go: n events of (pid, tid), in order. */
typedef void (*an_order_emit)(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n);

/* Events that may wait by default: a memory-mode save held its whole content
 * in the recorder's ring, and the buffers still being filled, written last,
 * may hold events of its very start, so a save gets room for 2 M (80 MB); a
 * file written as it went writes every buffer's filled part once a second,
 * so a trace of up to 256 K events a second needs no more than 256 K (10 MB):
 * holding more costs time on every trace (docs/analysis.md, "Speed"). */
#define AN_ORDER_HOLD_SAVE (1u << 21)
#define AN_ORDER_HOLD_FILE (1u << 18)

/* A segment of events (AN_ORDER_SEGMENT of them) whose events were all handed on. */
typedef void (*an_order_retire)(void *ctx, an_event *seg);
#define AN_ORDER_SEGMENT 256

/* hold: events that may wait (0: AN_ORDER_HOLD_FILE). NULL without memory. */
an_order *an_order_new(size_t hold, an_order_emit emit, void *ctx);
/* Room for the next events of (pid, tid): *room >= 1; NULL without memory. A
 * room whose events are not committed is given again by the next room there
 * (the analyzer builds a window in place and may take none of it). */
an_event *an_order_room(an_order *o, uint32_t pid, uint32_t tid, size_t *room);
/* The first n events written at the last room are committed, in that thread's order. */
void an_order_commit(an_order *o, size_t n);
/* Hands on every waiting event, oldest first. */
void an_order_drain(an_order *o);
/* What is still to come (a complete trace's index, format/chunkindex.h):
 * every event at or after rest, but (pid, tid)'s being read, at or after
 * first, and each one committed at or after the one before when sorted.
 * Every waiting event older than that goes on now, and as (pid, tid)'s come
 * (sorted), those older than them. Strictly older: the order among events
 * of one time looks at those of other threads at that time (q_before),
 * which may still come. A bound that lies makes events late (counted). */
void an_order_bound(an_order *o, uint32_t pid, uint32_t tid, uint64_t first, int sorted, uint64_t rest);
/* Segments handed on go to retire instead of back to the stage's pool: the
 * events handed on stay where they are until the segment comes back with
 * an_order_recycle (a consumer on another thread reads them there, no copy).
 * Segments not back by an_order_free are the caller's to free. */
void an_order_set_retire(an_order *o, an_order_retire retire);
void an_order_recycle(an_order *o, an_event *seg);
/* Events that came after later ones of their own process had been handed
 * on; and those that came after later ones of other processes only (which
 * changes only the figures of all processes together). */
uint64_t an_order_late(const an_order *o);
uint64_t an_order_late_across(const an_order *o);
/* With events late: a hold under which they would not have been (an upper
 * bound, from how many events were handed on after the time of each); 0
 * with none late. */
size_t an_order_hold_needed(const an_order *o);
void an_order_free(an_order *o);

#endif
