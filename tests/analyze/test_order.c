/*
 * tests/analyze/test_order.c — the analyzer's time-order stage
 * (analyze/order.h): threads' runs merged oldest first, and a thread whose
 * events come from two CPUs' buffers (a later run written before an earlier
 * one) still handed on in its time order, not counted as late while the
 * earlier ones wait; many threads' thousands of events, in rooms of every
 * size across the queues' segments, some runs of a thread written out of
 * order, come out once each and in order, with a hold that hands on while
 * they come; the late counts match their definition on a feed out of order;
 * at one time, the thread that frees an address goes before the one it
 * hands the address to, also when the free comes in a later run; what a
 * complete trace's index says is still to come (an_order_bound) hands on
 * only what is older, in the order holding everything gives, and a bound
 * that lies makes events late, not lost.
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

/* Thread 10's allocation and free of the address, then thread 11's allocation. */
static void expect_first_frees_then_keeps(const out *got)
{
    static const uint32_t want_tid[] = {10, 10, 11}, want_op[] = {AN_OP_ALLOC, AN_OP_FREE, AN_OP_ALLOC};
    assert_int_equal(got->n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(got->tid[i], want_tid[i]);
        assert_int_equal(got->op[i], want_op[i]);
    }
}

/* Two short threads at one time (a thread per request): the first
 * allocates and frees an address, the second is handed it and keeps it.
 * Whatever order their runs come in, the first's run goes first: the
 * second's allocation had gone first when its queue came first, its block
 * then ended by the first's allocation, a kept block lost (21 of 300). */
static void test_tie_goes_to_the_thread_that_frees_it(void **state)
{
    for (int first_in = 0; first_in < 2; first_in++) {
        out got = {0};
        an_order *o = an_order_new(1000, collect, &got);
        assert_non_null(o);
        size_t room;
        for (int k = 0; k < 2; k++) {
            if ((k == 0) == (first_in == 0)) { /* thread 11 keeps the block */
                an_event *e = an_order_room(o, 1, 11, &room);
                e[0] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x1000};
                an_order_commit(o, 1);
            } else { /* thread 10 allocates and frees it */
                an_event *e = an_order_room(o, 1, 10, &room);
                assert_true(room >= 2);
                e[0] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x1000};
                e[1] = (an_event){.ts = 100, .op = AN_OP_FREE, .addr = 0x1000};
                an_order_commit(o, 2);
            }
        }
        an_order_drain(o);
        expect_first_frees_then_keeps(&got);
        an_order_free(o);
    }
}

/* The same where the first thread frees the address after another
 * allocation of its own at that time (a temporary and a buffer, then the
 * temporary freed: strerror's in a thread per request): its run still goes
 * first, whatever order the runs come in (5 of 500 threads' temporaries
 * said "allocated again" when only its next event was looked at). */
static void test_tie_goes_to_the_thread_that_frees_it_later(void **state)
{
    for (int first_in = 0; first_in < 2; first_in++) {
        out got = {0};
        an_order *o = an_order_new(1000, collect, &got);
        assert_non_null(o);
        size_t room;
        for (int k = 0; k < 2; k++) {
            if ((k == 0) == (first_in == 0)) { /* thread 11, the next, is handed the address */
                an_event *e = an_order_room(o, 1, 11, &room);
                e[0] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x1000};
                an_order_commit(o, 1);
            } else { /* thread 10 allocates it and a buffer, and frees it */
                an_event *e = an_order_room(o, 1, 10, &room);
                assert_true(room >= 3);
                e[0] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x1000};
                e[1] = (an_event){.ts = 100, .op = AN_OP_ALLOC, .addr = 0x2000};
                e[2] = (an_event){.ts = 100, .op = AN_OP_FREE, .addr = 0x1000};
                an_order_commit(o, 3);
            }
        }
        an_order_drain(o);
        assert_int_equal(got.n, 4);
        static const uint32_t want_tid[] = {10, 10, 10, 11};
        static const uint32_t want_op[] = {AN_OP_ALLOC, AN_OP_ALLOC, AN_OP_FREE, AN_OP_ALLOC};
        for (size_t i = 0; i < 4; i++) {
            assert_int_equal(got.tid[i], want_tid[i]);
            assert_int_equal(got.op[i], want_op[i]);
        }
        an_order_free(o);
    }
}

/* The same where the free comes in a later run of the freeing thread,
 * after the two threads' allocations were compared (and the thread made
 * later): what a queue frees at its first event's time is looked at again
 * when events join it, not taken from that first comparison. */
static void test_tie_sees_a_free_that_came_later(void **state)
{
    out got = {0};
    an_order *o = an_order_new(1000, collect, &got);
    assert_non_null(o);
    size_t room;
    static const uint32_t tids[] = {11, 10, 10}, ops[] = {AN_OP_ALLOC, AN_OP_ALLOC, AN_OP_FREE};
    for (size_t k = 0; k < 3; k++) {
        an_event *e = an_order_room(o, 1, tids[k], &room);
        assert_non_null(e);
        e[0] = (an_event){.ts = 100, .op = ops[k], .addr = 0x1000};
        an_order_commit(o, 1);
    }
    an_order_drain(o);
    expect_first_frees_then_keeps(&got);
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

/* A process's plain end (AN_END_TID) handed on, then an event of the
 * process stamped before it: late, as any event of its own (the model
 * ended it before that event; the analysis runs again holding more). An
 * exec's end (AN_EXEC_END_TID) is measured against no event of the pid:
 * the new image's first events, stamped before it, come after it in the
 * file, and are late only across. */
static void test_after_an_end_is_late_but_after_an_exec_end(void **state)
{
    for (int exec = 0; exec < 2; exec++) {
        out got = {0};
        an_order *o = an_order_new(2, collect, &got); /* hold 2: the third hands on */
        assert_non_null(o);
        size_t room;
        uint32_t end_tid = exec ? AN_EXEC_END_TID : AN_END_TID;
        an_event *e = an_order_room(o, 1, end_tid, &room);
        assert_non_null(e);
        e[0] = (an_event){.ts = 50, .op = AN_OP_END, .size = (uint64_t)exec};
        an_order_commit(o, 1);
        put(o, 10, (uint64_t[]){60, 70}, 2); /* the end hands on */
        put(o, 11, (uint64_t[]){40}, 1);     /* the process's, before its end */
        an_order_drain(o);
        assert_int_equal(got.n, 4);
        assert_int_equal(got.tid[0], end_tid);
        assert_int_equal(an_order_late(o), exec ? 0 : 1);
        assert_int_equal(an_order_late_across(o), exec ? 1 : 0);
        an_order_free(o);
    }
}

/* Runs that each reach far back move every event they pass (merge_back):
 * past a budget of the events committed, a run stays where it came and is
 * counted late, so a file of many such runs costs linear time, not the
 * held events' number for each run. Everything is still handed on. */
static void count_events(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    (void)pid, (void)tid, (void)ev;
    *(size_t *)ctx += n;
}

static void test_far_behind_runs_have_a_budget(void **state)
{
    size_t got = 0;
    an_order *o = an_order_new(100000, count_events, &got);
    assert_non_null(o);
    for (uint64_t k = 0; k < 16; k++) { /* 1024 in order, in runs of 64 (a segment holds 256) */
        uint64_t ts[64];
        for (uint64_t i = 0; i < 64; i++)
            ts[i] = 10000 + 64 * k + i;
        put(o, 10, ts, 64);
    }
    put(o, 10, (uint64_t[]){9000}, 1); /* one run far behind: merged, in order */
    assert_int_equal(an_order_late(o), 0);
    for (uint64_t i = 0; i < 200; i++) /* 200 more, each past every event waiting */
        put(o, 10, (uint64_t[]){100 + i}, 1);
    an_order_drain(o);
    uint64_t late = an_order_late(o);
    print_message("200 runs far behind: %llu handed on late\n", (unsigned long long)late);
    assert_true(late > 0 && late < 200); /* the first ones merged, within the budget */
    assert_int_equal(got, 1225);
    an_order_free(o);
}

typedef struct big_out {
    uint64_t *ts;
    uint32_t *tid;
    uint64_t *addr;
    size_t n, cap;
} big_out;

static void collect_all(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    (void)pid;
    big_out *o = ctx;
    for (size_t i = 0; i < n; i++) {
        assert_true(o->n < o->cap);
        o->ts[o->n] = ev[i].ts;
        o->tid[o->n] = tid;
        o->addr[o->n++] = ev[i].addr;
    }
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Writes n events of tid with times ts[0..n) through rooms of random size. */
static void put_many(an_order *o, uint32_t tid, const uint64_t *ts, size_t n, uint64_t *seed)
{
    for (size_t done = 0; done < n;) {
        size_t room;
        an_event *e = an_order_room(o, 1, tid, &room);
        assert_non_null(e);
        assert_true(room >= 1);
        size_t k = 1 + rnd(seed) % 700;
        k = k < room ? k : room;
        k = k < n - done ? k : n - done;
        for (size_t i = 0; i < k; i++)
            e[i] = (an_event){.ts = ts[done + i], .op = AN_OP_ALLOC, .addr = (uint64_t)tid << 32 | ts[done + i]};
        an_order_commit(o, k);
        done += k;
    }
}

enum { THREADS = 7, PER = 5000 };
static uint64_t many_ts[THREADS][PER];

/* Blocks of each thread, threads interleaved at random; every fifth block
 * of a thread swapped with its next (two CPUs' buffers written the other
 * way round). */
static void feed_many(an_order *o, uint64_t seed)
{
    size_t next[THREADS] = {0};
    for (;;) {
        int live = 0;
        for (int t = 0; t < THREADS; t++)
            live += next[t] < PER;
        if (!live)
            break;
        int t = (int)(rnd(&seed) % THREADS);
        if (next[t] >= PER)
            continue;
        size_t len = 1 + rnd(&seed) % 900, left = PER - next[t];
        len = len < left ? len : left;
        if (rnd(&seed) % 5 == 0 && left >= 2 * len) {
            put_many(o, (uint32_t)t, many_ts[t] + next[t] + len, len, &seed);
            put_many(o, (uint32_t)t, many_ts[t] + next[t], len, &seed);
            next[t] += 2 * len;
        } else {
            put_many(o, (uint32_t)t, many_ts[t] + next[t], len, &seed);
            next[t] += len;
        }
    }
}

/* Every event once; in time order but for those counted late (none when
 * strict). */
static void check_many(const big_out *got, const an_order *o, int strict)
{
    assert_int_equal(got->n, THREADS * PER);
    uint8_t *seen = calloc(THREADS * PER, 1);
    size_t disorder = 0;
    for (size_t i = 0; i < got->n; i++) {
        size_t idx = (size_t)((got->addr[i] & 0xffffffffu) / 10);
        assert_true(idx < (size_t)THREADS * PER);
        assert_int_equal(seen[idx], 0);
        seen[idx] = 1;
        assert_int_equal(got->tid[i], got->addr[i] >> 32);
        disorder += i && got->ts[i] < got->ts[i - 1];
    }
    free(seen);
    assert_true(disorder <= an_order_late(o));
    if (strict) {
        assert_int_equal(disorder, 0);
        assert_int_equal(an_order_late(o), 0);
    }
}

static void test_many_events_across_segments(void **state)
{
    (void)state;
    big_out got = {calloc(THREADS * PER, 8), calloc(THREADS * PER, 4), calloc(THREADS * PER, 8), 0, THREADS * PER};
    assert_non_null(got.ts);
    for (int t = 0; t < THREADS; t++) /* distinct times: thread t's are t mod THREADS */
        for (size_t i = 0; i < PER; i++)
            many_ts[t][i] = (i * THREADS + (size_t)t) * 10;
    for (int pass = 0; pass < 2; pass++) { /* a hold that hands on while they come, then one that holds all */
        got.n = 0;
        an_order *o = an_order_new(pass ? THREADS * PER + 1 : THREADS * PER / 3, collect_all, &got);
        assert_non_null(o);
        feed_many(o, 0x9e3779b97f4a7c15ull);
        an_order_drain(o);
        check_many(&got, o, pass);
        an_order_free(o);
    }
    free(got.ts);
    free(got.tid);
    free(got.addr);
}

/* The late counts against their definition, replayed on what came out: an
 * event is late when its process already handed on a later one, late across
 * when only another process did. Several processes' threads, runs with an
 * event out of place inside them, runs far behind past the merge budget, a
 * small hold: the stage reads a run known in order from its ends only, and
 * every other run an event at a time; both must count the same. */
typedef struct late_ref {
    uint64_t proc_max[4], all_max;
    int proc_set[4], all_set;
    uint64_t late, across, n;
} late_ref;

static void count_late(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    (void)tid;
    late_ref *r = ctx;
    for (size_t i = 0; i < n; i++, r->n++) {
        uint64_t t = ev[i].ts;
        if (r->proc_set[pid] && t < r->proc_max[pid])
            r->late++;
        else if (r->all_set && t < r->all_max)
            r->across++;
        if (!r->proc_set[pid] || t > r->proc_max[pid])
            r->proc_max[pid] = t, r->proc_set[pid] = 1;
        if (!r->all_set || t > r->all_max)
            r->all_max = t, r->all_set = 1;
    }
}

static void test_late_counts_match_their_definition(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        late_ref ref = {0};
        uint64_t s = seed * 0x9e3779b97f4a7c15ull, clock[12] = {0}, sent = 0;
        an_order *o = an_order_new(1 + rnd(&s) % 3000, count_late, &ref);
        assert_non_null(o);
        for (int run = 0; run < 400; run++) {
            uint32_t th = (uint32_t)(rnd(&s) % 12), pid = th % 4;
            size_t room, n = 1 + rnd(&s) % 300;
            an_event *e = an_order_room(o, pid, th, &room);
            assert_non_null(e);
            n = n < room ? n : room;
            uint64_t t = rnd(&s) % 8 == 0 ? clock[th] / 2 : clock[th]; /* a run far behind now and then */
            for (size_t i = 0; i < n; i++) {
                t += rnd(&s) % 50;
                e[i] = (an_event){.ts = rnd(&s) % 60 == 0 && t > 500 ? t - 500 : t, .op = AN_OP_ALLOC};
            }
            clock[th] = t > clock[th] ? t : clock[th];
            an_order_commit(o, n);
            sent += n;
        }
        an_order_drain(o);
        assert_int_equal(ref.n, sent);
        assert_int_equal(an_order_late(o), ref.late);
        assert_int_equal(an_order_late_across(o), ref.across);
        assert_true(ref.late + ref.across > 0); /* the feed did put events out of place */
        an_order_free(o);
    }
}

/* A room not committed (the analyzer builds a window of a column block in
 * place, and a damaged block may take none of it) is the same room the next
 * time: at a segment's start it was a fresh segment each time, and the one
 * before was lost (LeakSanitizer, test_format_refs). */
/* How far behind late events came (an_order_hold_needed, the hold of the
 * analysis's second pass): thread 1 makes 16 000 events, one a time unit,
 * handed on past a hold of 100; thread 2's one event at time 4 000 comes
 * after them all, 12 000 handed on later than it. A hold of what the stage
 * says would have kept it in order: no event late, the same stream then. */
static void test_hold_needed_keeps_the_late_in_order(void **state)
{
    (void)state;
    static uint64_t ts[16000];
    for (size_t i = 0; i < 16000; i++)
        ts[i] = i + 1;
    size_t need = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t got = 0;
        an_order *o = an_order_new(pass ? need : 100, count_events, &got);
        assert_non_null(o);
        assert_int_equal(an_order_hold_needed(o), 0);
        for (size_t i = 0; i < 16000; i += 128) /* half a segment a room */
            put(o, 1, ts + i, 128);
        put(o, 2, (uint64_t[]){4000}, 1);
        an_order_drain(o);
        assert_int_equal(got, 16001);
        if (!pass) {
            assert_int_equal(an_order_late(o), 1);
            need = an_order_hold_needed(o);
            if (need < 12000 || need > 2 * 12000)
                fail_msg("hold needed %zu, for an event 12 000 behind past a hold of 100", need);
        } else {
            assert_int_equal(an_order_late(o), 0);
            assert_int_equal(an_order_hold_needed(o), 0);
        }
        an_order_free(o);
    }
}

static void test_room_not_committed_is_given_again(void **state)
{
    (void)state;
    size_t got = 0, room, room2;
    an_order *o = an_order_new(100, count_events, &got);
    assert_non_null(o);
    an_event *a = an_order_room(o, 1, 7, &room);
    an_event *b = an_order_room(o, 1, 7, &room2);
    assert_ptr_equal(a, b);
    assert_int_equal(room, room2);
    an_order_room(o, 1, 8, &room); /* another thread's room in between */
    assert_ptr_equal(an_order_room(o, 1, 7, &room2), a);
    a[0] = (an_event){.ts = 5, .op = AN_OP_ALLOC};
    an_order_commit(o, 1);
    assert_ptr_equal(an_order_room(o, 1, 7, &room2), a + 1); /* after what was committed */
    an_order_drain(o);
    assert_int_equal(got, 1);
    an_order_free(o); /* the untouched room of thread 8 too (LeakSanitizer) */
}

/* A bound hands on what is older than every event still to come, and as
 * the thread being read commits in order, what is older than its last;
 * strictly older: events at the bound's time wait. */
static void test_bound_hands_on_only_what_is_older(void **state)
{
    (void)state;
    out got = {0};
    an_order *o = an_order_new(1000, collect, &got);
    assert_non_null(o);
    put(o, 10, (uint64_t[]){10, 20, 30}, 3);
    put(o, 11, (uint64_t[]){15, 35}, 2);
    an_order_bound(o, 1, 12, 25, 1, 40); /* thread 12's block from 25 on, the rest from 40 */
    assert_int_equal(got.n, 3);          /* 10, 15, 20 */
    put(o, 12, (uint64_t[]){25, 28}, 2); /* thread 12 is at 28: 25 may go */
    assert_int_equal(got.n, 4);
    put(o, 12, (uint64_t[]){29, 33}, 2);
    assert_int_equal(got.n, 7); /* 28, 29, 30 */
    an_order_bound(o, 1, 12, UINT64_MAX, 0, 35); /* its block done: the rest from 35 */
    assert_int_equal(got.n, 8); /* 33, not 35 */
    an_order_drain(o);
    static const uint64_t want[] = {10, 15, 20, 25, 28, 29, 30, 33, 35};
    assert_int_equal(got.n, 9);
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(got.ts[i], want[i]);
    assert_int_equal(an_order_late(o), 0);
    an_order_free(o);
}

typedef struct tie_block {
    uint32_t tid;
    size_t from, n;
} tie_block;

enum { TIE_THREADS = 5, TIE_PER = 3000, TIE_BLOCKS = TIE_THREADS * TIE_PER };
static an_event tie_ev[TIE_THREADS][TIE_PER];

/* Each thread's events on a 100 us grid, many at one time in several
 * threads, allocating and freeing a few addresses of its own (threads that
 * pass blocks are test_tie_goes_to_the_thread_that_frees_it's); cut into
 * blocks of 1..300 events, the threads' blocks interleaved at random as a
 * recorder writes them. */
static size_t tie_trace(tie_block *b, uint64_t seed)
{
    for (uint32_t t = 0; t < TIE_THREADS; t++) {
        uint64_t ts = 100000;
        for (size_t i = 0; i < TIE_PER; i++) {
            ts += rnd(&seed) % 3 ? 0 : 100;
            tie_ev[t][i] = (an_event){.ts = ts, .op = rnd(&seed) % 2 ? AN_OP_ALLOC : AN_OP_FREE,
                                      .addr = 0x1000 + t * 0x100 + rnd(&seed) % 4 * 16, .size = t << 16 | i};
        }
    }
    size_t next[TIE_THREADS] = {0}, nb = 0;
    for (size_t live = TIE_THREADS; live;) {
        uint32_t t = (uint32_t)(rnd(&seed) % TIE_THREADS);
        if (next[t] == TIE_PER)
            continue;
        size_t n = 1 + rnd(&seed) % 300;
        n = n < TIE_PER - next[t] ? n : TIE_PER - next[t];
        b[nb++] = (tie_block){t, next[t], n};
        live -= (next[t] += n) == TIE_PER;
    }
    return nb;
}

typedef struct tie_out {
    an_event *ev;
    uint32_t *tid;
    size_t n;
} tie_out;

static void collect_ties(void *ctx, uint32_t pid, uint32_t tid, const an_event *ev, size_t n)
{
    (void)pid;
    tie_out *o = ctx;
    for (size_t i = 0; i < n; i++, o->n++) {
        assert_true(o->n < TIE_BLOCKS);
        o->ev[o->n] = ev[i];
        o->tid[o->n] = tid;
    }
}

/* The blocks into a stage holding them all; bounded: told before each
 * block what is still to come (its first time, the earliest of the blocks
 * after it), as the analysis does from a trace's index. */
static void feed_ties(tie_out *got, const tie_block *b, size_t nb, int bounded)
{
    uint64_t *rest = malloc((nb + 1) * sizeof *rest), seed = 77;
    assert_non_null(rest);
    rest[nb] = UINT64_MAX;
    for (size_t i = nb; i-- > 0;) {
        uint64_t first = tie_ev[b[i].tid][b[i].from].ts;
        rest[i] = first < rest[i + 1] ? first : rest[i + 1];
    }
    an_order *o = an_order_new(TIE_BLOCKS + 1, collect_ties, got);
    assert_non_null(o);
    for (size_t i = 0; i < nb; i++) {
        if (bounded)
            an_order_bound(o, 1, b[i].tid, tie_ev[b[i].tid][b[i].from].ts, 1, rest[i + 1]);
        for (size_t done = 0; done < b[i].n;) { /* through rooms of random size */
            size_t room;
            an_event *e = an_order_room(o, 1, b[i].tid, &room);
            assert_non_null(e);
            size_t k = 1 + rnd(&seed) % 100;
            k = k < room ? k : room;
            k = k < b[i].n - done ? k : b[i].n - done;
            memcpy(e, &tie_ev[b[i].tid][b[i].from + done], k * sizeof *e);
            an_order_commit(o, k);
            done += k;
        }
        if (bounded)
            an_order_bound(o, 1, b[i].tid, UINT64_MAX, 0, rest[i + 1]);
    }
    if (bounded)
        assert_true(got->n > 0); /* handed on while they came */
    an_order_drain(o);
    assert_int_equal(an_order_late(o), 0);
    an_order_free(o);
    free(rest);
}

/* Handing on by the bound gives the order holding every event gives, ties
 * at one time between threads included. */
static void test_bound_gives_the_order_of_holding(void **state)
{
    (void)state;
    tie_block *b = malloc(TIE_BLOCKS * sizeof *b);
    assert_non_null(b);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        size_t nb = tie_trace(b, seed * 0x9e3779b97f4a7c15ull);
        tie_out held = {malloc(TIE_BLOCKS * sizeof(an_event)), malloc(TIE_BLOCKS * 4), 0};
        tie_out bound = {malloc(TIE_BLOCKS * sizeof(an_event)), malloc(TIE_BLOCKS * 4), 0};
        feed_ties(&held, b, nb, 0);
        feed_ties(&bound, b, nb, 1);
        assert_int_equal(held.n, TIE_BLOCKS);
        assert_int_equal(bound.n, TIE_BLOCKS);
        for (size_t i = 0; i < TIE_BLOCKS; i++)
            if (held.tid[i] != bound.tid[i] || held.ev[i].size != bound.ev[i].size)
                fail_msg("seed %llu, event %zu: held thread %u's %u, bound thread %u's %u", (unsigned long long)seed,
                         i, held.tid[i], (unsigned)(held.ev[i].size & 0xffff), bound.tid[i],
                         (unsigned)(bound.ev[i].size & 0xffff));
        free(held.ev);
        free(held.tid);
        free(bound.ev);
        free(bound.tid);
    }
    free(b);
}

/* A bound that lies (nothing before 1000 still to come, then events at
 * 50): they are handed on late and counted, none lost. */
static void test_lying_bound_makes_events_late(void **state)
{
    (void)state;
    out got = {0};
    an_order *o = an_order_new(1000, collect, &got);
    assert_non_null(o);
    put(o, 10, (uint64_t[]){100, 200}, 2);
    an_order_bound(o, 1, 11, UINT64_MAX, 0, 1000);
    assert_int_equal(got.n, 2);
    put(o, 11, (uint64_t[]){50, 60}, 2);
    an_order_bound(o, 1, 11, 0, 1, 0); /* and one that says nothing */
    an_order_drain(o);
    assert_int_equal(got.n, 4);
    assert_int_equal(an_order_late(o), 2);
    an_order_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_of_two_buffers_merge),
        cmocka_unit_test(test_one_threads_ties_keep_their_order),
        cmocka_unit_test(test_tie_goes_to_the_thread_that_frees_it),
        cmocka_unit_test(test_tie_goes_to_the_thread_that_frees_it_later),
        cmocka_unit_test(test_tie_sees_a_free_that_came_later),
        cmocka_unit_test(test_older_than_handed_on_is_late),
        cmocka_unit_test(test_after_an_end_is_late_but_after_an_exec_end),
        cmocka_unit_test(test_far_behind_runs_have_a_budget),
        cmocka_unit_test(test_many_events_across_segments),
        cmocka_unit_test(test_late_counts_match_their_definition),
        cmocka_unit_test(test_hold_needed_keeps_the_late_in_order),
        cmocka_unit_test(test_room_not_committed_is_given_again),
        cmocka_unit_test(test_bound_hands_on_only_what_is_older),
        cmocka_unit_test(test_bound_gives_the_order_of_holding),
        cmocka_unit_test(test_lying_bound_makes_events_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
