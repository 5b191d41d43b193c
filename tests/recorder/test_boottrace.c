/*
 * tests/recorder/test_boottrace.c — the boot trace's unit (recorder/
 * boottrace.h) in-process, under a scratch root directory: the unit's text
 * and its quoting, what install writes (unit, wants link, the directories
 * it made, named in the unit), a reinstall, the refusals (a unit or link
 * of that name that is not ours, a symlink planted where the unit goes, no
 * systemd), and that remove takes exactly what install added.
 */
#include "recorder/boottrace.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static int make_root(void **state)
{
    snprintf(root, sizeof root, "/tmp/ltr-boot-XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[200];
    snprintf(p, sizeof p, "%s/etc/systemd", root);
    char etc[200];
    snprintf(etc, sizeof etc, "%s/etc", root);
    assert_int_equal(mkdir(etc, 0755), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    return 0;
}

static int drop_root(void **state)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static char *at(const char *rel)
{
    static char p[4][300];
    static int k;
    char *out = p[k++ % 4];
    snprintf(out, 300, "%s/%s", root, rel);
    return out;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

static void unit_of(ltr_bytes *out, bool filemode, const char *output)
{
    const char *args[] = {"start", "heap", "--instance", "boot", "--buffers", "64"};
    ltr_boottrace bt = {.ltr = "/usr/bin/ltr", .instance = "boot", .output = output, .filemode = filemode,
                        .start_args = args, .nargs = 6};
    ltr_error err;
    assert_int_equal(ltr_boottrace_unit(&bt, out, &err), 0);
    ltr_bytes_put_u8(out, 0);
    out->len--;
}

static void test_unit_text(void **state)
{
    ltr_bytes u = {0};
    unit_of(&u, false, "/var/log/a \"q\" 50% $HOME\\x.ltr");
    const char *t = (const char *)u.data;
    assert_true(strncmp(t, "# Written by 'ltr boottrace'", 28) == 0);
    assert_non_null(strstr(t, "\nExecStart=\"/usr/bin/ltr\" \"start\" \"heap\" \"--instance\" \"boot\" \"--buffers\" \"64\"\n"));
    /* memory mode: the trace at shutdown, replacing an earlier boot's; every
     * character systemd would take for its own escaped */
    assert_non_null(strstr(t, "\nExecStop=-\"/usr/bin/ltr\" \"stop\" \"/var/log/a \\\"q\\\" 50%% $$HOME\\\\x.ltr\" "
                              "\"--instance\" \"boot\" \"--force\"\n"));
    assert_non_null(strstr(t, "\nType=forking\n"));
    assert_non_null(strstr(t, "\nEnvironment=LTR_RUNTIME_DIR=/run/ltr\n"));
    assert_non_null(strstr(t, "\nWantedBy=sysinit.target\n"));
    assert_null(strstr(t, "RequiresMountsFor")); /* a path with spaces is left out */
    ltr_bytes_free(&u);

    unit_of(&u, true, "/var/log/boot.ltr"); /* file mode: stopped into its own file */
    t = (const char *)u.data;
    assert_non_null(strstr(t, "\nExecStop=-\"/usr/bin/ltr\" \"stop\" \"/var/log/boot.ltr\" \"--instance\" \"boot\"\n"));
    assert_non_null(strstr(t, "\nRequiresMountsFor=/var/log\n"));
    ltr_bytes_free(&u);

    unit_of(&u, false, NULL); /* memory mode without -o: nothing at shutdown */
    assert_null(strstr((const char *)u.data, "ExecStop"));
    assert_null(strstr((const char *)u.data, "LTR_HEAP_AGENT")); /* none given: none named */
    ltr_bytes_free(&u);

    /* the agent checked, named for the boot: in an Environment= line $ is
     * itself (not doubled), % and the quoting as on the command line */
    const char *args[] = {"start", "heap"};
    ltr_boottrace named = {.ltr = "/usr/bin/ltr", .agent = "/opt/a \"b\" 5% $x\\y/libltr-heap.so",
                           .instance = "boot", .start_args = args, .nargs = 2};
    ltr_error e;
    assert_int_equal(ltr_boottrace_unit(&named, &u, &e), 0);
    ltr_bytes_put_u8(&u, 0);
    assert_non_null(strstr((const char *)u.data, "\nEnvironment=\"LTR_HEAP_AGENT=/opt/a \\\"b\\\" 5%% $x\\\\y/"
                                                 "libltr-heap.so\"\nExecStart=\"/usr/bin/ltr\" \"start\" \"heap\"\n"));
    ltr_bytes_free(&u);
    named.agent = "/opt/a\nExecStartPre=/bin/evil/libltr-heap.so";
    assert_int_equal(ltr_boottrace_unit(&named, &u, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "control character"));
    assert_null(strchr(e.msg, '\n')); /* shown as '?', not a line of the caller's */
    ltr_bytes_free(&u);
    named.agent = "/opt/\xff\xfe/libltr-heap.so"; /* systemd ignores a line that is not UTF-8 */
    assert_int_equal(ltr_boottrace_unit(&named, &u, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "=/opt/?" "?/libltr-heap.so' holds a control character or is not valid UTF-8"));
    ltr_bytes_free(&u);
    named.agent = "/opt/caf\xc3\xa9/libltr-heap.so"; /* UTF-8 is fine */
    assert_int_equal(ltr_boottrace_unit(&named, &u, &e), 0);
    ltr_bytes_free(&u);

    const char *bad[] = {"start", "heap\nExecStartPre=/bin/evil"};
    ltr_boottrace bt = {.ltr = "/usr/bin/ltr", .instance = "boot", .start_args = bad, .nargs = 2};
    ltr_error err;
    assert_int_equal(ltr_boottrace_unit(&bt, &u, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "control character"));
    ltr_bytes_free(&u);
    const char *semi[] = {"start", ";"};
    bt.start_args = semi;
    assert_int_equal(ltr_boottrace_unit(&bt, &u, &err), -EINVAL);
    ltr_bytes_free(&u);
}

static void test_install_and_remove(void **state)
{
    ltr_bytes u = {0};
    unit_of(&u, true, "/var/log/boot.ltr");
    ltr_boottrace_done d;
    ltr_error err;
    assert_int_equal(ltr_boottrace_install(root, &u, true, &d, &err), 0);
    assert_false(d.replaced);
    assert_true(d.linked);
    assert_int_equal(ltr_boottrace_installed(root), 1);
    assert_string_equal(d.unit, at("etc/systemd/system/ltr-boottrace.service"));
    struct stat st;
    assert_int_equal(lstat(d.unit, &st), 0);
    assert_true(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0644);
    char target[300];
    ssize_t n = readlink(d.link, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = 0;
    assert_string_equal(target, "/etc/systemd/system/ltr-boottrace.service");
    char *t = slurp(d.unit);
    assert_true(strncmp(t, (const char *)u.data, u.len) == 0);
    assert_int_equal(count(t, "# made by ltr boottrace: etc/systemd/system\n"), 1);
    assert_int_equal(count(t, "# made by ltr boottrace: etc/systemd/system/sysinit.target.wants\n"), 1);
    free(t);

    /* again, in memory mode: replaced; the directories made the first time
     * are still named once */
    ltr_bytes m = {0};
    unit_of(&m, false, NULL);
    assert_int_equal(ltr_boottrace_install(root, &m, true, &d, &err), 0);
    assert_true(d.replaced);
    t = slurp(d.unit);
    assert_null(strstr(t, "--filemode"));
    assert_int_equal(count(t, "# made by ltr boottrace: "), 2);
    free(t);
    ltr_bytes_free(&m);

    assert_int_equal(ltr_boottrace_remove(root, &d, &err), 0);
    assert_true(d.found && d.unit_removed && d.link_removed && d.dirs_removed);
    assert_int_equal(access(at("etc/systemd/system"), F_OK), -1); /* made by install: gone */
    assert_int_equal(access(at("etc/systemd"), F_OK), 0);          /* was there: stays */

    assert_int_equal(ltr_boottrace_remove(root, &d, &err), 0); /* nothing there */
    assert_false(d.found);
    assert_int_equal(ltr_boottrace_installed(root), 0);
    ltr_bytes_free(&u);
}

/* Someone else's files stay as they are, and are not written through. */
static void test_refusals(void **state)
{
    ltr_bytes u = {0};
    unit_of(&u, false, NULL);
    ltr_boottrace_done d;
    ltr_error err;
    assert_int_equal(mkdir(at("etc/systemd/system"), 0755), 0);

    /* a unit of that name that is not ours */
    FILE *f = fopen(at("etc/systemd/system/ltr-boottrace.service"), "w");
    fputs("[Unit]\nDescription=someone's\n", f);
    fclose(f);
    assert_int_equal(ltr_boottrace_install(root, &u, true, &d, &err), -EEXIST);
    assert_non_null(strstr(err.msg, "not written by ltr boottrace"));
    assert_int_equal(ltr_boottrace_installed(root), -EEXIST);
    char *t = slurp(at("etc/systemd/system/ltr-boottrace.service"));
    assert_string_equal(t, "[Unit]\nDescription=someone's\n");
    free(t);
    assert_int_equal(access(at("etc/systemd/system/sysinit.target.wants"), F_OK), -1);
    assert_int_equal(ltr_boottrace_remove(root, &d, &err), -EEXIST);
    assert_int_equal(access(at("etc/systemd/system/ltr-boottrace.service"), F_OK), 0);
    unlink(at("etc/systemd/system/ltr-boottrace.service"));

    /* a symlink planted where the unit goes: refused, its target untouched */
    f = fopen(at("victim"), "w");
    fputs("victim\n", f);
    fclose(f);
    assert_int_equal(symlink(at("victim"), at("etc/systemd/system/ltr-boottrace.service")), 0);
    assert_int_equal(ltr_boottrace_install(root, &u, true, &d, &err), -EEXIST);
    t = slurp(at("victim"));
    assert_string_equal(t, "victim\n");
    free(t);
    unlink(at("etc/systemd/system/ltr-boottrace.service"));

    /* a link of that name to something else: refused, and no unit is left */
    assert_int_equal(mkdir(at("etc/systemd/system/sysinit.target.wants"), 0755), 0);
    assert_int_equal(symlink("/etc/systemd/system/other.service",
                             at("etc/systemd/system/sysinit.target.wants/ltr-boottrace.service")), 0);
    assert_int_equal(ltr_boottrace_install(root, &u, true, &d, &err), -EEXIST);
    assert_non_null(strstr(err.msg, "is not ltr boottrace's link"));
    assert_int_equal(access(at("etc/systemd/system/ltr-boottrace.service"), F_OK), -1);
    /* without the link (systemctl makes it): the unit alone; remove leaves the foreign link */
    assert_int_equal(ltr_boottrace_install(root, &u, false, &d, &err), 0);
    assert_false(d.linked);
    assert_int_equal(ltr_boottrace_remove(root, &d, &err), 0);
    assert_true(d.unit_removed && !d.link_removed);
    char target[300];
    assert_true(readlink(at("etc/systemd/system/sysinit.target.wants/ltr-boottrace.service"), target,
                         sizeof target) > 0);
    assert_int_equal(access(at("etc/systemd/system"), F_OK), 0); /* not made by install: stays */

    /* no systemd: no etc/systemd */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s/etc/systemd", root);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(ltr_boottrace_install(root, &u, true, &d, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "needs systemd"));
    assert_int_equal(ltr_boottrace_remove(root, &d, &err), 0);
    assert_false(d.found);
    ltr_bytes_free(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unit_text),
        cmocka_unit_test_setup_teardown(test_install_and_remove, make_root, drop_root),
        cmocka_unit_test_setup_teardown(test_refusals, make_root, drop_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
