/*
 * analyze/out_text.c — the report for people: warnings first, then per
 * process the figures of the window and the ranked stacks with their frames.
 */
#include "analyze/internal.h"

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
    fprintf(out, "%s", f->function ? f->function : "??");
    if (f->file)
        fprintf(out, " (%s:%u)", f->file, f->line);
    if (f->inlined)
        fprintf(out, " [inlined]");
    if (f->module)
        fprintf(out, "  %s+0x%llx", base_name(f->module), (unsigned long long)f->offset);
    else
        fprintf(out, "  0x%llx", (unsigned long long)f->address);
}

void an_text_frames(ltr_analysis *a, FILE *out, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    size_t n = an_frames(a, s, f, AN_MAX_FRAMES);
    if (n == 0)
        fprintf(out, "        (no stack recorded)\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "        ");
        an_print_frame(out, &f[i]);
        fputc('\n', out);
    }
}

static void print_list(ltr_analysis *a, FILE *out, const an_proc *p, an_rank rank, unsigned top)
{
    static const char *const titles[] = {
        "stacks holding memory at the window's end (AIFO first)",
        "stacks with the most allocation calls",
        "stacks with the most temporary allocations (freed right away)",
    };
    size_t n;
    an_entry *e = an_ranked(a, p, rank, top, &n);
    fprintf(out, "  %s:%s\n", titles[rank], n ? "" : " none");
    for (size_t i = 0; i < n; i++) {
        if (rank == AN_RANK_OUTSTANDING)
            fprintf(out, "    #%zu %s %llu bytes in %llu allocations\n", i + 1, an_type_names[e[i].type],
                    (unsigned long long)e[i].bytes, (unsigned long long)e[i].count);
        else if (rank == AN_RANK_CALLS)
            fprintf(out, "    #%zu %llu calls, %llu bytes\n", i + 1, (unsigned long long)e[i].count,
                    (unsigned long long)e[i].bytes);
        else
            fprintf(out, "    #%zu %llu temporary of %llu calls\n", i + 1, (unsigned long long)e[i].count,
                    (unsigned long long)e[i].bytes);
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

static void print_figures(ltr_analysis *a, FILE *out, const an_proc *p)
{
    uint64_t ob = p->type[AN_AIFO].bytes + p->type[AN_AOFO].bytes;
    uint64_t oc = p->type[AN_AIFO].count + p->type[AN_AOFO].count;
    fprintf(out, "  outstanding at the window's end: %llu bytes in %llu allocations\n",
            (unsigned long long)ob, (unsigned long long)oc);
    if (p->peak_set)
        fprintf(out, "  peak: %llu bytes at %.6f s\n", (unsigned long long)p->peak_bytes,
                an_seconds(a, p->peak_ts));
    fprintf(out, "  allocations: %llu (%llu bytes), frees: %llu, frees of unseen allocations: %llu\n",
            (unsigned long long)p->allocs, (unsigned long long)p->alloc_bytes,
            (unsigned long long)p->frees, (unsigned long long)p->unseen_frees);
    fprintf(out, "  impacting types:\n");
    for (int t = 0; t < AN_NTYPES; t++)
        fprintf(out, "    %s %10llu allocations %14llu bytes  (%s)\n", an_type_names[t],
                (unsigned long long)p->type[t].count, (unsigned long long)p->type[t].bytes,
                type_meaning[t]);
}

static void print_window(ltr_analysis *a, FILE *out)
{
    fprintf(out, "trace: %s\nwindow: %.6f s .. %.6f s (%.6f s)%s\n", ltr_trace_path(a->trace),
            an_seconds(a, a->win_start), an_seconds(a, a->win_end),
            (double)(a->win_end - a->win_start) / 1e9,
            a->from_set || a->to_set ? "" : ", the whole trace");
    for (size_t i = 0; i < a->nwarnings; i++)
        fprintf(out, "warning: %s\n", a->warnings[i]);
}

int an_write_text(ltr_analysis *a, FILE *out, unsigned top)
{
    print_window(a, out);
    an_proc sum;
    an_totals(a, &sum);
    size_t n;
    an_proc *const *procs = an_procs(a, &n);
    fprintf(out, "\n%zu process(es), %llu heap events: %llu allocations, %llu frees; outstanding at the "
                 "window's end %llu bytes in %llu allocations; peak %llu bytes\n",
            n, (unsigned long long)a->heap_events, (unsigned long long)sum.allocs,
            (unsigned long long)sum.frees,
            (unsigned long long)(sum.type[AN_AIFO].bytes + sum.type[AN_AOFO].bytes),
            (unsigned long long)(sum.type[AN_AIFO].count + sum.type[AN_AOFO].count),
            (unsigned long long)sum.peak_bytes);
    for (size_t i = 0; i < n; i++) {
        const an_proc *p = procs[i];
        fprintf(out, "\nprocess %u %s\n", p->pid, an_process_exe(a, p->pid));
        print_figures(a, out, p);
        print_list(a, out, p, AN_RANK_OUTSTANDING, top);
        print_list(a, out, p, AN_RANK_CALLS, top);
        print_list(a, out, p, AN_RANK_TEMPORARY, top);
        print_histogram(out, p);
    }
    an_mem_write_text(a, out);
    return an_write_snapshots_text(a, out, top);
}
