/*
 * profiles/inherit.h — Base= inheritance: flattening an element with the
 * chain of elements it derives from.
 */
#ifndef LTR_PROFILES_INHERIT_H
#define LTR_PROFILES_INHERIT_H

#include "profiles/catalog.h"

/* The longest Base= chain followed; a deeper one is an error of its own. */
#define WPRP_MAX_BASE_DEPTH 1000

/* The element with everything it inherits applied, cached in n->resolved; its
 * lists hold final items (their op is Set). NULL when it cannot be resolved
 * (cycle, missing base, chain deeper than WPRP_MAX_BASE_DEPTH; reported once,
 * on the element that has the fault). */
const wprp_node *wprp_resolve(wprp_catalog *c, wprp_node *n);

/* Parses a keyword or mask value: "0x1F", "31". Returns 0, or -1. */
int wprp_parse_u64(const char *text, uint64_t *out);

#endif
