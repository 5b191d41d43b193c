/*
 * tests/e2e/test_rundir.c — the runtime directory under attack, and what
 * recorders leave in it: a symbolic link planted as the runtime directory, a
 * directory another user created first, a swap of the directory while in use;
 * no log or socket left by a clean or a killed recorder, and a log kept and
 * named when something went wrong (a full disk); a killed recorder's
 * session shown by `ltr status` with its partial trace, until forgotten.
 * The other-user cases need root (to act as the other user); they are skipped
 * otherwise.
 */
#include "util/testutil.h"
#include "prim/prim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")
#define NOBODY 65534

/* Entries of a directory other than . and .., one per line, and how many. */
static int list_dir(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    out[0] = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s\n", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

static long recorder_pid(const char *session) { return tu_session_pid(session, "recorder pid "); }

/* Gone: no such process, or a zombie (its files, and locks, are closed). */
static bool process_gone(long pid) { return !ltr_pid_alive((pid_t)pid); }

/* Kills a session's recorder with SIGKILL and waits until it is gone. */
static void kill_recorder(const char *session)
{
    long pid = recorder_pid(session);
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    for (double end = tu_now_s() + 30; !process_gone(pid); usleep(20000))
        assert_true(tu_now_s() < end);
}

/* ---- item 2: the runtime directory ------------------------------------ */

/* A symbolic link planted where the runtime directory goes is not followed,
 * even to a directory of ours: the message names it and the way out. */
static void test_symlink_is_refused(void **state)
{
    const char *dir = *state;
    char target[512], link[512], listing[1024];
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link, sizeof link, "%s/run", dir);
    assert_int_equal(mkdir(target, 0700), 0);
    assert_int_equal(symlink(target, link), 0);
    if (geteuid() == 0)
        assert_int_equal(lchown(link, NOBODY, NOBODY), 0); /* planted by another user */
    tu_result r = tu_run("%s status", LTR);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "symbolic link"));
    assert_non_null(strstr(r.err, "LTR_RUNTIME_DIR"));
    if (geteuid() == 0)
        assert_non_null(strstr(r.err, "nobody"));
    tu_free(&r);
    r = tu_run("%s start --instance s", LTR);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "symbolic link"));
    tu_free(&r);
    /* Nothing went through the link. */
    assert_int_equal(list_dir(target, listing, sizeof listing), 0);
}

/* A directory another user made first is refused with its owner named and
 * the way out given. */
static void test_foreign_directory_is_refused(void **state)
{
    const char *dir = *state;
    if (geteuid() != 0) {
        skip();
    }
    char run[512];
    snprintf(run, sizeof run, "%s/run", dir);
    assert_int_equal(mkdir(run, 0700), 0);
    assert_int_equal(chown(run, NOBODY, NOBODY), 0);
    tu_result r = tu_run("%s status", LTR);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "LTR_RUNTIME_DIR")); /* the way out */
    assert_non_null(strstr(r.err, "belongs to nobody"));
    tu_free(&r);
}

/* The /tmp fallback: a name another user holds (a directory, or a link to a
 * directory of ours) makes ltr use a private directory of its own, the same
 * one for every process, recorded in the home directory. */
static void test_tmp_squatter_is_bypassed(void **state)
{
    const char *dir = *state;
    if (geteuid() != 0) {
        skip();
    }
    char tmp[512], home[512], squat[600], mine[512], rec[600], out[4096], again[4096];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    snprintf(home, sizeof home, "%s/home", dir);
    snprintf(mine, sizeof mine, "%s/mine", dir);
    assert_int_equal(mkdir(tmp, 0777), 0);
    assert_int_equal(chmod(tmp, 01777), 0);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(mkdir(mine, 0700), 0);
    ltr_rundir_places p = {.tmp = tmp, .home = home, .user_dir = "/nonexistent", .system_dir = "/nonexistent"};
    struct stat st, mine_st;
    assert_int_equal(stat(mine, &mine_st), 0);
    for (int kind = 0; kind < 2; kind++) {
        snprintf(squat, sizeof squat, "%s/ltr-0", tmp);
        if (kind == 0) {
            assert_int_equal(mkdir(squat, 0700), 0);
            assert_int_equal(chown(squat, NOBODY, NOBODY), 0);
        } else {
            assert_int_equal(symlink(mine, squat), 0);
            assert_int_equal(lchown(squat, NOBODY, NOBODY), 0);
        }
        ltr_error err;
        int fd = ltr_runtime_dir_in(&p, out, sizeof out, &err);
        if (fd < 0)
            fprintf(stderr, "%s\n", err.msg);
        assert_true(fd >= 0);
        assert_int_equal(err.code, 0);
        assert_non_null(strstr(err.msg, "ltr uses"));
        assert_non_null(strstr(err.msg, "nobody"));
        assert_int_equal(strncmp(out, squat, strlen(squat)), 0);
        assert_int_equal(out[strlen(squat)], '-'); /* /tmp/ltr-0-XXXXXX, not the squatter's */
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISDIR(st.st_mode) && st.st_uid == 0 && (st.st_mode & 0777) == 0700);
        assert_false(st.st_ino == mine_st.st_ino && st.st_dev == mine_st.st_dev);
        close(fd);
        /* The same directory, found again through the record. */
        fd = ltr_runtime_dir_in(&p, again, sizeof again, &err);
        assert_true(fd >= 0);
        close(fd);
        assert_string_equal(out, again);
        snprintf(rec, sizeof rec, "%s/.ltr-runtime-dir", home);
        char *recorded = tu_read_file(rec);
        assert_non_null(recorded);
        assert_string_equal(recorded, out);
        free(recorded);
        /* Without a home to record it in, the way out is named. */
        ltr_rundir_places homeless = p;
        homeless.home = NULL;
        assert_true(ltr_runtime_dir_in(&homeless, out, sizeof out, &err) < 0);
        assert_non_null(strstr(err.msg, "LTR_RUNTIME_DIR"));
        assert_int_equal(remove(squat), 0);
        assert_int_equal(unlink(rec), 0);
        assert_int_equal(rmdir(again), 0);
    }
}

/* The same through the command, as a user with no runtime directory of
 * their own (nobody, whose default is /tmp/ltr-65534), when root holds it. */
static void test_tmp_squatter_command(void **state)
{
    const char *dir = *state;
    if (geteuid() != 0) {
        skip();
    }
    char squat[64], home[512], rec[600], listing[4096];
    snprintf(squat, sizeof squat, "/tmp/ltr-%d", NOBODY);
    struct stat st;
    if (lstat(squat, &st) == 0) {
        print_message("%s exists already: skipped\n", squat);
        skip();
    }
    snprintf(home, sizeof home, "%s/home", dir);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(chown(home, NOBODY, NOBODY), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(mkdir(squat, 0700), 0); /* root squats nobody's name */
    tu_result r = tu_run("setpriv --reuid=%d --regid=%d --clear-groups env -u LTR_RUNTIME_DIR "
                         "-u XDG_RUNTIME_DIR HOME=%s %s status", NOBODY, NOBODY, home, LTR);
    /* start says it too, where its session goes (only status did: a review) */
    tu_result s = tu_run("cd / && setpriv --reuid=%d --regid=%d --clear-groups env -u LTR_RUNTIME_DIR "
                         "-u XDG_RUNTIME_DIR HOME=%s sh -c '%s start --instance sq --buffers 4 && %s cancel "
                         "--instance sq'", NOBODY, NOBODY, home, LTR, LTR);
    snprintf(rec, sizeof rec, "%s/.ltr-runtime-dir", home);
    FILE *f = fopen(rec, "r");
    size_t n = f ? fread(listing, 1, sizeof listing - 1, f) : 0;
    listing[n] = 0;
    if (f)
        fclose(f);
    if (listing[0] == '/') { /* nobody's private directory: theirs to remove, ours to clean */
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", listing);
        assert_int_equal(system(cmd), 0);
    }
    rmdir(squat);
    if (r.status != 0)
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no session is running"));
    assert_non_null(strstr(r.err, "ltr uses /tmp/ltr-65534-"));
    assert_non_null(strstr(r.err, "belongs to root"));
    tu_free(&r);
    if (s.status != 0 || !strstr(s.err, "ltr start: ") || !strstr(s.err, "ltr uses /tmp/ltr-65534-"))
        fail_msg("start as nobody beside a squatted directory (status %d):\n%s%s", s.status, s.out, s.err);
    tu_free(&s);
}

/* The directory is checked once, then used through its fd: renaming it away
 * and planting a link to another directory in its place does not redirect a
 * connection to the other directory's socket. */
static void test_swap_during_use(void **state)
{
    const char *dir = *state;
    char run[512], moved[512], evil[512], out[4096];
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(moved, sizeof moved, "%s/moved", dir);
    snprintf(evil, sizeof evil, "%s/evil", dir);
    assert_int_equal(mkdir(evil, 0700), 0);
    ltr_rundir_places p = {.explicit_dir = run};
    ltr_error err;
    int dirfd = ltr_runtime_dir_in(&p, out, sizeof out, &err);
    assert_true(dirfd >= 0);
    /* Each directory gets a listening socket of the same name. */
    int listener[2];
    const char *dirs[2] = {run, evil};
    for (int i = 0; i < 2; i++) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s.sock", dirs[i]);
        listener[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_int_equal(bind(listener[i], (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(listen(listener[i], 4), 0);
    }
    assert_int_equal(rename(run, moved), 0);
    assert_int_equal(symlink(evil, run), 0);
    struct sockaddr_un sa;
    assert_int_equal(ltr_dir_sockaddr(dirfd, out, "s.sock", &sa, &err), 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof sa), 0);
    /* The checked directory's listener has the connection; the other has none. */
    int got = accept(listener[0], NULL, NULL);
    assert_true(got >= 0);
    assert_true(accept(listener[1], NULL, NULL) < 0 && errno == EAGAIN);
    close(got);
    close(c);
    close(listener[0]);
    close(listener[1]);
    close(dirfd);
    assert_int_equal(unlink(run), 0);
    assert_int_equal(rename(moved, run), 0);
}

/* ---- item 8: leftovers ------------------------------------------------- */

/* The runtime directory run holds the registry alone, once the recorders
 * are gone: they are once the trace is there; their teardown follows. */
static void expect_registry_alone(const char *run)
{
    char listing[4096];
    int n = 0;
    for (double end = tu_now_s() + 30; (n = list_dir(run, listing, sizeof listing)) != 1 && tu_now_s() < end;)
        usleep(50000);
    if (n != 1)
        fprintf(stderr, "left in %s:\n%s", run, listing);
    assert_int_equal(n, 1);
    assert_string_equal(listing, "registry\n");
}

static void test_clean_record_leaves_nothing(void **state)
{
    const char *dir = *state;
    char run[512];
    snprintf(run, sizeof run, "%s/run", dir);
    for (int i = 0; i < 2; i++) /* a program built without sanitizers, like the agent */
        tu_expect_ok(tu_run("%s record -o %s/r%d.ltr -- /bin/true", LTR, dir, i));
    tu_expect_ok(tu_run("%s start --instance s", LTR));
    tu_expect_ok(tu_run("%s stop --instance s %s/s.ltr", LTR, dir));
    expect_registry_alone(run);
}

/* A recorder that may not raise its priority (every user but root) notes it
 * in its log, and that alone is no problem: no log kept, no "reported
 * problems" (each unprivileged `ltr record` said so and left a log). Root
 * without CAP_SYS_NICE is such a recorder. */
static void test_unprivileged_record_leaves_nothing(void **state)
{
    const char *dir = *state;
    char run[512];
    snprintf(run, sizeof run, "%s/run", dir);
    tu_result r = tu_run("setpriv --bounding-set -sys_nice --inh-caps -sys_nice %s record -o %s/r.ltr -- /bin/true",
                         LTR, dir);
    assert_int_equal(r.status, 0);
    if (strstr(r.err, "problems"))
        fprintf(stderr, "%s", r.err);
    assert_null(strstr(r.err, "problems"));
    tu_free(&r);
    expect_registry_alone(run);
}

/* A recorder that saw something worth reading keeps its log (here: it was
 * ended by a signal). */
static void test_log_kept_when_something_happened(void **state)
{
    const char *dir = *state;
    char log[512];
    snprintf(log, sizeof log, "%s/run/t.log", dir);
    tu_expect_ok(tu_run("%s start --instance t", LTR));
    long pid = recorder_pid("t");
    assert_true(pid > 0);
    assert_int_equal(kill((pid_t)pid, SIGTERM), 0);
    for (double end = tu_now_s() + 30; !process_gone(pid) && tu_now_s() < end;)
        usleep(50000);
    tu_result r = tu_run("grep -c 'signal 15' %s", log);
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

/* When something went wrong (here: the disk is full), `ltr record` says where
 * the recorder's log is kept. Needs root, to mount a tiny file system. */
static void test_record_names_kept_log(void **state)
{
    const char *dir = *state;
    char full[512], run[512];
    snprintf(full, sizeof full, "%s/full", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    assert_int_equal(mkdir(full, 0700), 0);
    tu_result m = tu_run("mount -t tmpfs -o size=4k tmpfs %s", full); /* many's trace, thrice: 12 KB */
    bool mounted = m.status == 0;
    tu_free(&m);
    if (!mounted) {
        print_message("cannot mount a small tmpfs (not root?): skipped\n");
        skip();
    }
    tu_result r = tu_run("%s record -o %s/r.ltr -- sh -c '%s many; %s many; %s many'", LTR, full,
                         tu_test_bin("heap-target"), tu_test_bin("heap-target"), tu_test_bin("heap-target"));
    tu_expect_ok(tu_run("umount %s", full));
    char want[600], log[600];
    snprintf(want, sizeof want, "its log is kept at %s/record-", run);
    const char *at = strstr(r.err, want);
    if (!at)
        fprintf(stderr, "%s", r.err);
    assert_non_null(at);
    snprintf(log, sizeof log, "%.*s", (int)strcspn(at + 19, "\n"), at + 19);
    tu_free(&r);
    tu_result g = tu_run("grep -c 'No space left' %s", log);
    assert_int_equal(g.status, 0);
    tu_free(&g);
}

static void test_killed_recorder_socket_removed(void **state)
{
    const char *dir = *state;
    char sock[512];
    snprintf(sock, sizeof sock, "%s/run/k.sock", dir);
    tu_expect_ok(tu_run("%s start --instance k", LTR));
    assert_int_equal(access(sock, F_OK), 0);
    kill_recorder("k");
    tu_expect_ok(tu_run("%s status", LTR));
    assert_int_not_equal(access(sock, F_OK), 0);
    tu_expect_ok(tu_run("%s cancel --instance k", LTR));
}

/* ---- item 18: dead sessions ------------------------------------------- */

static void test_status_shows_dead_session(void **state)
{
    const char *dir = *state;
    char part[512];
    tu_expect_ok(tu_run("%s start --filemode --instance d --provider Test.Producer", LTR));
    /* start's default name, random since it must not be plantable */
    glob_t g;
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/ltr-d-*.ltr.part", dir);
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    snprintf(part, sizeof part, "%s", g.gl_pathv[0]);
    globfree(&g);
    tu_result p = tu_run("%s --threads 2 --events 3000 --wait-enabled 5", PRODUCER);
    assert_int_equal(tu_field(p.out, "written"), 6000);
    tu_free(&p);
    /* Wait for a flush to have written every event, then kill. */
    for (double end = tu_now_s() + 30; tu_read_trace(part, "Test.Producer").provider_events < 6000;) {
        assert_true(tu_now_s() < end);
        usleep(100000);
    }
    kill_recorder("d");
    tu_result st = tu_run("%s status", LTR);
    assert_int_equal(st.status, 0);
    assert_non_null(strstr(st.out, "no session is running"));
    assert_non_null(strstr(st.out, "session 'd' is dead"));
    assert_non_null(strstr(st.out, part));
    assert_non_null(strstr(st.out, "ltr analyze"));
    assert_non_null(strstr(st.out, "ltr cancel --instance d"));
    char log[600];
    snprintf(log, sizeof log, "the recorder's log: %s/run/d.log", dir); /* kept: it was killed */
    assert_non_null(strstr(st.out, log));
    tu_free(&st);
    /* What it says is true: the partial trace reads. */
    tu_result info = tu_run("%s analyze %s", LTR, part);
    if (info.status != 0)
        fprintf(stderr, "%s%s", info.out, info.err);
    assert_int_equal(info.status, 0);
    tu_free(&info);
    tu_trace t = tu_read_trace(part, "Test.Producer");
    assert_true(t.ok);
    assert_int_equal(t.provider_events, 6000);
    /* Forgotten on request; the partial trace stays. */
    tu_result c = tu_run("%s cancel --instance d", LTR);
    assert_int_equal(c.status, 0);
    assert_non_null(strstr(c.out, "forgot dead session 'd'"));
    tu_free(&c);
    st = tu_run("%s status", LTR);
    assert_null(strstr(st.out, "'d'"));
    tu_free(&st);
    assert_int_equal(access(part, F_OK), 0);
    /* The name is free again. */
    tu_expect_ok(tu_run("%s start --instance d", LTR));
    tu_expect_ok(tu_run("%s cancel --instance d", LTR));
}

/* A dead memory-mode session is shown with the truth: nothing to recover;
 * one whose partial trace was moved away is not shown any more. */
static void test_dead_memory_and_moved_trace(void **state)
{
    const char *dir = *state;
    tu_expect_ok(tu_run("%s start --instance m", LTR));
    tu_expect_ok(tu_run("%s start --filemode --instance f -o %s/f.ltr", LTR, dir));
    kill_recorder("m");
    kill_recorder("f");
    tu_result st = tu_run("%s status", LTR);
    assert_non_null(strstr(st.out, "session 'm' is dead"));
    assert_non_null(strstr(st.out, "is lost"));
    assert_non_null(strstr(st.out, "session 'f' is dead"));
    tu_free(&st);
    tu_expect_ok(tu_run("mv %s/f.ltr %s/kept.ltr", dir, dir));
    st = tu_run("%s status", LTR);
    assert_null(strstr(st.out, "session 'f'"));
    assert_non_null(strstr(st.out, "session 'm' is dead"));
    tu_free(&st);
    tu_expect_ok(tu_run("%s cancel --instance m", LTR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_symlink_is_refused, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_foreign_directory_is_refused, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_tmp_squatter_is_bypassed, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_tmp_squatter_command, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_swap_during_use, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_clean_record_leaves_nothing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_unprivileged_record_leaves_nothing, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_log_kept_when_something_happened, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_record_names_kept_log, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_killed_recorder_socket_removed, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_status_shows_dead_session, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_dead_memory_and_moved_trace, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
