/*
 * tests/recorder/test_session_config.c — a session's configuration from a
 * profile plan and `ltr start`'s options (ltr_session_config_build): the
 * collectors, their buffers and the providers a session gets, without the ltr
 * binary or a recorder.
 */
#include "base/records.h"
#include "prim/prim.h"
#include "profiles/profiles.h"
#include "recorder/heaprun.h"
#include "recorder/recorder.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ltr_session_config cfg;

static void fresh(void)
{
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.name, sizeof cfg.name, "cfgtest");
}

static ltr_provider_spec spec(const char *text)
{
    ltr_provider_spec s;
    ltr_error err;
    assert_int_equal(ltr_provider_spec_parse(text, &s, &err), 0);
    return s;
}

static void test_no_profile_defaults(void **state)
{
    (void)state;
    fresh();
    ltr_session_options o = {0};
    ltr_bytes notes = {0};
    ltr_error err;
    assert_int_equal(ltr_session_config_build(NULL, &o, &cfg, &notes, &err), 0);
    assert_int_equal(cfg.ncollectors, 1);
    assert_string_equal(cfg.collectors[0].name, "events");
    assert_int_equal(cfg.collectors[0].buffer_kb, LTR_BUFFER_KB_DEFAULT);
    assert_int_equal(cfg.collectors[0].buffers, LTR_BUFFERS_DEFAULT);
    assert_int_equal(cfg.nproviders, 0);
    assert_string_equal(cfg.name, "cfgtest");
    assert_string_equal(cfg.profiles, "");
    assert_int_equal(notes.len, 0);
    ltr_bytes_free(&notes);
}

static void test_no_profile_options(void **state)
{
    (void)state;
    fresh();
    cfg.mode = LTR_MODE_FILE;
    ltr_provider_spec p[2] = {spec("Acme.One:0x10:3"), spec("Acme.Two")};
    ltr_session_options o = {.buffer_kb = 16, .buffers = 10, .providers = p, .nproviders = 2};
    ltr_bytes notes = {0};
    ltr_error err;
    assert_int_equal(ltr_session_config_build(NULL, &o, &cfg, &notes, &err), 0);
    assert_int_equal(cfg.mode, LTR_MODE_FILE);
    assert_int_equal(cfg.ncollectors, 1);
    assert_int_equal(cfg.collectors[0].buffer_kb, 16);
    assert_int_equal(cfg.collectors[0].buffers, 10);
    assert_int_equal(cfg.nproviders, 2);
    assert_string_equal(cfg.providers[0].name, "Acme.One");
    assert_int_equal(cfg.providers[0].any, 0x10);
    assert_int_equal(cfg.providers[0].level, 3);
    assert_string_equal(cfg.providers[1].name, "Acme.Two");
    assert_int_equal(cfg.providers[1].collector, 0);
    ltr_bytes_free(&notes);
}

/* A plan with one event collector of two and a provider in the second. */
static ltr_plan_collector cols[2] = {
    {.name = "Unused", .kind = LTR_COLLECTOR_EVENT, .buffer_size_kb = 64, .buffers = 4},
    {.name = "Ev", .kind = LTR_COLLECTOR_EVENT, .buffer_size_kb = 256, .buffers = 10},
};
static ltr_plan_provider provs[1] = {
    {.name = "Acme.Plan", .keywords = UINT64_MAX, .level = 4, .collector = 1},
};
static char *names[1] = {"Acme.wprp!Acme"};

static ltr_plan plan_of(size_t nproviders)
{
    ltr_plan p = {.mode = LTR_PLAN_MEMORY, .profiles = names, .nprofiles = 1, .collectors = cols,
                  .ncollectors = 2, .providers = provs, .nproviders = nproviders};
    ltr_guid_from_name("Acme.Plan", &provs[0].guid);
    return p;
}

static void test_plan_with_overrides(void **state)
{
    (void)state;
    fresh();
    ltr_plan plan = plan_of(1);
    ltr_provider_spec extra = spec("Acme.Extra");
    ltr_session_options o = {.buffers = 7, .providers = &extra, .nproviders = 1};
    ltr_bytes notes = {0};
    ltr_error err;
    assert_int_equal(ltr_session_config_build(&plan, &o, &cfg, &notes, &err), 0);
    /* only the collector that carries something becomes a buffer pool */
    assert_int_equal(cfg.ncollectors, 1);
    assert_string_equal(cfg.collectors[0].name, "Ev");
    assert_int_equal(cfg.collectors[0].buffer_kb, 256); /* the plan's: no --buffer-size */
    assert_int_equal(cfg.collectors[0].buffers, 7);     /* --buffers over the plan's 10 */
    assert_int_equal(cfg.nproviders, 2);
    assert_string_equal(cfg.providers[0].name, "Acme.Plan");
    assert_int_equal(cfg.providers[0].any, 0); /* every keyword */
    assert_int_equal(cfg.providers[0].level, 4);
    assert_string_equal(cfg.providers[1].name, "Acme.Extra"); /* --provider after the profiles' */
    assert_int_equal(cfg.providers[1].collector, 0);
    assert_string_equal(cfg.profiles, "Acme.wprp!Acme");
    assert_int_equal(cfg.mode, LTR_MODE_MEMORY);
    ltr_bytes_free(&notes);
}

/* A plan that records nothing here still gets a collector, for markers. */
static void test_plan_with_nothing_keeps_a_collector(void **state)
{
    (void)state;
    fresh();
    ltr_plan plan = plan_of(0);
    ltr_plan_skipped sk = {.what = "provider Microsoft-Windows-Foo", .reason = "Windows only"};
    plan.skipped = &sk;
    plan.nskipped = 1;
    ltr_session_options o = {.buffer_kb = 32};
    ltr_bytes notes = {0};
    ltr_error err;
    assert_int_equal(ltr_session_config_build(&plan, &o, &cfg, &notes, &err), 0);
    assert_int_equal(cfg.ncollectors, 1);
    assert_string_equal(cfg.collectors[0].name, "events");
    assert_int_equal(cfg.collectors[0].buffer_kb, 32);
    assert_int_equal(cfg.collectors[0].buffers, LTR_BUFFERS_DEFAULT);
    assert_int_equal(cfg.nproviders, 0);
    ltr_bytes_put_u8(&notes, 0);
    assert_non_null(strstr((char *)notes.data, "skipped provider Microsoft-Windows-Foo: Windows only"));
    ltr_bytes_free(&notes);
}

/* A percentage of RAM becomes a count of the collector's buffers, clamped. */
static void test_plan_percent_of_ram(void **state)
{
    (void)state;
    fresh();
    ltr_plan plan = plan_of(1);
    cols[1].buffers_percent = true;
    cols[1].buffers = 1;
    ltr_session_options o = {0};
    ltr_bytes notes = {0};
    ltr_error err;
    int rc = ltr_session_config_build(&plan, &o, &cfg, &notes, &err);
    ltr_bytes_free(&notes);
    cols[1].buffers_percent = false;
    cols[1].buffers = 10;
    assert_int_equal(rc, 0);
    uint64_t want = ltr_total_ram() / 100 / (256 * 1024);
    want = want < LTR_BUFFERS_MIN ? LTR_BUFFERS_MIN : want > LTR_BUFFERS_MAX ? LTR_BUFFERS_MAX : want;
    assert_int_equal(cfg.collectors[0].buffers, want);
    assert_int_equal(ltr_buffers_from_ram_share(10, 1024), ltr_total_ram() / 100 * 10 / (1024 * 1024));
}

/* More providers than a session holds: an error saying so, not a silent cut. */
static void test_too_many_providers(void **state)
{
    (void)state;
    fresh();
    ltr_plan plan = plan_of(1);
    static ltr_provider_spec many[LTR_MAX_SESSION_PROVIDERS];
    for (unsigned i = 0; i < LTR_MAX_SESSION_PROVIDERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "P%u", i);
        many[i] = spec(name);
    }
    ltr_session_options o = {.providers = many, .nproviders = LTR_MAX_SESSION_PROVIDERS};
    ltr_bytes notes = {0};
    ltr_error err = {0};
    assert_int_equal(ltr_session_config_build(&plan, &o, &cfg, &notes, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "at most 256"));
    /* without the profile's one, they fit */
    fresh();
    assert_int_equal(ltr_session_config_build(NULL, &o, &cfg, &notes, &err), 0);
    assert_int_equal(cfg.nproviders, LTR_MAX_SESSION_PROVIDERS);
    ltr_bytes_free(&notes);
}

/* A built-in profile resolved as `ltr start NAME [--filemode]` does, and
 * the configuration made fresh (the test is skipped without the sources). */
static ltr_plan *builtin_plan(const char *name, bool filemode)
{
    const char *src = getenv("LTR_SOURCE_DIR");
    if (!src)
        skip();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/profiles", src);
    const char *specs[] = {name};
    ltr_profile_request req = {.specs = specs, .nspecs = 1, .builtin_dir = dir, .filemode = filemode};
    ltr_plan *plan = NULL;
    assert_int_equal(ltr_profiles_resolve(&req, &plan), 0);
    fresh();
    return plan;
}

/* cfg built from a built-in profile and options, as `ltr start` builds it. */
static void build_builtin(const char *name, bool filemode, const ltr_session_options *o)
{
    ltr_plan *plan = builtin_plan(name, filemode);
    ltr_bytes notes = {0};
    ltr_error err;
    int rc = ltr_session_config_build(plan, o, &cfg, &notes, &err);
    ltr_plan_free(plan);
    ltr_bytes_free(&notes);
    if (rc != 0)
        fail_msg("%s: %s", name, err.msg);
}

/* The built-in heap profile, resolved as `ltr start heap --buffers 3` does:
 * 64 KB buffers in memory mode (a thread holds one from its first event),
 * 1 MB with --filemode (docs/design.md, "Buffers"). */
static void test_builtin_heap_profile(void **state)
{
    (void)state;
    build_builtin("heap", false, &(ltr_session_options){.buffers = 3});
    assert_int_equal(cfg.ncollectors, 1);
    /* its profile's name, as every collector ('ltr status' said "heap") */
    assert_string_equal(cfg.collectors[0].name, "ltr Heap Collector");
    assert_int_equal(cfg.collectors[0].buffer_kb, 64);
    assert_int_equal(cfg.collectors[0].buffers, 3);
    assert_int_equal(cfg.pid_collectors, 1);
    assert_int_equal(cfg.nproviders, 1);
    assert_string_equal(cfg.providers[0].name, "Ltr.Heap");
    assert_string_equal(cfg.profiles, "heap.Verbose.Memory");
    build_builtin("heap", true, &(ltr_session_options){0});
    assert_int_equal(cfg.collectors[0].buffer_kb, 1024);
    assert_int_equal(cfg.collectors[0].buffers, 1024);
    assert_string_equal(cfg.profiles, "heap.Verbose.File");
}

/* System keywords that ltr records become the provider Ltr.System with
 * their parts' keyword bits, in the profile's system collector; a profile's
 * MemoryInfoInterval sets the interval unless --memory-interval did. */
static char last_notes[4096]; /* what the last system_config told the user */

static int system_config(const char *wprp, uint32_t option_ms)
{
    char path[] = "/tmp/ltr-cfgtest-XXXXXX.wprp";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, wprp, strlen(wprp)), (ssize_t)strlen(wprp));
    close(fd);
    char spec_text[64];
    snprintf(spec_text, sizeof spec_text, "%s!P.light", path);
    const char *specs[] = {spec_text};
    ltr_profile_request req = {.specs = specs, .nspecs = 1, .filemode = true};
    ltr_plan *plan = NULL;
    int rc = ltr_profiles_resolve(&req, &plan);
    unlink(path);
    if (rc == 0) {
        fresh();
        cfg.system_interval_ms = option_ms;
        ltr_session_options o = {0};
        ltr_bytes notes = {0};
        ltr_error err;
        rc = ltr_session_config_build(plan, &o, &cfg, &notes, &err);
        snprintf(last_notes, sizeof last_notes, "%.*s", (int)notes.len, notes.data ? (char *)notes.data : "");
        ltr_bytes_free(&notes);
    }
    ltr_plan_free(plan);
    return rc;
}

static const char system_wprp[] =
    "<WindowsPerformanceRecorder Version=\"1.0\"><Profiles>"
    "<SystemCollector Id=\"SC\" Name=\"sys\"><BufferSize Value=\"64\"/><Buffers Value=\"4\"/></SystemCollector>"
    "<SystemProvider Id=\"SP\"><Keywords><Keyword Value=\"MemoryInfo\"/><Keyword Value=\"CSwitch\"/>"
    "<Keyword Value=\"Bogus\"/></Keywords>"
    "<MemoryInfoInterval Value=\"%s\"/></SystemProvider>"
    "<Profile Id=\"P.Light.File\" Name=\"P\" DetailLevel=\"Light\" LoggingMode=\"File\" Description=\"t\">"
    "<Collectors><SystemCollectorId Value=\"SC\"><SystemProviderId Value=\"SP\"/></SystemCollectorId></Collectors>"
    "</Profile></Profiles></WindowsPerformanceRecorder>";

static void test_system_keywords(void **state)
{
    (void)state;
    char wprp[2048];
    snprintf(wprp, sizeof wprp, system_wprp, "250");
    assert_int_equal(system_config(wprp, 0), 0);
    assert_int_equal(cfg.ncollectors, 1);
    assert_string_equal(cfg.collectors[0].name, "sys");
    assert_int_equal(cfg.nproviders, 1);
    assert_string_equal(cfg.providers[0].name, LTR_SYSTEM_PROVIDER);
    assert_int_equal(cfg.providers[0].any, LTR_SYSKW_MEMINFO); /* CSwitch: nothing on Linux */
    assert_true(ltr_session_records_system(&cfg));
    assert_int_equal(cfg.system_interval_ms, 250);
    /* each skipped keyword said once: CSwitch in the line of those with no
     * Linux counterpart (it was also a note of its own), Bogus in its own
     * note as unknown, not in that line */
    const char *cs = strstr(last_notes, "CSwitch");
    assert_non_null(cs);
    assert_null(strstr(cs + 1, "CSwitch"));
    const char *line = strstr(last_notes, "no Linux counterpart, skipped: ");
    assert_non_null(line);
    assert_true(strchr(line, '\n') && !memmem(line, (size_t)(strchr(line, '\n') - line), "Bogus", 5));
    const char *bogus = strstr(last_notes, "Bogus");
    assert_non_null(bogus);
    assert_null(strstr(bogus + 1, "Bogus"));
    assert_non_null(strstr(last_notes, "skipped system keyword Bogus: not a system keyword ltr knows"));
    assert_int_equal(system_config(wprp, 40), 0);
    assert_int_equal(cfg.system_interval_ms, 40); /* the option wins */
    snprintf(wprp, sizeof wprp, system_wprp, "5");
    assert_int_not_equal(system_config(wprp, 0), 0); /* below 10 ms: an error in the profile */
}

/* A provider named twice becomes one spec with both's keywords: the registry
 * keeps one enablement per session, and 'ltr start general --provider
 * Ltr.System:0x20' once left only FileIO on, so the system thread's process,
 * memory and CPU events were all filtered out. */
static void test_same_provider_twice_merges(void **state)
{
    (void)state;
    ltr_provider_spec p[3] = {spec("Ltr.System:0x20"), spec("Acme.One:0x1:3"), spec("Acme.One:0x4:5")};
    build_builtin("general", true, &(ltr_session_options){.providers = p, .nproviders = 3});
    assert_int_equal(cfg.nproviders, 2);
    assert_string_equal(cfg.providers[0].name, LTR_SYSTEM_PROVIDER);
    uint64_t profile_bits = LTR_SYSKW_PROCESS | LTR_SYSKW_LOADER | LTR_SYSKW_MEMINFO;
    assert_int_equal(cfg.providers[0].any & profile_bits, profile_bits);
    assert_true(cfg.providers[0].any & LTR_SYSKW_FILEIO);
    assert_string_equal(cfg.collectors[cfg.providers[0].collector].name, "ltr System Collector");
    assert_string_equal(cfg.providers[1].name, "Acme.One");
    assert_int_equal(cfg.providers[1].any, 0x5);
    assert_int_equal(cfg.providers[1].level, 5);
}

/* HeapProcessNames: the session takes the processes of those names too. */
static void test_heap_process_names(void **state)
{
    (void)state;
    const char *src = getenv("LTR_SOURCE_DIR");
    if (!src)
        skip();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/profiles", src);
    const char *specs[] = {"heap"};
    ltr_profile_request req = {.specs = specs, .nspecs = 1, .builtin_dir = dir};
    ltr_plan *plan = NULL;
    assert_int_equal(ltr_profiles_resolve(&req, &plan), 0);
    plan->heap.process_names = calloc(2, sizeof(char *));
    plan->heap.process_names[0] = strdup("mysvc");
    plan->heap.process_names[1] = strdup("other");
    plan->heap.nprocess_names = 2;
    fresh();
    ltr_session_options o = {0};
    ltr_bytes notes = {0};
    ltr_error err;
    int rc = ltr_session_config_build(plan, &o, &cfg, &notes, &err);
    ltr_bytes_free(&notes);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.pid_collectors, 1);
    assert_int_equal(cfg.nnames, 2);
    assert_string_equal(cfg.names[0], "mysvc");
    assert_string_equal(cfg.names[1], "other");
    assert_int_equal(ltr_session_config_check(&cfg, &err), 0);
    free(plan->heap.process_names[1]);
    plan->heap.process_names[1] = strdup("/bin/x"); /* a path is no name: refused when launched */
    fresh();
    assert_int_equal(ltr_session_config_build(plan, &o, &cfg, &notes, &err), 0);
    ltr_bytes_free(&notes);
    assert_int_equal(ltr_session_config_check(&cfg, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "is a path"));
    ltr_plan_free(plan);
}

/* `ltr record`'s session: its own name, the command only or one pid, the
 * trace growing under a temporary name beside it in file mode. */
/* How many collectors a session of spec gets (ltr_session_config_from_plan,
 * as ltr start) and how many its plan says are created (as ltr profiles
 * --details shows); -1 when the spec does not resolve. */
static int created_and_said(const char *spec, bool filemode, size_t *said)
{
    const char *specs[] = {spec};
    ltr_profile_request req = {.specs = specs, .nspecs = 1, .filemode = filemode};
    ltr_plan *plan = NULL;
    int n = -1;
    if (ltr_profiles_resolve(&req, &plan) == 0) {
        fresh();
        ltr_bytes notes = {0};
        ltr_error err;
        if (ltr_session_config_from_plan(plan, &cfg, &notes, &err) == 0)
            n = (int)cfg.ncollectors;
        ltr_bytes_free(&notes);
        *said = 0;
        for (size_t i = 0; i < plan->ncollectors; i++)
            *said += ltr_plan_collector_used(plan, i);
    }
    ltr_plan_free(plan);
    return n;
}

/* Every profile of the real WPR corpus, in every variant: the collectors
 * ltr profiles --details says a session creates are those ltr start
 * creates. It listed, with their buffers, collectors whose providers all
 * lack a Linux meaning (WPRP_Defender's DefenderFull: its MSO Event
 * Collector, 0 created). */
static void test_details_says_the_collectors_created(void **state)
{
    (void)state;
    const char *src = getenv("LTR_SOURCE_DIR");
    static const char *const files[] = {"WPRP_Defender.wprp", "WPRP_Network.wprp", "WPRP_Heap.wprp",
                                        "WPRP_WindowsProviders.wprp", "PreWin10_WPRP_Handles.wprp"};
    int compared = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/profiles/wprp/%s", src ? src : ".", files[f]);
        ltr_profile_list *l = NULL;
        ltr_profiles_list(path, NULL, &l);
        assert_non_null(l);
        for (size_t i = 0; i < l->n; i++)
            for (int level = 0; level < 2; level++)
                for (int filemode = 0; filemode < 2; filemode++) {
                    char spec[4200];
                    snprintf(spec, sizeof spec, "%s!%s%s", path, l->v[i].name, level ? ".light" : ".verbose");
                    size_t said = 0;
                    int created = created_and_said(spec, filemode, &said);
                    if (created < 0)
                        continue; /* no such variant */
                    if ((size_t)created != said)
                        fail_msg("%s (%s mode): --details says %zu collectors are created, ltr start "
                                 "creates %d", spec, filemode ? "file" : "memory", said, created);
                    compared++;
                }
        ltr_profile_list_free(l);
    }
    assert_true(compared > 20);
    /* DefenderFull's one collector: said as not created, no buffers shown */
    char defender[4200];
    snprintf(defender, sizeof defender, "%s/tests/profiles/wprp/WPRP_Defender.wprp!DefenderFull",
             src ? src : ".");
    const char *specs[] = {defender};
    ltr_profile_request req = {.specs = specs, .nspecs = 1};
    ltr_plan *plan = NULL;
    ltr_profiles_describe(&req, &plan);
    assert_non_null(plan);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    ltr_plan_write_text(m, plan);
    fclose(m);
    ltr_plan_free(plan);
    bool said_so = strstr(text, "MSO Event Collector (event collector): not created") != NULL;
    if (!said_so)
        fail_msg("--details of DefenderFull:\n%s", text);
    free(text);
}

static void test_record_session(void **state)
{
    (void)state;
    ltr_error err;
    ltr_record_setup s = {.mode = LTR_MODE_FILE, .buffer_kb = 16, .buffers = 64, .trace = "/tmp/x/t.ltr"};
    assert_int_equal(ltr_record_session_config(&cfg, &s, &err), 0);
    char name[64];
    snprintf(name, sizeof name, "record-%d", (int)getpid());
    assert_string_equal(cfg.name, name);
    assert_true(cfg.exclusive);
    assert_int_equal(cfg.npids, 0);
    assert_true(cfg.output_temp);
    assert_int_equal(strncmp(cfg.output, "/tmp/x/t.ltr", 12), 0); /* beside it, a longer name */
    assert_true(strlen(cfg.output) > 12);
    assert_string_equal(cfg.stop_output, "/tmp/x/t.ltr");
    assert_int_equal(cfg.collectors[0].buffers, 64);
    s.pid = 4321;
    s.mode = LTR_MODE_MEMORY;
    s.force = true;
    assert_int_equal(ltr_record_session_config(&cfg, &s, &err), 0);
    assert_false(cfg.exclusive);
    assert_int_equal(cfg.npids, 1);
    assert_int_equal(cfg.pids[0], 4321);
    assert_int_equal(cfg.pid_collectors, 1);
    assert_false(cfg.output_temp);
    assert_true(cfg.stop_force);
    static char longpath[8192];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    s.trace = longpath;
    assert_int_equal(ltr_record_session_config(&cfg, &s, &err), -ENAMETOOLONG);
    assert_non_null(strstr(err.msg, "path too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_profile_defaults),
        cmocka_unit_test(test_no_profile_options),
        cmocka_unit_test(test_plan_with_overrides),
        cmocka_unit_test(test_plan_with_nothing_keeps_a_collector),
        cmocka_unit_test(test_plan_percent_of_ram),
        cmocka_unit_test(test_too_many_providers),
        cmocka_unit_test(test_builtin_heap_profile),
        cmocka_unit_test(test_system_keywords),
        cmocka_unit_test(test_same_provider_twice_merges),
        cmocka_unit_test(test_heap_process_names),
        cmocka_unit_test(test_record_session),
        cmocka_unit_test(test_details_says_the_collectors_created),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
