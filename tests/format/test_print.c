/*
 * tests/format/test_print.c — the event formatting helpers: exact text and
 * JSON lines for every field type, JSON string escaping of control characters
 * (C1 and the bidirectional controls too) and invalid UTF-8, and signed seconds.
 */
#include "gen.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct memout {
    char *buf;
    size_t len;
    FILE *f;
} memout;

static void mo_open(memout *m)
{
    m->f = open_memstream(&m->buf, &m->len);
    assert_non_null(m->f);
}

static void mo_expect(memout *m, const char *want)
{
    fclose(m->f);
    assert_string_equal(m->buf, want);
    free(m->buf);
}

static void test_json_string_escaping(void **state)
{
    memout m;
    mo_open(&m);
    static const char in[] = "a\"b\\c\n\t\x01\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
                             "\xff \xc3 \xed\xa0\x80 \xc0\xaf";
    ltr_print_json_string(m.f, in, sizeof in - 1);
    mo_expect(&m, "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
                  "\\ufffd \\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\"");
    mo_open(&m);
    ltr_print_json_string(m.f, "a\0b", 3); /* embedded NUL */
    mo_expect(&m, "\"a\\u0000b\"");
    /* valid UTF-8 that a terminal acts on (C1: CSI) or that reorders the line
     * (bidirectional controls): escaped too, the characters beside kept */
    mo_open(&m);
    static const char c1[] = "\xc2\x9b""2J \xc2\xa0 \xe2\x80\xae""x\xe2\x81\xa6 \xe2\x80\xa9";
    ltr_print_json_string(m.f, c1, sizeof c1 - 1);
    mo_expect(&m, "\"\\u009b2J \xc2\xa0 \\u202ex\\u2066 \xe2\x80\xa9\"");
}

static void test_seconds(void **state)
{
    memout m;
    mo_open(&m);
    ltr_print_seconds(m.f, 5000000123ull, 1000000000ull);
    fputc(' ', m.f);
    ltr_print_seconds(m.f, 900, 1000);
    fputc(' ', m.f);
    ltr_print_seconds(m.f, 7, 7);
    mo_expect(&m, "4.000000123 -0.000000100 0.000000000");
}

static void test_event_lines(void **state)
{
    const char *path = gen_tmp("print.ltr");
    gen_opts o = {.blocks = 1, .events_per_block = 3, .with_end = 1};
    assert_int_equal(gen_write(path, &o, NULL), 0);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    static const char *const text[] = {
        "0.000000001 100/100 Test.Alpha/Alloc n=0 addr=0x7f0000000000 size=0 tag=\"t\\\"0\\t\xc3\xa9\" "
        "delta=0 ok=false",
        "0.000001001 100/100 Test.Alpha/Mixed n=1 a=1 b=7 c=-5 d=-300 e=-1000000007 f=1.5 data=dead01 "
        "name=\"t\\\"1\\t\xc3\xa9\"",
        "0.000002001 100/100 Test.Beta/Tick n=2 u=600 i=-102 p=0x7f0000001002",
    };
    static const char *const json[] = {
        "{\"t\":0.000000001,\"ts\":1000000000001,\"pid\":100,\"tid\":100,\"collector\":0,"
        "\"provider\":\"Test.Alpha\",\"event\":\"Alloc\",\"id\":101,\"level\":4,\"fields\":{\"n\":0,"
        "\"addr\":\"0x7f0000000000\",\"size\":0,\"tag\":\"t\\\"0\\t\xc3\xa9\",\"delta\":0,\"ok\":false}}",
        "{\"t\":0.000001001,\"ts\":1000000001001,\"pid\":100,\"tid\":100,\"collector\":0,"
        "\"provider\":\"Test.Alpha\",\"event\":\"Mixed\",\"id\":102,\"level\":4,\"fields\":{\"n\":1,"
        "\"a\":1,\"b\":7,\"c\":-5,\"d\":-300,\"e\":-1000000007,\"f\":1.5,\"data\":\"dead01\","
        "\"name\":\"t\\\"1\\t\xc3\xa9\"}}",
        "{\"t\":0.000002001,\"ts\":1000000002001,\"pid\":100,\"tid\":100,\"collector\":0,"
        "\"provider\":\"Test.Beta\",\"event\":\"Tick\",\"id\":103,\"level\":4,\"fields\":{\"n\":2,\"u\":600,\"i\":-102,\"p\":\"0x7f0000001002\"}}",
    };
    const ltr_event *ev;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ltr_trace_next(t, &ev, &err), 1);
        memout m;
        mo_open(&m);
        assert_int_equal(ltr_event_print_text(m.f, ev, ltr_trace_origin_ns(t)), 0);
        mo_expect(&m, text[i]);
        mo_open(&m);
        assert_int_equal(ltr_event_print_json(m.f, ev, ltr_trace_origin_ns(t)), 0);
        mo_expect(&m, json[i]);
    }
    ltr_trace_close(t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_string_escaping),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_event_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
