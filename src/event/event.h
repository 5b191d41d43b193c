/*
 * event/event.h — internal entry points of the event layer for other parts of
 * ltr (the recorder writes its marker events into its own session with them).
 */
#ifndef LTR_EVENT_EVENT_H
#define LTR_EVENT_EVENT_H

#include <ltr/provider.h>

/* Writes an event into session slot s, collector c, whatever the enablement.
 * Returns 0, -EINVAL (values do not match the fields), -ENOSPC (dropped and
 * counted as lost) or -ESRCH (session not reachable). */
int ltr_event_write_to(unsigned s, unsigned c, ltr_event_desc *d, const ltr_value *values, size_t n);

/* The provider the recorder writes as: "ltr", with the Marker event (id 1,
 * one string field "text"). */
extern ltr_provider ltr_builtin_provider;
extern ltr_event_desc ltr_marker_event;

#endif
