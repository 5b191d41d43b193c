/*
 * tests/profiles/test_inherit.c — Base= inheritance and the plan it builds:
 * attributes and single values inherited unless set, Set/Add/Remove on lists
 * and keyword masks, collectors merged, bases across files and onto the
 * built-in profiles (ltr's and WPR's names), and the built-ins themselves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "profiles/helpers.h"

static const char collectors[] =
    "<SystemCollector Id='SC' Name='Sys'><BufferSize Value='256'/><Buffers Value='10'/></SystemCollector>\n"
    "<SystemCollector Id='SC2' Base='SC'><Buffers Value='40'/></SystemCollector>\n"
    "<EventCollector Id='EC' Name='Ev'><BufferSize Value='64'/><Buffers Value='3' PercentageOfTotalMemory='true'/></EventCollector>\n";

static char *spec(const char *file, const char *name)
{
    static char s[4][600];
    static int slot;
    char *p = s[slot++ % 4];
    snprintf(p, 600, "%s!%s", file, name);
    return p;
}

static ltr_plan *ok_plan(bool filemode, const char *s1, const char *s2)
{
    ltr_plan *p = NULL;
    int rc = resolve(&p, filemode, s1, s2, NULL);
    if (rc)
        dump_diags(&p->diags);
    assert_int_equal(rc, 0);
    return p;
}

static void providers_inherit_and_edit_lists(void **state)
{
    char body[4096];
    snprintf(body, sizeof body,
             "%s"
             "<SystemProvider Id='SPA'><Keywords><Keyword Value='ProcessThread'/><Keyword Value='Loader'/>"
             "<Keyword Value='CSwitch'/></Keywords></SystemProvider>\n"
             "<SystemProvider Id='SPB' Base='SPA'><Keywords Operation='Remove'><Keyword Value='CSwitch'/>"
             "</Keywords><Stacks Operation='Add'><Stack Value='ImageLoad'/></Stacks></SystemProvider>\n"
             "<EventProvider Id='EPA' Name='MyCompany-Service' Level='4' Stack='true'>"
             "<Keywords><Keyword Value='0xFF'/></Keywords>"
             "<CaptureStateOnSave><Keyword Value='0x100'/></CaptureStateOnSave></EventProvider>\n"
             "<EventProvider Id='EPB' Base='EPA' Level='5'><Keywords Operation='Remove'>"
             "<Keyword Value='0x10'/></Keywords></EventProvider>\n"
             "<EventProvider Id='EPC' Name='3a5f2396-5c8f-4f1f-9b67-6cca6c990e61' Base='EPA'>"
             "<Keywords Operation='Set'><Keyword Value='1'/><Keyword Value='0x20'/></Keywords></EventProvider>\n"
             "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
             "<Collectors><SystemCollectorId Value='SC2'><SystemProviderId Value='SPB'/></SystemCollectorId>"
             "<EventCollectorId Value='EC'><EventProviders><EventProviderId Value='EPB'/>"
             "<EventProviderId Value='EPC'/></EventProviders></EventCollectorId></Collectors></Profile>\n",
             collectors);
    const char *f = write_wprp("lists.wprp", body);
    ltr_plan *p = ok_plan(true, spec(f, "P"), NULL);
    /* SC2 inherits Name and BufferSize, sets its own Buffers */
    const ltr_plan_collector *sc = find_collector(p, "Sys");
    assert_non_null(sc);
    assert_int_equal(sc->buffer_size_kb, 256);
    assert_int_equal(sc->buffers, 40);
    const ltr_plan_collector *ec = find_collector(p, "Ev");
    assert_non_null(ec);
    assert_true(ec->buffers_percent);
    assert_int_equal(ec->buffers, 3);
    /* Remove took CSwitch away; Add put a stack on */
    assert_non_null(find_syskw(p, "Loader"));
    assert_null(find_syskw(p, "CSwitch"));
    assert_int_equal(p->nsysstacks, 1);
    assert_string_equal(p->sysstacks[0], "ImageLoad");
    /* EPB: name, Stack and capture state inherited, Level overridden, 0x10 cleared */
    ltr_guid g;
    char gt[37];
    ltr_guid_from_name("MyCompany-Service", &g);
    ltr_guid_format(&g, gt);
    const ltr_plan_provider *b = find_provider(p, gt);
    assert_non_null(b);
    assert_false(b->guid_given);
    assert_string_equal(b->name, "MyCompany-Service");
    assert_int_equal(b->keywords, 0xEF);
    assert_int_equal(b->level, 5);
    assert_true(b->stacks);
    assert_int_equal(b->capture_state_on_save, 0x100);
    /* EPC: its own GUID, keywords replaced by Set */
    const ltr_plan_provider *c = find_provider(p, "3a5f2396-5c8f-4f1f-9b67-6cca6c990e61");
    assert_non_null(c);
    assert_true(c->guid_given);
    assert_int_equal(c->keywords, 0x21);
    assert_int_equal(c->level, 4);
    ltr_plan_free(p);
}

static void profiles_derive_collectors(void **state)
{
    char body[4096];
    snprintf(body, sizeof body,
             "%s"
             "<SystemProvider Id='SP1'><Keywords><Keyword Value='Loader'/></Keywords></SystemProvider>\n"
             "<SystemProvider Id='SP2'><Keywords><Keyword Value='MemoryInfo'/></Keywords></SystemProvider>\n"
             "<EventProvider Id='E1' Name='App-One'/>\n<EventProvider Id='E2' Name='App-Two'/>\n"
             "<HeapEventProvider Id='H'><HeapProcessIds><HeapProcessId Value='42'/></HeapProcessIds>"
             "<HeapProcessNames><HeapProcessName Value='mysvc'/></HeapProcessNames></HeapEventProvider>\n"
             "<HeapEventCollector Id='HC' Name='Heap'><BufferSize Value='512'/><Buffers Value='100'/></HeapEventCollector>\n"
             "<Profile Id='B.Light.File' Name='B' Description='base' DetailLevel='Light' LoggingMode='File'>"
             "<Collectors><SystemCollectorId Value='SC'><SystemProviderId Value='SP1'/></SystemCollectorId>"
             "<EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E1'/>"
             "<EventProviderId Value='E2'/></EventProviders></EventCollectorId></Collectors></Profile>\n"
             "<Profile Id='B.Light.Memory' Base='B.Light.File' Name='B' DetailLevel='Light' LoggingMode='Memory'>"
             "<Collectors Operation='Add'><SystemCollectorId Value='SC2'><SystemProviderId Value='SP2'/></SystemCollectorId>"
             "<EventCollectorId Value='EC'><EventProviders Operation='Remove'><EventProviderId Value='E2'/>"
             "</EventProviders></EventCollectorId>"
             "<HeapEventCollectorId Value='HC'><HeapEventProviders><HeapEventProviderId Value='H'/>"
             "</HeapEventProviders></HeapEventCollectorId></Collectors></Profile>\n",
             collectors);
    const char *f = write_wprp("derive.wprp", body);
    ltr_plan *p = ok_plan(false, spec(f, "b.light"), NULL); /* names ignore case */
    /* SC and SC2 share the Name "Sys": one collector, the larger buffer count */
    size_t sys = 0;
    for (size_t i = 0; i < p->ncollectors; i++)
        sys += strcmp(p->collectors[i].name, "Sys") == 0;
    assert_int_equal(sys, 1);
    assert_int_equal(find_collector(p, "Sys")->buffers, 40);
    assert_non_null(find_syskw(p, "Loader"));
    assert_non_null(find_syskw(p, "MemoryInfo"));
    assert_int_equal(p->nproviders, 1);
    assert_string_equal(p->providers[0].name, "App-One");
    assert_int_equal(p->providers[0].keywords, UINT64_MAX); /* none given: all */
    assert_true(p->heap.enabled);
    assert_int_equal(p->heap.npids, 1);
    assert_int_equal(p->heap.pids[0], 42);
    assert_int_equal(p->heap.nprocess_names, 1);
    assert_string_equal(p->heap.process_names[0], "mysvc");
    assert_string_equal(p->collectors[p->heap.collector].name, "Heap");
    /* the Memory variant sets no Description: it is inherited */
    ltr_profile_list *l = NULL;
    assert_int_equal(ltr_profiles_list(f, builtin_dir(), &l), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->v[0].description, "base");
    assert_int_equal(l->v[0].levels, LTR_PROFILE_LIGHT);
    assert_int_equal(l->v[0].modes, LTR_PROFILE_FILEMODE | LTR_PROFILE_MEMORYMODE);
    ltr_profile_list_free(l);
    ltr_plan_free(p);
}

/* A profile in one file derives from a profile and collectors in another
 * given at the same time, and from ltr's and WPR's built-in names. */
static void bases_across_files_and_builtins(void **state)
{
    const char *a = write_wprp("a.wprp",
        "<EventCollector Id='SharedEC' Name='Shared'><Buffers Value='7'/></EventCollector>\n"
        "<EventProvider Id='Shared.EP' Name='Shared-Provider'/>\n"
        "<Profile Id='A.Verbose.Memory' Name='A' Description='a' DetailLevel='Verbose' LoggingMode='Memory'>"
        "<Collectors><EventCollectorId Value='SharedEC'><EventProviders><EventProviderId Value='Shared.EP'/>"
        "</EventProviders></EventCollectorId></Collectors></Profile>");
    const char *b = write_wprp("b.wprp",
        "<EventCollector Id='MyEC' Base='EventCollector_WPREventCollectorInFile'><Buffers Value='9'/></EventCollector>\n"
        "<Profile Id='B.Verbose.Memory' Base='A.Verbose.Memory' Name='B' Description='b' DetailLevel='Verbose' LoggingMode='Memory'>"
        "<Collectors Operation='Add'><EventCollectorId Value='MyEC'><EventProviders><EventProviderId Value='Shared.EP'/>"
        "</EventProviders></EventCollectorId></Collectors></Profile>\n"
        "<Profile Id='G.Light.Memory' Base='GeneralProfile.Light.Memory' Name='G' Description='g' DetailLevel='Light' LoggingMode='Memory'/>\n"
        "<Profile Id='S.Verbose.Memory' Base='HeapSnapshot.Verbose.Memory' Name='S' Description='s' DetailLevel='Verbose' LoggingMode='Memory'/>\n"
        "<SystemProvider Id='SPX' Base='SystemProvider_Base'/>\n"
        "<Profile Id='X.Verbose.Memory' Name='X' Description='x' DetailLevel='Verbose' LoggingMode='Memory'>"
        "<Collectors><SystemCollectorId Value='SystemCollector_WPRSystemCollectorInMemory'>"
        "<SystemProviderId Value='SPX'/></SystemCollectorId></Collectors></Profile>");
    ltr_plan *p = ok_plan(false, spec(a, "A"), spec(b, "B"));
    const ltr_plan_collector *wpr = find_collector(p, "WPR_initiated_WprApp_WPR Event Collector");
    assert_non_null(wpr);
    assert_int_equal(wpr->buffers, 9);
    assert_int_equal(wpr->buffer_size_kb, 1024);
    assert_int_equal(find_collector(p, "Shared")->buffers, 7);
    ltr_plan_free(p);

    p = ok_plan(false, spec(b, "G.light"), NULL);
    assert_non_null(find_syskw(p, "MemoryInfo")); /* from ltr's general.Light */
    ltr_plan_free(p);
    p = ok_plan(false, spec(b, "S"), NULL);
    assert_true(p->heap.snapshot);
    ltr_plan_free(p);
    p = ok_plan(false, spec(b, "X"), NULL);
    const ltr_plan_collector *sc = find_collector(p, "WPR_initiated_WprApp_WPR System Collector");
    assert_non_null(sc);
    assert_true(sc->buffers_percent);
    assert_int_equal(sc->buffers, 5);
    assert_non_null(find_syskw(p, "ProcessThread"));
    ltr_plan_free(p);
}

static void builtin_profiles(void **state)
{
    ltr_profile_list *l = NULL;
    int rc = ltr_profiles_list(NULL, builtin_dir(), &l);
    if (rc)
        dump_diags(&l->diags);
    assert_int_equal(rc, 0);
    assert_int_equal(l->diags.n, 0);
    const char *want[] = {"heap", "heapsnapshot", "general", "memory"};
    for (size_t w = 0; w < 4; w++) {
        bool found = false;
        for (size_t i = 0; i < l->n; i++) {
            if (strcmp(l->v[i].name, want[w]) != 0)
                continue;
            found = true;
            assert_int_equal(l->v[i].levels, LTR_PROFILE_LIGHT | LTR_PROFILE_VERBOSE);
            assert_int_equal(l->v[i].modes, LTR_PROFILE_FILEMODE | LTR_PROFILE_MEMORYMODE);
        }
        assert_true(found);
    }
    for (size_t i = 0; i < l->n; i++)
        assert_string_not_equal(l->v[i].name, "GeneralProfile"); /* Internal */
    ltr_profile_list_free(l);

    ltr_plan *p = ok_plan(false, "heap", "heapsnapshot.light");
    assert_int_equal(p->mode, LTR_PLAN_MEMORY);
    assert_int_equal(p->nprofiles, 2);
    assert_string_equal(p->profiles[0], "heap.Verbose.Memory");
    assert_string_equal(p->profiles[1], "heapsnapshot.Light.Memory");
    assert_true(p->heap.enabled);
    assert_true(p->heap.snapshot);
    assert_int_equal(p->collectors[p->heap.collector].kind, LTR_COLLECTOR_HEAP);
    assert_int_equal(p->diags.n, 0);
    ltr_plan_free(p);

    p = ok_plan(true, "GeneralProfile", NULL);
    assert_string_equal(p->profiles[0], "GeneralProfile.Verbose.File");
    assert_non_null(find_syskw(p, "SampledProfile"));
    assert_true(find_syskw(p, "MemoryInfo")->available); /* the system provider's memory counters */
    assert_null(find_diag(&p->diags, LTR_DIAG_WARNING, "starts nothing on Linux"));
    ltr_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(providers_inherit_and_edit_lists),
        cmocka_unit_test(profiles_derive_collectors),
        cmocka_unit_test(bases_across_files_and_builtins),
        cmocka_unit_test(builtin_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
