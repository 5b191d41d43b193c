/*
 * tests/prim/test_text.c — prim/text.c's ltr_shown_text, byte by byte: a
 * printable ASCII byte is shown as it is (its fast path), every other
 * single byte is a '?' (controls, DEL, a lone UTF-8 lead or continuation
 * byte) but a newline or tab where lines are kept; a well-formed UTF-8
 * character amid ASCII is kept whole, a bidirectional override, a C1
 * control, an overlong form and a surrogate are not; the text may be
 * rewritten in place.
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void test_each_byte(void **state)
{
    (void)state;
    for (int keep = 0; keep < 2; keep++)
        for (int c = 0; c < 256; c++) {
            char in[3] = {'a', (char)c, 'z'}, out[3];
            assert_int_equal(ltr_shown_text(in, 3, out, keep), 3);
            char want = (c >= 0x20 && c < 0x7f) || (keep && (c == '\n' || c == '\t')) ? (char)c : '?';
            assert_int_equal(out[0], 'a');
            assert_int_equal(out[1], want);
            assert_int_equal(out[2], 'z');
        }
}

static void check(const char *in, const char *want)
{
    char out[64];
    size_t n = ltr_shown_text(in, strlen(in), out, false);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
    char again[64]; /* in place */
    strcpy(again, in);
    assert_int_equal(ltr_shown_text(again, strlen(again), again, false), n);
    assert_memory_equal(again, want, n);
}

static void test_utf8(void **state)
{
    (void)state;
    check("f\xc3\xa9te()", "f\xc3\xa9te()");                 /* é kept */
    check("x\xe2\x82\xac y", "x\xe2\x82\xac y");             /* € kept */
    check("a\xf0\x9f\x98\x80" "b", "a\xf0\x9f\x98\x80" "b"); /* a 4-byte character kept */
    check("a\xe2\x80\xae" "b", "a?b");                       /* right-to-left override */
    check("a\xc2\x85" "b", "a?b");                           /* C1 control (NEL) */
    check("a\xc0\xaf" "b", "a??b");                          /* overlong '/' */
    check("a\xed\xa0\x80" "b", "a???b");                     /* a surrogate */
    check("a\xe2\x82", "a??");                               /* cut short */
    check("\x1b[2Jls", "?[2Jls");                            /* an escape sequence */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_byte),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
