/*
 * event/producer.h — a producer process's side of sessions: attaching to a
 * session's shared memory (once per process, over the control socket), the
 * per-thread buffer slots, and reserve/commit of records. The provider API
 * (provider.c) and the heap agent sit on top. (The recorder never writes
 * through here: it writes its markers itself, recorder/markers.c.)
 *
 * Per-thread state is fixed: LTR_THREAD_SLOTS slots of 64 bytes and a
 * kilobyte to build a record in, whatever the number of sessions or
 * collectors; a thread that writes to more (session, collector) pairs than
 * that hands the least recently used buffer over. A thread gets a buffer of
 * its own while the ring has one to spare; beyond, it shares the buffer of
 * the CPU it runs on with the other threads there (ring.h).
 */
#ifndef LTR_EVENT_PRODUCER_H
#define LTR_EVENT_PRODUCER_H

#include "event/registry.h"
#include "event/shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LTR_THREAD_SLOTS 8

/* Where things are in a session's shared memory, as its header said when
 * the process attached, checked then (finish_attach) and never read from it
 * again: any traced program can write over the header, and a producer must
 * not follow it out of the mapping (ring.h, "a ring as one side sees it"). */
typedef struct ltr_shm_layout {
    uint32_t ncollectors, nprocs;
    ltr_ring_view rings[LTR_MAX_COLLECTORS];
    uint8_t *meta;
    uint64_t meta_capacity;
    ltr_shm_proc *procs;
} ltr_shm_layout;

/* What an fd was when the agent took it (fstat's device and inode): the
 * traced program owns the fd table, and a daemon that closes every fd above
 * 2 after the agent attached reuses the numbers for its own files. */
typedef struct ltr_fd_id {
    uint64_t dev, ino;
} ltr_fd_id;

typedef struct ltr_attach {
    _Atomic uint64_t incarnation; /* nonzero: attached and usable */
    ltr_shm *shm;
    size_t size;
    bool mapped; /* shm is this slot's, not retired yet (its memfd is closed once mapped) */
    int sock, wakefd;
    ltr_fd_id sock_id, wakefd_id; /* each used only while it is still that (producer.c) */
    uint32_t owner;     /* token the recorder gave this attachment */
    uint32_t proc_slot; /* this process's loss counters in shm */
    uint32_t denied;    /* bit c: the session does not want this process in collector c */
    uint32_t recorder_pid;
    /* This process as the session's trace names it, in every record and
     * buffer header: the recorder's pid for it (its attach answer's
     * trace_pid), which is getpid() unless the process is in a pid
     * namespace below the recorder's (a container): there two containers'
     * pid 1 were one process of the trace. Per attachment: recorders in
     * two namespaces see the process by two pids. */
    uint32_t pid;
    /* Where things are in shm (below). Each attachment has its own, never
     * freed, like cpus: a thread still writing to an ended session keeps
     * a whole view of that one, never half of the next one's. */
    struct ltr_shm_layout *lay;
    /* Per collector c, cpus + c * ncpu: the CPU buffers of this process
     * (ring.h, "per-CPU buffers"). Each attachment has its own, never freed:
     * a thread still writing to an ended session only touches that one. */
    uint32_t *cpus;
    /* Attaching (under the producer's lock): sock is the connection, and
     * until the answer came pending_inc the incarnation asked for. */
    uint64_t pending_inc;
    uint64_t waited_inc;        /* the incarnation whose answer was waited for once */
    uint64_t backoff_ns;        /* after a failed attach: the pause before the next */
    /* No attach step for incarnation retry_inc before retry_ns (read without
     * the lock: a stopped recorder then costs an event a clock read). */
    _Atomic uint64_t retry_ns, retry_inc;
    /* Events this process lost to incarnation lost_inc before it could
     * attach, per collector: added to its own loss counters once attached. */
    _Atomic uint64_t unattached_lost[4];
    uint64_t lost_inc;
    /* The incarnation this process found it is not of the registry's user
     * (ltr_registry_reaches) when it last tried: its events are not the
     * session's, not lost. */
    _Atomic uint64_t foreign_inc;
} ltr_attach;

/* The attachment to session slot s, attaching on first use. NULL when the
 * session has ended, or cannot be reached (*unreachable set, and the event
 * counts as lost). Never waits long on the recorder: the first attach of the
 * process waits at most 250 ms for its answer, later steps not at all (an
 * answer still awaited is looked for every 10 ms; a failed attach is tried
 * again after 100 ms, doubling up to 5 s). */
ltr_attach *ltr_producer_session(ltr_registry *reg, unsigned s, bool *unreachable);
/* Leaves the registry (ltr_registry_leave: this process can no longer be
 * the user who mapped it) and with it every session's memory it holds:
 * the live sessions' and the retired ones' become zero pages in
 * place, their attachments end and their connections close. A session's
 * memory holds every process's events, which the process's new user may
 * neither read nor write; what the process does from then on is no
 * session's (docs/design.md, "A shim in every process"). No wait, no
 * allocation, errno kept; true when it left now. */
bool ltr_producer_leave(void);
/* The producer's one-time setup (a thread key, pthread_atfork, atexit), which
 * ltr_producer_session otherwise runs at its first call. glibc allocates
 * under the locks atexit and pthread_atfork take, so a caller whose first
 * session look may happen inside an allocation (the heap agent) runs it
 * beforehand, from its constructor. */
void ltr_producer_init(void);
/* The heap agent came into this running process by an attach (ltr's
 * injector): its attach requests say so, and a session that names no
 * process (no --pid, no --name) does not take it (docs/attach.md). */
void ltr_producer_set_injected(void);

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
/* Makes the record reserved last on this thread visible to the recorder.
 * False when it could not be (its thread writes to its CPU's buffer, and no
 * buffer could be had): it has then been counted as lost. */
bool ltr_producer_commit(void);

/* Writes a whole record (its header and n bytes of payload) when the
 * session is still its incarnation inc (the one layout was taken for) and
 * this thread's buffer of (s, c) for it has room: true when written and
 * committed. False when nothing was done: the caller then goes the general
 * way (reserve, copy, commit), which takes buffers, writes to the CPU's
 * buffer and counts losses. */
bool ltr_producer_put(ltr_attach *a, uint64_t inc, unsigned s, unsigned c, uint32_t layout, uint64_t ts,
                      const uint8_t *payload, uint32_t n);
/* Appends a metadata record (framed: kind, 0, size) to the session's
 * metadata region, where the attachment's checked copy says it is. 0, or
 * -ENOSPC when it is full (counted in its lost word). */
int ltr_producer_meta_append(ltr_attach *a, const uint8_t *record, uint32_t size);
/* Counts one event as lost in a session/collector (and for this process). */
void ltr_producer_count_lost(ltr_attach *a, unsigned c);
/* Notes an event lost because this process is not attached to session s (the
 * registry counts it for the session): it is added to the process's own
 * counters if it attaches later. */
void ltr_producer_note_unattached(unsigned s, unsigned c);

/* Hands every buffer this thread holds to the recorder. */
void ltr_producer_flush_thread(void);
/* The same for the buffers of file-mode sessions only: a memory-mode save
 * takes the buffers being filled as they are, and one handed over early is
 * a buffer of the ring spent (a heap snapshot flushed each time: 32 of them
 * filled a heapsnapshot ring of 32 MB holding 20 KB of events). */
void ltr_producer_flush_thread_to_files(void);


#endif
