/*
 * tests/ring/test_ring.c — the lock-free buffer pool on its own: every buffer
 * is handed out once at a time, published buffers reach the consumer intact
 * and in each producer's order, and a pool with no free buffer says so. The
 * consumer's view takes nothing in the shared memory on trust.
 */
#include "ring/ring.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ltr_ring *make_ring_flags(uint32_t size, uint32_t nbuf, uint32_t flags)
{
    void *mem = aligned_alloc(4096, (ltr_ring_size(size, nbuf) + 4095) & ~(size_t)4095);
    ltr_ring_init(mem, size, nbuf, flags);
    assert_true(ltr_ring_valid(mem, ltr_ring_size(size, nbuf)));
    return mem;
}

static ltr_ring *make_ring(uint32_t size, uint32_t nbuf)
{
    return make_ring_flags(size, nbuf, 0);
}

/* The consumer's view of r, made as the recorder makes it: from the sizes. */
static ltr_ring_view view_of(ltr_ring *r, uint32_t size, uint32_t nbuf)
{
    ltr_ring_view v;
    ltr_ring_view_init(&v, r, size, nbuf);
    return v;
}

/* A producer's view of r, made as a producer makes it: from the header. */
static ltr_ring_view prod_of(ltr_ring *r)
{
    ltr_ring_view v;
    assert_true(ltr_ring_view_attach(&v, r, ltr_ring_size(r->buffer_size, r->nbuf)));
    return v;
}

static uint64_t committed(ltr_ring_view *v, uint32_t idx)
{
    bool bad;
    uint64_t c = ltr_ring_committed(v, idx, &bad);
    assert_false(bad);
    return c;
}

static void test_acquire_until_empty(void **state)
{
    ltr_ring *r = make_ring(4096, 4);
    ltr_ring_view v = view_of(r, 4096, 4), p = prod_of(r);
    uint32_t seen[4];
    for (int i = 0; i < 4; i++) {
        seen[i] = ltr_ring_acquire(&p, 1, 1, 1);
        assert_int_not_equal(seen[i], LTR_RING_NONE);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(seen[i], seen[j]);
    }
    assert_int_equal(ltr_ring_acquire(&p, 1, 1, 1), LTR_RING_NONE);
    assert_int_equal(ltr_ring_take(&v), LTR_RING_NONE);
    ltr_ring_commit(&p, seen[2], 100, 3);
    ltr_ring_publish(&p, seen[2]);
    uint32_t got = ltr_ring_take(&v);
    assert_int_equal(got, seen[2]);
    assert_int_equal(LTR_COMMIT_BYTES(committed(&v, got)), 100);
    assert_int_equal(LTR_COMMIT_EVENTS(committed(&v, got)), 3);
    assert_true(ltr_ring_release(&v, got));
    assert_int_equal(ltr_ring_acquire(&p, 1, 1, 1), seen[2]);
    free(r);
}

/* What a scribbling producer can do to the shared words: the consumer skips
 * what cannot be, counts it, and never reads outside the ring. */
static void test_consumer_distrusts_shared_words(void **state)
{
    ltr_ring *r = make_ring(4096, 4);
    ltr_ring_view v = view_of(r, 4096, 4), p = prod_of(r);
    uint32_t a = ltr_ring_acquire(&p, 1, 1, 1);
    r->bufs_offset = UINT64_MAX / 2; /* the view never reads the layout back */
    r->data_offset = 12345;
    _Atomic uint64_t *slots = v.slots;
    atomic_store(&r->queue_tail, 4);
    slots[0] = LTR_RING_SLOT(1, 0x7fffffff); /* an index past the ring */
    slots[1] = LTR_RING_SLOT(1, 3);          /* a free buffer, never published */
    slots[2] = LTR_RING_SLOT(1, 1 + a);      /* a buffer its producer still owns */
    slots[3] = LTR_RING_SLOT(2, 1 + a);      /* a lap that has not come */
    assert_int_equal(ltr_ring_take(&v), LTR_RING_NONE);
    assert_int_equal(v.damage, 4);
    assert_int_equal(ltr_ring_queued(&v), 0);
    /* A commit word claiming more than the buffer holds. */
    atomic_store(&ltr_ring_vbuf(&v, a)->commit, LTR_COMMIT(5000, 2));
    bool bad;
    assert_int_equal(ltr_ring_committed(&v, a, &bad), 0);
    assert_true(bad);
    /* A history whose head and tail are further apart than the ring holds. */
    atomic_store(&r->queue_head, 7);
    atomic_store(&r->queue_tail, 1u << 30);
    assert_int_equal(ltr_ring_history_start(&v, ltr_ring_tail(&v)), (1u << 30) - 4);
    assert_int_equal(v.damage, 6);
    free(r);
}

static void test_corrupt_header_is_invalid(void **state)
{
    ltr_ring *r = make_ring(4096, 2);
    r->nbuf = 1000; /* a producer must not trust a header that does not add up */
    assert_false(ltr_ring_valid(r, ltr_ring_size(4096, 2)));
    free(r);
}

/* Producers fill buffers with (thread, sequence) words; the consumer checks
 * that every word arrives once and in order per thread. */
#define THREADS 4
#define PER_THREAD 20000
static ltr_ring *shared;
static ltr_ring_view shared_view, shared_prod;
static _Atomic int producers_done;
static _Atomic uint64_t dropped[THREADS];

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg, idx = LTR_RING_NONE, used = 0, n = 0;
    for (uint32_t seq = 0; seq < PER_THREAD; seq++) {
        if (idx != LTR_RING_NONE && used + 8 > shared->buffer_size) {
            ltr_ring_publish(&shared_prod, idx);
            idx = LTR_RING_NONE;
        }
        if (idx == LTR_RING_NONE) {
            idx = ltr_ring_acquire(&shared_prod, 1, id, 1);
            used = n = 0;
            if (idx == LTR_RING_NONE) {
                dropped[id]++;
                continue;
            }
        }
        uint32_t w[2] = {id, seq};
        memcpy(ltr_ring_vdata(&shared_view, idx) + used, w, 8);
        used += 8;
        ltr_ring_commit(&shared_prod, idx, used, ++n);
    }
    if (idx != LTR_RING_NONE)
        ltr_ring_publish(&shared_prod, idx);
    producers_done++;
    return NULL;
}

static void test_concurrent_producers(void **state)
{
    shared = make_ring(256, 8);
    shared_view = view_of(shared, 256, 8);
    shared_prod = prod_of(shared);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, producer, (void *)i);
    int64_t last[THREADS];
    uint64_t received[THREADS] = {0};
    for (int i = 0; i < THREADS; i++)
        last[i] = -1;
    for (;;) {
        int done = producers_done == THREADS;
        uint32_t idx;
        while ((idx = ltr_ring_take(&shared_view)) != LTR_RING_NONE) {
            uint64_t c = committed(&shared_view, idx);
            const uint8_t *d = ltr_ring_vdata(&shared_view, idx);
            assert_int_equal(LTR_COMMIT_BYTES(c), LTR_COMMIT_EVENTS(c) * 8);
            for (uint32_t k = 0; k < LTR_COMMIT_EVENTS(c); k++) {
                uint32_t w[2];
                memcpy(w, d + k * 8, 8);
                assert_true(w[0] < THREADS);
                assert_true((int64_t)w[1] > last[w[0]]); /* in order, never twice */
                last[w[0]] = w[1];
                received[w[0]]++;
            }
            assert_true(ltr_ring_release(&shared_view, idx));
        }
        if (done && !ltr_ring_queued(&shared_view))
            break;
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(received[i] + dropped[i], PER_THREAD);
    }
    assert_int_equal(shared->free_count, 8);
    free(shared);
}

/* Overwrite mode: with nobody consuming, a producer reuses the oldest full
 * buffer; the queue then holds the newest buffers, oldest first. */
static void test_overwrite_keeps_newest(void **state)
{
    ltr_ring *r = make_ring_flags(64, 4, LTR_RING_OVERWRITE);
    ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
    for (uint32_t b = 0; b < 10; b++) {
        uint32_t idx = ltr_ring_acquire(&p, 1, 1, 1);
        assert_int_not_equal(idx, LTR_RING_NONE);
        memcpy(ltr_ring_vdata(&v, idx), &b, 4);
        ltr_ring_commit(&p, idx, 4, 1);
        ltr_ring_publish(&p, idx);
    }
    assert_int_equal(r->buffers_overwritten, 6);
    assert_int_equal(r->events_overwritten, 6);
    uint32_t expect = 6;
    for (uint64_t pos = ltr_ring_head(&v); pos < ltr_ring_tail(&v); pos++, expect++) {
        uint32_t idx = ltr_ring_at(&v, pos), word;
        assert_int_not_equal(idx, LTR_RING_NONE);
        memcpy(&word, ltr_ring_vdata(&v, idx), 4);
        assert_int_equal(word, expect);
        assert_true(ltr_ring_still_at(&v, pos));
    }
    assert_int_equal(expect, 10);
    /* Taking the oldest for reuse makes a reader's copy of it invalid. */
    uint64_t oldest = ltr_ring_head(&v);
    assert_int_not_equal(ltr_ring_acquire(&p, 1, 1, 1), LTR_RING_NONE);
    assert_false(ltr_ring_still_at(&v, oldest));
    assert_int_equal(ltr_ring_at(&v, oldest), LTR_RING_NONE);
    free(r);
}

/* Publishes a buffer of one event (the oldest taken over when none is
 * free); returns its index. */
static uint32_t publish_one(ltr_ring_view *p)
{
    uint32_t idx = ltr_ring_acquire(p, 1, 1, 1);
    assert_int_not_equal(idx, LTR_RING_NONE);
    ltr_ring_commit(p, idx, 4, 1);
    ltr_ring_publish(p, idx);
    return idx;
}

/* Overwrite mode, a full queue: producer A takes the oldest position (the
 * head moved past it, as in ltr_ring_acquire) and is preempted before it
 * empties that slot; B takes the next oldest, fills it and publishes it at
 * the position nbuf later, the same slot. A's emptying must leave B's
 * buffer there: emptied, it was in no slot (its event neither saved nor
 * counted) and the hole stopped every producer taking the oldest buffer
 * (3 of 10 runs of 8 threads on a ring of 4 lost a buffer so). */
static void test_taker_preempted_leaves_later_publication(void **state)
{
    (void)state;
    ltr_ring *r = make_ring_flags(64, 4, LTR_RING_OVERWRITE);
    ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
    for (int i = 0; i < 4; i++)
        publish_one(&p);
    uint64_t h = ltr_ring_head(&v);
    assert_int_equal(ltr_ring_tail(&v), h + 4);
    uint64_t s = atomic_load(&v.slots[h % 4]); /* A: the oldest position taken, its slot not closed yet */
    atomic_store(&r->queue_head, h + 1);
    uint32_t b = publish_one(&p); /* B: position h + 1's buffer, published at h + 4 */
    assert_int_equal(ltr_ring_tail(&v), h + 5);
    ltr_ring_clear_taken(&p, h, s); /* A goes on */
    assert_int_equal(ltr_ring_at(&v, h + 4), b);
    assert_int_equal(ltr_ring_first_hole(&v), UINT64_MAX);
    free(r);
}

/* A buffer of one event, handed in as far as its position's claim
 * (ltr_ring_publish's first step, ltr_ring_claim), as a producer stopped
 * there (SIGSTOP, a debugger, a frozen cgroup) leaves it; *idx its index.
 * Returns the position. */
static uint64_t claim_only(ltr_ring_view *p, uint32_t *idx)
{
    *idx = ltr_ring_acquire(p, 1, 1, 1);
    assert_int_not_equal(*idx, LTR_RING_NONE);
    ltr_ring_commit(p, *idx, 4, 1);
    return ltr_ring_claim(p, *idx);
}

/* claim_only, then the consumer steps over the position, as the recorder
 * does when its store has not come for 2 s. */
static uint64_t claim_skipped(ltr_ring_view *v, ltr_ring_view *p, uint32_t *idx)
{
    uint64_t pos = claim_only(p, idx);
    assert_int_equal(ltr_ring_take(v), LTR_RING_NONE);
    assert_true(ltr_ring_skip_slot(v));
    assert_int_equal(ltr_ring_head(v), pos + 1);
    return pos;
}

/* The buffers the consumer takes now, at most max, into got; how many. */
static unsigned take_all(ltr_ring_view *v, uint32_t *got, unsigned max)
{
    unsigned n = 0;
    uint32_t idx;
    while (n < max && (idx = ltr_ring_take(v)) != LTR_RING_NONE) {
        got[n++] = idx;
        assert_true(ltr_ring_release(v, idx));
    }
    return n;
}

/* File mode: a producer stopped between claiming position pos and storing
 * there, the consumer stepping over pos (as the recorder does after 2 s),
 * a whole lap published meanwhile, then the producer let go: its store
 * came into the slot of pos + nbuf. With the next lap's buffer stored there
 * already, it overwrote that one (in no slot, its events neither written
 * nor counted); stored before it, the next lap's store overwrote the late
 * one. Every buffer handed in must come out of the queue, once. */
static void test_late_store_after_a_full_lap(void **state)
{
    (void)state;
    for (int next_lap_stored_first = 0; next_lap_stored_first < 2; next_lap_stored_first++) {
        ltr_ring *r = make_ring(64, 4);
        ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
        uint32_t late, got[8];
        uint64_t pos = claim_skipped(&v, &p, &late);
        for (int i = 0; i < 3; i++) { /* positions pos + 1 to pos + 3, taken */
            uint32_t b = publish_one(&p);
            assert_int_equal(take_all(&v, got, 8), 1);
            assert_int_equal(got[0], b);
        }
        uint32_t next = LTR_RING_NONE;
        if (next_lap_stored_first)
            next = publish_one(&p); /* position pos + 4: the late store's slot */
        assert_int_equal(ltr_ring_store(&p, pos, late), pos + 4 + next_lap_stored_first); /* at the tail */
        if (!next_lap_stored_first)
            next = publish_one(&p);
        unsigned n = take_all(&v, got, 8);
        assert_int_equal(n, 2);
        assert_int_equal(got[0], next_lap_stored_first ? next : late); /* in the order handed in */
        assert_int_equal(got[1], next_lap_stored_first ? late : next);
        assert_int_equal(ltr_ring_queued(&v), 0);
        assert_int_equal(r->free_count, 4);
        assert_int_equal(v.damage, 0);
        free(r);
    }
}

/* File mode: a producer stopped between claiming a position and storing
 * there, the consumer stepping over the position (it waited long enough),
 * then the producer let go within the lap: its store finds the slot closed
 * and goes to the tail, taken before the buffer it publishes next (the
 * recorder watched such positions for a late store before, and a store a
 * full lap late escaped it: above). A store made before the step over
 * keeps its place. ltr_ring_take never takes a position not claimed yet,
 * whatever its slot holds. */
static void test_late_store_into_a_skipped_position(void **state)
{
    (void)state;
    ltr_ring *r = make_ring(64, 4);
    ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
    uint32_t late, got[8];
    uint64_t pos = claim_skipped(&v, &p, &late);
    assert_int_equal(ltr_ring_store(&p, pos, late), pos + 1);
    uint32_t next = publish_one(&p);
    assert_int_equal(take_all(&v, got, 8), 2);
    assert_int_equal(got[0], late);
    assert_int_equal(got[1], next);
    pos = claim_only(&p, &late);
    assert_int_equal(ltr_ring_store(&p, pos, late), pos);
    assert_false(ltr_ring_skip_slot(&v)); /* filled meanwhile: taken, not stepped over */
    assert_int_equal(take_all(&v, got, 8), 1);
    assert_int_equal(got[0], late);
    uint64_t h = ltr_ring_head(&v);
    assert_int_equal(ltr_ring_tail(&v), h);
    atomic_store(&p.slots[h % 4], LTR_RING_SLOT(LTR_RING_TURN(h, 4), late + 1));
    assert_int_equal(ltr_ring_take(&v), LTR_RING_NONE);
    assert_int_equal(ltr_ring_head(&v), h);
    assert_int_equal(v.damage, 0);
    free(r);
}

/* Overwrite mode (memory mode): the same producer, its position marked
 * dead by the recorder after 2 s (ltr_ring_mark_dead), producers taking
 * the oldest buffers on past it, then its store, late. It overwrote the
 * buffer published a lap later into that slot (gone from the history and
 * from the pool for good, its events in no save and counted nowhere), or
 * that buffer's store overwrote it. Every buffer published must be in the
 * history once, or counted as overwritten. */
static void test_late_store_in_overwrite_ring(void **state)
{
    (void)state;
    for (int next_lap_stored_first = 0; next_lap_stored_first < 2; next_lap_stored_first++) {
        ltr_ring *r = make_ring_flags(64, 4, LTR_RING_OVERWRITE);
        ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
        uint32_t late;
        uint64_t pos = claim_only(&p, &late);
        for (int i = 0; i < 3; i++)
            publish_one(&p); /* positions pos + 1 to pos + 3 */
        assert_int_equal(ltr_ring_acquire(&p, 1, 1, 1), LTR_RING_NONE); /* the oldest is a hole */
        assert_true(ltr_ring_mark_dead(&v, pos));
        uint32_t next = ltr_ring_acquire(&p, 1, 1, 1); /* pos + 1's, for position pos + 4 */
        assert_int_not_equal(next, LTR_RING_NONE);
        ltr_ring_commit(&p, next, 4, 1);
        if (next_lap_stored_first)
            ltr_ring_publish(&p, next);
        assert_int_equal(ltr_ring_store(&p, pos, late), pos + 4 + next_lap_stored_first); /* at the tail */
        if (!next_lap_stored_first)
            ltr_ring_publish(&p, next);
        bool seen[4] = {false};
        uint64_t events = 0, tail = ltr_ring_tail(&v);
        for (uint64_t at = ltr_ring_history_start(&v, tail); at < tail; at++) {
            uint32_t idx = ltr_ring_at(&v, at);
            assert_int_not_equal(idx, LTR_RING_NONE);
            assert_false(seen[idx]); /* once */
            seen[idx] = true;
            events += LTR_COMMIT_EVENTS(committed(&v, idx));
        }
        assert_true(seen[next]);
        assert_true(seen[late]);
        assert_int_equal(events + r->events_overwritten, 5); /* every event published, saved or counted */
        assert_int_equal(v.damage, 0);
        free(r);
    }
}

/* A position taken below the tail whose buffer is not stored yet (the
 * producer between its fetch_add and its store) is waited for by
 * ltr_ring_at_published; ltr_ring_at reads it as nothing, and a save that
 * did met the producer's next buffer but not this one: a gap. */
static ltr_ring_view *late_view;
static uint64_t late_pos;
static uint64_t late_slot;

static void *store_late(void *arg)
{
    (void)arg;
    nanosleep(&(struct timespec){0, 5000000}, NULL);
    atomic_store_explicit(&late_view->slots[late_pos % late_view->nbuf], late_slot, memory_order_release);
    return NULL;
}

static void test_publication_under_way_waited_for(void **state)
{
    (void)state;
    ltr_ring *r = make_ring_flags(64, 4, LTR_RING_OVERWRITE);
    ltr_ring_view v = view_of(r, 64, 4), p = prod_of(r);
    uint32_t idx = ltr_ring_acquire(&p, 1, 1, 1);
    ltr_ring_commit(&p, idx, 4, 1);
    ltr_ring_publish(&p, idx);
    late_pos = ltr_ring_tail(&v) - 1;
    late_slot = atomic_exchange(&v.slots[late_pos % v.nbuf], 0); /* as before the producer's store */
    late_view = &v;
    assert_int_equal(ltr_ring_at(&v, late_pos), LTR_RING_NONE);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, store_late, NULL), 0);
    uint64_t wait = 2000000000u;
    assert_int_equal(ltr_ring_at_published(&v, late_pos, &wait), idx);
    pthread_join(t, NULL);
    assert_true(wait < 2000000000u); /* what it waited is spent */
    atomic_store(&v.slots[late_pos % v.nbuf], 0); /* a producer stopped there for good: not waited for long */
    wait = 1000000u;
    assert_int_equal(ltr_ring_at_published(&v, late_pos, &wait), LTR_RING_NONE);
    assert_int_equal(wait, 0); /* the budget is spent: the next empty position is not waited for */
    assert_int_equal(ltr_ring_at_published(&v, late_pos, &wait), LTR_RING_NONE);
    free(r);
}

/* Overwrite mode, a full queue (no publication under way), threads taking
 * the oldest buffer at once: none may find none. A taker that read the
 * head, then its slot after another had taken that position and emptied
 * it, took the empty slot for "nothing to take": an event lost, counted
 * (test_save_of_threads_misses_nothing under ASan: 1 event in 8 saves with
 * a ring of 16384; here 24 to 41 refusals in 50 rounds, 0 after). */
#define TAKERS 4
#define TAKEN_NBUF 16384u
static _Atomic unsigned long takers_refused;

static void *taker(void *arg)
{
    uint32_t tid = (uint32_t)(uintptr_t)arg + 1;
    for (uint32_t i = 0; i < TAKEN_NBUF / TAKERS - 1; i++)
        if (ltr_ring_acquire(&shared_prod, 1, tid, 1) == LTR_RING_NONE)
            takers_refused++;
    return NULL;
}

static void test_takers_at_once_always_take(void **state)
{
    (void)state;
    shared = make_ring_flags(64, TAKEN_NBUF, LTR_RING_OVERWRITE);
    for (int round = 0; round < 30; round++) {
        ltr_ring_init(shared, 64, TAKEN_NBUF, LTR_RING_OVERWRITE);
        shared_prod = prod_of(shared);
        for (uint32_t i = 0; i < TAKEN_NBUF; i++)
            publish_one(&shared_prod);
        pthread_t t[TAKERS];
        for (uintptr_t i = 0; i < TAKERS; i++)
            pthread_create(&t[i], NULL, taker, (void *)i);
        for (int i = 0; i < TAKERS; i++)
            pthread_join(t[i], NULL);
    }
    assert_int_equal(takers_refused, 0);
    free(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_until_empty),
        cmocka_unit_test(test_corrupt_header_is_invalid),
        cmocka_unit_test(test_consumer_distrusts_shared_words),
        cmocka_unit_test(test_concurrent_producers),
        cmocka_unit_test(test_overwrite_keeps_newest),
        cmocka_unit_test(test_taker_preempted_leaves_later_publication),
        cmocka_unit_test(test_publication_under_way_waited_for),
        cmocka_unit_test(test_late_store_into_a_skipped_position),
        cmocka_unit_test(test_late_store_after_a_full_lap),
        cmocka_unit_test(test_late_store_in_overwrite_ring),
        cmocka_unit_test(test_takers_at_once_always_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
