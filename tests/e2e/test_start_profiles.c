/*
 * tests/e2e/test_start_profiles.c — `ltr start PROFILE`: built-in profiles and
 * profiles of .wprp files become sessions with their collectors, buffers and
 * providers; --filemode picks the File variant; what ltr cannot record is
 * reported, not fatal; errors start nothing; the names a file chose are
 * printed without a control character.
 */
#include "util/testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTR tu_ltr()
#define PRODUCER tu_test_bin("ltr-test-producer")

static const char profile[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<WindowsPerformanceRecorder Version=\"1.0\">\n"
    "  <Profiles>\n"
    "    <SystemCollector Id=\"SC\" Name=\"Test System\">\n"
    "      <BufferSize Value=\"64\"/>\n"
    "      <Buffers Value=\"4\"/>\n"
    "    </SystemCollector>\n"
    "    <EventCollector Id=\"EC\" Name=\"Test Collector\">\n"
    "      <BufferSize Value=\"64\"/>\n"
    "      <Buffers Value=\"8\"/>\n"
    "    </EventCollector>\n"
    "    <SystemProvider Id=\"SP_Proc\"><Keywords><Keyword Value=\"ProcessThread\"/></Keywords></SystemProvider>\n"
    "    <SystemProvider Id=\"SP_WindowsOnly\"><Keywords><Keyword Value=\"CSwitch\"/></Keywords></SystemProvider>\n"
    "    <EventProvider Id=\"EP\" Name=\"Test.Producer\" Level=\"4\">\n"
    "      <Keywords><Keyword Value=\"0x2\"/></Keywords>\n"
    "    </EventProvider>\n"
    "    <EventProvider Id=\"EP_ImageLoad\" Name=\"2cb15d1d-5fc1-11d2-abe1-00a0c911f518\"/>\n"
    "    <Profile Id=\"T.Light.File\" Name=\"T\" DetailLevel=\"Light\" LoggingMode=\"File\" Description=\"test\">\n"
    "      <Collectors>\n"
    "        <EventCollectorId Value=\"EC\">\n"
    "          <EventProviders><EventProviderId Value=\"EP\"/></EventProviders>\n"
    "        </EventCollectorId>\n"
    "      </Collectors>\n"
    "    </Profile>\n"
    "    <Profile Id=\"T.Light.Memory\" Base=\"T.Light.File\" Name=\"T\" DetailLevel=\"Light\"\n"
    "             LoggingMode=\"Memory\" Description=\"test\"/>\n"
    "    <Profile Id=\"S.Light.File\" Name=\"S\" DetailLevel=\"Light\" LoggingMode=\"File\" Strict=\"true\">\n"
    "      <Collectors><SystemCollectorId Value=\"SystemCollector_WPRSystemCollectorInFile\">\n"
    "        <SystemProviderId Value=\"SP_WindowsOnly\"/></SystemCollectorId></Collectors>\n"
    "    </Profile>\n"
    "    <Profile Id=\"N.Light.File\" Name=\"N\" DetailLevel=\"Light\" LoggingMode=\"File\">\n"
    "      <Collectors><SystemCollectorId Value=\"SystemCollector_WPRSystemCollectorInFile\">\n"
    "        <SystemProviderId Value=\"SP_WindowsOnly\"/></SystemCollectorId></Collectors>\n"
    "    </Profile>\n"
    "    <Profile Id=\"N.Light.Memory\" Base=\"N.Light.File\" Name=\"N\" DetailLevel=\"Light\"\n"
    "             LoggingMode=\"Memory\"/>\n"
    "    <Profile Id=\"K.Light.File\" Name=\"K\" DetailLevel=\"Light\" LoggingMode=\"File\">\n"
    "      <Collectors>\n"
    "        <EventCollectorId Value=\"EC\">\n"
    "          <EventProviders><EventProviderId Value=\"EP_ImageLoad\"/></EventProviders>\n"
    "        </EventCollectorId>\n"
    "        <SystemCollectorId Value=\"SC\"><SystemProviderId Value=\"SP_Proc\"/></SystemCollectorId>\n"
    "      </Collectors>\n"
    "    </Profile>\n"
    "  </Profiles>\n"
    "</WindowsPerformanceRecorder>\n";

static int setup(void **state)
{
    const char *dir = tu_sandbox();
    char path[512];
    snprintf(path, sizeof path, "%s/test.wprp", dir);
    FILE *f = fopen(path, "w");
    fputs(profile, f);
    fclose(f);
    *state = (void *)dir;
    return 0;
}

static int teardown(void **state)
{
    tu_sandbox_end();
    return 0;
}

static void test_file_profile_records_its_providers(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s start '%s/test.wprp!T.light'", LTR, dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "memory mode"));
    assert_non_null(strstr(r.out, "Test Collector: 8 buffers of 64 KB"));
    tu_free(&r);
    /* The profile asks for level 4 and keyword 0x2 only. */
    r = tu_run("%s --events 50 --level 4 --keywords 0x2 && %s --events 70 --level 5 --keywords 0x2 && "
               "%s --events 30 --level 4 --keywords 0x1", PRODUCER, PRODUCER, PRODUCER);
    assert_int_equal(r.status, 0);
    assert_int_equal(tu_field(r.out, "written"), 50);
    tu_free(&r);
    r = tu_run("%s stop %s/t.ltr", LTR, dir);
    assert_int_equal(r.status, 0);
    tu_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/t.ltr", dir);
    tu_trace t = tu_read_trace(path, "Test.Producer");
    assert_true(t.ok && t.complete);
    assert_int_equal(t.provider_events, 50);
}

static void test_filemode_picks_file_variant(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s start --filemode '%s/test.wprp!T.light'", LTR, dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "file mode"));
    assert_non_null(strstr(r.out, "T.Light.File"));
    tu_free(&r);
    r = tu_run("%s status", LTR);
    assert_non_null(strstr(r.out, "T.Light.File"));
    tu_free(&r);
    r = tu_run("%s cancel", LTR);
    tu_free(&r);
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* ltr's own profiles say nothing about themselves when they start; one that
 * records the system provider's parts (general, memory) starts; a user's
 * non-Strict profile that records nothing here gets one warning. */
static void test_builtin_profiles_start_and_report(void **state)
{
    const char *dir = *state;
    static const char *const quiet[] = {"heap", "heap.light", "heapsnapshot", "heap --filemode"};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        tu_result r = tu_run("%s start %s --instance h", LTR, quiet[i]);
        assert_int_equal(r.status, 0);
        if (*r.err)
            fprintf(stderr, "ltr start %s said: %s", quiet[i], r.err);
        assert_string_equal(r.err, "");
        tu_free(&r);
        r = tu_run("%s cancel --instance h", LTR);
        assert_int_equal(r.status, 0);
        tu_free(&r);
    }
    /* general and memory record the system provider's parts (tests/e2e/test_system_cli.c) */
    static const char *const system[] = {"general", "memory.light", "heap general"};
    for (size_t i = 0; i < sizeof system / sizeof system[0]; i++) {
        tu_result r = tu_run("%s start %s --instance g", LTR, system[i]);
        assert_int_equal(r.status, 0);
        assert_null(strstr(r.err, "starts nothing on Linux"));
        assert_non_null(strstr(r.out, "session 'g' started"));
        tu_free(&r);
        r = tu_run("%s cancel --instance g", LTR);
        assert_int_equal(r.status, 0);
        tu_free(&r);
    }
    tu_result r = tu_run("%s start '%s/test.wprp!N.light'", LTR, dir);
    assert_int_equal(r.status, 0);
    if (count(r.err, "warning:") != 1)
        fprintf(stderr, "ltr start said: %s", r.err);
    assert_int_equal(count(r.err, "warning:"), 1);
    assert_int_equal(count(r.err, "error"), 0);
    assert_non_null(strstr(r.err, "starts nothing on Linux"));
    assert_non_null(strstr(r.err, "nothing of it will be recorded"));
    tu_free(&r);
    r = tu_run("%s cancel", LTR);
    tu_free(&r);
}

/* The system events go in the profile's system collector, also when a kernel
 * provider in an event collector (ImageLoad: modules) asks for a part first:
 * WPRP_Network.15002's NetworkFull recorded them in its event collector and
 * left its 'MSO System Collector' out. */
static void test_system_parts_in_system_collector(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s start --filemode '%s/test.wprp!K.light' --instance k -o %s/k.ltr.part", LTR, dir,
                         dir);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, "Test System: 4 buffers of 64 KB"))
        fprintf(stderr, "ltr start said: %s", r.out);
    assert_non_null(strstr(r.out, "Test System: 4 buffers of 64 KB"));
    assert_null(strstr(r.out, "Test Collector")); /* nothing else in it: not made */
    tu_free(&r);
    r = tu_run("%s status --instance k", LTR);
    assert_non_null(strstr(r.out, "Test System"));
    tu_free(&r);
    r = tu_run("%s cancel --instance k", LTR);
    assert_int_equal(r.status, 0);
    tu_free(&r);
}

static void test_profile_errors_start_nothing(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("%s start '%s/test.wprp!NoSuchProfile'", LTR, dir);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "NoSuchProfile"));
    tu_free(&r);
    /* a file of several names without '!Name', and a profile's Id for its Name: said what was meant */
    r = tu_run("%s start '%s/test.wprp'", LTR, dir);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "its profiles have 4 names (T, S, N, K): name one, as '"));
    assert_non_null(strstr(r.err, "test.wprp!T'"));
    tu_free(&r);
    r = tu_run("%s start '%s/test.wprp!T.Light.File'", LTR, dir);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "is a profile's Id; name it as WPR does, by its Name and detail level: "
                                  "'T.light' with --filemode"));
    tu_free(&r);
    r = tu_run("%s start '%s/missing.wprp!T'", LTR, dir);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "missing.wprp"));
    tu_free(&r);
    /* Strict: a profile that starts nothing on Linux is an error. */
    r = tu_run("%s start '%s/test.wprp!S.light' --filemode", LTR, dir);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "error"));
    tu_free(&r);
    r = tu_run("%s status", LTR);
    assert_non_null(strstr(r.out, "no session is running"));
    tu_free(&r);
}

/* A file of one profile Name, started as `wpr -start wsl.wprp -filemode`
 * (Microsoft's instructions for WSL's traces) starts it: it was refused, "a
 * .wprp file is named with one of its profiles". */
static void test_file_of_one_name(void **state)
{
    const char *dir = *state;
    tu_write_file(dir, "one.wprp",
                  "<WindowsPerformanceRecorder Version=\"1\"><Profiles>\n"
                  "<EventCollector Id=\"EC\" Name=\"One Collector\"><BufferSize Value=\"64\"/>"
                  "<Buffers Value=\"4\"/></EventCollector>\n"
                  "<EventProvider Id=\"EP\" Name=\"Test.Producer\"/>\n"
                  "<Profile Id=\"One.Verbose.File\" Name=\"One\" DetailLevel=\"Verbose\" LoggingMode=\"File\" "
                  "Description=\"one\"><Collectors><EventCollectorId Value=\"EC\"><EventProviders>"
                  "<EventProviderId Value=\"EP\"/></EventProviders></EventCollectorId></Collectors></Profile>\n"
                  "<Profile Id=\"One.Verbose.Memory\" Base=\"One.Verbose.File\" Name=\"One\" "
                  "DetailLevel=\"Verbose\" LoggingMode=\"Memory\" Description=\"one\"/>\n"
                  "</Profiles></WindowsPerformanceRecorder>\n");
    tu_result r = tu_run("%s start '%s/one.wprp' --filemode --instance one -o %s/one.ltr", LTR, dir, dir);
    if (r.status != 0 || !strstr(r.out, "one.wprp!One.Verbose.File"))
        fail_msg("status %d\n%s%s", r.status, r.out, r.err);
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel --instance one", LTR));
}

/* A profile's HeapProcessIds are said as the profile's, not as a --pid the
 * user never gave (WPRP_Heap.wprp's TraceHeap_ByPID holds a placeholder). */
static void test_profile_pid_said_as_the_profiles(void **state)
{
    const char *dir = *state;
    tu_result r = tu_run("sh -c 'echo $$'");
    unsigned gone = (unsigned)atoi(r.out); /* a process that has exited */
    tu_free(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/bypid.wprp", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "<?xml version=\"1.0\"?>\n<WindowsPerformanceRecorder Version=\"1.0\"><Profiles>\n"
               "<HeapEventProvider Id=\"H\"><HeapProcessIds Operation=\"Add\">"
               "<HeapProcessId Value=\"%u\"/></HeapProcessIds></HeapEventProvider>\n"
               "<Profile Id=\"P.Light.File\" Name=\"P\" DetailLevel=\"Light\" LoggingMode=\"File\">"
               "<Collectors><HeapEventCollectorId Value=\"HeapCollector_WPRHeapCollector\">"
               "<HeapEventProviders><HeapEventProviderId Value=\"H\"/></HeapEventProviders>"
               "</HeapEventCollectorId></Collectors></Profile>\n</Profiles></WindowsPerformanceRecorder>\n",
            gone);
    fclose(f);
    r = tu_run("%s start --filemode '%s!P.light' -o %s/p.ltr", LTR, path, dir);
    assert_int_not_equal(r.status, 0);
    char want[64];
    snprintf(want, sizeof want, "the profile's HeapProcessId %u", gone);
    if (!strstr(r.err, want) || strstr(r.err, "--pid"))
        fail_msg("the profile's pid not said as its own:\n%s", r.err);
    tu_free(&r);
}

/* A .wprp file (from a colleague, a download) names its collectors and
 * profiles: a C1 CSI (&#x9b;), a NEL and a right-to-left override there,
 * which XML carries, reached the terminal of `ltr start` and `ltr status`
 * (root's, often); now they are '?', as `ltr profiles` shows them. */
static void test_hostile_names_shown(void **state)
{
    const char *dir = *state;
    tu_write_file(dir, "evil.wprp",
                  "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<WindowsPerformanceRecorder Version=\"1.0\"><Profiles>\n"
                  "<SystemCollector Id=\"SC\" Name=\"Evil&#x9b;2J&#x202e;R&#x85;N\"><BufferSize Value=\"64\"/>"
                  "<Buffers Value=\"4\"/></SystemCollector>\n"
                  "<SystemProvider Id=\"SP\"><Keywords><Keyword Value=\"ProcessThread\"/></Keywords></SystemProvider>\n"
                  "<Profile Id=\"E&#x9b;1m.Verbose.Memory\" Name=\"E&#x9b;1m\" DetailLevel=\"Verbose\" "
                  "LoggingMode=\"Memory\"><Collectors><SystemCollectorId Value=\"SC\"><SystemProviderId Value=\"SP\"/>"
                  "</SystemCollectorId></Collectors></Profile>\n</Profiles></WindowsPerformanceRecorder>\n");
    tu_result r = tu_run("%s start \"%s/evil.wprp!$(printf 'E\\302\\2331m')\" --instance hn && %s status --instance hn",
                         LTR, dir, LTR);
    if (r.status != 0)
        fail_msg("%s%s", r.out, r.err);
    const char *bad = tu_acted_on(r.out);
    if (bad)
        fail_msg("a byte a terminal acts on (0x%02x) at offset %td of what start and status printed",
                 (unsigned char)*bad, bad - r.out);
    assert_non_null(strstr(r.out, "; Evil?2J?R?N: 4 buffers of 64 KB, profiles ")); /* start */
    assert_non_null(strstr(r.out, "evil.wprp!E?1m.Verbose.Memory\n"));
    assert_non_null(strstr(r.out, "\n  Evil?2J?R?N ")); /* status */
    tu_free(&r);
    tu_expect_ok(tu_run("%s cancel --instance hn", LTR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_profile_records_its_providers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filemode_picks_file_variant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builtin_profiles_start_and_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_of_one_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_errors_start_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_system_parts_in_system_collector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_pid_said_as_the_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_names_shown, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
