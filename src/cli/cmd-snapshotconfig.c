/*
 * cli/cmd-snapshotconfig.c — `ltr snapshotconfig heap (--pid P... | --name N)
 * [enable|disable]`: whether processes keep the live-block table that heap
 * snapshots write (WPR's command, the same meaning). The setting is in the
 * registry (recorder/snapshot.h); without a verb it is shown.
 */
#include "byname/byname.h"
#include "cli/cli.h"
#include "cli/snapshot-args.h"
#include "recorder/heaprun.h"
#include "recorder/snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char usage[] = "ltr snapshotconfig heap (--pid PID... | --name NAME) [enable|disable]";
static const char help[] =
    "While heap snapshots are enabled for a process, its heap agent keeps a table\n"
    "of its live blocks (size, call stack, allocation time) from then on, and\n"
    "writes it into the sessions of 'ltr start heapsnapshot' when asked\n"
    "('ltr singlesnapshot', 'ltr enableperiodicsnapshot'). No event is written\n"
    "per allocation. --pid: running processes; enable loads the heap agent into\n"
    "one that runs without it, as 'ltr start heap --pid' does (docs/attach.md;\n"
    "it stays there, dormant, afterwards). --name: every new process of that\n"
    "name (its executable's file name, as 'ltr start --name' and 'ltr watch\n"
    "--name' take it, however long, or the kernel's name of the program, its\n"
    "first 15 characters, as ps shows it) that carries the agent. Without\n"
    "enable or disable, prints the current setting.\n"
    "\nexit status: 0 done, 1 failed (no such process, or one the agent could not\n"
    "be loaded into, with the reason), 2 bad usage.\n";

static void show_proc(const ltr_snapshot_proc *p)
{
    printf("pid %u: %s", p->pid, p->enabled ? "enabled" : "disabled");
    if (p->agent_gone)
        printf(", but it no longer carries the heap agent (it exec'd a program without it): no table");
    else if (p->enabled)
        printf(", %s", p->tracking ? "table kept" : "table starts at its next allocation");
    if (p->period_s)
        printf(", a snapshot every %u s", p->period_s);
    printf(", %" PRIu64 " snapshots written\n", p->snapshots);
}

static int show(const char *name, const uint32_t *pids, int npids)
{
    ltr_error err;
    if (npids) {
        int rc = 0;
        for (int i = 0; i < npids; i++) {
            ltr_snapshot_proc p;
            if (ltr_snapshot_get(pids[i], &p, &err) == 0)
                show_proc(&p);
            else if (err.code == ENOENT)
                printf("pid %u: disabled\n", pids[i]);
            else
                rc = cli_fail("snapshotconfig", "%s", err.msg);
        }
        return rc;
    }
    ltr_snapshot_proc procs[LTR_SNAP_PROCS];
    char names[LTR_SNAP_NAMES][LTR_SNAP_LONG_NAME_MAX];
    int nnames, n = ltr_snapshot_list(procs, LTR_SNAP_PROCS, names, LTR_SNAP_NAMES, &nnames, &err);
    if (n < 0)
        return cli_fail("snapshotconfig", "%s", err.msg);
    bool on = false;
    for (int i = 0; i < nnames; i++)
        on |= !strcmp(names[i], name);
    printf("name %s: %s\n", name, on ? "enabled (new processes of that name)" : "disabled");
    return 0;
}

/* The setting reaches new processes that carry the agent: without the
 * by-name one (ltr heaptracingconfig) they carry none, and it printed only
 * "enabled", a new instance then answering "heap snapshots are not enabled"
 * (a new user's service, snapshotconfig --name before heaptracingconfig). */
static void warn_without_byname(const char *name)
{
    static ltr_heap_name_reach r;
    if (ltr_heap_name_reach_of(name, &r) != 0 || r.configured || ltr_byname_reaches_comm_now(name))
        return;
    cli_warn("snapshotconfig", "new processes named %s do not start with the heap agent, so they keep no "
             "table: 'ltr heaptracingconfig %s enable' (as root) makes them; a running process takes "
             "'ltr snapshotconfig heap --pid PID enable' (%u named so run now)", name, name, r.running);
}

/* Whether the argument after --pid's (or after its first) is one more
 * process id. The first is one whatever it says (a bad one is named as a
 * PID); after it, a word is the verb: '--pid 4242 enabled' was refused as
 * "PID: 'enabled' is not valid", sending the user to check a pid that was
 * right (as 'ltr heaptracingconfig' says, the verb is named). */
static bool more_pid(const char *arg, bool first)
{
    if (arg[0] == '-' || !strcmp(arg, "enable") || !strcmp(arg, "disable"))
        return false;
    return first || (arg[0] >= '0' && arg[0] <= '9');
}

int cmd_snapshotconfig(int argc, char **argv)
{
    if (cli_snapshot_help(argc, argv, usage, help) == 0)
        return 0;
    if (argc < 2)
        return cli_usage_error("snapshotconfig", usage);
    int rc = cli_snapshot_kind("snapshotconfig", argv[1], usage);
    if (rc)
        return rc;
    uint32_t pids[64];
    int npids = 0, verb = -1; /* -1 none, 0 disable, 1 enable */
    const char *name = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--name") && i + 1 < argc && !name) {
            name = argv[++i];
        } else if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
            for (bool first = true; i + 1 < argc && more_pid(argv[i + 1], first); first = false) {
                if (npids == 64)
                    return cli_fail("snapshotconfig", "at most 64 process ids at once");
                if (cli_snapshot_pid("snapshotconfig", argv[++i], &pids[npids++]))
                    return 2;
            }
        } else if ((!strcmp(argv[i], "enable") || !strcmp(argv[i], "disable")) && verb < 0) {
            verb = !strcmp(argv[i], "enable");
        } else if (argv[i][0] != '-' && verb < 0) {
            fprintf(stderr, "ltr snapshotconfig: unknown verb '%s': say 'enable' or 'disable'\n", argv[i]);
            return cli_usage_error("snapshotconfig", usage);
        } else {
            fprintf(stderr, "ltr snapshotconfig: unexpected '%s'\n", argv[i]);
            return cli_usage_error("snapshotconfig", usage);
        }
    }
    if (!name == !npids) {
        fprintf(stderr, "ltr snapshotconfig: give either --pid PID... or --name NAME\n");
        return cli_usage_error("snapshotconfig", usage);
    }
    if (verb < 0)
        return show(name, pids, npids);
    ltr_error err;
    if (name) {
        if (ltr_snapshot_enable_name(name, verb, &err) != 0)
            return cli_fail("snapshotconfig", "%s", err.msg);
        printf("heap snapshots %s for new processes named %s\n", verb ? "enabled" : "disabled", name);
        if (verb)
            warn_without_byname(name);
        return 0;
    }
    rc = 0;
    for (int i = 0; i < npids; i++) {
        /* a library loaded into a running service is said, as ltr start
         * --pid says it, not left for the user to find in its maps */
        bool attach = verb && ltr_heap_agent_loaded(pids[i]) == 0;
        if (ltr_snapshot_enable_pid(pids[i], verb, &err) != 0)
            rc = cli_fail("snapshotconfig", "%s", err.msg);
        else
            printf("heap snapshots %s for process %u%s\n", verb ? "enabled" : "disabled", pids[i],
                   attach ? " (it ran without the heap agent: the agent was loaded into it)" : "");
    }
    return rc;
}
