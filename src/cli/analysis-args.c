/*
 * cli/analysis-args.c — option parsing and exit status shared by
 * cmd-analyze.c and cmd-export.c (see analysis-args.h).
 */
#include "cli/analysis-args.h"
#include "cli/cli.h"
#include "format/blocks.h"
#include "prim/prim.h"

#include <ltr/trace.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int set_format(const char *cmd, const char *text, unsigned allowed, cli_analysis_args *out)
{
    ltr_report_format f = ltr_report_format_parse(text);
    if (!f || !(allowed & (1u << f))) {
        cli_fail(cmd, "--format: '%s' is not a format of this command (see 'ltr %s --help')", text, cmd);
        return -1;
    }
    out->format = f;
    return 0;
}

static int parse_option(const char *cmd, int c, unsigned allowed, cli_analysis_args *out)
{
    uint64_t v;
    switch (c) {
    case 'f': out->opts.from = optarg; return 0;
    case 't': out->opts.to = optarg; return 0;
    case 'p':
        if (cli_parse_u64(cmd, "--pid", optarg, 1, UINT32_MAX, &v) < 0)
            return -1;
        out->opts.pid = (uint32_t)v;
        out->opts.pid_set = 1;
        return 0;
    case 'n':
        if (cli_parse_u64(cmd, "--top", optarg, 0, 1000000, &v) < 0)
            return -1;
        out->top = (unsigned)v;
        return 0;
    case 'F': return set_format(cmd, optarg, allowed, out);
    case 'o': out->output = optarg; return 0;
    case 'W': out->force = 1; return 0;
    case 'd': out->opts.debug_path = optarg; return 0;
    case 'T': out->opts.trend = 1; return 0;
    case 'S':
        if (cli_parse_u64(cmd, "--snapshot", optarg, 1, UINT32_MAX, &v) < 0)
            return -1;
        out->opts.snapshot = v;
        return 0;
    case 'c': out->opts.cpu = 1; return 0;
    case 'A': out->opts.full_stacks = 1; return 0;
    case 'J': return set_format(cmd, "json", allowed, out); /* --json: --format json's old spelling */
    case 'w':
        if (cli_parse_u64(cmd, "--width", optarg, 0, 100000, &v) < 0)
            return -1;
        out->opts.width = (unsigned)v;
        out->width_set = 1;
        return 0;
    case 'P':
        if (cli_parse_u64(cmd, "--processes", optarg, 0, UINT32_MAX, &v) < 0)
            return -1;
        out->opts.processes = (unsigned)v;
        return 0;
    case 'M': out->opts.mapped = 1; return 0;
    case 'L': out->opts.files = 1; return 0;
    case 'Y': out->opts.local_symbols = 1; return 0;
    }
    return -1;
}

/* --from or --to snapshot:N: the difference of two heap snapshots (the
 * analysis tells a bad N; this only tells the kind of window). */
static int names_snapshot(const char *bound)
{
    return bound && !strncmp(bound, "snapshot:", 9);
}

int cli_analysis_parse(const char *cmd, int argc, char **argv, const char *usage, void (*help)(void),
                       unsigned formats_allowed, int is_export, cli_analysis_args *out)
{
    static const struct option analyze_opts[] = {
        {"from", 1, 0, 'f'}, {"to", 1, 0, 't'}, {"pid", 1, 0, 'p'}, {"top", 1, 0, 'n'},
        {"format", 1, 0, 'F'}, {"debug-dir", 1, 0, 'd'}, {"trend", 0, 0, 'T'}, {"help", 0, 0, 'h'},
        {"cpu", 0, 0, 'c'}, {"full-stacks", 0, 0, 'A'}, {"width", 1, 0, 'w'}, {"json", 0, 0, 'J'},
        {"mapped", 0, 0, 'M'}, {"files", 0, 0, 'L'}, {"local-symbols", 0, 0, 'Y'}, {"processes", 1, 0, 'P'},
        {0, 0, 0, 0}};
    static const struct option export_opts[] = {
        {"from", 1, 0, 'f'}, {"to", 1, 0, 't'}, {"pid", 1, 0, 'p'}, {"format", 1, 0, 'F'},
        {"output", 1, 0, 'o'}, {"debug-dir", 1, 0, 'd'}, {"force", 0, 0, 'W'}, {"snapshot", 1, 0, 'S'},
        {"help", 0, 0, 'h'}, {"cpu", 0, 0, 'c'}, {"full-stacks", 0, 0, 'A'}, {"local-symbols", 0, 0, 'Y'},
        {0, 0, 0, 0}};
    memset(out, 0, sizeof *out);
    out->top = 10;
    out->opts.processes = 10;
    out->format = is_export ? 0 : LTR_REPORT_TEXT;
    out->opts.progress = 1;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, is_export ? "ho:" : "h", is_export ? export_opts : analyze_opts,
                            NULL)) != -1) {
        if (c == 'h') {
            help();
            return 0;
        }
        if (c == '?' || c == ':') {
            cli_fail(cmd, "unknown option or missing value: '%s'", cli_bad_option(argc, argv));
            return cli_usage_error(cmd, usage);
        }
        if (parse_option(cmd, c, formats_allowed, out) < 0)
            return 2;
    }
    if (optind != argc - 1) {
        cli_fail(cmd, optind >= argc ? "no TRACE given" : "one TRACE expected, '%s' is extra",
                 optind < argc ? argv[optind + 1] : "");
        return cli_usage_error(cmd, usage);
    }
    out->trace = argv[optind];
    if (!is_export && !out->width_set) /* at a terminal, lines fit it; piped, they are whole */
        out->opts.width = ltr_terminal_width(1);
    if (out->opts.cpu && out->format == LTR_REPORT_CSV) {
        cli_fail(cmd, "--cpu reports as text or json (ltr analyze), folded or pprof (ltr export), not csv");
        return cli_usage_error(cmd, usage);
    }
    if (out->format == LTR_REPORT_CSV && (out->opts.trend || names_snapshot(out->opts.from) ||
                                          names_snapshot(out->opts.to))) {
        cli_fail(cmd, "%s reports as text or json, not csv (its rows are the heap events' stacks)",
                 out->opts.trend ? "--trend" : "a difference of snapshots (snapshot:N)");
        return cli_usage_error(cmd, usage);
    }
    const char *alone = out->opts.mapped ? "--mapped" : out->opts.files ? "--files" : NULL;
    if (alone && (out->opts.cpu || (out->opts.mapped && out->opts.files) || out->format == LTR_REPORT_CSV ||
                  out->opts.trend)) {
        cli_fail(cmd, "%s reports as text or json, alone: not with %s", alone,
                 out->opts.cpu ? "--cpu" : out->opts.mapped && out->opts.files ? "--files"
                 : out->opts.trend ? "--trend" : "--format csv");
        return cli_usage_error(cmd, usage);
    }
    /* their own events over a time window: a trend or two snapshots' difference
     * beside them was ignored, the whole trace's samples, mappings or files
     * reported with exit 0 */
    const char *own = out->opts.cpu ? "--cpu" : alone;
    if (own && (out->opts.trend || names_snapshot(out->opts.from) || names_snapshot(out->opts.to))) {
        cli_fail(cmd, "%s reports its events over a time window: not with %s", own,
                 out->opts.trend ? "--trend" : "a difference of heap snapshots (snapshot:N)");
        return cli_usage_error(cmd, usage);
    }
    if (is_export == CLI_REPORT) { /* ltr report: the page's own analysis */
        if (out->format || out->opts.cpu || out->opts.snapshot || out->opts.full_stacks) {
            cli_fail(cmd, "the page takes none of --format, --cpu, --snapshot, --full-stacks");
            return cli_usage_error(cmd, usage);
        }
        out->format = LTR_REPORT_JSON;
    } else if (is_export && (!out->output || !out->format)) {
        cli_fail(cmd, "%s is required", !out->format ? "--format" : "-o OUT");
        return cli_usage_error(cmd, usage);
    }
    return -1;
}

/* An analysis allocates and frees tables of megabytes (the time-order
 * queues, the model's ring, the address references) on two threads. With
 * glibc's defaults each of them is a fresh mmap in the thread's own arena,
 * whose pages fault in zeroed every time: 11 900 page faults on bench/heap's
 * trace of 1.5 MB. One arena that keeps what was freed (no mmap below 32
 * MiB, no trimming below 256 MiB) reuses them: 7 800, and 57.7 -> 45.4 ms of
 * CPU; 283 -> 252 ms on cc1plus's trace (perf stat -r 7, GLIBC_TUNABLES with
 * the same values). The process is short-lived, so what it keeps is
 * returned at its exit. */
void cli_malloc_for_analysis(void)
{
    ltr_bigheap_keep();
}

/* The tables of a trace of a megabyte and more fault in a page at a time.
 * A megabyte of file or of its chunks decompressed: perl's leak of 2 M
 * events is a file of 66 KB (12 MB of events), whose analysis waits 10 MiB
 * of them in the time-order stage; on huge pages 5 800 page faults became
 * 1 000, and its CPU 0.90 of before (docs/benchmarks.md, session 27).
 * With transparent huge pages for them (the machine's THP mode is madvise),
 * bench/heap's trace took 969 page faults instead of 7 800 and 31 ms of CPU
 * instead of 45, cc1plus's 1 371 instead of 20 800 and 201 ms instead of 288
 * (perf stat -r 7, glibc's tunable glibc.malloc.hugetlb=1). A tunable is
 * read when a program starts, so the command used to run itself again with
 * it, which cost a second start of the program and its libraries, 2.5 ms.
 * Instead, the heap (one arena: cli_malloc_for_analysis) grows once by 64
 * times the trace's size of address space (192 MiB to 1 GiB), taken only as
 * pages are touched, and that range is advised huge pages: what glibc's
 * tunable does for each growth.
 * bench/heap's trace, against the run again (paired timing -n 30, pairs,
 * medians): 0.92 of its CPU, 0.90 of its wall time, 695 to 955 page faults;
 * cc1plus's 0.99 and 0.97. Tables of 32 MiB and more are mappings of their
 * own (M_MMAP_THRESHOLD), without the advice, and so is growth past the
 * reserve (a review's trace of 4 MB with 1.5 M live blocks: 58 600 page
 * faults against the tunable's 4 100, 0.49 s of CPU against 0.48); where
 * the growth cannot be had (a strict overcommit policy), malloc goes on as
 * usual. */
#define HEAP_HUGE_MIN (1u << 20) /* bytes of trace, in the file or decompressed */
#define HEAP_RESERVE_MIN ((size_t)192 << 20)
#define HEAP_RESERVE_MAX ((size_t)1 << 30)
#define HEAP_RESERVE_PER_BYTE 64 /* of trace: a review's 4 MB trace of 1.5 M live blocks took 294 MB */
/* HEAP_HUGE_MIN bytes of file, or of its chunks decompressed (their headers
 * say; only a regular file's: opening a FIFO could wait for its writer). */
static int trace_is_large(const char *trace, const struct stat *st)
{
    return st->st_size >= HEAP_HUGE_MIN ||
           (S_ISREG(st->st_mode) && ltr_trace_file_raw_bytes(trace, HEAP_HUGE_MIN) >= HEAP_HUGE_MIN);
}

static void heap_on_huge_pages(const char *trace)
{
    struct stat st;
    if (stat(trace, &st) != 0 || !trace_is_large(trace, &st))
        return;
    size_t reserve = (size_t)st.st_size * HEAP_RESERVE_PER_BYTE;
    ltr_bigheap_huge(reserve < HEAP_RESERVE_MIN ? HEAP_RESERVE_MIN : reserve > HEAP_RESERVE_MAX ? HEAP_RESERVE_MAX : reserve);
}

ltr_analysis *cli_analysis_run(const char *cmd, const cli_analysis_args *a)
{
    ltr_analysis *an = NULL;
    ltr_error err = {0};
    cli_malloc_for_analysis();
    heap_on_huge_pages(a->trace);
    if (ltr_analysis_run(a->trace, &a->opts, &an, &err) < 0) {
        cli_fail(cmd, "%s", err.msg);
        return NULL;
    }
    return an;
}

void cli_analysis_warnings(const char *cmd, ltr_analysis *a)
{
    for (size_t i = 0; i < ltr_analysis_warning_count(a); i++)
        cli_warn(cmd, "%s", ltr_analysis_warning_at(a, i));
}

/* As perf report's one line for the objects it found no symbols in: what
 * the export lacks, and where the details are (a module's paragraph and the
 * ways to get its debug file took 6 lines of 80 columns each time). */
void cli_export_warnings(const char *cmd, ltr_analysis *a, const char *trace)
{
    bool symbols = false;
    for (size_t i = 0; i < ltr_analysis_warning_count(a); i++) {
        if (ltr_analysis_warning_is_symbols(a, i))
            symbols = true;
        else
            cli_warn(cmd, "%s", ltr_analysis_warning_at(a, i));
    }
    if (symbols)
        cli_warn(cmd, "%zu module(s) have no symbols here: their frames show as module+offset; 'ltr analyze %s' "
                 "names them, and how to get their symbols", ltr_analysis_modules_unnamed(a), trace);
}

int cli_analysis_status(const char *cmd, ltr_analysis *a)
{
    if (!ltr_analysis_damage(a))
        return 0;
    cli_warn(cmd, "the trace is damaged (%llu problem(s)); what it says comes from its intact chunks only",
             (unsigned long long)ltr_analysis_damage(a));
    return 3;
}
