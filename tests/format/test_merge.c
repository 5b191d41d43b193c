/*
 * tests/format/test_merge.c — ltr merge in-process (src/format/merge.c), on
 * traces whose every event is known (gen.h):
 * - a trace merged with a copy of itself: every event twice, exactly as
 *   written (layout, time, every field), the metadata both hold once, each
 *   copy's counters under collectors of their own;
 * - with a trace whose layout 1 is another event: each keeps its own (the
 *   ids are renumbered), times in order across the two;
 * - refusals: another machine, another boot, one trace, an existing output
 *   (left as it was), a file that is not a trace; nothing left behind;
 * - frame nodes in METADATA chunks that follow one another: the same stacks;
 * - a block of no whole record is left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "gen.h"
#include "format/merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUID_C "33333333-4444-4555-8666-777777777777"

static const gen_opts opts = {.blocks = 12, .events_per_block = 40, .chunk_target = 4096, .with_end = 1};
#define EVENTS (12 * 40)

static void copy_file(const char *from, const char *to)
{
    size_t len;
    uint8_t *d = gen_slurp(from, &len);
    assert_non_null(d);
    assert_int_equal(gen_spit(to, d, len), 0);
    free(d);
}

static ltr_trace *open_trace(const char *path)
{
    ltr_trace *t;
    ltr_error err;
    if (ltr_trace_open(path, &t, &err))
        fail_msg("%s", err.msg);
    return t;
}

static void test_merge_with_itself(void **state)
{
    (void)state;
    const char *a = gen_tmp("a.ltr"), *b = gen_tmp("b.ltr"), *out = gen_tmp("m.ltr");
    assert_int_equal(gen_write(a, &opts, NULL), 0);
    copy_file(a, b);
    const char *paths[] = {a, b};
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge(paths, 2, out, false, &rep, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(rep.events, 2 * EVENTS);
    assert_true(rep.duplicates >= 7); /* 2 providers, 2 processes, 3 threads of the copy */
    assert_true(rep.complete);
    ltr_trace *t = open_trace(out);
    static unsigned seen[EVENTS];
    memset(seen, 0, sizeof seen);
    const ltr_event *ev;
    int rc;
    uint64_t n;
    while ((rc = ltr_trace_next(t, &ev, &err)) == 1) {
        assert_int_equal(ltr_event_get_u64(ev, "n", &n), 0);
        assert_true(n < EVENTS);
        int bad = gen_check_event(ev, n);
        if (bad)
            fail_msg("event %llu differs (gen.c:%d)", (unsigned long long)n, bad);
        seen[n]++;
    }
    assert_int_equal(rc, 0);
    for (size_t i = 0; i < EVENTS; i++)
        assert_int_equal(seen[i], 2);
    assert_int_equal(ltr_trace_damage_count(t), 0);
    assert_true(ltr_trace_complete(t));
    assert_int_equal(ltr_trace_process_count(t), 2);
    assert_int_equal(ltr_trace_thread_count(t), 3);
    assert_int_equal(ltr_trace_collector_count(t), 2); /* each trace's collector 0, apart */
    assert_string_equal(ltr_trace_kv(t, LTR_KV_HEADER, "trace.kind"), "merge");
    assert_string_equal(ltr_trace_kv(t, LTR_KV_HEADER, "merge.source.1"), b);
    ltr_trace_close(t);
    unlink(a), unlink(b), unlink(out);
}

/* A trace whose layout 1 is "Other" of provider Test.Gamma, with n events
 * between those of gen's. */
static void write_other(const char *path, unsigned n)
{
    ltr_writer *w;
    ltr_error err;
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_bytes kv = {0}, meta = {0}, ev = {0};
    gen_header(&kv);
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_HEADER, &kv, &err), 0);
    size_t r = ltr_bytes_record_begin(&meta, LTR_META_PROVIDER);
    ltr_guid g;
    ltr_guid_parse(GUID_C, &g);
    ltr_bytes_put_mem(&meta, g.b, 16);
    ltr_bytes_put_str(&meta, "Test.Gamma");
    ltr_bytes_record_end(&meta, r);
    r = ltr_bytes_record_begin(&meta, LTR_META_LAYOUT);
    ltr_bytes_put_u32(&meta, 1);
    ltr_bytes_put_mem(&meta, g.b, 16);
    ltr_bytes_put_u16(&meta, 7);
    ltr_bytes_put_u8(&meta, 4);
    ltr_bytes_put_u8(&meta, 0);
    ltr_bytes_put_u64(&meta, 1);
    ltr_bytes_put_str(&meta, "Other");
    ltr_bytes_put_u16(&meta, 1);
    ltr_bytes_put_u8(&meta, LTR_TYPE_U64);
    ltr_bytes_put_str(&meta, "k");
    ltr_bytes_record_end(&meta, r);
    assert_int_equal(ltr_writer_metadata(w, meta.data, meta.len, &err), 0);
    uint64_t prev = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t ts = gen_ts(i * 40) + 500, k = 1000 + i; /* between gen's events i*40 and i*40+1 */
        uint8_t h[LTR_CEVENT_HEADER_MAX];
        size_t hn = ltr_put_cevent_header(h, 1, ts, prev, 8);
        ltr_bytes_put_mem(&ev, h, hn);
        ltr_bytes_put_u64(&ev, k);
        prev = ts;
    }
    ltr_block_info bi = {.collector = 0, .pid = 300, .tid = 300, .seq = 0, .event_count = n};
    assert_true(ltr_writer_block(w, &bi, ev.data, ev.len, &err) >= 0);
    kv.len = 0;
    ltr_bytes_put_kv(&kv, "clock.end_ns", "2000000000000");
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_END, &kv, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&kv), ltr_bytes_free(&meta), ltr_bytes_free(&ev);
}

static void test_layouts_renumbered(void **state)
{
    (void)state;
    const char *a = gen_tmp("a.ltr"), *b = gen_tmp("other.ltr"), *out = gen_tmp("m.ltr");
    assert_int_equal(gen_write(a, &opts, NULL), 0);
    write_other(b, 10);
    const char *paths[] = {a, b};
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge(paths, 2, out, false, &rep, &err))
        fail_msg("%s", err.msg);
    ltr_trace *t = open_trace(out);
    const ltr_event *ev;
    unsigned others = 0, gens = 0;
    uint64_t k;
    while (ltr_trace_next(t, &ev, &err) == 1) {
        if (!strcmp(ev->layout->name, "Other")) {
            assert_string_equal(ev->layout->provider->name, "Test.Gamma");
            assert_int_equal(ltr_event_get_u64(ev, "k", &k), 0);
            assert_int_equal(ev->ts, gen_ts((k - 1000) * 40) + 500);
            others++;
        } else {
            uint64_t n;
            assert_int_equal(ltr_event_get_u64(ev, "n", &n), 0);
            assert_int_equal(gen_check_event(ev, n), 0); /* gen's layouts keep ids 1-3 */
            gens++;
        }
    }
    assert_int_equal(others, 10);
    assert_int_equal(gens, EVENTS);
    assert_non_null(ltr_trace_layout_find(t, 4)); /* Other's merged id */
    assert_int_equal(ltr_trace_damage_count(t), 0);
    ltr_trace_close(t);
    unlink(a), unlink(b), unlink(out);
}

/* A trace with this host and boot (NULL: no boot id). */
static void write_host(const char *path, const char *host, const char *boot)
{
    ltr_writer *w;
    ltr_error err;
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_bytes kv = {0};
    ltr_bytes_put_kv(&kv, "host.name", host);
    if (boot)
        ltr_bytes_put_kv(&kv, "host.boot_id", boot);
    ltr_bytes_put_kv(&kv, "clock.start_ns", "1000");
    assert_int_equal(ltr_writer_kv(w, LTR_CHUNK_HEADER, &kv, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&kv);
}

static void test_refusals(void **state)
{
    (void)state;
    const char *a = gen_tmp("a.ltr"), *b = gen_tmp("b.ltr"), *c = gen_tmp("c.ltr"), *out = gen_tmp("m.ltr");
    write_host(a, "h1", "boot-1");
    write_host(b, "h1", "boot-2");
    write_host(c, "h2", "boot-1");
    ltr_merge_report rep;
    ltr_error err;
    const char *other_boot[] = {a, b}, *other_host[] = {a, c}, *one[] = {a};
    assert_int_equal(ltr_merge(other_boot, 2, out, false, &rep, &err), -EXDEV);
    assert_non_null(strstr(err.msg, "another boot"));
    assert_int_equal(ltr_merge(other_host, 2, out, false, &rep, &err), -EXDEV);
    assert_non_null(strstr(err.msg, "two machines"));
    assert_int_equal(ltr_merge(one, 1, out, false, &rep, &err), -EINVAL);
    assert_int_equal(access(out, F_OK), -1);
    /* not a trace */
    assert_int_equal(gen_spit(c, "hello", 5), 0);
    const char *bad[] = {a, c};
    assert_true(ltr_merge(bad, 2, out, false, &rep, &err) < 0);
    assert_non_null(strstr(err.msg, c));
    /* an existing output stays as it was */
    unlink(b);
    write_host(b, "h1", "boot-1");
    assert_int_equal(gen_spit(out, "keep", 4), 0);
    const char *ok[] = {a, b};
    assert_int_equal(ltr_merge(ok, 2, out, false, &rep, &err), -EEXIST);
    size_t len;
    uint8_t *kept = gen_slurp(out, &len);
    assert_true(kept && len == 4 && !memcmp(kept, "keep", 4));
    free(kept);
    assert_int_equal(ltr_merge(ok, 2, out, true, &rep, &err), 0); /* --force */
    assert_false(rep.complete); /* neither has an END */
    unlink(a), unlink(b), unlink(c), unlink(out);
}

/* FRAME_NODES for pid 100: ids first..first+n-1, each the parent of the next. */
static void put_nodes(ltr_bytes *b, uint32_t parent, uint32_t first, unsigned n)
{
    size_t r = ltr_bytes_record_begin(b, LTR_META_FRAME_NODES);
    ltr_bytes_put_u32(b, 100);
    ltr_bytes_put_u32(b, parent);
    ltr_bytes_put_u16(b, (uint16_t)n);
    for (unsigned i = 0; i < n; i++) {
        ltr_bytes_put_u32(b, first + i);
        ltr_bytes_put_u64(b, 0x400000 + (uint64_t)(first + i) * 16);
    }
    ltr_bytes_record_end(b, r);
}

static void write_nodes_then_block(ltr_writer *w, uint32_t parent, uint32_t first, uint64_t n)
{
    ltr_bytes b = {0};
    ltr_error err;
    put_nodes(&b, parent, first, 3);
    assert_int_equal(ltr_writer_metadata(w, b.data, b.len, &err), 0);
    if (n == UINT64_MAX) { /* no block after it */
        ltr_bytes_free(&b);
        return;
    }
    b.len = 0;
    gen_cevent(&b, n, gen_ts(n), 0);
    ltr_block_info info = {.pid = 100, .tid = 100, .seq = n, .event_count = 1};
    assert_int_equal(ltr_writer_block(w, &info, b.data, b.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_bytes_free(&b);
}

/* A trace whose frame nodes of one process are in three METADATA chunks,
 * two of them one after the other after events: merged, every stack is the
 * same. (The merge's writer once put those two in one chunk, where the
 * second's node ids, told from the record before them in the chunk, came out
 * shifted: wrong stacks in every merged heap trace.) */
static void test_merged_stacks_keep_their_nodes(void **state)
{
    (void)state;
    const char *a = gen_tmp("nodes.ltr"), *b = gen_tmp("other.ltr"), *out = gen_tmp("mn.ltr");
    ltr_writer *w = gen_open(a);
    assert_non_null(w);
    write_nodes_then_block(w, 0, 1, 0);
    write_nodes_then_block(w, 3, 4, UINT64_MAX);
    write_nodes_then_block(w, 6, 7, 1);
    ltr_writer_close(w);
    assert_int_equal(gen_write(b, &opts, NULL), 0);
    const char *paths[] = {a, b};
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge(paths, 2, out, false, &rep, &err))
        fail_msg("%s", err.msg);
    ltr_trace *ta = open_trace(a), *tm = open_trace(out);
    ltr_trace_summary sum;
    assert_int_equal(ltr_trace_scan(ta, &sum, &err), 0);
    assert_int_equal(ltr_trace_scan(tm, &sum, &err), 0);
    assert_int_equal(sum.damage, 0);
    for (uint32_t id = 1; id <= 9; id++) {
        const ltr_stack *x = ltr_trace_stack_find(ta, 100, id), *y = ltr_trace_stack_find(tm, 100, id);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(x->frame_count, id);
        assert_int_equal(y->frame_count, x->frame_count);
        assert_memory_equal(y->frames, x->frames, x->frame_count * sizeof *x->frames);
    }
    ltr_trace_close(ta);
    ltr_trace_close(tm);
    unlink(a);
    unlink(b);
    unlink(out);
}

/* A block none of whose records is whole (a crafted or damaged source: a
 * fixed record whose size says 8 bytes) is no block of the merge: it was
 * written with no records at all, from no bytes (NULL, which the writer's
 * memcpy took: UBSan stopped the ASan build's ltr merge of such a trace, a
 * fuzzer's input given to root's merge). */
static void test_block_of_no_whole_record_left_out(void **state)
{
    (void)state;
    const char *a = gen_tmp("holed.ltr"), *b = gen_tmp("whole.ltr"), *out = gen_tmp("mh.ltr");
    ltr_writer *w = gen_open(a);
    assert_non_null(w);
    ltr_bytes rec = {0};
    ltr_error err;
    gen_cevent(&rec, 0, gen_ts(0), 0);
    ltr_block_info info = {.pid = 100, .tid = 100, .seq = 0, .event_count = 1};
    assert_int_equal(ltr_writer_block(w, &info, rec.data, rec.len, &err), 0);
    uint8_t bad[16] = {8}; /* a fixed record of 8 bytes: less than its own header */
    ltr_block_info holed = {.pid = 100, .tid = 100, .seq = 1, .event_count = 1, .fixed_records = 1};
    assert_int_equal(ltr_writer_block(w, &holed, bad, sizeof bad, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 0, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&rec);
    assert_int_equal(gen_write(b, &opts, NULL), 0);
    const char *paths[] = {a, b};
    ltr_merge_report rep;
    if (ltr_merge(paths, 2, out, false, &rep, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(rep.blocks, 1 + 12); /* the holed trace's whole block and the other's 12 */
    assert_int_equal(rep.events, 1 + EVENTS);
    unlink(a);
    unlink(b);
    unlink(out);
}

/* A merged trace's collectors go past a source's four: merged again, they
 * would mix with the next source's (counters, address references). */
static void test_merged_trace_is_not_a_source(void **state)
{
    (void)state;
    const char *a = gen_tmp("ma.ltr"), *b = gen_tmp("mb.ltr"), *m = gen_tmp("mm.ltr"), *out = gen_tmp("m2.ltr");
    assert_int_equal(gen_write(a, &opts, NULL), 0);
    copy_file(a, b);
    const char *paths[] = {a, b};
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge(paths, 2, m, false, &rep, &err))
        fail_msg("%s", err.msg);
    const char *again[] = {a, m};
    assert_int_not_equal(ltr_merge(again, 2, out, false, &rep, &err), 0);
    assert_non_null(strstr(err.msg, "cannot be merged again"));
    assert_int_equal(access(out, F_OK), -1);
    unlink(a);
    unlink(b);
    unlink(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_with_itself),
        cmocka_unit_test(test_layouts_renumbered),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_merged_stacks_keep_their_nodes),
        cmocka_unit_test(test_merged_trace_is_not_a_source),
        cmocka_unit_test(test_block_of_no_whole_record_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
