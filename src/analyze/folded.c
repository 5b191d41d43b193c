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

/* The stack's line, if it holds anything: 1 when written. */
static int line(ltr_analysis *a, FILE *out, const an_stack *s)
{
    static ltr_sym_frame f[AN_MAX_FRAMES];
    uint64_t bytes = s->type[AN_AIFO].bytes + s->type[AN_AOFO].bytes;
    if (!bytes)
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
    fprintf(out, " %llu\n", (unsigned long long)bytes);
    return 1;
}

int an_write_folded(ltr_analysis *a, FILE *out)
{
    size_t np, lines = 0;
    if (a->export_snap) { /* a heap snapshot's live bytes by stack */
        an_stack *v = an_snapshot_stacks(a->export_snap, &np);
        for (size_t k = 0; k < np; k++)
            lines += (size_t)line(a, out, &v[k]);
        free(v);
        if (v && !lines)
            an_warn(a, "the heap snapshot holds no live block: the folded stacks are empty");
        return v ? 0 : -ENOMEM;
    }
    an_proc *const *procs = an_procs(a, &np);
    for (size_t i = 0; i < np; i++)
        for (size_t k = 0; k < procs[i]->nstacks; k++)
            lines += (size_t)line(a, out, &procs[i]->stacks[k]);
    /* an empty file is what flamegraph.pl refuses ("No stack counts found"): say why */
    if (!lines && !an_warn_no_heap_stacks(a, "the folded stacks are empty", true))
        an_warn(a, "nothing was outstanding at the window's end: the folded stacks are empty; --to T shows an "
                "earlier moment ('ltr analyze' names the peak and when), --format pprof the allocations too");
    return 0;
}
