/*
 * ring/ring.h — a pool of fixed-size buffers in shared memory, lock-free for
 * any number of producer threads in any number of processes, with one
 * consumer (the recorder). It knows nothing of what is written into buffers.
 *
 * A producer thread owns one buffer at a time: it appends bytes and publishes
 * how far it got with one release store (the commit word), so the common path
 * has no atomic read-modify-write and no system call. A full buffer is handed
 * to the consumer through a bounded multi-producer queue; the consumer gives
 * buffers back through a lock-free free stack. The consumer may read the
 * committed prefix of a buffer that a producer still owns (flush, save,
 * crashed producer) without disturbing it: committed bytes never change.
 *
 * In overwrite mode (a flight recorder) nobody consumes the queue: it is the
 * history, oldest first. A producer that finds no free buffer takes the
 * oldest published one for itself and counts its events as overwritten, so
 * the newest events are the ones kept. A reader of the history checks after
 * copying a buffer that its queue position was not taken meanwhile.
 *
 * Everything is addressed by index, never by pointer, because each process
 * maps the memory at its own address.
 */
#ifndef LTR_RING_H
#define LTR_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "LTRQ": queue slots of 64 bits, a turn beside the index ("LTRR" had
 * 32-bit slots: an agent of before must not attach) */
#define LTR_RING_MAGIC 0x4c545251u
#define LTR_RING_NONE UINT32_MAX
/* A queue slot whose producer died between claiming its position and
 * storing its buffer there (its process exec'd or was killed inside
 * ltr_ring_publish): the consumer of an overwrite ring marks it so, and a
 * producer taking the oldest buffer steps over it (ltr_ring_mark_dead). */
#define LTR_RING_SLOT_DEAD UINT32_MAX

/* A queue slot holds turn << 32 | tag. tag is the stored buffer's index + 1,
 * 0 for none, or LTR_RING_SLOT_DEAD; turn is the lap of the position the
 * slot served last (position / nbuf + 1, modulo 2^32; 0 before the first).
 * The slot is open for position pos while its turn is before pos's
 * (compared modulo 2^32): the producer that claimed pos stores into it
 * with a compare-and-swap that needs it open, so a store made late, after
 * the consumer stepped over pos (the producer stopped between its claim
 * and its store for seconds: SIGSTOP, a debugger, a frozen cgroup), finds
 * the slot closed at pos's turn or taken by a later lap, and goes to a
 * new position instead (ltr_ring_store). With index + 1 alone a store a
 * full lap late (the queue came round to pos + nbuf meanwhile) landed in
 * the next lap's position: it wrote over the buffer published there (in no
 * slot then, its events neither written nor counted) or was written over
 * by it. A turn wraps after 2^32 laps: only a store late by 2^31 laps or
 * more (2^31 * nbuf buffers published while one producer stands still)
 * could be taken for an early one. */
#define LTR_RING_SLOT(turn, tag) ((uint64_t)(uint32_t)(turn) << 32 | (uint32_t)(tag))
#define LTR_RING_SLOT_TURN(s) ((uint32_t)((s) >> 32))
#define LTR_RING_SLOT_TAG(s) ((uint32_t)(s))
#define LTR_RING_TURN(pos, nbuf) ((uint32_t)((pos) / (nbuf) + 1))
#define LTR_RING_OVERWRITE 0x1u /* flags: producers reuse the oldest full buffer */

enum ltr_buf_state { LTR_BUF_FREE = 0, LTR_BUF_ACTIVE = 1, LTR_BUF_FULL = 2 };

/* commit word: bits 0..31 bytes committed, bits 32..63 events committed */
#define LTR_COMMIT(bytes, events) ((uint64_t)(bytes) | (uint64_t)(events) << 32)
#define LTR_COMMIT_BYTES(c) ((uint32_t)(c))
#define LTR_COMMIT_EVENTS(c) ((uint32_t)((c) >> 32))

typedef struct ltr_ring_buf {
    _Atomic uint64_t commit;  /* written by the owner only */
    _Atomic uint32_t state;   /* enum ltr_buf_state */
    _Atomic uint32_t next;    /* free stack link: index + 1, 0 = end */
    uint32_t pid, tid;        /* owner thread, set when acquired */
    uint32_t owner;           /* owner's attachment token (a pid is reused by exec) */
    uint32_t pad0;
    _Atomic uint64_t seq;     /* acquisition order within the ring */
    uint8_t pad[24];
} ltr_ring_buf;

typedef struct ltr_ring {
    uint32_t magic, buffer_size, nbuf, flags;
    uint64_t bufs_offset, data_offset, queue_offset, total_size;
    uint8_t pad1[24];
    /* each hot word on its own cache line */
    _Alignas(64) _Atomic uint64_t free_head; /* tag << 32 | (index + 1) */
    _Atomic uint32_t free_count;
    _Atomic uint32_t own_count; /* buffers owned by single threads (tid != 0), not by CPUs */
    _Atomic uint32_t cpus_used; /* a CPU's buffer was taken once: the consumer is woken early */
    _Alignas(64) _Atomic uint64_t queue_tail; /* producers: fetch_add */
    _Alignas(64) _Atomic uint64_t queue_head; /* consumer, or stealing producers */
    _Alignas(64) _Atomic uint64_t next_seq;
    _Atomic uint64_t events_lost; /* refused by producers: no buffer, too large */
    _Atomic uint32_t wake_pending; /* a producer asked the consumer to wake */
    _Atomic uint64_t events_overwritten, buffers_overwritten; /* overwrite mode */
} ltr_ring;

/* Bytes of shared memory a ring of nbuf buffers of buffer_size bytes needs. */
size_t ltr_ring_size(uint32_t buffer_size, uint32_t nbuf);
/* Lays out a ring at mem (size from ltr_ring_size), all buffers free. */
void ltr_ring_init(void *mem, uint32_t buffer_size, uint32_t nbuf, uint32_t flags);
/* Checks that mem of `avail` bytes holds a sane ring (a producer attaching). */
bool ltr_ring_valid(const ltr_ring *r, size_t avail);

/* A ring as one side sees it: the shared header (its atomic words only) and
 * the layout, computed from sizes that side got itself, never read back.
 * Every producer can write the whole shared memory (a buggy or hostile
 * traced program too), so neither side takes an offset, a size or an index
 * from it on trust: the consumer's geometry comes from what it created, a
 * producer's from the header as it was when the producer attached (checked
 * then, ltr_ring_view_attach); each index read from the queue or the free
 * stack is checked against nbuf, and every walk is bounded. What the
 * consumer finds impossible is skipped and counted in damage; a producer
 * that meets it loses the event (counted), never reads or writes outside
 * the ring, never loops for good. */
typedef struct ltr_ring_view {
    ltr_ring *shared;
    ltr_ring_buf *bufs;
    _Atomic uint64_t *slots; /* LTR_RING_SLOT values */
    uint8_t *data;
    uint32_t buffer_size, nbuf;
    uint32_t flags;  /* LTR_RING_OVERWRITE as the header said at attach (producers) */
    uint64_t damage; /* queue entries and buffer states found impossible (consumer) */
} ltr_ring_view;

/* The view of the ring at mem, laid out by ltr_ring_init with these sizes. */
void ltr_ring_view_init(ltr_ring_view *v, void *mem, uint32_t buffer_size, uint32_t nbuf);
/* A producer's view of the ring at mem, of `avail` bytes of shared memory:
 * its header read once, checked (ltr_ring_valid's checks, on the copy), and
 * never again. False when it is not a sane ring. */
bool ltr_ring_view_attach(ltr_ring_view *v, void *mem, size_t avail);
/* idx must be below v->nbuf. */
static inline ltr_ring_buf *ltr_ring_vbuf(const ltr_ring_view *v, uint32_t idx)
{
    return v->bufs + idx;
}
static inline uint8_t *ltr_ring_vdata(const ltr_ring_view *v, uint32_t idx)
{
    return v->data + (size_t)idx * v->buffer_size;
}

/* Producer: takes a free buffer for thread (pid, tid); in overwrite mode, the
 * oldest published one if none is free. LTR_RING_NONE if none. */
uint32_t ltr_ring_acquire(ltr_ring_view *v, uint32_t pid, uint32_t tid, uint32_t owner);
/* Producer: the same for a thread's own buffer, refused (LTR_RING_NONE)
 * while max_own buffers are owned by single threads: the rest is kept for
 * the CPUs' buffers (below), so that a thread that gets none of its own
 * still has somewhere to write. */
uint32_t ltr_ring_acquire_own(ltr_ring_view *v, uint32_t pid, uint32_t tid, uint32_t owner, uint32_t max_own);
/* The own buffers a producer allows when its threads can fall back on the
 * CPUs' buffers of a process on ncpu CPUs: an eighth of the ring is kept for
 * those (at least 2 per CPU, at most half). */
uint32_t ltr_ring_own_max(const ltr_ring_view *v, uint32_t ncpu);
/* Producer: gives back a buffer it acquired and never wrote into (nor
 * anyone else): free again at once, with no trip through the consumer. */
void ltr_ring_unacquire(ltr_ring_view *v, uint32_t idx);
/* Producer: publishes how much of its buffer holds complete events. */
static inline void ltr_ring_commit(ltr_ring_view *v, uint32_t idx, uint32_t bytes, uint32_t events)
{
    atomic_store_explicit(&v->bufs[idx].commit, LTR_COMMIT(bytes, events),
                          memory_order_release);
}
/* Producer: found no buffer. True when the caller should wake the consumer
 * (nobody asked since it last looked). */
static inline bool ltr_ring_want_wake(ltr_ring_view *v)
{
    return atomic_exchange_explicit(&v->shared->wake_pending, 1, memory_order_relaxed) == 0;
}
/* Producer: gives its buffer to the consumer (full, or the thread is done).
 * Returns true when the consumer should be woken (few free buffers left).
 * ltr_ring_claim, then ltr_ring_store. */
bool ltr_ring_publish(ltr_ring_view *v, uint32_t idx);
/* Producer: the first steps of ltr_ring_publish: the buffer marked FULL,
 * a queue position claimed for it (returned). */
uint64_t ltr_ring_claim(ltr_ring_view *v, uint32_t idx);
/* Producer: buffer idx stored into the slot of position pos, claimed for
 * it, if that slot is still open for pos (ring.h, LTR_RING_SLOT); if the
 * consumer stepped over pos meanwhile, into a new position claimed now.
 * Returns the position it is stored at, or UINT64_MAX if slot after slot
 * was found closed (a scribbler): the buffer is then FULL in no slot, as a
 * producer killed between claim and store leaves it, and the recorder
 * takes it when its process ends. */
uint64_t ltr_ring_store(ltr_ring_view *v, uint64_t pos, uint32_t idx);

/* ---- per-CPU buffers (percpu.c) ----
 * A thread without a buffer of its own appends to the buffer of the CPU it
 * runs on, which every thread of its process running there shares: so the
 * number of threads that can write at once is not bounded by the buffers.
 * The process keeps, per collector, a table of its CPUs' buffers (slots[cpu]
 * = index + 1, 0 for none), in its own memory. An append is one restartable
 * sequence (prim/rseq.h): the whole record and the commit word, or nothing,
 * tried again; no writer waits for another, and one killed halfway leaves
 * nothing behind. A CPU buffer's tid is 0, and each record in it starts with
 * its thread's id (docs/trace-format.md, "Per-CPU buffers"). */
enum ltr_cpu_append { LTR_CPU_APPENDED, LTR_CPU_NO_BUFFER, LTR_CPU_UNSUPPORTED };
/* Appends len bytes to this CPU's buffer in slots (nslots CPUs), replacing
 * it by a new one (the full one published) when it has no room. *wake is set
 * when the consumer should be woken. LTR_CPU_NO_BUFFER: no buffer could be
 * had (or the record is larger than one); LTR_CPU_UNSUPPORTED: no rseq, or a
 * CPU beyond the table. */
enum ltr_cpu_append ltr_ring_cpu_append(ltr_ring_view *v, uint32_t *slots, uint32_t nslots, uint32_t pid,
                                        uint32_t owner, const void *rec, uint32_t len, bool *wake);
/* True when this thread can append to CPU buffers (rseq registered). */
bool ltr_ring_cpu_usable(void);


/* Consumer: next published buffer (a valid index whose state is FULL), or
 * LTR_RING_NONE. Entries that are neither are dropped from the queue and
 * counted as damage; at most nbuf of them per call. */
uint32_t ltr_ring_take(ltr_ring_view *v);
/* Consumer: returns a buffer to the free stack. False (counted as damage, the
 * buffer left out) if the stack kept changing under it: someone scribbles. */
bool ltr_ring_release(ltr_ring_view *v, uint32_t idx);
/* Consumer: hands a buffer to the history (memory mode: a dead producer's). */
void ltr_ring_hand_in(ltr_ring_view *v, uint32_t idx);
/* Consumer: the commit word of a buffer (acquire), bytes cut to the buffer
 * size; *bad set (and damage counted) when its bytes were past it. */
uint64_t ltr_ring_committed(ltr_ring_view *v, uint32_t idx, bool *bad);
/* Consumer: buffers in the queue that are not visible yet (a producer between
 * reserving a queue slot and filling it). Used to skip a slot whose producer died. */
uint64_t ltr_ring_queued(ltr_ring_view *v);
/* Consumer: steps the head over its slot, claimed and never filled,
 * closing the slot for its position: a store made there later goes to a
 * new position (ltr_ring_store), taken in its turn. False, the head left
 * there, if the slot was filled meanwhile (ltr_ring_take takes it). */
bool ltr_ring_skip_slot(ltr_ring_view *v);

/* Reading the history of an overwrite ring: positions [head, tail). */
static inline uint64_t ltr_ring_head(const ltr_ring_view *v)
{
    return atomic_load_explicit(&v->shared->queue_head, memory_order_acquire);
}
static inline uint64_t ltr_ring_tail(const ltr_ring_view *v)
{
    return atomic_load_explicit(&v->shared->queue_tail, memory_order_acquire);
}
/* The first position of the history worth reading: head, or tail - nbuf when
 * the two are further apart than a ring can hold (damage). */
uint64_t ltr_ring_history_start(ltr_ring_view *v, uint64_t tail);
/* The buffer at a queue position, or LTR_RING_NONE (being published, taken,
 * or an impossible entry). */
uint32_t ltr_ring_at(ltr_ring_view *v, uint64_t pos);
/* ltr_ring_at for a position below a tail read: an empty slot there is a
 * publication under way (the producer took the position, its store of the
 * buffer comes next), waited for up to *wait_ns, which is lessened by the
 * time waited: a budget for many positions, so that a traced program
 * emptying every slot costs it once, not once a position (a ring of 4096
 * buffers: 82 s of a save at 20 ms each, the recorder deaf meanwhile);
 * LTR_RING_NONE if it is still empty then (a producer stopped or killed
 * between the two), dead, or was taken for reuse. */
uint32_t ltr_ring_at_published(ltr_ring_view *v, uint64_t pos, uint64_t *wait_ns);
/* True if the buffer at pos was not taken for reuse since ltr_ring_at: call
 * after copying it, to know the copy is whole. */
bool ltr_ring_still_at(ltr_ring_view *v, uint64_t pos);
/* Closes the slot of queue position pos (tag 0 at pos's turn), just taken
 * from the head (the head moved past it) with value s, unless the slot
 * holds another value by now: position pos + nbuf's, stored meanwhile. In an overwrite ring that
 * happens: while the producer that took pos is preempted between moving the
 * head and clearing the slot, others take the next oldest buffers, fill
 * them and publish them round to pos + nbuf. Cleared with a plain store,
 * that buffer was in no slot: its events neither saved nor counted, and
 * the empty slot stopped every producer taking the oldest buffer (their
 * events lost) until the recorder marked it dead 2 s later (a stress test
 * of 8 threads on a ring of 4: 3 runs in 10). */
void ltr_ring_clear_taken(ltr_ring_view *v, uint64_t pos, uint64_t s);
/* Overwrite ring: the first position of [head, tail) whose slot is empty
 * (claimed, not stored), or UINT64_MAX. */
uint64_t ltr_ring_first_hole(ltr_ring_view *v);
/* The same, the first `most` of them into pos_out; how many. */
unsigned ltr_ring_holes(ltr_ring_view *v, uint64_t *pos_out, unsigned most);
/* Overwrite ring: a dead producer's FULL buffer idx stored into the empty
 * slot of position pos (still queued), the one it claimed before it died
 * (killed inside ltr_ring_publish between claiming a position and storing
 * there). Handed in at a new position instead (ltr_ring_hand_in), it made
 * one more position than buffers: once all were queued, a publication
 * stored over the oldest's slot, and the queue went wrong for good (a
 * ring of 8: its saves held 1 buffer, 912 of 60 500 events counted
 * nowhere). False if the slot is not empty (any more). Call only on a slot
 * seen empty for long, as ltr_ring_mark_dead. */
bool ltr_ring_fill_hole(ltr_ring_view *v, uint64_t pos, uint32_t idx);
/* Overwrite ring: the empty slot at pos marked LTR_RING_SLOT_DEAD (false if
 * it was filled meanwhile, or pos is no longer in the queue). Producers
 * taking the oldest buffer stop at an empty slot (its producer may be about
 * to store), so a slot left empty by a dead producer stopped them all for
 * the rest of the session: every later event lost. Call only on a slot
 * seen empty for long (seconds); a producer only stopped there that
 * stores later finds it closed and takes a new position (ltr_ring_store). */
bool ltr_ring_mark_dead(ltr_ring_view *v, uint64_t pos);

#endif
