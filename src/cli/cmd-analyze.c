/*
 * cli/cmd-analyze.c — `ltr analyze TRACE`: which call stacks hold the memory,
 * over a time window, per process. The analysis is src/analyze's;
 * this file parses options and prints.
 */
#include "cli/analysis-args.h"
#include "cli/cli.h"

#include <stdio.h>

#define USAGE                                                                                    \
    "ltr analyze TRACE [--from T] [--to T] [--pid P] [--top N] [--format text|json|csv]\n"         \
    "                  [--trend] [--debug-dir DIRS] [--local-symbols] [--cpu | --mapped | --files]\n"            \
    "                  [--full-stacks] [--width N] [--processes N]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Reads a heap trace (ltr record, ltr stop, ltr save) and tells, per process,\n"
           "which allocation call stacks hold memory at the end of a time window:\n"
           "outstanding bytes and count, the peak and when, allocations and frees, the\n"
           "four impacting types (AIFI, AIFO, AOFI, AOFO), stacks ranked by outstanding\n"
           "bytes (AIFO first: the leak candidates; a leak that grew steadily over the\n"
           "window above a one-time allocation of its size, with its growth per minute),\n"
           "by allocation calls and by temporary allocations (a free right after its\n"
           "thread allocated a block of that size and stack, a realloc's free half too:\n"
           "heaptrack's count, but in each thread's order, not the process's, as\n"
           "threads' events within 100 us come in no known order), and a histogram of\n"
           "allocation sizes.\n\n"
           "options:\n"
           "  --from T, --to T   the window; T is seconds from the trace start (e.g. 2.5)\n"
           "                     or the text of a marker (ltr marker TEXT). Default: all.\n"
           "                     snapshot:N and snapshot:M (heap snapshots, numbered as\n"
           "                     the report lists them): the difference by stack\n"
           "  --trend            rank stacks by their growth across periodic heap\n"
           "                     snapshots: leak, plateau (a cache) or noise\n"
           "  --pid P            only process P\n"
           "  --top N            stacks per list (default 10, 0 = all)\n"
           "  --processes N      text: with more processes than N, the N with the highest\n"
           "                     peak, highest first (default 10, 0 = all; json and csv\n"
           "                     give all)\n"
           "  --format F         text (default), json (docs/analysis.md) or csv; --json is\n"
           "                     --format json. Text gives sizes in KiB, MiB, GiB; json\n"
           "                     and csv exact bytes\n"
           "  --full-stacks      text: every frame; by default the start-up and\n"
           "                     thread-entry frames every stack shares, and operator new\n"
           "                     with the C++ library's frames above it, are hidden\n"
           "  --width N          text: lines fit N columns (0: whole lines); default the\n"
           "                     terminal's width at a terminal, whole lines otherwise\n"
           "  --debug-dir DIRS   ':'-separated debug directories searched by build-id\n"
           "                     (default /usr/lib/debug)\n"
           "  --local-symbols    name frames with this machine's files only, not with the\n"
           "                     names the trace holds (added where it was recorded:\n"
           "                     'ltr symbolize'), which are used first by default\n"
           "  --cpu              the CPU samples instead (SampledProfile: 'ltr start\n"
           "                     general'): stacks ranked by samples, text or json\n"
           "  --mapped           the mappings the program made itself instead\n"
           "                     (VirtualAllocation: mmap, munmap, mremap, brk, sbrk, with\n"
           "                     'ltr start heap --provider Ltr.System:0x10'): stacks\n"
           "                     ranked by mapped bytes at the window's end, text or json\n"
           "  --files            the files the program worked on instead (FileIO: with\n"
           "                     'ltr start heap --provider Ltr.System:0x20'): per path\n"
           "                     its opens, failed opens, bytes read and written\n"
           "  -h, --help         this text\n\n"
           "With the system provider's memory counters in the trace ('ltr start\n"
           "memory'), each process's private bytes over the window follow the heap\n"
           "report, beside the heap's outstanding bytes, with the share the heap explains.\n\n"
           "exit status: 0 done, 1 the trace could not be read, a marker is missing,\n"
           "the window ends before it starts or lies outside the trace (the message\n"
           "gives the span it covers) or --pid names no process of the trace,\n"
           "2 bad usage, 3 the trace is damaged (its intact part was analyzed).\n");
}

int cmd_analyze(int argc, char **argv)
{
    cli_analysis_args args;
    unsigned formats = 1u << LTR_REPORT_TEXT | 1u << LTR_REPORT_JSON | 1u << LTR_REPORT_CSV;
    int rc = cli_analysis_parse("analyze", argc, argv, USAGE, help, formats, 0, &args);
    if (rc >= 0)
        return rc;
    ltr_analysis *a = cli_analysis_run("analyze", &args);
    if (!a)
        return 1;
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    if (ltr_analysis_write(a, stdout, args.format, args.top) < 0) {
        ltr_analysis_free(a);
        return cli_fail_output("analyze");
    }
    rc = cli_analysis_status("analyze", a);
    if (args.format == LTR_REPORT_CSV) /* text and json carry them; a csv table has no room */
        cli_analysis_warnings("analyze", a);
    ltr_analysis_free(a);
    return rc;
}
