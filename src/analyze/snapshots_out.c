/*
 * analyze/snapshots_out.c — the heap snapshot parts of the text and JSON
 * reports (snapshots.c collects and classifies): each snapshot's totals, the
 * difference between two, the trend. docs/analysis.md documents the keys.
 */
#include "analyze/internal.h"
#include "base/units.h"

#include <stdlib.h>

static an_stack stack_of(uint32_t pid, uint32_t id, uint64_t ts)
{
    return (an_stack){.pid = pid, .key = pid, .stack_id = id, .first_ts = ts};
}

static size_t shown(size_t n, unsigned top)
{
    return top && n > top ? top : n;
}

/* "leak: +17.6 MiB/hour, " and the like: how fast a stack of the trend
 * grows, as its rank takes it. A plateau's rate is the later half's, what
 * it does now: the whole series' slope of a step from 0 B to 512 KiB that
 * stayed read "plateau: +225 MiB/hour"; a leak's after a fill the same, with
 * the whole series' beside it (the fill's, which it is not ranked by). */
/* The snapshots `later` is the slope of: the later half, or those after a
 * fill into it ended. */
static size_t later_snapshots(const an_trend *t)
{
    size_t mid = t->snapshots / 2;
    return t->after_fill && t->since != mid ? t->snapshots - t->since - 1 : t->snapshots - mid;
}

const char *an_trend_rate_text(const an_trend *t, char *buf, size_t size)
{
    char late[32], all[32];
    ltr_size_format_signed((int64_t)t->later, late, sizeof late);
    ltr_size_format_signed((int64_t)t->growth, all, sizeof all);
    if (t->verdict == AN_PLATEAU) /* one still rising is not said to have levelled off, nor ranked with leaks */
        snprintf(buf, size, "plateau: %s, %s/hour over the later half%s; ",
                 t->rising ? "slowed, still growing" : "levelled off", late,
                 t->rising ? ", unevenly (no leak yet: a cache still filling, or a leak; later snapshots tell)" : "");
    else if (t->after_fill && t->since == t->snapshots / 2)
        snprintf(buf, size, "leak: %s/hour over the later half, steadily (%s/hour over all%s); ", late, all,
                 t->growth > t->later ? ": it filled faster first" : "");
    else if (t->after_fill) /* a fill that ran into the later half: from the snapshot after it ended */
        snprintf(buf, size, "leak: %s/hour over the last %zu snapshots, steadily (%s/hour over all%s); ", late,
                 later_snapshots(t), all, t->growth > t->later ? ": it filled faster first" : "");
    else
        snprintf(buf, size, "%s: %s/hour, ", an_verdict_names[t->verdict], all);
    return buf;
}

int an_write_snapshots_text(ltr_analysis *a, FILE *out, unsigned top)
{
    if (!a->nsnaps) {
        if (a->trend_wanted == 1) /* asked for, it is answered: silence read as "no leak" */
            fprintf(out, "\ntrend across periodic snapshots: none (the trace holds no heap snapshot: record "
                         "with the heapsnapshot profile and 'ltr enableperiodicsnapshot heap SECS PID', "
                         "docs/heap-tracing.md \"Heap snapshots\")\n");
        return 0;
    }
    fprintf(out, "\nheap snapshots: %zu\n", a->nsnaps);
    for (size_t i = 0; i < a->nsnaps; i++) {
        const an_snapshot *s = &a->snaps[i];
        char b[32], old[32];
        fprintf(out, "  snapshot:%zu process %u at %.3f s: %s in %llu live blocks, %zu stacks, "
                     "%s in blocks an hour old or more, oldest %llu s%s\n",
                i + 1, s->pid, an_seconds(a, s->ts), ltr_size_format(s->bytes, b, sizeof b),
                (unsigned long long)s->blocks, s->nstacks, ltr_size_format(s->older_1h, old, sizeof old),
                (unsigned long long)s->oldest_s,
                s->complete > 0 ? "" : s->complete ? " (stack records lost)" : " (cut)");
    }
    if (a->snap_from) {
        const an_snapshot *f = an_snapshot_named(a, a->snap_from), *t = an_snapshot_named(a, a->snap_to);
        size_t n;
        an_snap_delta *d = an_snapshot_diff(f, t, &n);
        fprintf(out, "\ndifference by stack, snapshot:%llu (%.3f s) to snapshot:%llu (%.3f s):\n",
                (unsigned long long)a->snap_from, an_seconds(a, f->ts),
                (unsigned long long)a->snap_to, an_seconds(a, t->ts));
        for (size_t i = 0; d && i < shown(n, top); i++) {
            char b[32];
            fprintf(out, "    #%zu %s, %+lld blocks\n", i + 1, ltr_size_format_signed(d[i].delta, b, sizeof b),
                    (long long)d[i].blocks);
            an_stack st = stack_of(t->pid, d[i].stack, t->ts);
            an_text_frames(a, out, &st);
        }
        free(d);
    }
    if (a->trend_wanted) {
        fprintf(out, "\ntrend across periodic snapshots (leaks first):%s\n",
                a->ntrend ? "" : " none (a process needs 4 complete snapshots)");
        for (size_t i = 0; i < shown(a->ntrend, top); i++) {
            const an_trend *t = &a->trend[i];
            char g[200], f1[32], l1[32];
            fprintf(out, "    #%zu %s%s -> %s over %zu snapshots (process %u)\n", i + 1,
                    an_trend_rate_text(t, g, sizeof g), ltr_size_format(t->first, f1, sizeof f1),
                    ltr_size_format(t->last, l1, sizeof l1), t->snapshots, t->pid);
            an_stack st = stack_of(t->pid, t->stack, t->ts);
            an_text_frames(a, out, &st);
        }
    }
    return 0;
}

void an_write_snapshots_json(ltr_analysis *a, FILE *out, unsigned top)
{
    fputs(",\"snapshots\":[", out);
    for (size_t i = 0; i < a->nsnaps; i++) {
        const an_snapshot *s = &a->snaps[i];
        fprintf(out, "%s{\"name\":\"snapshot:%zu\",\"pid\":%u,\"seconds\":%.6f,\"bytes\":%llu,"
                     "\"blocks\":%llu,\"stacks\":%zu,\"complete\":%s,\"pause_ns\":%llu,"
                     "\"bytes_older_1h\":%llu,\"oldest_s\":%llu}",
                i ? "," : "", i + 1, s->pid, an_seconds(a, s->ts), (unsigned long long)s->bytes,
                (unsigned long long)s->blocks, s->nstacks, s->complete > 0 ? "true" : "false",
                (unsigned long long)s->pause_ns, (unsigned long long)s->older_1h,
                (unsigned long long)s->oldest_s);
    }
    fputc(']', out);
    if (a->snap_from) {
        const an_snapshot *f = an_snapshot_named(a, a->snap_from), *t = an_snapshot_named(a, a->snap_to);
        size_t n;
        an_snap_delta *d = an_snapshot_diff(f, t, &n);
        fputs(",\"snapshot_diff\":[", out);
        for (size_t i = 0; d && i < shown(n, top); i++) {
            fprintf(out, "%s{\"pid\":%u,\"bytes\":%lld,\"blocks\":%lld,", i ? "," : "", t->pid,
                    (long long)d[i].delta, (long long)d[i].blocks);
            an_stack st = stack_of(t->pid, d[i].stack, t->ts);
            an_json_frames(a, out, &st);
            fputc('}', out);
        }
        fputc(']', out);
        free(d);
    }
    if (a->trend_wanted) {
        fputs(",\"trend\":[", out);
        for (size_t i = 0; i < shown(a->ntrend, top); i++) {
            const an_trend *t = &a->trend[i];
            fprintf(out, "%s{\"pid\":%u,\"verdict\":\"%s\",\"growth_bytes_per_hour\":%.0f,"
                         "\"later_growth_bytes_per_hour\":%.0f,\"later_snapshots\":%zu,\"still_growing\":%s,"
                         "\"after_fill\":%s,\"bytes_first\":%llu,\"bytes_last\":%llu,\"snapshots\":%zu,",
                    i ? "," : "", t->pid, an_verdict_names[t->verdict], t->growth, t->later, later_snapshots(t),
                    t->rising ? "true" : "false", t->after_fill ? "true" : "false",
                    (unsigned long long)t->first, (unsigned long long)t->last, t->snapshots);
            an_stack st = stack_of(t->pid, t->stack, t->ts);
            an_json_frames(a, out, &st);
            fputc('}', out);
        }
        fputc(']', out);
    }
}
