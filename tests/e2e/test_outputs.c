/*
 * tests/e2e/test_outputs.c — the files ltr writes, under misuse and attack:
 * another user's symlink or file planted where a trace or its temporary
 * goes (the victim file stays untouched, the trace is a new file of mode
 * 0600), and no command overwriting an existing file without --force (stop,
 * save, start -o, record -o, export -o), a refused stop keeping its session,
 * and --force replacing files only (never a FIFO, a device, a link to one);
 * a trace into a directory that does not exist refused first, said so.
 * The planted names are in a directory the test makes, so nothing here
 * depends on fs.protected_symlinks or fs.protected_regular.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")

/* The command fails, naming the file and --force. */
static void expect_refused(tu_result r, const char *path)
{
    if (r.status == 0 || !strstr(r.err, path) || !strstr(r.err, "--force"))
        fprintf(stderr, "expected a refusal naming %s and --force, got %d:\n%s%s", path, r.status, r.out, r.err);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, path));
    assert_non_null(strstr(r.err, "--force"));
    tu_free(&r);
}

static const char *in_dir(const char *dir, const char *name)
{
    static char buf[4][512];
    static int k;
    char *out = buf[k++ % 4];
    snprintf(out, 512, "%s/%s", dir, name);
    return out;
}

static void write_text(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void assert_text(const char *path, const char *text)
{
    char *got = tu_read_file(path);
    assert_non_null(got);
    assert_string_equal(got, text);
    free(got);
}

/* A regular file (not a symlink) that only its owner can read. */
static void assert_private_file(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0);
}

static void assert_session_running(const char *name)
{
    tu_result st = tu_run("%s status --instance %s", LTR, name);
    assert_int_equal(st.status, 0);
    assert_non_null(strstr(st.out, "session '"));
    tu_free(&st);
}

/* Events of Test.Producer, into every session that enables it. */
static void produce(int events)
{
    tu_result p = tu_run("%s --threads 1 --events %d --wait-enabled 5", PRODUCER, events);
    assert_int_equal(p.status, 0);
    tu_free(&p);
}

static void assert_trace(const char *path, uint64_t events)
{
    assert_private_file(path);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    assert_int_equal(t.provider_events, events);
}

/* The file a file-mode session writes, as `ltr status` shows it. */
static void growing_file(const char *session, char *out, size_t size)
{
    tu_result st = tu_run("%s status --instance %s", LTR, session);
    assert_int_equal(st.status, 0);
    const char *p = strstr(st.out, "/");
    assert_non_null(p);
    size_t n = strcspn(p, " \n,)");
    assert_true(n < size);
    memcpy(out, p, n);
    out[n] = 0;
    tu_free(&st);
}

/* The default file-mode output used to be $TMPDIR/ltr-NAME-UID.ltr.part:
 * another user planted a symlink there (root's trace overwrote the file it
 * points to) or a file of mode 0666 (they read the trace, and kept it). */
static void test_default_output_cannot_be_planted(void **state)
{
    const char *dir = *state;
    char victim[512], old_a[512], old_b[512];
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    write_text(victim, "root only", 0600);
    snprintf(old_a, sizeof old_a, "%s/ltr-a-%u.ltr.part", dir, (unsigned)getuid());
    snprintf(old_b, sizeof old_b, "%s/ltr-b-%u.ltr.part", dir, (unsigned)getuid());
    assert_int_equal(symlink(victim, old_a), 0);
    write_text(old_b, "", 0666);
    tu_expect_ok(tu_run("%s start --instance a --filemode --provider Test.Producer", LTR));
    tu_expect_ok(tu_run("%s start --instance b --filemode --provider Test.Producer", LTR));
    produce(300);
    char grows[512];
    growing_file("a", grows, sizeof grows);
    assert_string_not_equal(grows, old_a);
    assert_private_file(grows);
    growing_file("b", grows, sizeof grows);
    assert_string_not_equal(grows, old_b);
    assert_private_file(grows);
    tu_expect_ok(tu_run("%s stop --instance a %s", LTR, in_dir(dir, "a.ltr")));
    tu_expect_ok(tu_run("%s stop --instance b %s", LTR, in_dir(dir, "b.ltr")));
    assert_text(victim, "root only");
    struct stat st;
    assert_int_equal(stat(old_b, &st), 0);
    assert_int_equal(st.st_size, 0); /* no trace data went into the planted file */
    assert_trace(in_dir(dir, "a.ltr"), 300);
    assert_trace(in_dir(dir, "b.ltr"), 300);
}

/* save wrote FILE.part, a name anyone writing the directory could plant. */
static void test_save_temporary_cannot_be_planted(void **state)
{
    const char *dir = *state;
    char victim[512];
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    write_text(victim, "root only", 0600);
    assert_int_equal(symlink(victim, in_dir(dir, "s.ltr.part")), 0);
    tu_expect_ok(tu_run("%s start --provider Test.Producer", LTR));
    produce(200);
    tu_expect_ok(tu_run("%s save %s", LTR, in_dir(dir, "s.ltr")));
    tu_expect_ok(tu_run("%s stop %s", LTR, in_dir(dir, "f.ltr")));
    assert_text(victim, "root only");
    assert_trace(in_dir(dir, "s.ltr"), 200);
    assert_trace(in_dir(dir, "f.ltr"), 200);
}

/* -o FILE where a symlink is planted: refused; --force replaces the symlink
 * itself, never the file it points to. */
static void test_start_output_symlink(void **state)
{
    const char *dir = *state;
    char victim[512], link[512];
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    snprintf(link, sizeof link, "%s", in_dir(dir, "link.ltr"));
    write_text(victim, "root only", 0600);
    assert_int_equal(symlink(victim, link), 0);
    expect_refused(tu_run("%s start --filemode --provider Test.Producer -o %s", LTR, link), link);
    tu_result st = tu_run("%s status", LTR);
    assert_non_null(strstr(st.out, "no session is running"));
    tu_free(&st);
    assert_text(victim, "root only");
    tu_expect_ok(tu_run("%s start --filemode --provider Test.Producer -o %s --force", LTR, link));
    produce(100);
    assert_private_file(link);
    tu_expect_ok(tu_run("%s stop %s", LTR, in_dir(dir, "out.ltr")));
    assert_text(victim, "root only");
    assert_trace(in_dir(dir, "out.ltr"), 100);
}

static void refuse_then_force_stop(const char *dir, const char *mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir(dir, "t.ltr"));
    write_text(path, "precious", 0644);
    tu_expect_ok(tu_run("%s start %s --provider Test.Producer", LTR, mode));
    produce(150);
    expect_refused(tu_run("%s stop %s", LTR, path), path);
    assert_text(path, "precious");
    assert_session_running("ltr"); /* the recording is not lost */
    /* A symlink at FILE counts as a file: refused too, the file it names untouched. */
    assert_int_equal(symlink(path, in_dir(dir, "l.ltr")), 0);
    expect_refused(tu_run("%s stop %s", LTR, in_dir(dir, "l.ltr")), in_dir(dir, "l.ltr"));
    assert_text(path, "precious");
    assert_session_running("ltr");
    tu_expect_ok(tu_run("%s stop --force %s", LTR, path));
    assert_trace(path, 150);
}

static void test_stop_refuses_existing_memory(void **state) { refuse_then_force_stop(*state, ""); }

static void test_stop_refuses_existing_file_mode(void **state)
{
    refuse_then_force_stop(*state, "--filemode");
}

static void test_save_refuses_existing(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir(dir, "s.ltr"));
    write_text(path, "precious", 0644);
    tu_expect_ok(tu_run("%s start --provider Test.Producer", LTR));
    produce(120);
    expect_refused(tu_run("%s save %s", LTR, path), path);
    assert_text(path, "precious");
    tu_expect_ok(tu_run("%s save --force %s", LTR, path));
    assert_trace(path, 120);
    tu_expect_ok(tu_run("%s cancel", LTR));
}

static void test_start_output_refuses_existing(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir(dir, "g.ltr"));
    write_text(path, "precious", 0644);
    expect_refused(tu_run("%s start --filemode --provider Test.Producer -o %s", LTR, path), path);
    assert_text(path, "precious");
    /* A start that fails for another reason (the name is taken) replaces nothing. */
    tu_expect_ok(tu_run("%s start", LTR));
    tu_result r = tu_run("%s start --filemode --provider Test.Producer -o %s --force", LTR, path);
    assert_int_not_equal(r.status, 0);
    tu_free(&r);
    assert_text(path, "precious");
    tu_expect_ok(tu_run("%s cancel", LTR));
    tu_expect_ok(tu_run("%s start --filemode --provider Test.Producer -o %s --force", LTR, path));
    produce(80);
    tu_expect_ok(tu_run("%s stop %s", LTR, path)); /* the file it grows in: no other file replaced */
    assert_trace(path, 80);
}

/* What is not a file, or a symlink to one, is never replaced, --force or
 * not: as root, 'export -o /dev/null --force' made /dev/null a file of
 * root's, and '-o /dev/stdout --force' took /dev/stdout's link away. A FIFO
 * and a symlink to it stand for them here. */
static void assert_fifo(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

static void expect_not_replaced(tu_result r, const char *path)
{
    if (r.status == 0 || !strstr(r.err, "--force replaces a file"))
        fprintf(stderr, "expected a refusal of %s, got %d:\n%s%s", path, r.status, r.out, r.err);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--force replaces a file"));
    tu_free(&r);
    assert_fifo(path);
}

static void test_force_replaces_files_only(void **state)
{
    const char *dir = *state;
    char fifo[512], link[512], trace[512];
    snprintf(fifo, sizeof fifo, "%s", in_dir(dir, "fifo"));
    snprintf(link, sizeof link, "%s", in_dir(dir, "stdout"));
    snprintf(trace, sizeof trace, "%s", in_dir(dir, "t.ltr"));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink(fifo, link), 0);
    expect_not_replaced(tu_run("%s start --filemode --provider Test.Producer -o %s --force", LTR, fifo), fifo);
    tu_result st = tu_run("%s status", LTR);
    assert_non_null(strstr(st.out, "no session is running"));
    tu_free(&st);
    tu_expect_ok(tu_run("%s start --provider Test.Producer", LTR));
    produce(50);
    expect_not_replaced(tu_run("%s save --force %s", LTR, fifo), fifo);
    expect_not_replaced(tu_run("%s stop --force %s", LTR, link), link);
    assert_session_running("ltr");
    tu_expect_ok(tu_run("%s stop %s", LTR, trace));
    expect_not_replaced(tu_run("%s export %s --format folded -o %s --force", LTR, trace, link), link);
    expect_not_replaced(tu_run("%s export %s --format folded -o %s", LTR, trace, fifo), fifo);
}

/* record refuses before CMD runs: a long run must not end in a refusal. */
static void test_record_and_export_refuse_existing(void **state)
{
    const char *dir = *state;
    char trace[512], ran[512], out[512], victim[512];
    snprintf(trace, sizeof trace, "%s", in_dir(dir, "r.ltr"));
    snprintf(ran, sizeof ran, "%s", in_dir(dir, "ran"));
    snprintf(out, sizeof out, "%s", in_dir(dir, "out.folded"));
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    write_text(trace, "precious", 0644);
    expect_refused(tu_run("%s record -o %s -- /bin/sh -c 'touch %s'", LTR, trace, ran), trace);
    assert_text(trace, "precious");
    assert_int_not_equal(access(ran, F_OK), 0);
    tu_result r = tu_run("%s record -o %s --force -- /bin/sh -c 'touch %s'", LTR, trace, ran);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    assert_int_equal(access(ran, F_OK), 0);
    assert_private_file(trace);

    write_text(out, "precious", 0644);
    expect_refused(tu_run("%s export %s --format folded -o %s", LTR, trace, out), out);
    assert_text(out, "precious");
    tu_expect_ok(tu_run("%s export %s --format folded -o %s --force", LTR, trace, out));
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    /* A symlink at OUT: refused, and --force replaces the link, not its target. */
    write_text(victim, "root only", 0600);
    unlink(out);
    assert_int_equal(symlink(victim, out), 0);
    expect_refused(tu_run("%s export %s --format folded -o %s", LTR, trace, out), out);
    tu_expect_ok(tu_run("%s export %s --format folded -o %s --force", LTR, trace, out));
    assert_text(victim, "root only");
    assert_private_file(out);
}

/* A trace into a directory that does not exist (or a file as its
 * directory) is refused before CMD runs or a session starts, the directory
 * named: record said the temporary's name, "creating a trace file
 * /no/dir/t.ltr.XXXXXX.part: No such file or directory", and merge "a
 * temporary file beside it". */
static void test_trace_into_no_directory(void **state)
{
    const char *dir = *state;
    char nodir[512], notdir[512], ran[512];
    snprintf(nodir, sizeof nodir, "%s", in_dir(dir, "no/such/t.ltr"));
    snprintf(notdir, sizeof notdir, "%s", in_dir(dir, "file/t.ltr"));
    snprintf(ran, sizeof ran, "%s", in_dir(dir, "ran"));
    write_text(in_dir(dir, "file"), "x", 0644);
    tu_result r = tu_run("%s record -o %s -- /bin/sh -c 'touch %s'", LTR, nodir, ran);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "its directory"));
    assert_non_null(strstr(r.err, "no/such: No such file or directory"));
    assert_null(strstr(r.err, "XXXXXX"));
    assert_int_not_equal(access(ran, F_OK), 0);
    tu_free(&r);
    r = tu_run("%s record -o %s -- true", LTR, notdir);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "/file is not a directory"));
    tu_free(&r);
    r = tu_run("%s start heap --filemode -o %s", LTR, nodir);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no/such: No such file or directory"));
    tu_free(&r);
    r = tu_run("%s status", LTR);
    assert_non_null(strstr(r.out, "no session is running"));
    tu_free(&r);
    tu_expect_ok(tu_run("cd %s && %s record -o a.ltr -- true && %s record -o b.ltr -- true", dir, LTR, LTR));
    r = tu_run("cd %s && %s merge a.ltr b.ltr -o no/such/m.ltr", dir, LTR);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "cannot create no/such/m.ltr: its directory no/such: No such file or directory"));
    tu_free(&r);
}

/* '-' as a trace's name is refused, said: other commands' -o - is standard
 * output, and record, save and merge wrote a file named '-' ("-: 2 traces
 * merged", exit 0). */
static void test_trace_to_dash_refused(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("cd %s && %s record -o - -- true", dir, LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "a trace cannot go to standard output ('-')"));
    tu_free(&r);
    tu_expect_ok(tu_run("cd %s && %s record -o a.ltr -- true && %s record -o b.ltr -- true", dir, LTR, LTR));
    r = tu_run("cd %s && %s merge a.ltr b.ltr -o -", dir, LTR);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "a trace cannot go to standard output ('-')"));
    tu_free(&r);
    tu_expect_ok(tu_run("%s start --provider Test.Producer", LTR));
    r = tu_run("cd %s && %s save -", dir, LTR);
    assert_int_equal(r.status, 2);
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel", LTR));
    assert_int_not_equal(access(in_dir(dir, "-"), F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_output_cannot_be_planted, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_trace_to_dash_refused, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_trace_into_no_directory, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_save_temporary_cannot_be_planted, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_output_symlink, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stop_refuses_existing_memory, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_stop_refuses_existing_file_mode, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_save_refuses_existing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_start_output_refuses_existing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_and_export_refuse_existing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_force_replaces_files_only, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
