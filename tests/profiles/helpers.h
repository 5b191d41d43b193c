/*
 * tests/profiles/helpers.h — what the profile tests share: writing small
 * .wprp files at run time, resolving specs against the source tree's built-in
 * profiles, and finding a diagnostic by severity and text.
 */
#ifndef LTR_TESTS_PROFILES_HELPERS_H
#define LTR_TESTS_PROFILES_HELPERS_H

#include <stdbool.h>
#include <stddef.h>

#include "profiles/profiles.h"

/* A fresh temporary directory for this test process (removed at exit). */
const char *tmp_dir(void);
/* Writes text to tmp_dir()/name and returns the path (static storage per call
 * slot: valid until 8 more calls). */
const char *write_file(const char *name, const char *text);
/* A .wprp document: the WindowsPerformanceRecorder/Profiles wrapper around body. */
const char *write_wprp(const char *name, const char *body);
/* The source tree's built-in profile directory. */
const char *builtin_dir(void);
/* The real .wprp corpus in the source tree (tests/profiles/wprp). */
const char *wprp_dir(void);

/* Resolves specs (NULL-terminated) with the source tree's built-ins. */
int resolve(ltr_plan **out, bool filemode, ...) __attribute__((sentinel));

/* The first diagnostic of that severity whose message contains text, or NULL. */
const ltr_diag *find_diag(const ltr_diag_list *l, ltr_diag_severity sev, const char *text);
/* Prints every diagnostic (to see why a test failed). */
void dump_diags(const ltr_diag_list *l);

/* The plan's provider with that GUID text, or NULL. */
const ltr_plan_provider *find_provider(const ltr_plan *p, const char *guid);
const ltr_plan_collector *find_collector(const ltr_plan *p, const char *name);
const ltr_plan_syskw *find_syskw(const ltr_plan *p, const char *name);

#endif
