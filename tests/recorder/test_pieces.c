/*
 * tests/recorder/test_pieces.c — which buffers being filled a file-mode
 * flush takes a piece of (recorder/drain.c, rec_piece_waits): not one whose
 * thread still has a buffer published and not yet taken, which came before
 * it (its piece in the file first put the thread's events out of order:
 * perl's threads, "allocated again" and unseen frees with nothing lost). The
 * race itself (a thread handing in a buffer while the flush runs) is not
 * reproducible at will; tests/e2e/test_partial_flushes.c has the pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>

#include "recorder/internal.h"

/* Whether buffer idx's piece waits, with queued (n of them) the buffers still queued. */
static bool waits(const ltr_ring_view *ring, const uint32_t *queued, uint32_t n, uint32_t idx)
{
    rec_thread_set set;
    assert_true(rec_thread_set_init(&set, ring->nbuf));
    set.gen = UINT32_MAX - 1; /* and once wrapped round: the old keys are not taken for new */
    rec_thread_set_fill(&set, ring, queued, n);
    rec_thread_set_fill(&set, ring, queued, n);
    bool w = rec_piece_waits(ring, &set, idx);
    if (n) { /* filled with nothing after, none waits */
        rec_thread_set_fill(&set, ring, queued, 0);
        assert_false(rec_piece_waits(ring, &set, idx));
    }
    free(set.keys);
    return w;
}

static void test_piece_waits_for_its_threads_queued_buffer(void **state)
{
    (void)state;
    ltr_ring_buf bufs[5] = {0};
    bufs[0].pid = 5, bufs[0].tid = 7;  /* published, not taken: thread 7's buffer before */
    bufs[1].pid = 5, bufs[1].tid = 8;  /* another thread's */
    bufs[2].pid = 5, bufs[2].tid = 7;  /* being filled by thread 7 */
    bufs[3].pid = 6, bufs[3].tid = 7;  /* tid 7 of another process (a pid namespace) */
    bufs[4].pid = 5, bufs[4].tid = 0;  /* a CPU's: its records say their times */
    ltr_ring_view ring = {.bufs = bufs, .nbuf = 5};
    const uint32_t queued[] = {0, 1};
    assert_true(waits(&ring, queued, 2, 2));
    assert_false(waits(&ring, queued + 1, 1, 2)); /* only another thread's queued */
    assert_false(waits(&ring, queued, 0, 2));     /* nothing queued */
    assert_false(waits(&ring, queued, 2, 3));
    assert_false(waits(&ring, queued, 2, 4));
    const uint32_t itself[] = {2}; /* handed in since the flush began: not a buffer before it */
    assert_false(waits(&ring, itself, 1, 2));
    const uint32_t both[] = {2, 0}; /* and one before it, whichever comes first in the list */
    assert_true(waits(&ring, both, 2, 2));
}

/* The keys are hashed: every thread found among many (two buffers of
 * each, the table full to its half), in whatever order the queue listed
 * them, and none that is not there. */
static void test_piece_waits_among_many(void **state)
{
    (void)state;
    enum { N = 48 };
    ltr_ring_buf bufs[N] = {0};
    uint32_t queued[N / 2];
    for (uint32_t i = 0; i < N; i++) {
        bufs[i].pid = 100 + (i * 7) % 5, bufs[i].tid = 1000 + (i * 13) % (N / 2); /* each thread twice */
        if (i < N / 2)
            queued[i] = N / 2 - 1 - i; /* listed backwards */
    }
    ltr_ring_view ring = {.bufs = bufs, .nbuf = N};
    for (uint32_t p = N / 2; p < N; p++) {
        bool expect = false;
        for (uint32_t k = 0; k < N / 2; k++)
            expect |= bufs[k].pid == bufs[p].pid && bufs[k].tid == bufs[p].tid;
        assert_int_equal(waits(&ring, queued, N / 2, p), expect);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_piece_waits_for_its_threads_queued_buffer),
        cmocka_unit_test(test_piece_waits_among_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
