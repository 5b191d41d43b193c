/*
 * tests/e2e/test_fileio.c — FileIO end to end (docs/system-provider.md):
 * the heap agent records the opens, closes and bytes of a program when the
 * session enables Ltr.System keyword 0x20, and `ltr analyze --files` reports
 * tests/programs/fileio.c's file, opened N times with M bytes written at
 * each (write, pwrite, writev) and read back once, exactly, and its failed
 * open; nothing without the keyword; the program's own results unchanged
 * (errno of the failed open, bytes read).
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTR tu_ltr()
#define FILEIO tu_test_bin("ltr-test-fileio")

static long long jfield(const char *p, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *f = strstr(p, pat);
    return f ? atoll(f + strlen(pat)) : -1;
}

static void record(const char *dir, const char *opts, const char *name, char *trace, size_t size)
{
    snprintf(trace, size, "%s/%s.ltr", dir, name);
    tu_expect_ok(tu_run("%s start heap %s --filemode --instance %s -o %s", LTR, opts, name, trace));
    tu_result r = tu_run("%s run --instance %s -- %s %s/data.bin 7 12345", LTR, name, FILEIO, dir);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "opened 8 wrote 86415 read 86415 errno 2\n");
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop %s --instance %s", LTR, trace, name));
}

static void test_files_exact(void **state)
{
    const char *dir = *state;
    char trace[4200], want[4300];
    record(dir, "--provider Ltr.System:0x20", "f1", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --files --format json", LTR, trace);
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof want, "{\"path\":\"%s/data.bin\",", dir);
    const char *f = strstr(r.out, want);
    assert_non_null(f);
    assert_int_equal(jfield(f, "opens"), 8);
    assert_int_equal(jfield(f, "failed_opens"), 0);
    assert_int_equal(jfield(f, "bytes_written"), 7 * 12345);
    assert_int_equal(jfield(f, "bytes_read"), 7 * 12345);
    snprintf(want, sizeof want, "{\"path\":\"%s/data.bin.missing\",", dir);
    f = strstr(r.out, want);
    assert_non_null(f);
    assert_int_equal(jfield(f, "opens"), 1);
    assert_int_equal(jfield(f, "failed_opens"), 1);
    tu_free(&r);
    r = tu_run("%s analyze %s --files", LTR, trace);
    assert_int_equal(r.status, 0);
    snprintf(want, sizeof want, "  84.4 KiB   84.4 KiB       8       0  %s/data.bin\n", dir); /* 86 415 bytes */
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
    /* the raw events: the failed open carries ENOENT */
    r = tu_run("%s dump %s", LTR, trace);
    assert_non_null(strstr(r.out, "data.bin.missing\" flags=0 mode=0 fd=-1 error=2"));
    tu_free(&r);
}

static void test_files_not_enabled(void **state)
{
    char trace[4200];
    record(*state, "--provider Ltr.System:0x10", "f2", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --files --format json", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"files\":[]"));
    tu_free(&r);
    r = tu_run("%s analyze %s --files --mapped", LTR, trace);
    assert_int_equal(r.status, 2);
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_files_exact, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_files_not_enabled, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
