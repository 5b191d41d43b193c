/*
 * tests/profiles/test_export.c — `ltr profiles --export` in-process
 * (src/profiles/export.c): every built-in profile, and every profile of the
 * real WPR corpus (tests/profiles/wprp), exported and read back gives the
 * same plan in each of its variants (Light and Verbose, File and Memory):
 * the same text as `ltr profiles --details` prints, less the profile's own
 * label; the export stands alone (no Base=, nothing it needs left out); an
 * unknown name is refused with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plan of spec as --details prints it, less the "Profile:" lines (they
 * name the file the profile came from); NULL when it does not resolve. */
static char *plan_text(const char *spec, bool filemode)
{
    const char *specs[] = {spec};
    ltr_profile_request req = {specs, 1, filemode, builtin_dir()};
    ltr_plan *p = NULL;
    int rc = ltr_profiles_describe(&req, &p);
    if (rc) {
        dump_diags(&p->diags);
        ltr_plan_free(p);
        return NULL;
    }
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    ltr_plan_write_text(f, p);
    fclose(f);
    ltr_plan_free(p);
    char *profile;
    while ((profile = strstr(text, "Profile: "))) { /* the line and the next ("variants of its name") */
        char *end = strchr(profile, '\n');
        end = end ? strchr(end + 1, '\n') : NULL;
        memmove(profile, end ? end + 1 : profile + strlen(profile), strlen(end ? end + 1 : "") + 1);
    }
    return text;
}

/* Exports name (from file, or the built-ins), reads it back: every variant
 * the original has gives the same plan. Returns the variants compared. */
static int round_trip(const char *file, const char *name)
{
    char spec[1024], out[1024], back[2048];
    snprintf(spec, sizeof spec, "%s%s%s", file ? file : "", file ? "!" : "", name);
    ltr_diag_list diags = {0};
    char *xml = ltr_profiles_export(spec, builtin_dir(), &diags);
    if (!xml) {
        dump_diags(&diags);
        fail_msg("%s was not exported", spec);
    }
    ltr_diag_list_free(&diags);
    assert_null(strstr(xml, "Base="));
    snprintf(out, sizeof out, "%s.export.wprp", name);
    const char *path = write_file(out, xml);
    free(xml);
    int compared = 0;
    static const char *const levels[] = {".light", ".verbose"};
    for (int l = 0; l < 2; l++)
        for (int filemode = 0; filemode < 2; filemode++) {
            char want_spec[1100];
            snprintf(want_spec, sizeof want_spec, "%s%s", spec, levels[l]);
            char *want = plan_text(want_spec, filemode);
            if (!want)
                continue; /* the original has no such variant (or it does not start) */
            snprintf(back, sizeof back, "%s!%s%s", path, name, levels[l]);
            char *got = plan_text(back, filemode);
            if (!got || strcmp(got, want))
                fail_msg("%s%s (%s mode) reads back differently:\n--- original\n%s\n--- exported\n%s", spec,
                         levels[l], filemode ? "file" : "memory", want, got ? got : "(does not resolve)");
            compared++;
            free(want);
            free(got);
        }
    return compared;
}

static void test_every_builtin_round_trips(void **state)
{
    (void)state;
    ltr_profile_list *l = NULL;
    assert_int_equal(ltr_profiles_list(NULL, builtin_dir(), &l), 0);
    assert_true(l->n >= 4);
    for (size_t i = 0; i < l->n; i++)
        assert_int_equal(round_trip(NULL, l->v[i].name), 4); /* every built-in has all four variants */
    ltr_profile_list_free(l);
}

static void test_wpr_corpus_round_trips(void **state)
{
    (void)state;
    DIR *d = opendir(wprp_dir());
    assert_non_null(d);
    int files = 0, profiles = 0, variants = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".wprp"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", wprp_dir(), e->d_name);
        ltr_profile_list *l = NULL;
        if (ltr_profiles_list(path, builtin_dir(), &l) != 0) { /* a file ltr refuses is not exported either */
            ltr_profile_list_free(l);
            continue;
        }
        files++;
        for (size_t i = 0; i < l->n; i++, profiles++)
            variants += round_trip(path, l->v[i].name);
        ltr_profile_list_free(l);
    }
    closedir(d);
    printf("round-tripped %d variants of %d profiles of %d WPR files\n", variants, profiles, files);
    assert_true(files >= 30);
    assert_true(variants > profiles); /* most have more than one variant */
}

static void test_unknown_refused(void **state)
{
    (void)state;
    ltr_diag_list diags = {0};
    assert_null(ltr_profiles_export("nosuchprofile", builtin_dir(), &diags));
    assert_non_null(find_diag(&diags, LTR_DIAG_ERROR, "no profile of that name"));
    ltr_diag_list_free(&diags);
    assert_null(ltr_profiles_export("/no/such/file.wprp!heap", builtin_dir(), &diags));
    assert_true(diags.errors > 0);
    ltr_diag_list_free(&diags);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_builtin_round_trips),
        cmocka_unit_test(test_wpr_corpus_round_trips),
        cmocka_unit_test(test_unknown_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
