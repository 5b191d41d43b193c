/*
 * tests/e2e/test_columns.c — column blocks (format 5) seen from outside: two
 * real recordings (tests/programs/target.c, modes tree and chain) merged
 * twice, once with the writer's columns turned off (LTR_COLUMNS=0) and once
 * as it writes by default, give the same `ltr dump` event list, the same
 * `ltr analyze` report in text and JSON, and the one with columns is the
 * smaller file. The merge rewrites every block through the writer, so the
 * two files differ only in how their blocks are stored. (The recordings
 * hold about 2 M events; a CI run beside other tests had 1 991 939, so the
 * size check asks for more than 1 M.) And the analyzer's fast path gives
 * the same report whether it decodes a column block's columns ahead (the
 * default: itself, or on the read-ahead thread, LTR_READAHEAD=1) or reads
 * them a record at a time (LTR_ANALYZE_AHEAD=0), on a recording whose
 * chunks were damaged, so that references into them fail and the generic
 * path takes records from the middle of blocks; also where sizes of 4 GiB
 * and more are among the values, and where whole windows of records are of
 * one table entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdio.h>

#define LTR tu_ltr()

static void test_columns_read_as_rows(void **state)
{
    const char *dir = *state, *target = tu_test_bin("heap-target");
    tu_result r = tu_run(
        "cd %s && export LTR_COLUMNS=0 && %s record -o a.ltr -- %s tree >/dev/null 2>&1 && "
        /* how many events came late may follow the blocks' bounds */
        "held='s/[0-9]+ came late\\)/N came late)/' && "
        "%s record -o b.ltr -- %s chain >/dev/null 2>&1 && %s merge a.ltr b.ltr -o rows.ltr && "
        "unset LTR_COLUMNS && %s merge a.ltr b.ltr -o cols.ltr && "
        "for f in rows cols; do %s dump $f.ltr | sed \"s/$f.ltr/X/g\" >$f.dump && "
        "%s analyze $f.ltr | sed -E \"s/$f.ltr/X/g; $held\" >$f.text && "
        "%s analyze --format json $f.ltr | sed -E \"s/$f.ltr/X/g; $held\" >$f.json || exit 1; done && "
        "cmp rows.dump cols.dump && cmp rows.text cols.text && cmp rows.json cols.json && "
        "test $(wc -l <rows.dump) -gt 1000000 && test $(stat -c %%s cols.ltr) -lt $(stat -c %%s rows.ltr)",
        dir, LTR, target, LTR, target, LTR, LTR, LTR, LTR, LTR);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    tu_free(&r);
}

static void test_columns_ahead_as_a_record_at_a_time(void **state)
{
    const char *dir = *state, *target = tu_test_bin("heap-target");
    tu_result r = tu_run(
        "cd %s && %s record -o t.ltr -- %s tree >/dev/null 2>&1 && size=$(stat -c %%s t.ltr) && "
        "for k in 3 5 7; do printf '\\125' | dd of=t.ltr bs=1 seek=$((size * k / 10)) conv=notrunc 2>/dev/null; done && "
        "{ LTR_READAHEAD=0 %s analyze --format json t.ltr >ahead.json 2>ahead.err; test $? = 3; } && "
        "{ LTR_READAHEAD=1 %s analyze --format json t.ltr >thread.json 2>thread.err; test $? = 3; } && "
        "{ LTR_ANALYZE_AHEAD=0 %s analyze --format json t.ltr >slow.json 2>slow.err; test $? = 3; } && "
        "cmp ahead.json slow.json && cmp ahead.err slow.err && cmp thread.json slow.json && cmp thread.err slow.err && "
        "grep -q damaged ahead.err",
        dir, LTR, target, LTR, LTR, LTR);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* A recording of heap-target's mode analyzed with its column blocks'
 * values decoded ahead and a record at a time (LTR_ANALYZE_AHEAD=0): the
 * same report, and check (a shell command on it, ahead.json) holds. */
static void ahead_as_a_record_at_a_time(void **state, const char *mode, const char *check)
{
    const char *dir = *state, *target = tu_test_bin("heap-target");
    tu_result r = tu_run("cd %s && %s record -o t.ltr -- %s %s >/dev/null 2>&1 && "
                         "%s analyze --format json --top 0 t.ltr >ahead.json && "
                         "LTR_ANALYZE_AHEAD=0 %s analyze --format json --top 0 t.ltr >slow.json && "
                         "cmp ahead.json slow.json && %s",
                         dir, LTR, target, mode, LTR, LTR, check);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* Sizes of 4 GiB and more stand for values of a column's big ones: a
 * window of records is read with a look for them only while the column
 * still has some to come (blocks.c, slot_run), and the reports, the
 * values decoded ahead and a record at a time, agree. */
static void test_columns_big_values(void **state)
{
    ahead_as_a_record_at_a_time(state, "bigsizes", "grep -q 4295062296 ahead.json");
}

/* A recording whose windows are all of one table entry (target.c, kept:
 * 20 000 allocations in a row, their sizes differing): the fast path
 * indexes their events by the window's own count (blocks.c, IOTA), and
 * its report is the one of the records read a record at a time. */
static void test_columns_one_entry_windows(void **state)
{
    ahead_as_a_record_at_a_time(state, "kept", "grep -Eq '\"allocations\":2[0-9]{4},' ahead.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_columns_read_as_rows, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_columns_ahead_as_a_record_at_a_time, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_columns_big_values, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_columns_one_entry_windows, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
