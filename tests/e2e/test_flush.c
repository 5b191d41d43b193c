/*
 * tests/e2e/test_flush.c — `ltr flush` as a user runs it: a file-mode heap
 * session of tests/programs/flush_target.c, flushed at a point the test
 * chooses, leaves a .part trace that reads (analyze, info, dump) with exactly
 * the blocks allocated before the flush; the session goes on and its final
 * trace has all of them. A chunk of it damaged, the analysis says where
 * allocations are missing. And the refusals: no session, a memory-mode
 * session, a bad session name, an argument too many.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char *dir;

static int fresh(void **state)
{
    int rc = tu_setup_sandbox(state);
    dir = *state;
    return rc;
}

static int done(void **state)
{
    tu_result r = tu_run("touch %s/exit", dir); /* a target a failed test left waiting */
    tu_free(&r);
    return tu_teardown_sandbox(state);
}

static int has(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void wait_for(const char *name)
{
    for (double end = tu_now_s() + 30; !has(name);) {
        if (tu_now_s() > end)
            fail_msg("%s/%s did not appear within 30 s", dir, name);
        usleep(10000);
    }
}

static void expect(tu_result r, int status, const char *in_err)
{
    if (r.status != status || (in_err && !strstr(r.err, in_err)))
        fail_msg("status %d (expected %d), stderr lacks '%s':\n%s%s", r.status, status, in_err ? in_err : "",
                 r.out, r.err);
    tu_free(&r);
}

/* `ltr flush`, and the trace it names. */
static void flush(char *part, size_t size)
{
    tu_result r = tu_run("%s flush", tu_ltr());
    if (r.status != 0)
        fail_msg("ltr flush failed (%d): %s", r.status, r.err);
    const char *p = strstr(r.out, "': "), *e = p ? strstr(p, " holds everything") : NULL;
    assert_non_null(e);
    snprintf(part, size, "%.*s", (int)(e - p - 3), p + 3);
    tu_free(&r);
}

/* The analysis of a trace as JSON, with its exit status checked. */
static char *analysis(const char *trace)
{
    tu_result r = tu_run("%s analyze %s --format json --top 0", tu_ltr(), trace);
    if (r.status != 0)
        fail_msg("ltr analyze %s failed (%d): %s", trace, r.status, r.err);
    free(r.err);
    return r.out;
}

static void test_flushed_part_holds_what_came_before(void **state)
{
    tu_expect_ok(tu_run("%s start heap --filemode --buffers 64", tu_ltr()));
    tu_expect_ok(tu_run("%s run -- %s %s > %s/run.out 2>&1 &", tu_ltr(), tu_test_bin("flush-target"), dir, dir));
    wait_for("ready");
    char part[4096];
    flush(part, sizeof part);
    assert_non_null(strstr(part, ".ltr.part"));
    /* everything before the flush, at once: not a second later, when the
     * recorder would have flushed by itself */
    char *a = analysis(part);
    if (!strstr(a, "\"outstanding_allocations\":37,") || !strstr(a, "flush_before") || strstr(a, "flush_after"))
        fail_msg("the flushed trace does not hold exactly the 37 blocks of flush_before:\n%s", a);
    assert_non_null(strstr(a, "\"complete\":false")); /* still being written */
    free(a);
    tu_expect_ok(tu_run("%s info %s", tu_ltr(), part));
    tu_result d = tu_run("%s dump %s | grep -c 'size=1111'", tu_ltr(), part);
    assert_int_equal(atoi(d.out), 37);
    tu_free(&d);

    /* the session went on: the rest comes, and a second flush has it too */
    tu_result r = tu_run("touch %s/go", dir);
    tu_free(&r);
    wait_for("done");
    char again[4096];
    flush(again, sizeof again);
    assert_string_equal(again, part);
    a = analysis(part);
    assert_non_null(strstr(a, "\"outstanding_allocations\":56,"));
    free(a);
    r = tu_run("touch %s/exit", dir);
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop %s/final.ltr", tu_ltr(), dir));
    char final[700];
    snprintf(final, sizeof final, "%s/final.ltr", dir);
    a = analysis(final);
    if (!strstr(a, "\"outstanding_allocations\":56,") || !strstr(a, "flush_before") || !strstr(a, "flush_after") ||
        !strstr(a, "\"complete\":true"))
        fail_msg("the final trace lacks what came after the flush:\n%s", a);
    free(a);
}

/* A trace whose EVENTS chunk before a flush is damaged: the frees after it
 * of blocks allocated in it are frees of allocations the analysis never
 * saw, and the warning said only "allocated before the trace began, before
 * the heap agent started ..." (perl's 300 strings freed after the flush:
 * 1 such free, and 405 damage problems said just above it). Now it names
 * the damaged stretches too. */
static void test_damage_said_where_allocations_are_missing(void **state)
{
    tu_expect_ok(tu_run("%s start heap --filemode --buffers 64", tu_ltr()));
    tu_expect_ok(tu_run("%s run -- perl -e 'my $d = shift; my @a = map { \"a\" x 100 } 1..300; "
                        "open(my $f, \">\", \"$d/ready\"); close $f; select(undef, undef, undef, 0.01) until -e "
                        "\"$d/go\"; @a = (); open($f, \">\", \"$d/done\"); close $f' %s > %s/run.out 2>&1 &",
                        tu_ltr(), dir, dir));
    wait_for("ready");
    char part[4096];
    flush(part, sizeof part);
    tu_result r = tu_run("touch %s/go", dir);
    tu_free(&r);
    wait_for("done");
    tu_expect_ok(tu_run("%s stop %s/whole.ltr", tu_ltr(), dir));
    /* a byte of the first EVENTS chunk's payload (docs/trace-format.md, "Chunks") flipped */
    tu_expect_ok(tu_run("python3 -c \"import struct\n"
                        "d = bytearray(open('%s/whole.ltr', 'rb').read()); off = 16\n"
                        "while struct.unpack('<H', d[off + 4:off + 6])[0] != 3:\n"
                        "    off += 32 + struct.unpack('<I', d[off + 8:off + 12])[0]\n"
                        "d[off + 32 + struct.unpack('<I', d[off + 8:off + 12])[0] // 2] ^= 0xff\n"
                        "open('%s/damaged.ltr', 'wb').write(d)\"",
                        dir, dir));
    r = tu_run("%s analyze %s/damaged.ltr", tu_ltr(), dir);
    assert_int_equal(r.status, 3);
    const char *w = strstr(r.out, "free(s) of allocations the trace never saw");
    const char *end = w ? strchr(w, '\n') : NULL;
    const char *said = w ? strstr(w, "or their Alloc was in the trace's damaged stretches") : NULL;
    if (!w || !said || (end && said > end))
        fail_msg("the frees of blocks allocated in the damaged chunk:\n%s", r.out);
    tu_free(&r);
}

static void test_flush_refusals(void **state)
{
    expect(tu_run("%s flush", tu_ltr()), 1, "no session named 'ltr' is running");
    expect(tu_run("%s flush --instance other", tu_ltr()), 1, "no session named 'other'");
    expect(tu_run("%s flush --instance ../x", tu_ltr()), 2, "session name '../x' may hold only");
    expect(tu_run("%s flush now", tu_ltr()), 2, "usage: ltr flush");
    tu_expect_ok(tu_run("%s start --instance mem", tu_ltr()));
    expect(tu_run("%s flush --instance mem", tu_ltr()), 1, "'ltr save FILE'");
    tu_expect_ok(tu_run("%s cancel --instance mem", tu_ltr()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flushed_part_holds_what_came_before, fresh, done),
        cmocka_unit_test_setup_teardown(test_damage_said_where_allocations_are_missing, fresh, done),
        cmocka_unit_test_setup_teardown(test_flush_refusals, fresh, done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
