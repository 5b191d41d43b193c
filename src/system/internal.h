/*
 * system/internal.h — what the files of src/system share: the thread's
 * state and its write helper. Not for other parts.
 */
#ifndef LTR_SYSTEM_INTERNAL_H
#define LTR_SYSTEM_INTERNAL_H

#include "system/system.h"

#include <ltr/provider.h>

#include <stddef.h>

/* Writes an event (if the session wants it) and counts it. */
void sys_write(ltr_system *s, ltr_event_desc *d, const ltr_value *v, size_t n);
/* Whether the session asked for this part (LTR_SYSKW_*). */
bool sys_wants(const ltr_system *s, uint64_t keyword);
/* The current targets' pids, at most cap; returns how many. */
size_t sys_targets(ltr_system *s, uint32_t *pids, size_t cap);

#endif
