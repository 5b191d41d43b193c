/*
 * tests/profiles/test_real.c — the 35 real profiles in tests/profiles/wprp (from
 * microsoft/MSO-Scripts): every file lists with no error, every variant of
 * every profile resolves into a plan with no error, and a few plans are
 * checked in detail (heap by pid, merged collectors, Windows-only skipping).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/helpers.h"

static const char *real(const char *name)
{
    static char p[8][512];
    static int slot;
    char *s = p[slot++ % 8];
    snprintf(s, 512, "%s/%s", wprp_dir(), name);
    return s;
}

static void resolve_variant(const char *file, const char *name, const char *level, bool filemode)
{
    char spec[2048];
    snprintf(spec, sizeof spec, "%s!%s.%s", file, name, level);
    ltr_plan *p = NULL;
    int rc = resolve(&p, filemode, spec, NULL);
    assert_non_null(p);
    if (rc != 0 || p->diags.errors) {
        fprintf(stderr, "%s (%s):\n", spec, filemode ? "file" : "memory");
        dump_diags(&p->diags);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(p->diags.errors, 0);
    assert_true(p->ncollectors > 0);
    assert_int_equal(p->mode, filemode ? LTR_PLAN_FILE : LTR_PLAN_MEMORY);
    ltr_plan_free(p);
}

static void check_file(const char *path)
{
    ltr_profile_list *l = NULL;
    int rc = ltr_profiles_list(path, builtin_dir(), &l);
    assert_non_null(l);
    if (rc != 0) {
        fprintf(stderr, "%s:\n", path);
        dump_diags(&l->diags);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(l->diags.errors, 0);
    assert_true(l->n > 0);
    for (size_t i = 0; i < l->n; i++) {
        assert_non_null(l->v[i].description);
        for (int lv = LTR_PROFILE_LIGHT; lv <= LTR_PROFILE_VERBOSE; lv++)
            for (int m = LTR_PROFILE_FILEMODE; m <= LTR_PROFILE_MEMORYMODE; m++)
                if ((l->v[i].levels & lv) && (l->v[i].modes & m))
                    resolve_variant(path, l->v[i].name, lv == LTR_PROFILE_LIGHT ? "light" : "verbose",
                                    m == LTR_PROFILE_FILEMODE);
    }
    ltr_profile_list_free(l);
}

static int is_wprp(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".wprp") == 0;
}

static void every_real_file_lists_and_resolves(void **state)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", wprp_dir());
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, is_wprp, alphasort);
    assert_int_equal(n, 35);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%.500s/%.500s", dir, ents[i]->d_name);
        check_file(path);
        free(ents[i]);
    }
    free(ents);
}

static void heap_by_pid_plan(void **state)
{
    ltr_plan *p = NULL;
    char spec[600];
    snprintf(spec, sizeof spec, "%s!TraceHeap_ByPID", real("WPRP_Heap.wprp"));
    assert_int_equal(resolve(&p, false, spec, NULL), 0);
    assert_int_equal(p->mode, LTR_PLAN_MEMORY);
    assert_int_equal(p->nprofiles, 1);
    assert_non_null(strstr(p->profiles[0], "!TraceHeap_ByPID.Verbose.Memory"));
    /* the Memory variant has no body: everything comes through Base= */
    assert_true(p->heap.enabled);
    assert_int_equal(p->heap.npids, 1);
    assert_int_equal(p->heap.pids[0], 12345678);
    const ltr_plan_collector *hc = find_collector(p, "MSO Heap Collector");
    assert_non_null(hc);
    assert_int_equal(hc->kind, LTR_COLLECTOR_HEAP);
    assert_int_equal(hc->buffer_size_kb, 1024);
    assert_int_equal(hc->buffers, 768);
    assert_ptr_equal(&p->collectors[p->heap.collector], hc);
    /* SC_64-MB derives BufferSize from SC_Base and sets Buffers itself */
    const ltr_plan_collector *sc = find_collector(p, "MSO System Collector");
    assert_non_null(sc);
    assert_int_equal(sc->buffer_size_kb, 1024);
    assert_int_equal(sc->buffers, 64);
    /* Office code markers become an ltr provider with keyword 4 */
    const ltr_plan_provider *cm = find_provider(p, "8736922d-e8b2-47eb-8564-23e77e728cf3");
    assert_non_null(cm);
    assert_true(cm->guid_given);
    assert_int_equal(cm->keywords, 4);
    assert_string_equal(p->collectors[cm->collector].name, "MSO Event Collector");
    /* the kernel image-load provider maps to the modules part, not a provider */
    assert_null(find_provider(p, "2cb15d1d-5fc1-11d2-abe1-00a0c911f518"));
    const ltr_plan_syskw *loader = find_syskw(p, "Loader");
    assert_non_null(loader);
    assert_non_null(loader->linux_part);
    assert_true(loader->available); /* the system provider's modules (docs/system-provider.md) */
    /* SP_HeapMemory inherits ProcessThread/Loader and VirtualAllocation via two bases */
    assert_non_null(find_syskw(p, "ProcessThread"));
    assert_non_null(find_syskw(p, "VirtualAllocation"));
    ltr_plan_free(p);
}

static void heap_snapshot_maps_to_snapshots(void **state)
{
    ltr_plan *p = NULL;
    char spec[600];
    snprintf(spec, sizeof spec, "%s!Heap_Snapshot.light", real("WPRP_Heap.wprp"));
    assert_int_equal(resolve(&p, true, spec, NULL), 0);
    assert_true(p->heap.snapshot);
    assert_false(p->heap.enabled);
    assert_null(find_provider(p, "901d2afa-4ff6-46d7-8d0e-53645e1a47f5"));
    ltr_plan_free(p);
}

/* Profiles from several files at once: collectors of the same name merge into
 * one, sized by the largest request; a Windows-only provider is reported once. */
static void several_files_merge_collectors(void **state)
{
    char a[600], b[600];
    snprintf(a, sizeof a, "%s!TraceHeap_ByName", real("WPRP_Heap.wprp"));
    snprintf(b, sizeof b, "%s!TraceVirtualAlloc.light", real("WPRP_Heap.19559.wprp"));
    ltr_plan *p = NULL;
    int rc = resolve(&p, true, a, b, NULL);
    if (rc)
        dump_diags(&p->diags);
    assert_int_equal(rc, 0);
    assert_int_equal(p->nprofiles, 2);
    size_t systems = 0;
    for (size_t i = 0; i < p->ncollectors; i++)
        systems += p->collectors[i].kind == LTR_COLLECTOR_SYSTEM;
    assert_int_equal(systems, 1);
    const ltr_plan_collector *sc = find_collector(p, "MSO System Collector");
    assert_non_null(sc);
    assert_int_equal(sc->buffers, 256); /* 64 from one profile, 256 from the other */
    /* the code-markers provider of both profiles is one provider */
    size_t markers = 0;
    for (size_t i = 0; i < p->nproviders; i++) {
        char g[37];
        ltr_guid_format(&p->providers[i].guid, g);
        markers += strcmp(g, "8736922d-e8b2-47eb-8564-23e77e728cf3") == 0;
    }
    assert_int_equal(markers, 1);
    ltr_plan_free(p);
}

static void windows_only_providers_skipped_once(void **state)
{
    char spec[600];
    snprintf(spec, sizeof spec, "%s!TuttiFrutti", real("WPRP_WindowsProviders.wprp"));
    ltr_plan *p = NULL;
    assert_int_equal(resolve(&p, false, spec, NULL), 0);
    assert_int_equal(p->nproviders, 0);
    assert_true(p->nskipped > 10);
    for (size_t i = 0; i < p->nskipped; i++)
        for (size_t j = i + 1; j < p->nskipped; j++)
            assert_string_not_equal(p->skipped[i].what, p->skipped[j].what);
    /* its Windows providers are all skipped; its kernel process events (and
     * SystemProvider keywords) are the system provider's processes part */
    assert_null(find_diag(&p->diags, LTR_DIAG_WARNING, "starts nothing on Linux"));
    const ltr_plan_syskw *k = find_syskw(p, "ProcessThread");
    assert_non_null(k);
    assert_true(k->available);
    ltr_plan_free(p);
}

static void hardware_counters_skipped(void **state)
{
    char spec[600];
    snprintf(spec, sizeof spec, "%s!CPI", real("BETA_WPRP_CPUCounters.wprp"));
    ltr_plan *p = NULL;
    assert_int_equal(resolve(&p, true, spec, NULL), 0);
    bool found = false;
    for (size_t i = 0; i < p->nskipped; i++)
        found |= strcmp(p->skipped[i].what, "HardwareCounter HC_CPI") == 0;
    assert_true(found);
    const ltr_plan_syskw *cs = find_syskw(p, "CSwitch");
    assert_non_null(cs);
    assert_null(cs->linux_part);
    ltr_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_real_file_lists_and_resolves),
        cmocka_unit_test(heap_by_pid_plan),
        cmocka_unit_test(heap_snapshot_maps_to_snapshots),
        cmocka_unit_test(several_files_merge_collectors),
        cmocka_unit_test(windows_only_providers_skipped_once),
        cmocka_unit_test(hardware_counters_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
