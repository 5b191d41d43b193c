/*
 * tests/util/shard.c — LTR_TEST_SHARD=I/N runs every Nth case of a test
 * program, from its Ith (I from 1): the longest programs are registered as
 * N ctest tests that run at once (ltr_add_unit_test's SHARDS,
 * tests/CMakeLists.txt), so that under ASan a program of minutes no longer
 * ends the run alone (docs/benchmarks.md, "The test suite's time (session
 * 37)"). Every Nth by position, not by name: a case added to the program
 * lands in a shard with nothing to keep up to date. cmocka's own filter
 * takes one pattern of '*' and '?', and one that matches nothing runs
 * nothing and passes.
 *
 * In the link through -Wl,--wrap=_cmocka_run_group_tests (what
 * cmocka_run_group_tests expands to), in the test programs only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

int __real__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t num_tests,
                                   CMFixtureFunction group_setup, CMFixtureFunction group_teardown);
int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t num_tests,
                                   CMFixtureFunction group_setup, CMFixtureFunction group_teardown);

int __wrap__cmocka_run_group_tests(const char *group_name, const struct CMUnitTest *const tests, const size_t num_tests,
                                   CMFixtureFunction group_setup, CMFixtureFunction group_teardown)
{
    const char *shard = getenv("LTR_TEST_SHARD");
    if (!shard || !*shard)
        return __real__cmocka_run_group_tests(group_name, tests, num_tests, group_setup, group_teardown);
    unsigned i = 0, n = 0;
    char end;
    if (sscanf(shard, "%u/%u%c", &i, &n, &end) != 2 || n == 0 || i == 0 || i > n || i > num_tests) {
        fprintf(stderr, "LTR_TEST_SHARD=%s: not I/N with 1 <= I <= N, or I past the %zu cases\n", shard, num_tests);
        return 1; /* a shard that ran nothing must not pass */
    }
    struct CMUnitTest *mine = calloc(num_tests, sizeof *mine);
    if (!mine)
        return 1;
    size_t k = 0;
    for (size_t t = i - 1; t < num_tests; t += n)
        mine[k++] = tests[t];
    fprintf(stderr, "LTR_TEST_SHARD=%s: %zu of the %zu cases run\n", shard, k, num_tests);
    int failed = __real__cmocka_run_group_tests(group_name, mine, k, group_setup, group_teardown);
    free(mine);
    return failed;
}
