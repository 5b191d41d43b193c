/*
 * tests/profiles/test_wpr_semantics.c — profile names mean what they mean in
 * WPR: a name without a detail level is Verbose (the schema's default), a
 * profile without a Verbose variant is then an error that names the variants
 * it has, `Name.Medium` says which detail levels exist, and Base= chains are
 * followed as deep as real files go, with cycles and over-deep chains told
 * apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/helpers.h"

static const char *real(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", wprp_dir(), name);
    return p;
}

static ltr_plan *plan_of(int want_rc, bool filemode, const char *spec)
{
    ltr_plan *p = NULL;
    int rc = resolve(&p, filemode, spec, NULL);
    assert_non_null(p);
    if (rc != want_rc)
        dump_diags(&p->diags);
    assert_int_equal(rc, want_rc);
    return p;
}

static const ltr_diag *error_with(const ltr_plan *p, const char *text)
{
    const ltr_diag *d = find_diag(&p->diags, LTR_DIAG_ERROR, text);
    if (!d) {
        fprintf(stderr, "no error containing '%s'; got:\n", text);
        dump_diags(&p->diags);
    }
    assert_non_null(d);
    return d;
}

/* Real profiles: Verbose-only ones start by their bare name; a Light-only one
 * is not silently taken for it, and the error names the variants it has. */
static void bare_name_is_verbose_in_real_files(void **state)
{
    char spec[700];
    snprintf(spec, sizeof spec, "%s!TraceHeap_ByName", real("WPRP_Heap.wprp"));
    ltr_plan *p = plan_of(0, false, spec);
    assert_non_null(strstr(p->profiles[0], "!TraceHeap_ByName.Verbose.Memory"));
    assert_non_null(p->variants);
    assert_int_equal(p->variants[0],
                     LTR_PROFILE_VARIANT(LTR_PROFILE_VERBOSE, LTR_PROFILE_FILEMODE) |
                         LTR_PROFILE_VARIANT(LTR_PROFILE_VERBOSE, LTR_PROFILE_MEMORYMODE));
    ltr_plan_free(p);

    snprintf(spec, sizeof spec, "%s!Heap_Snapshot", real("WPRP_Heap.wprp"));
    p = plan_of(-1, false, spec);
    const ltr_diag *d = error_with(p, "no Verbose Memory variant");
    assert_string_equal(d->id, "Heap_Snapshot");
    assert_non_null(strstr(d->msg, "it has Light.File, Light.Memory"));
    assert_non_null(strstr(d->msg, "without a detail level means Verbose"));
    assert_non_null(strstr(d->msg, "use Heap_Snapshot.light"));
    assert_int_equal(p->nprofiles, 0);
    ltr_plan_free(p);

    /* the File-only Light profile: both the level and the mode are named */
    snprintf(spec, sizeof spec, "%s!LeanReferenceSet", real("WPRP_Memory.wprp"));
    p = plan_of(-1, false, spec);
    d = error_with(p, "no Verbose Memory variant");
    assert_non_null(strstr(d->msg, "it has Light.File"));
    assert_non_null(strstr(d->msg, "use LeanReferenceSet.light with --filemode"));
    ltr_plan_free(p);
}

/* A file of both levels: the bare name is Verbose even in the mode where only
 * Light exists, which is an error, not a quiet switch to Light. */
static void bare_name_never_falls_back_to_light(void **state)
{
    const char *f = write_wprp("levels.wprp",
        "<EventCollector Id='EC' Name='Ev'/>\n"
        "<EventProvider Id='E' Name='x'/>\n"
        "<Profile Id='B.Light.File' Name='B' Description='d' DetailLevel='Light' LoggingMode='File'>"
        "<Collectors><EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E'/>"
        "</EventProviders></EventCollectorId></Collectors></Profile>\n"
        "<Profile Id='B.Light.Memory' Base='B.Light.File' Name='B' Description='d' DetailLevel='Light' LoggingMode='Memory'/>\n"
        "<Profile Id='B.Verbose.File' Base='B.Light.File' Name='B' Description='d' DetailLevel='Verbose' LoggingMode='File'/>");
    char spec[600];
    snprintf(spec, sizeof spec, "%s!B", f);
    ltr_plan *p = plan_of(0, true, spec);
    assert_non_null(strstr(p->profiles[0], "!B.Verbose.File"));
    ltr_plan_free(p);
    p = plan_of(-1, false, spec);
    const ltr_diag *d = error_with(p, "no Verbose Memory variant");
    assert_non_null(strstr(d->msg, "it has Light.File, Light.Memory, Verbose.File"));
    assert_non_null(strstr(d->msg, "use B.light"));
    ltr_plan_free(p);
}

/* `heap.Medium` is a detail level that does not exist, and the error says
 * which do; a profile whose own name has a dot is still found by it. */
static void unknown_detail_level_lists_the_levels(void **state)
{
    ltr_plan *p = plan_of(-1, false, "heap.Medium");
    const ltr_diag *d = error_with(p, "'Medium' is not a detail level of heap");
    assert_string_equal(d->id, "heap.Medium");
    assert_non_null(strstr(d->msg, "it has Light and Verbose"));
    assert_non_null(strstr(d->msg, "heap.light"));
    assert_non_null(strstr(d->msg, "heap.verbose"));
    assert_null(find_diag(&p->diags, LTR_DIAG_ERROR, "no profile of that name"));
    ltr_plan_free(p);

    char spec[700];
    snprintf(spec, sizeof spec, "%s!CPU-DispatchEx.Diagnostic", real("WPRP_CPU.wprp"));
    p = plan_of(-1, true, spec);
    d = error_with(p, "'Diagnostic' is not a detail level of CPU-DispatchEx: it has Verbose");
    assert_null(strstr(d->msg, "Light"));
    ltr_plan_free(p);

    const char *f = write_wprp("dotted.wprp",
        "<EventCollector Id='EC' Name='Ev'/>\n"
        "<EventProvider Id='E' Name='x'/>\n"
        "<Profile Id='My.Medium.Verbose.Memory' Name='My.Medium' Description='d' DetailLevel='Verbose' LoggingMode='Memory'>"
        "<Collectors><EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E'/>"
        "</EventProviders></EventCollectorId></Collectors></Profile>");
    snprintf(spec, sizeof spec, "%s!My.Medium", f);
    p = plan_of(0, false, spec);
    assert_non_null(strstr(p->profiles[0], "!My.Medium.Verbose.Memory"));
    ltr_plan_free(p);
    p = plan_of(-1, false, "nosuch.Medium");
    error_with(p, "no profile of that name");
    ltr_plan_free(p);
}

/* Providers E0 <- E1 <- ... <- E(n-1), each adding a keyword bit; profile P
 * uses the last. Returns the file. */
static const char *chain_file(const char *name, int n, int cycle_to)
{
    size_t size = (size_t)n * 160 + 1024;
    char *body = malloc(size);
    assert_non_null(body);
    size_t used = (size_t)snprintf(body, size, "<EventCollector Id='EC' Name='Ev'/>\n");
    for (int i = 0; i < n; i++) {
        char base[32] = "";
        if (i > 0 || cycle_to >= 0)
            snprintf(base, sizeof base, " Base='E%d'", i > 0 ? i - 1 : cycle_to);
        used += (size_t)snprintf(body + used, size - used,
                                 "<EventProvider Id='E%d'%s Name='x'><Keywords Operation='Add'>"
                                 "<Keyword Value='0x%llx'/></Keywords></EventProvider>\n",
                                 i, base, 1ull << (i % 64));
    }
    snprintf(body + used, size - used,
             "<Profile Id='P.Verbose.Memory' Name='P' Description='d' DetailLevel='Verbose' LoggingMode='Memory'>"
             "<Collectors><EventCollectorId Value='EC'><EventProviders><EventProviderId Value='E%d'/>"
             "</EventProviders></EventCollectorId></Collectors></Profile>",
             n - 1);
    const char *f = write_wprp(name, body);
    free(body);
    return f;
}

/* 65 elements deep is a chain, not a cycle: everything it inherits arrives. */
static void deep_base_chain_resolves(void **state)
{
    const char *f = chain_file("chain65.wprp", 65, -1);
    char spec[600];
    snprintf(spec, sizeof spec, "%s!P", f);
    ltr_plan *p = plan_of(0, false, spec);
    assert_null(find_diag(&p->diags, LTR_DIAG_ERROR, "cycle"));
    assert_int_equal(p->nproviders, 1);
    assert_int_equal(p->providers[0].keywords, UINT64_MAX); /* every bit, one per level */
    ltr_plan_free(p);
    f = chain_file("chain900.wprp", 900, -1);
    snprintf(spec, sizeof spec, "%s!P", f);
    p = plan_of(0, false, spec);
    assert_int_equal(p->nproviders, 1);
    ltr_plan_free(p);
}

/* Beyond the bound the error says the chain is too deep, never a cycle; a
 * real cycle at the end of a long lead-in names only the elements in it. */
static void too_deep_and_cycles_told_apart(void **state)
{
    const char *f = chain_file("chain1500.wprp", 1500, -1);
    char spec[600];
    snprintf(spec, sizeof spec, "%s!P", f);
    ltr_plan *p = plan_of(-1, false, spec);
    const ltr_diag *d = error_with(p, "Base= chain deeper than 1000 elements");
    assert_string_equal(d->id, "E1499");
    assert_null(find_diag(&p->diags, LTR_DIAG_ERROR, "cycle"));
    ltr_plan_free(p);

    /* E0 derives from E2: E2 -> E1 -> E0 -> E2, reached from E99 */
    f = chain_file("cycle100.wprp", 100, 2);
    snprintf(spec, sizeof spec, "%s!P", f);
    p = plan_of(-1, false, spec);
    d = error_with(p, "forms a cycle: E2 -> E1 -> E0 -> E2");
    assert_string_equal(d->id, "E2");
    assert_null(find_diag(&p->diags, LTR_DIAG_ERROR, "too deep"));
    assert_null(strstr(d->msg, "E3 "));
    ltr_plan_free(p);
}

/* A heap provider listed under an event collector: taken, it turned heap
 * tracing on with no heap collector, and the session started, recorded
 * nothing and said only that the profile "starts nothing" (a review). */
static void heap_provider_outside_heap_collector(void **state)
{
    (void)state;
    const char *f = write_wprp("misplaced.wprp",
                               "<EventCollector Id='EC' Name='Heap'><BufferSize Value='1024'/><Buffers Value='16'/>"
                               "</EventCollector>"
                               "<HeapEventProvider Id='HP'><HeapProcessIds Operation='Set'>"
                               "<HeapProcessId Value='1234'/></HeapProcessIds></HeapEventProvider>"
                               "<Profile Id='P.Verbose.File' Name='P' Description='d' DetailLevel='Verbose' "
                               "LoggingMode='File'><Collectors><EventCollectorId Value='EC'><EventProviders>"
                               "<HeapEventProviderId Value='HP'/></EventProviders></EventCollectorId></Collectors>"
                               "</Profile>");
    char spec[600];
    snprintf(spec, sizeof spec, "%s!P", f);
    ltr_plan *p = plan_of(-1, true, spec);
    error_with(p, "<HeapEventProviderId Value=\"HP\"> is in an event or system collector");
    ltr_plan_free(p);
}

/* Providers defined where the profile uses them, as WPR's documentation's
 * example writes them ("providers can be defined in, instead of before, the
 * profile definition"): an event provider in <EventProviders>, a heap one in
 * <HeapEventProviders>, a system one in <SystemCollectorId>. They were
 * ignored ("<EventProvider> in <EventProviders> has no Value attribute") and
 * the profile recorded none of them. */
static void providers_defined_in_the_profile(void **state)
{
    (void)state;
    const char *f = write_wprp(
        "inline.wprp",
        "<SystemCollector Id='SC' Name='NT Kernel Logger'><BufferSize Value='1024'/><Buffers Value='8'/>"
        "</SystemCollector>"
        "<EventCollector Id='Collector1' Name='Sample Event Collector'><BufferSize Value='128'/>"
        "<Buffers Value='64'/></EventCollector>"
        "<HeapEventCollector Id='HC' Name='Heap'><BufferSize Value='1024'/><Buffers Value='16'/></HeapEventCollector>"
        "<Profile Id='Sample.Verbose.File' Name='Sample' Description='d' DetailLevel='Verbose' LoggingMode='File'>"
        "<Collectors><SystemCollectorId Value='SC'><SystemProvider Id='SP'><Keywords><Keyword Value='Loader'/>"
        "</Keywords></SystemProvider></SystemCollectorId>"
        "<EventCollectorId Value='Collector1'><EventProviders>"
        "<EventProvider Id='EventProvider_Mine' Name='MyCompany.MyService' NonPagedMemory='true'>"
        "<Keywords><Keyword Value='0x4'/></Keywords></EventProvider></EventProviders></EventCollectorId>"
        "<HeapEventCollectorId Value='HC'><HeapEventProviders><HeapEventProvider Id='HP'><HeapProcessIds>"
        "<HeapProcessId Value='4321'/></HeapProcessIds></HeapEventProvider></HeapEventProviders>"
        "</HeapEventCollectorId></Collectors></Profile>");
    char spec[600];
    snprintf(spec, sizeof spec, "%s!Sample", f);
    ltr_plan *p = plan_of(0, true, spec);
    assert_null(find_diag(&p->diags, LTR_DIAG_WARNING, "has no Value attribute"));
    const ltr_plan_provider *mine = NULL;
    for (size_t i = 0; i < p->nproviders; i++)
        if (!strcmp(p->providers[i].name, "MyCompany.MyService"))
            mine = &p->providers[i];
    assert_non_null(mine);
    assert_int_equal(mine->keywords, 0x4);
    assert_string_equal(p->collectors[mine->collector].name, "Sample Event Collector");
    assert_non_null(find_syskw(p, "Loader"));
    assert_true(p->heap.enabled);
    assert_int_equal(p->heap.npids, 1);
    assert_int_equal(p->heap.pids[0], 4321);
    ltr_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bare_name_is_verbose_in_real_files),
        cmocka_unit_test(bare_name_never_falls_back_to_light),
        cmocka_unit_test(unknown_detail_level_lists_the_levels),
        cmocka_unit_test(deep_base_chain_resolves),
        cmocka_unit_test(too_deep_and_cycles_told_apart),
        cmocka_unit_test(heap_provider_outside_heap_collector),
        cmocka_unit_test(providers_defined_in_the_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
