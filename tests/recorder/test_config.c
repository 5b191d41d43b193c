/*
 * tests/recorder/test_config.c — provider specifications, session names, the
 * name-derived provider GUID (checked against GUIDs .NET EventSource derives).
 */
#include "recorder/recorder.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

static void expect_guid(const char *name, const char *want)
{
    ltr_guid g;
    char text[37];
    ltr_guid_from_name(name, &g);
    ltr_guid_format(&g, text);
    assert_string_equal(text, want);
}

static void test_guid_from_name_matches_eventsource(void **state)
{
    expect_guid("Acme-BizGear-SalesContext", "d5b29467-62f5-54a9-4861-96cf631b95b4");
    expect_guid("Acme-BizGear-InventoryContext", "9a9cf874-7496-5df5-6e80-1c5804eccd57");
    /* EventSource upper-cases the name first. */
    expect_guid("acme-bizgear-salescontext", "d5b29467-62f5-54a9-4861-96cf631b95b4");
}

static void test_guid_parse(void **state)
{
    ltr_guid g;
    char text[37];
    assert_int_equal(ltr_guid_parse("{D5B29467-62F5-54A9-4861-96CF631B95B4}", &g), 0);
    ltr_guid_format(&g, text);
    assert_string_equal(text, "d5b29467-62f5-54a9-4861-96cf631b95b4");
    assert_int_equal(ltr_guid_parse("d5b29467-62f5-54a9-4861-96cf631b95b", &g), -1);
    assert_int_equal(ltr_guid_parse("d5b29467x62f5-54a9-4861-96cf631b95b4", &g), -1);
    assert_int_equal(ltr_guid_parse("g5b29467-62f5-54a9-4861-96cf631b95b4", &g), -1);
}

static void test_provider_spec(void **state)
{
    ltr_provider_spec ps;
    ltr_error err;
    assert_int_equal(ltr_provider_spec_parse("My.Provider", &ps, &err), 0);
    assert_string_equal(ps.name, "My.Provider");
    assert_int_equal(ps.any, 0);
    assert_int_equal(ps.level, 5);
    assert_int_equal(ltr_provider_spec_parse("My.Provider:0x30:2", &ps, &err), 0);
    assert_int_equal(ps.any, 0x30);
    assert_int_equal(ps.level, 2);
    assert_int_equal(ltr_provider_spec_parse("d5b29467-62f5-54a9-4861-96cf631b95b4::4", &ps, &err), 0);
    char text[37];
    ltr_guid_format(&ps.guid, text);
    assert_string_equal(text, "d5b29467-62f5-54a9-4861-96cf631b95b4");
    assert_int_equal(ps.level, 4);
    assert_int_not_equal(ltr_provider_spec_parse(":1:1", &ps, &err), 0);
    assert_non_null(strstr(err.msg, "missing"));
    assert_int_not_equal(ltr_provider_spec_parse("X:0x1:6", &ps, &err), 0);
    assert_int_not_equal(ltr_provider_spec_parse("X:-1", &ps, &err), 0);
}

static void test_session_names(void **state)
{
    ltr_error err;
    assert_int_equal(ltr_session_name_check("ltr", &err), 0);
    assert_int_equal(ltr_session_name_check("my-session_2.x", &err), 0);
    assert_int_not_equal(ltr_session_name_check("", &err), 0);
    assert_int_not_equal(ltr_session_name_check("../etc", &err), 0);
    assert_int_not_equal(ltr_session_name_check("a b", &err), 0);
    char longname[100];
    memset(longname, 'a', 99);
    longname[99] = 0;
    assert_int_not_equal(ltr_session_name_check(longname, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guid_from_name_matches_eventsource),
        cmocka_unit_test(test_guid_parse),
        cmocka_unit_test(test_provider_spec),
        cmocka_unit_test(test_session_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
