/*
 * profiles/plan.h — building a session plan from resolved profile elements
 * (internal to src/profiles; the plan type is in profiles.h).
 */
#ifndef LTR_PROFILES_PLAN_H
#define LTR_PROFILES_PLAN_H

#include "profiles/catalog.h"

/* Adds to plan what profile p starts: its collectors (merged by kind and
 * name with those already there), providers, system keywords, heap tracing,
 * and the skipped Windows-only parts. label is what plan->profiles records.
 * check: whether to report a profile that starts nothing on Linux: listing
 * leaves it to starting; starting makes it a warning, an error with
 * Strict="true"; describing (--details) a warning that says what starting
 * would do. Diagnostics go to the catalog's list. Returns 0, or -1 on an error. */
typedef enum plan_check { PLAN_CHECK_NONE, PLAN_CHECK_START, PLAN_CHECK_DESCRIBE } plan_check;
int plan_add_profile(wprp_catalog *cat, ltr_plan *plan, wprp_node *p, const char *label,
                     plan_check check);

/* The variants of a profile name among the built-ins (file NULL) or one
 * file's: v[(level - 1) * 2 + (mode - 1)], NULL where there is none (a
 * later definition wins). Returns their LTR_PROFILE_VARIANT set. */
unsigned prof_find_variants(wprp_catalog *c, const char *file, const char *name, wprp_node *v[4]);

/* Value helpers shared with the listing code. */
int plan_parse_bool(const char *text, bool *out);

#endif
