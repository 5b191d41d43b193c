/*
 * tests/recorder/test_backlog.c — the recorder's private backlog
 * (recorder/backlog.h): entries come out in the order they went in, with
 * their kind, info and bytes; the bound, entries' headers counted, refuses
 * an entry that would pass it and takes it once the oldest is out; the byte
 * count and the peak follow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "recorder/backlog.h"

#include <errno.h>
#include <string.h>

#define E sizeof(rec_backlog_entry)

static ltr_block_info info_of(uint32_t seq)
{
    return (ltr_block_info){.collector = 1, .pid = 7, .tid = 100 + seq, .seq = seq, .event_count = seq * 3};
}

static void test_fifo_within_the_bound(void **state)
{
    (void)state;
    rec_backlog b = {.cap = 3 * E + 1000};
    uint8_t data[400];
    for (uint32_t i = 0; i < 2; i++) {
        memset(data, (int)i + 1, sizeof data);
        ltr_block_info in = info_of(i);
        assert_int_equal(rec_backlog_push(&b, i ? REC_BACKLOG_META : REC_BACKLOG_BLOCK, &in, data, 400), 0);
    }
    assert_int_equal(b.bytes, 2 * E + 800);
    ltr_block_info third = info_of(2);
    memset(data, 3, sizeof data);
    assert_false(rec_backlog_fits(&b, 201));
    assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_BLOCK, &third, data, 201), -ENOSPC);
    assert_int_equal(b.bytes, 2 * E + 800);
    assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_BLOCK, &third, data, 200), 0); /* exactly the bound */
    assert_int_equal(b.peak, 3 * E + 1000);
    ltr_block_info done = {.collector = 2};
    assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_DONE, &done, NULL, 0), -ENOSPC); /* its header too */
    for (uint32_t i = 0; i < 3; i++) {
        rec_backlog_entry *e = rec_backlog_oldest(&b);
        assert_non_null(e);
        assert_int_equal(e->kind, i == 1 ? REC_BACKLOG_META : REC_BACKLOG_BLOCK);
        assert_int_equal(e->info.seq, i);
        assert_int_equal(e->info.tid, 100 + i);
        assert_int_equal(e->info.event_count, i * 3);
        assert_int_equal(e->len, i < 2 ? 400 : 200);
        for (uint32_t k = 0; k < e->len; k++)
            assert_int_equal(e->data[k], i + 1);
        rec_backlog_drop(&b);
        if (i == 0) /* room for a header now */
            assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_DONE, &done, NULL, 0), 0);
    }
    rec_backlog_entry *last = rec_backlog_oldest(&b);
    assert_non_null(last);
    assert_int_equal(last->kind, REC_BACKLOG_DONE);
    assert_int_equal(last->info.collector, 2);
    assert_int_equal(last->len, 0);
    rec_backlog_drop(&b);
    assert_null(rec_backlog_oldest(&b));
    assert_int_equal(b.bytes, 0);
    assert_int_equal(b.pushed, 4);
    assert_int_equal(b.dropped, 4);
    rec_backlog_drop(&b); /* empty: nothing happens */
    assert_int_equal(b.dropped, 4);
}

/* Bound 0: no backlog, every entry is refused (drain.c writes it at once). */
static void test_no_bound_no_backlog(void **state)
{
    (void)state;
    rec_backlog b = {0};
    uint8_t byte = 0;
    ltr_block_info in = info_of(0);
    assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_BLOCK, &in, &byte, 1), -ENOSPC);
    assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_DONE, &in, NULL, 0), -ENOSPC);
    assert_null(rec_backlog_oldest(&b));
}

/* Tiny entries count their headers: a traced program handing in 3-byte
 * buffers cannot hold many times the bound in the recorder's memory. */
static void test_tiny_entries_count_their_headers(void **state)
{
    (void)state;
    rec_backlog b = {.cap = 1 << 16};
    uint8_t data[3] = {1, 2, 3};
    ltr_block_info in = info_of(1);
    size_t n = 0;
    while (rec_backlog_push(&b, REC_BACKLOG_BLOCK, &in, data, 3) == 0)
        n++;
    assert_int_equal(n, (1u << 16) / (E + 3));
    assert_true(b.bytes <= b.cap);
    rec_backlog_free(&b);
}

/* Freed with entries in it (a recorder ending on an error): no leak (ASan). */
static void test_free_with_entries(void **state)
{
    (void)state;
    rec_backlog b = {.cap = 1 << 20};
    uint8_t data[100] = {0};
    for (uint32_t i = 0; i < 50; i++) {
        ltr_block_info in = info_of(i);
        assert_int_equal(rec_backlog_push(&b, REC_BACKLOG_BLOCK, &in, data, sizeof data), 0);
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
        cmocka_unit_test(test_tiny_entries_count_their_headers),
        cmocka_unit_test(test_free_with_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
