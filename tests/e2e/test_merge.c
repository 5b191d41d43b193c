/*
 * tests/e2e/test_merge.c — `ltr merge` as a user runs it: two `ltr record`
 * sessions at the same time of tests/programs/target.c (modes tree and
 * chain), merged: `ltr analyze --format json` of the merge says what the two
 * said together (events, allocations, frees, outstanding bytes, processes),
 * and the merge names chain's stack functions; a damaged trace merged says
 * the events a reader reads in the merge, and those copied it cannot; then
 * the refusals: one trace, no -o, a trace given twice, an existing output
 * (kept), a file that is not a trace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LTR tu_ltr()

/* A number of the "summary" object of analyze's JSON. */
static long long summary(const char *json, const char *key)
{
    const char *s = strstr(json, "\"summary\"");
    assert_non_null(s);
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(s, pat);
    if (!p)
        fail_msg("no %s in the summary", key);
    return atoll(p + strlen(pat));
}

static void test_merge_analyzes_as_both(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && { %s record -o a.ltr -- %s tree >a.out 2>&1 & a=$!; %s record -o b.ltr -- %s chain "
                         ">b.out 2>&1 && wait $a; } && %s merge a.ltr b.ltr -o m.ltr",
                         dir, LTR, tu_test_bin("heap-target"), LTR, tu_test_bin("heap-target"), LTR);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    assert_non_null(strstr(r.out, "2 traces merged"));
    /* every event of tree's 16 threads, in the trace or counted lost (two
     * sessions at once once silenced the second: tests/event/test_registry.c) */
    char path[4200];
    snprintf(path, sizeof path, "%s/a.ltr", dir);
    tu_trace tree = tu_read_trace(path, "Ltr.Heap");
    assert_true(tree.ok);
    if (tree.provider_events + tree.events_lost < 2u * 16 * 65536)
        fail_msg("tree's trace: %llu events, %llu lost", (unsigned long long)tree.provider_events,
                 (unsigned long long)tree.events_lost);
    tu_free(&r);
    static const char *const keys[] = {"events", "heap_events", "allocations", "frees", "outstanding_bytes",
                                       "outstanding_allocations", "allocated_bytes", "processes"};
    long long want[8] = {0};
    static const char *const parts[] = {"a.ltr", "b.ltr"};
    for (int i = 0; i < 2; i++) {
        tu_result a = tu_run("cd %s && %s analyze %s --format json", dir, LTR, parts[i]);
        assert_int_equal(a.status, 0);
        for (int k = 0; k < 8; k++)
            want[k] += summary(a.out, keys[k]);
        tu_free(&a);
    }
    tu_result m = tu_run("cd %s && %s analyze m.ltr --format json", dir, LTR);
    assert_int_equal(m.status, 0);
    for (int k = 0; k < 8; k++)
        if (summary(m.out, keys[k]) != want[k])
            fail_msg("%s: the merge says %lld, the traces %lld", keys[k], summary(m.out, keys[k]), want[k]);
    assert_true(want[2] > 1000); /* tree allocates a great deal */
    assert_non_null(strstr(m.out, "chain_outer")); /* chain's stacks, symbolized in the merge */
    tu_free(&m);
}

/* The merged header names every source's providers and buffers, not the
 * first's alone: `ltr info` of a heap trace merged with a system one said
 * "providers: Ltr.Heap..." only. */
static void test_header_of_all(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("cd %s && %s record -o h.ltr -- ls >/dev/null", dir, LTR));
    tu_expect_ok(tu_run("%s start memory --filemode --instance sys --buffers 16 -o %s/s.ltr", LTR, dir));
    tu_expect_ok(tu_run("sleep 0.3; %s stop %s/s.ltr --instance sys", LTR, dir));
    tu_expect_ok(tu_run("cd %s && %s merge h.ltr s.ltr -o hs.ltr", dir, LTR));
    tu_result r = tu_run("cd %s && %s info hs.ltr", dir, LTR);
    assert_int_equal(r.status, 0);
    const char *prov = strstr(r.out, "\nproviders:   ");
    assert_non_null(prov);
    size_t line = strcspn(prov + 1, "\n");
    if (!memmem(prov, line, "Ltr.Heap", 8) || !memmem(prov, line, "Ltr.System", 10))
        fail_msg("the merged header does not name both sources' providers:\n%s", r.out);
    if (!strstr(r.out, "\nbuffers:     2048+16 x "))
        fail_msg("the merged header does not give both sources' buffers:\n%s", r.out);
    tu_free(&r);
}

/* A copy of tree's trace with a byte of its first EVENTS chunk flipped
 * (docs/trace-format.md, "Chunks"), merged with chain's: the frees after
 * that chunk of blocks allocated in it refer to allocations the merge does
 * not hold, copied all the same, and the merge counted them among its
 * events (a perl trace so damaged: "398581 events", 'ltr info' of the merge
 * 398 214 and 367 problems). What it says merged is what a reader reads
 * there, and what it copied that none can read is said apart. */
static void test_damaged_source_said(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("cd %s && %s record -o a.ltr -- %s tree && %s record -o b.ltr -- %s chain", dir, LTR,
                        tu_test_bin("heap-target"), LTR, tu_test_bin("heap-target")));
    tu_expect_ok(tu_run("cd %s && python3 -c \"import struct\n"
                        "d = bytearray(open('a.ltr', 'rb').read()); off = 16\n"
                        "while struct.unpack('<H', d[off + 4:off + 6])[0] != 3:\n"
                        "    off += 32 + struct.unpack('<I', d[off + 8:off + 12])[0]\n"
                        "d[off + 32 + struct.unpack('<I', d[off + 8:off + 12])[0] // 2] ^= 0xff\n"
                        "open('damaged.ltr', 'wb').write(d)\"",
                        dir));
    tu_result r = tu_run("cd %s && %s merge damaged.ltr b.ltr -o m.ltr", dir, LTR);
    if (r.status != 0)
        fail_msg("status %d: %s%s", r.status, r.out, r.err);
    char path[4200];
    snprintf(path, sizeof path, "%s/m.ltr", dir);
    tu_trace m = tu_read_trace(path, "Ltr.Heap");
    assert_true(m.ok);
    assert_true(m.damage > 0); /* the frees of the damaged chunk's blocks: the case */
    const char *said = strstr(r.out, "traces merged, ");
    if (!said || strtoull(said + strlen("traces merged, "), NULL, 10) != m.events)
        fail_msg("the merge holds %llu readable events and said: %s", (unsigned long long)m.events, r.out);
    const char *warn = strstr(r.err, "more events were copied that cannot be read");
    if (!warn)
        fail_msg("no word of the events copied that cannot be read: %s", r.err);
    while (warn > r.err && warn[-1] != '\n')
        warn--;
    unsigned long long unread = 0;
    if (sscanf(warn, "ltr merge: warning: %llu more events", &unread) != 1 || unread != m.damage)
        fail_msg("the merge holds %llu events a reader cannot read (damage) and said: %s",
                 (unsigned long long)m.damage, r.err);
    tu_free(&r);
}

static void test_refusals(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && %s record -o a.ltr -- %s chain && %s record -o b.ltr -- %s chain && "
                         "%s merge a.ltr -o m.ltr", dir, LTR, tu_test_bin("heap-target"), LTR,
                         tu_test_bin("heap-target"), LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "two traces or more"));
    tu_free(&r);
    r = tu_run("cd %s && %s merge a.ltr a.ltr", dir, LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "-o OUT.ltr"));
    tu_free(&r);
    /* WPR's order, the output last: the command to type (it said only "-o OUT.ltr") */
    r = tu_run("cd %s && %s merge a.ltr b.ltr out.ltr", dir, LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "'ltr merge a.ltr b.ltr -o out.ltr' ('out.ltr' is no trace to merge; "
                                  "WPR's -merge names the output last)"));
    tu_free(&r);
    r = tu_run("cd %s && %s merge a.ltr a.ltr -o m.ltr", dir, LTR);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "twice"));
    tu_free(&r);
    r = tu_run("cd %s && echo keep >m.ltr && %s merge a.ltr b.ltr -o m.ltr; echo status=$?; cat m.ltr", dir, LTR);
    assert_int_equal(tu_field(r.out, "status"), 1);
    assert_non_null(strstr(r.err, "--force"));
    assert_non_null(strstr(r.out, "keep"));
    tu_free(&r);
    r = tu_run("cd %s && echo hello >x.ltr && %s merge a.ltr x.ltr -o n.ltr; echo status=$?; ls", dir, LTR);
    assert_int_equal(tu_field(r.out, "status"), 1);
    assert_non_null(strstr(r.err, "x.ltr"));
    assert_null(strstr(r.out, "n.ltr")); /* nothing left behind */
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_merge_analyzes_as_both, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_header_of_all, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_damaged_source_said, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_refusals, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
