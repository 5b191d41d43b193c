/*
 * format/info.h — what a trace holds, as `ltr info` shows it: the reader's
 * summary of one scan plus what is derived from the header and the END
 * chunk (start time, duration, shared-memory damage), and the writers of it
 * as text for people and as one JSON object for scripts, beside the event
 * printers of ltr/trace.h that `ltr dump` uses.
 */
#ifndef LTR_FORMAT_INFO_H
#define LTR_FORMAT_INFO_H

#include <ltr/trace.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ltr_trace_info {
    ltr_trace_summary summary;
    char start[64];        /* wall-clock start, "2026-11-21T04:43:08.123456789Z"; "" if not known */
    bool has_duration;     /* start clock known, and an END clock or an event */
    uint64_t duration_ns;  /* to END's clock, else to the last event */
    uint64_t shm_damage;   /* places of the session's shared memory skipped while recording */
    uint64_t metadata_lost; /* metadata records that did not fit in the session's region */
    uint64_t forged;       /* of summary.damage, records another traced program wrote about a process, left
                            * out at no loss: not damage of the trace (blocks.h, ltr_trace_forged_count) */
} ltr_trace_info;

/* The events the trace's counters say could not be written to the file
 * (events_unwritten, summed over the collectors; all of them in events_lost
 * too), and into why (at least 160 bytes) their cause as a phrase: a write
 * that failed, or also the session's --max-file-size when it had one
 * (session.max_file_size of the header). Every command that states the
 * losses says it so: these were once said to have found no free buffer. */
uint64_t ltr_trace_unwritten(const ltr_trace *t, char *why, size_t n);

/* Reads the whole trace once (ltr_trace_scan) and fills info. Damage is not
 * an error (info->summary.damage counts it). Returns 0 or -errno. */
int ltr_trace_info_scan(ltr_trace *t, ltr_trace_info *info, ltr_error *err);

/* Header, processes, providers, counters and damage, as text or as one JSON
 * object and a newline. t must have been scanned into info. */
void ltr_trace_info_write_text(FILE *out, const ltr_trace *t, const ltr_trace_info *info);
void ltr_trace_info_write_json(FILE *out, const ltr_trace *t, const ltr_trace_info *info);

#endif
