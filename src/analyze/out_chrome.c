/*
 * analyze/out_chrome.c — `ltr export --format chrome`: the trace as Chrome's
 * Trace Event Format (one JSON object, "traceEvents"), which Perfetto UI
 * and chrome://tracing open. Per process: its name and its threads' names
 * (metadata events, "ph":"M"), its outstanding heap bytes over time (a
 * counter track, "ph":"C", from the model's series: the highest of each
 * bucket, at most AN_SERIES_MAX points), its memory counters when the trace
 * has them (private bytes, RSS, swap), its heap snapshots' live bytes (a
 * counter track of its own: a trace of snapshots alone had no track at all,
 * and ltr report's chart was empty); markers and heap snapshots as
 * instant events ("ph":"i"). Times are microseconds from the trace's start;
 * all of it is the window's (--from, --to).
 */
#include "analyze/internal.h"
#include "prim/prim.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int an_marker_feed(ltr_analysis *a, const ltr_event *ev)
{
    const ltr_layout *l = ev->layout;
    if (!a->model.series || !l || !l->provider || strcmp(l->provider->name, "ltr") || strcmp(l->name, "Marker"))
        return 0;
    const char *s;
    size_t len;
    if (ev->ts < a->model.from || ev->ts > a->model.to || ltr_event_get_str(ev, "text", &s, &len) != 0)
        return 1;
    if (ltr_reserve((void **)&a->markers, &a->capmarkers, a->nmarkers, sizeof *a->markers, 16) != 0)
        return 1; /* a marker less in the picture: nothing else depends on it */
    char *text = strndup(s, len);
    if (text)
        a->markers[a->nmarkers++] = (an_marker){ev->ts, ev->pid, text};
    return 1;
}

typedef struct chrome {
    FILE *out;
    ltr_analysis *a;
    int n; /* events written: a comma before every one but the first */
} chrome;

static double us(const ltr_analysis *a, uint64_t ts)
{
    return ts > a->origin ? (double)(ts - a->origin) / 1e3 : 0;
}

/* Starts one event: {"ph":PH,"name":NAME,"pid":PID,"tid":TID,"ts":TS  (the caller ends it) */
static void begin(chrome *c, const char *ph, const char *name, uint32_t pid, uint32_t tid, double ts)
{
    fprintf(c->out, "%s\n{\"ph\":\"%s\",\"name\":", c->n++ ? "," : "", ph);
    ltr_print_json_string(c->out, name, strlen(name));
    fprintf(c->out, ",\"pid\":%u,\"tid\":%u,\"ts\":%.3f", pid, tid, ts);
}

static void meta_name(chrome *c, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    begin(c, "M", what, pid, tid, 0);
    fprintf(c->out, ",\"args\":{\"name\":");
    ltr_print_json_string(c->out, name, strlen(name));
    fprintf(c->out, "}}");
}

static void names(chrome *c, uint32_t pid)
{
    const char *exe = an_process_exe(c->a, pid), *slash = strrchr(exe, '/');
    char label[512];
    snprintf(label, sizeof label, "%s", *exe ? (slash ? slash + 1 : exe) : "process");
    meta_name(c, "process_name", pid, 0, label);
    for (size_t i = 0, n = ltr_trace_thread_count(c->a->trace); i < n; i++) {
        const ltr_thread *t = ltr_trace_thread_at(c->a->trace, i);
        if (t->pid == pid && t->name && *t->name)
            meta_name(c, "thread_name", pid, t->tid, t->name);
    }
}

/* Whether ts is inside --from and --to. The heap snapshots are all the
 * analysis's, numbered as it lists them, so the window is applied here,
 * as the model applies it to markers and memory counters: 'ltr export
 * --format chrome --from 3' of a trace of seven snapshots a second had the
 * three before 3 s, points and instants, before the track's start. */
static bool in_window(const ltr_analysis *a, uint64_t ts)
{
    return (!a->from_set || ts >= a->win_start) && (!a->to_set || ts <= a->win_end);
}

static void counter_point(chrome *c, uint32_t pid, uint64_t ts, uint64_t bytes)
{
    begin(c, "C", "heap outstanding bytes", pid, 0, us(c->a, ts));
    fprintf(c->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", bytes);
}

/* A pid's images (an exec) share its one track, each after the one before:
 * a replaced image's points stop at its last bucket, without the point at
 * the window's end (its never-freed bytes are the report's, and they put
 * the track back in time: the next image's points came after it), and no
 * point goes before one already on the track (an image's buckets grow
 * wider with its life: its first can start before the exec). *last: the
 * track's last time so far.
 * The track is the window's, as the markers and memory counters are: the
 * model's series goes on through the frees after --to (they tell what was
 * outstanding at its end) and begins before --from, so a window in the
 * middle had the buckets after its end and then its end's point back in
 * time (perl's three phases, --from phase2 --to phase3: 11.9 MiB at 2.5 s
 * after 3.0 MiB at 4.1 s; the report drew a rise at the trace's end that
 * never happened). With --from the track starts at it with what was
 * outstanding then (AOFI + AOFO), and a bucket that began before it and
 * ends in it is drawn from it. */
static void heap_counter(chrome *c, const an_proc *p, uint64_t *last)
{
    const ltr_analysis *a = c->a;
    bool replaced = p->image && an_proc_replaced_by_exec(a, p);
    uint64_t lo = a->from_set ? a->win_start : 0;
    if (a->from_set && !replaced) {
        *last = lo > *last ? lo : *last;
        counter_point(c, p->pid, *last, p->type[AN_AOFI].bytes + p->type[AN_AOFO].bytes);
    }
    for (size_t i = 0; i < p->nseries && p->series[i].ts <= a->win_end; i++) {
        if (p->series[i].ts + p->series_width <= lo)
            continue;
        uint64_t ts = p->series[i].ts > lo ? p->series[i].ts : lo;
        *last = ts > *last ? ts : *last;
        counter_point(c, p->pid, *last, p->series[i].bytes);
    }
    if (replaced)
        return;
    /* the value at the window's end, so the track ends where the report does */
    counter_point(c, p->pid, a->win_end, p->type[AN_AIFO].bytes + p->type[AN_AOFO].bytes);
    *last = a->win_end;
}

static void memory_counters(chrome *c)
{
    for (size_t i = 0; i < c->a->nmem; i++) {
        const an_mem_sample *m = &c->a->mem[i];
        begin(c, "C", "memory counters", m->pid, 0, us(c->a, m->ts));
        fprintf(c->out,
                ",\"args\":{\"private_bytes\":%" PRIu64 ",\"rss\":%" PRIu64 ",\"rss_file\":%" PRIu64
                ",\"rss_shmem\":%" PRIu64 ",\"swap\":%" PRIu64 "}}",
                m->private_bytes, m->rss, m->rss_file, m->rss_shmem, m->swap);
    }
}

static void instants(chrome *c)
{
    for (size_t i = 0; i < c->a->nmarkers; i++) {
        begin(c, "i", c->a->markers[i].text, c->a->markers[i].pid, 0, us(c->a, c->a->markers[i].ts));
        fprintf(c->out, ",\"s\":\"g\",\"cat\":\"marker\"}");
    }
    for (size_t i = 0; i < c->a->nsnaps; i++) {
        const an_snapshot *s = &c->a->snaps[i];
        if (!in_window(c->a, s->ts))
            continue;
        char name[64];
        snprintf(name, sizeof name, "heap snapshot %zu", i + 1);
        begin(c, "i", name, s->pid, 0, us(c->a, s->ts));
        fprintf(c->out, ",\"s\":\"p\",\"cat\":\"snapshot\",\"args\":{\"blocks\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}",
                s->blocks, s->bytes);
    }
}

static bool has_heap_events(an_proc *const *procs, size_t np, uint32_t pid)
{
    for (size_t i = 0; i < np; i++)
        if (procs[i]->pid == pid)
            return true;
    return false;
}

/* The live bytes of each complete snapshot (a cut one holds part of them),
 * and the names of the processes known by their snapshots alone. */
static void snapshot_counters(chrome *c, an_proc *const *procs, size_t np)
{
    for (size_t i = 0; i < c->a->nsnaps; i++) {
        const an_snapshot *s = &c->a->snaps[i];
        if (!in_window(c->a, s->ts))
            continue;
        bool named = has_heap_events(procs, np, s->pid);
        for (size_t j = 0; j < i && !named; j++)
            named = c->a->snaps[j].pid == s->pid && in_window(c->a, c->a->snaps[j].ts);
        if (!named)
            names(c, s->pid);
        if (s->complete <= 0)
            continue;
        begin(c, "C", "heap snapshot live bytes", s->pid, 0, us(c->a, s->ts));
        fprintf(c->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", s->bytes);
    }
}

int an_write_chrome(ltr_analysis *a, FILE *out)
{
    chrome c = {out, a, 0};
    fprintf(out, "{\"traceEvents\":[");
    size_t np;
    an_proc *const *procs = an_procs(a, &np);
    uint64_t last = 0;
    for (size_t i = 0; i < np; i++) {
        if (!i || procs[i]->pid != procs[i - 1]->pid) { /* a pid's images: one track, named once */
            names(&c, procs[i]->pid);
            last = 0;
        }
        heap_counter(&c, procs[i], &last);
    }
    memory_counters(&c);
    snapshot_counters(&c, procs, np);
    instants(&c);
    fprintf(out, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"format\":\"ltr-chrome\",\"version\":1,\"trace\":");
    const char *path = ltr_trace_path(a->trace);
    ltr_print_json_string(out, path, strlen(path));
    fprintf(out, "}}\n");
    return 0; /* a series cut short by memory is said by the analysis's own warning */
}
