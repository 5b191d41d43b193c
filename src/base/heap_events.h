/*
 * base/heap_events.h — the names the heap agent and the trace's readers agree
 * on (docs/heap-events.md): the heap provider's name (its GUID is
 * ltr_guid_from_name of it) and the ids of its events. The agent writes them,
 * the recorder enables the provider by this name and the analyzer recognises
 * the events by them; in base/, the one layer all three may include, so that
 * the contract is written once.
 */
#ifndef LTR_BASE_HEAP_EVENTS_H
#define LTR_BASE_HEAP_EVENTS_H

#define LTR_HEAP_PROVIDER "Ltr.Heap"

/* Event ids of the heap provider; they never change (docs/heap-events.md). */
enum ltr_heap_event_id {
    LTR_HEAP_EV_ALLOC = 1,
    LTR_HEAP_EV_FREE = 2,
    LTR_HEAP_EV_REALLOC = 3,
};

/* Heap snapshots (docs/heap-events.md, "Heap snapshots"): a provider of
 * their own, so that a session receives snapshots without every allocation. */
#define LTR_HEAP_SNAPSHOT_PROVIDER "Ltr.HeapSnapshot"

enum ltr_heap_snapshot_event_id {
    LTR_SNAP_EV_BEGIN = 1,
    LTR_SNAP_EV_STACK = 2,
    LTR_SNAP_EV_END = 3,
};

/* A SnapshotStack's bytes in blocks older than these ages, in seconds. */
#define LTR_SNAP_AGES 4
static const unsigned ltr_snap_age_s[LTR_SNAP_AGES] __attribute__((unused)) = {60, 600, 3600, 86400};

#endif
