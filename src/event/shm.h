/*
 * event/shm.h — the shared memory of one session, as producers and the recorder
 * both see it: a header, one buffer ring per collector, a metadata region
 * (providers, event layouts, processes, stacks: a ring the recorder copies
 * out of, keeping what a memory-mode save needs itself), and a table of
 * per-process loss counters. The recorder creates it (memfd) and hands it to each producer
 * process over the control socket. docs/design.md describes the protocol.
 */
#ifndef LTR_EVENT_SHM_H
#define LTR_EVENT_SHM_H

#include "ring/ring.h"

#include <stdatomic.h>
#include <stdint.h>

#define LTR_SHM_MAGIC 0x324d485352544cull /* "LTRSHM2": the metadata region a ring */
#define LTR_MAX_COLLECTORS 4
#define LTR_SHM_PROCS 4096
/* Layouts, stacks and modules not yet copied out by the recorder (which
 * does at every round of its loop, and gives the pages back). Appended to
 * as a ring: it was append-only, and 256 MiB was full after about 165
 * `python3 -c pass` through pyenv's shims (1.56 MB of metadata each), every
 * later process's layouts and stacks lost with its events. */
#define LTR_SHM_META_CAPACITY (256ull << 20)
/* The kind of the filler a record that would not fit before the region's
 * end leaves there (it starts again at the region's start); never in a trace. */
#define LTR_SHM_META_PAD 0xffffu

/* DONE: the recorder has written everything and let go of the memory; only
 * then may a producer give the pages back (see producer.c, retire). */
enum ltr_session_state { LTR_SESSION_RUNNING = 1, LTR_SESSION_STOPPING = 2, LTR_SESSION_DONE = 3 };
enum ltr_session_mode { LTR_MODE_MEMORY = 0, LTR_MODE_FILE = 1 };

typedef struct ltr_shm_collector {
    char name[32];
    uint64_t ring_offset;
} ltr_shm_collector;

/* Per-process counters; slot claimed by the recorder when the process attaches. */
typedef struct ltr_shm_proc {
    _Atomic uint32_t pid;
    uint32_t pad;
    _Atomic uint64_t events_lost[LTR_MAX_COLLECTORS];
} ltr_shm_proc;

typedef struct ltr_shm {
    uint64_t magic;
    uint64_t size;
    uint64_t incarnation; /* equals the registry's for a live session */
    uint32_t mode, ncollectors;
    uint64_t start_ns;
    ltr_shm_collector collectors[LTR_MAX_COLLECTORS];
    uint64_t meta_offset, meta_capacity;
    uint64_t procs_offset;
    uint32_t nprocs, pad;
    _Alignas(64) _Atomic uint32_t state; /* enum ltr_session_state */
    _Alignas(64) _Atomic uint64_t meta_used;
    _Atomic uint32_t next_layout_id;
    _Atomic uint64_t meta_lost; /* metadata records that did not fit */
    /* Where the recorder has copied the region to (the recorder's own copy
     * decides what it reads; producers only keep out of what it has not
     * read). meta_used and meta_read count on: a place is one mod capacity. */
    _Alignas(64) _Atomic uint64_t meta_read;
    /* Events producers refused while the session's state was not RUNNING,
     * per collector: a memory-mode stop whose save fails lets the session
     * go on, and the recorder counts those of its attempt as lost, as it
     * does those refused outside a stop (a state a traced program wrote). */
    _Alignas(64) _Atomic uint64_t stopping_refused[LTR_MAX_COLLECTORS];
} ltr_shm;

static inline ltr_ring *ltr_shm_ring(ltr_shm *s, unsigned collector)
{
    return (ltr_ring *)((uint8_t *)s + s->collectors[collector].ring_offset);
}
static inline uint8_t *ltr_shm_meta(ltr_shm *s)
{
    return (uint8_t *)s + s->meta_offset;
}
static inline ltr_shm_proc *ltr_shm_procs(ltr_shm *s)
{
    return (ltr_shm_proc *)((uint8_t *)s + s->procs_offset);
}

/* Appends one metadata record (already framed: kind, 0, size) to the region
 * at meta, of `capacity` bytes (a multiple of 8): a place and capacity the
 * caller knows, never taken from the shared header (the recorder's own; a
 * producer's copy made when it attached, ltr_producer_meta_append); only
 * the used, read and lost words of shm are used. A record never wraps: one
 * that would reach past the end leaves a LTR_SHM_META_PAD record to it and
 * goes at the start. The kind is stored last, with release, so a reader
 * that sees a nonzero kind sees the whole record. Returns 0, or -ENOSPC
 * when the region holds too much the recorder has not read (counted lost). */
int ltr_shm_meta_append_to(uint8_t *meta, uint64_t capacity, ltr_shm *shm, const uint8_t *record, uint32_t size);

#endif
