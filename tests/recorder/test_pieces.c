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

#include "recorder/internal.h"

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
    assert_true(rec_piece_waits(&ring, queued, 2, 2));
    assert_false(rec_piece_waits(&ring, queued + 1, 1, 2)); /* only another thread's queued */
    assert_false(rec_piece_waits(&ring, queued, 0, 2));     /* nothing queued */
    assert_false(rec_piece_waits(&ring, queued, 2, 3));
    assert_false(rec_piece_waits(&ring, queued, 2, 4));
    const uint32_t itself[] = {2}; /* handed in since the flush began: not a buffer before it */
    assert_false(rec_piece_waits(&ring, itself, 1, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_piece_waits_for_its_threads_queued_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
