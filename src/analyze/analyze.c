/*
 * analyze/analyze.c — one analysis run: opens the trace, settles the window
 * (seconds or marker text; markers need one extra pass to find their time),
 * streams every event once through the heap model, then gathers counters and
 * warnings. Reporting is in rank.c and the out-*.c writers.
 */
#include "prim/prim.h"
#include "analyze/internal.h"
#include "analyze/sink.h"
#include "analyze/order.h"
#include "format/blocks.h"
#include "format/chunkindex.h"
#include "format/info.h"
#include "base/system_events.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

const char *const an_type_names[AN_NTYPES] = {"AIFI", "AIFO", "AOFI", "AOFO"};


void an_warn(ltr_analysis *a, const char *fmt, ...)
{
    char *line = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    char **v = n >= 0 ? realloc(a->warnings, (a->nwarnings + 1) * sizeof *v) : NULL;
    if (!v) {
        free(n >= 0 ? line : NULL);
        return;
    }
    a->warnings = v;
    /* a warning names modules and files of the trace, which the traced
     * program chose: one line, without a control character, wherever shown */
    line[ltr_shown_text(line, (size_t)n, line, false)] = 0;
    a->warnings[a->nwarnings++] = line;
}

/* Seconds: a plain non-negative decimal number; anything else is marker text. */
static int parse_seconds(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < 0 || text[0] == '-' || text[0] == ' ')
        return -1;
    *out = v;
    return 0;
}

/* The text of a marker event (ltr marker, a watch's trigger), or NULL. */
static const char *marker_text(const ltr_event *ev, size_t *len)
{
    const ltr_layout *l = ev->layout;
    const char *s;
    if (!l || !l->provider || strcmp(l->provider->name, "ltr") || strcmp(l->name, "Marker") ||
        ltr_event_get_str(ev, "text", &s, len) != 0)
        return NULL;
    return s;
}

/* The markers a trace holds, for a window that named none of them: the
 * first one's text and how many (a watch's trigger marker is a long text
 * that only 'ltr dump' showed). */
typedef struct markers_seen {
    char first[256];
    uint64_t n;
} markers_seen;

static void see_marker(markers_seen *m, const char *s, size_t len)
{
    if (!m->n++)
        snprintf(m->first, sizeof m->first, "%.*s", (int)(len < sizeof m->first ? len : sizeof m->first - 1), s);
}

static int no_marker(ltr_trace *t, int i, const char *text, const markers_seen *m, ltr_error *err)
{
    char what[400];
    if (m->n)
        snprintf(what, sizeof what, "its marker%s: '%s'%s (--from and --to take a marker's whole text)",
                 m->n > 1 ? "s" : "", m->first, m->n > 1 ? ", ... ('ltr dump' lists them)" : "");
    else
        snprintf(what, sizeof what, "it holds no marker");
    return ltr_fail(err, ENOENT, "%s: '%s' is neither a number of seconds nor the text of a marker in %s; %s",
                    i ? "--to" : "--from", text, ltr_trace_path(t), what);
}

/* Timestamps of the first markers with these texts (either may be NULL). */
static int find_markers(ltr_trace *t, const char *text[2], uint64_t ts[2], ltr_error *err)
{
    const ltr_event *ev;
    int rc, found[2] = {!text[0], !text[1]};
    markers_seen seen = {{0}, 0};
    while ((rc = ltr_trace_next(t, &ev, err)) > 0 && !(found[0] && found[1])) {
        size_t len;
        const char *s = marker_text(ev, &len);
        if (!s)
            continue;
        see_marker(&seen, s, len);
        for (int i = 0; i < 2; i++)
            if (!found[i] && len == strlen(text[i]) && !memcmp(s, text[i], len)) {
                ts[i] = ev->ts;
                found[i] = 1;
            }
    }
    if (rc < 0)
        return rc;
    for (int i = 0; i < 2; i++)
        if (!found[i])
            return no_marker(t, i, text[i], &seen, err);
    return ltr_trace_rewind(t, err);
}

typedef struct window_spec {
    double secs[2];
    int is_secs[2], set[2];
    uint64_t marker_ts[2];
} window_spec;

static int window_prepare(ltr_analysis *a, const ltr_analyze_opts *o, window_spec *w, ltr_error *err)
{
    const char *text[2] = {o->from, o->to}, *markers[2] = {NULL, NULL};
    uint64_t *snap[2] = {&a->snap_from, &a->snap_to};
    for (int i = 0; i < 2; i++) {
        /* snapshot:N names a heap snapshot: the report is then the
         * difference between two; the heap window stays the whole trace */
        int b = an_snapshot_bound(text[i], snap[i]);
        if (b < 0)
            return ltr_fail(err, EINVAL, "%s '%s': a snapshot is named snapshot:N, N from 1",
                            i ? "--to" : "--from", text[i]);
        if (b > 0)
            text[i] = NULL;
    }
    if (!a->snap_from != !a->snap_to)
        return ltr_fail(err, EINVAL, "--from and --to name snapshots together (snapshot:N), or "
                        "neither does");
    for (int i = 0; i < 2; i++) {
        w->set[i] = text[i] != NULL;
        if (text[i] && parse_seconds(text[i], &w->secs[i]) == 0)
            w->is_secs[i] = 1;
        else if (text[i])
            markers[i] = text[i];
    }
    a->from_set = w->set[0];
    a->to_set = w->set[1];
    if (!markers[0] && !markers[1])
        return 0;
    return find_markers(a->trace, markers, w->marker_ts, err);
}

/* The window in absolute ns, once the origin is known (at the first event). */
static void window_settle(ltr_analysis *a, const window_spec *w)
{
    uint64_t b[2] = {0, UINT64_MAX};
    a->origin = ltr_trace_origin_ns(a->trace);
    for (int i = 0; i < 2; i++) {
        if (!w->set[i])
            continue;
        b[i] = w->is_secs[i] ? a->origin + (uint64_t)llround(w->secs[i] * 1e9) : w->marker_ts[i];
    }
    an_model_init(&a->model, b[0], b[1]);
    a->model.series = a->series_wanted;
    a->model.cell_base = b[0] ? b[0] : a->origin; /* cells count from the window's start */
}

/* A window that ends before it starts is a mistake in the options, not an
 * empty report. */
static int window_check(const ltr_analysis *a, const ltr_analyze_opts *o, ltr_error *err)
{
    if (!a->from_set || !a->to_set || a->model.from <= a->model.to)
        return 0;
    return ltr_fail(err, EINVAL, "the window is empty: --to '%s' (%.6f s) comes before --from '%s' (%.6f s)",
                    o->to, an_seconds(a, a->model.to), o->from, an_seconds(a, a->model.from));
}

/* --pid P of a process the trace never names: say so, and which it holds. */
static int pid_check(const ltr_analysis *a, ltr_error *err)
{
    size_t n = ltr_trace_process_count(a->trace);
    if (!a->pid_set || ltr_trace_process_find(a->trace, a->pid) || a->model.nprocs || a->nmem || a->cpu_samples)
        return 0;
    char list[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof list - 16; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%u", i ? ", " : "",
                                ltr_trace_process_at(a->trace, i)->pid);
    return ltr_fail(err, ENOENT, "--pid %u: %s has no process %u%s%s%s", a->pid, ltr_trace_path(a->trace),
                    a->pid, n ? " (its processes: " : "", list, n ? (len >= sizeof list - 16 ? ", ...)" : ")") : "");
}

/* tid, with the image of pid that made it in its high bits (AN_GEN_SHIFT):
 * how many times the trace described the pid again (an exec) before this
 * point of the file, which is read in order: a process's blocks from
 * before its exec come before the new image's PROCESS record, those after
 * it after. Times do not tell them apart: the new image's first events are
 * stamped before the recorder writes that record (its attach). */
static uint32_t image_tid(ltr_analysis *a, uint32_t pid, uint32_t tid)
{
    for (; a->images_fed < ltr_trace_image_count(a->trace); a->images_fed++) {
        const ltr_process_image *im = ltr_trace_image_at(a->trace, a->images_fed);
        an_index_gen *g = an_hmap_put(&a->gens, im->pid, NULL);
        if (g && g->gen < AN_GEN_MAX)
            g->gen++;
    }
    if (!a->gens.n)
        return tid;
    const an_index_gen *g = an_hmap_get(&a->gens, pid);
    return g ? tid | g->gen << AN_GEN_SHIFT : tid;
}

static void feed(ltr_analysis *a, an_sink *sk, an_decoder *d, const ltr_event *ev, const ltr_analyze_opts *o)
{
    if (an_snapshot_event(a, ev) || an_mem_feed(a, sk, ev) || an_vm_feed(a, sk, ev) || an_file_feed(a, sk, ev) ||
        an_cpu_feed(a, ev) || an_marker_feed(a, ev))
        return;
    an_heap_event h;
    an_decode(d, ev, &h);
    if (h.kind == AN_NOT_HEAP || (o->pid_set && ev->pid != o->pid))
        return;
    a->heap_events++;
    if (h.kind == AN_BAD_HEAP) {
        a->bad_heap_events++;
        return;
    }
    size_t room;
    uint32_t tid = image_tid(a, ev->pid, ev->tid);
    an_event *e = an_sink_room(sk, ev->pid, tid, &room);
    *e = (an_event){.ts = ev->ts, .addr = h.addr, .old_addr = h.old_addr, .size = h.size,
                    .stack = h.stack, .op = (uint32_t)h.kind};
    an_sink_commit(sk, ev->pid, tid, 1);
}

/* One event through the generic path; 1, 0 at the end, or -errno. */
static int take_one(ltr_analysis *a, an_sink *sk, an_decoder *d, const ltr_analyze_opts *o, ltr_error *err)
{
    const ltr_event *ev;
    int rc = ltr_trace_next(a->trace, &ev, err);
    if (rc > 0) {
        a->events++;
        feed(a, sk, d, ev, o);
    }
    return rc;
}

/* Processes that ended since the last look (the trace's PROCESS_END
 * records, read with the chunks): each an AN_OP_END event at its time, in
 * a thread of its own, so that the model ends the process there, in time
 * order with its events. */
static void feed_ends(ltr_analysis *a, an_sink *sk)
{
    for (; a->ends_fed < ltr_trace_process_end_count(a->trace); a->ends_fed++) {
        const ltr_process_end *e = ltr_trace_process_end_at(a->trace, a->ends_fed);
        size_t room;
        uint32_t tid = e->exec_image ? AN_EXEC_END_TID : AN_END_TID;
        an_event *ev = an_sink_room(sk, e->pid, tid, &room);
        *ev = (an_event){.ts = e->ts, .op = AN_OP_END, .size = e->exec_image};
        an_sink_commit(sk, e->pid, tid, 1);
    }
}

/* With the trace's index (x->n: one was found), what is still to come
 * from the block being read (of pid, tid; done: all of it was taken) and
 * the rest of the trace: the events older than that go on to the model
 * now, which then runs beside the decoding instead of after it (cc1plus's
 * trace reached the model after 256 K events, now after 16 K). */
static void bound(ltr_analysis *a, an_sink *sk, const ltr_chunk_index *x, uint32_t pid, uint32_t tid, int done)
{
    if (!x->n)
        return;
    uint64_t seq;
    uint32_t end;
    ltr_trace_read_pos(a->trace, &seq, &end);
    ltr_index_bound b = ltr_chunk_index_at(x, seq, end);
    an_sink_bound(sk, pid, tid, done ? UINT64_MAX : b.first, b.sorted && !done, b.rest);
}

/* The index of a complete trace in a regular file, settled; none with
 * LTR_ANALYZE_INDEX=0 (to compare the hold alone). */
static void find_index(ltr_analysis *a, ltr_chunk_index *x)
{
    const char *e = getenv("LTR_ANALYZE_INDEX");
    if (!(e && !strcmp(e, "0")))
        ltr_trace_find_index(a->trace, x);
}

/* The events after the first: block by block, the heap records of compact
 * blocks through the fast path (blocks.c), any other record the generic way. */
static int stream_blocks(ltr_analysis *a, an_sink *sk, an_decoder *d, const ltr_analyze_opts *o,
                         const ltr_chunk_index *x, an_progress *pr, ltr_error *err)
{
    an_blocks *b = an_blocks_new(a->trace, d);
    if (!b)
        return ltr_fail(err, ENOMEM, "out of memory");
    ltr_block_view v;
    int rc;
    uint64_t shown = 0;
    while ((rc = ltr_trace_block(a->trace, &v, err)) > 0) {
        int mine = !o->pid_set || v.pid == o->pid;
        v.tid = image_tid(a, v.pid, v.tid);
        feed_ends(a, sk); /* the ends of the chunks before it: the bound says they came */
        bound(a, sk, x, v.pid, v.tid, 0);
        uint64_t n = 0;
        int whole = v.compact && an_blocks_run(b, sk, &v, mine, &n);
        a->events += n;
        a->heap_events += mine ? n : 0;
        if (!whole && (rc = take_one(a, sk, d, o, err)) <= 0)
            break;
        feed_ends(a, sk);
        bound(a, sk, x, v.pid, v.tid, whole);
        if (a->events - shown > 0xffff) {
            an_progress_update(pr, an_trace_position(a->trace));
            if (!an_sink_stopped(sk))
                an_symbols_update(a); /* modules loaded later (dlopen) */
            shown = a->events;
        }
    }
    feed_ends(a, sk); /* those read with the trace's last chunks, after its last block */
    an_blocks_free(b);
    return rc;
}

/* The model gets a thread of its own on traces large enough for it to pay
 * (those the reader reads ahead), or once enough events came (sink.c);
 * LTR_ANALYZE_THREAD=0 or 1 overrides. */
static uint64_t wants_model_thread(uint64_t file_size)
{
    const char *e = getenv("LTR_ANALYZE_THREAD");
    if (e && *e)
        return strcmp(e, "0") != 0;
    return file_size >= LTR_READAHEAD_MIN ? 1 : AN_SINK_THREAD_LATER;
}

/* The most events a second pass holds: an eighth of the machine's memory
 * (an event waits in 40 bytes). */
static size_t hold_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)1 << 32;
    return (size_t)(bytes / 8 / sizeof(an_event));
}

/* The hold the index's spans ask (format/chunkindex.h), when larger than n
 * (and not over hold_cap): so that nothing comes late and the trace is
 * read once. node's trace (its threads' buffers a second apart, 2.5 M
 * events) came late past the 256 K held and was analyzed twice: 2 209 M
 * instructions; holding the 370 K its spans ask, once: 1 220 M, peak RSS
 * the same (80 MiB). Each release hands on an eighth of the hold more than it
 * must (order.c), so 8/7 of what must wait. Not in the second pass (its
 * hold is what the first saw come behind), nor under LTR_ANALYZE_HOLD. An
 * index that says too little leaves events late, counted, and the trace is
 * analyzed again as without it. */
static size_t index_hold(const ltr_chunk_index *x, size_t n)
{
    uint64_t behind = ltr_chunk_index_behind(x), cap = hold_cap();
    if (behind == UINT64_MAX || behind > cap)
        return behind == UINT64_MAX || n >= cap ? n : cap;
    uint64_t want = behind + behind / 7 + AN_ORDER_SEGMENT;
    return want > n ? (size_t)(want < cap ? want : cap) : n;
}

/* Events that may wait for the time order (order.h), by the kind of trace
 * and its index; LTR_ANALYZE_HOLD=N overrides, 0 takes the events in file
 * order (to measure). */
static size_t order_hold(ltr_analysis *a, const ltr_chunk_index *x, int *in_order)
{
    const char *e = getenv("LTR_ANALYZE_HOLD"), *kind = ltr_trace_kv(a->trace, LTR_KV_HEADER, "trace.kind");
    unsigned long long n = e && *e ? strtoull(e, NULL, 10) : a->hold_given;
    *in_order = !(e && *e && n == 0);
    a->hold_env = e && *e;
    if (!n)
        n = index_hold(x, kind && !strcmp(kind, "save") ? AN_ORDER_HOLD_SAVE : AN_ORDER_HOLD_FILE);
    a->hold = (size_t)n;
    return (size_t)n;
}

static int stream(ltr_analysis *a, const ltr_analyze_opts *o, const window_spec *w, ltr_error *err)
{
    an_decoder *d = an_decoder_new();
    if (!d)
        return ltr_fail(err, ENOMEM, "out of memory");
    an_progress pr;
    ltr_trace_summary s0;
    ltr_trace_summarize(a->trace, &s0);
    an_progress_begin(&pr, o->progress, s0.file_size);
    if (a->hold_given) /* the second pass (ltr_analysis_run) */
        pr.label = "analyzing again"; /* within 80 columns, bar and time included */
    /* the first event goes the generic way: the origin may be its timestamp */
    const ltr_event *ev;
    int rc = ltr_trace_next(a->trace, &ev, err);
    window_settle(a, w);
    if (rc >= 0 && window_check(a, o, err) < 0)
        rc = -EINVAL;
    int in_order;
    ltr_chunk_index x = {0};
    find_index(a, &x);
    size_t hold = order_hold(a, &x, &in_order);
    an_sink *sk = an_sink_new(&a->model, wants_model_thread(s0.file_size), in_order, hold);
    /* ltr_analysis_run analyzes the trace again when an event came late:
     * from the first one on, this pass only counts them (the time order
     * stage alone), its model's figures thrown away: node keeping 200 000
     * Buffers (2.5 M events, the first late after 1.5 M) took 2 604 M
     * instructions, now 2 258 M (cachegrind; the second pass alone 1 283 M). */
    a->redo_if_late = sk && a->first_pass && !a->hold_env && in_order && hold_cap() > hold;
    if (a->redo_if_late)
        an_sink_stop_when_late(sk);
    if (!sk)
        rc = ltr_fail(err, ENOMEM, "out of memory");
    else if (rc > 0) {
        a->events++;
        feed(a, sk, d, ev, o);
        an_symbols_update(a); /* the modules met so far: their files open while the events stream */
        rc = stream_blocks(a, sk, d, o, &x, &pr, err);
        if (rc >= 0 && !an_sink_stopped(sk))
            an_symbols_read_all(a);
    }
    an_sink_close(sk); /* the model is the main thread's again */
    ltr_chunk_index_free(&x);
    an_progress_end(&pr);
    an_decoder_free(d);
    return rc;
}

static void count_losses(ltr_analysis *a)
{
    for (size_t i = 0; i < ltr_trace_collector_count(a->trace); i++) {
        const ltr_collector_counters *c = ltr_trace_collector_at(a->trace, i);
        a->events_lost += c->events_lost;
        a->events_overwritten += c->events_overwritten;
        a->metadata_lost += c->metadata_lost;
    }
    char why[200];
    a->events_unwritten = ltr_trace_unwritten(a->trace, why, sizeof why);
}

/* A window wholly outside what the trace covers, [first, last], is a
 * mistake in the options (the seconds of another run, minutes taken for
 * seconds), as a --to before the --from is: exit 1, naming the span to
 * choose in, for analyze, export and report alike. It was a warning and an
 * empty report with exit 0 while --to 2 --from 5 failed, and a script's
 * 'ltr export --from 5' of a 4 s trace wrote an empty profile it took for
 * "no leak": an empty answer to a question the trace cannot answer is
 * the one to avoid. A window inside the span where nothing happened is an
 * answer (a warning says so). A trace with no event (no span) keeps its
 * "no heap events" warning. */
static int outside_trace(const ltr_analysis *a, const ltr_analyze_opts *o, uint64_t first, uint64_t last,
                         ltr_error *err)
{
    bool after = a->from_set && a->win_start > last, before = a->to_set && a->win_end < first;
    if (!a->sum.last_ts || (!after && !before))
        return 0;
    return ltr_fail(err, ERANGE, "the window is outside the trace: %s '%s' (%.6f s) comes %s its %s event "
                    "(%.6f s%s); the trace covers %.6f s .. %.6f s", after ? "--from" : "--to",
                    after ? o->from : o->to, an_seconds(a, after ? a->win_start : a->win_end),
                    after ? "after" : "before", after ? "last" : "first", an_seconds(a, after ? last : first),
                    !after && a->events_overwritten ? "; older events were overwritten" : "",
                    an_seconds(a, first), an_seconds(a, last));
}

/* The window as reported, and as growth rates and the ranking's spread
 * divide by: within the time the trace covers. A memory-mode trace whose
 * older events were overwritten covers only from its first event on, not
 * from the session's start (a 1.1 s tail of a 12 s session made a steady
 * leak look allocated at once, and a 3.1 s tail rated it 1.45 MiB/min
 * instead of 5.6); a --to past the last event ends the window there (a
 * --to 999 on a 5 s trace did the same); the last event is the last
 * heap event or process end. The model's window is kept: it
 * only says which events count, and the trace has none outside it. */
static int settle_bounds(ltr_analysis *a, const ltr_analyze_opts *o, ltr_error *err)
{
    ltr_trace_summarize(a->trace, &a->sum);
    uint64_t first = a->events_overwritten && a->sum.first_ts > a->origin ? a->sum.first_ts : a->origin;
    uint64_t last = a->sum.last_ts > a->origin ? a->sum.last_ts : a->origin;
    /* A process's end is stamped when the recorder sees it gone, after its
     * last event, which may be the trace's (a --pid SIGKILLed: "never
     * freed: it ended at 1.186 s" in a window that ended at 1.113 s) */
    for (size_t i = 0; i < a->model.nprocs; i++)
        if (a->model.procs[i]->ended && a->model.procs[i]->end_ts > last)
            last = a->model.procs[i]->end_ts;
    a->win_start = a->from_set ? a->model.from : first;
    a->win_end = a->to_set ? a->model.to : last;
    if (outside_trace(a, o, first, last, err) < 0)
        return -ERANGE;
    if (a->from_set && a->win_start < first && a->win_end > first) {
        an_warn(a, "the window starts before the trace's first event (%.6f s; older events were overwritten): "
                "it starts there", an_seconds(a, first));
        a->win_start = first;
    }
    if (a->to_set && a->win_end > last && a->win_start < last) {
        an_warn(a, "the window ends after the trace's last event (%.6f s): it ends there", an_seconds(a, last));
        a->win_end = last;
    }
    if (a->win_end < a->win_start)
        a->win_end = a->win_start;
    return 0;
}

/* What a lost event does to the figures, said once after the losses. */
#define LOST_WHEN                                                                                                 \
    "; the trace does not say when, so some may fall inside the window: a lost Free makes its block look "       \
    "outstanding (a false leak candidate), a lost Alloc turns its free into a free of an unseen allocation, a "  \
    "lost Realloc does both"

static void warn_losses(ltr_analysis *a)
{
    /* A recording whose disk filled for a while was said to have lost its
     * events for want of a free buffer, where 'ltr record' had said the
     * disk refused them: the two counted apart, each with its cause. */
    char why[200];
    ltr_trace_unwritten(a->trace, why, sizeof why);
    uint64_t unwritten = a->events_unwritten;
    uint64_t unbuffered = a->events_lost - unwritten; /* the reader keeps unwritten <= lost */
    if (unbuffered)
        an_warn(a, "%llu event(s) were lost while recording (no free buffer: record again with more or larger "
                "ones, --buffers N --buffer-size KB of ltr start or ltr record; or --max-file-size reached)%s",
                (unsigned long long)unbuffered, unwritten ? "" : LOST_WHEN);
    if (unwritten)
        an_warn(a, "%llu event(s) were recorded but could not be written to the trace: %s%s",
                (unsigned long long)unwritten, why, LOST_WHEN);
    for (size_t i = 0; i < ltr_trace_process_lost_count(a->trace); i++) {
        const ltr_process_lost *l = ltr_trace_process_lost_at(a->trace, i);
        if (l->events_lost)
            an_warn(a, "process %u lost %llu event(s)", l->pid, (unsigned long long)l->events_lost);
    }
    /* said by `ltr info` alone, the analysis named processes "(no process
     * record)" and stacks "(no stack recorded)" without a word of why */
    if (a->metadata_lost)
        an_warn(a, "%llu metadata record(s) were lost while recording (the session's metadata region full, or "
                "past what a flight recorder keeps): stacks through them show as not recorded, a process "
                "without its record as '(no process record)', an image its exec began as the program before it",
                (unsigned long long)a->metadata_lost);
    if (a->sum.events_layout_lost)
        an_warn(a, "%llu event(s) could not be read: the layout records that describe them were among the "
                "metadata records lost while recording; as lost events, some may be heap events of the window",
                (unsigned long long)a->sum.events_layout_lost);
    if (a->events_overwritten)
        an_warn(a, "memory-mode trace: %llu older event(s) were overwritten before it was saved; blocks "
                "allocated before its first event are not seen, and their frees are counted apart: a cache "
                "that replaces such blocks shows its new ones held, growing as a leak's would (its frees of "
                "the old ones have no stack); heap snapshots with --trend tell them apart",
             (unsigned long long)a->events_overwritten);
}

/* How much of the trace's damage is records of intact chunks, and of them
 * records another traced program wrote about a process (left out, the
 * process's own taken), as the reader counted them (all, past its list's
 * bound too: `ltr info` says the same). A forged stack record is not a
 * damaged stretch: said as one, the analysis told of allocations missing
 * that were all there. */
static void count_record_damage(ltr_analysis *a)
{
    a->bad_records = ltr_trace_record_damage(a->trace);
    a->forged = ltr_trace_forged_count(a->trace);
}

/* Damage of whole chunks, not of records in intact ones: events the trace
 * held and the analysis never met. */
static uint64_t damaged_chunks(const ltr_analysis *a) { return a->sum.damage - a->bad_records; }

/* Where the allocations of frees never paired may also be, beside before the
 * trace: what the trace says it misses. A trace whose first EVENTS chunk was
 * damaged had 15 of python3's frees said "allocated before the trace
 * began, ..." alone. */
static const char *unseen_also(const ltr_analysis *a)
{
    if (damaged_chunks(a))
        return a->events_lost ? ", or their Alloc was among the events lost or in the trace's damaged stretches"
                              : ", or their Alloc was in the trace's damaged stretches";
    return a->events_lost ? ", or their Alloc was among the events lost" : "";
}

/* What the trace itself says of its state: damage, bad or forged records, no end */
static void warn_trace(ltr_analysis *a)
{
    uint64_t chunks = damaged_chunks(a), bad = a->bad_records - a->forged;
    if (chunks)
        an_warn(a, "the trace is damaged (%llu problem(s)): only its intact chunks were analyzed, so "
                "allocations and frees in the damaged stretches are missing",
             (unsigned long long)ltr_analysis_damage(a));
    else if (bad)
        an_warn(a, "the trace holds %llu bad record(s) in intact chunks ('ltr info' lists them): each was left "
                "out and only what it told is missing (a record that gave a process's stack other frames than "
                "an earlier one, as another traced program of the session can write, or a process of another pid "
                "namespace with the same pid, leaves that stack unknown; a module loaded over another still loaded is "
                "left out, the first kept)",
                (unsigned long long)bad);
    if (a->forged)
        an_warn(a, "%llu record(s) about a process were another traced program's ('ltr info' lists them): left "
                "out, and the process's own analyzed", (unsigned long long)a->forged);
    if (!ltr_analysis_damage(a) && !a->sum.complete)
        an_warn(a, "the trace was cut short or is still being recorded (no END chunk): events up to its last "
                "chunk were analyzed");
}

/* What the model met: bad events, no memory, events later than it could hold */
static void warn_model(ltr_analysis *a)
{
    if (a->bad_heap_events)
        an_warn(a, "%llu heap event(s) did not follow docs/heap-events.md and were skipped",
             (unsigned long long)a->bad_heap_events);
    if (a->model.oom)
        an_warn(a, "memory ran out during the analysis: the figures are incomplete");
    if (a->model.late || a->model.unordered)
        an_warn(a, "%llu heap event(s) came in the trace later than what the analysis could hold to put "
                "the threads' events in time order%s: the peak and its time, and the pairing of frees with "
                "allocations of reused addresses or of a process that had ended, may be off near them (it held "
                "%zu events; LTR_ANALYZE_HOLD=N holds N; a damaged trace whose events come far behind their "
                "thread's many times is left so past a bound, docs/analysis.md)",
                (unsigned long long)a->model.late, a->model.unordered ? " (memory ran out for it)" : "",
                a->hold);
    else if (a->model.late_across && a->model.nprocs > 1)
        an_warn(a, "%llu heap event(s) came in the trace after later events of other processes had been "
                "analyzed (a process's buffer written when it ended: a compiler driver waiting for its "
                "children): each process's figures are exact, only the peak of all of them together and its "
                "time may be off (it held %zu events; LTR_ANALYZE_HOLD=N holds N)",
                (unsigned long long)a->model.late_across, a->hold);
}

/* Frees the trace does not pair: of allocations it never saw, or missing */
static void warn_frees(ltr_analysis *a)
{
    uint64_t unseen = 0, implicit = 0;
    for (size_t i = 0; i < a->model.nprocs; i++) {
        unseen += a->model.procs[i]->unseen_frees;
        implicit += a->model.procs[i]->implicit_frees;
    }
    if (unseen)
        an_warn(a, "%llu free(s) of allocations the trace never saw were counted apart (allocated before "
                "the trace began, before the heap agent started in their process, or by their parent before "
                "it forked them: a shell's children free what it had%s); they change no total",
             (unsigned long long)unseen, unseen_also(a));
    if (implicit) /* why their frees are missing: what the trace says of it, not a guess */
        an_warn(a, "%llu address(es) were allocated again without a free in between: those frees are not in "
                "the trace where the analysis met them (%s)", (unsigned long long)implicit,
                a->model.late || a->model.unordered
                    ? "some events came later than it could hold, above"
                : damaged_chunks(a) ? "in the trace's damaged stretches, or never recorded"
                : a->events_lost ? "among the events lost, or never recorded"
                : a->events_overwritten ? "among the events overwritten: a flight recorder overwrites one "
                                          "thread's full buffers while another thread's older events wait "
                                          "in the buffer it is filling, or never recorded"
                                 : "no event was lost or came late: made by another thread within the "
                                   "100 us of the allocations around it and put after them (the trace keeps "
                                   "no order among threads' events of one time), or never recorded, e.g. "
                                   "made where the heap agent does not see them");
}

/* No heap events, snapshots not whole, a window before the first event */
static void warn_contents(ltr_analysis *a)
{
    if (a->trend_wanted == 1 && !a->nsnaps) /* said at the top too: its answer came after a whole report (a review) */
        an_warn(a, "--trend: the trace holds no heap snapshot, so no trend; the report below is of its heap "
                   "events (record with the heapsnapshot profile and 'ltr enableperiodicsnapshot heap SECS PID', "
                   "docs/heap-tracing.md \"Heap snapshots\")");
    if (!a->heap_events && a->pid_set)
        an_warn(a, "process %u has no heap events in the trace", a->pid);
    else if (!a->heap_events && !a->nsnaps)
        an_warn(a, "the trace holds no heap events (provider " LTR_HEAP_PROVIDER ")%s",
             a->events ? "" : ": it holds no events at all");
    for (size_t i = 0; i < a->nsnaps; i++)
        if (a->snaps[i].complete <= 0)
            an_warn(a, "heap snapshot %zu (process %u) is %s: its totals count what arrived", i + 1,
                    a->snaps[i].pid, a->snaps[i].complete ? "missing stack records that were lost"
                                                          : "cut (no end: the process exited while writing it)");
    if (a->to_set && a->heap_events && a->model.to < a->sum.first_ts) /* within the span (outside_trace) */
        an_warn(a, "the window ends before the trace's first event (%.6f s): nothing happened in it",
                an_seconds(a, a->sum.first_ts));
}

/* Whether the image's file name starts with prefix and then has only
 * version digits and dots ("python3.11", not "python3-config") */
static bool runs(const char *exe, const char *prefix)
{
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    size_t n = strlen(prefix);
    if (strncmp(base, prefix, n) != 0)
        return false;
    return base[n + strspn(base + n, "0123456789.")] == 0;
}

/* Interpreters whose objects come from memory they map themselves: their
 * figures here are a small part of what they hold, and a new user's review
 * traced a python3 service's growing dict as 8 heap events and nothing said
 * why (docs/heap-tracing.md, "Interpreters' own allocators"). CPython with
 * pymalloc is told from CPython with PYTHONMALLOC=malloc by its sizes: with
 * pymalloc only its rare allocations under 512 bytes reach malloc (Debian's
 * python3.11 -c pass: 633 of 1 210; pyenv's with a dict of 100 000
 * strings: 911 of 3 347), with malloc nearly all do (22 105 of 22 712;
 * 480 000 of 482 000): under four in five is pymalloc. */
static void warn_runtimes(ltr_analysis *a)
{
    size_t n, python = 0, node = 0;
    uint32_t python_pid = 0, node_pid = 0;
    an_proc *const *procs = an_procs(a, &n);
    for (size_t i = 0; i < n; i++) {
        const char *exe = an_proc_exe(a, procs[i]);
        uint64_t small = 0, all = 0;
        for (int b = 0; b < AN_HIST_BUCKETS; b++) {
            all += procs[i]->hist[b];
            small += b >= 1 && b <= 9 ? procs[i]->hist[b] : 0; /* 1 to 511 bytes */
        }
        if (runs(exe, "python") && all >= 100 && small * 5 < all * 4 && !python++)
            python_pid = procs[i]->pid;
        if ((runs(exe, "node") || runs(exe, "nodejs")) && !node++)
            node_pid = procs[i]->pid;
    }
    if (python)
        an_warn(a, "%zu CPython process(es) (pid %u%s) took their objects of up to 512 bytes from pymalloc's "
                "arenas, which it maps itself and the heap agent does not see: most of their memory is not in "
                "these figures; run them with PYTHONMALLOC=malloc to trace every object with its stack "
                "(docs/heap-tracing.md)", python, python_pid, python > 1 ? " and others" : "");
    if (node)
        an_warn(a, "%zu node process(es) (pid %u%s): JavaScript objects live in V8's heap, which it maps "
                "itself and the heap agent does not see; these figures are the native side's (Buffers, the "
                "engine's own mallocs) (docs/heap-tracing.md)", node, node_pid, node > 1 ? " and others" : "");
}

static void warn_state(ltr_analysis *a)
{
    warn_trace(a);
    warn_model(a);
    warn_frees(a);
    warn_contents(a);
    warn_runtimes(a);
}

static int analysis_run(const char *path, const ltr_analyze_opts *o, size_t hold, int first, ltr_analysis **out,
                        ltr_error *err)
{
    ltr_analysis *a = calloc(1, sizeof *a);
    if (!a)
        return ltr_fail(err, ENOMEM, "out of memory");
    a->hold_given = hold;
    a->first_pass = first;
    a->progress = o->progress;
    a->debug_path = o->debug_path;
    a->local_symbols = o->local_symbols;
    a->pid_set = o->pid_set;
    a->pid = o->pid;
    a->trend_wanted = o->trend;
    ltr_guid_from_name(LTR_HEAP_SNAPSHOT_PROVIDER, &a->snap_guid);
    ltr_guid_from_name(LTR_SYSTEM_PROVIDER, &a->system_guid);
    a->cpu_report = o->cpu;
    a->full_stacks = o->full_stacks;
    a->series_wanted = o->series;
    a->page_frames = o->page_frames;
    a->width = o->width;
    a->processes = o->processes;
    a->mapped_report = o->mapped;
    a->files_report = o->files;
    an_hmap_init(&a->cpu, sizeof(an_cpu_stack));
    an_hmap_init(&a->cpu_names, 24);
    an_hmap_init(&a->gens, sizeof(an_index_gen));
    window_spec w = {0};
    int rc = ltr_trace_open_decoding(path, an_decodes_ahead(), &a->trace, err);
    if (rc == 0)
        rc = window_prepare(a, o, &w, err);
    if (rc == 0)
        rc = stream(a, o, &w, err);
    if (rc == 0)
        rc = pid_check(a, err);
    if (rc < 0) {
        ltr_analysis_free(a);
        return rc;
    }
    if (a->redo_if_late && a->model.late) { /* its figures are not reported: the trace is analyzed again */
        *out = a;
        return 0;
    }
    an_model_finish(&a->model);
    an_images_resolve(a);
    an_snapshots_finish(a);
    if (a->snap_from && (!an_snapshot_named(a, a->snap_from) || !an_snapshot_named(a, a->snap_to))) {
        ltr_fail(err, ENOENT, "the trace holds %zu heap snapshot(s): no snapshot:%llu", a->nsnaps,
                 (unsigned long long)(an_snapshot_named(a, a->snap_from) ? a->snap_to : a->snap_from));
        ltr_analysis_free(a);
        return -ENOENT;
    }
    if (a->snap_from && an_snapshot_named(a, a->snap_from)->pid != an_snapshot_named(a, a->snap_to)->pid) {
        ltr_fail(err, EINVAL, "snapshot:%llu and snapshot:%llu are of different processes (%u, %u): "
                 "a difference is between two snapshots of one process",
                 (unsigned long long)a->snap_from, (unsigned long long)a->snap_to,
                 an_snapshot_named(a, a->snap_from)->pid, an_snapshot_named(a, a->snap_to)->pid);
        ltr_analysis_free(a);
        return -EINVAL;
    }
    if (o->snapshot && !(a->export_snap = an_snapshot_named(a, o->snapshot))) {
        ltr_fail(err, ENOENT, "--snapshot %llu: the trace holds %zu heap snapshot(s)",
                 (unsigned long long)o->snapshot, a->nsnaps);
        ltr_analysis_free(a);
        return -ENOENT;
    }
    if (a->trend_wanted)
        an_trend_run(a);
    an_mem_finish(a);
    count_losses(a);
    if (settle_bounds(a, o, err) < 0) {
        ltr_analysis_free(a);
        return -ERANGE;
    }
    count_record_damage(a);
    warn_losses(a);
    if (!o->cpu && !o->mapped && !o->files) /* its warnings are the heap's */
        warn_state(a);
    if ((o->mapped || o->files) && a->model.oom)
        an_warn(a, "memory ran out during the analysis: the figures are incomplete");
    *out = a;
    return 0;
}

/* A trace whose threads' buffers came farther apart in the file than the
 * hold (a file-mode recorder writes the filled part of each buffer once a
 * second: node allocating 2.5 M times a second with the 256 K held gave
 * 877 KiB outstanding instead of 827 KB, a peak 1 MiB low and 213 frees
 * taken for unseen) is analyzed again, once, holding as many events as the
 * first pass saw them come behind: the figures right by default, and the
 * time and memory of a second pass only where the trace needs it. Where
 * the index's spans told the hold (index_hold), only when they said too
 * little. LTR_ANALYZE_HOLD=N takes N and no second pass. */
int ltr_analysis_run(const char *path, const ltr_analyze_opts *o, ltr_analysis **out, ltr_error *err)
{
    int rc = analysis_run(path, o, 0, 1, out, err);
    if (rc < 0)
        return rc;
    ltr_analysis *a = *out;
    if (!a->model.late || a->hold_env || a->model.hold_needed <= a->hold)
        return rc;
    size_t want = a->model.hold_needed, cap = hold_cap();
    want = want < cap ? want : cap;
    if (want <= a->hold)
        return rc;
    /* the first pass goes before the second: never both in memory at once */
    size_t held = a->hold;
    unsigned long long late = a->model.late;
    ltr_analysis_free(a);
    ltr_error again;
    if (analysis_run(path, o, want, 0, out, &again) < 0) /* out of memory, the file gone: as first */
        return analysis_run(path, o, 0, 0, out, err);
    /* not the hold itself: it follows the blocks' bounds (a trace merged with
     * and without column blocks asked for holds a few digits apart), and
     * reports of one trace read two ways are the same */
    an_warn(*out, "the threads' events came farther apart in the trace than the %zu events the analysis "
            "holds to put them in time order (%llu came late): it analyzed the trace again, holding as "
            "many as came behind (LTR_ANALYZE_HOLD=N holds N, and analyzes once)", held, late);
    return rc;
}

void ltr_analysis_free(ltr_analysis *a)
{
    if (!a)
        return;
    an_ranked_forget(a);
    an_model_free(&a->model);
    an_hmap_free(&a->gens);
    an_snapshots_free(a);
    free(a->mem);
    for (size_t i = 0; i < a->nmarkers; i++)
        free(a->markers[i].text);
    free(a->markers);
    an_cpu_free(a);
    an_files_text_free(a);
    ltr_symbolizer_free(a->sym);
    if (a->trace)
        ltr_trace_close(a->trace);
    for (size_t i = 0; i < a->nwarnings; i++)
        free(a->warnings[i]);
    free(a->warnings);
    for (size_t i = 0; i < a->nnosyms; i++) {
        free(a->nosyms[i].path);
        free(a->nosyms[i].build_id);
        free(a->nosyms[i].debug_file);
    }
    free(a->nosyms);
    free(a);
}

uint64_t ltr_analysis_damage(const ltr_analysis *a) { return a->sum.damage - a->forged; }
uint64_t ltr_analysis_cpu_samples(const ltr_analysis *a) { return a->cpu_samples; }
size_t ltr_analysis_warning_count(const ltr_analysis *a) { return a->nwarnings; }
const char *ltr_analysis_warning_at(const ltr_analysis *a, size_t i)
{
    return i < a->nwarnings ? a->warnings[i] : NULL;
}

double an_seconds(const ltr_analysis *a, uint64_t ts)
{
    return ts >= a->origin ? (double)(ts - a->origin) / 1e9 : -(double)(a->origin - ts) / 1e9;
}

const char *an_process_exe(const ltr_analysis *a, uint32_t pid)
{
    const ltr_process *p = ltr_trace_process_find(a->trace, pid);
    return p && p->known ? p->exe : "";
}

void an_images_resolve(ltr_analysis *a)
{
    size_t n = ltr_trace_image_count(a->trace);
    if (!n)
        return;
    /* (gen << 32 | pid) -> 1 + the record that replaced that image: one pass
     * over the records, one look a process (8 202 processes beside thousands
     * of images were a scan of every record for each) */
    an_hmap count, which;
    an_hmap_init(&count, sizeof(an_index_gen));
    an_hmap_init(&which, sizeof(an_index_gen));
    for (size_t k = 0; k < n; k++) {
        const ltr_process_image *im = ltr_trace_image_at(a->trace, k);
        an_index_gen *c = an_hmap_put(&count, im->pid, NULL);
        an_index_gen *w = c ? an_hmap_put(&which, (uint64_t)c->gen << 32 | im->pid, NULL) : NULL;
        if (w && !w->gen)
            w->gen = (uint32_t)k + 1;
        if (c)
            c->gen++;
    }
    for (size_t i = 0; i < a->model.nprocs; i++) {
        an_proc *p = a->model.procs[i];
        const an_index_gen *w = an_hmap_get(&which, (uint64_t)p->gen << 32 | p->pid);
        if (!w)
            continue; /* the pid's last image */
        p->image = w->gen;
        p->image_key = ltr_trace_image_at(a->trace, w->gen - 1)->key;
        for (size_t j = 0; j < p->nstacks; j++)
            p->stacks[j].key = p->image_key;
    }
    an_hmap_free(&count);
    an_hmap_free(&which);
}

const char *an_stack_exe(const ltr_analysis *a, const an_stack *s)
{
    const ltr_process_image *im =
        s->key >= LTR_IMAGE_KEY_BASE ? ltr_trace_image_at(a->trace, s->key - LTR_IMAGE_KEY_BASE) : NULL;
    return im ? im->exe : an_process_exe(a, s->pid);
}

bool an_proc_replaced_by_exec(const ltr_analysis *a, const an_proc *p)
{
    const ltr_process_image *im = p->image ? ltr_trace_image_at(a->trace, p->image - 1) : NULL;
    return (im && !im->reused) || (p->ended && p->exec_end);
}

const ltr_thread *an_proc_thread_next(const ltr_analysis *a, const an_proc *p, size_t *pos)
{
    bool replaced = p->image != 0;
    size_t n = replaced ? ltr_trace_image_thread_count(a->trace) : ltr_trace_thread_count(a->trace);
    while (*pos < n) {
        const ltr_thread *t = replaced ? ltr_trace_image_thread_at(a->trace, (*pos)++)
                                       : ltr_trace_thread_at(a->trace, (*pos)++);
        if (t->pid == (replaced ? p->image_key : p->pid))
            return t;
    }
    return NULL;
}

const char *an_proc_exe(const ltr_analysis *a, const an_proc *p)
{
    const ltr_process_image *im = p->image ? ltr_trace_image_at(a->trace, p->image - 1) : NULL;
    return im ? im->exe : an_process_exe(a, p->pid);
}

static const char *shown(const char *exe, char *buf, size_t size)
{
    size_t len = strlen(exe);
    if (len >= size)
        len = size - 1;
    buf[ltr_shown_text(exe, len, buf, false)] = 0;
    return buf;
}

const char *an_process_exe_shown(const ltr_analysis *a, uint32_t pid, char *buf, size_t size)
{
    return shown(an_process_exe(a, pid), buf, size);
}

const char *an_proc_exe_shown(const ltr_analysis *a, const an_proc *p, char *buf, size_t size)
{
    return shown(an_proc_exe(a, p), buf, size);
}

ltr_report_format ltr_report_format_parse(const char *name)
{
    static const char *const names[] = {NULL, "text", "json", "csv", "pprof", "folded", "chrome"};
    for (int i = 1; i <= 6; i++)
        if (!strcmp(name, names[i]))
            return (ltr_report_format)i;
    return 0;
}

static int write_report(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top)
{
    int rc;
    if (a->files_report) {
        rc = an_files_write(a, out, fmt, top);
        return rc == 0 && (fflush(out) != 0 || ferror(out)) ? -EIO : rc;
    }
    if (a->cpu_report) {
        rc = an_cpu_write(a, out, fmt, top);
        return rc == 0 && (fflush(out) != 0 || ferror(out)) ? -EIO : rc;
    }
    an_symbolize_reported(a, fmt, a->mapped_report ? 1 : top); /* every module record to the symbolizer */
    if (a->mapped_report) {
        rc = an_vm_write(a, out, fmt, top);
        return rc == 0 && (fflush(out) != 0 || ferror(out)) ? -EIO : rc;
    }
    switch (fmt) {
    case LTR_REPORT_TEXT: rc = an_write_text(a, out, top); break;
    case LTR_REPORT_JSON: rc = an_write_json(a, out, top); break;
    case LTR_REPORT_CSV: rc = an_write_csv(a, out, top); break;
    case LTR_REPORT_PPROF: rc = an_write_pprof(a, out); break;
    case LTR_REPORT_FOLDED: rc = an_write_folded(a, out); break;
    case LTR_REPORT_CHROME: rc = an_write_chrome(a, out); break;
    default: rc = -EINVAL; break;
    }
    an_ranked_forget(a); /* the symbolizing's lists are this report's only */
    if (rc == -EINVAL)
        return rc;
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = -EIO;
    return rc;
}

/* The text report names executables, threads, files and modules of the
 * trace, which the traced programs chose: it is written whole, then shown
 * without a control character (ltr_shown_text), so that no name can act on
 * the terminal it is read on. The other formats escape names their way. */
int ltr_analysis_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top)
{
    if (fmt != LTR_REPORT_TEXT)
        return write_report(a, out, fmt, top);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return -ENOMEM;
    int rc = write_report(a, m, fmt, top);
    if (fclose(m) != 0 && rc == 0)
        rc = -ENOMEM;
    if (rc == 0) {
        len = ltr_shown_text(text, len, text, true);
        if (fwrite(text, 1, len, out) != len || fflush(out) != 0 || ferror(out))
            rc = -EIO;
    }
    free(text);
    return rc;
}
