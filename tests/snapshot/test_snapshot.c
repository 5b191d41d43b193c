/*
 * tests/snapshot/test_snapshot.c — heap snapshots in-process: the agent's
 * live-block table (src/agent/snapshot_table.c, built into this test), the
 * setting and requests in the registry (recorder/snapshot.h) and the trend
 * classifier of the analyzer (analyze/snapshots.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/snapshot.h"
#include "analyze/internal.h"
#include "prim/prim.h"
#include "recorder/snapshot.h"
#include "util/testutil.h"

#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the table ---- */

typedef struct per_stack {
    uint64_t blocks[8], bytes[8], total;
} per_stack;

static void add(const snap_block *b, void *arg)
{
    per_stack *p = arg;
    assert_true(b->stack < 8);
    p->blocks[b->stack]++;
    p->bytes[b->stack] += b->size;
    p->total++;
}

static uintptr_t addr_of(uint64_t i)
{
    return (uintptr_t)(0x10000 + i * 48); /* 8-aligned, like allocator blocks */
}

/* What goes in and out is what a walk finds, per stack, through growth,
 * backward-shift deletions, a block replaced at its address, realloc's
 * take and put back, and addresses the table cannot keep. */
static void test_table_counts(void **state)
{
    (void)state;
    enum { N = 200000 };
    per_stack want = {0};
    for (uint64_t i = 0; i < N; i++)
        snap_table_insert(addr_of(i), i % 100 + 1, (uint32_t)(i % 7) + 1, 0);
    for (uint64_t i = 0; i < N; i += 2) /* every other one freed */
        snap_table_remove(addr_of(i));
    for (uint64_t i = 1; i < N; i += 2) {
        want.blocks[i % 7 + 1]++;
        want.bytes[i % 7 + 1] += i % 100 + 1;
    }
    /* the same address again: the new block replaces the old */
    snap_table_insert(addr_of(1), 5000, 1, 0);
    want.blocks[2]--;
    want.bytes[2] -= 2;
    want.blocks[1]++;
    want.bytes[1] += 5000;
    uint64_t kept[2];
    assert_true(snap_table_take(addr_of(3), kept));
    assert_false(snap_table_take(addr_of(3), kept));
    snap_table_put_back(addr_of(3), kept);
    assert_false(snap_table_take(addr_of(2), kept)); /* freed */
    snap_table_insert(3, 1, 1, 0);                   /* unaligned: not kept */
    snap_table_insert((uintptr_t)1 << 48, 1, 1, 0);   /* beyond 47 bits: not kept */

    per_stack got = {0};
    uint64_t pause;
    assert_int_equal(snap_table_walk(10, add, &got, &pause), 0);
    for (int s = 1; s < 8; s++) {
        assert_int_equal(got.blocks[s], want.blocks[s]);
        assert_int_equal(got.bytes[s], want.bytes[s]);
    }
    uint64_t blocks, table_bytes, untracked;
    snap_table_stats(&blocks, &table_bytes, &untracked);
    assert_int_equal(blocks, N / 2);
    assert_int_equal(untracked, 2);
    /* sized for the most blocks it held (it does not shrink), at most 4x their 16 bytes */
    assert_true(table_bytes >= N * 16 && table_bytes <= (uint64_t)N * 16 * 4);
    snap_table_clear();
    memset(&got, 0, sizeof got);
    assert_int_equal(snap_table_walk(10, add, &got, &pause), 0);
    assert_int_equal(got.total, 0);
}

static void age_of(const snap_block *b, void *arg)
{
    *(uint32_t *)arg = b->age_s;
}

static void test_table_ages_and_sizes(void **state)
{
    (void)state;
    snap_table_insert(0x1000, (uint64_t)1 << 45, 3, 100);
    uint32_t age = 0;
    uint64_t pause;
    snap_table_walk(3700, age_of, &age, &pause);
    assert_int_equal(age, 3600);
    per_stack got = {0};
    snap_table_walk(3700, add, &got, &pause);
    assert_int_equal(got.bytes[3], SNAP_SIZE_MAX); /* kept as the largest size */
    snap_table_clear();
}

/* ---- the trend ---- */

static an_snapshot snap_at(double secs, const uint64_t *bytes, size_t nstacks)
{
    an_snapshot s = {.pid = 7, .ts = (uint64_t)(secs * 1e9), .complete = 1, .nstacks = nstacks};
    s.stacks = calloc(nstacks, sizeof *s.stacks);
    for (size_t i = 0; i < nstacks; i++)
        s.stacks[i] = (an_snap_stack){.stack = (uint32_t)i + 1, .bytes = bytes[i], .blocks = 1};
    return s;
}

/* Stack 1 leaks 5 KB a snapshot, stack 2 fills a cache in three snapshots
 * and stays, stack 3 jumps between 0 and 8 MB at random, stack 4 churns
 * around a constant with one huge burst at the end. */
static void test_trend_verdicts(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    enum { N = 12 };
    a->snaps = calloc(N, sizeof *a->snaps);
    srand(3);
    for (int i = 0; i < N; i++) {
        uint64_t b[4] = {(uint64_t)(10000 + 5000 * i), (uint64_t)(i < 3 ? 700000 * (i + 1) : 2100000),
                         (uint64_t)(rand() % 8000000), i == N - 1 ? 50000000 : 1000000 + (uint64_t)(rand() % 3000)};
        a->snaps[a->nsnaps++] = snap_at(i, b, 4);
    }
    a->trend_wanted = 1;
    an_trend_run(a);
    assert_int_equal(a->ntrend, 4);
    assert_int_equal(a->trend[0].stack, 1);
    assert_int_equal(a->trend[0].verdict, AN_LEAK);
    assert_true(a->trend[0].growth > 5000 * 3600 * 0.9 && a->trend[0].growth < 5000 * 3600 * 1.1);
    for (size_t i = 1; i < a->ntrend; i++) {
        if (a->trend[i].stack == 2) { /* filled, then flat: its later half grows nothing */
            assert_int_equal(a->trend[i].verdict, AN_PLATEAU);
            assert_true(a->trend[i].later == 0);
        }
        else
            assert_int_equal(a->trend[i].verdict, AN_NOISE);
    }
    an_snapshots_free(a);
    free(a);
}

/* Two caches that filled at once and stayed both grow 0 B/hour: the larger
 * comes first, whatever order their stacks came in. */
static void test_trend_plateaus_by_size(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    enum { N = 12 };
    a->snaps = calloc(N, sizeof *a->snaps);
    for (int i = 0; i < N; i++)
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){i ? 100000u : 0u, i ? 6000000u : 0u}, 2);
    an_trend_run(a);
    assert_int_equal(a->ntrend, 2);
    assert_int_equal(a->trend[0].verdict, AN_PLATEAU);
    assert_int_equal(a->trend[1].verdict, AN_PLATEAU);
    assert_true(a->trend[0].growth == a->trend[1].growth);
    assert_int_equal(a->trend[0].stack, 2);
    assert_int_equal(a->trend[0].last, 6000000);
    an_snapshots_free(a);
    free(a);
}

/* A Rust Vec's realloc: 0 B for 4 snapshots, then 512 KiB to the end. A
 * plateau, whose whole series' slope is the step's (most pairs straddle
 * it: "plateau: +225 MiB/hour" said the text), while its later half, the
 * rate the text now gives a plateau, grows nothing. */
static void test_trend_step_is_a_plateau(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    enum { N = 9 };
    a->snaps = calloc(N, sizeof *a->snaps);
    for (int i = 0; i < N; i++)
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){i < 4 ? 0u : 524288u}, 1);
    an_trend_run(a);
    assert_int_equal(a->ntrend, 1);
    assert_int_equal(a->trend[0].verdict, AN_PLATEAU);
    assert_true(a->trend[0].growth > 100.0 * 1048576);
    assert_true(a->trend[0].later == 0);
    an_snapshots_free(a);
    free(a);
}

/* A cache that filled fast early and levelled off (stack 1: 600 KB a
 * snapshot for 5 snapshots, then flat), a table that filled more slowly and
 * still grows steadily at the end (stack 2: 100 KB a snapshot for 6, then
 * 5 KB a snapshot, a leak after its fill: a review's python3, whose leak,
 * cache and fast grower all came through PyByteArray_Resize), and a leak of
 * 2 KB a snapshot from the start (stack 3). Stack 2 is a leak, ranked by its
 * later half's 5 KB a snapshot, so first: judged against its whole series'
 * line, the fill's, it was a plateau "slowed, still growing", below the
 * slower leak (the review's "+643 MiB/hour" third, under leaks of 47.8 and
 * 5.69 MiB/hour). */
static void test_trend_leak_after_fill_first(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    enum { N = 12 };
    a->snaps = calloc(N, sizeof *a->snaps);
    for (int i = 0; i < N; i++) {
        uint64_t cache = 600000u * (uint64_t)(i < 5 ? i : 5);
        uint64_t table = i < 6 ? 100000u * (uint64_t)i : 500000u + 5000u * (uint64_t)(i - 5);
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){cache, table, 2000u * (uint64_t)i}, 3);
    }
    an_trend_run(a);
    assert_int_equal(a->ntrend, 3);
    assert_int_equal(a->trend[0].stack, 2);
    assert_int_equal(a->trend[0].verdict, AN_LEAK);
    assert_true(a->trend[0].after_fill); /* "over the later half, steadily" */
    assert_true(a->trend[0].later > 0.9 * 5000 * 3600 && a->trend[0].later < 1.1 * 5000 * 3600);
    assert_true(a->trend[0].growth > 2 * a->trend[0].later); /* the fill's, which it is not ranked by */
    assert_int_equal(a->trend[1].stack, 3);
    assert_int_equal(a->trend[1].verdict, AN_LEAK);
    assert_false(a->trend[1].after_fill);
    assert_int_equal(a->trend[2].stack, 1);
    assert_int_equal(a->trend[2].verdict, AN_PLATEAU);
    assert_true(a->trend[2].later == 0);
    assert_false(a->trend[2].rising); /* "levelled off" */
    char text[160];
    /* the text gives the rate it is ranked by, and says why the whole series' is not it */
    assert_string_equal(an_trend_rate_text(&a->trend[0], text, sizeof text),
                        "leak: +17.2 MiB/hour over the later half, steadily (+152 MiB/hour over all: "
                        "it filled faster first); ");
    an_snapshots_free(a);
    free(a);
}

/* A plateau whose later half still rose, but up and down (a cache that
 * grows and sheds: 2 MB after a fill, then +40, -30, +40... KB): not steady,
 * so no leak after a fill; a plateau "slowed, still growing". */
static void test_trend_unsteady_rise_is_a_plateau(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    enum { N = 12 };
    a->snaps = calloc(N, sizeof *a->snaps);
    static const int64_t late[6] = {0, 40000, 10000, 50000, 20000, 60000};
    for (int i = 0; i < N; i++)
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){i < 6 ? 400000u * (uint64_t)i : (uint64_t)(2000000 + late[i - 6])}, 1);
    an_trend_run(a);
    assert_int_equal(a->ntrend, 1);
    assert_int_equal(a->trend[0].verdict, AN_PLATEAU);
    assert_false(a->trend[0].after_fill);
    assert_true(a->trend[0].rising);
    char text[200]; /* why it is not a leak, and ranked after them, is said */
    assert_string_equal(an_trend_rate_text(&a->trend[0], text, sizeof text),
                        "plateau: slowed, still growing, +17.2 MiB/hour over the later half, unevenly (no leak yet: "
                        "a cache still filling, or a leak; later snapshots tell); ");
    an_snapshots_free(a);
    free(a);
}

/* A cache whose fill ended inside the later half of the snapshots, then
 * flat (CPython's ints of a dict cache's keys, the review's python3 on a
 * loaded machine): its later half rose pair after pair, but not to the
 * end; a plateau, not a leak after a fill. */
static void test_trend_fill_ending_late_is_a_plateau(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    static const uint64_t kb[9] = {0, 0, 0, 2976, 26656, 53504, 55776, 55776, 55776};
    a->snaps = calloc(9, sizeof *a->snaps);
    for (int i = 0; i < 9; i++)
        a->snaps[a->nsnaps++] = snap_at(i, &kb[i], 1);
    an_trend_run(a);
    assert_int_equal(a->ntrend, 1);
    assert_int_equal(a->trend[0].verdict, AN_PLATEAU);
    assert_false(a->trend[0].after_fill);
    an_snapshots_free(a);
    free(a);
}

/* The same cache's fill, 16 MiB, into the later half of 9 snapshots, on a
 * stack that also leaks 200 KB a snapshot (the review's bytearray extended
 * in place beside the dict cache, both through PyByteArray_Resize): after
 * the fill it rises steadily, so a leak after a fill, ranked by its rate
 * since the fill ended (the last 3 snapshots) above a leak of 20 KB a
 * snapshot from the start. Judged by its later half, which holds the fill's end, it was a
 * plateau "slowed, still growing", below the smaller leak. The cache's own
 * stack, flat after the same fill, stays a plateau. */
static void test_trend_fill_into_later_half_then_leak(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    static const uint64_t fill_kb[9] = {0, 0, 0, 2976, 26656, 53504, 55776, 55776, 55776};
    a->snaps = calloc(9, sizeof *a->snaps);
    for (int i = 0; i < 9; i++) {
        uint64_t both = fill_kb[i] * 300 + 200000u * (uint64_t)i; /* 16 MiB at the end of the fill */
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){both, 20000u * (uint64_t)i, fill_kb[i] * 1000}, 3);
    }
    an_trend_run(a);
    assert_int_equal(a->ntrend, 3);
    assert_int_equal(a->trend[0].stack, 1);
    assert_int_equal(a->trend[0].verdict, AN_LEAK);
    assert_true(a->trend[0].after_fill);
    assert_true(a->trend[0].later > 0.9 * 200000 * 3600 && a->trend[0].later < 1.1 * 200000 * 3600);
    assert_int_equal(a->trend[1].stack, 2);
    assert_int_equal(a->trend[1].verdict, AN_LEAK);
    assert_int_equal(a->trend[2].stack, 3);
    assert_int_equal(a->trend[2].verdict, AN_PLATEAU);
    char text[200]; /* the rate it is ranked by, and since when */
    assert_string_equal(an_trend_rate_text(&a->trend[0], text, sizeof text),
                        "leak: +687 MiB/hour over the last 3 snapshots, steadily (+9.81 GiB/hour over all: "
                        "it filled faster first); ");
    an_snapshots_free(a);
    free(a);
}

static void test_trend_needs_snapshots(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    a->snaps = calloc(3, sizeof *a->snaps);
    for (int i = 0; i < 3; i++)
        a->snaps[a->nsnaps++] = snap_at(i, (uint64_t[]){(uint64_t)(100000 * i)}, 1);
    an_trend_run(a);
    assert_int_equal(a->ntrend, 0);
    an_snapshots_free(a);
    free(a);
}

/* A snapshot's age figures are its stacks'; a cut one (no End) counts
 * what arrived. */
static void test_snapshot_totals(void **state)
{
    (void)state;
    ltr_analysis *a = calloc(1, sizeof *a);
    a->snaps = calloc(1, sizeof *a->snaps);
    a->snaps[a->nsnaps++] = snap_at(1, (uint64_t[]){100, 200}, 2);
    a->snaps[0].complete = 0;
    a->snaps[0].stacks[0].older_1h = 60;
    a->snaps[0].stacks[0].oldest_s = 4000;
    a->snaps[0].stacks[1].oldest_s = 30;
    an_snapshots_finish(a);
    assert_int_equal(a->snaps[0].bytes, 300);
    assert_int_equal(a->snaps[0].blocks, 2);
    assert_int_equal(a->snaps[0].older_1h, 60);
    assert_int_equal(a->snaps[0].oldest_s, 4000);
    an_snapshots_free(a);
    free(a);
}

static void test_snapshot_bound(void **state)
{
    (void)state;
    uint64_t n;
    assert_int_equal(an_snapshot_bound("snapshot:3", &n), 1);
    assert_int_equal(n, 3);
    assert_int_equal(an_snapshot_bound("2.5", &n), 0);
    assert_int_equal(an_snapshot_bound("snapshot:0", &n), -1);
    assert_int_equal(an_snapshot_bound("snapshot:x", &n), -1);
}

/* ---- the setting ---- */

static void test_setting_errors(void **state)
{
    (void)state;
    ltr_error err;
    /* a process the agent cannot be loaded into (statically linked; it
     * reads its stdin to the end) */
    char prog[4096];
    snprintf(prog, sizeof prog, "%s/inject-static", getenv("LTR_TEST_BIN"));
    int in[2];
    assert_int_equal(pipe(in), 0);
    pid_t static_pid = fork();
    if (static_pid == 0) {
        dup2(in[0], 0);
        close(in[1]);
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    for (int i = 0; i < 200 && !ltr_proc_start_time((uint32_t)static_pid); i++) /* until it runs */
        usleep(10000);
    usleep(100000); /* exec'd: its maps are the static program's */
    assert_true(ltr_snapshot_enable_pid((uint32_t)static_pid, true, &err) < 0);
    if (!strstr(err.msg, "statically linked"))
        fprintf(stderr, "%s\n", err.msg);
    assert_non_null(strstr(err.msg, "statically linked"));
    close(in[1]);
    waitpid(static_pid, NULL, 0);
    assert_int_equal(ltr_snapshot_enable_pid(0x7ffffff0, true, &err), -ESRCH);
    assert_int_equal(ltr_snapshot_take((uint32_t)getpid(), 100, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "snapshotconfig heap --pid"));
    assert_int_equal(ltr_snapshot_enable_name("", true, &err), -EINVAL);
    char longer[LTR_SNAP_LONG_NAME_MAX + 1]; /* longer than any file's name */
    memset(longer, 'n', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    assert_int_equal(ltr_snapshot_enable_name(longer, true, &err), -EINVAL);
    assert_false(ltr_snapshot_session_running());
}

static void test_setting_by_name(void **state)
{
    (void)state;
    ltr_error err;
    assert_int_equal(ltr_snapshot_enable_name("svc", true, &err), 0);
    assert_int_equal(ltr_snapshot_enable_name("svc", true, &err), 0); /* once */
    assert_int_equal(ltr_snapshot_enable_name("other", true, &err), 0);
    ltr_snapshot_proc procs[4];
    char names[4][LTR_SNAP_LONG_NAME_MAX];
    int nn;
    assert_true(ltr_snapshot_list(procs, 4, names, 4, &nn, &err) >= 0);
    assert_int_equal(nn, 2);
    assert_int_equal(ltr_snapshot_enable_name("svc", false, &err), 0);
    assert_true(ltr_snapshot_list(procs, 4, names, 4, &nn, &err) >= 0);
    assert_int_equal(nn, 1);
    assert_string_equal(names[0], "other");
    assert_int_equal(ltr_snapshot_enable_name("other", false, &err), 0);
}

/* An executable's file name of 20 characters is kept whole (the agent
 * matches it against /proc/self/exe's), not refused nor cut to comm's 15;
 * a name with a '/' is still no program's. */
static void test_setting_by_long_name(void **state)
{
    (void)state;
    ltr_error err;
    assert_int_equal(ltr_snapshot_enable_name("snap-target-20-chars", true, &err), 0);
    assert_int_equal(ltr_snapshot_enable_name("snap-target-20-chars", true, &err), 0); /* once */
    ltr_snapshot_proc procs[4];
    char names[4][LTR_SNAP_LONG_NAME_MAX];
    int nn;
    assert_true(ltr_snapshot_list(procs, 4, names, 4, &nn, &err) >= 0);
    assert_int_equal(nn, 1);
    assert_string_equal(names[0], "snap-target-20-chars");
    assert_int_equal(ltr_snapshot_enable_name("snap-target-20-chars", false, &err), 0);
    assert_true(ltr_snapshot_list(procs, 4, names, 4, &nn, &err) >= 0);
    assert_int_equal(nn, 0);
    assert_int_equal(ltr_snapshot_enable_name("bin/svc", true, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "no '/'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_counts),
        cmocka_unit_test(test_table_ages_and_sizes),
        cmocka_unit_test(test_trend_verdicts),
        cmocka_unit_test(test_trend_plateaus_by_size),
        cmocka_unit_test(test_trend_step_is_a_plateau),
        cmocka_unit_test(test_trend_leak_after_fill_first),
        cmocka_unit_test(test_trend_unsteady_rise_is_a_plateau),
        cmocka_unit_test(test_trend_fill_ending_late_is_a_plateau),
        cmocka_unit_test(test_trend_fill_into_later_half_then_leak),
        cmocka_unit_test(test_trend_needs_snapshots),
        cmocka_unit_test(test_snapshot_totals),
        cmocka_unit_test(test_snapshot_bound),
        cmocka_unit_test_setup_teardown(test_setting_errors, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_setting_by_name, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_setting_by_long_name, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
