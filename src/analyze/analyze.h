/*
 * analyze/analyze.h — `ltr analyze` and `ltr export` as a library: reads a
 * trace once, streaming, through the heap model (model.h), then reports per
 * process and per call stack with symbolized frames (src/symbols), as text,
 * JSON (docs/analysis.md), CSV, pprof profile.proto or folded stacks.
 * The command files in src/cli only parse options and call these.
 */
#ifndef LTR_ANALYZE_H
#define LTR_ANALYZE_H

#include <ltr/common.h>

#include <stdint.h>
#include <stdio.h>

typedef struct ltr_analysis ltr_analysis;

typedef struct ltr_analyze_opts {
    const char *from, *to; /* seconds from the trace start, or the text of a marker, or
                            * "snapshot:N" (the difference between two heap snapshots); NULL = the trace's bounds */
    int pid_set;
    uint32_t pid;          /* only this process, when pid_set */
    int progress;          /* a progress bar on stderr when it is a terminal and the run is long */
    const char *debug_path; /* debug directories for separate debug info; NULL = elfutils' default */
    int trend;             /* rank stacks by their trend across heap snapshots; 1 asked (a trace without
                            * them is told so), 2 where there are (ltr report's page) */
    uint64_t snapshot;     /* ltr export: heap snapshot N (1-based) instead of the heap events; 0: none */
    int cpu;               /* the report is of the CPU samples (docs/system-provider.md) */
    int full_stacks;       /* text, folded, pprof: every frame, start-up and allocator ones too */
    unsigned width;        /* text: lines fitted to this many columns; 0: unlimited */
    unsigned processes;    /* text: past this many processes, those with the highest peak only; 0: all */
    int series;            /* keep each process's outstanding bytes over time, and the markers (chrome) */
    int page_frames;       /* json: each stack's frames as the text report shows them (ltr report's page) */
    int mapped;            /* the report is of the mappings the program made (VirtualAllocation) */
    int files;             /* the report is of the files the program worked on (FileIO) */
    int local_symbols;     /* frames resolved with this machine's files only, not the trace's SYMBOLS */
} ltr_analyze_opts;

typedef enum ltr_report_format {
    LTR_REPORT_TEXT = 1,
    LTR_REPORT_JSON = 2,
    LTR_REPORT_CSV = 3,
    LTR_REPORT_PPROF = 4,
    LTR_REPORT_FOLDED = 5,
    LTR_REPORT_CHROME = 6, /* Chrome's Trace Event Format: Perfetto, chrome://tracing (out_chrome.c) */
} ltr_report_format;

/* Reads the trace at path and analyzes it. Fails (-errno, err names the file or
 * the option) when the trace cannot be opened or read, or a window bound is
 * neither a number of seconds nor the text of a marker in the trace. Damage is
 * not a failure: the intact content is analyzed and the damage is reported. */
int ltr_analysis_run(const char *path, const ltr_analyze_opts *o, ltr_analysis **out, ltr_error *err);
void ltr_analysis_free(ltr_analysis *a);
/* Damage occurrences met in the trace that cost the analysis something (0 =
 * intact, or only records other traced programs wrote about a process, left
 * out without loss). */
uint64_t ltr_analysis_damage(const ltr_analysis *a);
/* CPU samples in the window (with opts.cpu). */
uint64_t ltr_analysis_cpu_samples(const ltr_analysis *a);
/* Warnings for people (lost events, damage, unseen frees, modules that could
 * not be symbolized), one line each; valid until ltr_analysis_free. */
size_t ltr_analysis_warning_count(const ltr_analysis *a);
const char *ltr_analysis_warning_at(const ltr_analysis *a, size_t i);
/* Whether warning i is about modules without symbols (one per module, and
 * how to get their symbols): ltr export says them in one line of its own,
 * ltr analyze whole. */
int ltr_analysis_warning_is_symbols(const ltr_analysis *a, size_t i);
/* The modules of the stacks reported so far that could not be named here
 * (no symbols, or not symbolized). */
size_t ltr_analysis_modules_unnamed(const ltr_analysis *a);
/* Writes the report; top = stacks per list (0 = all). Text, JSON and CSV go
 * to a text stream; pprof is binary (gzip). Returns 0 or -EIO. */
int ltr_analysis_write(ltr_analysis *a, FILE *out, ltr_report_format fmt, unsigned top);
/* What ltr_analysis_embed_symbols did. */
typedef struct ltr_embed_result {
    size_t entries;         /* addresses named, in all */
    size_t chunks;          /* SYMBOLS chunks added (0: nothing was named, or a failure) */
    uint64_t bytes;         /* bytes added to the file */
    size_t known;           /* addresses the trace named already (symbolized before) */
    uint64_t met;           /* frame addresses its stacks hold (0: no stack, nothing to name) */
    char *notes;            /* what reading perf maps met, a line each (malloc'd, NULL: none); the caller frees it */
} ltr_embed_result;
#define LTR_EMBED_PROGRESS 0x1u  /* progress on a terminal */
/* Addresses in no module are looked up in their process's perf map (JIT
 * code: symbols.h): only at the end of a recording, where it was made. */
#define LTR_EMBED_PERF_MAPS 0x2u
/* Resolves every frame address of the trace at path (its stack records and
 * frame nodes, read without its events) with this machine's files
 * (debug_path as ltr_analyze_opts', flags LTR_EMBED_*) and adds the names found,
 * that the trace does not hold yet (or holds from a symbol table only, where
 * DWARF names them now), to the file as SYMBOLS chunks after its last chunk
 * (docs/trace-format.md, "SYMBOLS chunks"). Refused (-EINVAL, err says why,
 * the file untouched) for a trace cut short or damaged; a write that fails
 * (a full disk) leaves the file as it was. Returns 0 or -errno. */
int ltr_analysis_embed_symbols(const char *path, const char *debug_path, unsigned flags, ltr_embed_result *res,
                               ltr_error *err);
/* "text", "json", "csv", "pprof", "folded" -> format, or 0. */
ltr_report_format ltr_report_format_parse(const char *name);

#endif
