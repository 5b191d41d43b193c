/*
 * cli/cmd-run.c — `ltr run -- CMD ARGS`: launch a command with the heap agent
 * preloaded, into the sessions that run (e.g. after `ltr start heap`); it is
 * traced for as long as a session enables heap tracing. Exits with CMD's
 * status.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "recorder/heaprun.h"
#include "recorder/snapshot.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr run [--instance NAME] [--depth N] -- CMD [ARGS...]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Runs CMD with the heap agent preloaded. Every running session that enables\n"
           "heap tracing ('ltr start heap') records CMD's allocations and those of the\n"
           "processes it starts. Exits with CMD's exit status. With no such session\n"
           "running, CMD is not run (nothing would record it) and the exit status is 1.\n\n"
           "  --instance NAME      into that session only\n"
           "  --depth N            frames per call stack, 0 to 256 (default 64)\n\n"
           "exit status: CMD's exit status; 127 when CMD could not be started, 1 when the\n"
           "heap agent is missing, 2 bad usage.\n",
           usage);
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"depth", required_argument, 0, 'd'}, {"instance", required_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    ltr_heap_launch l = {.stack_depth = -1};
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (cli_parse_u64("run", "--depth", optarg, 0, 256, &v))
                return 2;
            l.stack_depth = (int)v;
            break;
        case 'n': l.session = optarg; break;
        case 'h': help(); return 0;
        default: return cli_usage_error("run", usage);
        }
    }
    if (optind >= argc)
        return cli_fail("run", "no command given: ltr run -- CMD [ARGS...]"), 2;
    char agent[4096];
    ltr_error err = {0};
    if (ltr_heap_agent_path(agent, sizeof agent, &err))
        return cli_fail("run", "%s", err.msg);
    if (l.session ? cli_session_request("run", l.session, "status", NULL, NULL, NULL) != 0
                  : !ltr_heap_traced_anywhere() && !ltr_snapshot_session_running())
        return l.session ? 1
                         : cli_fail("run", "no running session traces the heap, so nothing would record %s: "
                                           "start one first ('ltr start heap', or 'ltr start heapsnapshot' for "
                                           "snapshots), then 'ltr run -- %s'",
                                    argv[optind], argv[optind]);
    l.argv = argv + optind;
    l.agent = agent;
    int status = 0, sig = 0;
    l.killed_by = &sig;
    if (ltr_heap_run(&l, &status, &err) != 0 || err.code)
        cli_fail("run", "%s", err.msg);
    ltr_heap_report_signal("run", argv[optind], sig);
    return status;
}
