/*
 * format/merge.h — `ltr merge` (WPR's -merge): one trace from several
 * recorded on this machine in the same boot, so on one CLOCK_MONOTONIC
 * (docs/trace-format.md, "Merged traces"). The merge works on chunks and
 * records, never on decoded events: layout ids are renumbered (each session
 * numbers its own), collectors renumbered per source, metadata that two
 * traces both hold (a process, thread or module both sessions described)
 * written once, EVENTS chunks interleaved in time order.
 */
#ifndef LTR_FORMAT_MERGE_H
#define LTR_FORMAT_MERGE_H

#include <ltr/common.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ltr_merge_report {
    uint64_t chunks, blocks, events;   /* written */
    /* of events, those a reader reads back from the merge: the others are
     * records copied from a damaged source that refer to what its damaged
     * stretches held (a free's allocation), which no reader can read there
     * either; read back only when damage was skipped (else all of them) */
    uint64_t readable;
    uint64_t duplicates;               /* metadata records written once for several traces */
    uint64_t damaged;                  /* damaged stretches of the sources, skipped */
    int complete;                      /* every source was complete: the merge has an END */
} ltr_merge_report;

/* Checks that the traces can be merged: each opens, and all come from one
 * boot of one machine (header host.boot_id; host.name when a trace predates
 * boot ids). 0, or -errno with err saying which trace differs and how. */
int ltr_merge_check(const char *const *paths, size_t n, ltr_error *err);

/* Writes the merge of paths to out, a new file (what is at out is replaced
 * only with replace, a symlink never followed). 0, or -errno with err (then
 * nothing is left at out). */
int ltr_merge(const char *const *paths, size_t n, const char *out, bool replace, ltr_merge_report *rep,
              ltr_error *err);

#endif
