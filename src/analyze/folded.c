/*
 * analyze/folded.c — folded stacks, the input of flamegraph.pl: one line per
 * stack, "program;outermost;...;innermost VALUE", with VALUE the bytes the
 * stack holds at the window's end (AIFO + AOFO). The root is the program's
 * file name without its pid, so that two runs compare (difffolded.pl); the
 * start-up and allocator frames are hidden unless --full-stacks (frames.c).
 * Inlined calls are frames of their own. ';' inside a name would split a
 * frame, so it becomes ':'.
 * With --snapshot N, VALUE is the bytes of the stack's live blocks in that
 * heap snapshot.
 * One line per distinct string, its values summed: two call sites of one
 * function are two stacks of the trace but one line of names, and a
 * consumer may take the second line for the first's replacement (5 of 42
 * lines of a python3 program twice over, 45 of 249 of node's). The lines
 * are gathered, sorted and merged, then written in that order; the CPU
 * samples' folded stacks (cpu.c) are merged by the same functions.
 */
#include "analyze/internal.h"
#include "prim/prim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void name(FILE *out, const ltr_sym_frame *f)
{
    char buf[1024];
    if (f->function)
        snprintf(buf, sizeof buf, "%s", f->function);
    else if (f->module) {
        const char *b = strrchr(f->module, '/');
        snprintf(buf, sizeof buf, "%s+0x%llx", b ? b + 1 : f->module, (unsigned long long)f->offset);
    } else
        snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)f->address);
    for (char *c = buf; *c; c++)
        if (*c == ';' || *c == '\n' || *c == '\r')
            *c = ':';
    fputs(buf, out);
}

static char *folded_text; /* the buffer by_text compares in (qsort has no argument) */

static int by_text(const void *x, const void *y)
{
    return strcmp(folded_text + ((const an_folded_line *)x)->at, folded_text + ((const an_folded_line *)y)->at);
}

int an_folded_open(an_folded *f)
{
    memset(f, 0, sizeof *f);
    f->m = open_memstream(&f->text, &f->len);
    return f->m ? 0 : -ENOMEM;
}

FILE *an_folded_begin(an_folded *f)
{
    if (f->failed || ltr_reserve((void **)&f->v, &f->cap, f->n, sizeof *f->v, 1024) != 0) {
        f->failed = 1;
        return NULL;
    }
    f->at = ftello(f->m);
    return f->m;
}

void an_folded_end(an_folded *f, uint64_t value)
{
    fputc(0, f->m);
    f->v[f->n++] = (an_folded_line){(size_t)f->at, value};
}

size_t an_folded_finish(an_folded *f, FILE *out)
{
    if (fclose(f->m) != 0)
        f->failed = 1;
    size_t lines = 0;
    folded_text = f->text;
    if (!f->failed && f->n) /* none: no array at all, which qsort must not be given (UBSan) */
        qsort(f->v, f->n, sizeof *f->v, by_text);
    for (size_t i = 0; !f->failed && i < f->n; lines++) {
        uint64_t sum = 0;
        size_t j = i;
        for (; j < f->n && !strcmp(f->text + f->v[j].at, f->text + f->v[i].at); j++)
            sum += f->v[j].value;
        fprintf(out, "%s %llu\n", f->text + f->v[i].at, (unsigned long long)sum);
        i = j;
    }
    free(f->text);
    free(f->v);
    return lines;
}

/* The stack's line, if it holds anything: 1 when taken. */
static int line(ltr_analysis *a, an_folded *fo, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    uint64_t bytes = s->type[AN_AIFO].bytes + s->type[AN_AOFO].bytes;
    FILE *out = bytes ? an_folded_begin(fo) : NULL;
    if (!out)
        return 0;
    /* the root is the program, not its pid: two runs' stacks then compare */
    /* the file's name taken before it is cut to the buffer: a path of more
     * than the buffer left a piece of a directory's name as the root */
    const char *exe = an_stack_exe(a, s), *b = strrchr(exe, '/'), *base = b ? b + 1 : exe;
    char shown[1024];
    shown[ltr_shown_text(base, strnlen(base, sizeof shown - 1), shown, false)] = 0;
    if (*exe)
        for (const char *c = shown; *c; c++) /* one line, and a ';' would split the root */
            fputc(*c == ';' ? ':' : *c, out);
    else
        fprintf(out, "pid %u", s->pid);
    for (size_t n = an_frames_shown(a, s, f, AN_MAX_FRAMES); n-- > 0;) {
        fputc(';', out);
        name(out, &f[n]);
    }
    an_folded_end(fo, bytes);
    return 1;
}

/* The snapshot's stacks, or the window's of every process, into f. */
static void gather(ltr_analysis *a, an_folded *f)
{
    size_t np;
    if (a->export_snap) { /* a heap snapshot's live bytes by stack */
        an_stack *v = an_snapshot_stacks(a->export_snap, &np);
        f->failed |= !v;
        for (size_t k = 0; v && k < np; k++)
            line(a, f, &v[k]);
        free(v);
        return;
    }
    an_proc *const *procs = an_procs(a, &np);
    for (size_t i = 0; i < np; i++)
        for (size_t k = 0; k < procs[i]->nstacks; k++)
            line(a, f, &procs[i]->stacks[k]);
}

int an_write_folded(ltr_analysis *a, FILE *out)
{
    an_folded f;
    if (an_folded_open(&f) != 0)
        return -ENOMEM;
    gather(a, &f);
    size_t lines = an_folded_finish(&f, out);
    if (f.failed)
        return -ENOMEM;
    if (a->export_snap) {
        if (!lines)
            an_warn(a, "the heap snapshot holds no live block: the folded stacks are empty");
        return 0;
    }
    /* an empty file is what flamegraph.pl refuses ("No stack counts found"): say why */
    if (!lines && !an_warn_no_heap_stacks(a, "the folded stacks are empty", true))
        an_warn(a, "nothing was outstanding at the window's end: the folded stacks are empty; --to T shows an "
                "earlier moment ('ltr analyze' names the peak and when), --format pprof the allocations too");
    return 0;
}
