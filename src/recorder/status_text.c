/*
 * recorder/status_text.c — a running session's status as `ltr status` shows
 * it: mode, age, trace, processes attached, and per collector its buffers,
 * events recorded, lost and overwritten and, in memory mode, how far back it
 * reaches. `ltr watch --support-bundle` keeps the same text beside a saved
 * trace.
 */
#include "base/units.h"
#include "recorder/client.h"

#include <stdio.h>
#include <string.h>

void ltr_session_status_write(FILE *out, const ltr_session_status *st)
{
    fprintf(out, "session '%s': %s mode, running %.1f s, recorder pid %llu, %llu %s attached",
            st->name, st->mode, (double)st->uptime_ns / 1e9, (unsigned long long)st->pid,
            (unsigned long long)st->processes, st->processes == 1 ? "process" : "processes");
    if (st->untraced) /* joined (the agent joins every heap session) but denied */
        fprintf(out, " (%llu more joined, not traced: %s)", (unsigned long long)st->untraced,
                st->untraced_why);
    fprintf(out, "\n");
    if (st->profiles[0])
        fprintf(out, "  profiles: %s\n", st->profiles);
    if (st->names[0]) {
        fprintf(out, "  heap tracing by name:");
        for (const char *p = st->names, *slash; *p; p = slash ? slash + 1 : p + strlen(p)) {
            slash = strchr(p, '/');
            fprintf(out, " %.*s", (int)(slash ? (size_t)(slash - p) : strlen(p)), p);
        }
        fprintf(out, "\n");
    }
    if (st->file_mode && st->has_output) {
        /* in KiB while small: a heap trace of 68000 events is 24 KiB, and
         * "0.0 MB" told a user watching it grow that nothing was written */
        char size[32], max[32];
        fprintf(out, "  trace: %s, %s", st->output, ltr_size_format(st->file_size, size, sizeof size));
        if (st->max_file_size)
            fprintf(out, " of at most %s", ltr_size_format(st->max_file_size, max, sizeof max));
        fprintf(out, "\n");
    }
    if (st->nattached) {
        fprintf(out, "  processes attached:");
        for (unsigned i = 0; i < st->nattached; i++)
            fprintf(out, "%s %u", i ? "," : "", st->attached[i]);
        fprintf(out, "%s\n", st->processes > st->nattached ? ", ..." : "");
    }
    int w = 12; /* the name column fits the longest ("ltr System Collector") */
    for (unsigned c = 0; c < st->ncollectors; c++)
        if ((int)strlen(st->collectors[c].name) > w)
            w = (int)strlen(st->collectors[c].name);
    fprintf(out, "  %-*s %8s %10s %8s %16s %12s %12s%s\n", w, "collector", "buffers", "size", "free",
            "events recorded", "events lost", "overwritten", st->file_mode ? "" : "  reaches back");
    for (unsigned c = 0; c < st->ncollectors; c++) {
        const ltr_collector_status *cs = &st->collectors[c];
        fprintf(out, "  %-*s %8llu %7llu KB %8llu %16llu %12llu %12llu", w, cs->name,
               (unsigned long long)cs->buffers, (unsigned long long)cs->buffer_size / 1024,
               (unsigned long long)cs->buffers_free, (unsigned long long)cs->events_recorded,
               (unsigned long long)cs->events_lost, (unsigned long long)cs->events_overwritten);
        /* a flight recorder holds the newest events only: how old its oldest is */
        if (!st->file_mode)
            fprintf(out, "  %9.1f s%s", (double)cs->reach_ns / 1e9, cs->events_overwritten ? "" : " (all)");
        fprintf(out, "\n");
    }
    char kept[32], gone[32];
    if (!st->file_mode && st->metadata_kept) /* in KiB while small: "0.0 MB" of 40 KiB said nothing (a review) */
        fprintf(out, "  metadata kept for saves: %s (stacks, modules, threads; %s let go: processes that ended, "
                "none of whose events a buffer still holds)\n", ltr_size_format(st->metadata_kept, kept, sizeof kept),
                ltr_size_format(st->metadata_dropped, gone, sizeof gone));
    uint64_t damage = 0;
    for (unsigned c = 0; c < st->ncollectors; c++)
        damage += st->collectors[c].shm_damage;
    if (damage)
        fprintf(out, "  shared memory found written over (by a traced program?): %llu place(s) skipped\n",
                (unsigned long long)damage);
    if (st->metadata_lost)
        fprintf(out, "  metadata records lost: %llu (the recorder did not read its metadata region fast enough, "
                "or a flight recorder's kept metadata reached its bound: the stacks, modules or layouts they told "
                "are missing)\n", (unsigned long long)st->metadata_lost);
}

