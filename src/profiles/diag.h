/*
 * profiles/diag.h — collecting errors and warnings about profiles, each with
 * the file, line and id it concerns (the list type is in profiles.h).
 */
#ifndef LTR_PROFILES_DIAG_H
#define LTR_PROFILES_DIAG_H

#include "profiles/profiles.h"

void ltr_diag_add(ltr_diag_list *l, ltr_diag_severity sev, const char *file, int line,
                  const char *id, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Appends copies of every diagnostic of src to dst. */
void ltr_diag_append(ltr_diag_list *dst, const ltr_diag_list *src);

/* Small string helpers the profile code shares. Allocation failure aborts:
 * profiles are small and a half-built plan is worse than a clear crash. */
char *prof_strdup(const char *s);
char *prof_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *prof_grow(void *v, size_t *cap, size_t n, size_t elem);

#endif
