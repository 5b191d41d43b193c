/*
 * tests/e2e/test_findings_cli.c — findings of the fuzz targets whose fix is
 * what the ltr command says about the regression input (tests/fuzz/
 * regressions; the in-process ones are tests/fuzz/test_findings.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/testutil.h"

static const char *regression(const char *name)
{
    static char path[4096];
    const char *src = getenv("LTR_SOURCE_DIR");
    assert_non_null(src);
    snprintf(path, sizeof path, "%s/tests/fuzz/regressions/%s", src, name);
    return path;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* libxml2 printed "encoding error : input conversion failed ..." and "I/O
 * error : encoder error" on stderr beside ltr's own diagnostic, which blamed
 * a premature end of data. */
static void encoding_error_is_one_diagnostic(void **state)
{
    const char *f = regression("wprp/encoding-error-on-stderr.wprp");
    tu_result r = tu_run("'%s' profiles '%s'", tu_ltr(), f);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.out, "");
    assert_null(strstr(r.err, "encoding error :"));
    assert_null(strstr(r.err, "I/O error"));
    assert_int_equal(lines(r.err), 1);
    assert_non_null(strstr(r.err, "encoding-error-on-stderr.wprp:2: error: not a well-formed XML file: "
                                  "its bytes are not in the encoding it declares (input conversion failed"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(encoding_error_is_one_diagnostic, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
