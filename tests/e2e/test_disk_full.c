/*
 * tests/e2e/test_disk_full.c — a disk full for a moment while new stacks
 * arrive (tests/programs/diskfull.c, with pwrite failing in the recorder by
 * tests/programs/enospc_shim.c): what could not be written is counted as
 * lost, and no event in the trace lacks its stack. The trace writer once
 * took metadata it deferred for written, lost it when the disk was full, and
 * every later event of those 60 stacks (55 671 of them) was read without
 * one, with no damage reported. And a memory-mode stop that fails on a
 * full disk: the session goes on, and the events refused while it was
 * tried are counted as lost. A trace that lacks what a full disk refused
 * still gets its frames' names, or is said to have none ('ltr symbolize'),
 * whether ltr record or ltr stop ended the session. And what the disk
 * refused is said so by the trace's readers, as ltr record said it: 'ltr
 * analyze' once said those events found no free buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"
#include <ltr/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many events a failed stop said its trace lacks ('... is complete but
 * lacks N events that could not be written to it: ...'). */
static unsigned long long lacking_said(const char *err)
{
    const char *lacks = strstr(err, "but lacks ");
    assert_non_null(lacks);
    return strtoull(lacks + strlen("but lacks "), NULL, 10);
}

/* The readers of dir/trace, which lacks the unwritten events a full disk
 * refused (as many as ltr record said, counted in its counters apart):
 * 'ltr analyze' (text and JSON), 'ltr info' and 'ltr dump' say them as
 * events that could not be written, with their cause, and no event as
 * lost for want of a buffer unless some were. */
static void assert_unwritten_said(const char *dir, const char *trace, unsigned long long unwritten)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, trace);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    ltr_trace_summary sum;
    assert_int_equal(ltr_trace_scan(t, &sum, &err), 0);
    unsigned long long lost = 0, counted = 0;
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        lost += ltr_trace_collector_at(t, i)->events_lost;
        counted += ltr_trace_collector_at(t, i)->events_unwritten;
    }
    ltr_trace_close(t);
    print_message("lost %llu, of them unwritten %llu; ltr record said %llu\n", lost, counted, unwritten);
    assert_true(unwritten > 0);
    assert_int_equal(counted, unwritten);
    char want[200];
    snprintf(want, sizeof want, "%llu event(s) were recorded but could not be written to the trace: a write to it "
             "failed", unwritten);
    tu_result r = tu_run("cd %s && %s analyze %s; %s analyze --format json %s; "
                         "%s info %s >/dev/null; %s dump %s >/dev/null",
                         dir, tu_ltr(), trace, tu_ltr(), trace, tu_ltr(), trace, tu_ltr(), trace);
    char all[2][200];
    snprintf(all[0], sizeof all[0], "\"events_unwritten\":%llu", unwritten);
    snprintf(all[1], sizeof all[1], "%llu event(s) could not be written to the trace: a write to it failed",
             unwritten);
    if (!strstr(r.out, want) || !strstr(r.out, all[0]) || !strstr(r.err, all[1]) ||
        !strstr(r.err, "events the recorder could not write to it: a write to it failed") ||
        (lost == unwritten && strstr(r.out, "lost while recording (no free buffer")))
        fail_msg("the unwritten events not said so:\n%s\n%s", r.out, r.err);
    tu_free(&r);
}

static void test_no_event_without_its_stack(void **state)
{
    const char *dir = *state;
    char lib[4200];
    snprintf(lib, sizeof lib, "%s/libltr-test-enospc.so", tu_test_bin(""));
    /* ASan (the sanitized build) wants its runtime first; the shim goes first
     * here. The disk fills once the trace holds the shallow allocations
     * (ltr flush of the session, record-PID), not when the program thinks
     * the recorder had time to write them. */
    tu_result r = tu_run("cd %s && { ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" "
                         "LTR_TEST_DISK_FULL=%s/full LD_PRELOAD=%s %s record -o x.ltr -- %s %s/full & } && rec=$! && "
                         "i=0; until [ -e full.shallow ] || [ $i -ge 6000 ]; do sleep 0.01; i=$((i+1)); done; "
                         "%s flush --instance record-$rec >/dev/null && touch full; wait $rec",
                         dir, dir, lib, tu_ltr(), tu_test_bin("heap-disk-full"), dir, tu_ltr());
    print_message("status %d: %s", r.status, r.err);
    assert_non_null(strstr(r.err, "No space left on device")); /* said, and the trace kept */
    /* the trace written whole, lacking what the full disk refused, gets its
     * frames' names as any other: none were added, and nothing said so */
    assert_non_null(strstr(r.err, "recorded addresses added to the trace"));
    unsigned long long said = lacking_said(r.err);
    tu_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/x.ltr", dir);
    assert_unwritten_said(dir, "x.ltr", said);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(path, &t, &err), 0);
    const ltr_event *ev;
    int rc;
    unsigned long shallow = 0, deep = 0, without = 0;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        uint64_t size, stack;
        if (!ev->layout || strcmp(ev->layout->name, "Alloc") || ltr_event_get_u64(ev, "size", &size) ||
            ltr_event_get_u64(ev, "stack", &stack) || (size != 1111 && size != 3333))
            continue;
        if (size == 1111)
            shallow++;
        else
            deep++;
        without += !ltr_trace_stack_find(t, ev->pid, (uint32_t)stack);
    }
    assert_int_equal(rc, 0);
    ltr_trace_summary sum;
    ltr_trace_summarize(t, &sum);
    const ltr_collector_counters *c = ltr_trace_has_counters(t) ? ltr_trace_collector_at(t, 0) : NULL;
    print_message("%lu shallow, %lu deep allocations, %lu without their stack; lost %llu, damage %llu\n",
                  shallow, deep, without, c ? (unsigned long long)c->events_lost : 0ull,
                  (unsigned long long)sum.damage);
    assert_true(shallow > 1000); /* before the disk filled */
    assert_true(deep > 1000);    /* after it was freed */
    assert_int_equal(without, 0);
    assert_int_equal(sum.damage, 0);
    assert_non_null(c);
    assert_true(c->events_lost > 0); /* the moment it was full, counted */
    ltr_trace_close(t);
}

/* 'ltr start ARGS' in dir, its recorder's disk full while dir/full exists
 * (the shim first: ASan's runtime is told not to mind). */
static void start_on_full_disk(const char *dir, const char *args)
{
    char lib[4200];
    snprintf(lib, sizeof lib, "%s/libltr-test-enospc.so", tu_test_bin(""));
    tu_expect_ok(tu_run("cd %s && ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" "
                        "LTR_TEST_DISK_FULL=%s/full LD_PRELOAD=%s %s start %s", dir, dir, lib, tu_ltr(), args));
}

/* The same disk full under a file-mode session that 'ltr stop' ends (its
 * path apart from ltr record's): the stop fails, says why and the trace it
 * wrote, and that trace, lacking what the disk refused, still gets its
 * frames' names (a stop once added none and said nothing). */
static void test_failed_file_stop_names_its_trace(void **state)
{
    const char *dir = *state;
    start_on_full_disk(dir, "heap --filemode --instance dfs -o s.ltr");
    tu_result r = tu_run("cd %s && { ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" "
                         "LD_PRELOAD=%s/../lib/libltr-heap.so %s %s/full & } && p=$! && "
                         "i=0; until [ -e full.shallow ] || [ $i -ge 6000 ]; do sleep 0.01; i=$((i+1)); done; "
                         "%s flush --instance dfs >/dev/null && touch full; wait $p; echo program=$?; "
                         "%s stop --instance dfs; echo stop=$?",
                         dir, getenv("LTR_TEST_BIN"), tu_test_bin("heap-disk-full"), dir, tu_ltr(), tu_ltr());
    print_message("%s%s", r.out, r.err);
    assert_int_equal(tu_field(r.out, "program"), 0);
    assert_int_not_equal(tu_field(r.out, "stop"), 0); /* the trace lacks what the disk refused: said */
    assert_non_null(strstr(r.err, "No space left on device"));
    assert_non_null(strstr(r.err, "recorded addresses added to the trace"));
    unsigned long long said = lacking_said(r.err);
    tu_free(&r);
    assert_unwritten_said(dir, "s.ltr", said);
    char path[4200];
    snprintf(path, sizeof path, "%s/s.ltr", dir);
    tu_trace t = tu_read_trace(path, "Heap");
    assert_true(t.ok);
    assert_true(t.events_lost > 0);
}

/* A memory-mode stop refuses events from its start, and goes on with the
 * session when its save fails (the disk full): the events its programs
 * emitted while it was tried were in no trace and counted nowhere (a
 * program writing through such a stop: 'the trace has 9086, 0 lost, 69314
 * overwritten' of 78400 written and 1600 refused). */
static void test_failed_stop_counts_its_refusals(void **state)
{
    const char *dir = *state;
    start_on_full_disk(dir, "--instance sf --provider Test.Producer --buffer-size 4 --buffers 64");
    tu_result r = tu_run("%s --threads 2 --events 40000 --pace-us 2000 --wait-enabled 5 >%s/p.out & P=$!; "
                         "sleep 0.5; touch %s/full; %s stop --instance sf --no-symbols %s/s.ltr 2>/dev/null; "
                         "echo failed=$?; rm %s/full; wait $P; cat %s/p.out",
                         tu_test_bin("ltr-test-producer"), dir, dir, tu_ltr(), dir, dir, dir);
    assert_int_equal(r.status, 0);
    long long failed = tu_field(r.out, "failed"), written = tu_field(r.out, "written");
    long long lost = tu_field(r.out, "lost"), skipped = tu_field(r.out, "skipped");
    if (failed == 0 || skipped <= 0) /* the stop wrote, or the program ended before it */
        fail_msg("no failed stop while the program wrote: %s", r.out);
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop --instance sf --no-symbols %s/s.ltr", tu_ltr(), dir));
    char path[4200];
    snprintf(path, sizeof path, "%s/s.ltr", dir);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    if (t.provider_events + t.events_lost + t.events_overwritten != (uint64_t)(written + lost + skipped))
        fail_msg("the program wrote %lld events, %lld lost, %lld refused by the failed stop; the trace has %llu, "
                 "%llu lost, %llu overwritten", written, lost, skipped, (unsigned long long)t.provider_events,
                 (unsigned long long)t.events_lost, (unsigned long long)t.events_overwritten);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_event_without_its_stack, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_failed_file_stop_names_its_trace, tu_setup_sandbox,
                                        tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_failed_stop_counts_its_refusals, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
