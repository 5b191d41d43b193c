/*
 * tests/format/test_compact.c — compact blocks (docs/trace-format.md): varint
 * limits; a buffer written in pieces, each piece a block that decodes on its
 * own even when the piece before it is lost; version-1 traces still read;
 * damaged compact records (truncation at every byte, bad varints, unknown
 * layouts, random bytes) never read out of bounds and are reported. The
 * recorder's partial flushes end to end are tests/e2e/test_partial_flushes.c.
 */
#include "format/compact.h"
#include "gen.h"

#include <ltr/trace.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* What a read of a whole trace gave. */
typedef struct readback {
    uint64_t n[4096]; /* the "n" field of each event, in order */
    size_t count;
    uint64_t damage;
    char first_damage[256];
    int bad_event; /* line of the first failed gen_check_event, 0 if none */
} readback;

static void read_all(const char *path, readback *r)
{
    memset(r, 0, sizeof *r);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    int rc;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        uint64_t n = 0;
        assert_int_equal(ltr_event_get_u64(ev, "n", &n), 0);
        int bad = gen_check_event(ev, n);
        if (bad && !r->bad_event)
            r->bad_event = bad;
        assert_true(ev->block_flags & LTR_BLOCK_FLAG_COMPACT || ltr_trace_version(t) == 1 ||
                    ev->pid == 77);
        if (r->count < 4096)
            r->n[r->count++] = n;
    }
    assert_int_equal(rc, 0);
    ltr_trace_summary s;
    ltr_trace_summarize(t, &s);
    r->damage = s.damage;
    if (ltr_trace_damage_count(t))
        ltr_damage_format(ltr_trace_damage_at(t, 0), r->first_damage, sizeof r->first_damage);
    ltr_trace_close(t);
}

/* Compact records of events first..first+count-1, timestamps chained from prev_ts. */
static void compact_events(ltr_bytes *b, uint64_t first, size_t count, uint64_t prev_ts)
{
    for (uint64_t n = first; n < first + count; n++) {
        gen_cevent(b, n, gen_ts(n), prev_ts);
        prev_ts = gen_ts(n);
    }
}

static void put_piece(ltr_writer *w, uint64_t seq, uint32_t tid, const ltr_bytes *b, uint32_t events,
                      int more)
{
    ltr_error err;
    ltr_block_info info = {.pid = 100, .tid = tid, .seq = seq, .event_count = events,
                           .flags = more ? LTR_BLOCK_FLAG_SEALED_EARLY : 0};
    assert_int_equal(ltr_writer_block(w, &info, b->data, b->len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0); /* one chunk per piece */
}

static void test_varints(void **state)
{
    static const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, INT64_MAX, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        uint8_t buf[LTR_VARINT_MAX];
        size_t n = ltr_put_uvar(buf, values[i]);
        assert_int_equal(n, ltr_uvar_len(values[i]));
        uint64_t v = 1;
        assert_int_equal(ltr_get_uvar(buf, n, &v), n);
        assert_true(v == values[i]);
        assert_int_equal(ltr_get_uvar(buf, n - 1, &v), 0); /* cut short */
    }
    uint8_t over[11];
    memset(over, 0x80, sizeof over);
    uint64_t v;
    assert_int_equal(ltr_get_uvar(over, sizeof over, &v), 0); /* longer than 10 bytes */
    over[9] = 0x02;                                            /* bit 64 set */
    assert_int_equal(ltr_get_uvar(over, sizeof over, &v), 0);
    over[9] = 0x01;
    assert_int_equal(ltr_get_uvar(over, sizeof over, &v), 10);
    assert_true(v == 1ull << 63);
    for (int64_t s = -3; s <= 3; s++)
        assert_true(ltr_unzigzag(ltr_zigzag(s)) == s);
    assert_true(ltr_unzigzag(ltr_zigzag(INT64_MIN)) == INT64_MIN);
    assert_int_equal(ltr_zigzag(-1), 1);
}

/* Buffer 5 in three pieces, buffer 6 in two, interleaved, as the recorder's
 * partial flushes write them. The producer chained every timestamp to the one
 * before in its buffer; the writer anchors each piece. */
static size_t write_pieces(const char *path, uint64_t *chunk_end)
{
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    static const struct { uint64_t seq, first; size_t count; int more; } pieces[] = {
        {5, 0, 10, 1}, {6, 30, 10, 1}, {5, 10, 10, 1}, {6, 40, 10, 0}, {5, 20, 10, 0}};
    size_t n = sizeof pieces / sizeof pieces[0];
    for (size_t i = 0; i < n; i++) {
        ltr_bytes b = {0};
        uint64_t first = pieces[i].first;
        compact_events(&b, first, pieces[i].count, first % 30 ? gen_ts(first - 1) : 0);
        put_piece(w, pieces[i].seq, pieces[i].seq == 5 ? 100 : 101, &b, (uint32_t)pieces[i].count,
                  pieces[i].more);
        chunk_end[i] = ltr_writer_size(w);
        ltr_bytes_free(&b);
    }
    ltr_writer_close(w);
    return n;
}

static void test_pieces_decode_alone(void **state)
{
    const char *path = gen_tmp("pieces.ltr");
    uint64_t end[8];
    write_pieces(path, end);
    readback r;
    read_all(path, &r);
    assert_int_equal(r.count, 50);
    assert_int_equal(r.damage, 0);
    assert_int_equal(r.bad_event, 0);
    static const uint64_t order[] = {0, 30, 10, 40, 20};
    for (size_t i = 0; i < 50; i++)
        assert_true(r.n[i] == order[i / 10] + i % 10);

    /* Lose the first piece of buffer 5 (its chunk's payload damaged): the
     * pieces after it still decode with their exact timestamps. */
    size_t len;
    uint8_t *data = gen_slurp(path, &len);
    data[end[0] - 5] ^= 0xff;
    assert_int_equal(gen_spit(path, data, len), 0);
    read_all(path, &r);
    assert_int_equal(r.count, 40);
    assert_int_equal(r.damage, 1);
    assert_int_equal(r.bad_event, 0);
    assert_true(r.n[0] == 30 && r.n[10] == 10 && r.n[30] == 20);
    free(data);
    unlink(path);
}

static void test_version1_trace_reads(void **state)
{
    const char *path = gen_tmp("v1.ltr");
    gen_opts o = {.blocks = 4, .events_per_block = 25, .with_end = 1, .fixed = 1};
    assert_int_equal(gen_write(path, &o, NULL), 0);
    size_t len;
    uint8_t *data = gen_slurp(path, &len);
    ltr_put_u32(data + 8, 1); /* what a version-1 writer wrote */
    assert_int_equal(gen_spit(path, data, len), 0);
    readback r;
    read_all(path, &r);
    assert_int_equal(r.count, 100);
    assert_int_equal(r.damage, 0);
    assert_int_equal(r.bad_event, 0);
    for (size_t i = 0; i < 100; i++)
        assert_true(r.n[i] == i);
    free(data);
    unlink(path);
}

/* Writes one compact block of the given record bytes and reads it back. */
static void read_block(const ltr_bytes *b, uint32_t events, readback *r)
{
    const char *path = gen_tmp("bad.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    put_piece(w, 1, 100, b, events, 0);
    ltr_writer_close(w);
    read_all(path, r);
    unlink(path);
}

static void expect_damage(const readback *r, size_t events, const char *what)
{
    assert_int_equal(r->count, events);
    assert_int_equal(r->bad_event, 0);
    assert_true(r->damage >= 1);
    if (!strstr(r->first_damage, what))
        fail_msg("damage '%s' does not say '%s'", r->first_damage, what);
}

static void test_truncated_at_every_byte(void **state)
{
    ltr_bytes b = {0};
    size_t ends[6], k = 0;
    for (uint64_t n = 0; n < 6; n++) {
        gen_cevent(&b, n, gen_ts(n), n ? gen_ts(n - 1) : 0);
        ends[k++] = b.len;
    }
    readback r;
    for (size_t cut = 0; cut <= b.len; cut++) {
        ltr_bytes part = {.data = b.data, .len = cut};
        read_block(&part, 6, &r);
        size_t whole = 0;
        while (whole < 6 && ends[whole] <= cut)
            whole++;
        assert_int_equal(r.count, whole);
        assert_int_equal(r.bad_event, 0);
        int inside = whole < 6 && cut > (whole ? ends[whole - 1] : 0);
        /* a cut inside a record is bad framing (which ends the block), one
         * between records a wrong event count: either way one damage */
        assert_true(r.damage == (uint64_t)(whole < 6));
        if (whole < 6)
            assert_non_null(strstr(r.first_damage, inside ? "compact event record does not parse"
                                                          : "event count differs"));
    }
    ltr_bytes_free(&b);
}

static void test_bad_varints(void **state)
{
    readback r;
    ltr_bytes b = {0};
    compact_events(&b, 0, 2, 0);
    uint8_t overlong[12];
    memset(overlong, 0x80, sizeof overlong); /* a size varint that never ends */
    ltr_bytes_put_mem(&b, overlong, sizeof overlong);
    read_block(&b, 3, &r);
    expect_damage(&r, 2, "compact event record does not parse");

    b.len = 0;
    compact_events(&b, 0, 1, 0);
    static const uint8_t huge[] = {0xff, 0xff, 0x7f, 1, 2}; /* size 2 MiB, over the limit */
    ltr_bytes_put_mem(&b, huge, sizeof huge);
    read_block(&b, 2, &r);
    expect_damage(&r, 1, "compact event record does not parse");

    b.len = 0;
    static const uint8_t open_layout[] = {0x02, 0x81, 0x80}; /* layout varint runs past its record */
    ltr_bytes_put_mem(&b, open_layout, sizeof open_layout);
    read_block(&b, 1, &r);
    expect_damage(&r, 0, "compact event record does not parse");

    b.len = 0; /* a pvar field that runs past the payload: that event only */
    uint8_t tick[] = {0x02, 0x01, 0x80, 0x80, 0x80}; /* n = 2 as u64 then a bad varint */
    uint8_t h[LTR_CEVENT_HEADER_MAX];
    size_t hn = ltr_put_cevent_header(h, 3, gen_ts(2), 0, 8 + sizeof tick);
    ltr_bytes_put_mem(&b, h, hn);
    ltr_bytes_put_u64(&b, 2);
    ltr_bytes_put_mem(&b, tick, sizeof tick);
    compact_events(&b, 3, 2, gen_ts(2));
    read_block(&b, 3, &r);
    expect_damage(&r, 2, "payload shorter");
    assert_true(r.n[0] == 3 && r.n[1] == 4);
    ltr_bytes_free(&b);
}

/* An event of an unknown layout is skipped, and the timestamps after it still count from it. */
static void test_unknown_layout_keeps_time(void **state)
{
    ltr_bytes b = {0};
    compact_events(&b, 0, 2, 0);
    uint8_t h[LTR_CEVENT_HEADER_MAX];
    size_t hn = ltr_put_cevent_header(h, 99, gen_ts(2), gen_ts(1), 3);
    ltr_bytes_put_mem(&b, h, hn);
    ltr_bytes_put_mem(&b, "abc", 3);
    compact_events(&b, 3, 3, gen_ts(2));
    readback r;
    read_block(&b, 6, &r);
    expect_damage(&r, 5, "bad record: chunk 2: event with an unknown layout id at raw offset 130");
    assert_true(r.n[1] == 1 && r.n[2] == 3 && r.n[4] == 5);
    ltr_bytes_free(&b);
}

/* A COUNTERS chunk whose collector counts metadata_lost records lost. */
static void put_metadata_lost(ltr_writer *w, uint64_t metadata_lost)
{
    ltr_bytes c = {0};
    uint64_t v[8] = {[7] = metadata_lost}; /* written .. buffers overwritten, shm_damage 0 */
    gen_collector(&c, v, 8);
    ltr_error err;
    assert_int_equal(ltr_writer_counters(w, c.data, c.len, &err), 0);
    ltr_bytes_free(&c);
}

/* Events of a layout the trace never describes, in a trace whose counters
 * (written after them, as a recorder's are) say metadata records were lost:
 * their LAYOUT record was among them, so they are lost events, not damage
 * (a flight recorder past LTR_KEPT_MAX_KB: 77 269 such events read as damage,
 * 'ltr analyze' exit 3). Without metadata lost they stay damage (above). */
static void test_unknown_layout_of_lost_metadata_is_lost(void **state)
{
    ltr_bytes b = {0};
    compact_events(&b, 0, 2, 0);
    uint8_t h[LTR_CEVENT_HEADER_MAX];
    for (uint64_t k = 0; k < 2; k++) {
        size_t hn = ltr_put_cevent_header(h, 99, gen_ts(2), gen_ts(1), 3);
        ltr_bytes_put_mem(&b, h, hn);
        ltr_bytes_put_mem(&b, "abc", 3);
    }
    compact_events(&b, 2, 3, gen_ts(2));
    const char *path = gen_tmp("lost-layout.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    put_piece(w, 1, 100, &b, 7, 0);
    put_metadata_lost(w, 1);
    ltr_writer_close(w);
    readback r;
    read_all(path, &r);
    assert_int_equal(r.count, 5);
    if (r.damage)
        fail_msg("events of a lost layout read as damage: %s", r.first_damage);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.events_layout_lost, 2);
    ltr_trace_close(t);
    unlink(path);
    ltr_bytes_free(&b);
}

/* Random bytes in valid compact blocks: whatever is read is checked, nothing
 * is read out of bounds (the ASan build runs this too). */
static void test_random_damage(void **state)
{
    ltr_bytes good = {0};
    compact_events(&good, 0, 40, 0);
    srand(11);
    for (int round = 0; round < 300; round++) {
        ltr_bytes b = {0};
        ltr_bytes_put_mem(&b, good.data, good.len);
        int flips = 1 + rand() % 4;
        for (int i = 0; i < flips; i++)
            b.data[(size_t)rand() % b.len] = (uint8_t)rand();
        if (round % 3 == 0)
            b.len = (size_t)rand() % b.len;
        const char *path = gen_tmp("fuzz.ltr");
        ltr_writer *w = gen_open(path);
        assert_non_null(w);
        put_piece(w, 1, 100, &b, 40, 0);
        ltr_writer_close(w);
        ltr_trace *t;
        ltr_error err;
        assert_int_equal(ltr_trace_open(path, &t, &err), 0);
        ltr_trace_summary s;
        assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
        assert_true(s.events <= 40);
        ltr_trace_close(t);
        unlink(path);
        ltr_bytes_free(&b);
    }
    ltr_bytes_free(&good);
}

/* One thread of a producer writes an event, waits 1.2 s, writes another...:
 * file mode's partial flushes write its one buffer in pieces. Every event
 * must come back with its values and a timestamp inside the session, in order. */
/* The recorder counts a buffer's records itself (its commit word may lie):
 * the framing prefix stops at the first size that cannot be. */
static void test_prefix_counts_records(void **state)
{
    uint8_t buf[100 * (LTR_CEVENT_HEADER_MAX + 200)];
    size_t pos = 0;
    uint64_t ts = 0;
    for (uint32_t i = 0; i < 100; i++) {
        uint32_t payload = i % 3 ? 4 : 200; /* sizes of one and two varint bytes */
        pos += ltr_put_cevent_header(buf + pos, 7, ts + 10, ts, payload);
        memset(buf + pos, 0xab, payload);
        pos += payload;
        ts += 10;
    }
    uint32_t n;
    assert_int_equal(ltr_cevents_prefix(buf, pos, &n), pos);
    assert_int_equal(n, 100);
    /* Cut short inside a record: the records before it. */
    size_t cut = ltr_cevents_prefix(buf, pos - 1, &n);
    assert_int_equal(n, 99);
    assert_true(cut < pos - 1);
    /* A size past the end, or below the two varints every record has. */
    uint8_t bad[] = {0x05, 1, 2, 3, 4, 5, 0x7f, 1, 2};
    assert_int_equal(ltr_cevents_prefix(bad, sizeof bad, &n), 6);
    assert_int_equal(n, 1);
    uint8_t tiny[] = {0x01, 0};
    assert_int_equal(ltr_cevents_prefix(tiny, sizeof tiny, &n), 0);
    assert_int_equal(n, 0);
    uint8_t endless[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(ltr_cevents_prefix(endless, sizeof endless, &n), 0);
}

/* A CPU's buffer (ring.h, "per-CPU buffers"): threads 11, 12 and 13 take
 * turns, each record tagged with its thread and holding its whole time. It
 * is written in two pieces, as a partial flush does (the second cut at a
 * record, not a thread, boundary). Each thread's events read back in order,
 * with their exact times, under their own tid; the prefix counts tagged
 * records and stops at a torn one. */
static void test_cpu_buffer_splits_by_thread(void **state)
{
    const char *path = gen_tmp("cpu.ltr");
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_bytes b = {0};
    static const uint32_t tids[] = {11, 12, 11, 13, 13, 12, 11, 12, 13, 11, 11, 12};
    size_t n = sizeof tids / sizeof tids[0], cut = 0, last_start = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 7)
            cut = b.len;
        last_start = b.len;
        uint8_t *t = ltr_bytes_grow(&b, LTR_VARINT_MAX);
        b.len -= LTR_VARINT_MAX - ltr_put_uvar(t, tids[i]);
        gen_cevent(&b, i, gen_ts(i), 0);
    }
    uint32_t count;
    assert_int_equal(ltr_cpu_records_prefix(b.data, b.len, &count), b.len);
    assert_int_equal(count, n);
    assert_int_equal(ltr_cpu_records_prefix(b.data, b.len - 1, &count), last_start);
    assert_int_equal(count, n - 1); /* the torn last one is not counted */
    uint8_t zero_tid[64];
    memcpy(zero_tid, b.data, 64);
    zero_tid[0] = 0; /* thread 0 is no thread */
    assert_int_equal(ltr_cpu_records_prefix(zero_tid, 64, &count), 0);
    ltr_error err;
    ltr_block_info info = {.pid = 100, .tid = 0, .seq = 9, .event_count = 7, .flags = LTR_BLOCK_FLAG_SEALED_EARLY};
    assert_int_equal(ltr_writer_cpu_block(w, &info, b.data, cut, &err), 0);
    info.event_count = (uint32_t)(n - 7);
    info.flags = 0;
    assert_int_equal(ltr_writer_cpu_block(w, &info, b.data + cut, b.len - cut, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&b);

    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    int64_t last[3] = {-1, -1, -1};
    size_t seen = 0;
    while (ltr_trace_next(t, &ev, &err) > 0) {
        uint64_t k;
        assert_int_equal(ltr_event_get_u64(ev, "n", &k), 0);
        assert_true(k < n);
        assert_int_equal(gen_check_event(ev, k), 0); /* time and content exact */
        assert_int_equal(ev->tid, tids[k]);
        assert_int_equal(ev->pid, 100);
        assert_true((int64_t)k > last[ev->tid - 11]); /* each thread in its order */
        last[ev->tid - 11] = (int64_t)k;
        seen++;
    }
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    assert_int_equal(sum.damage, 0);
    ltr_trace_close(t);
    assert_int_equal(seen, n);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_pieces_decode_alone),
        cmocka_unit_test(test_version1_trace_reads),
        cmocka_unit_test(test_truncated_at_every_byte),
        cmocka_unit_test(test_bad_varints),
        cmocka_unit_test(test_unknown_layout_keeps_time),
        cmocka_unit_test(test_unknown_layout_of_lost_metadata_is_lost),
        cmocka_unit_test(test_random_damage),
        cmocka_unit_test(test_prefix_counts_records),
        cmocka_unit_test(test_cpu_buffer_splits_by_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
