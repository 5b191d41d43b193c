/*
 * tests/prim/test_files.c — prim/files.c, how every output file is made: only
 * new files, unpredictable temporaries, publication that replaces nothing
 * unless forced. The recorder's own refusal of an existing path is
 * tests/e2e/test_recorder_refuses.c.
 */
#include "prim/prim.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_new, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_temporaries_differ, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_publish, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
