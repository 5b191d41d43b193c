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
 * check_started: report a profile that starts nothing on Linux (a warning,
 * an error with Strict="true"); listing leaves it to starting. Diagnostics go
 * to the catalog's list. Returns 0, or -1 on an error. */
int plan_add_profile(wprp_catalog *cat, ltr_plan *plan, wprp_node *p, const char *label,
                     bool check_started);

/* Value helpers shared with the listing code. */
int plan_parse_bool(const char *text, bool *out);

#endif
