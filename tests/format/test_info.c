/*
 * tests/format/test_info.c — what `ltr info` shows of a trace, in-process
 * (format/info.h): the summary of one scan (start time, duration, complete or
 * cut short), and its text and JSON writers, on traces written with the real
 * writer; and the counters' events_unwritten (the events a failed write cost,
 * once said to have found no free buffer) read back, 0 from older traces.
 */
#include "format/info.h"
#include "gen.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Writes a trace of 3 blocks of 5 events, scans it into *info. */
static ltr_trace *scanned(const char *name, int with_end, ltr_trace_info *info)
{
    const char *path = gen_tmp(name);
    gen_opts o = {.blocks = 3, .events_per_block = 5, .with_end = with_end};
    assert_int_equal(gen_write(path, &o, NULL), 0);
    ltr_trace *t;
    ltr_error err = {0};
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_info_scan(t, info, &err), 0);
    return t;
}

static char *written(const ltr_trace *t, const ltr_trace_info *info, int json)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (json)
        ltr_trace_info_write_json(f, t, info);
    else
        ltr_trace_info_write_text(f, t, info);
    assert_int_equal(fclose(f), 0);
    return buf;
}

/* Braces and brackets balance outside strings, and the object ends the line. */
static void assert_one_json_object(const char *s)
{
    int depth = 0, in_str = 0;
    assert_int_equal(s[0], '{');
    for (const char *p = s; *p; p++) {
        if (in_str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_str = 0;
            continue;
        }
        if (*p == '"')
            in_str = 1;
        else if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']')
            assert_true(--depth >= 0);
        else if (*p == '\n')
            assert_string_equal(p, "\n");
    }
    assert_int_equal(depth, 0);
}

static void test_complete_trace(void **state)
{
    (void)state;
    ltr_trace_info info;
    ltr_trace *t = scanned("info-complete.ltr", 1, &info);
    assert_int_equal(info.summary.events, 15);
    assert_int_equal(info.summary.blocks, 3);
    assert_true(info.summary.complete);
    assert_int_equal(info.summary.damage, 0);
    assert_string_equal(info.start, "2023-11-14T22:13:20.123456789Z"); /* GEN_WALL_NS */
    assert_true(info.has_duration);
    assert_int_equal(info.duration_ns, 1000002000000ull - GEN_START_NS); /* END's clock */

    char *json = written(t, &info, 1);
    assert_one_json_object(json);
    assert_non_null(strstr(json, "\"complete\":true"));
    assert_non_null(strstr(json, "\"events\":15,\"blocks\":3"));
    assert_non_null(strstr(json, "\"start\":\"2023-11-14T22:13:20.123456789Z\",\"duration_ns\":2000000,"));
    assert_non_null(strstr(json, "\"session.description\":\"gen \\\"desc\\\"\""));
    assert_non_null(strstr(json, "\"damage_count\":0,\"forged_count\":0,\"damage\":[]}\n"));
    free(json);

    char *text = written(t, &info, 0);
    assert_non_null(strstr(text, "state:       complete\n"));
    assert_non_null(strstr(text, "started:     2023-11-14T22:13:20.123456789Z\n"));
    assert_non_null(strstr(text, "duration:    0.002000000 s\n"));
    assert_non_null(strstr(text, "events:      15 in 3 blocks\n"));
    assert_non_null(strstr(text, "\ndamage:      none\n"));
    free(text);
    ltr_trace_close(t);
}

/* Cut short: no END, so the duration runs to the last event, and says so. */
static void test_cut_short_trace(void **state)
{
    (void)state;
    ltr_trace_info info;
    ltr_trace *t = scanned("info-cut.ltr", 0, &info);
    assert_false(info.summary.complete);
    assert_true(info.has_duration);
    assert_int_equal(info.duration_ns, info.summary.last_ts - GEN_START_NS);
    char *text = written(t, &info, 0);
    assert_non_null(strstr(text, "state:       cut short (no END chunk)\n"));
    assert_non_null(strstr(text, " s (to the last event)\n"));
    free(text);
    char *json = written(t, &info, 1);
    assert_one_json_object(json);
    assert_non_null(strstr(json, "\"complete\":false"));
    assert_non_null(strstr(json, "\"end\":{}"));
    free(json);
    ltr_trace_close(t);
}

/* A trace whose one COUNTERS record holds n of its u64 counters (events_lost
 * 20, events_unwritten 12 as the tenth: 6 before shm_damage, metadata_lost),
 * opened and scanned into *info. */
static ltr_trace *with_counters(const char *name, int n, uint64_t unwritten, ltr_trace_info *info)
{
    const char *path = gen_tmp(name);
    ltr_writer *w = gen_open(path);
    assert_non_null(w);
    ltr_bytes c = {0};
    uint64_t v[9] = {10, 20, 3, 2, 0, 0, 0, 0, unwritten}; /* written, lost, buffers written, lost, ... */
    gen_collector(&c, v, n);
    ltr_error err = {0};
    assert_int_equal(ltr_writer_counters(w, c.data, c.len, &err), 0);
    ltr_bytes_free(&c);
    ltr_writer_close(w);
    ltr_trace *t;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    assert_int_equal(ltr_trace_info_scan(t, info, &err), 0);
    return t;
}

/* The events the file refused round-trip and are said apart, with their
 * cause; a record of an older recorder (ending at metadata_lost, or before
 * shm_damage) reads 0; a count past events_lost reads as events_lost. */
static void test_unwritten_counter(void **state)
{
    (void)state;
    ltr_trace_info info;
    ltr_trace *t = with_counters("info-unwritten.ltr", 9, 12, &info);
    assert_int_equal(ltr_trace_collector_at(t, 0)->events_lost, 20);
    assert_int_equal(ltr_trace_collector_at(t, 0)->events_unwritten, 12);
    char why[200];
    assert_int_equal(ltr_trace_unwritten(t, why, sizeof why), 12);
    assert_non_null(strstr(why, "a write to it failed"));
    assert_null(strstr(why, "--max-file-size")); /* the generated session had none */
    char *json = written(t, &info, 1);
    assert_non_null(strstr(json, "\"metadata_lost\":0,\"events_unwritten\":12}"));
    free(json);
    char *text = written(t, &info, 0);
    assert_non_null(strstr(text, "of the events lost, 12 could not be written to the file\n"));
    free(text);
    ltr_trace_close(t);

    for (int n = 6; n <= 8; n += 2) { /* before shm_damage; after metadata_lost */
        t = with_counters("info-older.ltr", n, 12, &info);
        assert_int_equal(ltr_trace_collector_at(t, 0)->events_lost, 20);
        assert_int_equal(ltr_trace_collector_at(t, 0)->events_unwritten, 0);
        assert_int_equal(ltr_trace_unwritten(t, why, sizeof why), 0);
        text = written(t, &info, 0);
        assert_null(strstr(text, "could not be written"));
        free(text);
        ltr_trace_close(t);
    }

    t = with_counters("info-forged.ltr", 9, 1000, &info);
    assert_int_equal(ltr_trace_collector_at(t, 0)->events_unwritten, 20);
    ltr_trace_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_trace),
        cmocka_unit_test(test_cut_short_trace),
        cmocka_unit_test(test_unwritten_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
