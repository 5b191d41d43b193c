/*
 * event/producer.h — a producer process's side of sessions: attaching to a
 * session's shared memory (once per process, over the control socket), the
 * per-thread buffer slots, and reserve/commit of records. The provider API
 * (provider.c) and the heap agent sit on top. (The recorder never writes
 * through here: it writes its markers itself, recorder/markers.c.)
 *
 * Per-thread state is fixed: LTR_THREAD_SLOTS slots of 56 bytes, whatever the
 * number of sessions or collectors; a thread that writes to more (session,
 * collector) pairs than that hands the least recently used buffer over.
 */
#ifndef LTR_EVENT_PRODUCER_H
#define LTR_EVENT_PRODUCER_H

#include "event/registry.h"
#include "event/shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LTR_THREAD_SLOTS 8

typedef struct ltr_attach {
    _Atomic uint64_t incarnation; /* nonzero: attached and usable */
    ltr_shm *shm;
    size_t size;
    int memfd, sock, wakefd;
    uint32_t owner;     /* token the recorder gave this attachment */
    uint32_t proc_slot; /* this process's loss counters in shm */
    uint32_t denied;    /* bit c: the session does not want this process in collector c */
    uint32_t recorder_pid;
    uint64_t retry_ns;  /* after a failed attach, not before this time */
} ltr_attach;

/* The attachment to session slot s, attaching on first use. NULL when the
 * session has ended, or cannot be reached (*unreachable set; the attach is
 * retried at most every 100 ms, and events meanwhile count as lost). */
ltr_attach *ltr_producer_session(ltr_registry *reg, unsigned s, bool *unreachable);
/* The producer's one-time setup (a thread key, pthread_atfork, atexit), which
 * ltr_producer_session otherwise runs at its first call. glibc allocates
 * under the locks atexit and pthread_atfork take, so a caller whose first
 * session look may happen inside an allocation (the heap agent) runs it
 * beforehand, from its constructor. */
void ltr_producer_init(void);

/* An event record to write: what goes into its compact header. */
typedef struct ltr_cevent_in {
    uint32_t layout;
    uint32_t payload; /* bytes */
    uint64_t ts;
} ltr_cevent_in;

/* Writes the compact header of an event record (docs/trace-format.md) into
 * this thread's buffer of (session s, collector c), its timestamp a delta from
 * the buffer's previous record, and returns where the payload goes (the
 * caller fills in->payload bytes there, then commits). NULL when the record
 * cannot be written; it has then been counted as lost, unless the session is
 * ending (*lost = false). */
uint8_t *ltr_producer_reserve_event(ltr_attach *a, unsigned s, unsigned c, const ltr_cevent_in *in,
                                    bool *lost);
/* Makes the record reserved last on this thread visible to the recorder. */
void ltr_producer_commit(void);

/* Counts one event as lost in a session/collector (and for this process). */
void ltr_producer_count_lost(ltr_attach *a, unsigned c);

/* Hands every buffer this thread holds to the recorder. */
void ltr_producer_flush_thread(void);


#endif
