/*
 * analyze/out_text.c — the report for people: warnings first, then per
 * process the figures of the window, its threads, and the ranked stacks with
 * their frames. Sizes in human units (exact bytes are JSON's and CSV's), and
 * at a terminal every line fits its width (fit.c): the frames that every
 * stack shares are hidden unless --full-stacks (frames.c).
 */
#include "analyze/internal.h"
#include "prim/prim.h"
#include "base/units.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_meaning[AN_NTYPES] = {
    "allocated and freed inside the window",
    "allocated inside, outstanding at its end: leak candidates",
    "allocated before, freed inside",
    "allocated before, outstanding at its end",
};

static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

void an_print_frame(FILE *out, const ltr_sym_frame *f)
{
    char line[4096];
    an_frame_text(f, f->function, f->file, line, sizeof line);
    fputs(line, out);
}

/* "function (file:line) [inlined]  module+0xoffset" with the function and
 * file given (the frame's, or shortened ones). */
void an_frame_text(const ltr_sym_frame *f, const char *function, const char *file, char *out, size_t size)
{
    char where[1200] = "", mod[600];
    if (file)
        snprintf(where, sizeof where, " (%s:%u)", file, f->line);
    if (f->module)
        snprintf(mod, sizeof mod, "%s+0x%llx", base_name(f->module), (unsigned long long)f->offset);
    else
        snprintf(mod, sizeof mod, "0x%llx", (unsigned long long)f->address);
    int n = snprintf(out, size, "%s%s%s  %s", function ? function : "??", where, f->inlined ? " [inlined]" : "", mod);
    if (n >= 0 && size) /* the module's path is the program's choice too: one line */
        out[ltr_shown_text(out, (size_t)n < size ? (size_t)n : size - 1, out, false)] = 0;
}

void an_text_frames(ltr_analysis *a, FILE *out, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    size_t n = an_frames_shown(a, s, f, AN_MAX_FRAMES);
    if (n == 0) /* a stack written over is not one never recorded (a forger's FRAME_NODES) */
        fputs(an_stack_conflicted(a->trace, s->key, s->stack_id)
                  ? "        (stack unknown: records of its pid gave it different frames, e.g. another traced "
                    "program's; 'ltr info' lists them)\n"
                  : "        (no stack recorded)\n",
              out);
    for (size_t i = 0; i < n; i++) {
        char line[4096];
        an_fit_frame(&f[i], a->width > 8 ? a->width - 8 : 0, line, sizeof line);
        fprintf(out, "        %s\n", line);
    }
}

/* A rate per minute only from a window this long: from a 33 ms run of
 * perl, "growing 34.0 GiB/min" alarmed a review and meant little. */
#define RATE_MIN_WINDOW_S 10.0

/* ", growing 1.20 MiB/min" for a steady AIFO stack (its bytes over the
 * window's minutes), ", growing over 0.03 s (...)" when the window is too
 * short for a rate, ", at once, at 12.5 s" for one allocated in one go,
 * ", turning over: ..." for a cache that replaces its entries. */
static void growth_text(const ltr_analysis *a, const an_entry *e, char *out, size_t size)
{
    out[0] = 0;
    if (e->type != AN_AIFO)
        return;
    double seconds = (double)(a->win_end - a->win_start) / 1e9;
    int digits = seconds < 1 ? 3 : 1; /* in a window of 35 ms every stack read "at 0.0 s" */
    char rate[32];
    if (e->growth == AN_GROWING && seconds >= RATE_MIN_WINDOW_S)
        snprintf(out, size, ", growing %s/min",
                 ltr_size_format((uint64_t)((double)e->bytes / (seconds / 60)), rate, sizeof rate));
    else if (e->growth == AN_GROWING && seconds > 0)
        snprintf(out, size, ", growing over %.2g s (too short a window for a rate)", seconds);
    else if (e->growth == AN_TURNING_OVER)
        snprintf(out, size, ", turning over: %llu of its blocks freed in the window, those held allocated since %.*f s",
                 (unsigned long long)e->stack->freed.count, digits, an_seconds(a, e->stack->held_first));
    else
        snprintf(out, size, ", at once, at %.*f s", digits, an_seconds(a, e->stack->held_first)); /* "(0.1 s)" read as how long */
}

static void print_list(ltr_analysis *a, FILE *out, const an_proc *p, an_rank rank, unsigned top)
{
    static const char *const titles[] = {
        "stacks holding memory at the window's end (AIFO first)",
        "stacks with the most allocation calls",
        "stacks with the most temporary allocations (freed right away)",
    };
    size_t n;
    an_entry *e = an_ranked_of(a, p, rank, top, &n);
    fprintf(out, "  %s:%s\n", titles[rank], n ? "" : " none");
    for (size_t i = 0; i < n; i++) {
        char line[512], sz[32];
        ltr_size_format(e[i].bytes, sz, sizeof sz);
        if (rank == AN_RANK_OUTSTANDING) {
            char growth[96];
            growth_text(a, &e[i], growth, sizeof growth);
            snprintf(line, sizeof line, "    #%zu %s %s in %llu allocation%s%s", i + 1, an_type_names[e[i].type], sz,
                     (unsigned long long)e[i].count, e[i].count == 1 ? "" : "s", growth);
        } else if (rank == AN_RANK_CALLS) {
            snprintf(line, sizeof line, "    #%zu %llu call%s, %s", i + 1, (unsigned long long)e[i].count,
                     e[i].count == 1 ? "" : "s", sz);
        } else {
            snprintf(line, sizeof line, "    #%zu %llu temporary of %llu call%s", i + 1, (unsigned long long)e[i].count,
                     (unsigned long long)e[i].bytes, e[i].bytes == 1 ? "" : "s");
        }
        an_fit_line(out, line, a->width);
        an_text_frames(a, out, e[i].stack);
    }
    free(e);
}

static void print_histogram(FILE *out, const an_proc *p)
{
    uint64_t max = 0;
    for (int b = 0; b < AN_HIST_BUCKETS; b++)
        max = p->hist[b] > max ? p->hist[b] : max;
    fprintf(out, "  allocation sizes (bytes):%s\n", max ? "" : " none");
    for (int b = 0; b < AN_HIST_BUCKETS && max; b++) {
        if (!p->hist[b])
            continue;
        uint64_t lo = b ? 1ull << (b - 1) : 0, hi = b ? (b == 64 ? UINT64_MAX : (1ull << b) - 1) : 0;
        char range[48];
        snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)lo, (unsigned long long)hi);
        int bar = (int)(p->hist[b] * 40 / max);
        fprintf(out, "    %-24s %10llu %.*s\n", range, (unsigned long long)p->hist[b], bar ? bar : 1,
                "########################################");
    }
}

/* The window that lists what held the peak: to its time in ns, as a window's
 * end is read (a time in us ended it before the peak, 200 KB short in a
 * perl run), and what that window holds said where frees of the peak's
 * time (times are 100 us apart) come after the peak: a window ends at a
 * time, not at an event. */
static void print_peak_hint(ltr_analysis *a, FILE *out, const an_proc *p)
{
    char line[512], held[32], below[32];
    int n = snprintf(line, sizeof line, "  most of its peak was freed by the window's end: --to %.9f --pid %u lists "
                     "the stacks that held ", an_seconds(a, p->peak_ts), p->pid);
    if (p->peak_time_end_bytes == p->peak_bytes)
        snprintf(line + n, sizeof line - (size_t)n, "it then");
    else
        snprintf(line + n, sizeof line - (size_t)n, "%s at that time's end, %s below the peak: frees stamped "
                 "with its time came after it", ltr_size_format(p->peak_time_end_bytes, held, sizeof held),
                 ltr_size_format(p->peak_bytes - p->peak_time_end_bytes, below, sizeof below));
    an_fit_line(out, line, a->width);
}

static void print_figures(ltr_analysis *a, FILE *out, const an_proc *p)
{
    uint64_t ob = p->type[AN_AIFO].bytes + p->type[AN_AOFO].bytes;
    uint64_t oc = p->type[AN_AIFO].count + p->type[AN_AOFO].count;
    char b1[32], b2[32], line[512];
    fprintf(out, "  outstanding at the window's end: %s in %llu allocations", ltr_size_format(ob, b1, sizeof b1),
            (unsigned long long)oc);
    if (an_ended_by_end(a, p)) /* what it never freed: its memory went with it */
        fprintf(out, " (never freed: %s at %.6f s)", an_proc_replaced_by_exec(a, p) ? "an exec replaced it" : "it ended",
                an_seconds(a, p->end_ts));
    fputc('\n', out);
    if (p->peak_set) /* to the ns, as the hint and JSON say it: copied into --to in us it ended before the peak */
        fprintf(out, "  peak: %s at %.9f s\n", ltr_size_format(p->peak_bytes, b1, sizeof b1), an_seconds(a, p->peak_ts));
    /* a program that frees what it grew before it exits (node's buffers) has
     * none of it outstanding at the end: its growth was in no list (a review) */
    if (p->peak_set && p->peak_bytes > 2 * ob && p->peak_bytes - ob >= (1u << 20))
        print_peak_hint(a, out, p);
    snprintf(line, sizeof line, "  allocations: %llu (%s), frees: %llu, frees of unseen allocations: %llu",
             (unsigned long long)p->allocs, ltr_size_format(p->alloc_bytes, b2, sizeof b2), (unsigned long long)p->frees,
             (unsigned long long)p->unseen_frees);
    an_fit_line(out, line, a->width);
    fprintf(out, "  impacting types:\n");
    for (int t = 0; t < AN_NTYPES; t++) {
        snprintf(line, sizeof line, "    %s %10llu allocations %10s  (%s)", an_type_names[t],
                 (unsigned long long)p->type[t].count, ltr_size_format(p->type[t].bytes, b1, sizeof b1),
                 type_meaning[t]);
        an_fit_wrap(out, line, a->width, 38); /* the meaning under itself */
    }
}

/* "threads: main (1234), worker-1 (1235), ..." as the trace names them. */
/* The first THREADS_SHOWN, then how many more: python3's http.server makes a
 * thread a request, and hundreds of names made one line of thousands of
 * characters (a review); `--format json` lists them all. Built in memory,
 * not in a fixed buffer, which once cut a line of 400 names mid-word. */
#define THREADS_SHOWN 12

static void print_threads(ltr_analysis *a, FILE *out, const an_proc *p)
{
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (!m)
        return;
    fputs("  threads:", m);
    unsigned n = 0;
    size_t pos = 0;
    for (const ltr_thread *t; (t = an_proc_thread_next(a, p, &pos));)
        if (n++ < THREADS_SHOWN)
            fprintf(m, "%s %s (%u)", n > 1 ? "," : "", t->name && *t->name ? t->name : "?", t->tid);
    if (n > THREADS_SHOWN)
        fprintf(m, ", and %u more (--format json lists them)", n - THREADS_SHOWN);
    if (fclose(m) == 0 && n) {
        line[ltr_shown_text(line, len, line, false)] = 0; /* a thread names itself: one line */
        an_fit_line(out, line, a->width);
    }
    free(line);
}

static void print_window(ltr_analysis *a, FILE *out)
{
    fprintf(out, "trace: %s\nwindow: %.6f s .. %.6f s (%.6f s)%s\n", ltr_trace_path(a->trace),
            an_seconds(a, a->win_start), an_seconds(a, a->win_end),
            (double)(a->win_end - a->win_start) / 1e9,
            a->from_set || a->to_set ? "" : ", the whole trace");
    for (size_t i = 0; i < a->nwarnings; i++) {
        char w[4096];
        snprintf(w, sizeof w, "warning: %s", a->warnings[i]);
        an_fit_wrap(out, w, a->width, 2); /* a warning is read whole: wrapped, never cut */
    }
}

/* Highest peak first; then by pid, so that the report is the same each time. */
static int by_peak(const void *x, const void *y)
{
    const an_proc *a = *(an_proc *const *)x, *b = *(an_proc *const *)y;
    if (a->peak_bytes != b->peak_bytes)
        return a->peak_bytes > b->peak_bytes ? -1 : 1;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

/* The window's totals: processes, events, the outstanding and the peak,
 * and what processes that ended left (filled into *ended) */
static void print_totals(ltr_analysis *a, FILE *out, size_t n, size_t replaced, an_ended_sum *ended)
{
    an_proc sum;
    an_totals(a, &sum);
    char ob[32], peak[48], line[1024];
    /* the peak is taken at heap events inside the window (docs/analysis.md):
     * with none there is none, and "peak 0 B" beside 10 MiB outstanding
     * said the memory was gone; the process lines leave it out the same way */
    if (sum.peak_set)
        snprintf(peak, sizeof peak, "peak %s", ltr_size_format(sum.peak_bytes, ob, sizeof ob));
    else
        snprintf(peak, sizeof peak, "no peak (no heap event in the window)");
    /* the event count is the trace's; the calls are the window's. Each
     * image an exec replaced is listed as a process of its own, but it is
     * not one: python3 through pyenv's shims said "80 process(es)" of 41
     * (a review) */
    char images[96] = "";
    if (replaced)
        snprintf(images, sizeof images, " (%zu program images, %zu of them replaced by an exec)", n, replaced);
    snprintf(line, sizeof line,
             "\n%zu process(es)%s, %llu heap events%s: %llu allocations, %llu frees; outstanding at the window's end "
             "%s in %llu allocations; %s",
             n - replaced, images, (unsigned long long)a->heap_events, a->from_set || a->to_set ? " in the trace, in the window" : "",
             (unsigned long long)sum.allocs, (unsigned long long)sum.frees,
             ltr_size_format(sum.type[AN_AIFO].bytes + sum.type[AN_AOFO].bytes, ob, sizeof ob),
             (unsigned long long)(sum.type[AN_AIFO].count + sum.type[AN_AOFO].count), peak);
    an_fit_text(out, line, a->width);
    an_ended_totals(a, ended);
    if (ended->count) { /* the outstanding can then be more than the peak: a build's compilers each left theirs */
        snprintf(line, sizeof line, "of the outstanding, %s in %llu allocations is what %zu %s never freed "
                 "before they ended (by the window's end): their leaks at exit, not memory held then",
                 ltr_size_format(ended->bytes, ob, sizeof ob), (unsigned long long)ended->count, ended->processes,
                 replaced ? "program image(s)" : "process(es)");
        an_fit_text(out, line, a->width);
    }
}

/* The processes to list, into shown (n of them at most), saying which are
 * not; returns how many */
static size_t pick_shown(ltr_analysis *a, FILE *out, an_proc *const *procs, size_t n, size_t replaced,
                         const an_ended_sum *ended, an_proc **shown)
{
    char line[1024];
    /* processes that ended before the window began: nothing of theirs is in it (a review found them listed) */
    size_t listed = 0, later = 0;
    for (size_t i = 0; i < n; i++) {
        /* nor those whose first heap event came after the window: all zeros (a review) */
        bool after = a->to_set && procs[i]->first_ts > a->win_end;
        later += after;
        if (!an_ended_before(a, procs[i]) && !after)
            shown[listed++] = procs[i];
    }
    if (ended->before || later) {
        snprintf(line, sizeof line, "%zu process(es) ended before the window began, %zu began after it ended: not "
                 "listed (--format json or csv lists them)", ended->before, later);
        an_fit_text(out, line, a->width);
    }
    if (!a->processes || listed <= a->processes)
        return listed;
    /* a build's thousands of processes were a report of millions of
     * lines (200 pyenv python3 starts: 8 202 processes, 4.8 M lines):
     * the highest peaks, and the way to the others */
    qsort(shown, listed, sizeof *shown, by_peak);
    snprintf(line, sizeof line,
             "the %zu %s with the highest peak, of %zu (--processes 0: all of them; --pid P: one; "
             "--format json or csv: all, each with its figures)", (size_t)a->processes,
             replaced ? "program images" : "processes", listed);
    an_fit_text(out, line, a->width);
    return a->processes;
}

static int write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    print_window(a, out);
    size_t n;
    an_proc *const *procs = an_procs(a, &n);
    char line[1024];
    if (!a->heap_events && a->nsnaps) {
        /* a heapsnapshot session's trace: "0 process(es), 0 heap events ...
         * outstanding 0 B" above its snapshots' hundreds of KiB read as if
         * nothing were held (a new user's review) */
        snprintf(line, sizeof line, "\nno heap events: the trace holds %zu heap snapshot(s), each process's live "
                 "blocks by stack (below)", a->nsnaps);
        an_fit_text(out, line, a->width);
        an_mem_write_text(a, out);
        return an_write_snapshots_text(a, out, top);
    }
    size_t replaced = an_images_replaced(a);
    an_ended_sum ended;
    print_totals(a, out, n, replaced, &ended);
    an_proc **shown = malloc((n ? n : 1) * sizeof *shown);
    if (!shown)
        return -ENOMEM;
    size_t nshown = pick_shown(a, out, procs, n, replaced, &ended, shown);
    for (size_t i = 0; i < nshown; i++) {
        const an_proc *p = shown[i];
        char exe[1024];
        snprintf(line, sizeof line, "\nprocess %u %s", p->pid, an_proc_exe_shown(a, p, exe, sizeof exe));
        an_fit_line(out, line, a->width);
        print_figures(a, out, p);
        print_threads(a, out, p);
        print_list(a, out, p, AN_RANK_OUTSTANDING, top);
        print_list(a, out, p, AN_RANK_CALLS, top);
        print_list(a, out, p, AN_RANK_TEMPORARY, top);
        print_histogram(out, p);
    }
    free(shown);
    an_mem_write_text(a, out);
    return an_write_snapshots_text(a, out, top);
}

/* At a width, the report's sections shorten their own lines (frames by
 * their names, sentences wrapped); every line is then held to the width as a
 * last resort, so that the sections written without it (memory counters,
 * snapshots, the histogram) fit too. */
int an_write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    if (!a->width)
        return write_text(a, out, top);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return write_text(a, out, top);
    int rc = write_text(a, m, top);
    fclose(m);
    for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        an_fit_line(out, line, a->width);
    }
    free(buf);
    return rc;
}
