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
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char usage[] = "ltr run [--instance NAME] [--depth N] -- CMD [ARGS...]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Runs CMD with the heap agent preloaded. Every running session that enables\n"
           "heap tracing ('ltr start heap') records CMD's allocations and those of the\n"
           "processes it starts. Exits with CMD's exit status. With no such session\n"
           "running, CMD is not run (nothing would record it) and the exit status is 1.\n"
           "A session started with --pid or --name (or a profile's HeapProcessNames)\n"
           "records only those processes: when none would record CMD, a warning says\n"
           "so and CMD runs (a process it starts may have one of the names).\n\n"
           "  --instance NAME      into that session only\n"
           "  --depth N            frames per call stack, 0 to 256 (default 64)\n\n"
           "exit status: CMD's exit status; 127 when CMD could not be started, 1 when the\n"
           "heap agent is missing, 2 bad usage.\n",
           usage);
}

/* A session limited to --pid processes or to names (ltr start heap --pid P,
 * --name N, a profile's HeapProcessNames) records CMD only if CMD is one of
 * those names: 'ltr run -- ./app' into 'ltr start heap --name sqlite3' ran
 * app, recorded none of it and said nothing. Said, not refused: a process
 * CMD starts may still have one of the names. */
static void warn_if_unrecorded(const char *only, const char *cmd)
{
    char names[32][LTR_SESSION_NAME_MAX_RUN];
    int n = only ? 1 : ltr_heap_sessions(names, 32);
    if (only)
        snprintf(names[0], sizeof names[0], "%s", only);
    char limits[512] = "";
    size_t used = 0;
    bool by_name = false;
    for (int i = 0; i < n; i++) {
        ltr_session_status st;
        ltr_error err = {0};
        if (ltr_client_status(names[i], &st, &err) != 0 || ltr_session_takes_command(&st, cmd))
            return;
        by_name |= st.names[0] != 0;
        for (char *c = st.names; *c; c++)
            *c = *c == '/' ? ' ' : *c;
        int k = snprintf(limits + used, sizeof limits - used, "%s'%s' traces only %s%s%s%s", used ? "; " : "",
                         st.name, st.nwanted ? "its --pid processes (and what they fork)" : "",
                         st.nwanted && st.names[0] ? " and " : "", st.names[0] ? "processes named " : "",
                         st.names);
        used = k < 0 || (size_t)k >= sizeof limits - used ? sizeof limits - 1 : used + (size_t)k;
    }
    if (n > 0)
        fprintf(stderr, "ltr run: warning: no running session records %s: %s. It runs, %s\n", cmd, limits,
                by_name ? "and only the processes it starts that have one of those names are recorded"
                        : "unrecorded");
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
    warn_if_unrecorded(l.session, argv[optind]);
    l.argv = argv + optind;
    l.agent = agent;
    int status = 0, sig = 0;
    l.killed_by = &sig;
    if (ltr_heap_run(&l, &status, &err) != 0 || err.code)
        cli_fail("run", "%s", err.msg);
    ltr_heap_report_signal("run", argv[optind], sig);
    return status;
}
