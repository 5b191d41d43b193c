/*
 * analyze/symbolize.c — the analysis's symbolizer (symbols.h): fed the MODULE
 * records as the scan meets them, so that it opens their files and debug
 * info on a thread of its own while the events stream (the costly part of
 * symbolizing, tens of milliseconds for libc's compressed DWARF), and at the
 * report resolves the frames of the stacks it shows. The results are those
 * of a symbolizer made after the scan: lookups wait for the thread, and only
 * the files a lookup needed are named in warnings. The names a trace holds
 * (its SYMBOLS chunks, embed.c) are given to the symbolizer before any
 * module, so that the files they cover are never opened.
 */
#include "analyze/internal.h"
#include "format/symchunk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* LTR_ANALYZE_PREWARM=0 opens the files only when the report needs them. */
static int wants_prewarm(void)
{
    const char *e = getenv("LTR_ANALYZE_PREWARM");
    return !(e && !strcmp(e, "0"));
}

typedef struct known_ctx {
    ltr_symbolizer *sym;
    size_t n;
} known_ctx;

static void add_known(void *ctx, const ltr_symmodule *m, uint64_t offset, const ltr_symframe *frames, size_t n)
{
    known_ctx *k = ctx;
    ltr_sym_frame f[LTR_SYMCHUNK_MAX_FRAMES];
    for (size_t i = 0; i < n; i++)
        f[i] = (ltr_sym_frame){.function = frames[i].function, .file = frames[i].file, .line = frames[i].line};
    if (ltr_symbolizer_add_known(k->sym, m->path, m->build_id, m->build_id_len, offset, f, n) < 0)
        return;
    k->n++;
    if (m->flags & LTR_SYMMODULE_BARE)
        ltr_symbolizer_known_bare(k->sym, m->path, m->build_id, m->build_id_len);
}

size_t an_known_symbols(ltr_trace *t, ltr_symbolizer *s)
{
    known_ctx k = {s, 0};
    ltr_trace_read_symbols(t, add_known, &k); /* an I/O error: the files are opened instead */
    return k.n;
}

/* The symbolizer, given every module record read so far; NULL once memory ran out. */
static ltr_symbolizer *symbolizer(ltr_analysis *a)
{
    if (!a->sym && !a->sym_failed) {
        a->sym = ltr_symbolizer_new(a->debug_path);
        a->sym_failed = !a->sym;
        if (a->sym && !a->local_symbols)
            a->known_symbols = an_known_symbols(a->trace, a->sym);
    }
    if (a->sym && an_load_modules(a->trace, a->sym, a->pid_set, a->pid, &a->modules_added) < 0) {
        ltr_symbolizer_free(a->sym);
        a->sym = NULL;
        a->sym_failed = 1;
    }
    return a->sym;
}

void an_symbols_update(ltr_analysis *a)
{
    if (a->sym_failed || !wants_prewarm())
        return;
    size_t before = a->modules_added;
    ltr_symbolizer *s = symbolizer(a);
    if (a->known_symbols) /* every stack was resolved where the trace was made: what it did not name */
        return;          /* could not be named there, and opening files for it is rarely worth it */
    if (s && (a->modules_added > before || a->prewarm_pending))
        a->prewarm_pending = ltr_symbolizer_prewarm(s) == -EBUSY;
}

void an_symbols_read_all(ltr_analysis *a)
{
    if (a->sym_failed || !wants_prewarm() || !a->known_symbols)
        return; /* without the trace's names every file was prewarmed already */
    ltr_symbolizer *s = symbolizer(a);
    if (s)
        ltr_symbolizer_prewarm_bare(s); /* else the lookups open them */
}

/* Resolves the frames of the stacks a report of fmt with top entries per list
 * will show: pprof, folded and CSV (and top 0) show every stack, text and
 * JSON the top of three rankings per process. A trace may hold far more
 * stacks than a report lists, and resolving a frame is the costly part. */
static void resolve_reported(ltr_analysis *a, ltr_report_format fmt, unsigned top)
{
    static ltr_sym_frame frames[AN_MAX_FRAMES];
    int all = !top || fmt == LTR_REPORT_CSV || fmt == LTR_REPORT_PPROF || fmt == LTR_REPORT_FOLDED;
    for (size_t i = 0; i < a->model.nprocs; i++) {
        const an_proc *p = a->model.procs[i];
        for (size_t k = 0; all && k < p->nstacks; k++)
            an_frames(a, &p->stacks[k], frames, AN_MAX_FRAMES);
        an_entry *e[3] = {NULL, NULL, NULL};
        size_t n[3] = {0, 0, 0};
        if (!all)
            an_ranked_each(a, p, top, e, n); /* without memory none, kept as none: the writer ranks again */
        for (an_rank r = AN_RANK_OUTSTANDING; !all && r <= AN_RANK_TEMPORARY; r++) {
            for (size_t k = 0; e[r] && k < n[r]; k++)
                an_frames(a, e[r][k].stack, frames, AN_MAX_FRAMES);
            an_ranked_keep(a, p, r, top, e[r], n[r]); /* for the writer (rank.c) */
            free(e[r]);
        }
    }
    if (!all)
        an_ranked_kept_all(a);
}

/* The first debug directory of --debug-dir (as given to elfutils), else
 * the system's: where a debug file found by build-id is looked for. */
static char *debug_dir(const ltr_analysis *a)
{
    for (const char *p = a->debug_path; p && *p;) {
        size_t n = strcspn(p, ":");
        if (p[0] == '/')
            return strndup(p, n);
        p += n + (p[n] == ':');
    }
    return strdup("/usr/lib/debug");
}

/* Whether a module of that build-id was said already: one file under two
 * paths (git's /usr/bin/git and /usr/lib/git-core/git, hard links) is one
 * warning, whose fix serves both. */
static bool nosyms_known(const ltr_analysis *a, const uint8_t *id, size_t idlen)
{
    char hex[2 * 64 + 1];
    if (!idlen || idlen > 64)
        return false;
    for (size_t i = 0; i < idlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    for (size_t i = 0; i < a->nnosyms; i++)
        if (a->nosyms[i].build_id && !strcmp(a->nosyms[i].build_id, hex))
            return true;
    return false;
}

static void note_nosyms(ltr_analysis *a, const char *path, const uint8_t *id, size_t idlen)
{
    if (nosyms_known(a, id, idlen))
        return;
    an_nosyms *v = realloc(a->nosyms, (a->nnosyms + 1) * sizeof *v);
    if (!v)
        return;
    a->nosyms = v;
    an_nosyms *m = &v[a->nnosyms];
    *m = (an_nosyms){strdup(path), NULL, NULL};
    char *dir = debug_dir(a);
    if (idlen && (m->build_id = malloc(2 * idlen + 1))) {
        for (size_t i = 0; i < idlen; i++)
            snprintf(m->build_id + 2 * i, 3, "%02x", id[i]);
        if (dir && asprintf(&m->debug_file, "%s/.build-id/%.2s/%s.debug", dir, m->build_id, m->build_id + 2) < 0)
            m->debug_file = NULL;
    }
    free(dir);
    if (!m->path) {
        free(m->build_id);
        free(m->debug_file);
        return;
    }
    a->nnosyms++;
    an_warn(a, "module %s has no symbols here (no .symtab or DWARF in it, and no debug file found%s%s): "
            "only the functions it exports are named (.dynsym), its other frames show ?? with module+offset%s%s",
            path, m->build_id ? " for its build-id " : "", m->build_id ? m->build_id : "",
            m->debug_file ? "; its debug file would be " : "", m->debug_file ? m->debug_file : "");
}

/* Which modules shown have no symbols, and how to get them. */
static void warn_nosyms(ltr_analysis *a, ltr_symbolizer *s)
{
    size_t before = a->nnosyms;
    for (; a->nosyms_asked < ltr_symbolizer_nosyms_count(s); a->nosyms_asked++) {
        size_t i = a->nosyms_asked;
        const char *path;
        const uint8_t *id;
        size_t idlen;
        ltr_symbolizer_nosyms_at(s, i, &path, &id, &idlen);
        if (path)
            note_nosyms(a, path, id, idlen);
    }
    if (a->nnosyms > before)
        an_warn(a, "to name the frames of modules without symbols: install their debug packages (Debian: "
                "apt install PKG-dbgsym, where dpkg -S FILE names PKG, from the debian-debug archive), or let "
                "elfutils fetch them from debuginfod (DEBUGINFOD_URLS=https://debuginfod.debian.net), or put "
                "each debug file (objcopy --only-keep-debug) at DIR/.build-id/xx/yyyy.debug, named by its "
                "build-id, and pass --debug-dir DIR");
}

/* The warnings from `from` on are about modules without symbols: a range of
 * its own, or the last one grown when they follow it. */
static void note_symwarn(ltr_analysis *a, size_t from)
{
    size_t to = a->nwarnings;
    if (to == from)
        return;
    if (a->nsymwarn && a->symwarn[a->nsymwarn - 1][1] == from)
        a->symwarn[a->nsymwarn - 1][1] = to;
    else if (a->nsymwarn < AN_SYMWARN_RANGES)
        a->symwarn[a->nsymwarn][0] = from, a->symwarn[a->nsymwarn++][1] = to;
}

void an_symbolize_reported(ltr_analysis *a, ltr_report_format fmt, unsigned top)
{
    an_ranked_forget(a); /* an earlier report's lists are not this one's */
    if (fmt == LTR_REPORT_CHROME) /* counters and instants, no frame: none to name, no module to warn of */
        return;
    ltr_symbolizer *s = symbolizer(a);
    if (!s) {
        if (!a->sym_warned)
            an_warn(a, "out of memory while reading the modules: frames stay addresses");
        a->sym_warned = 1;
        return;
    }
    resolve_reported(a, fmt, top);
    size_t from = a->nwarnings;
    for (; a->problems_warned < ltr_symbolizer_problem_count(s); a->problems_warned++) {
        const char *path, *why;
        ltr_symbolizer_problem_at(s, a->problems_warned, &path, &why);
        an_warn(a, "module %s was not symbolized (%s): its frames show module+offset", path, why);
    }
    warn_nosyms(a, s);
    note_symwarn(a, from);
}

int ltr_analysis_warning_is_symbols(const ltr_analysis *a, size_t i)
{
    for (size_t r = 0; r < a->nsymwarn; r++)
        if (i >= a->symwarn[r][0] && i < a->symwarn[r][1])
            return 1;
    return 0;
}

size_t ltr_analysis_modules_unnamed(const ltr_analysis *a)
{
    return a->problems_warned + a->nnosyms;
}
