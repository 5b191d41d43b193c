/*
 * ring/ring.c — the lock-free buffer pool of ring.h.
 *
 * Free buffers form a Treiber stack whose head carries a 32-bit tag against
 * ABA. Published buffers go through a bounded MPSC queue of nbuf slots: a
 * producer reserves a position with fetch_add and stores its buffer there
 * with a compare-and-swap that needs the slot open for that position's
 * turn (ring.h, LTR_RING_SLOT); the consumer reads slots in order and
 * closes each at its turn as it passes. At most nbuf buffers exist, so a
 * slot is passed before its position comes round again, except in an
 * overwrite ring where the one who took a position may still be about to
 * close it (ltr_ring_clear_taken). A producer that finds its slot closed
 * (it was stopped between claim and store, and the consumer stepped over
 * its position) claims a new position: a compare-and-swap where a plain
 * store was, once per buffer handed in (bench/write-path.sh: no change
 * measured, docs/benchmarks.md "session 32").
 */
#include "ring/ring.h"
#include "prim/prim.h"

#include <sched.h>
#include <string.h>
#include <time.h>

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) & ~(a - 1);
}

size_t ltr_ring_size(uint32_t buffer_size, uint32_t nbuf)
{
    size_t bufs = align_up(sizeof(ltr_ring), 64);
    size_t queue = align_up(bufs + sizeof(ltr_ring_buf) * nbuf, 64);
    size_t data = align_up(queue + sizeof(uint64_t) * nbuf, 4096);
    return data + (size_t)buffer_size * nbuf;
}

/* Compare-and-swap loops of a producer give up after this many failures:
 * each failure is another thread's success, so honest threads fail a few
 * times at most (1000 threads on 2 CPUs); a scribbler rewriting the word
 * could keep one looping for good. Giving up loses the event (counted). */
#define PRODUCER_CAS_TRIES 1000

/* Pushes idx (below v->nbuf: the caller's own buffer) on the free stack,
 * trying at most tries times (the producer's bound, or the consumer's).
 * False, the buffer left out of the pool, when the head kept changing. */
static inline bool push_free_tries(ltr_ring_view *v, uint32_t idx, int tries)
{
    ltr_ring *r = v->shared;
    ltr_ring_buf *b = &v->bufs[idx];
    uint64_t head = atomic_load_explicit(&r->free_head, memory_order_relaxed);
    for (int i = 0; i < tries; i++) {
        atomic_store_explicit(&b->next, (uint32_t)head, memory_order_relaxed);
        uint64_t next = ((head >> 32) + 1) << 32 | (uint64_t)(idx + 1);
        if (atomic_compare_exchange_weak_explicit(&r->free_head, &head, next, memory_order_release,
                                                  memory_order_relaxed)) {
            atomic_fetch_add_explicit(&r->free_count, 1, memory_order_relaxed);
            return true;
        }
    }
    return false;
}

/* A producer's push (and the ring's first filling of its pool). */
static bool push_free(ltr_ring_view *v, uint32_t idx)
{
    return push_free_tries(v, idx, PRODUCER_CAS_TRIES);
}

void ltr_ring_init(void *mem, uint32_t buffer_size, uint32_t nbuf, uint32_t flags)
{
    ltr_ring *r = mem;
    memset(r, 0, sizeof *r);
    r->magic = LTR_RING_MAGIC;
    r->flags = flags;
    r->buffer_size = buffer_size;
    r->nbuf = nbuf;
    r->bufs_offset = align_up(sizeof(ltr_ring), 64);
    r->queue_offset = align_up(r->bufs_offset + sizeof(ltr_ring_buf) * nbuf, 64);
    r->data_offset = align_up(r->queue_offset + sizeof(uint64_t) * nbuf, 4096);
    r->total_size = ltr_ring_size(buffer_size, nbuf);
    memset((uint8_t *)r + r->bufs_offset, 0, r->data_offset - r->bufs_offset);
    ltr_ring_view v;
    ltr_ring_view_init(&v, mem, buffer_size, nbuf);
    /* Push in reverse so that buffer 0 is taken first: easier to read in a debugger. */
    for (uint32_t i = nbuf; i-- > 0;)
        push_free(&v, i);
}

static bool ring_sizes_valid(uint32_t magic, uint32_t buffer_size, uint32_t nbuf, size_t avail)
{
    /* nbuf below UINT32_MAX: index + 1 must never be LTR_RING_SLOT_DEAD. */
    return magic == LTR_RING_MAGIC && nbuf > 0 && nbuf < UINT32_MAX && buffer_size > 0 &&
           ltr_ring_size(buffer_size, nbuf) <= avail;
}

bool ltr_ring_valid(const ltr_ring *r, size_t avail)
{
    return avail >= sizeof *r && ring_sizes_valid(r->magic, r->buffer_size, r->nbuf, avail) &&
           r->total_size <= avail && r->total_size == ltr_ring_size(r->buffer_size, r->nbuf);
}

bool ltr_ring_view_attach(ltr_ring_view *v, void *mem, size_t avail)
{
    if (avail < sizeof(ltr_ring) || (uintptr_t)mem % 64)
        return false;
    /* Each word read once, into our copy: a scribbler changing the header
     * between the check and the use must not get past the check. */
    ltr_ring *r = mem;
    uint32_t magic = __atomic_load_n(&r->magic, __ATOMIC_RELAXED);
    uint32_t buffer_size = __atomic_load_n(&r->buffer_size, __ATOMIC_RELAXED);
    uint32_t nbuf = __atomic_load_n(&r->nbuf, __ATOMIC_RELAXED);
    uint32_t flags = __atomic_load_n(&r->flags, __ATOMIC_RELAXED);
    if (!ring_sizes_valid(magic, buffer_size, nbuf, avail))
        return false;
    ltr_ring_view_init(v, mem, buffer_size, nbuf);
    v->flags = flags & LTR_RING_OVERWRITE;
    return true;
}

/* The index in a queue slot or free stack value (index + 1), or
 * LTR_RING_NONE when it cannot be one: written over by someone. */
static inline uint32_t producer_index(const ltr_ring_view *v, uint32_t plus1)
{
    return plus1 - 1 < v->nbuf ? plus1 - 1 : LTR_RING_NONE;
}

/* How a slot's value s stands to position pos of turn t: below 0, the
 * slot is open for pos (nothing stored for it yet); 0, pos's own (stored,
 * closed or dead); above 0, a later lap's. */
static inline int32_t slot_age(uint64_t s, uint32_t turn)
{
    return (int32_t)(LTR_RING_SLOT_TURN(s) - turn);
}

/* Compared with s, not stored: s names the buffer its taker now holds,
 * which no one else can publish, so a slot holding s still is its own. */
void ltr_ring_clear_taken(ltr_ring_view *v, uint64_t pos, uint64_t s)
{
    uint64_t expected = s;
    /* release: a taker that reads the slot open then sees the head moved (pop_oldest) */
    atomic_compare_exchange_strong_explicit(&v->slots[pos % v->nbuf], &expected,
                                            LTR_RING_SLOT(LTR_RING_TURN(pos, v->nbuf), 0), memory_order_release,
                                            memory_order_relaxed);
}

static uint32_t pop_free(ltr_ring_view *v)
{
    ltr_ring *r = v->shared;
    uint64_t head = atomic_load_explicit(&r->free_head, memory_order_acquire);
    for (int i = 0; i < PRODUCER_CAS_TRIES; i++) {
        uint32_t top = (uint32_t)head;
        if (top == 0)
            return LTR_RING_NONE;
        /* A head naming no buffer was written over: taking it would write
         * outside the ring. The pool is lost to this producer (its events
         * counted as lost) until the head is sane again. */
        if (producer_index(v, top) == LTR_RING_NONE)
            return LTR_RING_NONE;
        /* `next` may be stale if another thread took this buffer meanwhile; the
         * tag then differs and the exchange fails. A bad `next` is caught by
         * the check above at the next pop. */
        uint32_t next = atomic_load_explicit(&v->bufs[top - 1].next, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&r->free_head, &head, want,
                                                  memory_order_acquire, memory_order_acquire)) {
            atomic_fetch_sub_explicit(&r->free_count, 1, memory_order_relaxed);
            return top - 1;
        }
    }
    return LTR_RING_NONE;
}

/* Claims the oldest queue position, then clears its slot unless a producer
 * came round to it meanwhile (ltr_ring_clear_taken). Bounded: an honest
 * queue has at most nbuf dead positions in a row; a scribbled one may have
 * endless garbage. */
static uint32_t pop_oldest(ltr_ring_view *v)
{
    ltr_ring *r = v->shared;
    uint64_t h = atomic_load_explicit(&r->queue_head, memory_order_acquire);
    for (uint32_t tries = 0; tries <= v->nbuf + PRODUCER_CAS_TRIES; tries++) {
        uint64_t s = atomic_load_explicit(&v->slots[h % v->nbuf], memory_order_acquire);
        if (slot_age(s, LTR_RING_TURN(h, v->nbuf)) < 0) {
            /* Emptied by the taker of position h since we read the head:
             * the next oldest is there to take. Read as "nothing to take",
             * a save's program lost an event now and then, its ring of
             * 16384 full (test_save_of_threads_misses_nothing under ASan,
             * 1 event in 8 saves: head read 32767, the head 32768 by then). */
            uint64_t now = atomic_load_explicit(&r->queue_head, memory_order_acquire);
            if (now == h)
                return LTR_RING_NONE; /* empty, or its producer is between two stores */
            h = now;
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&r->queue_head, &h, h + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            ltr_ring_clear_taken(v, h, s);
            /* A slot value naming no buffer was written over: stepped over
             * like a dead producer's, never used as an index; so is one of
             * another lap (this position's taker preempted before closing
             * it, or garbage). */
            uint32_t idx = slot_age(s, LTR_RING_TURN(h, v->nbuf)) ? LTR_RING_NONE
                                                                   : producer_index(v, LTR_RING_SLOT_TAG(s));
            if (idx != LTR_RING_NONE)
                return idx;
            h++; /* a dead producer's position (or garbage), stepped over: the next one */
        }
    }
    return LTR_RING_NONE;
}

static uint32_t steal_oldest(ltr_ring_view *v)
{
    uint32_t idx = pop_oldest(v);
    /* A reader copying this buffer must see our claim before any new byte. */
    atomic_thread_fence(memory_order_release);
    if (idx != LTR_RING_NONE) {
        uint64_t c = atomic_load_explicit(&v->bufs[idx].commit, memory_order_relaxed);
        atomic_fetch_add_explicit(&v->shared->events_overwritten, LTR_COMMIT_EVENTS(c), memory_order_relaxed);
        atomic_fetch_add_explicit(&v->shared->buffers_overwritten, 1, memory_order_relaxed);
    }
    return idx;
}

uint32_t ltr_ring_acquire(ltr_ring_view *v, uint32_t pid, uint32_t tid, uint32_t owner)
{
    ltr_ring *r = v->shared;
    uint32_t idx = pop_free(v);
    if (idx == LTR_RING_NONE && (v->flags & LTR_RING_OVERWRITE))
        idx = steal_oldest(v);
    if (idx == LTR_RING_NONE)
        return idx;
    ltr_ring_buf *b = &v->bufs[idx];
    b->pid = pid;
    b->tid = tid;
    b->owner = owner;
    /* release: seen after the take-over's count of what the buffer held
     * (a save's counters read when no buffer is between the two, drain.c) */
    atomic_store_explicit(&b->seq, atomic_fetch_add_explicit(&r->next_seq, 1, memory_order_relaxed),
                          memory_order_release);
    atomic_store_explicit(&b->commit, 0, memory_order_relaxed);
    if (tid != 0)
        atomic_fetch_add_explicit(&r->own_count, 1, memory_order_relaxed);
    atomic_store_explicit(&b->state, LTR_BUF_ACTIVE, memory_order_release);
    return idx;
}

uint32_t ltr_ring_acquire_own(ltr_ring_view *v, uint32_t pid, uint32_t tid, uint32_t owner, uint32_t max_own)
{
    /* Racy by a few buffers when many threads acquire at once: it steers, it does not guard. */
    if (atomic_load_explicit(&v->shared->own_count, memory_order_relaxed) >= max_own)
        return LTR_RING_NONE;
    return ltr_ring_acquire(v, pid, tid, owner);
}

uint32_t ltr_ring_own_max(const ltr_ring_view *v, uint32_t ncpu)
{
    uint32_t keep = v->nbuf / 8;
    if (keep < 2 * ncpu)
        keep = 2 * ncpu;
    if (keep > v->nbuf / 2)
        keep = v->nbuf / 2;
    return v->nbuf - keep;
}

void ltr_ring_unacquire(ltr_ring_view *v, uint32_t idx)
{
    ltr_ring_buf *b = &v->bufs[idx];
    if (b->tid != 0)
        atomic_fetch_sub_explicit(&v->shared->own_count, 1, memory_order_relaxed);
    atomic_store_explicit(&b->state, LTR_BUF_FREE, memory_order_release);
    push_free(v, idx); /* false: the stack is being written over; the buffer stays out */
}

/* A thread's own buffer (not a CPU's) leaves its owner: one fewer owned.
 * The count only steers producers: a scribbled tid or count costs buffers
 * their use, never memory safety. */
static void own_done(ltr_ring *r, ltr_ring_buf *b)
{
    if (b->tid != 0)
        atomic_fetch_sub_explicit(&r->own_count, 1, memory_order_relaxed);
}

/* Positions a buffer is offered before it is left in none: each one
 * closed means the producer stood still between its claim and its store
 * for longer than the recorder waits (2 s), or a scribbler. */
#define STORE_TRIES 8

/* idx into pos's slot if it is open for pos. The value expected first is
 * the usual one (closed by the consumer at the lap before), so the common
 * case is a single compare-and-swap; a slot still holding the lap before's
 * buffer (an overwrite ring's taker preempted before closing it) is
 * written over as a plain store did. */
static inline bool store_at(ltr_ring_view *v, uint64_t pos, uint32_t idx)
{
    _Atomic uint64_t *slot = &v->slots[pos % v->nbuf];
    uint32_t turn = LTR_RING_TURN(pos, v->nbuf);
    uint64_t cur = LTR_RING_SLOT(turn - 1, 0);
    for (int i = 0; i < PRODUCER_CAS_TRIES; i++) {
        if (atomic_compare_exchange_weak_explicit(slot, &cur, LTR_RING_SLOT(turn, idx + 1), memory_order_release,
                                                  memory_order_relaxed))
            return true;
        if (slot_age(cur, turn) >= 0)
            return false; /* closed for pos, or a later lap's: pos was stepped over */
    }
    return false;
}

uint64_t ltr_ring_store(ltr_ring_view *v, uint64_t pos, uint32_t idx)
{
    for (int tries = 1; !store_at(v, pos, idx); tries++) {
        if (tries == STORE_TRIES)
            return UINT64_MAX;
        pos = atomic_fetch_add_explicit(&v->shared->queue_tail, 1, memory_order_relaxed);
    }
    return pos;
}

uint64_t ltr_ring_claim(ltr_ring_view *v, uint32_t idx)
{
    own_done(v->shared, &v->bufs[idx]);
    atomic_store_explicit(&v->bufs[idx].state, LTR_BUF_FULL, memory_order_release);
    return atomic_fetch_add_explicit(&v->shared->queue_tail, 1, memory_order_relaxed);
}

bool ltr_ring_publish(ltr_ring_view *v, uint32_t idx)
{
    ltr_ring *r = v->shared;
    ltr_ring_store(v, ltr_ring_claim(v, idx), idx);
    /* Wake the consumer when a quarter or less of the buffers are free,
     * once; in a ring that ever had more threads than it gives buffers of
     * their own (a CPU's buffer was taken), at the first buffer published
     * since it last looked. bench/threads, 1000 threads on 2 CPUs, with an
     * unprivileged recorder (no nice -10): waking at a quarter, 6 runs of 6
     * lost 2 to 24 % of their events, the recorder too slow to get the CPU
     * within that margin; waking at once, 5 of 6 lost nothing (the sixth
     * 1.5 %); waking at once for CPU buffers only, 5 of 6 lost. Waking at
     * once in every ring cost bench/heap's two threads 7 % of `ltr
     * record`'s wall time (paired timing, 15 pairs), the recorder preempting
     * them at each buffer: so only rings that need it do. */
    bool early = atomic_load_explicit(&r->cpus_used, memory_order_relaxed) && !(v->flags & LTR_RING_OVERWRITE);
    if (!early && atomic_load_explicit(&r->free_count, memory_order_relaxed) > v->nbuf / 4)
        return false;
    return atomic_exchange_explicit(&r->wake_pending, 1, memory_order_relaxed) == 0;
}

/* ---- the consumer's side: nothing in shared memory taken on trust ---- */

/* Compare-and-swap loops of the consumer give up after this many failures:
 * honest producers make a few at most; only a scribbler makes more. */
#define CONSUMER_CAS_TRIES 1000

void ltr_ring_view_init(ltr_ring_view *v, void *mem, uint32_t buffer_size, uint32_t nbuf)
{
    size_t bufs = align_up(sizeof(ltr_ring), 64);
    size_t queue = align_up(bufs + sizeof(ltr_ring_buf) * nbuf, 64);
    size_t data = align_up(queue + sizeof(uint64_t) * nbuf, 4096);
    *v = (ltr_ring_view){.shared = mem, .bufs = (ltr_ring_buf *)((uint8_t *)mem + bufs),
                         .slots = (_Atomic uint64_t *)((uint8_t *)mem + queue),
                         .data = (uint8_t *)mem + data, .buffer_size = buffer_size, .nbuf = nbuf};
}

/* The index in the value s of position pos's slot, stored for pos, or
 * LTR_RING_NONE when it cannot be one: counted as damage unless dead
 * (marked by this consumer) or of another lap than pos's, which may_be_passed
 * says may be (pos passed meanwhile). */
static uint32_t slot_index(ltr_ring_view *v, uint64_t s, uint64_t pos, bool may_be_passed)
{
    uint32_t tag = LTR_RING_SLOT_TAG(s);
    if (slot_age(s, LTR_RING_TURN(pos, v->nbuf)) == 0) {
        if (tag - 1 < v->nbuf)
            return tag - 1;
        if (tag == LTR_RING_SLOT_DEAD || (tag == 0 && may_be_passed))
            return LTR_RING_NONE;
    } else if (may_be_passed) {
        return LTR_RING_NONE;
    }
    v->damage++;
    return LTR_RING_NONE;
}

uint32_t ltr_ring_take(ltr_ring_view *v)
{
    ltr_ring *r = v->shared;
    uint64_t h = atomic_load_explicit(&r->queue_head, memory_order_acquire);
    for (uint32_t tries = 0; tries <= v->nbuf + CONSUMER_CAS_TRIES; tries++) {
        uint64_t s = atomic_load_explicit(&v->slots[h % v->nbuf], memory_order_acquire);
        if (slot_age(s, LTR_RING_TURN(h, v->nbuf)) < 0)
            return LTR_RING_NONE; /* empty, or its producer is between two stores */
        /* A position not claimed yet whose slot holds something: nothing a
         * producer stores (it stores at its claimed position only), so
         * garbage, stepped over once a producer claims the position and
         * finds its slot taken. Taken before, the head went past the tail. */
        if (h >= ltr_ring_tail(v))
            return LTR_RING_NONE;
        if (!atomic_compare_exchange_weak_explicit(&r->queue_head, &h, h + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        ltr_ring_clear_taken(v, h, s);
        uint32_t idx = slot_index(v, s, h, false);
        if (idx == LTR_RING_NONE)
            ; /* counted: go on with the next entry */
        else if (atomic_load_explicit(&v->bufs[idx].state, memory_order_acquire) == LTR_BUF_FULL)
            return idx;
        else
            v->damage++; /* not a published buffer: a producer may still own it */
        h++;
    }
    return LTR_RING_NONE;
}

bool ltr_ring_release(ltr_ring_view *v, uint32_t idx)
{
    ltr_ring *r = v->shared;
    ltr_ring_buf *b = &v->bufs[idx];
    if (atomic_exchange_explicit(&b->state, LTR_BUF_FREE, memory_order_relaxed) == LTR_BUF_ACTIVE)
        own_done(r, b); /* a dead producer's, finished by the consumer */
    if (push_free_tries(v, idx, CONSUMER_CAS_TRIES))
        return true;
    v->damage++;
    return false;
}

void ltr_ring_hand_in(ltr_ring_view *v, uint32_t idx)
{
    ltr_ring *r = v->shared;
    if (atomic_exchange_explicit(&v->bufs[idx].state, LTR_BUF_FULL, memory_order_acq_rel) == LTR_BUF_ACTIVE)
        own_done(r, &v->bufs[idx]);
    ltr_ring_store(v, atomic_fetch_add_explicit(&r->queue_tail, 1, memory_order_relaxed), idx);
}

uint64_t ltr_ring_committed(ltr_ring_view *v, uint32_t idx, bool *bad)
{
    uint64_t c = atomic_load_explicit(&v->bufs[idx].commit, memory_order_acquire);
    *bad = LTR_COMMIT_BYTES(c) > v->buffer_size;
    if (!*bad)
        return c;
    v->damage++;
    return LTR_COMMIT(0, 0);
}

uint64_t ltr_ring_queued(ltr_ring_view *v)
{
    return ltr_ring_tail(v) - ltr_ring_head(v);
}

bool ltr_ring_skip_slot(ltr_ring_view *v)
{
    uint64_t h = ltr_ring_head(v);
    _Atomic uint64_t *slot = &v->slots[h % v->nbuf];
    uint64_t s = atomic_load_explicit(slot, memory_order_acquire);
    uint32_t turn = LTR_RING_TURN(h, v->nbuf);
    if (slot_age(s, turn) >= 0 ||
        !atomic_compare_exchange_strong_explicit(slot, &s, LTR_RING_SLOT(turn, 0), memory_order_acq_rel,
                                                 memory_order_acquire))
        return false;
    atomic_fetch_add_explicit(&v->shared->queue_head, 1, memory_order_acq_rel);
    return true;
}

uint64_t ltr_ring_history_start(ltr_ring_view *v, uint64_t tail)
{
    uint64_t head = ltr_ring_head(v);
    if (tail - head <= v->nbuf)
        return head;
    v->damage++;
    return tail - v->nbuf;
}

uint32_t ltr_ring_at(ltr_ring_view *v, uint64_t pos)
{
    if (pos < ltr_ring_head(v))
        return LTR_RING_NONE;
    uint64_t s = atomic_load_explicit(&v->slots[pos % v->nbuf], memory_order_acquire);
    return slot_age(s, LTR_RING_TURN(pos, v->nbuf)) < 0 ? LTR_RING_NONE : slot_index(v, s, pos, true);
}

/* What a wait begun at since (0: none) took, out of the budget *wait_ns. */
static void spend_wait(uint64_t *wait_ns, uint64_t since)
{
    uint64_t spent = since ? ltr_now_ns() - since : 0;
    *wait_ns = spent < *wait_ns ? *wait_ns - spent : 0;
}

uint32_t ltr_ring_at_published(ltr_ring_view *v, uint64_t pos, uint64_t *wait_ns)
{
    uint64_t since = 0;
    for (unsigned spins = 0;; spins++) {
        if (pos < ltr_ring_head(v))
            break;
        uint64_t s = atomic_load_explicit(&v->slots[pos % v->nbuf], memory_order_acquire);
        if (slot_age(s, LTR_RING_TURN(pos, v->nbuf)) >= 0) {
            spend_wait(wait_ns, since);
            return slot_index(v, s, pos, true); /* LTR_RING_NONE for a dead slot */
        }
        if (!since)
            since = ltr_now_ns();
        else if (ltr_now_ns() - since >= *wait_ns)
            break;
        if (spins < 64)
            sched_yield(); /* the producer is between two instructions, most often on the other CPU */
        else
            nanosleep(&(struct timespec){0, 20000}, NULL); /* preempted there: let it run */
    }
    spend_wait(wait_ns, since);
    return LTR_RING_NONE;
}

bool ltr_ring_still_at(ltr_ring_view *v, uint64_t pos)
{
    atomic_thread_fence(memory_order_acquire);
    return ltr_ring_head(v) <= pos;
}
_Static_assert(sizeof(ltr_ring_buf) == 64, "one cache line per buffer header");

unsigned ltr_ring_holes(ltr_ring_view *v, uint64_t *pos_out, unsigned most)
{
    uint64_t tail = ltr_ring_tail(v);
    unsigned n = 0;
    for (uint64_t pos = ltr_ring_history_start(v, tail); pos < tail && n < most; pos++)
        if (slot_age(atomic_load_explicit(&v->slots[pos % v->nbuf], memory_order_acquire),
                     LTR_RING_TURN(pos, v->nbuf)) < 0)
            pos_out[n++] = pos;
    return n;
}

uint64_t ltr_ring_first_hole(ltr_ring_view *v)
{
    uint64_t pos;
    return ltr_ring_holes(v, &pos, 1) ? pos : UINT64_MAX;
}

/* tag into the empty slot of position pos, still in the queue */
static bool store_in_hole(ltr_ring_view *v, uint64_t pos, uint32_t tag)
{
    if (pos < ltr_ring_head(v) || pos >= ltr_ring_tail(v))
        return false;
    _Atomic uint64_t *slot = &v->slots[pos % v->nbuf];
    uint64_t open = atomic_load_explicit(slot, memory_order_acquire);
    uint32_t turn = LTR_RING_TURN(pos, v->nbuf);
    return slot_age(open, turn) < 0 &&
           atomic_compare_exchange_strong_explicit(slot, &open, LTR_RING_SLOT(turn, tag), memory_order_acq_rel,
                                                   memory_order_relaxed);
}

bool ltr_ring_mark_dead(ltr_ring_view *v, uint64_t pos)
{
    return store_in_hole(v, pos, LTR_RING_SLOT_DEAD);
}

bool ltr_ring_fill_hole(ltr_ring_view *v, uint64_t pos, uint32_t idx)
{
    return store_in_hole(v, pos, idx + 1);
}
