/*
 * analyze/out_csv.c — one row per call stack of each process for
 * spreadsheets and scripts: the four impacting types, calls, temporary
 * allocations, the innermost frame and the whole stack. Rows are ordered as
 * the report ranks stacks (AIFO bytes, then AOFO bytes); top limits the rows per process.
 */
#include "analyze/internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A text cell, quoted as RFC 4180 says. Names come from the traced program:
 * one that starts as a spreadsheet formula ('=', '+', '-', '@', a tab or a
 * carriage return) gets a leading "'", the spreadsheets' mark for text, or
 * the file would run "=HYPERLINK(...)" or "=cmd|..." in whoever opens it. */
static void cell(FILE *out, const char *s)
{
    if (!s)
        return;
    bool formula = *s && strchr("=+-@\t\r", *s);
    if (!formula && !strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    if (formula)
        fputc('\'', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void frame_text(const ltr_sym_frame *f, char *buf, size_t cap)
{
    if (f->function)
        snprintf(buf, cap, "%s", f->function);
    else if (f->module)
        snprintf(buf, cap, "%s+0x%llx", f->module, (unsigned long long)f->offset);
    else
        snprintf(buf, cap, "0x%llx", (unsigned long long)f->address);
}

static void row(ltr_analysis *a, FILE *out, const an_proc *p, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    size_t n = an_frames(a, s, f, AN_MAX_FRAMES);
    fprintf(out, "%u,%u,", p->pid, p->gen); /* image: an exec'd process's images number their stacks each from 1 */
    cell(out, an_proc_exe(a, p));
    fprintf(out, ",%u", s->stack_id);
    for (int t = 0; t < AN_NTYPES; t++)
        fprintf(out, ",%llu,%llu", (unsigned long long)s->type[t].count, (unsigned long long)s->type[t].bytes);
    fprintf(out, ",%llu,%llu,%llu,", (unsigned long long)s->calls.count, (unsigned long long)s->calls.bytes,
            (unsigned long long)s->temporary);
    char buf[1024];
    if (n) {
        frame_text(&f[0], buf, sizeof buf);
        cell(out, buf);
        fputc(',', out);
        cell(out, f[0].file);
        fprintf(out, ",%u,", f[0].file ? f[0].line : 0);
        cell(out, f[0].module);
    } else
        fputs(",,,", out);
    fputc(',', out);
    char *all = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&all, &len);
    for (size_t i = 0; m && i < n; i++) {
        frame_text(&f[i], buf, sizeof buf);
        fprintf(m, "%s%s", i ? ";" : "", buf);
    }
    if (m)
        fclose(m);
    cell(out, all);
    free(all);
    fputc('\n', out);
}

/* Stacks of p in report order: outstanding ones ranked, then the others. */
static void rows(ltr_analysis *a, FILE *out, const an_proc *p, unsigned top)
{
    size_t n, shown = 0;
    an_entry *e = an_ranked(a, p, AN_RANK_OUTSTANDING, 0, &n);
    uint8_t *done = calloc(p->nstacks + 1, 1);
    for (size_t i = 0; e && done && i < n && (!top || shown < top); i++) {
        size_t k = (size_t)(e[i].stack - p->stacks);
        if (!done[k]++) {
            row(a, out, p, e[i].stack);
            shown++;
        }
    }
    for (size_t k = 0; done && k < p->nstacks && (!top || shown < top); k++)
        if (!done[k]++) {
            row(a, out, p, &p->stacks[k]);
            shown++;
        }
    free(done);
    free(e);
}

int an_write_csv(ltr_analysis *a, FILE *out, unsigned top)
{
    fputs("pid,image,exe,stack_id,aifi_count,aifi_bytes,aifo_count,aifo_bytes,aofi_count,aofi_bytes,"
          "aofo_count,aofo_bytes,calls,call_bytes,temporary,function,file,line,module,frames\n",
          out);
    size_t n;
    an_proc *const *procs = an_procs(a, &n);
    for (size_t i = 0; i < n; i++)
        rows(a, out, procs[i], top);
    /* a header alone, silently, of a trace of snapshots (pprof and folded said it) */
    an_warn_no_heap_stacks(a, "the csv has its header alone", false);
    return 0;
}
