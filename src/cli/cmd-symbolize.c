/*
 * cli/cmd-symbolize.c — `ltr symbolize TRACE [--debug-dir DIRS]`: adds the
 * names of a trace's frames to it, resolved with this machine's files, as
 * the end of a recording does unless --no-symbols: for a trace of `ltr
 * watch`, of an older ltr, or recorded with --no-symbols, before it is read
 * elsewhere (as `perf archive` and `perf buildid-cache` carry perf's).
 */
#include "cli/cli.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr symbolize TRACE [--debug-dir DIRS]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Resolves every recorded stack of TRACE with the binaries and debug files of\n"
           "this machine and adds the names found (function, source file and line of\n"
           "every address, inlined calls included) to TRACE, after its end, as SYMBOLS\n"
           "chunks (docs/trace-format.md). 'ltr analyze', 'export' and 'report' then\n"
           "name those frames on any machine, without the binaries or their debug info,\n"
           "and without reading that debug info again ('--local-symbols' there ignores\n"
           "them). 'ltr record', 'stop', 'save' and 'watch' do this at the end unless\n"
           "given --no-symbols. A trace that has names gets only those it lacks (one\n"
           "merged with a trace without, a debug package installed since). Only the\n"
           "trace's metadata is read. Readers that predate these chunks skip them.\n\n"
           "  --debug-dir DIRS   ':'-separated debug directories searched by build-id\n"
           "                     (default /usr/lib/debug)\n"
           "  -h, --help         this text\n\n"
           "Refused, TRACE unchanged: a trace cut short (no END: a recording that did not\n"
           "finish), damaged, read-only, a symlink, or being added to by another ltr. A\n"
           "write that fails (a full disk) takes back what it wrote.\n\n"
           "exit status: 0 the names were added (or there were none to add), 1 they were\n"
           "not, 2 bad usage.\n",
           usage);
}

int cmd_symbolize(int argc, char **argv)
{
    static const struct option opts[] = {{"debug-dir", required_argument, 0, 'd'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *debug_path = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return 0;
        }
        if (c != 'd') {
            cli_fail("symbolize", "unknown option or missing value: '%s'", cli_bad_option(argc, argv));
            return cli_usage_error("symbolize", usage);
        }
        debug_path = optarg;
    }
    if (optind != argc - 1) {
        cli_fail("symbolize", optind >= argc ? "no TRACE given" : "one TRACE expected, '%s' is extra",
                 optind < argc ? argv[optind + 1] : "");
        return cli_usage_error("symbolize", usage);
    }
    return cli_add_symbols("symbolize", argv[optind], debug_path, 1);
}
