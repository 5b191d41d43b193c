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

/* Events of the system provider (Ltr.System, base/system_events.h) that the
 * heap agent writes from inside the traced program, with the heap events'
 * stacks (docs/heap-events.md, "Mappings"; docs/system-provider.md). Ids from
 * 32 on, apart from those the recorder's system thread writes. */
enum ltr_agent_sys_event_id {
    LTR_VM_EV_MAP = 32,     /* VirtualAlloc: mmap, brk/sbrk growing the break */
    LTR_VM_EV_UNMAP = 33,   /* VirtualFree: munmap, brk/sbrk shrinking it */
    LTR_VM_EV_REMAP = 34,   /* VirtualRealloc: mremap */
    LTR_VM_EV_DISCARD = 35, /* VirtualDiscard: madvise giving pages back */
    LTR_FILE_EV_OPEN = 36,  /* FileOpen: open, openat, creat (keyword FileIO) */
    LTR_FILE_EV_CLOSE = 37, /* FileClose: a descriptor's bytes read and written, at its close */
};

/* `function` of FileOpen. */
enum ltr_file_fn {
    LTR_FILE_FN_OPEN = 1, LTR_FILE_FN_OPENAT = 2, LTR_FILE_FN_CREAT = 3,
};

/* `reason` of FileClose. */
enum ltr_file_close_reason {
    LTR_FILE_CLOSED = 1, /* close() succeeded */
    LTR_FILE_AT_EXIT = 2, /* still open when the process exited: the bytes so far */
    LTR_FILE_UNTRACKED = 3, /* a descriptor past the agent's table: one event per call */
};

/* `function` of the mapping events. */
enum ltr_vm_fn {
    LTR_VM_FN_MMAP = 1, LTR_VM_FN_MMAP64 = 2, LTR_VM_FN_MUNMAP = 3, LTR_VM_FN_MREMAP = 4,
    LTR_VM_FN_MADVISE = 5, LTR_VM_FN_BRK = 6, LTR_VM_FN_SBRK = 7,
};

#endif
