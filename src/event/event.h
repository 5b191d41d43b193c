/*
 * event/event.h — internal entry points of the event layer for other parts of
 * ltr: the heap agent's own encoding, and the recorder's marker layout.
 */
#ifndef LTR_EVENT_EVENT_H
#define LTR_EVENT_EVENT_H

#include <ltr/provider.h>

/* For writers that encode their own records with ltr_producer_reserve (the
 * heap agent): the layout id of d in session slot s of attachment a, its
 * LAYOUT record appended once per session; 0 when it could not be. */
struct ltr_attach;
struct ltr_registry;
uint32_t ltr_event_layout_id(ltr_event_desc *d, struct ltr_attach *a, unsigned s);
/* Appends d's PROVIDER and LAYOUT records, for layout id `id`, to b; returns
 * where the LAYOUT record starts. (The recorder keeps its markers' own.)
 * Both end with the pid of the process that describes them (a field after
 * the record's own, docs/trace-format.md): a memory-mode recorder lets them
 * go with that process. */
struct ltr_bytes;
size_t ltr_event_layout_records(ltr_event_desc *d, uint32_t id, uint32_t pid, struct ltr_bytes *b);
/* Counts an event of a process that could not attach to session s as lost. */
void ltr_event_count_unattached(struct ltr_registry *reg, unsigned s, unsigned c);

/* The provider the recorder writes as: "ltr", with the Marker event (id 1,
 * one string field "text"). */
extern ltr_provider ltr_builtin_provider;
extern ltr_event_desc ltr_marker_event;

#endif
