/*
 * tests/e2e/test_snapshot.c — heap snapshots through the ltr command
 * (issue 13): `ltr start heapsnapshot`, `ltr run` of snap_target,
 * `snapshotconfig`, `singlesnapshot`, `enableperiodicsnapshot`, then the
 * trace as `ltr dump` and `ltr analyze` see it. Each test has a sandbox of
 * its own (runtime directory and registry included).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TARGET tu_test_bin("snap-target")

static char dir[512];

static int setup(void **state)
{
    int rc = tu_setup_sandbox(state);
    snprintf(dir, sizeof dir, "%s", getenv("TMPDIR"));
    return rc;
}

/* A test that failed left its snap-target waiting for a file of a sandbox
 * about to go: it would wait for ever, and test_watch's search by name
 * found it. Every snap-target of the sandbox ends here ('[t]': not the
 * shell running pkill, whose command line holds the pattern). */
static int teardown(void **state)
{
    tu_result r = tu_run("pkill -KILL -f 'snap-targe[t] .*%s'", dir);
    tu_free(&r);
    return tu_teardown_sandbox(state);
}

static bool has(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void wait_for(const char *name, double secs)
{
    for (double end = tu_now_s() + secs; !has(name);) {
        if (tu_now_s() > end)
            fail_msg("%s/%s did not appear within %.0f s", dir, name, secs);
        usleep(10000);
    }
}

static void touch(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    fclose(fopen(p, "w"));
}

/* The pid the target wrote into file `name` of the sandbox. */
static unsigned pid_in(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *text = tu_read_file(p);
    unsigned pid = text ? (unsigned)atoi(text) : 0;
    free(text);
    assert_true(pid > 0);
    return pid;
}

/* Starts the target under `ltr run` in the background; returns its pid. */
static unsigned launch(const char *mode, const char *extra)
{
    tu_result r = tu_run("%s run -- %s %s %s %s > %s/run.out 2>&1 &", tu_ltr(), TARGET, mode, dir,
                         extra, dir);
    tu_free(&r);
    wait_for("pid", 30);
    return pid_in("pid");
}

/* Enables snapshots of pid and lets it start its table (at its next
 * allocation). */
static void enable_table(unsigned pid)
{
    tu_expect_ok(tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), pid));
    for (double end = tu_now_s() + 30;;) {
        tu_result r = tu_run("%s snapshotconfig heap --pid %u", tu_ltr(), pid);
        bool kept = r.out && strstr(r.out, "table kept");
        tu_free(&r);
        if (kept)
            break;
        if (tu_now_s() > end)
            fail_msg("process %u did not start its table", pid);
        usleep(10000);
    }
}

/* enable_table, then tells it to go on. */
static void enable_and_go(unsigned pid)
{
    enable_table(pid);
    touch("go");
}

static void wait_gone(unsigned pid)
{
    for (double end = tu_now_s() + 30; kill((pid_t)pid, 0) == 0;) {
        if (tu_now_s() > end)
            fail_msg("process %u did not exit", pid);
        usleep(10000);
    }
}

static char *stop(const char *name)
{
    static char trace[700];
    snprintf(trace, sizeof trace, "%s/%s", dir, name);
    tu_expect_ok(tu_run("%s stop %s", tu_ltr(), trace));
    return trace;
}

/* The SnapshotStack line of the trace's dump with these blocks and bytes. */
static int stack_lines(const char *dump, long blocks, long bytes)
{
    char want[128];
    snprintf(want, sizeof want, " blocks=%ld bytes=%ld ", blocks, bytes);
    int n = 0;
    for (const char *p = dump; (p = strstr(p, "SnapshotStack")); p++) {
        const char *eol = strchr(p, '\n');
        const char *hit = strstr(p, want);
        n += hit && (!eol || hit < eol);
    }
    return n;
}

/* ltr report's page of trace, written (trace.html) and drawn by headless
 * chromium, its DOM through `grep -o GREP`. Status 77 where it is not
 * drawn here, said: no chromium, or the sanitized build (the plain build
 * draws it). The page's writing failed apart: it exited 77 too, taken for
 * chromium missing. */
static tu_result page_drawn(const char *trace, const char *grep)
{
    tu_expect_ok(tu_run("%s report %s -o %s.html", tu_ltr(), trace, trace));
    if (tu_drawn_by_the_plain_build())
        return (tu_result){.status = 77};
    tu_result r = tu_run("command -v chromium >/dev/null || exit 77; HOME=$(dirname %s) timeout 120 chromium "
                         "--headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --dump-dom file://%s.html "
                         "2>/dev/null | grep -o %s", trace, trace, grep);
    if (r.status == 77)
        printf("chromium is not installed: the page is not drawn here\n");
    return r;
}

/* ltr report's page of a trace of snapshots alone: its header names the
 * process and what the snapshot held, its chart draws it ("0 process(es)"
 * and an empty chart, of a trace that held the snapshots' totals). */
static void page_of_snapshots_alone(const char *trace)
{
    tu_result r = page_drawn(trace, "'<pre id=\"selfcheck\"[^<]*'");
    if (r.status != 77 &&
        (r.status != 0 || !strstr(r.out, "\"errors\":[]") || !strstr(r.out, "\"timeline\":true") ||
         !strstr(r.out, ": 1 process(es), heap snapshots only (no heap events): 1 snapshot(s) over ") ||
         !strstr(r.out, "holds 531 KiB in all") || !strstr(r.out, " snapshots\"]")))
        fail_msg("the page of the snapshot's trace: %s%s", r.out, r.err);
    tu_free(&r);
}

/* A single snapshot: per stack, the program's own count and bytes. */
static void test_single_snapshot_counts(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("count", "");
    enable_and_go(pid);
    wait_for("ready", 30);
    tu_result r = tu_run("%s singlesnapshot heap %u", tu_ltr(), pid);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "wrote a heap snapshot"));
    tu_free(&r);
    touch("exit");
    wait_gone(pid);
    const char *trace = stop("one.ltr");
    r = tu_run("%s dump %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(stack_lines(r.out, 100, 6400), 1);
    assert_int_equal(stack_lines(r.out, 37, 37000), 1);
    assert_int_equal(stack_lines(r.out, 5, 500000), 1);
    assert_non_null(strstr(r.out, "SnapshotEnd snapshot=1 stacks=3 blocks=142 bytes=543400 "));
    tu_free(&r);
    r = tu_run("%s analyze %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "snapshot:1 process"));
    assert_non_null(strstr(r.out, "\nno heap events: the trace holds 1 heap snapshot(s)"));
    assert_null(strstr(r.out, "0 process(es)"));
    assert_non_null(strstr(r.out, "531 KiB in 142 live blocks, 3 stacks, 0 B in blocks an hour old")); /* 543400 bytes */
    tu_free(&r);
    /* exported: the snapshot's live bytes by stack, as folded stacks */
    r = tu_run("%s export %s --format folded --snapshot 1 -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, ";count_large 500000\n"));
    assert_non_null(strstr(r.out, ";count_medium 37000\n"));
    tu_free(&r);
    r = tu_run("%s export %s --format json --snapshot 1 -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 2);
    tu_free(&r);
    /* a window or --cpu beside --snapshot is refused: the snapshot went out
     * whole whatever the window, or the CPU samples instead, exit 0 */
    const char *const beside[] = {"--from 1000", "--to 0", "--cpu"};
    for (size_t i = 0; i < sizeof beside / sizeof *beside; i++) {
        r = tu_run("%s export %s --format folded --snapshot 1 %s -o -", tu_ltr(), trace, beside[i]);
        if (r.status != 2 || !strstr(r.err, "--snapshot N exports snapshot N whole") || *r.out)
            fail_msg("--snapshot 1 %s: status %d: %s%s", beside[i], r.status, r.out, r.err);
        tu_free(&r);
    }
    /* without --snapshot the heap events are exported, and this trace has
     * none: an empty profile is said, with the way to the snapshot (pprof
     * was silent, folded's advice was --to T) */
    r = tu_run("%s export %s --format pprof -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "no allocation in the window, only 1 heap snapshot(s): the profile is empty; "
                                  "--snapshot N exports snapshot N"));
    tu_free(&r);
    r = tu_run("%s export %s --format folded -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "only 1 heap snapshot(s): the folded stacks are empty; --snapshot N"));
    assert_null(strstr(r.err, "--to T"));
    tu_free(&r);
    /* csv's header alone is said too (it was silent), with the formats that take --snapshot */
    r = tu_run("%s export %s --format csv -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "only 1 heap snapshot(s): the csv has its header alone; "
                                  "'ltr export --format pprof|folded --snapshot N' exports snapshot N"));
    tu_free(&r);
    /* the snapshot's live bytes are a counter track of the named process */
    r = tu_run("%s export %s --format chrome -o -", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"name\":\"process_name\""));
    assert_non_null(strstr(r.out, "\"name\":\"heap snapshot live bytes\""));
    assert_non_null(strstr(r.out, "\"args\":{\"bytes\":543400}}"));
    tu_free(&r);
    page_of_snapshots_alone(trace);
}

/* A snapshot of a stopped process (SIGSTOP, Ctrl-Z, a debugger) times out
 * saying so, and how it goes on (it said only "did not write its snapshot
 * within 30000 ms"). */
static void test_snapshot_of_stopped_said(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("count", "");
    enable_and_go(pid);
    wait_for("ready", 30);
    kill((pid_t)pid, SIGSTOP);
    tu_result r = tu_run("%s singlesnapshot heap %u --timeout 1", tu_ltr(), pid);
    kill((pid_t)pid, SIGCONT);
    touch("exit");
    wait_gone(pid);
    if (!strstr(r.err, "it is stopped"))
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "did not write its snapshot within 1000 ms (it is stopped"));
    tu_free(&r);
}

/* A flight recorder keeps snapshots by their bytes, not a buffer each: the
 * agent handed its buffer over after every snapshot (for a file's sake),
 * so a heapsnapshot ring of 4 buffers held the last 4 snapshots whatever
 * their size (a review: 32 of 32 MB holding 20 KB of events). */
static void test_memory_mode_keeps_snapshots_not_buffers(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --buffers 4", tu_ltr()));
    unsigned pid = launch("count", "");
    enable_and_go(pid);
    wait_for("ready", 30);
    for (int i = 0; i < 10; i++)
        tu_expect_ok(tu_run("%s singlesnapshot heap %u", tu_ltr(), pid));
    char trace[700];
    snprintf(trace, sizeof trace, "%s/ring.ltr", dir);
    tu_expect_ok(tu_run("%s save %s", tu_ltr(), trace));
    touch("exit");
    wait_gone(pid);
    tu_expect_ok(tu_run("%s cancel", tu_ltr()));
    tu_result r = tu_run("%s analyze %s --trend", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "heap snapshots: 10\n"))
        fail_msg("the save lacks snapshots:\n%s", r.out);
    tu_free(&r);
}

/* The JSON entry of the trend list whose frames name fn; NULL if none. */
static char *trend_entry(const char *json, const char *fn)
{
    const char *t = strstr(json, "\"trend\":[");
    if (!t)
        return NULL;
    char want[128];
    snprintf(want, sizeof want, "\"function\":\"%s\"", fn);
    for (const char *e = strstr(t, "{\"pid\""); e; e = strstr(e + 1, "{\"pid\"")) {
        const char *next = strstr(e + 1, "{\"pid\"");
        const char *hit = strstr(e, want);
        if (hit && (!next || hit < next))
            return strndup(e, next ? (size_t)(next - e) : strlen(e));
    }
    return NULL;
}

/* Chrome's format of a window from the third periodic snapshot (text, the
 * analysis's list): the snapshots before it are out of the window, as its
 * markers and memory counters are (they were all there, points and
 * instants, before the heap track's start). */
static void chrome_from_third_snapshot(const char *trace, const char *text)
{
    const char *third = strstr(text, "snapshot:3 process ");
    const char *at = third ? strstr(third, " at ") : NULL;
    assert_non_null(at);
    double from = atof(at + 4);
    tu_result r = tu_run("%s export %s --format chrome --from %.3f -o - | python3 -c \"import json, sys\n"
                         "ev = json.load(sys.stdin)['traceEvents']\n"
                         "ev = [e for e in ev if e['name'].startswith('heap snapshot')]\n"
                         "print('snapshot_events=%%d before=%%d' %% (len(ev), sum(e['ts'] < %.0f for e in ev)))\"",
                         tu_ltr(), trace, from, from * 1e6);
    if (r.status != 0 || tu_field(r.out, "snapshot_events") < 2 || tu_field(r.out, "before") != 0)
        fail_msg("chrome's events of the snapshots from %.3f s: %s%s", from, r.out, r.err);
    tu_free(&r);
}

/* Periodic snapshots of a slow leak under bursty churn, with a cache that
 * levels off: --trend puts the leak first as a leak, the cache as a
 * plateau, and no churn stack as a leak. The snapshots start before the
 * target does: enabled after its go, on a loaded machine the first came
 * 1.2 s into its run, and one after its cache's fill (2.5 s) would see no
 * rise of it. */
static void test_trend_finds_the_slow_leak(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("trend", "10");
    enable_table(pid);
    tu_expect_ok(tu_run("%s enableperiodicsnapshot heap 1 %u", tu_ltr(), pid));
    touch("go");
    wait_for("done", 60);
    wait_gone(pid);
    const char *trace = stop("trend.ltr");
    tu_result r = tu_run("%s analyze %s --trend --top 0 --format json", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    char *leak = trend_entry(r.out, "leak_site"), *cache = trend_entry(r.out, "cache_site");
    if (!leak || !cache)
        fail_msg("no trend of leak_site or cache_site:\n%s", r.out);
    const char *first = strstr(strstr(r.out, "\"trend\":["), "{\"pid\"");
    if (strncmp(first, leak, strlen(leak)) || !strstr(leak, "\"verdict\":\"leak\"") ||
        !strstr(cache, "\"verdict\":\"plateau\"")) { /* whole: a failure's message is cut at 1 KiB or so */
        /* the trends only, on stderr: cmocka cut the whole report's text
         * at its snapshots' list (a CI run under load) */
        tu_result t = tu_run("%s analyze %s --trend | grep -v '^  snapshot:' >&2", tu_ltr(), trace);
        fprintf(stderr, "%s", t.err);
        tu_free(&t);
        fail_msg("the leak is not the first trend, a leak, or the cache not a plateau (above)");
    }
    for (int i = 0; i < 2; i++) {
        char *c = trend_entry(r.out, i ? "churn_b" : "churn_a");
        assert_non_null(c);
        if (strstr(c, "\"verdict\":\"leak\""))
            fail_msg("a churn stack called a leak: %s", c);
        free(c);
    }
    free(leak);
    free(cache);
    tu_free(&r);
    r = tu_run("%s analyze %s --trend", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "#1 leak:"));
    /* the cache's rate is its later half's: it read "plateau: +238 MiB/hour"
     * (its fill, the whole series' slope) under the leak's +17.6 MiB/hour */
    if (!strstr(r.out, " plateau: levelled off, ") || strstr(r.out, " plateau: +"))
        fail_msg("the plateau's line: %s", r.out);
    chrome_from_third_snapshot(trace, r.out);
    tu_free(&r);
    /* ltr report's page shows the snapshots and the leak's verdict first */
    /* the page beside the trace, in the test's own directory */
    r = page_drawn(trace, "-e '<pre id=\"selfcheck\"[^<]*' -e 'No heap events in this trace[^<]*'");
    /* its empty stacks table says why: the trace is snapshots alone */
    if (r.status != 77 &&
        (r.status != 0 || !strstr(r.out, "\"errors\":[]") || strstr(r.out, "\"snapshots\":0") ||
         !strstr(r.out, "\"trend\":[\"leak\"") || !strstr(r.out, "see the heap snapshots below")))
        fail_msg("the page of the snapshots' trace: %s%s", r.out, r.err);
    tu_free(&r);
}

/* A stack that falls across the snapshots: its growth is negative, said in
 * units with its sign by --trend and on ltr report's page alike (the page
 * wrote "-7903037 B": its sizes knew only positive numbers). */
static void test_trend_falling(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("shrink", "4");
    enable_and_go(pid);
    tu_expect_ok(tu_run("%s enableperiodicsnapshot heap 1 %u", tu_ltr(), pid));
    wait_for("done", 60);
    wait_gone(pid);
    const char *trace = stop("shrink.ltr");
    tu_result r = tu_run("%s analyze %s --trend", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, ": -") || !strstr(r.out, "iB/hour"))
        fail_msg("no falling trend in units: %s", r.out);
    tu_free(&r);
    r = page_drawn(trace, "-E '<td>[^<]*</td><td>[^<]*</td><td>[^<]*</td><td>shrink_site'");
    const char *row = r.out ? strstr(r.out, "<td>") : NULL; /* the growth's cell: "-1.76 GiB", sign and unit */
    if (r.status != 77 &&
        (r.status != 0 || !row || strncmp(row, "<td>-", 5) || !strchr("KMGT", row[strcspn(row, " ") + 1])))
        fail_msg("the page's trend row of shrink_site, its growth: %s%s", r.out, r.err);
    tu_free(&r);
}

/* Heap tracing and snapshots in one session. */
static void test_snapshots_with_heap_tracing(void **state)
{
    tu_expect_ok(tu_run("%s start heap heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("count", "");
    enable_and_go(pid);
    wait_for("ready", 30);
    tu_expect_ok(tu_run("%s singlesnapshot heap %u", tu_ltr(), pid));
    touch("exit");
    wait_gone(pid);
    const char *trace = stop("both.ltr");
    tu_result r = tu_run("%s dump %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(stack_lines(r.out, 37, 37000), 1);
    assert_non_null(strstr(r.out, "Ltr.Heap/Alloc"));
    tu_free(&r);
    r = tu_run("%s analyze %s --format json", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"snapshots\":[{\"name\":\"snapshot:1\""));
    assert_null(strstr(r.out, "\"allocations\":0,")); /* the heap events are analyzed too */
    tu_free(&r);
}

/* A process killed while it writes a long snapshot (2^14 stacks, tens of
 * milliseconds) leaves a trace that reads: what it holds of the snapshot is
 * whole, or said to be cut. (When the kill lands is up to the machine: the
 * assertions hold either way.) */
static void test_exit_during_snapshot(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    unsigned pid = launch("stacks", "14");
    enable_and_go(pid);
    wait_for("ready", 60);
    tu_result r = tu_run("%s singlesnapshot heap %u > %s/snap.out 2>&1 & sleep 0.012; kill -9 %u; "
                         "wait $!; echo singlesnapshot $?", tu_ltr(), pid, dir, pid);
    /* done before the kill, or told that the process exited (or was gone
     * before the request: a slow machine, a sanitized ltr) */
    if (!strstr(r.out, "singlesnapshot 0")) {
        char p[700];
        snprintf(p, sizeof p, "%s/snap.out", dir);
        char *said = tu_read_file(p);
        bool told = said && (strstr(said, "exited before it wrote its snapshot") ||
                             strstr(said, "there is no process with pid"));
        if (!told)
            fail_msg("singlesnapshot said: %s", said ? said : "(nothing)");
        free(said);
    }
    tu_free(&r);
    wait_gone(pid);
    const char *trace = stop("cut.ltr");
    r = tu_run("%s analyze %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    const char *snap = strstr(r.out, "snapshot:1 process");
    if (snap && !strstr(snap, "16385 live blocks")) { /* its blocks and the array of them */
        assert_non_null(strstr(r.out, "(cut)"));
        assert_non_null(strstr(r.out, "is cut (no end"));
        assert_null(strstr(snap, " 0 live blocks")); /* what arrived is counted */
    }
    tu_free(&r);
    r = tu_run("%s info %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

/* Clear errors, non-zero exits. */
static void test_errors(void **state)
{
    /* no session receives snapshots */
    unsigned plain = 0;
    tu_result r = tu_run("sleep 30 > /dev/null & echo $!");
    plain = (unsigned)atoi(r.out);
    tu_free(&r);
    /* the shell's child is sleep once it has run exec: an attach before that
     * met the shell's copy on its way out (a loaded machine's failure) */
    tu_expect_ok(tu_run("for i in $(seq 1000); do case $(readlink /proc/%u/exe) in */sleep) exit 0;; esac; "
                        "sleep 0.01; done; exit 1", plain));
    /* a running process without the agent gets it (issue 12's attach) */
    r = tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), plain);
    if (r.status != 0)
        fprintf(stderr, "snapshotconfig --pid %u enable: %s%s", plain, r.out, r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "the agent was loaded into it")); /* said, as ltr start --pid says it */
    tu_free(&r);
    r = tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), plain);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "loaded")); /* it has it now: nothing loaded again */
    tu_free(&r);
    r = tu_run("grep -c libltr-heap.so /proc/%u/maps", plain);
    assert_true(atoi(r.out) > 0);
    tu_free(&r);
    /* and its help says so: it said such a process must have been started
     * with 'ltr run', which sent a user to restart the service (a review's) */
    r = tu_run("%s snapshotconfig --help", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "must carry the heap agent"));
    assert_non_null(strstr(r.out, "enable loads the heap agent into\none that runs without it"));
    tu_free(&r);
    /* one that cannot be attached (statically linked) is refused with the reason */
    r = tu_run("%s < /dev/zero & p=$!; sleep 0.2; %s snapshotconfig heap --pid $p enable; s=$?; kill $p; exit $s",
               tu_test_bin("inject-static"), tu_ltr());
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "statically linked"));
    tu_free(&r);
    kill((pid_t)plain, SIGKILL);
    wait_gone(plain);
    r = tu_run("%s singlesnapshot heap %u", tu_ltr(), plain);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no process with pid"));
    tu_free(&r);

    tu_expect_ok(tu_run("%s start heapsnapshot", tu_ltr()));
    unsigned pid = launch("count", "");
    r = tu_run("%s singlesnapshot heap %u", tu_ltr(), pid);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not enabled for process"));
    tu_free(&r);
    r = tu_run("%s enableperiodicsnapshot heap 5 %u", tu_ltr(), pid);
    assert_int_equal(r.status, 1);
    tu_free(&r);
    r = tu_run("%s singlesnapshot core %u", tu_ltr(), pid);
    assert_int_equal(r.status, 2);
    tu_free(&r);
    /* what is missing is said, not only the usage */
    const char *missing[][2] = {{"singlesnapshot", "no kind of snapshot given"},
                                {"singlesnapshot heap --timeout 3", "no PID given"},
                                {"enableperiodicsnapshot heap", "no SECS given"},
                                {"enableperiodicsnapshot heap 5", "no PID given"},
                                {"disableperiodicsnapshot", "no kind of snapshot given"}};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        r = tu_run("%s %s", tu_ltr(), missing[i][0]);
        assert_int_equal(r.status, 2);
        if (!strstr(r.err, missing[i][1]))
            fail_msg("ltr %s: '%s' not said:\n%s", missing[i][0], missing[i][1], r.err);
        tu_free(&r);
    }
    tu_expect_ok(tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), pid));
    tu_expect_ok(tu_run("%s cancel", tu_ltr()));
    r = tu_run("%s singlesnapshot heap %u", tu_ltr(), pid);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "ltr start heapsnapshot"));
    tu_free(&r);
    /* by name: recorded, shown, removed; without the by-name setting new
     * processes of the name carry no agent, which is said (it printed only
     * "enabled for new processes named NAME", and a new instance then had
     * "heap snapshots are not enabled"), and what reaches a running one */
    r = tu_run("%s snapshotconfig heap --name snap-target enable", tu_ltr());
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "'ltr heaptracingconfig snap-target enable'") ||
        !strstr(r.err, "'ltr snapshotconfig heap --pid PID enable'"))
        fail_msg("the by-name setting being off not said:\n%s", r.err);
    tu_free(&r);
    r = tu_run("%s snapshotconfig heap --name snap-target", tu_ltr());
    assert_non_null(strstr(r.out, "enabled"));
    tu_free(&r);
    tu_expect_ok(tu_run("%s snapshotconfig heap --name snap-target disable", tu_ltr()));
    r = tu_run("%s snapshotconfig heap --name a/b enable", tu_ltr());
    assert_int_equal(r.status, 1);
    tu_free(&r);
    touch("go");
    touch("exit");
    wait_gone(pid);
}

/* A misspelled verb is named as the verb, not as a bad process id: after
 * '--pid P', 'enabled' was taken for a second pid and refused as "PID:
 * 'enabled' is not valid" (a new user's first try on a service). */
static void test_misspelled_verb_named(void **state)
{
    (void)state;
    unsigned me = (unsigned)getpid();
    char lines[3][64];
    snprintf(lines[0], sizeof lines[0], "--pid %u enabled", me);
    snprintf(lines[1], sizeof lines[1], "--pid %u %u on", me, me);
    snprintf(lines[2], sizeof lines[2], "--name snap-target enabled");
    for (size_t i = 0; i < 3; i++) {
        const char *line = lines[i];
        tu_result r = tu_run("%s snapshotconfig heap %s", tu_ltr(), line);
        assert_int_equal(r.status, 2);
        if (!strstr(r.err, "unknown verb '") || !strstr(r.err, "say 'enable' or 'disable'") || strstr(r.err, "PID: '"))
            fail_msg("snapshotconfig heap %s: the verb not named:\n%s", line, r.err);
        tu_free(&r);
    }
    /* a bad pid is still named as one */
    tu_result r = tu_run("%s snapshotconfig heap --pid 12x enable", tu_ltr());
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "PID: '12x' is not valid"));
    tu_free(&r);
}

/* By name: a new instance of an enabled name keeps its table from its start. */
static void test_by_name(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    tu_expect_ok(tu_run("%s snapshotconfig heap --name snap-target enable", tu_ltr()));
    unsigned pid = launch("count", "");
    touch("go");
    wait_for("ready", 30);
    tu_expect_ok(tu_run("%s singlesnapshot heap %u", tu_ltr(), pid));
    /* periodic on, then off (all processes), then snapshots disabled */
    tu_expect_ok(tu_run("%s enableperiodicsnapshot heap 3600 %u", tu_ltr(), pid));
    tu_result r = tu_run("%s snapshotconfig heap --pid %u", tu_ltr(), pid);
    assert_non_null(strstr(r.out, "a snapshot every 3600 s"));
    tu_free(&r);
    r = tu_run("%s disableperiodicsnapshot heap", tu_ltr());
    assert_int_equal(r.status, 0);
    char want[64];
    snprintf(want, sizeof want, "process %u writes no more periodic", pid);
    assert_non_null(strstr(r.out, want));
    tu_free(&r);
    tu_expect_ok(tu_run("%s snapshotconfig heap --pid %u disable", tu_ltr(), pid));
    r = tu_run("%s singlesnapshot heap %u", tu_ltr(), pid);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not enabled for process"));
    tu_free(&r);
    touch("exit");
    wait_gone(pid);
    const char *trace = stop("name.ltr");
    r = tu_run("%s dump %s", tu_ltr(), trace);
    /* the single one, the periodic one taken when it was enabled (unless
     * it was disabled before the agent's thread woke), no more */
    int n = stack_lines(r.out, 5, 500000);
    assert_true(n == 1 || n == 2);
    assert_null(strstr(r.out, "snapshot=3"));
    tu_free(&r);
}

/* Runs snap-target as dir/EXE in the session and asks whether its table is
 * kept (snapshotconfig --pid, its comm beside, which must hold comm), then
 * lets it end either way: true when it was. */
static bool kept_when_run_as(const char *exe, const char *comm)
{
    tu_result r = tu_run("%s run -- %s/%s count %s > %s/run.out 2>&1 &", tu_ltr(), dir, exe, dir, dir);
    tu_free(&r);
    wait_for("pid", 30);
    unsigned pid = pid_in("pid");
    r = tu_run("cat /proc/%u/comm; %s snapshotconfig heap --pid %u", pid, tu_ltr(), pid);
    bool enabled = r.out && strstr(r.out, comm) && strstr(r.out, "enabled");
    if (!enabled)
        fprintf(stderr, "snap-target run as %s is not enabled by its executable's name: %s%s", exe, r.out, r.err);
    tu_free(&r);
    touch("go");
    wait_for("ready", 30);
    touch("exit");
    wait_gone(pid);
    return enabled;
}

/* By name, the executable's: a program started through a link has the
 * link's name as comm (python3 -> python3.11), and its executable's file
 * name is what 'ltr start --name' and 'ltr watch --name' know it by: that
 * name enables it too (it said "disabled", its table never kept). */
static void test_by_name_of_executable(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    tu_expect_ok(tu_run("%s snapshotconfig heap --name snap-target enable", tu_ltr()));
    tu_expect_ok(tu_run("ln -s %s %s/svc-link", TARGET, dir));
    assert_true(kept_when_run_as("svc-link", "svc-link"));
}

/* By the name of an executable of 20 characters, the way ls and ps -o args
 * show it: its comm is cut at 15, and the name was refused ("15
 * characters at most") while 'ltr start --name' and 'ltr watch --name'
 * took it; the agent matches it against its executable's whole name. */
static void test_by_name_of_a_long_executable(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    tu_expect_ok(tu_run("cp %s %s/snap-target-20-chars", TARGET, dir));
    tu_expect_ok(tu_run("%s snapshotconfig heap --name snap-target-20-chars enable", tu_ltr()));
    tu_result r = tu_run("%s snapshotconfig heap --name snap-target-20-chars", tu_ltr());
    if (!r.out || !strstr(r.out, "name snap-target-20-chars: enabled"))
        fail_msg("the long name's setting: %s%s", r.out, r.err);
    tu_free(&r);
    assert_true(kept_when_run_as("snap-target-20-chars", ""));
}

/* By name: a fork child is a new process of the name, and keeps its own
 * table from its start; a prefork service's workers kept none (a review:
 * `snapshotconfig heap --pid WORKER` said disabled, only the parent wrote
 * snapshots). */
static void test_by_name_fork_child(void **state)
{
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    tu_expect_ok(tu_run("%s snapshotconfig heap --name snap-target enable", tu_ltr()));
    launch("forked", "");
    touch("go");
    wait_for("ready", 30);
    unsigned child = pid_in("child");
    tu_result r = tu_run("%s snapshotconfig heap --pid %u", tu_ltr(), child);
    if (!r.out || !strstr(r.out, "enabled"))
        fail_msg("the fork child is not enabled by its name: %s%s", r.out, r.err);
    tu_free(&r);
    r = tu_run("%s singlesnapshot heap %u --timeout 10", tu_ltr(), child);
    if (r.status != 0)
        fail_msg("no snapshot of the fork child: %s%s", r.out, r.err);
    tu_free(&r);
    touch("exit");
    wait_gone(child);
    const char *trace = stop("fork.ltr");
    r = tu_run("%s dump %s", tu_ltr(), trace);
    assert_int_equal(stack_lines(r.out, 5, 500000), 1); /* the child's count_large */
    tu_free(&r);
}

/* Waits until pid runs a program whose path ends in /NAME. */
static void wait_exe(unsigned pid, const char *name)
{
    tu_expect_ok(tu_run("for i in $(seq 1000); do case $(readlink /proc/%u/exe) in */%s) exit 0;; esac; "
                        "sleep 0.01; done; exit 1", pid, name));
}

/* A process given the agent by an attach that then execs a program
 * without it keeps its entry (the same pid) but no table: said by
 * `snapshotconfig --pid`, and a snapshot of it fails at once, where it said
 * "enabled, table kept" and every request waited out its timeout (a
 * review). */
static void test_agent_gone_after_exec(void **state)
{
    tu_result r = tu_run("cd %s && perl -e 'while (! -e \"go\") { select(undef, undef, undef, 0.02) } "
                         "exec \"sleep\", \"20\"' >/dev/null 2>&1 & echo $!", dir);
    unsigned pid = (unsigned)atoi(r.out);
    tu_free(&r);
    assert_true(pid > 0);
    /* $! is the shell's child until it has exec'd perl: the agent goes into
     * perl (an attach during that execve is test_inject's
     * test_exec_during_attach) */
    wait_exe(pid, "perl");
    r = tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), pid);
    if (r.status != 0)
        fail_msg("snapshotconfig --pid %u enable: %s%s", pid, r.out, r.err);
    tu_free(&r);
    touch("go");
    wait_exe(pid, "sleep");
    r = tu_run("%s snapshotconfig heap --pid %u", tu_ltr(), pid);
    if (!r.out || !strstr(r.out, "no longer carries the heap agent"))
        fail_msg("after the exec: %s%s", r.out, r.err);
    tu_free(&r);
    /* said at once: not "did not write its snapshot within 20000 ms" */
    r = tu_run("%s singlesnapshot heap %u --timeout 20", tu_ltr(), pid);
    assert_int_equal(r.status, 1);
    if (!r.err || !strstr(r.err, "no longer carries the heap agent"))
        fail_msg("the snapshot's failure: %s", r.err);
    tu_free(&r);
    r = tu_run("kill %u", pid);
    tu_free(&r);
}

/* A process in a pid namespace of its own (a container's), named by the
 * pid it has here: its agent knew itself by its own namespace's pid (1),
 * found no entry of its own, and `ltr singlesnapshot` said it "exited
 * before it wrote its snapshot". */
static void test_snapshot_of_a_container_process(void **state)
{
    if (!tu_pid_namespaces_allowed())
        skip();
    tu_expect_ok(tu_run("%s start heapsnapshot --filemode", tu_ltr()));
    tu_result r = tu_run("%s run -- sh -c 'unshare --pid --fork --mount-proc %s count %s & echo $! > %s/unshare; "
                         "wait' > %s/run.out 2>&1 &", tu_ltr(), TARGET, dir, dir, dir);
    tu_free(&r);
    wait_for("pid", 30);
    assert_int_equal(pid_in("pid"), 1); /* its own namespace's */
    char children[64];
    snprintf(children, sizeof children, "/proc/%u/task/%u/children", pid_in("unshare"), pid_in("unshare"));
    char *text = tu_read_file(children);
    unsigned pid = text ? (unsigned)atoi(text) : 0;
    free(text);
    assert_true(pid > 1);
    enable_and_go(pid);
    wait_for("ready", 30);
    r = tu_run("%s singlesnapshot heap %u", tu_ltr(), pid);
    if (r.status != 0 || !strstr(r.out, "wrote a heap snapshot"))
        fail_msg("singlesnapshot of %u (1 in its namespace): %s%s", pid, r.out, r.err);
    tu_free(&r);
    touch("exit");
    wait_gone(pid);
    const char *trace = stop("ns.ltr");
    r = tu_run("%s dump %s", tu_ltr(), trace);
    assert_int_equal(r.status, 0);
    assert_int_equal(stack_lines(r.out, 37, 37000), 1);
    tu_free(&r);
    r = tu_run("%s analyze %s", tu_ltr(), trace);
    char want[64];
    snprintf(want, sizeof want, "snapshot:1 process %u ", pid);
    if (r.status != 0 || !strstr(r.out, want))
        fail_msg("no '%s' in:\n%s", want, r.out);
    tu_free(&r);
}

/* A process killed and not reaped yet has empty maps: it was said to have
 * exec'd a program without the agent (test_exit_during_snapshot under load,
 * the kill landing between the request's checks: "no longer carries the
 * heap agent (it exec'd a program without it)"). A perl whose parent does
 * not reap it keeps it so. */
static void test_killed_process_did_not_exec(void **state)
{
    tu_result r = tu_run("cd %s && perl -e 'my $p = fork; if (!$p) { select(undef, undef, undef, 0.02) while 1 } "
                         "open my $f, \">\", \"child.new\"; print $f $p; close $f; rename \"child.new\", "
                         "\"child\"; sleep 60' >/dev/null 2>&1 & echo $!", dir);
    unsigned parent = (unsigned)atoi(r.out);
    tu_free(&r);
    assert_true(parent > 0);
    wait_for("child", 30);
    unsigned child = pid_in("child");
    r = tu_run("%s snapshotconfig heap --pid %u enable", tu_ltr(), child);
    if (r.status != 0)
        fail_msg("snapshotconfig --pid %u enable: %s%s", child, r.out, r.err);
    tu_free(&r);
    tu_expect_ok(tu_run("kill -9 %u; for i in $(seq 1000); do grep -q '^State:.Z' /proc/%u/status && exit 0; "
                        "sleep 0.01; done; exit 1", child, child));
    r = tu_run("%s singlesnapshot heap %u --timeout 5", tu_ltr(), child);
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "exited before it wrote its snapshot") || strstr(r.err, "exec'd"))
        fail_msg("a snapshot of a killed process: %s", r.err);
    tu_free(&r);
    r = tu_run("%s snapshotconfig heap --pid %u", tu_ltr(), child);
    if (strstr(r.out, "exec'd"))
        fail_msg("the setting of a killed process: %s", r.out);
    tu_free(&r);
    r = tu_run("kill %u", parent);
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_snapshot_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_mode_keeps_snapshots_not_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_finds_the_slow_leak, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trend_falling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshots_with_heap_tracing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_during_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misspelled_verb_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_name_of_executable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_name_of_a_long_executable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_of_stopped_said, setup, teardown),
        cmocka_unit_test_setup_teardown(test_by_name_fork_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_gone_after_exec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_of_a_container_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_process_did_not_exec, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
