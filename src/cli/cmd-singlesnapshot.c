/*
 * cli/cmd-singlesnapshot.c — `ltr singlesnapshot heap PID...`: each process
 * writes its live-block table into the running snapshot session(s) now.
 */
#include "cli/cli.h"
#include "cli/snapshot-args.h"
#include "recorder/snapshot.h"

#include <stdio.h>
#include <string.h>

static const char usage[] = "ltr singlesnapshot heap PID... [--timeout SECS]";
static const char help[] =
    "Asks each process (heap snapshots enabled: 'ltr snapshotconfig') to write\n"
    "its table of live blocks into the sessions that receive snapshots ('ltr\n"
    "start heapsnapshot'), and waits until it has, at most --timeout seconds\n"
    "(default 30). The process keeps running meanwhile.\n"
    "\nexit status: 0 done, 1 a process is not enabled, does not exist, has no\n"
    "session to write to or did not answer in time, 2 bad usage.\n";

int cmd_singlesnapshot(int argc, char **argv)
{
    if (cli_snapshot_help(argc, argv, usage, help) == 0)
        return 0;
    if (argc < 3)
        return cli_snapshot_missing("singlesnapshot", argc - 1, usage);
    int rc = cli_snapshot_kind("singlesnapshot", argv[1], usage);
    if (rc)
        return rc;
    uint64_t timeout = 30;
    uint32_t pids[64];
    int npids = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (cli_parse_u64("singlesnapshot", "--timeout", argv[++i], 1, 3600, &timeout))
                return 2;
        } else if (npids == 64) {
            return cli_fail("singlesnapshot", "at most 64 process ids at once");
        } else if (cli_snapshot_pid("singlesnapshot", argv[i], &pids[npids++])) {
            return 2;
        }
    }
    if (!npids)
        return cli_snapshot_missing("singlesnapshot", 1, usage);
    for (int i = 0; i < npids; i++) {
        ltr_error err;
        if (ltr_snapshot_take(pids[i], (uint32_t)timeout * 1000u, &err) != 0)
            rc = cli_fail("singlesnapshot", "%s", err.msg);
        else
            printf("process %u wrote a heap snapshot\n", pids[i]);
    }
    return rc;
}
