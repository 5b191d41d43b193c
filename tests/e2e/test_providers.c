/*
 * tests/e2e/test_providers.c — `ltr providers` as a user runs it: a heap
 * session with a program run into it: Ltr.Heap is listed with its GUID and
 * the session that enables it; --details names the events the program
 * registered there (Alloc, Free) with their fields; --session filters; once
 * the session is cancelled nothing enables it; and the refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/testutil.h"

#include <string.h>

#define LTR tu_ltr()
#define HEAP_GUID "45a381ab-8845-52a7-829b-c46aee5e9656"

static void test_providers(void **state)
{
    (void)state;
    tu_result r = tu_run("%s start heap --instance prov-a && %s run -- %s counts", LTR, LTR,
                         tu_test_bin("heap-target"));
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    r = tu_run("%s providers", LTR);
    assert_int_equal(r.status, 0);
    const char *line = strstr(r.out, "\nLtr.Heap ");
    assert_non_null(line);
    assert_non_null(strstr(line, HEAP_GUID));
    assert_non_null(strstr(line, "prov-a (level"));
    tu_free(&r);
    r = tu_run("%s providers --details Ltr.Heap", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "events registered in session 'prov-a'"));
    assert_non_null(strstr(r.out, "  Alloc id="));
    assert_non_null(strstr(r.out, "  Free id="));
    assert_non_null(strstr(r.out, "fields=address:pvar,size:uvar"));
    tu_free(&r);
    r = tu_run("%s providers --details " HEAP_GUID " --session prov-a", LTR); /* by GUID too */
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "  Alloc id="));
    tu_free(&r);
    r = tu_run("%s providers --session prov-a", LTR);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\nLtr.Heap "));
    tu_free(&r);
    r = tu_run("%s cancel --instance prov-a && %s providers", LTR, LTR);
    assert_int_equal(r.status, 0);
    line = strstr(r.out, "\nLtr.Heap ");
    assert_non_null(line);
    assert_null(strstr(line, "prov-a")); /* nothing enables it now */
    tu_free(&r);
    r = tu_run("%s providers --details No.Such.Provider", LTR);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "No.Such.Provider"));
    tu_free(&r);
    r = tu_run("%s providers --session nosuch", LTR);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no session named 'nosuch'"));
    tu_free(&r);
    r = tu_run("%s providers extra", LTR);
    assert_int_equal(r.status, 2);
    tu_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_providers, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
