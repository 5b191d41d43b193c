/*
 * analyze/out_json.c — the JSON report, documented in docs/analysis.md. Its
 * keys are stable: scripts read them. New keys may be added; none is removed
 * or changes meaning without a new "version".
 */
#include "analyze/internal.h"

#include <stdlib.h>
#include <string.h>

static void jstr(FILE *out, const char *s)
{
    if (s)
        ltr_print_json_string(out, s, strlen(s));
    else
        fputs("null", out);
}

static void jframe(FILE *out, const ltr_sym_frame *f)
{
    fputs("{\"function\":", out);
    jstr(out, f->function);
    fputs(",\"file\":", out);
    jstr(out, f->file);
    if (f->file)
        fprintf(out, ",\"line\":%u", f->line);
    else
        fputs(",\"line\":null", out);
    fputs(",\"module\":", out);
    jstr(out, f->module);
    fprintf(out, ",\"address\":\"0x%llx\",\"offset\":\"0x%llx\",\"inlined\":%s}",
            (unsigned long long)f->address, (unsigned long long)f->offset, f->inlined ? "true" : "false");
}

void an_json_frames(ltr_analysis *a, FILE *out, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    size_t n = a->page_frames ? an_frames_shown(a, s, f, AN_MAX_FRAMES) : an_frames(a, s, f, AN_MAX_FRAMES);
    fputs("\"frames\":[", out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        jframe(out, &f[i]);
    }
    fputc(']', out);
}

static void jtypes(FILE *out, const an_amount *type)
{
    fputs("\"types\":{", out);
    for (int t = 0; t < AN_NTYPES; t++)
        fprintf(out, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu}", t ? "," : "", an_type_names[t],
                (unsigned long long)type[t].count, (unsigned long long)type[t].bytes);
    fputc('}', out);
}

static void jpeak(ltr_analysis *a, FILE *out, int set, uint64_t bytes, uint64_t ts)
{
    fprintf(out, "\"peak_bytes\":%llu,\"peak_s\":", (unsigned long long)bytes);
    if (set)
        fprintf(out, "%.9f", an_seconds(a, ts));
    else
        fputs("null", out);
}

/* The figures a process and the summary share. */
static void jfigures(ltr_analysis *a, FILE *out, const an_proc *p)
{
    fprintf(out, "\"allocations\":%llu,\"allocated_bytes\":%llu,\"frees\":%llu,\"unseen_frees\":%llu,"
                 "\"outstanding_bytes\":%llu,\"outstanding_allocations\":%llu,",
            (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes, (unsigned long long)p->frees,
            (unsigned long long)p->unseen_frees,
            (unsigned long long)(p->type[AN_AIFO].bytes + p->type[AN_AOFO].bytes),
            (unsigned long long)(p->type[AN_AIFO].count + p->type[AN_AOFO].count));
    jpeak(a, out, p->peak_set, p->peak_bytes, p->peak_ts);
    fputc(',', out);
    jtypes(out, p->type);
}

static void jhistogram(FILE *out, const an_proc *p)
{
    fputs("\"histogram\":[", out);
    int first = 1;
    for (int b = 0; b < AN_HIST_BUCKETS; b++) {
        if (!p->hist[b])
            continue;
        uint64_t lo = b ? 1ull << (b - 1) : 0, hi = b ? (b == 64 ? UINT64_MAX : (1ull << b) - 1) : 0;
        fprintf(out, "%s{\"min\":%llu,\"max\":%llu,\"count\":%llu}", first ? "" : ",",
                (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)p->hist[b]);
        first = 0;
    }
    fputc(']', out);
}

static void jhead(ltr_analysis *a, FILE *out)
{
    fputs("{\"format\":\"ltr-analysis\",\"version\":1,\"trace\":", out);
    jstr(out, ltr_trace_path(a->trace));
    fprintf(out, ",\"window\":{\"from_s\":%.9f,\"to_s\":%.9f,\"whole_trace\":%s},\"warnings\":[",
            an_seconds(a, a->win_start), an_seconds(a, a->win_end),
            a->from_set || a->to_set ? "false" : "true");
    for (size_t i = 0; i < a->nwarnings; i++) {
        if (i)
            fputc(',', out);
        jstr(out, a->warnings[i]);
    }
    fputs("]", out);
    if (a->page_frames && a->model.cell_width) /* ltr report: the grid of the stacks' cells */
        fprintf(out, ",\"cells\":{\"base_s\":%.9f,\"width_s\":%.9f,\"count\":%d}", an_seconds(a, a->model.cell_base),
                (double)a->model.cell_width / 1e9, AN_CELLS);
}

/* ltr report: a stack's blocks by time cell, [alloc, freed (-1: outstanding), count, bytes]. */
static void jcells(FILE *out, const an_stack *s)
{
    fputs("\"cells\":[", out);
    size_t pos = 0, n = 0;
    an_cell *c;
    while (s->cells && (c = an_hmap_next(s->cells, &pos))) {
        uint32_t f = (uint32_t)c->key;
        fprintf(out, "%s[%u,%d,%llu,%llu]", n++ ? "," : "", (uint32_t)(c->key >> 32), f == AN_CELL_NEVER ? -1 : (int)f,
                (unsigned long long)c->count, (unsigned long long)c->bytes);
    }
    fputs("],", out);
}

static void jsummary(ltr_analysis *a, FILE *out, size_t nprocs)
{
    an_proc sum;
    an_totals(a, &sum);
    fprintf(out, ",\"summary\":{\"duration_s\":%.9f,\"events\":%llu,\"events_lost\":%llu,\"events_unwritten\":%llu,"
                 "\"events_overwritten\":%llu,\"heap_events\":%llu,\"damage\":%llu,\"forged_records\":%llu,"
                 "\"complete\":%s,"
                 "\"processes\":%zu,",
            (double)(a->win_end - a->win_start) / 1e9, (unsigned long long)a->events,
            (unsigned long long)a->events_lost, (unsigned long long)a->events_unwritten,
            (unsigned long long)a->events_overwritten,
            (unsigned long long)a->heap_events, (unsigned long long)ltr_analysis_damage(a),
            (unsigned long long)a->forged,
            a->sum.complete ? "true" : "false", nprocs);
    jfigures(a, out, &sum);
    an_ended_sum ended;
    an_ended_totals(a, &ended);
    fprintf(out, ",\"ended_processes\":%zu,\"ended_before_window\":%zu,\"never_freed_by_ended_bytes\":%llu,"
                 "\"never_freed_by_ended_allocations\":%llu",
            ended.processes, ended.before, (unsigned long long)ended.bytes, (unsigned long long)ended.count);
    /* "processes" counts the images (each an entry of the list): those an exec replaced */
    fprintf(out, ",\"images_replaced_by_exec\":%zu", an_images_replaced(a));
    fputc('}', out);
}

typedef struct an_index_count {
    uint64_t key;
    uint64_t n;
} an_index_count;

static void jlist(ltr_analysis *a, FILE *out, const char *key, an_rank rank, unsigned top)
{
    static const char *const count_key[] = {"count", "calls", "temporary"};
    static const char *const bytes_key[] = {"bytes", "bytes", "calls"};
    fprintf(out, ",\"%s\":[", key);
    size_t n;
    an_entry *e = an_ranked_all(a, rank, top, &n);
    size_t shown = 0;
    an_hmap seen; /* pid -> its entries shown: a scan of the processes for each entry was quadratic
                   * (8 202 processes: 9 % of the analysis) */
    an_hmap_init(&seen, sizeof(an_index_count));
    /* ltr report's page: at most AN_PAGE_STACKS of each list, the best of all
     * processes (e is in the ranking's order across them), so that the page
     * does not grow with the number of processes: top 50 of each of the 1762
     * processes of a shell loop made a page of 523 MB that Chromium never drew */
    size_t limit = a->page_frames ? AN_PAGE_STACKS : SIZE_MAX;
    for (size_t i = 0; i < n && shown < limit; i++) {
        /* top per process (each image of an exec'd one too), as in text */
        an_index_count *c = top ? an_hmap_put(&seen, (uint64_t)e[i].proc->gen << 32 | e[i].proc->pid, NULL) : NULL;
        if (top && (!c || c->n++ >= top))
            continue;
        /* image: which of the pid's (an exec'd process's images number their stacks each from 1) */
        fprintf(out, "%s{\"pid\":%u,\"image\":%u,\"stack_id\":%u,", shown++ ? "," : "", e[i].proc->pid,
                e[i].proc->gen, e[i].stack->stack_id);
        if (rank == AN_RANK_OUTSTANDING) {
            /* how steadily its AIFO bytes came (rank.c), and their growth per minute of the window */
            int aifo = e[i].type == AN_AIFO;
            double spread = aifo ? an_held_spread(a, e[i].stack) : 0;
            double minutes = (double)(a->win_end - a->win_start) / 60e9;
            fprintf(out, "\"type\":\"%s\",\"spread\":%.3f,\"growth_bytes_per_min\":%.0f,", an_type_names[e[i].type],
                    spread, aifo && e[i].growth == AN_GROWING && minutes > 0 ? (double)e[i].bytes / minutes : 0.0);
            if (aifo) /* the text's label, and the frees that tell a cache turning over */
                fprintf(out, "\"growth\":\"%s\",\"freed_count\":%llu,", an_growth_names[e[i].growth],
                        (unsigned long long)e[i].stack->freed.count);
            if (aifo && e[i].stack->held_first) /* when its first and last such block came */
                fprintf(out, "\"held_s\":[%.6f,%.6f],", an_seconds(a, e[i].stack->held_first),
                        an_seconds(a, e[i].stack->held_last));
        }
        fprintf(out, "\"%s\":%llu,\"%s\":%llu,", bytes_key[rank], (unsigned long long)e[i].bytes,
                count_key[rank], (unsigned long long)e[i].count);
        if (a->page_frames)
            jcells(out, e[i].stack);
        an_json_frames(a, out, e[i].stack);
        fputc('}', out);
    }
    an_hmap_free(&seen);
    free(e);
    fputc(']', out);
}

/* Modules shown without symbols, and where their debug files would be found. */
static void jnosyms(const ltr_analysis *a, FILE *out)
{
    fputs(",\"modules_without_symbols\":[", out);
    for (size_t i = 0; i < a->nnosyms; i++) {
        fputs(i ? ",{\"path\":" : "{\"path\":", out);
        jstr(out, a->nosyms[i].path);
        fputs(",\"build_id\":", out);
        jstr(out, a->nosyms[i].build_id);
        fputs(",\"debug_file\":", out);
        jstr(out, a->nosyms[i].debug_file);
        fputc('}', out);
    }
    fputc(']', out);
}

/* ,"threads":[{"tid":1234,"name":"main"},...]: the process's threads as
 * the trace names them (the text report's "threads:" line). */
static void jthreads(ltr_analysis *a, FILE *out, const an_proc *p)
{
    fputs(",\"threads\":[", out);
    unsigned n = 0;
    size_t pos = 0;
    for (const ltr_thread *t; (t = an_proc_thread_next(a, p, &pos));) {
        fprintf(out, "%s{\"tid\":%u,\"name\":", n++ ? "," : "", t->tid);
        jstr(out, t->name ? t->name : "");
        fputc('}', out);
    }
    fputc(']', out);
}

int an_write_json(ltr_analysis *a, FILE *out, unsigned top)
{
    size_t n;
    an_proc *const *procs = an_procs(a, &n);
    jhead(a, out);
    jsummary(a, out, n);
    fputs(",\"processes\":[", out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s{\"pid\":%u,\"image\":%u,\"exe\":", i ? "," : "", procs[i]->pid, procs[i]->gen);
        jstr(out, an_proc_exe(a, procs[i]));
        fputc(',', out);
        jfigures(a, out, procs[i]);
        fputs(",\"ended_s\":", out); /* by the window's end: its outstanding blocks are what it never freed */
        if (an_ended_by_end(a, procs[i]))
            fprintf(out, "%.9f", an_seconds(a, procs[i]->end_ts));
        else
            fputs("null", out);
        fprintf(out, ",\"replaced_by_exec\":%s", an_proc_replaced_by_exec(a, procs[i]) ? "true" : "false");
        fputc(',', out);
        jhistogram(out, procs[i]);
        jthreads(a, out, procs[i]);
        fputc('}', out);
    }
    fputc(']', out);
    jlist(a, out, "stacks", AN_RANK_OUTSTANDING, top);
    jlist(a, out, "most_calls", AN_RANK_CALLS, top);
    jlist(a, out, "most_temporary", AN_RANK_TEMPORARY, top);
    an_write_snapshots_json(a, out, top);
    jnosyms(a, out);
    fputc(',', out);
    an_mem_write_json(a, out);
    fputs("}\n", out);
    return 0;
}
