/*
 * tests/e2e/test_heaptracingconfig.c — `ltr heaptracingconfig` and `ltr
 * start heap --name` as a user runs them: a new instance of an enabled name,
 * started by a plain exec, carries the agent dormant and is traced exactly
 * once a session enables its name (and another enabled name is not); the
 * setting leaves nothing behind; real programs give the same output with it
 * on; the refusals, a shim or agent another user could write among them
 * (the cases of tests/util/roots_alone.h, which test_boottrace runs too,
 * and the shim's own). Everything happens in a private /etc
 * (tests/util/private_etc.h) as root: the machine's /etc/ld.so.preload is
 * never touched. The setting is changed with a copy of ltr in that /etc
 * (tu_private_ltr), whose shim and agent the rule accepts wherever the
 * build tree is. Without root the tests are skipped.
 */
#include "base/heap_events.h"
#include "byname/byname.h"
#include "util/private_etc.h"
#include "util/roots_alone.h"
#include "util/testutil.h"

#include <ltr/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static int have_etc;

static int fresh(void **state)
{
    if (!have_etc)
        return 0;
    return tu_private_etc_reset() || tu_setup_sandbox(state);
}

static int done(void **state)
{
    if (!have_etc)
        return 0;
    /* targets a failed test left waiting for their go */
    tu_result r = tu_run("cd %s && for f in *.pid; do [ -f \"$f\" ] && kill -9 $(cat \"$f\") 2>/dev/null; done; true",
                         (const char *)*state);
    tu_free(&r);
    return tu_teardown_sandbox(state);
}

/* `ltr heaptracingconfig ARGS` with the private copy of ltr. */
static tu_result config(const char *args)
{
    const char *ltr = tu_private_ltr();
    assert_non_null(ltr);
    return tu_run("%s heaptracingconfig %s", ltr, args);
}

static void expect(tu_result r, int status, const char *in_err)
{
    if (r.status != status || (in_err && !strstr(r.err, in_err)))
        fail_msg("status %d (expected %d), stderr lacks '%s':\n%s%s", r.status, status, in_err ? in_err : "",
                 r.out, r.err);
    tu_free(&r);
}

/* Heap events of one size of process pid, and of any other. */
static void count(ltr_trace *t, uint64_t size, unsigned long pid, size_t *mine, size_t *others)
{
    ltr_error err;
    *mine = *others = 0;
    assert_int_equal(ltr_trace_rewind(t, &err), 0);
    const ltr_event *ev;
    while (ltr_trace_next(t, &ev, &err) == 1) {
        uint64_t v = 0;
        ltr_event_get_u64(ev, "size", &v);
        if (strcmp(ev->layout->provider->name, LTR_HEAP_PROVIDER) || strcmp(ev->layout->name, "Alloc") || v != size)
            continue;
        if (ev->pid == pid)
            ++*mine;
        else
            ++*others;
    }
}

/* The main case. This run's copy of byname-target (tu_own_program: another
 * run's byname-target is not ours to attach) and a copy of it named
 * byname-other are both enabled and both started plainly; a session enables
 * the first only. */
static void test_new_instance_traced_by_name(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state, *own, *prog = tu_own_program(dir, "byname-target", "bn", &own);
    char args[300];
    snprintf(args, sizeof args, "%s enable", own);
    expect(config(args), 0, NULL);
    expect(config("byname-other enable"), 0, NULL);
    tu_result r = tu_run("cp %s %s/byname-other && cd %s && "
                         "(%s %s > t.out & echo $! > t.pid; ./byname-other %s > o.out & echo $! > o.pid) && "
                         "i=0; while ! grep -q agent t.out o.out 2>/dev/null || [ $(cat t.out o.out | wc -l) -lt 2 ]; do "
                         "[ $i -lt 2000 ] || exit 9; sleep 0.02; i=$((i+1)); done; cat t.out o.out; "
                         "grep -c libltr-heap /proc/self/maps || true",
                         tu_test_bin("byname-target"), dir, dir, prog, dir, dir);
    assert_int_equal(r.status, 0);
    /* both carry the agent, loaded by the shim; cat (another name) does not */
    const char *first = strstr(r.out, "agent 1\n");
    if (!first || !strstr(first + 1, "agent 1\n") || strstr(r.out, "agent 0") || !strstr(r.out, "\n0\n"))
        fail_msg("the agent was not where expected:\n%s", r.out);
    tu_free(&r);
    char *tpid = NULL;
    r = tu_run("cat %s/t.pid", dir);
    tpid = strdup(r.out);
    tu_free(&r);
    unsigned long pid = strtoul(tpid, NULL, 10);
    free(tpid);
    r = tu_run("%s start heap --instance bn --filemode --name %s && %s status --instance bn", tu_ltr(), own,
               tu_ltr());
    char listed[300];
    snprintf(listed, sizeof listed, "heap tracing by name: %s\n", own);
    if (r.status != 0 || !strstr(r.out, listed))
        fail_msg("start/status: %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    r = tu_run("cd %s && touch go && while kill -0 $(cat t.pid) 2>/dev/null || kill -0 $(cat o.pid) 2>/dev/null; "
               "do sleep 0.02; done; cat t.out o.out; %s stop --instance bn %s/bn.ltr",
               dir, tu_ltr(), dir);
    if (r.status != 0 || !strstr(r.out, "done\n"))
        fail_msg("run/stop: %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    char trace[600];
    snprintf(trace, sizeof trace, "%s/bn.ltr", dir);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    size_t mine, others;
    count(t, 4321, pid, &mine, &others);
    assert_int_equal(mine, 10);
    assert_int_equal(others, 0); /* byname-other carries the agent too, but is not of the name */
    count(t, 4322, pid, &mine, &others);
    assert_int_equal(mine, 7);
    assert_int_equal(others, 0);
    ltr_trace_close(t);
    snprintf(args, sizeof args, "%s disable", own);
    expect(config(args), 0, NULL);
    expect(config("byname-other disable"), 0, NULL);
}

/* A program whose executable's name has 20 characters, as ls and ps -o args
 * show it (its comm is cut at 15): heaptracingconfig takes the whole name,
 * the new instance carries the agent, and 'ltr start heap --name' with the
 * same name traces it exactly. */
static void test_long_name_traced(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state;
    expect(config("byname-target-20-chr enable"), 0, NULL);
    tu_result r = tu_run("cp %s %s/byname-target-20-chr && cd %s && { ./byname-target-20-chr %s > t.out & echo $! > t.pid; } "
                         "&& i=0; until grep -q agent t.out || [ $i -ge 1000 ]; do sleep 0.02; i=$((i+1)); done; "
                         "cat t.out /proc/$(cat t.pid)/comm; %s start heap --instance ln --filemode --name byname-target-20-chr",
                         tu_test_bin("byname-target"), dir, dir, dir, tu_ltr());
    if (r.status != 0 || !strstr(r.out, "agent 1\nbyname-target-2\n"))
        fail_msg("the long name's instance: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    r = tu_run("cat %s/t.pid", dir);
    unsigned long pid = strtoul(r.out, NULL, 10);
    tu_free(&r);
    r = tu_run("cd %s && touch go && while kill -0 %lu 2>/dev/null; do sleep 0.02; done; %s stop --instance ln %s/ln.ltr",
               dir, pid, tu_ltr(), dir);
    tu_expect_ok(r);
    char trace[600];
    snprintf(trace, sizeof trace, "%s/ln.ltr", dir);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    size_t mine, others;
    count(t, 4321, pid, &mine, &others);
    assert_int_equal(mine, 10);
    ltr_trace_close(t);
    /* snapshotconfig takes the name ps shows (comm, cut at 15): the setting
     * reaches those processes; it warned that they carry no agent. */
    r = tu_run("%s snapshotconfig heap --name byname-target-2 enable", tu_ltr());
    if (r.status != 0 || strstr(r.err, "do not start with the heap agent"))
        fail_msg("snapshotconfig by the cut name: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    tu_expect_ok(tu_run("%s snapshotconfig heap --name byname-target-2 disable", tu_ltr()));
    expect(config("byname-target-20-chr disable"), 0, NULL);
}

/* After the last disable nothing of the setting is left, and the commands
 * say what is on and off with their exit status. */
static void test_nothing_left_after_disable(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    struct stat st;
    int had = lstat(LTR_BYNAME_PRELOAD, &st) == 0; /* the machine's own, seen through the overlay */
    char *before = had ? tu_read_file(LTR_BYNAME_PRELOAD) : NULL;
    expect(config("svc-a enable"), 0, NULL);
    tu_result r = config("");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "svc-a: enabled\n");
    tu_free(&r);
    expect(config("svc-a"), 0, NULL);
    expect(config("svc-b"), 1, NULL);
    expect(config("svc-b disable"), 1, "not enabled for 'svc-b': nothing changed");
    expect(config("svc-a disable"), 0, NULL);
    assert_int_equal(lstat(LTR_BYNAME_PRELOAD, &st) == 0, had);
    if (had) {
        char *after = tu_read_file(LTR_BYNAME_PRELOAD);
        assert_string_equal(after, before);
        free(after);
    }
    free(before);
    assert_int_not_equal(lstat(LTR_BYNAME_DIR, &st), 0);
    r = tu_run("ls -A %s/../lib >/dev/null; ls -a /etc | grep -c 'ld.so.preload.\\|^ltr' || true", tu_ltr());
    assert_string_equal(r.out, "0\n"); /* no temporaries either */
    tu_free(&r);
    expect(config("svc-a"), 1, NULL);
}

/* Concurrent enables and disables take turns: every name is in, then none. */
static void test_concurrent_changes(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    const char *ltr = tu_private_ltr();
    assert_non_null(ltr);
    tu_result r = tu_run("for i in 1 2 3 4 5 6 7 8; do %s heaptracingconfig n$i enable >/dev/null & done; wait; "
                         "%s heaptracingconfig | sort | tr '\\n' ' '; grep -c libltr-byname /etc/ld.so.preload",
                         ltr, ltr);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "n1: enabled n2: enabled n3: enabled n4: enabled n5: enabled n6: enabled "
                               "n7: enabled n8: enabled 1\n");
    tu_free(&r);
    r = tu_run("for i in 1 2 3 4 5 6 7 8; do %s heaptracingconfig n$i disable >/dev/null & done; wait; "
               "%s heaptracingconfig; ls /etc/ltr 2>/dev/null; cat /etc/ld.so.preload 2>/dev/null",
               ltr, ltr);
    assert_string_equal(r.out, "heap tracing by name: no name enabled\n");
    tu_free(&r);
}

/* Real programs of other names (and python3 of its own name, with the agent
 * dormant in it) print the same and exit the same with the setting on. */
static void test_real_programs_unaffected(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    const char *run = "cd $TMPDIR && /usr/bin/python3 -c 'import sys; print(sum(range(1000)), sys.argv)' a; echo $?; "
                      "perl -e 'my %h = map { $_ => $_ * 2 } 1..100; print scalar(keys %h), \"\\n\"; exit 3'; echo $?; "
                      "git --version; git -C / rev-parse 2>&1; echo $?; "
                      "bash -c 'echo $((6 * 7)); exit 4'; echo $?; "
                      "printf 'int main(void){return 5;}' > p.c && gcc -o p p.c && ./p; echo $?; gcc --version | head -1";
    tu_result off = tu_run("%s", run);
    expect(config("byname-target enable"), 0, NULL);
    expect(config("python3.11 enable"), 0, NULL);
    tu_result on = tu_run("%s; grep -q libltr-byname /proc/self/maps && echo shim", run);
    assert_int_equal(on.status, off.status);
    assert_string_equal(on.err, off.err);
    size_t n = strlen(off.out);
    assert_memory_equal(on.out, off.out, n);
    assert_string_equal(on.out + n, "shim\n"); /* and the shim was there */
    tu_free(&off);
    tu_free(&on);
    expect(config("python3.11 disable"), 0, NULL);
    expect(config("byname-target disable"), 0, NULL);
}

static void test_refusals(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    expect(tu_run("setpriv --reuid=65534 --regid=65534 --clear-groups %s heaptracingconfig svc enable", tu_ltr()), 1,
           "needs root");
    expect(config("/usr/sbin/svc enable"), 2, "is a path: give the executable's file name only, e.g. 'svc'");
    expect(config("'' enable"), 2, "the NAME is empty");
    expect(config("svc frob"), 2, "unknown verb 'frob'");
    expect(config("svc enable extra"), 2, "usage:");
    expect(config("--bogus"), 2, "unknown option");
    expect(tu_run("%s start heap --name a/b", tu_ltr()), 2, "--name: 'a/b' is a path");
    expect(tu_run("%s start --name svc", tu_ltr()), 2, "no profile here traces the heap");
    struct stat st;
    assert_int_not_equal(lstat(LTR_BYNAME_DIR, &st), 0); /* nothing was changed */
    tu_result r = config("--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: ltr heaptracingconfig [NAME [enable|disable]]"));
    assert_non_null(strstr(r.out, "What it costs: every new dynamically linked process"));
    assert_non_null(strstr(r.out, "32-bit programs print"));
    assert_non_null(strstr(r.out, "To undo it,\ndisable every name"));
    assert_non_null(strstr(r.out, "--disable-all removes the setting"));
    tu_free(&r);
    r = tu_run("%s help heaptracingconfig", tu_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, LTR_BYNAME_PRELOAD));
    tu_free(&r);
}

/* Nothing of the setting is there: the refused enable changed nothing. */
static void expect_unchanged(const char *what)
{
    struct stat st;
    char *preload = tu_read_file(LTR_BYNAME_PRELOAD);
    if (lstat(LTR_BYNAME_DIR, &st) == 0 || (preload && strstr(preload, "libltr-byname")))
        fail_msg("%s: the setting was changed", what);
    free(preload);
}

/* stdout holds no control character but its newlines (nor a byte beyond
 * ASCII: this test's names have none). */
static void expect_printable(const tu_result *r)
{
    for (const char *c = r->out; *c; c++)
        if (((unsigned char)*c < ' ' || (unsigned char)*c >= 0x7f) && *c != '\n')
            fail_msg("a control character (0x%02x) in:\n%s", (unsigned char)*c, r->out);
}

/* A names file edited by hand, and the way out of each (session 34's
 * attacker review). One larger than the shim reads made every command fail
 * with "File too large", disable too: it lists its names as not enabled,
 * their disable works, and --disable-all removes the setting whatever the
 * file holds. */
static void test_names_file_too_large_way_out(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    expect(config("svc enable"), 0, NULL);
    tu_result r = tu_run("head -c 17000 /dev/zero | tr '\\0' '#' >> %s", LTR_BYNAME_NAMES);
    tu_free(&r);
    r = config("");
    if (r.status != 0 || !strstr(r.out, "svc: listed, not enabled\n") || !strstr(r.out, "more than the 16640 the "
        "shim reads") || !strstr(r.out, "'ltr heaptracingconfig --disable-all' removes the setting"))
        fail_msg("the listing of a file too large: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    expect(config("svc"), 1, NULL);
    expect(config("svc disable"), 0, NULL);
    expect_unchanged("the last name of a file too large disabled");

    expect(config("svc enable"), 0, NULL);
    r = tu_run("printf 'a b\\n' > %s; %s heaptracingconfig --disable-all", LTR_BYNAME_NAMES, tu_private_ltr());
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "heap tracing by name is off: no name is left, " LTR_BYNAME_PRELOAD " is as it "
                               "was, " LTR_BYNAME_DIR "'s files are removed\n");
    tu_free(&r);
    expect_unchanged("--disable-all");
    r = config("--disable-all");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "heap tracing by name was off already: nothing changed\n");
    tu_free(&r);
}

/* 'foo\r' was listed as enabled and could not be disabled, and such lines
 * left alone kept the shim in every process; a line of control characters
 * was listed raw on the terminal. */
static void test_names_file_lines_that_name_nothing(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    expect(config("svc enable"), 0, NULL);
    tu_result r = tu_run("printf 'svc\\nfoo\\r\\n  bar\\n\\033]0;owned\\007\\nx\\302\\2332J\\n' > %s", LTR_BYNAME_NAMES);
    tu_free(&r);
    r = config("");
    expect_printable(&r);
    if (r.status != 0 || !strstr(r.out, "foo: enabled\nbar: enabled\n") ||
        !strstr(r.out, "'?]0;owned?': matches no process: it holds a space or a control character\n") ||
        !strstr(r.out, "'x?2J': matches no process: it is not UTF-8 text"))
        fail_msg("the listing of hand-edited lines: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    expect(config("foo disable"), 0, NULL);
    expect(config("bar disable"), 0, NULL);
    r = tu_run("printf 'svc\\na b\\n' > %s; %s heaptracingconfig svc disable", LTR_BYNAME_NAMES, tu_private_ltr());
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no name is left"));
    tu_free(&r);
    expect_unchanged("the last name disabled, with lines that match nothing");
}

/* A name ltr cannot print as it is was enabled, and listed raw. */
static void test_names_not_printable_refused(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    expect(config("$(printf 'caf\\351') enable"), 2, "the NAME 'caf?' is not UTF-8 text");
    expect(config("$(printf 'x\\302\\2332J') enable"), 2, "the NAME 'x?2J' is not UTF-8 text");
    expect_unchanged("names refused");
}

/* --disable-all with anything else was refused as an "unknown option
 * '--disable-all'", the one option it has. */
static void test_disable_all_alone(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    expect(config("--disable-all svc"), 2, "--disable-all takes nothing else: 'svc' too");
    expect(config("svc --disable-all"), 2, "--disable-all takes nothing else: 'svc' too");
    expect_unchanged("--disable-all with more");
}

/* After a case: an accepted enable is disabled, and either way nothing of
 * the setting is left. */
static void setting_undone(const roots_alone_case *c)
{
    if (!c->refusal)
        expect(tu_run(ROOTS_ALONE_BASE "/t/bin/ltr heaptracingconfig svc disable"), 0, NULL);
    expect_unchanged(c->what);
}

/* The shim goes into every process of the machine (/etc/ld.so.preload), and
 * the agent into every one of an enabled name: copies of files that another
 * user could change are refused, and nothing is changed. Case by case:
 * tests/util/roots_alone.h's cases, the ones `ltr boottrace` is tested
 * with, and the shim's own; then an agent in a directory under /tmp
 * ($LTR_HEAP_AGENT may lead anywhere), where every user may write. */
static void test_sources_not_roots_alone_refused(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state;
    static const roots_alone_case own[] = {
        {"the shim another user's", "chown 65534 t/lib/libltr-byname.so",
         "@/t/lib/libltr-byname.so belongs to nobody, not root"},
        {"the shim writable by every user", "chmod 0666 t/lib/libltr-byname.so",
         "@/t/lib/libltr-byname.so may be written by the members of group root and every user"},
    };
    char msg[4096];
    if (roots_alone_run_cases(own, sizeof own / sizeof *own, "heaptracingconfig svc enable",
                              "only root may write what is loaded into every process", setting_undone, msg,
                              sizeof msg))
        fail_msg("%s", msg);

    struct stat st;
    if (stat("/tmp", &st) == 0 && (st.st_mode & 01777) == 01777 && st.st_uid == 0) {
        tu_result r = tu_run("cp -P %s/lib/*.so %s/ && LTR_HEAP_AGENT=%s/libltr-heap.so %s heaptracingconfig svc "
                             "enable", TU_PRIVATE_INSTALL, dir, dir, tu_private_ltr());
        if (r.status != 1 || !strstr(r.err, "/tmp is a directory every user may write (sticky"))
            fail_msg("an agent under /tmp: status %d\n%s%s", r.status, r.out, r.err);
        tu_free(&r);
        expect_unchanged("an agent under /tmp");
    }
}

/* `ltr start heap --name` without the setting: it says new processes will
 * not carry the agent, attaches the running one (started plainly, no agent;
 * this run's own copy, not another run's byname-target, which its start
 * would attach too), whose allocations from then on are in the trace, exactly. */
static void test_start_by_name_attaches_running(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state, *own, *prog = tu_own_program(dir, "byname-target", "bn", &own);
    tu_result r = tu_run("cd %s && { %s %s > t.out & echo $! > t.pid; } && "
                         "i=0; until grep -q agent t.out || [ $i -ge 1000 ]; do sleep 0.02; i=$((i+1)); done; "
                         "cat t.out; %s start heap --instance w --filemode --name %s",
                         dir, prog, dir, tu_ltr(), own);
    char said[400];
    snprintf(said, sizeof said, "--name %s: new processes of this name do not start with the heap agent: "
             "'ltr heaptracingconfig %s enable'", own, own);
    if (r.status != 0 || !strstr(r.out, "agent 0\n") || !strstr(r.err, said) || strstr(r.err, "not attached"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    unsigned long pid = strtoul(strstr(r.out, "pid ") + 4, NULL, 10);
    char loaded[128];
    snprintf(loaded, sizeof loaded, "pid %lu (%s): heap agent loaded", pid, own);
    assert_non_null(strstr(r.out, loaded));
    tu_free(&r);
    r = tu_run("cd %s && touch go && while kill -0 %lu 2>/dev/null; do sleep 0.02; done; cat t.out; "
               "%s stop --instance w %s/w.ltr", dir, pid, tu_ltr(), dir);
    if (r.status != 0 || !strstr(r.out, "done\n"))
        fail_msg("run/stop: %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    char trace[600];
    snprintf(trace, sizeof trace, "%s/w.ltr", dir);
    ltr_trace *t;
    ltr_error err;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    size_t mine, others;
    count(t, 4321, pid, &mine, &others);
    assert_int_equal(mine, 10);
    count(t, 4322, pid, &mine, &others);
    assert_int_equal(mine, 7);
    ltr_trace_close(t);
}

/* A running instance that carries the agent in a mount namespace of its own,
 * where its runtime directory is another one of the same name (systemd's
 * PrivateTmp= for a user whose runtime directory is /tmp/ltr-UID): 'ltr start
 * heap --name' and 'ltr watch --name' say it cannot reach it; they said
 * nothing, the session recorded nothing ("0 processes attached"). */
static void test_start_by_name_other_namespace_said(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state, *own, *prog = tu_own_program(dir, "byname-target", "bn", &own);
    char args[300];
    snprintf(args, sizeof args, "%s enable", own);
    expect(config(args), 0, NULL);
    expect(tu_run("cd %s && mkdir -p -m 700 \"$LTR_RUNTIME_DIR\" && { unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs \"$LTR_RUNTIME_DIR\" && "
                  "exec %s %s' > t.out & echo $! > t.pid; } && i=0; while ! grep -q agent t.out 2>/dev/null; do "
                  "[ $i -lt 2000 ] || exit 9; sleep 0.02; i=$((i+1)); done; grep -q 'agent 1' t.out || exit 8; "
                  "%s start heap --instance ns --name %s; s=$?; %s cancel --instance ns; exit $s",
                  dir, prog, dir, tu_ltr(), own, tu_ltr()),
           0, "runs in a mount namespace of its own");
    /* and 'ltr watch --name' (it waited "for the heap agent to join" for good) */
    expect(tu_run("timeout -s INT 3 %s watch --name %s --record-to %s/w.ltr --private-bytes-above 100G "
                  "--interval 0.2 2>&1 | grep -m1 'runs in a mount namespace of its own' >&2",
                  tu_ltr(), own, dir),
           0, "cannot join the session");
}

/* `ltr start heap --name N` where no executable is N but a process that ps
 * calls N runs (started through a link: python3 -> python3.11): said, with
 * the name that traces it (nothing was said, nothing of it recorded). */
static void test_start_by_name_of_a_link_said(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && ln -s /bin/sleep napper-%d && { ./napper-%d 30 & echo $! > n.pid; } && "
                         "sleep 0.2 && %s start heap --instance n --name napper-%d; s=$?; %s cancel --instance n; "
                         "kill $(cat n.pid); exit $s", dir, (int)getpid(), (int)getpid(), tu_ltr(), (int)getpid(),
                         tu_ltr());
    if (r.status != 0 || !strstr(r.err, "runs sleep: --name sleep traces it"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
}

/* Root's service of an enabled name whose workers become another user
 * (nobody) after the agent mapped root's registry: when root's session
 * and one of nobody's, of the same name, both run, a worker joins
 * neither: nobody's (where a worker looking in nobody's runtime directory
 * went, its events and stacks given to that user) nor root's, whose trace
 * counted every event of the workers lost (the warning of a false leak). */
static void test_workers_of_another_user_join_neither(void **state)
{
    if (!have_etc)
        skip();
    const char *dir = *state, *own, *prog = tu_own_program(dir, "byname-target", "bw", &own);
    const char *ltr = tu_private_ltr();
    assert_non_null(ltr);
    char args[300], nb[64];
    snprintf(args, sizeof args, "%s enable", own);
    expect(config(args), 0, NULL);
    snprintf(nb, sizeof nb, "/tmp/ltr-bw-%d", (int)getpid());
    tu_result r = tu_run("set -e; rm -rf %s; mkdir -m 700 %s; chown 65534:65534 %s; cd %s; "
                         "{ %s %s 65534 %s > t.out & echo $! > t.pid; }; "
                         "i=0; until grep -q agent t.out || [ $i -ge 1000 ]; do sleep 0.02; i=$((i+1)); done; "
                         "setpriv --reuid=65534 --regid=65534 --clear-groups env -i ASAN_OPTIONS=\"$ASAN_OPTIONS\" LTR_RUNTIME_DIR=%s TMPDIR=%s "
                         "%s start heap --instance bw --filemode; "
                         "%s start heap --instance bw --filemode --name %s; "
                         "touch go; while kill -0 $(cat t.pid) 2>/dev/null; do sleep 0.02; done; cat t.out; "
                         "setpriv --reuid=65534 --regid=65534 --clear-groups env -i ASAN_OPTIONS=\"$ASAN_OPTIONS\" LTR_RUNTIME_DIR=%s TMPDIR=%s "
                         "%s stop --instance bw %s/bw.ltr; %s stop --instance bw %s/bw.ltr",
                         nb, nb, nb, dir, prog, dir, nb, nb, nb, ltr, ltr, own, nb, nb, ltr, nb, ltr, dir);
    if (r.status != 0 || !strstr(r.out, "agent 1\n") || !strstr(r.out, "done\n") || strstr(r.out, "worker")) {
        tu_result gone = tu_run("rm -rf %s", nb);
        tu_free(&gone);
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    }
    tu_free(&r);
    char trace[600];
    snprintf(trace, sizeof trace, "%s/bw.ltr", nb);
    ltr_trace *t;
    ltr_error err;
    size_t mine, others;
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    count(t, 4323, 0, &mine, &others);
    ltr_trace_close(t);
    r = tu_run("%s analyze %s/bw.ltr; rm -rf %s", ltr, dir, nb);
    /* the analysis's loss warnings, not any "lost" (a checkout under /tmp/lostcount failed on its paths) */
    bool lost = strstr(r.out, " were lost while recording") || strstr(r.out, " lost ") ||
                strstr(r.err, " were lost while recording");
    if (others || r.status != 0 || lost || !strstr(r.out, "1 process(es)"))
        fail_msg("nobody's session took %zu of a root worker's allocations; root's trace:\n%s%s", others, r.out,
                 r.err);
    tu_free(&r);
    snprintf(trace, sizeof trace, "%s/bw.ltr", dir);
    assert_int_equal(ltr_trace_open(trace, &t, &err), 0);
    count(t, 4321, 0, &mine, &others);
    assert_int_equal(others, 10); /* the service itself */
    count(t, 4324, 0, &mine, &others);
    assert_int_equal(others, 0);
    ltr_trace_close(t);
    snprintf(args, sizeof args, "%s disable", own);
    expect(config(args), 0, NULL);
}

/* A process that read /etc/ld.so.preload with the shim's line just before
 * the last disable took it out opens the shim after (made to wait 0.3 s
 * there, by strace's delay): it starts as it would have, silent. The shim
 * was removed at once, and the loader printed "ERROR: ld.so: object ...
 * cannot be preloaded" on its stderr. */
static void test_start_during_last_disable_silent(void **state)
{
    const char *dir = *state;
    if (!have_etc)
        skip();
    tu_result r = tu_run("strace -V >/dev/null 2>&1");
    int no_strace = r.status;
    tu_free(&r);
    if (no_strace)
        skip();
    expect(config("svc-d enable"), 0, NULL);
    r = tu_run("cd %s && { strace -o st.out -P %s -e trace=openat -e inject=openat:delay_enter=300000 /bin/true "
               "2> true.err & }; i=0; until grep -q libltr-byname st.out 2>/dev/null || [ $i -ge 1000 ]; do sleep 0.01; "
               "i=$((i+1)); done; %s heaptracingconfig svc-d disable >/dev/null; wait; cat true.err st.out",
               dir, LTR_BYNAME_SHIM, tu_private_ltr());
    if (r.status != 0 || strstr(r.out, "ERROR") || !strstr(r.out, "(DELAYED)"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    expect_unchanged("the last disable");
}

int main(void)
{
    have_etc = tu_private_etc() == 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_instance_traced_by_name, fresh, done),
        cmocka_unit_test_setup_teardown(test_long_name_traced, fresh, done),
        cmocka_unit_test_setup_teardown(test_nothing_left_after_disable, fresh, done),
        cmocka_unit_test_setup_teardown(test_concurrent_changes, fresh, done),
        cmocka_unit_test_setup_teardown(test_real_programs_unaffected, fresh, done),
        cmocka_unit_test_setup_teardown(test_refusals, fresh, done),
        cmocka_unit_test_setup_teardown(test_sources_not_roots_alone_refused, fresh, done),
        cmocka_unit_test_setup_teardown(test_start_by_name_attaches_running, fresh, done),
        cmocka_unit_test_setup_teardown(test_start_by_name_other_namespace_said, fresh, done),
        cmocka_unit_test_setup_teardown(test_start_by_name_of_a_link_said, fresh, done),
        cmocka_unit_test_setup_teardown(test_workers_of_another_user_join_neither, fresh, done),
        cmocka_unit_test_setup_teardown(test_start_during_last_disable_silent, fresh, done),
        cmocka_unit_test_setup_teardown(test_names_file_too_large_way_out, fresh, done),
        cmocka_unit_test_setup_teardown(test_names_file_lines_that_name_nothing, fresh, done),
        cmocka_unit_test_setup_teardown(test_names_not_printable_refused, fresh, done),
        cmocka_unit_test_setup_teardown(test_disable_all_alone, fresh, done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
