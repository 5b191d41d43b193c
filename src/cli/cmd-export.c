/*
 * cli/cmd-export.c — `ltr export TRACE --format pprof|folded|json|csv|chrome -o OUT`:
 * the analysis in a form other tools read (go tool pprof, flamegraph.pl,
 * scripts, spreadsheets). The work is src/analyze's.
 */
#include "cli/analysis-args.h"
#include "cli/cli.h"
#include "prim/prim.h"

#include <stdio.h>
#include <string.h>

#define USAGE                                                                                    \
    "ltr export TRACE --format pprof|folded|json|csv|chrome -o OUT [--force] [--from T] [--to T]\n" \
    "                 [--pid P] [--snapshot N] [--debug-dir DIRS] [--local-symbols] [--cpu]\n" \
    "                 [--full-stacks]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Writes the heap analysis of TRACE (see 'ltr analyze --help') to OUT:\n"
           "  pprof   gzipped profile.proto for 'go tool pprof', sample types\n"
           "          alloc_objects, alloc_space, inuse_objects, inuse_space\n"
           "  folded  one line per stack, 'program;outer;...;inner BYTES', for flamegraph.pl;\n"
           "          BYTES = outstanding at the window's end. The root is the program's\n"
           "          name without its pid, so two runs compare (difffolded.pl)\n"
           "  json    the report of 'ltr analyze --format json', every stack\n"
           "  csv     one row per stack, every stack\n"
           "  chrome  Chrome's Trace Event Format JSON for Perfetto UI (ui.perfetto.dev)\n"
           "          and chrome://tracing: per process a counter track of its outstanding\n"
           "          heap bytes over time (and its memory counters when recorded), process\n"
           "          and thread names, markers and heap snapshots as instant events\n"
           "With --cpu, the CPU samples instead (SampledProfile): pprof with one sample\n"
           "type (samples, count), folded 'process-PID;outer;...;inner SAMPLES', or json.\n\n"
           "options: --from T, --to T, --pid P, --debug-dir DIRS, --local-symbols as for\n"
           "ltr analyze;\n"
           "  -o, --output OUT  the file to write ('-' = standard output); an existing\n"
           "                    OUT is refused\n"
           "  --force           replace an existing OUT\n"
           "  --full-stacks     pprof and folded: every frame; by default the start-up\n"
           "                    frames and operator new with the C++ library's frames\n"
           "                    above it are left out, as in ltr analyze's text\n"
           "  --snapshot N      pprof and folded: heap snapshot N (snapshot:N of 'ltr\n"
           "                    analyze'), its live blocks by stack, instead of the\n"
           "                    heap events (not with --from, --to or --cpu)\n\n"
           "exit status: 0 done, 1 the trace could not be read, OUT not written, or the\n"
           "window or --pid is not one of the trace (as for ltr analyze),\n"
           "2 bad usage, 3 the trace is damaged (its intact part was exported).\n");
}

typedef struct report {
    ltr_analysis *a;
    ltr_report_format format;
} report;

static int write_report(FILE *f, void *arg)
{
    report *r = arg;
    return ltr_analysis_write(r->a, f, r->format, 0); /* 0 or -EIO */
}

/* OUT, or standard output for '-' (cli_write_output). */
static int write_out(ltr_analysis *a, const cli_analysis_args *args)
{
    report r = {a, args->format};
    return cli_write_output("export", args->output, args->force, write_report, &r);
}

int cmd_export(int argc, char **argv)
{
    cli_analysis_args args;
    unsigned formats = 1u << LTR_REPORT_PPROF | 1u << LTR_REPORT_FOLDED | 1u << LTR_REPORT_JSON |
                       1u << LTR_REPORT_CSV | 1u << LTR_REPORT_CHROME;
    int rc = cli_analysis_parse("export", argc, argv, USAGE, help, formats, 1, &args);
    if (rc >= 0)
        return rc;
    if (args.opts.snapshot && args.format != LTR_REPORT_PPROF && args.format != LTR_REPORT_FOLDED) {
        cli_fail("export", "--snapshot goes with --format pprof or folded");
        return cli_usage_error("export", USAGE);
    }
    /* a snapshot is one time and heap blocks: a window or the CPU samples
     * beside it were ignored, the snapshot written whole (--from 3 with a
     * snapshot of 1 s) or the CPU samples instead of it, with exit 0 */
    if (args.opts.snapshot && (args.opts.from || args.opts.to || args.opts.cpu)) {
        cli_fail("export", "--snapshot N exports snapshot N whole, its live blocks: it takes neither --from, --to "
                 "nor --cpu ('ltr analyze --from snapshot:N --to snapshot:M' compares two)");
        return cli_usage_error("export", USAGE);
    }
    if (args.format == LTR_REPORT_CHROME && (args.opts.cpu || args.opts.snapshot)) {
        cli_fail("export", "--format chrome is the heap over time: it takes neither --cpu nor --snapshot");
        return cli_usage_error("export", USAGE);
    }
    args.opts.series = args.format == LTR_REPORT_CHROME; /* outstanding bytes over time */
    if (strcmp(args.output, "-") != 0 && cli_refuse_existing("export", args.output, args.force))
        return 1;
    ltr_analysis *a = cli_analysis_run("export", &args);
    if (!a)
        return 1;
    rc = write_out(a, &args);
    if (rc == 0 && args.opts.cpu && !ltr_analysis_cpu_samples(a)) /* an empty profile, said (analyze --cpu says so too) */
        cli_warn("export", "the trace has no CPU samples (SampledProfile) in the window: the export is empty; "
                 "the general profile records them, e.g. 'ltr start general heap --pid P'");
    if (rc == 0)
        rc = cli_analysis_status("export", a);
    if (rc != 1)
        cli_export_warnings("export", a, args.trace);
    ltr_analysis_free(a);
    return rc;
}
