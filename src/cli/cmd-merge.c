/*
 * cli/cmd-merge.c — `ltr merge A.ltr B.ltr... -o OUT.ltr` (WPR's -merge):
 * one trace from several recorded on this machine in one boot. The work is
 * format/merge.c; this file parses and prints.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "format/merge.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#define USAGE "ltr merge TRACE TRACE... -o OUT.ltr [--force]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Writes one trace from several recorded on this machine in the same boot\n"
           "(so on one clock), for instance two sessions that ran at the same time:\n"
           "the processes, providers and counters of all, what two traces both hold\n"
           "(a process both sessions described) once, and their events interleaved by\n"
           "time a chunk at a time, as a recorder writes a session's threads: 'ltr\n"
           "analyze OUT.ltr' puts them in time order and sees both as one recording,\n"
           "'ltr dump' prints them as they are stored.\n\n"
           "Traces of another machine or another boot are refused (their clocks do not\n"
           "compare), and so is a process whose heap stacks are in two of the traces.\n"
           "A damaged stretch of a trace is skipped and counted; the events after it\n"
           "that refer to what it held (a free's allocation) are copied but cannot be\n"
           "read, and are counted apart from the events merged. When a trace was cut\n"
           "short, so is the merge.\n\n"
           "options:\n"
           "  -o, --output OUT.ltr  the merged trace (kept if it exists, unless --force)\n"
           "  --force               replace OUT.ltr (never writing through a symlink)\n"
           "  -h, --help            this text\n\n"
           "exit status: 0 merged; 1 a trace could not be read or merged, or OUT.ltr\n"
           "not written (nothing is left of it); 2 bad usage.\n");
}

/* No -o: WPR's `-merge IN... OUT` names the output last, and a last name
 * that is no file is taken for it: the error says the command to type. */
static int no_output(int argc, char **argv)
{
    const char *last = argv[argc - 1];
    if (argc - optind < 2 || access(last, F_OK) == 0)
        return cli_fail("merge", "give the merged trace's name: -o OUT.ltr"), 2;
    char ins[2048] = "";
    for (int i = optind, used = 0; i < argc - 1 && used < (int)sizeof ins; i++)
        used += snprintf(ins + used, sizeof ins - (size_t)used, "%s ", argv[i]);
    return cli_fail("merge", "give the merged trace's name with -o: 'ltr merge %s-o %s' ('%s' is no trace to "
                    "merge; WPR's -merge names the output last)", ins, last, last), 2;
}

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"force", no_argument, 0, 'f'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *out = NULL;
    bool force = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'f': force = true; break;
        case 'h': help(); return 0;
        default: return cli_usage_error("merge", USAGE);
        }
    }
    if (!out)
        return no_output(argc, argv);
    if (argc - optind < 2)
        return cli_fail("merge", "give two traces or more to merge"), 2;
    if (cli_trace_not_stdout("merge", out))
        return 2;
    if (cli_refuse_no_directory("merge", out))
        return 1;
    ltr_merge_report rep;
    ltr_error err;
    if (ltr_merge((const char *const *)argv + optind, (size_t)(argc - optind), out, force, &rep, &err))
        return cli_fail("merge", "%s", err.msg);
    printf("%s: %d traces merged, %" PRIu64 " events in %" PRIu64 " blocks", out, argc - optind, rep.readable,
           rep.blocks);
    if (rep.duplicates)
        printf(", %" PRIu64 " metadata records held by several traces written once", rep.duplicates);
    printf("\n");
    if (rep.damaged)
        cli_warn("merge", "%" PRIu64 " damaged stretch(es) of the traces were skipped ('ltr info' on each says "
                 "where)", rep.damaged);
    if (rep.events > rep.readable)
        cli_warn("merge", "%" PRIu64 " more events were copied that cannot be read, in the merge as in their trace: "
                 "they refer to what its damaged stretches held ('ltr info %s' counts them as damage)",
                 rep.events - rep.readable, out);
    if (!rep.complete)
        cli_warn("merge", "a trace was cut short (no END): so is the merge");
    return 0;
}
