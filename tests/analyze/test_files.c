/*
 * tests/analyze/test_files.c — the file model (src/analyze/files.h) on
 * hand-made sequences: opens and failed opens per path, bytes counted at the
 * close against the path of the descriptor's last open, a descriptor reused
 * for another file, bytes at exit and past the agent's table (the
 * descriptor stays), descriptors never opened, the window; and the ranking.
 */
#include "analyze/files.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

static const an_file_stat *find(const an_file_stat *v, size_t n, uint32_t pid, uint32_t path)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].key == ((uint64_t)pid << 32 | path))
            return &v[i];
    return NULL;
}

static void test_pairs(void **state)
{
    (void)state;
    an_files f;
    an_files_init(&f);
    f.from = 0;
    f.to = UINT64_MAX;
    an_files_open(&f, 1, 10, 3, 7, 0);
    an_files_close(&f, 1, 20, 3, 100, 5, 1);
    an_files_open(&f, 1, 30, 3, 8, 0);           /* fd 3 again, another file */
    an_files_close(&f, 1, 40, 3, 0, 4000, 0);    /* at exit: still open */
    an_files_close(&f, 1, 41, 3, 0, 1000, 0);    /* one call past the table */
    an_files_open(&f, 1, 50, -1, 9, 2);          /* failed */
    an_files_close(&f, 1, 60, 0, 77, 0, 1);      /* stdin: never opened */
    an_files_close(&f, 1, 61, 4, 0, 0, 1);       /* nothing moved: nothing to show */
    an_files_open(&f, 2, 10, 3, 7, 0);           /* another process, same path */
    an_files_close(&f, 2, 20, 3, 1, 0, 1);
    size_t n;
    an_file_stat *v = an_files_ranked(&f, &n);
    assert_int_equal(n, 5);
    const an_file_stat *s = find(v, n, 1, 7);
    assert_int_equal(s->opens, 1);
    assert_int_equal(s->rbytes, 100);
    assert_int_equal(s->wbytes, 5);
    s = find(v, n, 1, 8);
    assert_int_equal(s->wbytes, 5000);
    s = find(v, n, 1, 9);
    assert_int_equal(s->opens, 1);
    assert_int_equal(s->failed, 1);
    assert_int_equal(find(v, n, 1, 0)->rbytes, 77);
    assert_int_equal(find(v, n, 2, 7)->rbytes, 1);
    /* process 1 first, most bytes first */
    assert_int_equal(v[0].key, (uint64_t)1 << 32 | 8);
    assert_int_equal(v[1].key, (uint64_t)1 << 32 | 7);
    free(v);
    an_files_free(&f);
}

static void test_window(void **state)
{
    (void)state;
    an_files f;
    an_files_init(&f);
    f.from = 100;
    f.to = 200;
    an_files_open(&f, 1, 50, 3, 7, 0);          /* before: names fd 3, not counted */
    an_files_close(&f, 1, 150, 3, 10, 0, 1);    /* inside: counted for path 7 */
    an_files_open(&f, 1, 250, 3, 8, 0);         /* after the window */
    an_files_close(&f, 1, 260, 3, 99, 0, 1);
    size_t n;
    an_file_stat *v = an_files_ranked(&f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].key, (uint64_t)1 << 32 | 7);
    assert_int_equal(v[0].opens, 0);
    assert_int_equal(v[0].rbytes, 10);
    free(v);
    an_files_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pairs), cmocka_unit_test(test_window)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
