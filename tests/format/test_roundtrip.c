/*
 * tests/format/test_roundtrip.c — what the writer writes, the reader reads
 * back exactly: events with every field type across many blocks and chunks,
 * metadata tables with event counts, key/values, counters, the summary, and
 * rewind.
 */
#include "gen.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static uint64_t read_all(ltr_trace *t)
{
    const ltr_event *ev;
    ltr_error err;
    uint64_t n = 0;
    int rc;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        int bad = gen_check_event(ev, n);
        if (bad)
            fail_msg("event %llu: check at gen.c:%d failed", (unsigned long long)n, bad);
        uint32_t pid, tid;
        gen_block_ids(n / 50, &pid, &tid);
        assert_int_equal(ev->pid, pid);
        assert_int_equal(ev->tid, tid);
        assert_int_equal(ev->buffer_seq, n / 50);
        n++;
    }
    assert_int_equal(rc, 0);
    return n;
}

static void test_many_blocks_across_chunks(void **state)
{
    const char *path = gen_tmp("rt.ltr");
    gen_opts o = {.blocks = 120, .events_per_block = 50, .chunk_target = 16 * 1024, .with_end = 1};
    gen_marks m;
    assert_int_equal(gen_write(path, &o, &m), 0);
    assert_true(m.n > 10); /* several EVENTS chunks */

    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    /* the HEADER is read at open */
    assert_string_equal(ltr_trace_kv(t, LTR_KV_HEADER, "session.name"), "gen-session");
    assert_int_equal(ltr_trace_origin_ns(t), GEN_START_NS);
    assert_int_equal(read_all(t), 6000);
    assert_int_equal(ltr_trace_damage_count(t), 0);
    assert_true(ltr_trace_complete(t));
    assert_string_equal(ltr_trace_kv(t, LTR_KV_END, "session.description"), "gen \"desc\"");
    assert_null(ltr_trace_kv(t, LTR_KV_END, "nope"));

    ltr_trace_summary s;
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.events, 6000);
    assert_int_equal(s.blocks, 120);
    assert_int_equal(s.first_ts, gen_ts(0));
    assert_int_equal(s.last_ts, gen_ts(5999));
    assert_int_equal(s.damage, 0);
    assert_true(s.complete);
    assert_int_equal(s.chunks, m.n - 1); /* marks start at the file header */

    assert_int_equal(ltr_trace_provider_count(t), 2);
    const ltr_trace_provider *a = ltr_trace_provider_at(t, 0);
    assert_string_equal(a->name, "Test.Alpha");
    assert_int_equal(a->events, 4000);
    assert_ptr_equal(ltr_trace_provider_find(t, &a->guid), a);
    assert_int_equal(ltr_trace_layout_count(t), 3);
    const ltr_layout *l = ltr_trace_layout_find(t, 2);
    assert_non_null(l);
    assert_string_equal(l->name, "Mixed");
    assert_int_equal(l->event_id, 102);
    assert_int_equal(l->field_count, 9);
    assert_int_equal(l->fields[7].type, LTR_TYPE_BLOB);
    assert_string_equal(l->fields[7].name, "data");
    assert_int_equal(l->events, 2000);
    assert_ptr_equal(l->provider, a);

    assert_int_equal(ltr_trace_process_count(t), 2);
    const ltr_process *p = ltr_trace_process_find(t, 200);
    assert_non_null(p);
    assert_true(p->known);
    assert_string_equal(p->exe, "/usr/bin/beta");
    assert_int_equal(p->argc, 2);
    assert_string_equal(p->argv[1], "with space");
    assert_int_equal(p->events, 40 * 50);
    assert_int_equal(ltr_trace_process_find(t, 100)->events, 80 * 50);
    assert_int_equal(ltr_trace_thread_count(t), 3);
    assert_string_equal(ltr_trace_thread_find(t, 100, 101)->name, "alpha-worker");
    assert_int_equal(ltr_trace_thread_find(t, 100, 101)->events, 40 * 50);

    assert_true(ltr_trace_has_counters(t));
    assert_int_equal(ltr_trace_collector_count(t), 1);
    const ltr_collector_counters *c = ltr_trace_collector_at(t, 0);
    assert_string_equal(c->name, "events");
    assert_int_equal(c->events_written, 10);
    assert_int_equal(c->events_lost, 20);
    assert_int_equal(c->buffers_overwritten, 60);
    assert_int_equal(c->events_unwritten, 0); /* a record of a recorder before it: none said */
    assert_int_equal(ltr_trace_process_lost_count(t), 1);
    assert_int_equal(ltr_trace_process_lost_at(t, 0)->pid, 200);
    assert_int_equal(ltr_trace_process_lost_at(t, 0)->events_lost, 7);

    /* rewind streams the same events again */
    assert_int_equal(ltr_trace_rewind(t, &err), 0);
    assert_int_equal(read_all(t), 6000);
    ltr_trace_close(t);
    unlink(path);
}

static void test_field_access_bounds(void **state)
{
    const char *path = gen_tmp("fields.ltr");
    gen_opts o = {.blocks = 1, .events_per_block = 3, .with_end = 1};
    assert_int_equal(gen_write(path, &o, NULL), 0);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
    ltr_trace_value v;
    assert_int_equal(ltr_event_field(ev, 6, &v), -ERANGE);
    assert_int_equal(ltr_event_field(ev, 1, &v), 0);
    assert_int_equal(v.type, LTR_TYPE_POINTER);
    assert_int_equal(ltr_event_field_index(ev, "tag"), 3);
    assert_int_equal(ltr_event_field_index(ev, "missing"), -ENOENT);
    uint64_t u;
    const char *s;
    size_t len;
    assert_int_equal(ltr_event_get_u64(ev, "missing", &u), -ENOENT);
    assert_int_equal(ltr_event_get_u64(ev, "tag", &u), -EINVAL);
    assert_int_equal(ltr_event_get_str(ev, "size", &s, &len), -EINVAL);
    assert_string_equal(ltr_type_name(LTR_TYPE_POINTER), "pointer");
    assert_string_equal(ltr_type_name((ltr_type)99), "?");
    ltr_trace_close(t);
    unlink(path);
}

/* Events that use a layout whose METADATA record comes in a later chunk, or
 * a pid with no PROCESS record, still count under placeholders. */
static void test_placeholders(void **state)
{
    const char *path = gen_tmp("ph.ltr");
    ltr_writer *w;
    ltr_error err;
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_bytes meta = {0};
    size_t r = ltr_bytes_record_begin(&meta, LTR_META_LAYOUT);
    ltr_bytes_put_u32(&meta, 3);
    ltr_bytes_put_mem(&meta, "0123456789abcdef", 16);
    ltr_bytes_put_u16(&meta, 1);
    ltr_bytes_put_u8(&meta, 4);
    ltr_bytes_put_u8(&meta, 0);
    ltr_bytes_put_u64(&meta, 0);
    ltr_bytes_put_str(&meta, "Tick");
    ltr_bytes_put_u16(&meta, 1);
    ltr_bytes_put_u8(&meta, LTR_TYPE_U64);
    ltr_bytes_put_str(&meta, "n");
    ltr_bytes_record_end(&meta, r);
    assert_int_equal(ltr_writer_metadata(w, meta.data, meta.len, &err), 0);
    ltr_bytes ev = {0};
    gen_event(&ev, 2, 5);
    ltr_block_info info = {.pid = 77, .tid = 78, .event_count = 1, .fixed_records = 1};
    assert_int_equal(ltr_writer_block(w, &info, ev.data, ev.len, &err), 0);
    assert_int_equal(ltr_writer_flush(w, 1, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&meta);
    ltr_bytes_free(&ev);

    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_trace_summary s;
    assert_int_equal(ltr_trace_scan(t, &s, &err), 0);
    assert_int_equal(s.events, 1);
    assert_false(s.complete);
    assert_int_equal(s.damage, 0);
    assert_int_equal(ltr_trace_origin_ns(t), 5); /* no clock.start_ns: the first event */
    const ltr_trace_provider *p = ltr_trace_provider_at(t, 0);
    assert_false(p->named);
    assert_string_equal(p->name, "30313233-3435-3637-3839-616263646566");
    assert_int_equal(p->events, 1);
    const ltr_process *pr = ltr_trace_process_find(t, 77);
    assert_non_null(pr);
    assert_false(pr->known);
    assert_string_equal(pr->exe, "");
    assert_int_equal(pr->events, 1);
    assert_int_equal(ltr_trace_thread_find(t, 77, 78)->pid, 77);
    ltr_trace_close(t);
    unlink(path);
}

/* A tid is the thread's in its process's own pid namespace: two containers'
 * processes both have a thread 1, each with its own name and events (keyed
 * by tid alone, the second's THREAD record renamed the first's thread and
 * took it over, its pid too). */
static void test_same_tid_in_two_processes(void **state)
{
    const char *path = gen_tmp("tid.ltr");
    ltr_writer *w;
    ltr_error err;
    assert_int_equal(ltr_writer_open(&w, path, &err), 0);
    ltr_bytes meta = {0}, ev = {0};
    gen_metadata(&meta); /* the layouts, and 3 threads of pids 100 and 200 */
    gen_thread(&meta, 300, 1, "first-main");
    gen_thread(&meta, 400, 1, "second-main");
    assert_int_equal(ltr_writer_metadata(w, meta.data, meta.len, &err), 0);
    gen_event(&ev, 2, 5);
    for (uint32_t pid = 300; pid <= 400; pid += 100) {
        ltr_block_info info = {.pid = pid, .tid = 1, .event_count = 1, .fixed_records = 1};
        assert_int_equal(ltr_writer_block(w, &info, ev.data, ev.len, &err), 0);
    }
    assert_int_equal(ltr_writer_flush(w, 1, &err), 0);
    ltr_writer_close(w);
    ltr_bytes_free(&meta);
    ltr_bytes_free(&ev);

    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *e;
    while (ltr_trace_next(t, &e, &err) > 0)
        ;
    assert_int_equal(ltr_trace_thread_count(t), 3 + 2);
    const ltr_thread *first = ltr_trace_thread_find(t, 300, 1), *second = ltr_trace_thread_find(t, 400, 1);
    assert_non_null(first);
    assert_non_null(second);
    assert_int_equal(first->pid, 300);
    assert_string_equal(first->name, "first-main");
    assert_int_equal(first->events, 1);
    assert_int_equal(second->pid, 400);
    assert_string_equal(second->name, "second-main");
    assert_int_equal(second->events, 1);
    assert_null(ltr_trace_thread_find(t, 500, 1));
    ltr_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_blocks_across_chunks),
        cmocka_unit_test(test_field_access_bounds),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_same_tid_in_two_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
