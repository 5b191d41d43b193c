/*
 * recorder/providers.h — `ltr providers` (WPR's -providers), client side:
 * the providers this user's registry knows (named by a process that wrote
 * or checked events, or by a session that enables them) with the running
 * sessions that enable each, at what level and keywords; and, asked of a
 * session's recorder, the events and fields a provider's programs
 * registered in it (recorder/layouts.c).
 */
#ifndef LTR_RECORDER_PROVIDERS_H
#define LTR_RECORDER_PROVIDERS_H

#include <ltr/common.h>

#include <stdint.h>

#include "event/registry.h"

typedef struct ltr_provider_enable {
    char session[LTR_SESSION_NAME_MAX];
    uint8_t level;     /* 0: every level */
    uint64_t any, all; /* keywords: an event must share a bit with any (0: any), and hold all */
} ltr_provider_enable;

typedef struct ltr_provider_info {
    ltr_guid guid;
    char name[104];
    unsigned nenabled;
    ltr_provider_enable enabled[LTR_MAX_SESSIONS];
} ltr_provider_info;

/* Up to max providers of the registry, in slot order (the order they were
 * first named). Returns how many, or -errno with err. */
int ltr_providers_list(ltr_provider_info *out, int max, ltr_error *err);
/* The provider named name (case-insensitive) or whose GUID is that text. */
const ltr_provider_info *ltr_providers_find(const ltr_provider_info *v, int n, const char *name_or_guid);
/* The layouts of provider g that session's programs registered, one line
 * each (recorder/layouts.c's format), in *text (malloc'd). 0, or -errno. */
int ltr_client_layouts(const char *session, const ltr_guid *g, char **text, ltr_error *err);

#endif
