/*
 * tests/recorder/test_backlog.c — the recorder's private backlog
 * (recorder/backlog.h): blocks come out in the order they went in, with
 * their info and bytes; the bound refuses a block that would pass it and
 * takes it once the oldest is out; the byte count and the peak follow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "recorder/backlog.h"

#include <errno.h>
#include <string.h>

static ltr_block_info info_of(uint32_t seq)
{
    return (ltr_block_info){.collector = 1, .pid = 7, .tid = 100 + seq, .seq = seq, .event_count = seq * 3};
}

static void test_fifo_within_the_bound(void **state)
{
    (void)state;
    rec_backlog b = {.cap = 1000};
    uint8_t data[400];
    for (uint32_t i = 0; i < 2; i++) {
        memset(data, (int)i + 1, sizeof data);
        ltr_block_info in = info_of(i);
        assert_int_equal(rec_backlog_push(&b, &in, data, 400), 0);
    }
    assert_int_equal(b.bytes, 800);
    ltr_block_info third = info_of(2);
    memset(data, 3, sizeof data);
    assert_false(rec_backlog_fits(&b, 400));
    assert_int_equal(rec_backlog_push(&b, &third, data, 400), -ENOSPC); /* 1200 > 1000 */
    assert_int_equal(b.bytes, 800);
    assert_int_equal(rec_backlog_push(&b, &third, data, 200), 0); /* exactly the bound */
    assert_int_equal(b.peak, 1000);
    for (uint32_t i = 0; i < 3; i++) {
        rec_backlog_entry *e = rec_backlog_oldest(&b);
        assert_non_null(e);
        assert_int_equal(e->info.seq, i);
        assert_int_equal(e->info.tid, 100 + i);
        assert_int_equal(e->info.event_count, i * 3);
        assert_int_equal(e->len, i < 2 ? 400 : 200);
        for (uint32_t k = 0; k < e->len; k++)
            assert_int_equal(e->data[k], i + 1);
        rec_backlog_drop(&b);
    }
    assert_null(rec_backlog_oldest(&b));
    assert_int_equal(b.bytes, 0);
    assert_int_equal(b.blocks, 3);
    assert_int_equal(b.dropped, 3);
    assert_int_equal(b.peak, 1000);
    rec_backlog_drop(&b); /* empty: nothing happens */
    assert_int_equal(b.dropped, 3);
}

/* Bound 0: no backlog, every block is refused (drain.c writes it at once). */
static void test_no_bound_no_backlog(void **state)
{
    (void)state;
    rec_backlog b = {0};
    uint8_t byte = 0;
    ltr_block_info in = info_of(0);
    assert_int_equal(rec_backlog_push(&b, &in, &byte, 1), -ENOSPC);
    assert_null(rec_backlog_oldest(&b));
}

/* Freed with blocks in it (a recorder ending on an error): no leak (ASan). */
static void test_free_with_blocks(void **state)
{
    (void)state;
    rec_backlog b = {.cap = 1 << 20};
    uint8_t data[100] = {0};
    for (uint32_t i = 0; i < 50; i++) {
        ltr_block_info in = info_of(i);
        assert_int_equal(rec_backlog_push(&b, &in, data, sizeof data), 0);
    }
    rec_backlog_free(&b);
    assert_null(rec_backlog_oldest(&b));
    assert_int_equal(b.bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_within_the_bound),
        cmocka_unit_test(test_no_bound_no_backlog),
        cmocka_unit_test(test_free_with_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
