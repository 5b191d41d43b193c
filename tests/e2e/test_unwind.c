/*
 * tests/e2e/test_unwind.c — the heap agent's fast unwinder (src/agent/
 * unwind.c) against libunwind. Each test records a target with
 * LTR_HEAP_UNWIND=check: the agent then unwinds every stack both ways, and
 * at exit each process says on stderr
 *     ltr-heap[PID]: unwind check: F fast, B fallback, M mismatched, R refused (...)
 *     ltr-heap[PID]: unwind reuse: R of N frames
 *     ltr-heap[PID]: unwind guesses: G of N frames
 * (F stacks came from the fast unwinder and were compared frame by frame
 * with libunwind's, B went to libunwind, M of the F differed, or had hashes
 * from the walk's sums that a pass over their frames did not give; R of the N
 * frames of the F were taken from the thread's previous walk, G stepped
 * over at the CFA the thread's previous walk found there). The call
 * sites are in tests/programs: unwind_target.cpp, target.c and reuse.c.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct tally {
    unsigned long long fast, fallback, mismatched, refused, reused, frames, guessed;
    int processes;
} tally;

/* Sums the report lines of every process in err. */
static tally read_tally(const char *err)
{
    tally t = {0};
    for (const char *p = err; (p = strstr(p, "unwind check: ")); p++) {
        unsigned long long f, b, m, x;
        if (sscanf(p, "unwind check: %llu fast, %llu fallback, %llu mismatched, %llu refused", &f, &b, &m, &x) != 4)
            continue; /* a mismatch's detail line */
        t.refused += x;
        t.fast += f;
        t.fallback += b;
        t.mismatched += m;
        t.processes++;
    }
    for (const char *p = err; (p = strstr(p, "unwind guesses: ")); p++) {
        unsigned long long g, n;
        if (sscanf(p, "unwind guesses: %llu of %llu frames", &g, &n) == 2)
            t.guessed += g;
    }
    for (const char *p = err; (p = strstr(p, "unwind reuse: ")); p++) {
        unsigned long long r, n;
        if (sscanf(p, "unwind reuse: %llu of %llu frames", &r, &n) == 2) {
            t.reused += r;
            t.frames += n;
        }
    }
    return t;
}

/* Records target with args in check mode; fails the test on any mismatch. */
static tally check(const char *opts, const char *target, const char *args)
{
    /* --force: each check writes the same trace over the last one */
    tu_result r = tu_run("LTR_HEAP_UNWIND=check %s record --force -o %s/u.ltr %s -- %s %s", tu_ltr(),
                         getenv("TMPDIR"), opts, tu_test_bin(target), args);
    if (r.status != 0)
        fail_msg("%s %s: exit %d: %s", target, args, r.status, r.err);
    tally t = read_tally(r.err);
    /* refused: libunwind's pipe was not found at the start (fallback.c), or
     * went: every stack the agent's unwinder gives up on would have none */
    if (t.processes == 0 || t.mismatched != 0 || t.refused != 0)
        fail_msg("%s %s: %s", target, args, r.err);
    tu_free(&r);
    return t;
}

static void test_c_chain_and_shared_library(void **state)
{
    tally t = check("", "heap-unwind-target", "c");
    assert_int_equal(t.fallback, 0);
    assert_true(t.fast >= 40);
}

static void test_cxx_exceptions_and_inlining(void **state)
{
    tally t = check("", "heap-unwind-target", "cxx");
    assert_true(t.fast >= 100);
}

static void test_deep_stacks_are_cut_alike(void **state)
{
    assert_true(check("", "heap-unwind-target", "deep").fast >= 5);
    assert_true(check("--depth 256", "heap-unwind-target", "deep").fast >= 5);
    assert_true(check("--depth 3", "heap-unwind-target", "deep").fast >= 5);
}

static void test_signal_frames_fall_back(void **state)
{
    tally t = check("", "heap-unwind-target", "signal");
    assert_true(t.fallback >= 10); /* each handler's stack: a signal frame */
}

static void test_threads(void **state)
{
    tally t = check("", "heap-unwind-target", "threads");
    assert_true(t.fast >= 300);
}

/* The modes of the main heap tests: threads, fork, dlopen/dlclose, exec, and
 * stacks that must not reuse the previous walk's outer frames (reuse.c). */
static void test_heap_target_modes(void **state)
{
    char dl[600];
    snprintf(dl, sizeof dl, "dlopen %s", tu_test_bin("libheapdl.so"));
    const char *modes[] = {"chain", "threads", "fork", "exec", "counts", "reuse", dl};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        assert_true(check("", "heap-target", modes[i]).fast > 0);
    /* reuse.c's stacks were checked with the reuse on (not paused) */
    tally t = check("", "heap-target", "reuse");
    assert_true(t.reused * 4 > t.frames);
    assert_true(check("", "heap-target", "fork").processes == 1); /* the child _exits */
}

/* The agent stops recording its walks where they share little (a third of
 * the frames reused, unwind.c) and takes them up again when that changes:
 * 2000 stacks sharing only their outermost frames, then stacks that share
 * all but their innermost. Recording all the time would reuse about a
 * quarter of the first phase's frames; never coming back, about none of the
 * second's. */
static void test_reuse_pauses_and_resumes(void **state)
{
    tally shifting = check("", "heap-target", "phases 0");
    assert_int_equal(shifting.fast, 2000);
    assert_true(shifting.frames > 2000 * 20);
    assert_true(shifting.reused * 20 < shifting.frames);
    tally settled = check("", "heap-target", "phases 16000");
    assert_true(settled.frames > 18000 * 20);
    assert_true(settled.reused * 2 > settled.frames);
}

/* Stacks whose frames differ near their outermost but whose CFAs repeat:
 * the reuse pauses, and the plain walks step over nearly every frame at a
 * guessed CFA (every one but the first walk's, the outermost and those of a
 * recording window). Stacks whose inner frames move from one to the next
 * (phases 0) are not guessed: the thread stops trying. check() has
 * compared every frame with libunwind's. */
static void test_guesses_where_cfas_repeat(void **state)
{
    tally alike = check("", "heap-target", "guesses 4000");
    assert_true(alike.fast >= 4000);
    assert_true(alike.reused * 3 < alike.frames);
    assert_true(alike.guessed * 10 > alike.frames * 8);
    tally moving = check("", "heap-target", "phases 0");
    assert_true(moving.guessed * 10 < moving.frames);
}

/* Code without unwind information that keeps a frame pointer, as a JIT's
 * (node's V8, a JVM), in two frames with C between them (jitframes.c): the
 * agent's unwinder steps over them by the frame pointer, frame for frame as
 * libunwind (check() compared each), where it gave every such stack to
 * libunwind before ("0 fast, 300 fallback"; node ran 2.5 times as long as
 * under heaptrack so). The C frames between and beyond them are named. And
 * where the frame pointer is no frame's (nofp: zeroed), the stack ends at
 * that frame, as libunwind's does. */
static void test_jit_frames_by_frame_pointer(void **state)
{
    tally t = check("", "ltr-test-jitframes", "300");
    assert_int_equal(t.fallback, 0);
    assert_true(t.fast >= 300);
    tu_result r = tu_run("%s analyze %s/u.ltr", tu_ltr(), getenv("TMPDIR"));
    assert_int_equal(r.status, 0);
    const char *at = strstr(r.out, "300 allocations");
    const char *mid = at ? strstr(at, "middle_c (") : NULL, *out = mid ? strstr(mid, "outer_c (") : NULL;
    if (!out || !strstr(out, "main ("))
        fail_msg("not middle_c, outer_c, main in the stack of the 300 blocks:\n%s", r.out);
    tu_free(&r);
    tally z = check("", "ltr-test-jitframes", "300 nofp");
    assert_int_equal(z.fallback, 0);
    assert_true(z.fast >= 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_chain_and_shared_library, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_cxx_exceptions_and_inlining, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_deep_stacks_are_cut_alike, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_signal_frames_fall_back, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_threads, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_heap_target_modes, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_reuse_pauses_and_resumes, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_guesses_where_cfas_repeat, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_jit_frames_by_frame_pointer, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
