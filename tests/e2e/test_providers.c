/*
 * tests/e2e/test_providers.c — `ltr providers` as a user runs it: a heap
 * session with a program run into it: Ltr.Heap is listed with its GUID and
 * the session that enables it; --details names the events the program
 * registered there (Alloc, Free) with their fields; --session filters; once
 * the session is cancelled nothing enables it; and the refusals. A traced
 * program's provider and event names (a C1 CSI, a bidirectional override,
 * an 8-bit CSI byte, an ESC) reach root's terminal as '?'.
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

/* printf(1) octal: C1 CSI (U+009B), RLO (U+202E), a lone 0x9b, ESC */
#define EVIL "Evil\\302\\2332J\\342\\200\\256XYZ\\2333m\\033[31m"

static void test_hostile_names(void **state)
{
    (void)state;
    tu_result r = tu_run("%s start --instance prov-h --provider \"$(printf '" EVIL "')\" && %s --name \"$(printf '" EVIL
                         "')\" --event-name \"$(printf 'Ev\\302\\2331;1H\\342\\201\\246name')\" --events 10 "
                         "--wait-enabled 10",
                         LTR, tu_test_bin("ltr-test-producer"));
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    tu_free(&r);
    static const char *const cmds[] = {"providers", "providers --details \"$(printf '" EVIL "')\"",
                                       "providers --details 'Evil?2J?XYZ?3m?[31m'"}; /* as listed, it is found */
    static const char *const want[] = {"\nEvil?2J?XYZ?3m?[31m ", "  Ev?1;1H?name id=", "  Ev?1;1H?name id="};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        r = tu_run("%s %s", LTR, cmds[i]);
        const char *bad = tu_acted_on(r.out);
        if (bad)
            fail_msg("ltr %s: a byte a terminal acts on (0x%02x) at offset %td of its output", cmds[i],
                     (unsigned char)*bad, bad - r.out);
        if (r.status != 0 || !strstr(r.out, want[i])) /* each character one '?' */
            fail_msg("ltr %s: %s%s", cmds[i], r.out, r.err);
        tu_free(&r);
    }
    tu_expect_ok(tu_run("%s cancel --instance prov-h", LTR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_providers, tu_setup_sandbox, tu_teardown_sandbox),
        cmocka_unit_test_setup_teardown(test_hostile_names, tu_setup_sandbox, tu_teardown_sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
