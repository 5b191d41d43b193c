/*
 * tests/base/test_bytes.c — base/records.c's growing byte buffer: a grow of
 * no bytes at the start of an empty buffer is a place in it, not NULL + 0
 * (clang's UBSan stopped fuzz_merge on its third seed there: a merge puts
 * an empty session name first), and what follows it lands at the start.
 */
#include "base/records.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

static void test_empty_grow_is_a_place(void **state)
{
    (void)state;
    ltr_bytes b = {0};
    uint8_t *p = ltr_bytes_grow(&b, 0);
    assert_non_null(p);
    assert_ptr_equal(p, b.data);
    assert_int_equal(b.len, 0);
    ltr_bytes_put_mem(&b, "", 0);
    ltr_bytes_put_str(&b, "ab");
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data + 2, "ab", 2);
    assert_int_equal(b.failed, 0);
    ltr_bytes_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_grow_is_a_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
