/*
 * tests/prim/test_table.c — prim/table.c, large arrays that grow without a
 * copy: what was written is kept across every growth (in the heap, across
 * the move to a mapping, and from mapping to mapping), growing a mapped
 * array touches no fresh page (no copy: page faults counted with huge
 * pages off for the process), an impossible size fails and leaves the
 * array as it was, and both kinds free.
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void test_values_kept_across_growth(void **state)
{
    (void)state;
    uint32_t *v = NULL;
    size_t cap = 0;
    const size_t n = 3u << 20; /* 12 MiB: past LTR_TABLE_MAPPED, several growths as a mapping */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ltr_table_reserve((void **)&v, &cap, i, sizeof *v, 16), 0);
        v[i] = (uint32_t)(i * 2654435761u);
    }
    assert_true(cap > n && cap * sizeof *v > LTR_TABLE_MAPPED);
    for (size_t i = 0; i < n; i++)
        if (v[i] != (uint32_t)(i * 2654435761u))
            fail_msg("value %zu lost: %u", i, v[i]);
    ltr_table_free(v, cap, sizeof *v);

    uint64_t *small = NULL; /* one that stays in the heap frees there */
    size_t scap = 0;
    assert_int_equal(ltr_table_reserve((void **)&small, &scap, 10, sizeof *small, 4), 0);
    assert_int_equal(scap, 16);
    small[10] = 7;
    ltr_table_free(small, scap, sizeof *small);
}

/* Growing a mapped array moves its pages: none is copied, so none is
 * touched fresh. A copy of the 8 MiB written would fault 2048 pages in. */
static void test_growth_does_not_copy(void **state)
{
    (void)state;
    assert_int_equal(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0); /* every fresh page a fault of its own */
    uint8_t *v = NULL;
    size_t cap = 0;
    const size_t full = 8u << 20;
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, full - 1, 1, full), 0);
    for (size_t i = 0; i < full; i += 4096)
        v[i] = (uint8_t)(i >> 12);
    long before = minor_faults();
    for (int k = 0; k < 3; k++) /* 16, 32, 64 MiB */
        assert_int_equal(ltr_table_reserve((void **)&v, &cap, cap, 1, full), 0);
    long faults = minor_faults() - before;
    assert_int_equal(cap, full * 8);
    if (faults > 64)
        fail_msg("growing took %ld page faults: the array was copied", faults);
    for (size_t i = 0; i < full; i += 4096)
        assert_int_equal(v[i], (uint8_t)(i >> 12));
    ltr_table_free(v, cap, 1);
    prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
}

static void test_impossible_size(void **state)
{
    (void)state;
    uint64_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, 100, sizeof *v, 64), 0);
    v[100] = 42;
    uint64_t *was = v;
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, SIZE_MAX / 4, sizeof *v, 64), -ENOMEM);
    assert_ptr_equal(v, was);
    assert_int_equal(cap, 128);
    assert_int_equal(v[100], 42);
    ltr_table_free(v, cap, sizeof *v);
}

int main(void)
{
    /* the analysis's heap (cli/analysis-args.c): arrays below 32 MiB in the
     * heap, where realloc would copy them (glibc's default of mappings from
     * 128 KiB on would move them by mremap itself) */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_kept_across_growth),
        cmocka_unit_test(test_growth_does_not_copy),
        cmocka_unit_test(test_impossible_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
