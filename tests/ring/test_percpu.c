/*
 * tests/ring/test_percpu.c — the CPUs' buffers of ring.h: more threads than
 * CPUs append records of varying length through restartable sequences,
 * with a consumer recycling buffers, and every record arrives once and
 * whole (never torn, never twice, each thread's records in order within a
 * buffer); a storm of signals (each one restarts
 * the sequence it lands in) changes nothing. Threads' own buffers are
 * limited so that the rest stays for the CPUs.
 */
#include "ring/ring.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/time.h>

#define THREADS 16 /* more than the CPUs of the machines this runs on: they share */
#define PER_THREAD 100000u
#define BUF_SIZE 512u
#define NBUF 16u

static ltr_ring *ring;
static ltr_ring_view view;  /* the consumer's */
static ltr_ring_view pview; /* the producers': from the header, as a producer attaches */
static uint32_t *slots, nslots;
static _Atomic int producers_done;
static _Atomic uint64_t refused[THREADS], wakes;

/* A record: [u8 length][u8 thread][u32 seq][filler], 6..32 bytes, its
 * filler bytes following from thread and seq so a torn one shows. */
static uint32_t make_record(uint8_t *p, uint32_t thread, uint32_t seq)
{
    uint32_t len = 6 + seq % 27;
    p[0] = (uint8_t)len;
    p[1] = (uint8_t)thread;
    memcpy(p + 2, &seq, 4);
    for (uint32_t i = 6; i < len; i++)
        p[i] = (uint8_t)(thread * 7 + seq + i);
    return len;
}

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    uint8_t rec[64];
    for (uint32_t seq = 0; seq < PER_THREAD; seq++) {
        uint32_t len = make_record(rec, id, seq);
        bool wake = false;
        /* Refused when the consumer is behind: this producer (not ltr's)
         * tries again, so that every record must arrive. */
        while (ltr_ring_cpu_append(&pview, slots, nslots, 1, 1, rec, len, &wake) != LTR_CPU_APPENDED) {
            refused[id]++;
            sched_yield();
        }
        if (wake)
            wakes++;
        if (seq % 97 == 0)
            sched_yield(); /* another thread of the same CPU gets in between */
    }
    producers_done++;
    return NULL;
}

static uint8_t *seen[THREADS];

/* The records of a buffer's committed part: each whole, each once, each
 * thread's in order; returns how many. */
static uint32_t check_buffer(uint32_t idx)
{
    bool bad;
    uint64_t c = ltr_ring_committed(&view, idx, &bad);
    assert_false(bad);
    assert_int_equal(ltr_ring_vbuf(&view, idx)->tid, 0); /* a CPU's buffer */
    const uint8_t *d = ltr_ring_vdata(&view, idx);
    uint32_t pos = 0, n = 0;
    int64_t last[THREADS];
    for (int i = 0; i < THREADS; i++)
        last[i] = -1;
    while (pos < LTR_COMMIT_BYTES(c)) {
        uint8_t expect[64];
        uint32_t thread = d[pos + 1], seq;
        memcpy(&seq, d + pos + 2, 4);
        assert_true(thread < THREADS && seq < PER_THREAD);
        uint32_t len = make_record(expect, thread, seq);
        assert_int_equal(d[pos], len);
        assert_memory_equal(d + pos, expect, len);
        assert_true((int64_t)seq > last[thread]);
        last[thread] = seq;
        assert_int_equal(seen[thread][seq], 0);
        seen[thread][seq] = 1;
        pos += len;
        n++;
    }
    assert_int_equal(pos, LTR_COMMIT_BYTES(c));
    assert_int_equal(n, LTR_COMMIT_EVENTS(c));
    return n;
}

static void run_producers(void)
{
    nslots = (uint32_t)get_nprocs_conf();
    slots = calloc(nslots, sizeof *slots);
    ring = aligned_alloc(4096, (ltr_ring_size(BUF_SIZE, NBUF) + 4095) & ~(size_t)4095);
    ltr_ring_init(ring, BUF_SIZE, NBUF, 0);
    ltr_ring_view_init(&view, ring, BUF_SIZE, NBUF);
    assert_true(ltr_ring_view_attach(&pview, ring, ltr_ring_size(BUF_SIZE, NBUF)));
    producers_done = 0;
    for (int i = 0; i < THREADS; i++) {
        seen[i] = calloc(PER_THREAD, 1);
        refused[i] = 0;
    }
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, producer, (void *)i);
    uint64_t received = 0;
    for (;;) {
        int done = producers_done == THREADS;
        uint32_t idx;
        while ((idx = ltr_ring_take(&view)) != LTR_RING_NONE) {
            received += check_buffer(idx);
            assert_true(ltr_ring_release(&view, idx));
        }
        if (done && !ltr_ring_queued(&view))
            break;
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    /* The CPUs' buffers still in their slots: their committed part. */
    for (uint32_t i = 0; i < NBUF; i++)
        if (atomic_load(&ltr_ring_vbuf(&view, i)->state) == LTR_BUF_ACTIVE)
            received += check_buffer(i);
    for (int i = 0; i < THREADS; i++) {
        for (uint32_t k = 0; k < PER_THREAD; k++)
            assert_int_equal(seen[i][k], 1);
        free(seen[i]);
    }
    assert_int_equal(received, (uint64_t)THREADS * PER_THREAD);
    assert_int_equal(view.damage, 0);
    free(ring);
    free(slots);
}

static void test_threads_share_cpu_buffers(void **state)
{
    if (!ltr_ring_cpu_usable())
        skip(); /* glibc did not register rseq (not x86-64, or glibc.pthread.rseq=0) */
    run_producers();
}

static void on_signal(int sig) { (void)sig; }

/* A signal every 20 us of CPU time lands inside sequences: each is
 * restarted, never half done. */
static void test_signals_restart_appends(void **state)
{
    if (!ltr_ring_cpu_usable())
        skip();
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every = {{0, 20}, {0, 20}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &every, NULL);
    run_producers();
    setitimer(ITIMER_PROF, &off, NULL);
}

/* A record larger than a buffer is refused at once; a full CPU buffer is
 * published and replaced, its events counted in its commit word. */
static void test_full_buffer_is_replaced(void **state)
{
    if (!ltr_ring_cpu_usable())
        skip();
    nslots = (uint32_t)get_nprocs_conf();
    slots = calloc(nslots, sizeof *slots);
    ring = aligned_alloc(4096, (ltr_ring_size(64, 4) + 4095) & ~(size_t)4095);
    ltr_ring_init(ring, 64, 4, 0);
    ltr_ring_view_init(&view, ring, 64, 4);
    assert_true(ltr_ring_view_attach(&pview, ring, ltr_ring_size(64, 4)));
    uint8_t rec[65] = {0};
    bool wake = false;
    assert_int_equal(ltr_ring_cpu_append(&pview, slots, nslots, 1, 1, rec, 65, &wake), LTR_CPU_NO_BUFFER);
    assert_int_equal(ring->free_count, 4);
    /* 7 records of 20 bytes: 3 fit a buffer, so at least 2 buffers are
     * published (more if the thread moved between CPUs). */
    for (int i = 0; i < 7; i++)
        assert_int_equal(ltr_ring_cpu_append(&pview, slots, nslots, 1, 1, rec, 20, &wake), LTR_CPU_APPENDED);
    uint32_t idx, events = 0, published = 0;
    while ((idx = ltr_ring_take(&view)) != LTR_RING_NONE) {
        bool bad;
        uint64_t c = ltr_ring_committed(&view, idx, &bad);
        assert_int_equal(LTR_COMMIT_BYTES(c), 20 * LTR_COMMIT_EVENTS(c));
        events += LTR_COMMIT_EVENTS(c);
        published++;
    }
    assert_true(published >= 2);
    for (uint32_t i = 0; i < nslots; i++)
        if (slots[i])
            events += LTR_COMMIT_EVENTS(atomic_load(&ltr_ring_vbuf(&view, slots[i] - 1)->commit));
    assert_int_equal(events, 7);
    assert_int_equal(ring->own_count, 0); /* CPUs' buffers are not threads' own */
    free(ring);
    free(slots);
}

/* Threads' own buffers stop at the limit, and publishing one makes room. */
static void test_own_buffers_are_limited(void **state)
{
    ltr_ring *r = aligned_alloc(4096, (ltr_ring_size(64, 64) + 4095) & ~(size_t)4095);
    ltr_ring_init(r, 64, 64, 0);
    ltr_ring_view p;
    assert_true(ltr_ring_view_attach(&p, r, ltr_ring_size(64, 64)));
    assert_int_equal(ltr_ring_own_max(&p, 2), 56);  /* an eighth kept for the CPUs */
    assert_int_equal(ltr_ring_own_max(&p, 8), 48);  /* at least 2 per CPU */
    assert_int_equal(ltr_ring_own_max(&p, 64), 32); /* at most half */
    uint32_t got[3];
    for (int i = 0; i < 3; i++)
        assert_int_not_equal(got[i] = ltr_ring_acquire_own(&p, 1, 10 + i, 1, 3), LTR_RING_NONE);
    assert_int_equal(ltr_ring_acquire_own(&p, 1, 13, 1, 3), LTR_RING_NONE);
    assert_int_equal(r->own_count, 3);
    ltr_ring_publish(&p, got[0]);
    assert_int_equal(r->own_count, 2);
    assert_int_not_equal(ltr_ring_acquire_own(&p, 1, 13, 1, 3), LTR_RING_NONE);
    /* The consumer finishing a dead thread's buffer gives its place back too. */
    ltr_ring_view v;
    ltr_ring_view_init(&v, r, 64, 64);
    assert_true(ltr_ring_release(&v, got[1]));
    assert_int_equal(r->own_count, 2);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_share_cpu_buffers),
        cmocka_unit_test(test_signals_restart_appends),
        cmocka_unit_test(test_full_buffer_is_replaced),
        cmocka_unit_test(test_own_buffers_are_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
