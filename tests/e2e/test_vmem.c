/*
 * tests/e2e/test_vmem.c — VirtualAllocation end to end
 * (docs/system-provider.md): the heap agent records the mappings a program
 * makes itself when the session enables Ltr.System keyword 0x10, and
 * `ltr analyze --mapped` finds tests/programs/mapleak.c's mapped bytes
 * exactly, by stack (a partial munmap, an mremap, a file mapping undone, a
 * madvise that gives pages back, the break moved up and down), preloaded or attached late; without the
 * keyword nothing of it is written, and the program's own output is the
 * same either way.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTR tu_ltr()
#define MAPLEAK tu_test_bin("ltr-test-mapleak")

/* A number after "key": in JSON text from p; -1 if absent. */
static long long jfield(const char *p, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *f = strstr(p, pat);
    return f ? atoll(f + strlen(pat)) : -1;
}

/* The JSON stack entry whose frames name fn (the start of its object). */
static const char *stack_named(const char *json, const char *fn)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"function\":\"%s\"", fn);
    const char *f = strstr(json, pat);
    if (!f)
        return NULL;
    const char *s = NULL;
    for (const char *p = strstr(json, "{\"stack\":"); p && p < f; p = strstr(p + 1, "{\"stack\":"))
        s = p;
    return s;
}

/* Records mapleak in a session with the given extra options; returns the trace. */
static void record(const char *dir, const char *opts, const char *name, char *trace, size_t size)
{
    snprintf(trace, size, "%s/%s.ltr", dir, name);
    tu_expect_ok(tu_run("%s start heap %s --filemode --instance %s -o %s", LTR, opts, name, trace));
    tu_result r = tu_run("%s run --instance %s -- %s", LTR, name, MAPLEAK);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "mapped 753664 munmap -1 errno 22\n"); /* the program's own count, unchanged */
    tu_free(&r);
    tu_expect_ok(tu_run("%s stop %s --instance %s", LTR, trace, name));
}

static void test_mapped_exact(void **state)
{
    char trace[4200];
    record(*state, "--provider Ltr.System:0x10", "vm1", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --mapped --format json --top 0", LTR, trace);
    assert_int_equal(r.status, 0);
    const char *p = strstr(r.out, "\"mapped\":[{");
    assert_non_null(p);
    assert_int_equal(jfield(p, "outstanding"), 753664);
    assert_int_equal(jfield(p, "ranges"), 9);
    assert_int_equal(jfield(p, "maps"), 12);
    assert_int_equal(jfield(p, "unmaps"), 6);
    assert_int_equal(jfield(p, "unmap_bytes"), 266240 + 32768);
    assert_int_equal(jfield(p, "remaps"), 1);
    assert_int_equal(jfield(p, "discard_bytes"), 65536);
    assert_int_equal(jfield(p, "unseen_unmap_bytes"), 0);
    static const struct { const char *fn; long long bytes, ranges; } want[] = {
        {"leak_maps", 327680, 5}, {"punch_hole", 196608, 2}, {"grow_map", 196608, 1}};
    for (size_t i = 0; i < 3; i++) {
        const char *s = stack_named(p, want[i].fn);
        assert_non_null(s);
        assert_int_equal(jfield(s, "bytes"), want[i].bytes);
        assert_int_equal(jfield(s, "ranges"), want[i].ranges);
        assert_int_equal(jfield(s, "inside"), want[i].bytes);
        assert_non_null(strstr(s, "\"anonymous\":true"));
    }
    assert_null(stack_named(p, "file_map")); /* mapped and unmapped: nothing held */
    const char *b = stack_named(p, "move_break"); /* sbrk's up and down */
    assert_non_null(b);
    assert_int_equal(jfield(b, "bytes"), 32768);
    assert_non_null(strstr(b, "\"brk\":true"));
    tu_free(&r);
    r = tu_run("%s analyze %s --mapped", LTR, trace);
    assert_int_equal(r.status, 0);
    /* sizes as the heap report's (753664 bytes printed raw were) */
    assert_non_null(strstr(r.out, "736 KiB mapped at the window's end, in 9 range(s)"));
    assert_non_null(strstr(r.out, "#1 320 KiB in 5 range(s), anonymous"));
    tu_free(&r);
}

/* The built-in memory profile declares VirtualAllocation: with heap tracing
 * beside it, the mappings are recorded. */
static void test_memory_profile(void **state)
{
    char trace[4200];
    record(*state, "memory", "vm3", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --mapped", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "736 KiB mapped at the window's end, in 9 range(s)"));
    tu_free(&r);
}

/* A running program, the agent attached late (ltr start --pid: its hooks
 * put in the program's GOT slots): the same mappings, and its one file. */
static void test_attached_late(void **state)
{
    const char *dir = *state;
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/late.ltr", dir);
    tu_result r = tu_run("LTR_TEST_GATE=%s/go %s %s > %s/out & p=$!; "
                         "i=0; while ! grep -q '^waiting' %s/out && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                         "%s start heap --provider Ltr.System:0x30 --filemode --instance vm4 --pid $p -o %s >&2 "
                         "&& touch %s/go; wait $p; echo target $?; %s stop %s --instance vm4 >&2",
                         dir, MAPLEAK, MAPLEAK, dir, dir, LTR, trace, dir, LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "target 0"));
    tu_free(&r);
    r = tu_run("%s analyze %s --mapped --format json --top 0", LTR, trace);
    const char *p = strstr(r.out, "\"mapped\":[{");
    assert_non_null(p);
    assert_int_equal(jfield(p, "outstanding"), 753664);
    assert_int_equal(jfield(stack_named(p, "leak_maps"), "bytes"), 327680);
    tu_free(&r);
    r = tu_run("%s analyze %s --files --format json", LTR, trace);
    char want[4200];
    snprintf(want, sizeof want, "{\"path\":\"%s\",\"opens\":1,", MAPLEAK);
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
}

static void test_not_enabled(void **state)
{
    char trace[4200];
    record(*state, "", "vm2", trace, sizeof trace);
    tu_result r = tu_run("%s analyze %s --mapped --format json", LTR, trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"mapped\":[]"));
    tu_free(&r);
    r = tu_run("%s analyze %s --mapped --cpu", LTR, trace);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--mapped"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mapped_exact, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_memory_profile, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_attached_late, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_not_enabled, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
