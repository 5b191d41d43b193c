/*
 * lib/provider-abi.c — compile-time checks of the ABI of libltr-provider.so:
 * the facts include/ltr/provider.h states with their own constants
 * must match the internal ones they stand for, or the build stops.
 */
#include <ltr/provider.h>

#include "event/registry.h"

#include <assert.h>

/* ltr_event_desc.layout_cache holds one slot per session slot of the registry. */
static_assert(LTR_MAX_SESSIONS_PER_USER == LTR_MAX_SESSIONS,
              "provider.h's LTR_MAX_SESSIONS_PER_USER must equal the registry's LTR_MAX_SESSIONS");
static_assert(sizeof(((ltr_event_desc *)0)->layout_cache) / sizeof(uint64_t) == LTR_MAX_SESSIONS,
              "ltr_event_desc.layout_cache needs one entry per session slot");
