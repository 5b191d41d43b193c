/*
 * cli/cmd-report.c — `ltr report TRACE [-o FILE.html]`: the analysis as one
 * self-contained HTML page (src/report). This file parses and prints.
 */
#include "cli/analysis-args.h"
#include "cli/cli.h"
#include "prim/prim.h"
#include "report/report.h"

#include <stdio.h>
#include <string.h>

#define USAGE                                                                                    \
    "ltr report TRACE [-o FILE.html] [--force] [--from T] [--to T] [--pid P] [--debug-dir DIRS]\n" \
    "                 [--local-symbols]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Writes the analysis of TRACE as one HTML page that opens in a browser with no\n"
           "network and no other file: memory over time per process (outstanding heap\n"
           "bytes, and private bytes when the trace has memory counters) with markers;\n"
           "the stacks holding memory, leak candidates first, with their growth; a flame\n"
           "graph of outstanding bytes, allocated bytes or allocation calls (click to zoom,\n"
           "search); heap snapshots; lost events as a warning. Dragging across the chart\n"
           "ranks the leak candidates of that time range. docs/report.md.\n\n"
           "options: --from T, --to T, --pid P, --debug-dir DIRS, --local-symbols as for\n"
           "ltr analyze;\n"
           "  -o, --output FILE  the page (default TRACE with .html; '-': standard\n"
           "                     output); an existing FILE is refused\n"
           "  --force            replace FILE\n\n"
           "exit status: 0 written, 1 the trace could not be read, FILE not written, or\n"
           "the window or --pid is not one of the trace (as for ltr analyze),\n"
           "2 bad usage, 3 the trace is damaged (the page shows its intact part).\n");
}

static int write_page(FILE *f, void *arg)
{
    ltr_error err;
    return ltr_report_write(arg, f, 50, &err);
}

/* The page into FILE or, for '-', standard output (cli_write_output: it
 * was a file named '-', said written). */
static int write_to(const cli_analysis_args *args, ltr_analysis *a)
{
    if (cli_write_output("report", args->output, args->force, write_page, a))
        return 1;
    if (strcmp(args->output, "-") != 0)
        printf("ltr report: %s written\n", args->output);
    return 0;
}

int cmd_report(int argc, char **argv)
{
    cli_analysis_args args;
    int rc = cli_analysis_parse("report", argc, argv, USAGE, help, 1u << LTR_REPORT_JSON, CLI_REPORT, &args);
    if (rc >= 0)
        return rc;
    char out[4096];
    if (!args.output) {
        const char *dot = strrchr(args.trace, '.'), *slash = strrchr(args.trace, '/');
        size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - args.trace) : strlen(args.trace);
        snprintf(out, sizeof out, "%.*s.html", (int)stem, args.trace);
        args.output = out;
    }
    ltr_report_opts(&args.opts);
    if (strcmp(args.output, "-") != 0 && cli_refuse_existing("report", args.output, args.force))
        return 1;
    ltr_analysis *a = cli_analysis_run("report", &args);
    if (!a)
        return 1;
    if (write_to(&args, a)) {
        ltr_analysis_free(a);
        return 1;
    }
    rc = cli_analysis_status("report", a);
    ltr_analysis_free(a);
    return rc;
}
