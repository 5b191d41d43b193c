/*
 * tests/e2e/test_recorder_refuses.c — the recorder's own refusal of an
 * existing path (the atomic check behind the command line's early one), asked
 * over the control socket directly as a client that skips that early check
 * would, of a session `ltr start` started.
 */
#include "recorder/client.h"
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int request(const char *op, const char *path, int force, char *msg, size_t size)
{
    ltr_error err = {0};
    int rc = ltr_client_op("ltr", op, path, NULL, force, NULL, &err);
    snprintf(msg, size, "%s", err.msg);
    return rc;
}

/* The recorder itself refuses an existing path for save and stop (the stop
 * before it ends anything), whatever the client checked. */
static void recorder_refuses(const char *dir, const char *mode)
{
    char path[512], msg[512];
    snprintf(path, sizeof path, "%s", in_dir(dir, "t.ltr"));
    write_text(path, "precious");
    tu_result r = tu_run("%s start %s --provider Test.Producer", tu_ltr(), mode);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    if (!*mode) {
        assert_int_equal(request("save", path, 0, msg, sizeof msg), -EEXIST);
        assert_non_null(strstr(msg, "--force"));
        assert_text(path, "precious");
    }
    assert_int_equal(request("stop", path, 0, msg, sizeof msg), -EEXIST);
    assert_non_null(strstr(msg, path));
    assert_text(path, "precious");
    assert_int_equal(request("status", NULL, 0, msg, sizeof msg), 0); /* still recording */
    assert_int_equal(request("stop", path, 1, msg, sizeof msg), 0);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
}

static void test_recorder_refuses_memory(void **state) { recorder_refuses(*state, ""); }
static void test_recorder_refuses_file_mode(void **state) { recorder_refuses(*state, "--filemode"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recorder_refuses_memory, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_recorder_refuses_file_mode, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
