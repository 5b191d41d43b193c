/*
 * tests/byname/test_byname.c — the by-name setting in-process: names checked,
 * the shim's matching, processes found by their executable's name, and
 * enable/disable giving /etc/ld.so.preload back byte for byte whatever it
 * was. The changes happen in a private /etc (tests/util/private_etc.h), as
 * root, with the shim and agent of the copy of ltr there (tu_private_ltr:
 * what root alone can write, wherever the build tree is); without root the
 * tests that change it are skipped.
 */
#include "byname/byname.h"
#include "recorder/heaprun.h"
#include "util/private_etc.h"
#include "util/testutil.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static int have_etc;

static void test_names_checked(void **state)
{
    (void)state;
    ltr_error err;
    assert_int_equal(ltr_byname_check("myservice", &err), 0);
    assert_int_equal(ltr_byname_check("python3.11", &err), 0);
    assert_int_equal(ltr_byname_check("", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "empty"));
    assert_int_equal(ltr_byname_check("/usr/bin/svc", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "'svc'"));
    assert_int_equal(ltr_byname_check("a b", &err), -EINVAL);
    assert_int_equal(ltr_byname_check("a\nb", &err), -EINVAL);
    assert_int_equal(ltr_byname_check("..", &err), -EINVAL);
    assert_int_equal(ltr_byname_check("#x", &err), -EINVAL);
    assert_int_equal(ltr_byname_check("ltr", &err), -EINVAL);
    assert_non_null(strstr(err.msg, "ltr itself"));
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(ltr_byname_check(longname, &err), -EINVAL);
    /* Names ltr could not print as they are were enabled, and listed raw on
     * the terminal: not UTF-8 (Latin-1, a lone 8-bit CSI), C1 and bidi
     * controls in UTF-8. The message shows them with '?'. */
    assert_int_equal(ltr_byname_check("caf\xc3\xa9", &err), 0); /* UTF-8 text is a name */
    const char *bad[] = {"caf\xe9", "x\x9b" "2J", "x\xc2\x9b" "2J", "a\xe2\x80\xae" "b", "\xc0\xaf"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(ltr_byname_check(bad[i], &err), -EINVAL);
        assert_non_null(strstr(err.msg, "not UTF-8 text or holds a control character"));
        for (const char *c = err.msg; *c; c++)
            assert_true((unsigned char)*c >= ' ' && (unsigned char)*c < 0x7f);
    }
    assert_non_null(strstr(err.msg, "'?" "?'")); /* the overlong '/', byte by byte */
}

static void test_match_whole_lines_only(void **state)
{
    (void)state;
    const char text[] = "# svc\nalpha\nbeta\ngamma"; /* the last line without its newline */
    size_t n = sizeof text - 1;
    assert_true(ltr_byname_match(text, n, "alpha"));
    assert_true(ltr_byname_match(text, n, "gamma"));
    assert_false(ltr_byname_match(text, n, "alph"));
    assert_false(ltr_byname_match(text, n, "alphabet"));
    assert_false(ltr_byname_match(text, n, "svc"));   /* a comment */
    assert_false(ltr_byname_match(text, n, "# svc"));
    assert_false(ltr_byname_match(text, n, ""));
    assert_false(ltr_byname_match(text, 0, "alpha"));
    assert_false(ltr_byname_match(text, 8, "alpha")); /* "alpha" cut short by the length */
}

/* Hand-edited lines: the blanks around a name (an editor's carriage
 * return, an indent, a trailing space) are not part of it, for the shim as
 * for ltr (both read with match.c): 'foo\r' was listed as enabled and could
 * not be disabled. A line that is no name matches no process, even one
 * whose executable is called so; only the first 64 entries count. */
static void test_match_hand_edits(void **state)
{
    (void)state;
    const char text[] = "foo\r\n  bar\nbaz \n\t# a comment\na b\ncaf\xe9\nltr\n\n   \nend";
    size_t n = sizeof text - 1;
    assert_true(ltr_byname_match(text, n, "foo"));
    assert_true(ltr_byname_match(text, n, "bar"));
    assert_true(ltr_byname_match(text, n, "baz"));
    assert_true(ltr_byname_match(text, n, "end"));
    assert_false(ltr_byname_match(text, n, "foo\r"));
    assert_false(ltr_byname_match(text, n, "a b"));
    assert_false(ltr_byname_match(text, n, "caf\xe9"));
    assert_false(ltr_byname_match(text, n, "ltr"));
    assert_false(ltr_byname_match(text, n, "# a comment"));
    char many[2048];
    size_t m = 0;
    for (int i = 0; i < 70; i++)
        m += (size_t)snprintf(many + m, sizeof many - m, "# c\nn%d\n", i);
    assert_true(ltr_byname_match(many, m, "n63"));  /* the 64th entry */
    assert_false(ltr_byname_match(many, m, "n64")); /* the 65th: read by neither */
}

/* snapshotconfig --name takes the kernel's name of a process (comm): the
 * setting reaches it through a listed executable name the kernel cut at 15
 * characters, or the executable of a link's process; not through a name
 * that only begins like a shorter comm. */
static void test_setting_reaches_comm(void **state)
{
    (void)state;
    static ltr_byname_list set = {.names = {"averylongprogramname", "python3.11", "svc"}, .n = 3};
    assert_true(ltr_byname_reaches_comm(&set, "svc", NULL));
    assert_true(ltr_byname_reaches_comm(&set, "averylongprogra", NULL)); /* its comm, cut */
    assert_false(ltr_byname_reaches_comm(&set, "averylongprogr", NULL)); /* 14: a name of its own */
    assert_false(ltr_byname_reaches_comm(&set, "python3", NULL));
    assert_true(ltr_byname_reaches_comm(&set, "python3", "python3.11")); /* started through the link */
    assert_false(ltr_byname_reaches_comm(&set, "python3", "python3.12"));
    assert_false(ltr_byname_reaches_comm(&set, "sv", NULL));
}

static void test_exe_name_and_pids(void **state)
{
    (void)state;
    char name[256];
    assert_int_equal(ltr_exe_name(getpid(), name, sizeof name), 0);
    assert_string_equal(name, "test_byname");
    assert_int_equal(ltr_exe_name(0x7ffffff0, name, sizeof name), -ENOENT);
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/sleep", "not-sleep-at-all", "30", (char *)NULL);
        _exit(127);
    }
    /* the kernel's name, not argv[0]; poll until the exec is done */
    uint32_t pids[512];
    int n = 0, seen = 0;
    for (double end = tu_now_s() + 20; !seen && tu_now_s() < end;) {
        n = ltr_pids_named("sleep", LTR_ANY_OWNER, pids, 512);
        for (int i = 0; i < n && i < 512; i++)
            seen |= pids[i] == (uint32_t)child;
        if (!seen)
            usleep(10000);
    }
    ltr_heap_name_reach reach;
    assert_int_equal(ltr_heap_name_reach_of("sleep", &reach), 0);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_true(seen);
    assert_true(reach.running >= 1 && reach.without >= 1); /* plain sleep has no agent */
    assert_false(reach.configured);
    assert_int_equal(ltr_pids_named("not-sleep-at-all", LTR_ANY_OWNER, pids, 512), 0);
    assert_int_equal(ltr_pids_named("test_byname", LTR_ANY_OWNER, pids, 512), 0); /* not this process */
}

static bool among(uint32_t pid, const uint32_t *pids, int n)
{
    for (int i = 0; i < n && i < 512; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* Another user's process of the same name is not one of ours: watch and
 * `start --name` look for their own user's only (an attacker review's decoy
 * blinded root's ltr watch --name). */
static void test_pids_named_by_owner(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* running a process as another user takes root */
    pid_t theirs = fork();
    if (theirs == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(126);
        execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    uint32_t any[512], ours[512];
    int n_any = 0, n_ours = 0;
    bool seen = false;
    for (double end = tu_now_s() + 20; !seen && tu_now_s() < end; usleep(10000)) {
        n_any = ltr_pids_named("sleep", LTR_ANY_OWNER, any, 512);
        seen = among((uint32_t)theirs, any, n_any);
    }
    n_ours = ltr_pids_named("sleep", geteuid(), ours, 512);
    bool in_ours = among((uint32_t)theirs, ours, n_ours);
    kill(theirs, SIGKILL);
    waitpid(theirs, NULL, 0);
    assert_true(seen);
    assert_false(in_ours);
    assert_true(n_ours < n_any);
}

/* ---- changes, in the private /etc ---------------------------------------- */

static const char *src(const char *file)
{
    static char path[2][600];
    static int k;
    k ^= 1;
    assert_non_null(tu_private_ltr()); /* made again after each reset */
    snprintf(path[k], sizeof path[k], "%s/lib/%s", TU_PRIVATE_INSTALL, file);
    return path[k];
}

static int enable(const char *name)
{
    ltr_error err;
    int rc = ltr_byname_enable(name, src("libltr-byname.so"), src("libltr-heap.so"), NULL, &err);
    if (rc < 0)
        print_error("enable %s: %s\n", name, err.msg);
    return rc;
}

static int disable(const char *name)
{
    ltr_error err;
    int rc = ltr_byname_disable(name, NULL, &err);
    if (rc < 0 && rc != -ENOENT)
        print_error("disable %s: %s\n", name, err.msg);
    return rc;
}

static int fresh(void **state)
{
    (void)state;
    if (!have_etc)
        return 0;
    return tu_private_etc_reset();
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    unlink(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, mode), 0);
}

static void assert_gone(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        fail_msg("%s is still there", path);
}

/* A machine without /etc/ld.so.preload has none again, nor /etc/ltr. */
static void test_absent_preload_comes_back_absent(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    assert_int_equal(enable("alpha"), 0);
    assert_int_equal(enable("beta"), 0);
    assert_int_equal(enable("alpha"), 1); /* there already */
    char *t = tu_read_file(LTR_BYNAME_PRELOAD);
    assert_non_null(t);
    assert_string_equal(t, LTR_BYNAME_SHIM "\n"); /* one line, however many names */
    free(t);
    ltr_byname_list *l = malloc(sizeof *l);
    ltr_error err;
    assert_int_equal(ltr_byname_read(l, &err), 0);
    assert_int_equal(l->n, 2);
    assert_string_equal(l->names[0], "alpha");
    assert_string_equal(l->names[1], "beta");
    const char *files[] = {LTR_BYNAME_NAMES, LTR_BYNAME_SHIM, LTR_BYNAME_AGENT, LTR_BYNAME_PRELOAD};
    for (size_t i = 0; i < 4; i++) {
        struct stat st;
        assert_int_equal(lstat(files[i], &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_uid, 0);
        assert_int_equal(st.st_mode & 07777, 0644);
    }
    assert_int_equal(disable("gamma"), -ENOENT);
    assert_int_equal(disable("alpha"), 0);
    t = tu_read_file(LTR_BYNAME_PRELOAD);
    assert_non_null(t); /* beta is still on */
    assert_string_equal(t, LTR_BYNAME_SHIM "\n");
    free(t);
    assert_int_equal(disable("beta"), 0);
    assert_gone(LTR_BYNAME_PRELOAD);
    assert_gone(LTR_BYNAME_DIR);
    assert_int_equal(ltr_byname_read(l, &err), 0);
    assert_int_equal(l->n, 0);
    free(l);
}

/* The bytes, mode and other lines of an existing file are kept: with and
 * without a newline at its end, and with a line another tool added meanwhile. */
static void check_restored(const char *before, mode_t mode, const char *added, const char *after)
{
    write_file(LTR_BYNAME_PRELOAD, before, mode);
    assert_int_equal(enable("alpha"), 0);
    char *t = tu_read_file(LTR_BYNAME_PRELOAD);
    assert_non_null(strstr(t, LTR_BYNAME_SHIM "\n"));
    assert_memory_equal(t, before, strlen(before)); /* the old lines first, as they were */
    free(t);
    if (added) {
        FILE *f = fopen(LTR_BYNAME_PRELOAD, "a");
        fputs(added, f);
        fclose(f);
    }
    assert_int_equal(disable("alpha"), 0);
    t = tu_read_file(LTR_BYNAME_PRELOAD);
    assert_non_null(t);
    assert_string_equal(t, after);
    free(t);
    struct stat st;
    assert_int_equal(stat(LTR_BYNAME_PRELOAD, &st), 0);
    assert_int_equal(st.st_mode & 07777, mode);
    assert_gone(LTR_BYNAME_DIR);
}

static void test_existing_preload_restored_byte_for_byte(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    char with_nl[128], without[128], both[256];
    snprintf(with_nl, sizeof with_nl, "%s\n", libc);
    snprintf(without, sizeof without, "%s", libc);
    check_restored(with_nl, 0644, NULL, with_nl);
    check_restored(without, 0600, NULL, without);
    check_restored("", 0644, NULL, ""); /* an empty file stays, empty */
    snprintf(both, sizeof both, "%s\n%s\n", libc, libc);
    check_restored(with_nl, 0644, with_nl, both);
}

/* /etc/ltr that existed before stays; one that is not root's alone is refused. */
static void test_directory_kept_or_refused(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    assert_int_equal(mkdir(LTR_BYNAME_DIR, 0755), 0);
    assert_int_equal(enable("alpha"), 0);
    assert_int_equal(disable("alpha"), 0);
    struct stat st;
    assert_int_equal(stat(LTR_BYNAME_DIR, &st), 0);
    assert_int_equal(chmod(LTR_BYNAME_DIR, 0777), 0);
    ltr_error err;
    assert_int_equal(ltr_byname_enable("alpha", src("libltr-byname.so"), src("libltr-heap.so"), NULL, &err), -EPERM);
    assert_non_null(strstr(err.msg, "only root can write"));
    assert_gone(LTR_BYNAME_PRELOAD); /* refused before anything changed */
    rmdir(LTR_BYNAME_DIR);
}

/* A first enable that fails half way (no agent to copy) leaves nothing. */
static void test_failed_enable_leaves_nothing(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    ltr_error err;
    assert_int_equal(ltr_byname_enable("alpha", src("libltr-byname.so"), "/nonexistent/libltr-heap.so", NULL, &err),
                     -ENOENT);
    assert_non_null(strstr(err.msg, "cannot read /nonexistent/libltr-heap.so"));
    assert_gone(LTR_BYNAME_DIR);
    assert_gone(LTR_BYNAME_PRELOAD);
    /* a later name's failure leaves the earlier ones as they were */
    assert_int_equal(enable("alpha"), 0);
    assert_int_equal(ltr_byname_enable("beta", "/nonexistent/shim.so", src("libltr-heap.so"), NULL, &err), -ENOENT);
    ltr_byname_list *l = malloc(sizeof *l);
    assert_int_equal(ltr_byname_read(l, &err), 0);
    assert_int_equal(l->n, 1);
    free(l);
    char *t = tu_read_file(LTR_BYNAME_PRELOAD);
    assert_non_null(t);
    assert_string_equal(t, LTR_BYNAME_SHIM "\n");
    free(t);
    assert_int_equal(disable("alpha"), 0);
    assert_gone(LTR_BYNAME_DIR);
}

/* A names file edited by hand that lists a name twice: the name is one,
 * and its disable takes it off (it took one line off, said "disabled",
 * and the shim still loaded the agent for the other). */
static void test_name_listed_twice_disabled_once(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    assert_int_equal(enable("alpha"), 0);
    write_file(LTR_BYNAME_NAMES, "alpha\nbeta\nalpha\n", 0644);
    ltr_byname_list *l = malloc(sizeof *l);
    ltr_error err;
    assert_int_equal(ltr_byname_read(l, &err), 0);
    assert_int_equal(l->n, 2);
    assert_int_equal(disable("alpha"), 0);
    assert_int_equal(ltr_byname_read(l, &err), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->names[0], "beta");
    free(l);
    char *t = tu_read_file(LTR_BYNAME_NAMES);
    assert_non_null(t);
    assert_false(ltr_byname_match(t, strlen(t), "alpha"));
    free(t);
    assert_int_equal(disable("beta"), 0);
    assert_gone(LTR_BYNAME_PRELOAD);
}

/* The shim runs in every process, on the stack it starts with: a small
 * stack limit that /bin/true and sh run under without the setting, they
 * run under with it (the shim read the names file and the executable's
 * path into 20.7 KB of stack, and under `ulimit -s` 16 to 24 every process
 * died of SIGSEGV at its start). */
static void test_shim_small_stack(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    assert_int_equal(enable("alpha"), 0);
    tu_result r = tu_run("grep -q libltr-byname /proc/self/maps && echo shim && (ulimit -s 24 && for i in 1 2 3 4 5 6 7 8; "
                         "do /bin/true || exit $i; sh -c 'exit 0' || exit $i; done)");
    if (r.status != 0 || strcmp(r.out, "shim\n") != 0)
        fail_msg("under a stack of 24 KB, with the shim: status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    assert_int_equal(disable("alpha"), 0);
}

/* Runs `cat /proc/self/maps` as an executable called name, at a path of
 * about 740 bytes when deep (longer than the shim's buffer on the stack):
 * whether it got the agent. */
static bool agent_in(const char *name, bool deep_path)
{
    char dir[] = "/tmp/ltr-byname-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *deep = "0123456789012345678901234567890123456789012345678901234567890123456789";
    tu_result r = tu_run("cd %s && p=$PWD && for i in $(seq 1 %d); do p=$p/%s; done && mkdir -p $p && "
                         "cp /bin/cat $p/%s && $p/%s /proc/self/maps | grep -q libltr-heap && echo agent; rm -rf %s",
                         dir, deep_path ? 10 : 0, deep, name, name, dir);
    bool yes = r.out && !strcmp(r.out, "agent\n");
    tu_free(&r);
    return yes;
}

/* The names file is read a piece at a time (the stack above): names after
 * lines longer than a piece, a name at the very end without its newline,
 * and a long executable's path are found; a name cut short is not one. */
static void test_shim_reads_names_in_pieces(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    assert_int_equal(enable("gamma"), 0);
    char text[LTR_BYNAME_FILE_MAX];
    size_t n = 0;
    memset(text, 'a', 5000); /* a line longer than any piece */
    n += 5000;
    n += (size_t)snprintf(text + n, sizeof text - n, "alpha\n#beta\n");
    memset(text + n, 'b', 700);
    n += 700;
    n += (size_t)snprintf(text + n, sizeof text - n, "\nlongalpha\nbet\nzeta");
    write_file(LTR_BYNAME_NAMES, text, 0644);
    assert_false(agent_in("alpha", false)); /* the end of a long line */
    assert_true(agent_in("longalpha", false));
    assert_true(agent_in("longalpha", true));
    assert_true(agent_in("zeta", true));
    assert_false(agent_in("beta", false));
    assert_false(agent_in("be", true));
    assert_false(agent_in("gamma", false)); /* no longer listed */
    write_file(LTR_BYNAME_NAMES, "gamma\n", 0644);
    assert_true(agent_in("gamma", false));
    assert_int_equal(disable("gamma"), 0);
}

/* A names file larger than the shim reads (a hand edit, or root's own
 * mistake) enables no name, and made every command fail with "File too
 * large", disable included: the setting could not be turned off with ltr.
 * It lists its names as not enabled; disable of one writes the file anew
 * (the others enabled again, as the shim reads it now); --disable-all
 * removes the setting whatever the file holds. */
static void test_oversized_names_file_way_out(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    assert_int_equal(enable("alpha"), 0);
    assert_int_equal(enable("beta"), 0);
    static char text[LTR_BYNAME_FILE_MAX + 2000];
    int n = snprintf(text, sizeof text, "alpha\nbeta\n#");
    memset(text + n, 'x', sizeof text - (size_t)n - 2);
    text[sizeof text - 2] = '\n';
    write_file(LTR_BYNAME_NAMES, text, 0644);
    static ltr_byname_list l;
    ltr_error err;
    assert_int_equal(ltr_byname_read(&l, &err), 0);
    assert_int_equal(l.n, 2);
    assert_non_null(strstr(l.inert, "more than the 16640 the shim reads"));
    assert_false(ltr_byname_listed(&l, "alpha"));
    assert_false(agent_in("beta", false)); /* the shim reads none of it */
    static ltr_byname_list was;
    assert_int_equal(ltr_byname_disable("alpha", &was, &err), 0);
    assert_true(was.inert[0]);
    assert_int_equal(ltr_byname_read(&l, &err), 0);
    assert_int_equal(l.n, 1);
    assert_false(l.inert[0]);
    assert_true(ltr_byname_listed(&l, "beta"));
    assert_true(agent_in("beta", false));
    write_file(LTR_BYNAME_NAMES, text, 0666); /* and writable by all: the shim trusts it not either */
    assert_int_equal(ltr_byname_disable_all(&err), 1);
    assert_gone(LTR_BYNAME_PRELOAD);
    assert_gone(LTR_BYNAME_DIR);
    assert_int_equal(ltr_byname_disable_all(&err), 0); /* nothing left to remove */
}

/* Lines ltr cannot name: the blanks around a name are not part of it, and
 * what is still no name matches no process and does not keep the setting:
 * the last name's disable removes the line of /etc/ld.so.preload (it stayed
 * while such lines were left, and every process kept loading the shim). */
static void test_hand_edited_lines(void **state)
{
    (void)state;
    if (!have_etc)
        skip();
    unlink(LTR_BYNAME_PRELOAD);
    assert_int_equal(enable("gamma"), 0);
    write_file(LTR_BYNAME_NAMES, "foo\r\n  bar\nbaz \na b\nltr\n", 0644);
    static ltr_byname_list l;
    ltr_error err;
    assert_int_equal(ltr_byname_read(&l, &err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.names[0], "foo");
    assert_int_equal(l.n_strays, 2);
    assert_int_equal(l.strays[0].fault, LTR_BYNAME_BLANK);
    char said[512];
    ltr_byname_stray_text(&l.strays[0], said, sizeof said);
    assert_string_equal(said, "'a b': matches no process: it holds a space or a control character");
    assert_true(agent_in("foo", false)); /* the shim reads the line as ltr does */
    assert_true(agent_in("bar", false));
    assert_int_equal(disable("foo"), 0);
    char *t = tu_read_file(LTR_BYNAME_NAMES);
    assert_non_null(t);
    assert_null(strstr(t, "a b")); /* written anew, names only */
    assert_non_null(strstr(t, "\nbar\nbaz\n"));
    free(t);
    write_file(LTR_BYNAME_NAMES, "  bar\na b\n", 0644);
    assert_int_equal(disable("bar"), 0);
    assert_gone(LTR_BYNAME_PRELOAD);
    assert_gone(LTR_BYNAME_DIR);
}

int main(void)
{
    have_etc = tu_private_etc() == 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_checked),
        cmocka_unit_test(test_match_whole_lines_only),
        cmocka_unit_test(test_match_hand_edits),
        cmocka_unit_test(test_setting_reaches_comm),
        cmocka_unit_test(test_exe_name_and_pids),
        cmocka_unit_test(test_pids_named_by_owner),
        cmocka_unit_test_setup(test_absent_preload_comes_back_absent, fresh),
        cmocka_unit_test_setup(test_existing_preload_restored_byte_for_byte, fresh),
        cmocka_unit_test_setup(test_directory_kept_or_refused, fresh),
        cmocka_unit_test_setup(test_failed_enable_leaves_nothing, fresh),
        cmocka_unit_test_setup(test_name_listed_twice_disabled_once, fresh),
        cmocka_unit_test_setup(test_shim_small_stack, fresh),
        cmocka_unit_test_setup(test_shim_reads_names_in_pieces, fresh),
        cmocka_unit_test_setup(test_oversized_names_file_way_out, fresh),
        cmocka_unit_test_setup(test_hand_edited_lines, fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
