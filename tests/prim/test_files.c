/*
 * tests/prim/test_files.c — prim/files.c, how every output file is made: only
 * new files, unpredictable temporaries, publication that replaces nothing
 * unless forced (and then files only, never a device or a FIFO), a new file
 * written whole or not at all, absolute paths, the temporaries a killed
 * writer left. The recorder's own refusal of
 * an existing path is
 * tests/e2e/test_recorder_refuses.c. And the one rule for what root runs or
 * copies into every process (ltr_open_roots_alone), case by case
 * (tests/util/roots_alone_cases.h, the cases the tests of both commands
 * that apply it run too), as root in a private /etc.
 */
#include "prim/prim.h"
#include "util/private_etc.h"
#include "util/roots_alone.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *in_dir(const char *dir, const char *name)
{
    static char buf[4][512];
    static int k;
    char *out = buf[k++ % 4];
    snprintf(out, 512, "%s/%s", dir, name);
    return out;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_text(const char *path, const char *text)
{
    char *got = tu_read_file(path);
    assert_non_null(got);
    assert_string_equal(got, text);
    free(got);
}

static void test_create_new(void **state)
{
    const char *dir = *state;
    char victim[512], link[512];
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    snprintf(link, sizeof link, "%s", in_dir(dir, "link"));
    write_text(victim, "root only");
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(ltr_create_new(victim), -EEXIST);
    assert_int_equal(ltr_create_new(link), -EEXIST);
    assert_text(victim, "root only");
    int fd = ltr_create_new(in_dir(dir, "new"));
    assert_true(fd >= 0);
    close(fd);
    struct stat st;
    assert_int_equal(lstat(in_dir(dir, "new"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_temporaries_differ(void **state)
{
    const char *dir = *state;
    char a[512], b[512], dest[512];
    snprintf(dest, sizeof dest, "%s", in_dir(dir, "t.ltr"));
    assert_int_equal(ltr_temp_name(a, sizeof a, dest), 0);
    assert_int_equal(ltr_temp_name(b, sizeof b, dest), 0);
    int fa = ltr_create_temp(a), fb = ltr_create_temp(b);
    assert_true(fa >= 0 && fb >= 0);
    close(fa);
    close(fb);
    assert_string_not_equal(a, b);
    assert_null(strstr(a, "XXXXXX"));
    assert_int_equal(strncmp(a, dest, strlen(dest)), 0);
    assert_string_equal(a + strlen(a) - 5, ".part");
    char tmpl[] = "no-x-here";
    assert_int_equal(ltr_create_temp(tmpl), -EINVAL);
}

static void count_leftover(const char *path, const struct stat *st, void *arg)
{
    (void)st;
    char *seen = arg;
    snprintf(seen + strlen(seen), 1024 - strlen(seen), "%s;", strrchr(path, '/') + 1);
}

/* A temporary a killed save left is named; one being written (its fd open),
 * a symlink or a FIFO of that pattern, and other names are not; nothing is
 * removed. A killed `ltr save` left s.ltr.XXXXXX.part that no message named. */
static void test_leftover_temps(void **state)
{
    const char *dir = *state;
    char dest[512], left[512], open_one[512];
    snprintf(dest, sizeof dest, "%s", in_dir(dir, "s.ltr"));
    assert_int_equal(ltr_temp_name(left, sizeof left, dest), 0);
    assert_int_equal(ltr_temp_name(open_one, sizeof open_one, dest), 0);
    int fl = ltr_create_temp(left), fo = ltr_create_temp(open_one);
    assert_true(fl >= 0 && fo >= 0);
    close(fl); /* its writer killed: the lock goes with it */
    assert_int_equal(symlink(left, in_dir(dir, "s.ltr.Link01.part")), 0);
    assert_int_equal(mkfifo(in_dir(dir, "s.ltr.Fifo01.part"), 0600), 0);
    write_text(in_dir(dir, "s.ltr.short.part"), "not ours");
    write_text(in_dir(dir, "xs.ltr.Abcdef.part"), "not ours");
    char seen[1024] = "", want[600];
    assert_int_equal(ltr_leftover_temps(dest, count_leftover, seen), 1);
    snprintf(want, sizeof want, "%s;", strrchr(left, '/') + 1);
    assert_string_equal(seen, want);
    assert_int_equal(access(left, F_OK), 0); /* named, not removed */
    close(fo);
    assert_int_equal(ltr_leftover_temps(dest, count_leftover, seen), 2);
    assert_int_equal(ltr_leftover_temps(in_dir(dir, "none/s.ltr"), count_leftover, seen), -ENOENT);
}

/* Whatever has the name (a file, a symlink, a dangling one) stays, and so does
 * the temporary; with replace, a symlink is replaced, not what it points to. */
static void test_publish(void **state)
{
    const char *dir = *state;
    char tmp[512], dest[512], victim[512];
    snprintf(tmp, sizeof tmp, "%s", in_dir(dir, "tmp"));
    snprintf(dest, sizeof dest, "%s", in_dir(dir, "dest"));
    snprintf(victim, sizeof victim, "%s", in_dir(dir, "victim"));
    write_text(tmp, "trace");
    write_text(dest, "precious");
    assert_int_equal(ltr_publish(tmp, dest, false), -EEXIST);
    assert_text(dest, "precious");
    assert_text(tmp, "trace");
    unlink(dest);
    assert_int_equal(symlink(victim, dest), 0); /* dangling */
    assert_int_equal(ltr_publish(tmp, dest, false), -EEXIST);
    assert_int_not_equal(access(victim, F_OK), 0);
    write_text(victim, "root only");
    assert_int_equal(ltr_publish(tmp, dest, true), 0);
    assert_text(victim, "root only");
    assert_text(dest, "trace");
    assert_int_not_equal(access(tmp, F_OK), 0);
    write_text(tmp, "second");
    assert_int_equal(ltr_publish(tmp, in_dir(dir, "fresh"), false), 0);
    assert_text(in_dir(dir, "fresh"), "second");
    assert_int_not_equal(access(tmp, F_OK), 0);
}

/* --force replaces a file or a symlink, never a FIFO, a device, a directory,
 * nor a symlink to one (/dev/stdout): as root, '-o /dev/null --force' made
 * /dev/null a file. */
static void test_publish_replaces_files_only(void **state)
{
    const char *dir = *state;
    char tmp[512], fifo[512], to_fifo[512], sub[512], dev[512];
    snprintf(tmp, sizeof tmp, "%s", in_dir(dir, "tmp"));
    snprintf(fifo, sizeof fifo, "%s", in_dir(dir, "fifo"));
    snprintf(to_fifo, sizeof to_fifo, "%s", in_dir(dir, "stdout"));
    snprintf(sub, sizeof sub, "%s", in_dir(dir, "sub"));
    snprintf(dev, sizeof dev, "%s", in_dir(dir, "null"));
    write_text(tmp, "trace");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink(fifo, to_fifo), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    bool root = geteuid() == 0 && mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
    const char *kept[] = {fifo, to_fifo, sub, root ? dev : NULL};
    for (int i = 0; i < 4 && kept[i]; i++) {
        struct stat before, after;
        assert_int_equal(lstat(kept[i], &before), 0);
        assert_int_equal(ltr_publish(tmp, kept[i], true), -EPERM);
        assert_int_equal(lstat(kept[i], &after), 0);
        assert_int_equal(before.st_mode, after.st_mode);
        assert_int_equal(before.st_ino, after.st_ino);
        assert_text(tmp, "trace");
        ltr_error err;
        assert_int_equal(ltr_replaceable(kept[i], &err), -EPERM);
        assert_non_null(strstr(err.msg, "--force replaces a file"));
    }
    ltr_error err;
    assert_int_equal(ltr_replaceable(to_fifo, &err), -EPERM);
    assert_non_null(strstr(err.msg, "a symbolic link to a FIFO"));
    assert_int_equal(ltr_replaceable(in_dir(dir, "nothing"), &err), 0);
    assert_int_equal(ltr_replaceable(tmp, &err), 0);
}

/* Relative names are taken against the current directory; an empty or
 * too long one is an error that says so. */
static void test_absolute_path(void **state)
{
    const char *dir = *state;
    char out[512], cwd[512];
    ltr_error err;
    assert_int_equal(ltr_absolute_path("/a/b.ltr", out, sizeof out, &err), 0);
    assert_string_equal(out, "/a/b.ltr");
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(ltr_absolute_path("sub/t.ltr", out, sizeof out, &err), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_string_equal(out, in_dir(dir, "sub/t.ltr"));
    assert_int_equal(ltr_absolute_path("", out, sizeof out, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "empty"));
    char small[8];
    assert_int_equal(ltr_absolute_path("/a/long/name", small, sizeof small, &err), -ENAMETOOLONG);
    assert_non_null(strstr(err.msg, "/a/long/name: path too long"));
}

static int write_hello(FILE *f, void *arg)
{
    return fputs(arg, f) < 0 ? -EIO : 0;
}

static int write_fails(FILE *f, void *arg)
{
    fputs(arg, f);
    return -ENOSPC;
}

/* As a writer fails on a full disk: fwrite or fflush set errno, the
 * writer says -EIO. */
static int write_disk_full(FILE *f, void *arg)
{
    fputs(arg, f);
    errno = ENOSPC;
    return -EIO;
}

/* How many entries of dir have a name starting with prefix. */
static int entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

/* A new file is complete when it has its name; an existing one stays unless
 * replace; a failed write leaves nothing, not even its temporary. */
static void test_write_new_file(void **state)
{
    const char *dir = *state;
    char path[512];
    snprintf(path, sizeof path, "%s", in_dir(dir, "out.txt"));
    ltr_error err;
    assert_int_equal(ltr_write_new_file(path, false, write_hello, "hello", &err), 0);
    assert_text(path, "hello");
    assert_int_equal(ltr_write_new_file(path, false, write_hello, "again", &err), -EEXIST);
    assert_non_null(strstr(err.msg, "--force"));
    assert_text(path, "hello");
    assert_int_equal(ltr_write_new_file(path, true, write_hello, "again", &err), 0);
    assert_text(path, "again");
    assert_int_equal(ltr_write_new_file(in_dir(dir, "failed.txt"), false, write_fails, "half", &err),
                     -ENOSPC);
    assert_non_null(strstr(err.msg, "writing"));
    assert_int_equal(entries(dir, "failed"), 0);
    assert_int_equal(ltr_write_new_file(in_dir(dir, "full.txt"), false, write_disk_full, "half", &err), -ENOSPC);
    assert_non_null(strstr(err.msg, "No space left on device")); /* not "Input/output error" */
    assert_int_equal(entries(dir, "full"), 0);
    assert_int_equal(entries(dir, "out.txt."), 0); /* no temporary left beside */
    assert_int_equal(ltr_write_new_file(in_dir(dir, "no/such/dir"), false, write_hello, "x", &err), -ENOENT);
    assert_non_null(strstr(err.msg, "cannot create"));
}

static const char *why_no_etc; /* why the rule's tests are skipped */

/* Every case of the table, on a tree of plain files: refused with its
 * message, or opened (the file checked: it reads "agent"). */
static void test_roots_alone_cases(void **state)
{
    (void)state;
    if (why_no_etc) {
        printf("skipped: %s\n", why_no_etc);
        skip();
    }
    for (size_t i = 0; i < roots_alone_ncases; i++) {
        const roots_alone_case *c = &roots_alone_cases[i];
        int made = roots_alone_tree(false, c->setup);
        assert_true(made == 0 || made == 77);
        if (made == 77) {
            printf("case '%s' skipped: it cannot be made here\n", c->what);
            continue;
        }
        ltr_error err = {0};
        int fd = ltr_open_roots_alone(ROOTS_ALONE_BASE "/t/lib/libltr-heap.so", &err);
        char want[1024];
        roots_alone_refusal(c, want, sizeof want);
        if (c->refusal && (fd != -EPERM || !strstr(err.msg, want)))
            fail_msg("%s: %d '%s', wanted a refusal with '%s'", c->what, fd, err.msg, want);
        if (!c->refusal && fd < 0)
            fail_msg("%s: refused: %s", c->what, err.msg);
        if (fd >= 0) {
            char buf[16] = "";
            assert_int_equal(read(fd, buf, sizeof buf - 1), 5);
            assert_string_equal(buf, "agent");
            close(fd);
        }
    }
    tu_expect_ok(tu_run("rm -rf " ROOTS_ALONE_BASE " /etc/staff-group-for-usr-local"));
}

/* What only the rule itself shows: every component on the way that group
 * or others may write is in the one chmod that fixes them all (staff's
 * file named only where it exists); a symlink on the way is followed
 * before the walk, and the rule applies to where it leads; what is not a
 * regular file (a FIFO, a directory) is refused without being opened. */
static void test_roots_alone_details(void **state)
{
    (void)state;
    if (why_no_etc)
        skip();
#define B ROOTS_ALONE_BASE
    ltr_error err;
    assert_int_equal(roots_alone_tree(false, "chmod 0775 t t/lib && chmod 0664 t/lib/libltr-heap.so"), 0);
    assert_int_equal(ltr_open_roots_alone(B "/t/lib/libltr-heap.so", &err), -EPERM);
    assert_non_null(strstr(err.msg, "to leave it to root alone: chmod go-w " B "/t " B "/t/lib " B
                                    "/t/lib/libltr-heap.so"));
    assert_null(strstr(err.msg, "staff-group-for-usr-local"));

    assert_int_equal(roots_alone_tree(false, "ln -s lib t/link && mkdir -m 0777 w && "
                                             "ln -s ../t/lib/libltr-heap.so w/agent"), 0);
    int fd = ltr_open_roots_alone(B "/t/link/libltr-heap.so", &err);
    assert_true(fd >= 0);
    close(fd);
    fd = ltr_open_roots_alone(B "/w/agent", &err); /* a link where anyone writes: where it leads counts */
    assert_true(fd >= 0);
    close(fd);

    assert_int_equal(roots_alone_tree(false, "mkfifo -m 0644 t/lib/fifo"), 0);
    assert_int_equal(ltr_open_roots_alone(B "/t/lib/fifo", &err), -EPERM);
    assert_non_null(strstr(err.msg, B "/t/lib/fifo is not a regular file"));
    assert_int_equal(ltr_open_roots_alone(B "/t/lib", &err), -EPERM);
    assert_non_null(strstr(err.msg, B "/t/lib is a directory, not a regular file"));
    assert_int_equal(ltr_open_roots_alone(B "/t/lib/none", &err), -ENOENT);
    tu_expect_ok(tu_run("rm -rf " B));
#undef B
}

int main(void)
{
    if (geteuid() != 0)
        why_no_etc = "not root: the rule's cases need root (chown) and a private /etc";
    else if (tu_private_etc() != 0)
        why_no_etc = "no private /etc could be made (mount namespaces, overlayfs)";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_new, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_temporaries_differ, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_leftover_temps, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_publish, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_publish_replaces_files_only, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_absolute_path, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_write_new_file, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test(test_roots_alone_cases),
        cmocka_unit_test(test_roots_alone_details),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
