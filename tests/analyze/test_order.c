/*
 * tests/analyze/test_order.c — the analyzer's time-order stage
 * (analyze/order.h): threads' runs merged oldest first, and a thread whose
 * events come from two CPUs' buffers (a later run written before an earlier
 * one) still handed on in its time order, not counted as late while the
 * earlier ones wait.
 */
#include "analyze/order.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct out {
    uint32_t tid[64], op[64];
    uint64_t ts[64];
    size_t n;
} out;

static void collect(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    out *o = ctx;
    for (size_t i = 0; i < n && o->n < 64; i++, o->n++) {
        o->tid[o->n] = tid;
        o->ts[o->n] = ev[i].ts;
        o->op[o->n] = ev[i].op;
    }
}

static void put(an_order *o, uint32_t tid, const uint64_t *ts, size_t n)
{
    size_t room;
    an_event *e = an_order_room(o, 1, tid, &room);
    assert_non_null(e);
    assert_true(room >= n);
    for (size_t i = 0; i < n; i++)
        e[i] = (an_event){.ts = ts[i], .op = AN_OP_ALLOC, .addr = 0x1000 + ts[i]};
    an_order_commit(o, n);
}

static void test_runs_of_two_buffers_merge(void **state)
{
    out got = {0};
    an_order *o = an_order_new(1000, collect, &got);
    assert_non_null(o);
    put(o, 10, (uint64_t[]){10, 20, 30}, 3);
    put(o, 11, (uint64_t[]){15, 35}, 2);
    put(o, 10, (uint64_t[]){5, 25}, 2); /* thread 10's other CPU buffer, written later */
    put(o, 10, (uint64_t[]){40}, 1);
    put(o, 10, (uint64_t[]){1}, 1);     /* before everything waiting */
    an_order_drain(o);
    static const uint64_t want_ts[] = {1, 5, 10, 15, 20, 25, 30, 35, 40};
    static const uint32_t want_tid[] = {10, 10, 10, 11, 10, 10, 10, 11, 10};
    assert_int_equal(got.n, 9);
    for (size_t i = 0; i < 9; i++) {
        assert_int_equal(got.ts[i], want_ts[i]);
        assert_int_equal(got.tid[i], want_tid[i]);
    }
    assert_int_equal(an_order_late(o), 0);
    an_order_free(o);
}

/* One thread's alloc and free at one time, in two commits (a block split
 * by the recorder's flush): kept in that order, though frees go first
 * between threads at one time. */
static void test_one_threads_ties_keep_their_order(void **state)
{
    out got = {0};
    an_order *o = an_order_new(1000, collect, &got);
    assert_non_null(o);
    size_t room;
    an_event *e = an_order_room(o, 1, 10, &room);
    e[0] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x1000};
    an_order_commit(o, 1);
    e = an_order_room(o, 1, 10, &room);
    e[0] = (an_event){.ts = 100, .op = AN_OP_FREE, .addr = 0x1000};
    an_order_commit(o, 1);
    an_order_drain(o);
    assert_int_equal(got.n, 2);
    assert_int_equal(got.op[0], AN_OP_ALLOC);
    assert_int_equal(got.op[1], AN_OP_FREE);
    an_order_free(o);
}

/* Once an event was handed on, an older one of the same thread is late:
 * counted, and still handed on. */
static void test_older_than_handed_on_is_late(void **state)
{
    out got = {0};
    an_order *o = an_order_new(2, collect, &got); /* hold 2: the third hands on */
    assert_non_null(o);
    put(o, 10, (uint64_t[]){10, 20, 30}, 3);
    put(o, 10, (uint64_t[]){5}, 1);
    an_order_drain(o);
    assert_int_equal(got.n, 4);
    assert_int_equal(an_order_late(o), 1);
    an_order_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_of_two_buffers_merge),
        cmocka_unit_test(test_one_threads_ties_keep_their_order),
        cmocka_unit_test(test_older_than_handed_on_is_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
