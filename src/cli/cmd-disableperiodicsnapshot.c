/*
 * cli/cmd-disableperiodicsnapshot.c — `ltr disableperiodicsnapshot heap
 * [PID...]`: no more periodic snapshots of these processes (all without one).
 */
#include "cli/cli.h"
#include "cli/snapshot-args.h"
#include "recorder/snapshot.h"

#include <stdio.h>

static const char usage[] = "ltr disableperiodicsnapshot heap [PID...]";
static const char help[] =
    "Stops the periodic heap snapshots of each process, or of every process\n"
    "without a PID. Their tables are still kept ('ltr singlesnapshot' works).\n"
    "\nexit status: 0 done, 1 a process does not exist or is not enabled,\n"
    "2 bad usage.\n";

int cmd_disableperiodicsnapshot(int argc, char **argv)
{
    if (cli_snapshot_help(argc, argv, usage, help) == 0)
        return 0;
    if (argc < 2)
        return cli_snapshot_missing("disableperiodicsnapshot", 0, usage);
    int rc = cli_snapshot_kind("disableperiodicsnapshot", argv[1], usage);
    if (rc)
        return rc;
    ltr_error err;
    uint32_t pids[LTR_SNAP_PROCS];
    int n = 0;
    for (int i = 2; i < argc && n < LTR_SNAP_PROCS; i++)
        if (cli_snapshot_pid("disableperiodicsnapshot", argv[i], &pids[n++]))
            return 2;
    if (argc == 2) {
        ltr_snapshot_proc procs[LTR_SNAP_PROCS];
        char names[1][LTR_SNAP_LONG_NAME_MAX];
        int nnames, np = ltr_snapshot_list(procs, LTR_SNAP_PROCS, names, 1, &nnames, &err);
        if (np < 0)
            return cli_fail("disableperiodicsnapshot", "%s", err.msg);
        for (int i = 0; i < np; i++)
            if (procs[i].period_s)
                pids[n++] = procs[i].pid;
        if (!n)
            printf("no process writes periodic heap snapshots\n");
    }
    for (int i = 0; i < n; i++) {
        if (ltr_snapshot_periodic(pids[i], 0, &err) != 0)
            rc = cli_fail("disableperiodicsnapshot", "%s", err.msg);
        else
            printf("process %u writes no more periodic heap snapshots\n", pids[i]);
    }
    return rc;
}
