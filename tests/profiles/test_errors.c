/*
 * tests/profiles/test_errors.c — every error and warning case of reading
 * profiles, each checked for its severity, message, file, line and id:
 * untrusted input (not XML, wrong root, huge, deep, entities, external
 * entities), inheritance faults (cycles, missing or wrong-kind bases,
 * duplicate ids, mixed object types), schema order, profile ids, bad values,
 * Strict, and bad specs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/helpers.h"

/* Lists file and returns the diagnostic of that severity and text, checking
 * the list's result agrees with the severity. The list is freed at the end
 * of the test through *keep. */
static const ltr_diag *listed(const char *file, ltr_diag_severity sev, const char *text,
                              ltr_profile_list **keep)
{
    int rc = ltr_profiles_list(file, builtin_dir(), keep);
    const ltr_diag *d = find_diag(&(*keep)->diags, sev, text);
    if (!d) {
        fprintf(stderr, "no %s containing '%s' for %s; got:\n",
                sev == LTR_DIAG_ERROR ? "error" : "warning", text, file);
        dump_diags(&(*keep)->diags);
    }
    assert_non_null(d);
    if (sev == LTR_DIAG_ERROR)
        assert_int_equal(rc, -1);
    assert_string_equal(d->file, file);
    return d;
}

static const char profile_p[] =
    "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
    "<Collectors><EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E'/>"
    "</EventProviders></EventCollectorId></Collectors></Profile>";

static void not_xml(void **state)
{
    ltr_profile_list *l = NULL;
    const char *f = write_file("text.wprp", "this is not xml at all\n");
    listed(f, LTR_DIAG_ERROR, "not a well-formed XML file", &l);
    ltr_profile_list_free(l);
    f = write_file("empty.wprp", "");
    listed(f, LTR_DIAG_ERROR, "not a well-formed XML file", &l);
    ltr_profile_list_free(l);
    f = write_file("unclosed.wprp", "<WindowsPerformanceRecorder>\n<Profiles>\n");
    listed(f, LTR_DIAG_ERROR, "not a well-formed XML file", &l);
    ltr_profile_list_free(l);
}

static void wrong_root(void **state)
{
    ltr_profile_list *l = NULL;
    const char *f = write_file("root.wprp", "<?xml version='1.0'?>\n\n<Profiles/>\n");
    const ltr_diag *d = listed(f, LTR_DIAG_ERROR, "the root element is <Profiles>", &l);
    assert_int_equal(d->line, 3);
    ltr_profile_list_free(l);
}

static void huge_file(void **state)
{
    size_t n = (4u << 20) + 100;
    char *text = malloc(n + 1);
    assert_non_null(text);
    memset(text, ' ', n);
    memcpy(text, "<WindowsPerformanceRecorder>", 28);
    text[n] = 0;
    ltr_profile_list *l = NULL;
    const char *f = write_file("huge.wprp", text);
    free(text);
    listed(f, LTR_DIAG_ERROR, "larger than", &l);
    ltr_profile_list_free(l);
}

static void deep_nesting(void **state)
{
    char text[8192] = "<WindowsPerformanceRecorder><Profiles><EventProvider Id='E' Name='x'>";
    for (int i = 0; i < 40; i++)
        strcat(text, "<Keywords>");
    for (int i = 0; i < 40; i++)
        strcat(text, "</Keywords>");
    strcat(text, "</EventProvider></Profiles></WindowsPerformanceRecorder>");
    ltr_profile_list *l = NULL;
    listed(write_file("deep.wprp", text), LTR_DIAG_ERROR, "nested more than", &l);
    ltr_profile_list_free(l);
    /* far deeper than libxml2's own limit: refused by the parser */
    size_t n = 5000;
    char *big = malloc(n * 30 + 100);
    assert_non_null(big);
    strcpy(big, "<WindowsPerformanceRecorder>");
    for (size_t i = 0; i < n; i++)
        strcat(big, "<a>");
    listed(write_file("deeper.wprp", big), LTR_DIAG_ERROR, "not a well-formed XML file", &l);
    free(big);
    ltr_profile_list_free(l);
}

static void entity_expansion(void **state)
{
    const char *f = write_file("laughs.wprp",
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE WindowsPerformanceRecorder [\n"
        " <!ENTITY a 'aaaaaaaaaa'>\n <!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>\n"
        " <!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;'>\n <!ENTITY d '&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;'>\n]>\n"
        "<WindowsPerformanceRecorder><Profiles><EventProvider Id='E' Name='&d;'/></Profiles>"
        "</WindowsPerformanceRecorder>\n");
    ltr_profile_list *l = NULL;
    listed(f, LTR_DIAG_ERROR, "DOCTYPE declarations are refused", &l);
    ltr_profile_list_free(l);
}

static void external_entity(void **state)
{
    const char *f = write_file("xxe.wprp",
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE WindowsPerformanceRecorder [ <!ENTITY x SYSTEM 'file:///etc/passwd'> ]>\n"
        "<WindowsPerformanceRecorder><Profiles><EventProvider Id='E' Name='&x;'/></Profiles>"
        "</WindowsPerformanceRecorder>\n");
    ltr_profile_list *l = NULL;
    listed(f, LTR_DIAG_ERROR, "DOCTYPE declarations are refused", &l);
    ltr_profile_list_free(l);
    f = write_file("dtd.wprp", "<?xml version='1.0'?>\n"
                               "<!DOCTYPE WindowsPerformanceRecorder SYSTEM 'http://example.com/x.dtd'>\n"
                               "<WindowsPerformanceRecorder><Profiles/></WindowsPerformanceRecorder>\n");
    listed(f, LTR_DIAG_ERROR, "DOCTYPE declarations are refused", &l);
    ltr_profile_list_free(l);
}

static void base_cycle(void **state)
{
    ltr_profile_list *l = NULL;
    /* the cycle is found when a profile uses E, and reported on E */
    const char *g = write_wprp("cycle2.wprp",
        "<EventCollector Id='EC' Name='Ev'/>\n"
        "<EventProvider Id='E' Base='F' Name='x'/>\n"
        "<EventProvider Id='F' Base='G' Name='x'/>\n"
        "<EventProvider Id='G' Base='E' Name='x'/>\n"
        "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E'/>"
        "</EventProviders></EventCollectorId></Collectors></Profile>");
    const ltr_diag *d = listed(g, LTR_DIAG_ERROR, "forms a cycle: E -> F -> G -> E", &l);
    assert_string_equal(d->id, "E");
    assert_int_equal(d->line, 5);
    assert_int_equal(l->diags.errors, 1); /* reported once, not for F and G too */
    ltr_profile_list_free(l);
}

/* A profile named whose Base= chain fails is that failure, said once:
 * 'ltr profiles cyc.wprp!A --details' also said "'A': no profile of that
 * name in cyc.wprp", of a profile the file has. */
static void broken_profile_named_is_not_missing(void **state)
{
    (void)state;
    const char *f = write_wprp("cycprof.wprp",
        "<Profile Id='A.Verbose.File' Base='B.Verbose.File' Name='A' Description='d' DetailLevel='Verbose' "
        "LoggingMode='File'/>\n"
        "<Profile Id='B.Verbose.File' Base='A.Verbose.File' Name='B' Description='d' DetailLevel='Verbose' "
        "LoggingMode='File'/>\n"
        "<Profile Id='C.Verbose.File' Base='Nowhere.Verbose.File' Name='C' Description='d' "
        "DetailLevel='Verbose' LoggingMode='File'/>");
    const char *names[] = {"A", "C"};
    const char *why[] = {"forms a cycle", "not found"};
    for (int i = 0; i < 2; i++) {
        char spec_text[600];
        snprintf(spec_text, sizeof spec_text, "%s!%s", f, names[i]);
        ltr_plan *p = NULL;
        assert_int_not_equal(resolve(&p, true, spec_text, NULL), 0);
        assert_non_null(p);
        assert_non_null(find_diag(&p->diags, LTR_DIAG_ERROR, why[i]));
        assert_null(find_diag(&p->diags, LTR_DIAG_ERROR, "no profile of that name"));
        ltr_plan_free(p);
    }
    ltr_plan *p = NULL; /* a name the file does not have is still said so */
    char spec_text[600];
    snprintf(spec_text, sizeof spec_text, "%s!Z", f);
    assert_int_not_equal(resolve(&p, true, spec_text, NULL), 0);
    assert_non_null(find_diag(&p->diags, LTR_DIAG_ERROR, "no profile of that name"));
    ltr_plan_free(p);
}

static void missing_and_wrong_bases(void **state)
{
    char body[2048];
    snprintf(body, sizeof body,
             "<EventCollector Id='EC' Name='Ev'/>\n"
             "<EventProvider Id='E' Base='Nowhere' Name='x'/>\n%s\n"
             "<Profile Id='Q.Verbose.File' Base='EC' Name='Q' Description='d' DetailLevel='Verbose' LoggingMode='File'/>",
             profile_p);
    ltr_profile_list *l = NULL;
    const char *f = write_wprp("bases.wprp", body);
    const ltr_diag *d = listed(f, LTR_DIAG_ERROR, "Base 'Nowhere' not found", &l);
    assert_string_equal(d->id, "E");
    assert_int_equal(d->line, 5);
    d = find_diag(&l->diags, LTR_DIAG_ERROR, "Base 'EC' is a EventCollector");
    assert_non_null(d);
    assert_string_equal(d->id, "Q.Verbose.File");
    ltr_profile_list_free(l);
}

static void duplicate_ids(void **state)
{
    char body[2048];
    snprintf(body, sizeof body,
             "<EventCollector Id='EC' Name='Ev'/>\n<EventCollector Id='EC' Name='Other'/>\n"
             "<EventProvider Id='E' Name='x'/>\n%s", profile_p);
    ltr_profile_list *l = NULL;
    const char *f = write_wprp("dup.wprp", body);
    const ltr_diag *d = listed(f, LTR_DIAG_ERROR, "duplicate EventCollector id", &l);
    assert_string_equal(d->id, "EC");
    assert_int_equal(d->line, 5);
    assert_non_null(strstr(d->msg, "line 4"));
    ltr_profile_list_free(l);

    /* the same id in two files given together: a warning, not an error */
    snprintf(body, sizeof body, "<EventCollector Id='EC' Name='Second'/>\n%s", profile_p);
    const char *b = write_wprp("dupb.wprp", body);
    ltr_plan *p = NULL;
    char s1[600];
    snprintf(s1, sizeof s1, "%s!P", b);
    const char *a_prof = write_wprp("dupa2.wprp", "<EventCollector Id='EC' Name='First'/>\n"
        "<EventProvider Id='E' Name='x'/>\n"
        "<Profile Id='A.Verbose.File' Name='A' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><EventCollectorId Value='EC'/></Collectors></Profile>");
    char s0[600];
    snprintf(s0, sizeof s0, "%s!A", a_prof);
    assert_int_equal(resolve(&p, true, s0, s1, NULL), 0);
    d = find_diag(&p->diags, LTR_DIAG_WARNING, "EventCollector id also defined in");
    assert_non_null(d);
    assert_string_equal(d->id, "EC");
    assert_string_equal(d->file, b);
    assert_non_null(find_collector(p, "First")); /* each file sees its own EC first */
    assert_non_null(find_collector(p, "Second"));
    ltr_plan_free(p);
}

/* A file defining ids the built-in profiles define too (an exported
 * built-in profile defines them all): one warning naming them, not one each. */
static void builtin_ids_shadowed(void **state)
{
    (void)state;
    char body[2048];
    snprintf(body, sizeof body, "<SystemCollector Id='ltr.SystemCollector' Name='Mine'/>\n"
             "<EventCollector Id='EC' Name='Ev'/>\n<HeapEventCollector Id='ltr.HeapCollector' Name='MyHeap'/>\n"
             "<EventProvider Id='E' Name='x'/>\n%s", profile_p);
    const char *f = write_wprp("shadow.wprp", body);
    ltr_profile_list *l = NULL;
    const ltr_diag *d = listed(f, LTR_DIAG_WARNING, "2 id(s) also defined by the built-in profiles", &l);
    assert_non_null(strstr(d->msg, "ltr.SystemCollector, ltr.HeapCollector"));
    size_t warnings = 0;
    for (size_t i = 0; i < l->diags.n; i++)
        warnings += l->diags.v[i].severity == LTR_DIAG_WARNING && l->diags.v[i].file &&
                    !strcmp(l->diags.v[i].file, f);
    assert_int_equal(warnings, 1);
    ltr_profile_list_free(l);
}

static void out_of_schema_order(void **state)
{
    char body[2048];
    snprintf(body, sizeof body,
             "<EventProvider Id='E' Name='x'/>\n<EventCollector Id='EC' Name='Ev'/>\n%s", profile_p);
    ltr_profile_list *l = NULL;
    const ltr_diag *d = listed(write_wprp("order.wprp", body), LTR_DIAG_WARNING,
                               "<EventCollector> comes after <EventProvider>: out of the schema's order", &l);
    assert_string_equal(d->id, "EC");
    assert_int_equal(d->line, 5);
    assert_int_equal(l->diags.errors, 0);
    assert_int_equal(l->n, 1);
    ltr_profile_list_free(l);
}

static void profile_id_pattern(void **state)
{
    ltr_profile_list *l = NULL;
    const char *f = write_wprp("id.wprp",
        "<EventCollector Id='EC' Name='Ev'/>\n<EventProvider Id='E' Name='x'/>\n"
        "<Profile Id='Whatever' Name='P' Description='d' DetailLevel='Light' LoggingMode='Memory'>"
        "<Collectors><EventCollectorId Value='EC'/></Collectors></Profile>");
    const ltr_diag *d = listed(f, LTR_DIAG_WARNING, "expected 'P.Light.Memory'", &l);
    assert_string_equal(d->id, "Whatever");
    assert_int_equal(d->line, 6);
    assert_int_equal(l->diags.errors, 0);
    ltr_profile_list_free(l);
}

static void mixed_object_types(void **state)
{
    ltr_profile_list *l = NULL;
    const char *f = write_wprp("mixed.wprp",
        "<SystemCollector Id='SC' Base='EC'/>\n"
        "<EventCollector Id='EC' Name='Ev'><BufferSize Value='64'/></EventCollector>\n"
        "<EventProvider Id='E' Name='x'/>\n"
        "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><SystemCollectorId Value='SC'/><HeapEventCollectorId Value='EC'/></Collectors></Profile>");
    const ltr_diag *d = listed(f, LTR_DIAG_WARNING, "derivation across object types is ambiguous", &l);
    assert_string_equal(d->id, "SC");
    assert_non_null(strstr(d->msg, "SystemCollector 'SC' derives from EventCollector 'EC'"));
    d = find_diag(&l->diags, LTR_DIAG_WARNING, "HeapEventCollectorId 'EC' names a EventCollector");
    assert_non_null(d);
    assert_string_equal(d->id, "P.Verbose.File");
    assert_int_equal(l->diags.errors, 0);
    ltr_profile_list_free(l);
}

static void bad_values(void **state)
{
    ltr_profile_list *l = NULL;
    const char *f = write_wprp("values.wprp",
        "<SystemCollector Id='SC' Name='S'><BufferSize Value='2'/></SystemCollector>\n"
        "<EventCollector Id='EC' Name='Ev'><Buffers Value='150' PercentageOfTotalMemory='true'/></EventCollector>\n"
        "<EventProvider Id='E' Name='x' Level='300' Stack='maybe'><Keywords><Keyword Value='0xZZ'/></Keywords></EventProvider>\n"
        "<HeapEventProvider Id='H'><HeapProcessIds Operation='Replace'><HeapProcessId Value='abc'/></HeapProcessIds></HeapEventProvider>\n"
        "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><SystemCollectorId Value='SC'/><EventCollectorId Value='EC'><EventProviders>"
        "<EventProviderId Value='E'/></EventProviders></EventCollectorId>"
        "<HeapEventCollectorId Value='HC'/></Collectors></Profile>\n"
        "<Profile Id='P.Verbose.Memory' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='Sometimes'/>\n"
        "<Profile Id='R.Verbose.File' Name='R' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><EventCollectorId Value='Nope'/><Bogus/></Collectors></Profile>");
    const ltr_diag *d = listed(f, LTR_DIAG_ERROR, "BufferSize=\"2\" is not valid: expected an integer in 4..16384", &l);
    assert_string_equal(d->id, "SC");
    assert_int_equal(d->line, 4);
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "Buffers=\"150\" is not valid: expected an integer in 1..100"));
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "Level=\"300\" is not valid"));
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "Stack=\"maybe\" is not valid: expected true or false"));
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "<Keyword Value=\"0xZZ\"> is not a keyword mask"));
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "Operation=\"Replace\" on <HeapProcessIds>"));
    assert_non_null(find_diag(&l->diags, LTR_DIAG_ERROR, "LoggingMode=\"Sometimes\": expected File or Memory"));
    d = find_diag(&l->diags, LTR_DIAG_ERROR, "EventCollectorId 'Nope' names no collector");
    assert_non_null(d);
    assert_string_equal(d->id, "R.Verbose.File");
    assert_non_null(find_diag(&l->diags, LTR_DIAG_WARNING, "unknown element <Bogus> in <Collectors>"));
    ltr_profile_list_free(l);
}

static void strict_profile_that_starts_nothing(void **state)
{
    const char *f = write_wprp("strict.wprp",
        "<SystemCollector Id='SC' Name='S'/>\n"
        "<SystemProvider Id='SP'><Keywords><Keyword Value='CSwitch'/></Keywords></SystemProvider>\n"
        "<EventProvider Id='Win' Name='Microsoft-Windows-TCPIP'/>\n"
        "<Profile Id='S.Verbose.Memory' Name='S' Description='d' DetailLevel='Verbose' LoggingMode='Memory' Strict='true'>"
        "<Collectors><SystemCollectorId Value='SC'><SystemProviderId Value='SP'/></SystemCollectorId></Collectors></Profile>\n"
        "<Profile Id='L.Verbose.Memory' Base='S.Verbose.Memory' Name='L' Description='d' DetailLevel='Verbose' LoggingMode='Memory' Strict='false'/>");
    char s[600];
    snprintf(s, sizeof s, "%s!S", f);
    ltr_plan *p = NULL;
    assert_int_equal(resolve(&p, false, s, NULL), -1);
    const ltr_diag *d = find_diag(&p->diags, LTR_DIAG_ERROR, "starts nothing on Linux");
    assert_non_null(d);
    assert_string_equal(d->id, "S.Verbose.Memory");
    assert_non_null(strstr(d->msg, "Strict"));
    assert_true(p->strict);
    ltr_plan_free(p);
    snprintf(s, sizeof s, "%s!L", f);
    assert_int_equal(resolve(&p, false, s, NULL), 0);
    assert_non_null(find_diag(&p->diags, LTR_DIAG_WARNING, "starts nothing on Linux"));
    assert_false(p->strict);
    ltr_plan_free(p);
}

static void bad_specs(void **state)
{
    ltr_plan *p = NULL;
    assert_int_equal(resolve(&p, false, "nosuchprofile", NULL), -1);
    const ltr_diag *d = find_diag(&p->diags, LTR_DIAG_ERROR, "no profile of that name in the built-in profiles");
    assert_non_null(d);
    assert_string_equal(d->id, "nosuchprofile");
    ltr_plan_free(p);
    assert_int_equal(resolve(&p, false, "!heap", NULL), -1);
    assert_non_null(find_diag(&p->diags, LTR_DIAG_ERROR, "expected [FILE.wprp!]Name[.light|.verbose]"));
    ltr_plan_free(p);
    assert_int_equal(resolve(&p, false, "/nonexistent/x.wprp!P", NULL), -1);
    assert_non_null(find_diag(&p->diags, LTR_DIAG_ERROR, "cannot open"));
    ltr_plan_free(p);
    const char *f = write_wprp("fileonly.wprp",
        "<EventCollector Id='EC' Name='Ev'/>\n"
        "<Profile Id='F.Light.File' Name='F' Description='d' DetailLevel='Light' LoggingMode='File'>"
        "<Collectors><EventCollectorId Value='EC'/></Collectors></Profile>");
    char s[600];
    snprintf(s, sizeof s, "%s!F.light", f);
    assert_int_equal(resolve(&p, false, s, NULL), -1);
    d = find_diag(&p->diags, LTR_DIAG_ERROR, "no Light Memory variant");
    assert_non_null(d);
    assert_non_null(strstr(d->msg, "it has Light.File"));
    assert_non_null(strstr(d->msg, "--filemode"));
    ltr_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(not_xml),
        cmocka_unit_test(wrong_root),
        cmocka_unit_test(huge_file),
        cmocka_unit_test(deep_nesting),
        cmocka_unit_test(entity_expansion),
        cmocka_unit_test(external_entity),
        cmocka_unit_test(base_cycle),
        cmocka_unit_test(broken_profile_named_is_not_missing),
        cmocka_unit_test(missing_and_wrong_bases),
        cmocka_unit_test(duplicate_ids),
        cmocka_unit_test(builtin_ids_shadowed),
        cmocka_unit_test(out_of_schema_order),
        cmocka_unit_test(profile_id_pattern),
        cmocka_unit_test(mixed_object_types),
        cmocka_unit_test(bad_values),
        cmocka_unit_test(strict_profile_that_starts_nothing),
        cmocka_unit_test(bad_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
