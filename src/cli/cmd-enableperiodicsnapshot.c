/*
 * cli/cmd-enableperiodicsnapshot.c — `ltr enableperiodicsnapshot heap SECS
 * PID...`: each process writes a heap snapshot now and every SECS seconds.
 */
#include "cli/cli.h"
#include "cli/snapshot-args.h"
#include "recorder/snapshot.h"

#include <stdio.h>

static const char usage[] = "ltr enableperiodicsnapshot heap SECS PID...";
static const char help[] =
    "Each process (heap snapshots enabled: 'ltr snapshotconfig') writes a heap\n"
    "snapshot into the sessions that receive them now, then every SECS seconds\n"
    "(1 to 86400), until 'ltr disableperiodicsnapshot' or disabling snapshots.\n"
    "'ltr analyze TRACE --trend' then ranks the stacks by their growth.\n"
    "\nexit status: 0 done, 1 a process is not enabled, does not exist or has no\n"
    "session to write to, 2 bad usage.\n";

int cmd_enableperiodicsnapshot(int argc, char **argv)
{
    if (cli_snapshot_help(argc, argv, usage, help) == 0)
        return 0;
    if (argc < 4)
        return cli_snapshot_missing("enableperiodicsnapshot", argc - 1, usage);
    int rc = cli_snapshot_kind("enableperiodicsnapshot", argv[1], usage);
    if (rc)
        return rc;
    uint64_t secs;
    if (cli_parse_u64("enableperiodicsnapshot", "SECS", argv[2], 1, 86400, &secs))
        return 2;
    for (int i = 3; i < argc; i++) {
        uint32_t pid;
        ltr_error err;
        if (cli_snapshot_pid("enableperiodicsnapshot", argv[i], &pid))
            return 2;
        if (ltr_snapshot_periodic(pid, (uint32_t)secs, &err) != 0)
            rc = cli_fail("enableperiodicsnapshot", "%s", err.msg);
        else
            printf("process %u writes a heap snapshot every %u s\n", pid, (unsigned)secs);
    }
    return rc;
}
