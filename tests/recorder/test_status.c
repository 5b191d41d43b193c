/*
 * tests/recorder/test_status.c — a session's status as a struct
 * (recorder/client.h): parsed from a response laid out as the recorder
 * writes it, and asked of a recorder started in this process, with no ltr
 * binary between.
 */
#include "recorder/client.h"
#include "recorder/recorder.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static void put_u64(ltr_bytes *b, const char *key, uint64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    ltr_bytes_put_kv(b, key, num);
}

static void put_collector(ltr_bytes *b, unsigned c, const char *name, uint64_t recorded, uint64_t lost,
                          uint64_t overwritten)
{
    char key[64];
    snprintf(key, sizeof key, "collector.%u.name", c);
    ltr_bytes_put_kv(b, key, name);
#define COL(field, v) (snprintf(key, sizeof key, "collector.%u." field, c), put_u64(b, key, (v)))
    COL("buffer_size", 16384);
    COL("buffers", 512);
    COL("buffers_free", 500 + c);
    COL("events_recorded", recorded);
    COL("events_lost", lost);
    COL("events_overwritten", overwritten);
    COL("buffers_lost", c + 1);
    COL("shm_damage", c);
#undef COL
}

static void test_parse_file_mode(void **state)
{
    (void)state;
    ltr_bytes b = {0};
    ltr_bytes_put_kv(&b, "ok", "1");
    ltr_bytes_put_kv(&b, "name", "svc");
    ltr_bytes_put_kv(&b, "mode", "file");
    put_u64(&b, "pid", 4242);
    put_u64(&b, "uptime_ns", 2500000000u);
    put_u64(&b, "processes", 3);
    ltr_bytes_put_kv(&b, "profiles", "heap;cpu");
    ltr_bytes_put_kv(&b, "output", "/tmp/x.ltr.part");
    put_u64(&b, "file_size", 1u << 20);
    put_u64(&b, "max_file_size", 8u << 20);
    put_u64(&b, "collectors", 2);
    put_collector(&b, 0, "heap", 1000, 7, 0);
    put_collector(&b, 1, "events", 20, 1, 5);
    ltr_kvlist kv = {b.data, b.len};
    ltr_session_status st;
    ltr_session_status_parse(&kv, &st);
    assert_string_equal(st.name, "svc");
    assert_string_equal(st.mode, "file");
    assert_true(st.file_mode);
    assert_int_equal(st.pid, 4242);
    assert_int_equal(st.uptime_ns, 2500000000u);
    assert_int_equal(st.processes, 3);
    assert_string_equal(st.profiles, "heap;cpu");
    assert_true(st.has_output);
    assert_string_equal(st.output, "/tmp/x.ltr.part");
    assert_int_equal(st.file_size, 1u << 20);
    assert_int_equal(st.max_file_size, 8u << 20);
    assert_string_equal(st.write_error, "");
    assert_int_equal(st.ncollectors, 2);
    assert_string_equal(st.collectors[1].name, "events");
    assert_int_equal(st.collectors[1].buffer_size, 16384);
    assert_int_equal(st.collectors[1].buffers, 512);
    assert_int_equal(st.collectors[1].buffers_free, 501);
    assert_int_equal(st.collectors[1].events_recorded, 20);
    assert_int_equal(st.collectors[1].events_overwritten, 5);
    assert_int_equal(st.collectors[1].buffers_lost, 2);
    assert_int_equal(st.collectors[1].shm_damage, 1);
    ltr_collector_status t = ltr_session_status_total(&st);
    assert_int_equal(t.events_recorded, 1020);
    assert_int_equal(t.events_lost, 8);
    assert_int_equal(t.events_overwritten, 5);
    assert_int_equal(t.buffers_lost, 3);
    ltr_bytes_free(&b);
}

/* A recorder of another version, or a damaged answer: missing keys are zero,
 * and more collectors than a session can have are not read past the array. */
static void test_parse_missing_and_too_many(void **state)
{
    (void)state;
    ltr_bytes b = {0};
    ltr_bytes_put_kv(&b, "ok", "1");
    ltr_bytes_put_kv(&b, "mode", "memory");
    put_u64(&b, "collectors", 1000);
    put_collector(&b, 0, "events", 9, 0, 0);
    ltr_kvlist kv = {b.data, b.len};
    ltr_session_status st;
    memset(&st, 0xab, sizeof st);
    ltr_session_status_parse(&kv, &st);
    assert_string_equal(st.name, "");
    assert_false(st.file_mode);
    assert_false(st.has_output);
    assert_string_equal(st.profiles, "");
    assert_int_equal(st.pid, 0);
    assert_int_equal(st.ncollectors, LTR_MAX_COLLECTORS);
    assert_int_equal(st.collectors[0].events_recorded, 9);
    assert_string_equal(st.collectors[1].name, "");
    assert_int_equal(ltr_session_status_total(&st).events_recorded, 9);
    ltr_bytes_free(&b);
}

/* The keys the recorder writes are the ones the parser reads. */
static void test_status_of_a_running_recorder(void **state)
{
    (void)state;
    static ltr_session_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "status-test");
    cfg.mode = LTR_MODE_MEMORY;
    cfg.ncollectors = 2;
    snprintf(cfg.collectors[0].name, sizeof cfg.collectors[0].name, "events");
    cfg.collectors[0].buffer_kb = 64;
    cfg.collectors[0].buffers = 8;
    snprintf(cfg.collectors[1].name, sizeof cfg.collectors[1].name, "other");
    cfg.collectors[1].buffer_kb = 4;
    cfg.collectors[1].buffers = 3;
    snprintf(cfg.profiles, sizeof cfg.profiles, "p1;p2");
    ltr_error err = {0};
    assert_int_equal(ltr_recorder_launch(&cfg, &err), 0);
    static ltr_session_status st;
    int rc = ltr_client_status("status-test", &st, &err);
    ltr_error cerr;
    ltr_client_op("status-test", "cancel", NULL, NULL, false, NULL, &cerr);
    assert_int_equal(rc, 0);
    assert_string_equal(st.name, "status-test");
    assert_string_equal(st.mode, "memory");
    assert_false(st.file_mode);
    assert_false(st.has_output);
    assert_string_equal(st.profiles, "p1;p2");
    assert_true(st.pid > 0);
    assert_int_equal(st.ncollectors, 2);
    assert_string_equal(st.collectors[0].name, "events");
    assert_int_equal(st.collectors[0].buffer_size, 64 * 1024);
    assert_int_equal(st.collectors[0].buffers, 8);
    assert_string_equal(st.collectors[1].name, "other");
    assert_int_equal(st.collectors[1].buffers, 3);
    assert_int_equal(st.collectors[1].buffer_size, 4096);
    assert_int_equal(ltr_session_status_total(&st).events_recorded, 0);
}

/* No recorder: an error naming the session, and nothing filled. */
static void test_status_of_no_session(void **state)
{
    (void)state;
    ltr_session_status st;
    ltr_error err = {0};
    assert_true(ltr_client_status("nobody-here", &st, &err) < 0);
    assert_non_null(strstr(err.msg, "nobody-here"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_file_mode),
        cmocka_unit_test(test_parse_missing_and_too_many),
        cmocka_unit_test_setup_teardown(test_status_of_a_running_recorder, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_status_of_no_session, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
