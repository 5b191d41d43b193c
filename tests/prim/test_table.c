/*
 * tests/prim/test_table.c — prim/table.c, large arrays that grow without a
 * copy: what was written is kept across every growth (in the heap, across
 * the move to a mapping, and from mapping to mapping), growing a mapped
 * array touches no fresh page (no copy: page faults counted with huge
 * pages off for the process), an impossible size fails and leaves the
 * array as it was, both kinds free, and both give back what is past their
 * elements (ltr_table_shrink).
 */
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    return resident * 4;
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

/* A growth past LTR_TABLE_MAPPED bytes adds zero bytes past the old
 * capacity (prim.h), from the heap to a mapping and from mapping to
 * mapping, whatever the array held: the live index clears only its old
 * part when it grows (analyze/live.c). */
static void test_growth_adds_zeros(void **state)
{
    (void)state;
    uint8_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, 1000, 1, 1024), 0);
    for (int round = 0; round < 5; round++) { /* to 8, 64, 512 KiB, 4 MiB (a mapping), 32 MiB (mremap) */
        size_t old = cap;
        memset(v, 0xa5, old); /* every byte it has, written */
        assert_int_equal(ltr_table_reserve((void **)&v, &cap, old * 4, 1, 1024), 0);
        if (cap <= LTR_TABLE_MAPPED)
            continue;
        for (size_t i = old; i < cap; i++)
            if (v[i])
                fail_msg("byte %zu of %zu (grown from %zu) is %u", i, cap, old, v[i]);
        assert_int_equal(v[old - 1], 0xa5);
    }
    ltr_table_free(v, cap, 1);
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

/* A table done growing gives back what is past its elements, in either
 * kind, keeps its values, grows again and frees as its kind: a heap one is
 * reallocated, a mapping cut to the huge pages its elements need (RSS
 * falls) and stays a mapping however few are kept. */
static void test_shrink(void **state)
{
    (void)state;
    uint32_t *v = NULL;
    size_t cap = 0;
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, 1000, sizeof *v, 16), 0);
    v[1000] = 5;
    assert_int_equal(ltr_table_shrink((void **)&v, &cap, 1001, sizeof *v), 0);
    assert_int_equal(cap, 1001);
    assert_int_equal(v[1000], 5);
    assert_int_equal(ltr_table_reserve((void **)&v, &cap, 1001, sizeof *v, 16), 0);
    v[1001] = 6;
    assert_int_equal(v[1000], 5);
    ltr_table_free(v, cap, sizeof *v);

    uint8_t *m = NULL;
    size_t mcap = 0;
    const size_t big = 64u << 20, used = 3u << 20;
    assert_int_equal(ltr_table_reserve((void **)&m, &mcap, big - 1, 1, big), 0);
    for (size_t i = 0; i < big; i += 4096)
        m[i] = (uint8_t)(i >> 12);
    long before = rss_kb();
    assert_int_equal(ltr_table_shrink((void **)&m, &mcap, used, 1), 0);
    if (before - rss_kb() < 48 * 1024)
        fail_msg("RSS %ld KB, then %ld: the 61 MiB past the elements were not given back", before, rss_kb());
    assert_int_equal(mcap, used);
    for (size_t i = 0; i < used; i += 4096)
        assert_int_equal(m[i], (uint8_t)(i >> 12));
    /* a few elements: it stays a mapping, ltr_table_free unmaps it */
    size_t was = mcap;
    assert_int_equal(ltr_table_shrink((void **)&m, &mcap, 10, 1), 0);
    assert_int_equal(mcap, was);
    assert_int_equal(ltr_table_reserve((void **)&m, &mcap, mcap, 1, big), 0);
    assert_true(mcap > used);
    assert_int_equal(m[4096], 1);
    ltr_table_free(m, mcap, 1);
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
        cmocka_unit_test(test_growth_adds_zeros),
        cmocka_unit_test(test_impossible_size),
        cmocka_unit_test(test_shrink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
