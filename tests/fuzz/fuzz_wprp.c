/*
 * tests/fuzz/fuzz_wprp.c — fuzz target of the .wprp profile loader: the input
 * is one profile file, read beside ltr's built-in profiles (its Base= may
 * name theirs). ltr_profiles_list parses it, resolves inheritance for every
 * profile in it and builds a throwaway plan of each variant (`ltr profiles
 * FILE`); then every variant found is resolved again as `ltr start
 * FILE!Name.level` would, in memory and in file mode, and every diagnostic
 * is formatted.
 */
#include "fuzz_input.h"

#include "profiles/profiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LTR_FUZZ_PROFILE_DIR
#error "LTR_FUZZ_PROFILE_DIR: the built-in profile directory (tests/fuzz/CMakeLists.txt)"
#endif

/* Variants resolved per input, enough for any seed; keeps each input quick. */
#define MAX_RESOLVES 16

static void format_diags(const ltr_diag_list *l)
{
    char line[1024];
    for (size_t i = 0; i < l->n; i++)
        ltr_diag_format(&l->v[i], line, sizeof line);
}

static void resolve(const char *path, const char *name, const char *level, bool filemode)
{
    char spec[4096];
    snprintf(spec, sizeof spec, "%s!%s.%s", path, name, level);
    const char *specs[] = {spec};
    ltr_profile_request req = {specs, 1, filemode, LTR_FUZZ_PROFILE_DIR};
    ltr_plan *plan = NULL;
    ltr_profiles_resolve(&req, &plan);
    if (plan)
        format_diags(&plan->diags);
    ltr_plan_free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    ltr_profile_list *l = NULL;
    ltr_profiles_list(path, LTR_FUZZ_PROFILE_DIR, &l);
    if (!l)
        return 0;
    format_diags(&l->diags);
    int budget = MAX_RESOLVES;
    for (size_t i = 0; i < l->n && budget > 0; i++) {
        const ltr_profile_info *p = &l->v[i];
        if (strchr(p->name, '!')) /* a spec cannot name it */
            continue;
        for (int mode = 0; mode < 2; mode++) {
            if (p->levels & LTR_PROFILE_LIGHT)
                resolve(path, p->name, "light", mode), budget--;
            if (p->levels & LTR_PROFILE_VERBOSE)
                resolve(path, p->name, "verbose", mode), budget--;
        }
    }
    ltr_profile_list_free(l);
    return 0;
}
