/*
 * tests/e2e/test_honest.c — commands say what really happened (issue 10,
 * items 5, 6, 11..15): a stop or save that cannot write keeps the session, a
 * full disk fails the command with its errno text, memory mode's kept and
 * overwritten events apart, --pid of no process, `ltr run` with no session,
 * a command that cannot start or that a signal kills, the warnings of a
 * CSV analysis and what it cannot hold.
 */
#include "base/heap_events.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LTR tu_ltr()

/* Fails with a message on stderr that holds text. */
static void expect_fail(tu_result r, int status, const char *text)
{
    if (r.status == 0 || (status && r.status != status) || !strstr(r.err, text))
        fprintf(stderr, "expected exit %d and '%s', got %d:\n%s%s", status, text, r.status, r.out, r.err);
    assert_true(status ? r.status == status : r.status != 0);
    assert_non_null(strstr(r.err, text));
    tu_free(&r);
}

static bool exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void expect_running(bool running)
{
    tu_result st = tu_run("%s status", LTR);
    assert_int_equal(strstr(st.out, "session 'ltr'") != NULL, running);
    tu_free(&st);
}

/* Item 5: the recording survives a stop or save to a path it cannot write. */
static void test_failed_stop_keeps_session(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start --provider Test.Producer", LTR));
    tu_expect_ok(tu_run("%s --events 3000 --wait-enabled 5", tu_test_bin("ltr-test-producer")));
    expect_fail(tu_run("%s stop %s/no-such-dir/x.ltr", LTR, dir), 0, "the session is still running");
    expect_running(true);
    expect_fail(tu_run("%s save %s/no-such-dir/y.ltr", LTR, dir), 0,
                "the session is still running, as it was: save again to a writable path");
    expect_running(true);
    tu_expect_ok(tu_run("%s stop %s/final.ltr", LTR, dir));
    char path[512];
    snprintf(path, sizeof path, "%s/final.ltr", dir);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    assert_int_equal(t.provider_events, 3000);
    expect_running(false);
}

/* A 64 KB tmpfs at dir/full (the heap target's tree trace takes about 210
 * KB), or skip when mounting is not permitted. */
static bool mount_small_disk(const char *dir, char *mnt, size_t size)
{
    snprintf(mnt, size, "%s/full", dir);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0700") == 0)
        return true;
    fprintf(stderr, "skipped: cannot mount a small tmpfs to fill (%m): needs root\n");
    return false;
}

/* Item 6: a full disk fails `ltr record` and a file-mode `ltr stop`, names
 * ENOSPC and counts what it cost. */
static void test_disk_full(void **state)
{
    char mnt[512];
    if (!mount_small_disk(*state, mnt, sizeof mnt)) {
        skip();
        return;
    }
    /* nothing asserts before the unmount: a failure must not leave it mounted */
    const char *target = tu_test_bin("heap-target");
    tu_result r = tu_run("%s record -o %s/r.ltr -- %s tree", LTR, mnt, target);
    bool ok = r.status != 0 && strstr(r.err, "No space left on device") && strstr(r.err, "could not be written");
    if (!ok)
        fprintf(stderr, "record on a full disk: %d\n%s", r.status, r.err);
    tu_free(&r);
    r = tu_run("rm -f %s/* && %s start heap --filemode -o %s/f.ltr && %s run -- %s tree && %s stop %s/f.ltr",
               mnt, LTR, mnt, LTR, target, LTR, mnt);
    bool stop_ok = r.status != 0 && strstr(r.err, "ltr stop: ") && strstr(r.err, "No space left on device");
    if (!stop_ok)
        fprintf(stderr, "stop on a full disk: %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    umount2(mnt, MNT_DETACH);
    assert_true(ok);
    assert_true(stop_ok);
}

/* A file size limit (ulimit -f: 64 KiB, where the tree trace takes 210 KB)
 * below what the trace needs is a write that fails like a full disk: said once, with its errno text, and never a
 * recorder killed by SIGXFSZ. The limit also applies to the recorder's shared
 * memory, which must still be sized: `ltr start` works under a soft limit. */
static void test_file_size_limit(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("ulimit -S -f 64 && %s record -o %s/big.ltr -- %s tree", LTR, dir,
                         tu_test_bin("heap-target"));
    if (r.status != 1 || !strstr(r.err, "File too large") || !strstr(r.err, "could not be written") ||
        strstr(r.err, "no session named"))
        fprintf(stderr, "record past ulimit -f: %d\n%s", r.status, r.err);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "File too large"));
    assert_non_null(strstr(r.err, "could not be written"));
    assert_null(strstr(r.err, "no session named")); /* its own session, asked after it ended */
    tu_free(&r);
    tu_expect_ok(tu_run("ulimit -S -f 1024 && %s start heap --instance lim && %s cancel --instance lim", LTR,
                        LTR));
    /* a traced program that is the first to need the registry, under a limit
     * smaller than the registry: not killed (status 153 from the shell), its
     * registration fails and the test producer says so */
    r = tu_run("rm -f \"$LTR_RUNTIME_DIR/registry\" && ulimit -f 1 && %s --events 10",
               tu_test_bin("ltr-test-producer"));
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cannot register provider"));
    tu_free(&r);
}

/* Item 11: memory mode reports the events its trace holds, and the
 * overwritten ones apart. */
static void test_memory_counts(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s record --memory --buffers 8 --buffer-size 16 -o %s/m.ltr -- %s tree", LTR, dir,
                         tu_test_bin("heap-target"));
    assert_int_equal(r.status, 0);
    const char *p = strstr(r.err, "m.ltr (");
    assert_non_null(p);
    unsigned long long said = strtoull(p + 7, NULL, 10);
    char path[512];
    snprintf(path, sizeof path, "%s/m.ltr", dir);
    tu_trace t = tu_read_trace(path, LTR_HEAP_PROVIDER);
    assert_true(t.ok);
    assert_true(t.events_overwritten > 0);
    if (said != t.provider_events)
        fprintf(stderr, "said %llu, the trace holds %llu:\n%s", said, (unsigned long long)t.provider_events, r.err);
    assert_int_equal(said, t.provider_events);
    assert_non_null(strstr(r.err, "overwritten"));
    tu_free(&r);
}

/* A memory-mode trace of heap-target's tree, most of its events
 * overwritten, at DIR/m.ltr. */
static void record_overwritten(const char *dir)
{
    tu_expect_ok(tu_run("%s record --memory --buffers 8 --buffer-size 16 -o %s/m.ltr -- %s tree", LTR, dir,
                        tu_test_bin("heap-target")));
}

/* A CSV table has no room for the analysis's warnings: 'ltr analyze
 * --format csv' says them on stderr, as 'ltr export' does (it said nothing
 * of the events a memory-mode save had overwritten: figures of its tail
 * alone, exit 0, stderr empty). */
static void test_csv_says_what_it_lacks(void **state)
{
    const char *dir = *state;
    record_overwritten(dir);
    tu_result r = tu_run("%s analyze %s/m.ltr --format csv", LTR, dir);
    if (r.status != 0 || !strstr(r.err, "overwritten"))
        fprintf(stderr, "expected the overwritten events on stderr, got %d:\n%s", r.status, r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "pid,image,exe,"));
    assert_non_null(strstr(r.err, "older event(s) were overwritten"));
    tu_free(&r);
}

/* --trend and a difference of snapshots are not rows of the CSV table:
 * asked for with --format csv, they are refused (the table came without
 * them, exit 0); nor with --cpu, --mapped or --files. */
static void test_csv_refuses_what_it_cannot_hold(void **state)
{
    const char *dir = *state;
    record_overwritten(dir);
    expect_fail(tu_run("%s analyze %s/m.ltr --trend --format csv", LTR, dir), 2, "--trend reports as text or json");
    expect_fail(tu_run("%s analyze %s/m.ltr --from snapshot:1 --to snapshot:2 --format csv", LTR, dir), 2,
                "not csv");
    expect_fail(tu_run("%s export %s/m.ltr --from snapshot:1 --to snapshot:2 --format csv -o -", LTR, dir), 2,
                "not csv");
    /* nor are they CPU samples, mappings or files: the whole trace's were
     * reported in their place, exit 0 */
    const char *const own[] = {"--cpu", "--mapped", "--files"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        expect_fail(tu_run("%s analyze %s/m.ltr %s --from snapshot:1 --to snapshot:2", LTR, dir, own[i]), 2,
                    "not with a difference of heap snapshots");
        if (i == 0)
            expect_fail(tu_run("%s analyze %s/m.ltr --cpu --trend", LTR, dir), 2, "--cpu reports its events");
    }
}

/* A flight recorder overwrites full buffers, oldest first, while another
 * thread's older events wait in the buffer it fills: a free overwritten
 * between two kept allocations of one address is said to be among the
 * overwritten events (it read "no event was lost or came late: never
 * recorded, e.g. made where the heap agent does not see them"). */
static void test_free_among_overwritten_said(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s record --memory --buffers 8 --buffer-size 16 -o %s/o.ltr -- %s overwritten", LTR,
                         dir, tu_test_bin("heap-target"));
    assert_int_equal(r.status, 0);
    bool same = strstr(r.out, "same") != NULL;
    tu_free(&r);
    if (!same) /* the allocator gave another address: nothing to say */
        skip();
    r = tu_run("%s analyze %s/o.ltr", LTR, dir);
    if (!strstr(r.out, "among the events overwritten"))
        fprintf(stderr, "%s", r.out);
    assert_non_null(strstr(r.out, "allocated again without a free in between"));
    assert_non_null(strstr(r.out, "among the events overwritten"));
    assert_null(strstr(r.out, "no event was lost"));
    tu_free(&r);
}

/* Item 12: --pid of no process is an error (nothing started), and one
 * without the agent gets it (issue 12: attach); a pid that leaves the
 * session later is a warning of `ltr status`, with its reason. ptrace of
 * the plain process needs root here (CI runs as root). */
static void test_start_pid(void **state)
{
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    expect_fail(tu_run("%s start heap --pid %d", LTR, (int)gone), 1, "no such process");
    expect_running(false);
    if (geteuid() != 0) {
        printf("skipped the attach: ptrace of a plain process needs root here\n");
        return;
    }
    pid_t plain = tu_start_argv((char *[]){"sleep", "30", NULL}); /* not 0.1 s: past its exec */
    tu_result r = tu_run("%s start heap --pid %d", LTR, (int)plain);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "heap agent loaded"));
    tu_free(&r);
    kill(plain, SIGKILL);
    waitpid(plain, NULL, 0);
    r = tu_run("%s status", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "is not attached: "));
    assert_non_null(strstr(r.err, "is not running"));
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel", LTR));
    /* a service under a seccomp filter that refuses Unix sockets (systemd's
     * RestrictAddressFamilies=): its agent never reaches the recorder, and
     * status said it "has not allocated since the session began" of a
     * process allocating all along */
    r = tu_run("%s perl -e 'while (1) { my $x = \"a\" x 1000; select(undef, undef, undef, 0.001) }' & p=$!; "
               "sleep 0.3; %s start heap --pid $p > /dev/null && sleep 0.3 && %s status && %s stop %s/sc.ltr && "
               "%s record --pid $p --duration 1 -o %s/r.ltr; s=$?; kill $p; exit $s", tu_test_bin("ltr-test-nounix"),
               LTR, LTR, LTR, (const char *)*state, LTR, (const char *)*state);
    if (r.status != 0 || !strstr(r.err, "ltr status: warning: session 'ltr': --pid") ||
        !strstr(r.err, "runs under a seccomp filter") || strstr(r.err, "has not allocated") ||
        !strstr(r.err, "never joined it, and none of its allocations is in the trace") ||
        !strstr(r.err, "ltr record: warning: no heap events were recorded from pid"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* A command under a seccomp filter that refuses Unix sockets: its agent
 * never joins the session, and `ltr record` said its events were lost for
 * want of a free buffer, "record again with more or larger buffers", which
 * would never help (3478 of 3478 of this perl, and a Python service under
 * systemd's RestrictAddressFamilies= alike). */
static void test_record_unjoined_command(void **state)
{
    tu_result r = tu_run("%s record -o %s/nu.ltr -- %s perl -e 'my @a; push @a, \"x\" x 100 for 1..1000'", LTR,
                         (const char *)*state, tu_test_bin("ltr-test-nounix"));
    if (r.status != 0 || !strstr(r.err, "heap events were lost because their process could not join the session") ||
        strstr(r.err, "larger buffers"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* A command under a seccomp filter that refuses getpid(): its agent reaches
 * the recorder claiming pid -1, and is refused as not its process's; its
 * events were said lost as if it "never reached the recorder (... denies it
 * Unix sockets ...)" (and before that "no buffer was free"). */
static void test_record_command_without_getpid(void **state)
{
    tu_result r = tu_run("%s record -o %s/np.ltr -- %s --getpid perl -e 'my @a; push @a, \"x\" x 100 for 1..1000'",
                         LTR, (const char *)*state, tu_test_bin("ltr-test-nounix"));
    if (r.status != 0 || !strstr(r.err, "could not join the session: the recorder refused its attach, as it "
                                        "claimed pid -1: its getpid() failed") ||
        strstr(r.err, "never reached the recorder") || strstr(r.err, "larger buffers"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* A --pid that joined and then closed its connection (a daemon closing
 * every fd, the agent's high ones too: prim.h) is not attached, yet writes its events into the trace:
 * 'ltr stop' said it "never joined it, and none of its allocations is in
 * the trace" of a trace holding 3 500 of them. Each step waits for what it
 * needs: the perl runs (its file 'ready') before the attach, it allocates
 * (push and shift: a 'my $x' in a loop keeps its buffer and calls malloc
 * no more) until the session says it attached, then closes its fds (its
 * file 'closed') and the session says it no longer attached. It closed
 * after 0.6 s of its own before: an attach that took longer under load
 * (CI, load 8 to 15) came after the close into a perl that never called
 * malloc again, which never joined. */
#define UNTIL(cond) "for i in $(seq 300); do " cond " && break; sleep 0.1; done; " cond " || exit 99; "

static void test_stop_joined_then_closed(void **state)
{
    if (geteuid() != 0) {
        printf("skipped: ptrace of a plain process needs root here\n");
        return;
    }
    tu_result r = tu_run("cd %s || exit 97; perl -MPOSIX -e 'open(my $f, \">\", \"ready\"); close $f; my @a; "
                         "until (-e \"close\") { push @a, \"a\" x 1000; shift @a if @a > 50; "
                         "select(undef, undef, undef, 0.01) } "
                         "POSIX::close($_) for 3..POSIX::sysconf(POSIX::_SC_OPEN_MAX()); open($f, \">\", \"closed\"); "
                         "close $f; while (1) { push @a, \"a\" x 1000; shift @a; "
                         "select(undef, undef, undef, 0.001) }' & p=$!; trap 'kill $p' EXIT; " UNTIL("[ -e ready ]")
                         "%s start heap --filemode -o cl.ltr --pid $p > /dev/null || exit 98; "
                         UNTIL("%s status 2>/dev/null | grep -q ' 1 process attached'") "touch close; "
                         UNTIL("[ -e closed ] && %s status 2>/dev/null | grep -q ' 0 processes attached'")
                         "%s status && %s stop --no-symbols",
                         (const char *)*state, LTR, LTR, LTR, LTR, LTR, LTR, LTR);
    if (r.status != 0 || !strstr(r.out, "0 processes attached") || strstr(r.err, "never joined") ||
        strstr(r.err, "is not attached"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/cl.ltr", (const char *)*state);
    tu_trace t = tu_read_trace(path, "Ltr.Heap");
    assert_true(t.ok);
    assert_true(t.provider_events > 0); /* its events are in the trace: it joined */
}

/* Item 13: `ltr run` with no heap session is an error and runs nothing. */
static void test_run_without_session(void **state)
{
    const char *dir = *state;
    expect_fail(tu_run("%s run -- touch %s/ran", LTR, dir), 1, "ltr start heap");
    assert_false(exists(dir, "ran"));
    expect_fail(tu_run("%s run --instance nosuch -- touch %s/ran", LTR, dir), 1, "nosuch");
    assert_false(exists(dir, "ran"));
}

/* Item 14: a command that cannot start: a shell's status and message, no trace. */
static void test_record_cannot_start(void **state)
{
    const char *dir = *state;
    expect_fail(tu_run("cd %s && %s record -o a.ltr -- ./does-not-exist", dir, LTR), 127,
                "ltr record: ./does-not-exist: No such file or directory");
    assert_false(exists(dir, "a.ltr"));
    assert_false(exists(dir, "a.ltr.part"));
    expect_fail(tu_run("cd %s && touch plain && %s record -o b.ltr -- ./plain", dir, LTR), 126,
                "ltr record: ./plain: Permission denied");
    assert_false(exists(dir, "b.ltr"));
    assert_false(exists(dir, "b.ltr.part"));
    expect_running(false);
}

/* Item 15: a command killed by a signal is reported by the signal's name. */
static void test_record_killed(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s record -o %s/k.ltr -- sh -c 'kill -SEGV $$'", LTR, dir);
    assert_int_equal(r.status, 128 + SIGSEGV);
    if (!strstr(r.err, "killed by signal 11 (SIGSEGV"))
        fprintf(stderr, "%s", r.err);
    assert_non_null(strstr(r.err, "killed by signal 11 (SIGSEGV"));
    tu_free(&r);
    assert_true(exists(dir, "k.ltr"));
}

/* Shell text after `ltr record -o $o -- sleep 60 & rec=$!`: waits until the
 * session writes $o's .part and the command runs (cmd), and finds the
 * recorder's pid (recorder) by 'ltr status' (its %s: ltr). */
#define RECORDING                                                                                                 \
    "for i in $(seq 300); do ls $o.*.part >/dev/null 2>&1 && cmd=$(pgrep -P $rec -x sleep) && break; "          \
    "sleep 0.1; done; "                                                                                           \
    "recorder=$(%s status --instance record-$rec | grep -o 'recorder pid [0-9]*' | grep -o '[0-9]*$'); "

/* `systemctl stop` of a unit running `ltr record -- CMD` sends SIGTERM to
 * every process of its cgroup: ltr record, its recorder and CMD at once. The
 * session is record's to stop: the trace is written at -o, and said so (the
 * recorder ended it itself, left it at its .part, and record said "did not
 * answer", then "no session"). */
static void test_record_all_terminated(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && { o=t.ltr; %s record -o $o -- sleep 60 2>err & rec=$!; " RECORDING
                         "kill -TERM $rec $recorder $cmd; wait $rec; echo status=$?; cat err; }",
                         dir, LTR, LTR);
    if (!strstr(r.out, "trace written to"))
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_non_null(strstr(r.out, "status=143"));
    assert_non_null(strstr(r.out, "killed by signal 15 (SIGTERM"));
    assert_non_null(strstr(r.out, "trace written to"));
    assert_null(strstr(r.out, "did not answer"));
    tu_free(&r);
    assert_true(exists(dir, "t.ltr"));
    r = tu_run("%s info %s/t.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "state:       complete"));
    tu_free(&r);
    expect_running(false);
}

/* `pkill -f 'ltr record ...'` of the user's pattern: the recorder, forked
 * from ltr record, had its command line, was signalled with it and ended the
 * session itself, and record warned "the recorder reported problems". It
 * says what it is (ltr-recorder --instance NAME, one argument): only the command is hit,
 * and its trace written as after a Ctrl-C. (The pattern and the command
 * are built in the shell: written whole, they match the shell running it.) */
static void test_pkill_of_record_spares_its_recorder(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && { o=pk.ltr; %s record -o $o -- sleep 60 2>err & rec=$!; " RECORDING
                         "echo title=$(tr '\\0' ' ' </proc/$recorder/cmdline); "
                         "echo nuls=$(tr -cd '\\0' </proc/$recorder/cmdline | wc -c); "
                         "p='ltr recor'; pkill -TERM -f \"${p}d -o pk.ltr\"; wait $rec; echo status=$?; cat err; }",
                         dir, LTR, LTR);
    /* one string: the launcher's argument area after the title was read as
     * dozens of empty arguments (ps, `ltr info`) */
    if (!strstr(r.out, "title=ltr-recorder --instance record-") || !strstr(r.out, "nuls=1\n") ||
        !strstr(r.out, "trace written to") ||
        strstr(r.out, "the recorder reported problems"))
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    assert_true(exists(dir, "pk.ltr"));
}

/* A file-mode session whose -o FILE another file took while it recorded
 * (another session's 'ltr save --force' to that name): its stop moved that
 * other file to the stop's FILE and said "trace written to B.ltr (moved
 * from A.ltr ...)", its own recording lost. It is written from its own
 * file now, and said so; the other file stays, and a stop to that name
 * without --force is refused, the session going on. */
static void test_stop_after_output_taken(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start --instance a --provider Test.Producer --filemode -o %s/A.ltr", LTR, dir));
    tu_expect_ok(tu_run("%s start --instance b --provider Test.Producer", LTR));
    tu_expect_ok(tu_run("%s --events 3000 --wait-enabled 5", tu_test_bin("ltr-test-producer")));
    tu_expect_ok(tu_run("%s save --instance b --force %s/A.ltr", LTR, dir));
    expect_fail(tu_run("%s stop --instance a %s/A.ltr", LTR, dir), 0, "is no longer this session's trace");
    tu_result r = tu_run("%s stop --instance a %s/B.ltr", LTR, dir);
    if (r.status != 0 || !strstr(r.out, "from the session's own file") || strstr(r.out, "moved from"))
        fail_msg("%d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel --instance b", LTR));
    char path[512];
    snprintf(path, sizeof path, "%s/B.ltr", dir);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    assert_int_equal(t.provider_events, 3000);
    r = tu_run("%s info %s/A.ltr", LTR, dir); /* the other session's save, left as it is */
    assert_non_null(strstr(r.out, "session:     b\n"));
    tu_free(&r);
    r = tu_run("%s info %s/B.ltr", LTR, dir);
    assert_non_null(strstr(r.out, "session:     a\n"));
    tu_free(&r);
}

/* A memory-mode `ltr record` whose stop cannot write (a full disk) says
 * its session goes on, for 'ltr stop --instance record-N FILE': it does,
 * once record has ended. The recorder, finding record gone, stopped it again
 * into the same full disk and ended it unwritten, its log saying "trace
 * written to"; and record waited 10 s for a note no one would send. */
static void test_record_failed_stop_keeps_session(void **state)
{
    char mnt[512];
    if (!mount_small_disk(*state, mnt, sizeof mnt)) {
        skip();
        return;
    }
    const char *dir = *state;
    tu_result r = tu_run("%s record --memory --no-symbols -o %s/m.ltr -- %s tree >/dev/null 2>%s/err; "
                         "n=$(grep -o \"session is 'record-[0-9]*'\" %s/err | grep -o '[0-9]*'); echo n=$n; "
                         "for i in $(seq 300); do grep -q 'is gone' $LTR_RUNTIME_DIR/record-$n.log && break; "
                         "sleep 0.1; done; cat $LTR_RUNTIME_DIR/record-$n.log; "
                         "%s status --instance record-$n >/dev/null && echo running=1; "
                         "%s stop --no-symbols --instance record-$n %s/ok.ltr && echo stopped=1; cat %s/err",
                         LTR, mnt, tu_test_bin("heap-target"), dir, dir, LTR, LTR, dir, dir);
    umount2(mnt, MNT_DETACH);
    if (!strstr(r.out, "its session is 'record-") || !strstr(r.out, "running=1") || !strstr(r.out, "stopped=1") ||
        strstr(r.out, "]: trace written to")) /* the recorder's log */
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/ok.ltr", dir);
    tu_trace t = tu_read_trace(path, "Ltr.Heap");
    assert_true(t.ok && t.complete && t.provider_events > 1000);
    expect_running(false);
}

/* `ltr record` whose recorder is stopped (SIGSTOP) when its command ends:
 * the stop is not answered, record ends, and the recorder, once it runs
 * again, finds record gone and writes the trace to -o by itself: record
 * says so. It said "'ltr stop --instance record-N FILE' writes it" (or
 * nothing), after 10 s waiting for a note. */
static void test_record_with_stopped_recorder_says_where(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && { o=s.ltr; %s record -o $o -- sleep 2 2>err & rec=$!; " RECORDING
                         "kill -STOP $recorder; wait $rec; echo status=$?; kill -CONT $recorder; "
                         "for i in $(seq 300); do [ -e $o ] && break; sleep 0.1; done; cat err; }",
                         dir, LTR, LTR);
    if (!strstr(r.out, "status=1") || !strstr(r.out, "is stopped (SIGSTOP") ||
        !strstr(r.out, "/s.ltr by itself") || strstr(r.out, "its session is"))
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    r = tu_run("%s info %s/s.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "state:       complete"));
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failed_stop_keeps_session, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_disk_full, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_file_size_limit, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_memory_counts, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_csv_says_what_it_lacks, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_csv_refuses_what_it_cannot_hold, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_free_among_overwritten_said, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_pid, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stop_joined_then_closed, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_unjoined_command, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_command_without_getpid, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_run_without_session, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_cannot_start, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_killed, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_all_terminated, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_pkill_of_record_spares_its_recorder, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_failed_stop_keeps_session, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stop_after_output_taken, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_with_stopped_recorder_says_where, tu_setup_sandbox,
                                        tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
