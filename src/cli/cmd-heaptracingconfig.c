/*
 * cli/cmd-heaptracingconfig.c — `ltr heaptracingconfig [NAME [enable|disable]]`
 * (WPR's -heaptracingconfig): the persistent setting under which every new
 * process of an executable name starts with the heap agent, dormant, so that
 * `ltr start heap --name NAME` traces it without an attach. The work is in
 * byname/ (the files under /etc/ltr, the line in /etc/ld.so.preload).
 */
#include "byname/byname.h"
#include "cli/cli.h"
#include "recorder/heaprun.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char usage[] = "ltr heaptracingconfig [NAME [enable|disable]]";

static void help(void)
{
    printf("usage: %s\n\n"
           "Heap tracing of new processes by executable name, as WPR's -heaptracingconfig\n"
           "(Image File Execution Options). With 'enable', every process started from now\n"
           "on whose executable's file name is NAME (as /proc/PID/exe names it, symbolic\n"
           "links resolved: python3 is python3.11 on Debian 12) starts with the heap agent\n"
           "loaded and dormant: it records nothing and costs next to nothing until a\n"
           "session enables it, 'ltr start heap --name NAME' (or --pid). The setting\n"
           "persists across reboots until 'disable'. Processes running already are not\n"
           "changed; 'ltr start heap --name NAME' reaches those by attaching.\n\n"
           "Without a verb, says whether NAME is enabled; without NAME, lists the names.\n\n"
           "How: a tiny shim, %s, listed in %s, loads the\n"
           "agent (a copy, %s) into processes of the names listed in\n"
           "%s, and into no other. Changing the setting edits those\n"
           "system files and needs root. 'disable' of the last name gives\n"
           "%s back byte for byte as it was (or removes it if there was\n"
           "none) and removes %s's files. Enabling again refreshes the copies\n"
           "(do it after upgrading ltr). Programs built with AddressSanitizer refuse to\n"
           "start while any library is in %s (ASAN_OPTIONS=\n"
           "verify_asan_link_order=0 lets them); setuid programs are never given the agent.\n\n"
           "What it costs: every new dynamically linked process of the machine maps the\n"
           "shim and makes five system calls more (0.1 to 0.3 ms of its start), and a\n"
           "process of NAME loads the agent (0.6 to 2.8 ms more) and creates its user's ltr\n"
           "runtime directory if missing. 32-bit programs print the loader's \"wrong ELF\n"
           "class\" error at each start: do not enable it where they run. To undo it,\n"
           "disable every name ('ltr heaptracingconfig' lists them); never remove\n"
           "%s by hand while %s names the shim: the\n"
           "loader would print an error in every process.\n"
           "docs/heap-tracing.md tells the trade-offs.\n\n"
           "exit status: 0 done (or the name is enabled, when asked), 1 failed, not root,\n"
           "or the name is not enabled (when asked, or to disable), 2 bad usage or a bad\n"
           "NAME.\n",
           usage, LTR_BYNAME_SHIM, LTR_BYNAME_PRELOAD, LTR_BYNAME_AGENT, LTR_BYNAME_NAMES, LTR_BYNAME_PRELOAD,
           LTR_BYNAME_DIR, LTR_BYNAME_PRELOAD, LTR_BYNAME_DIR, LTR_BYNAME_PRELOAD);
}

static int list(void)
{
    static ltr_byname_list l;
    ltr_error err;
    if (ltr_byname_read(&l, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    if (!l.n)
        printf("heap tracing by name: no name enabled\n");
    for (unsigned i = 0; i < l.n; i++)
        printf("%s: enabled\n", l.names[i]);
    return 0;
}

static int query(const char *name)
{
    static ltr_byname_list l;
    ltr_error err;
    if (ltr_byname_read(&l, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    for (unsigned i = 0; i < l.n; i++)
        if (!strcmp(l.names[i], name)) {
            printf("%s: enabled\n", name);
            return 0;
        }
    printf("%s: disabled\n", name);
    return 1;
}

/* The shim beside the agent ltr would preload (build/lib, or the libdir). */
static int sources(char *agent, char *shim, size_t size, ltr_error *err)
{
    if (ltr_heap_agent_path(agent, size, err))
        return -1;
    const char *slash = strrchr(agent, '/');
    int dir = slash ? (int)(slash - agent) : 1;
    snprintf(shim, size, "%.*s/%s", dir, slash ? agent : ".", LTR_BYNAME_SHIM_FILE);
    return 0;
}

static int enable(const char *name)
{
    char agent[4096], shim[4200];
    ltr_error err;
    if (sources(agent, shim, sizeof shim, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    int rc = ltr_byname_enable(name, shim, agent, &err);
    if (rc < 0)
        return cli_fail("heaptracingconfig", "%s", err.msg);
    if (rc == 1)
        printf("%s: enabled already (the shim and agent in %s refreshed)\n", name, LTR_BYNAME_DIR);
    else
        printf("%s: enabled: new processes of this name start with the heap agent, dormant; "
               "'ltr start heap --name %s' traces them\n", name, name);
    return 0;
}

static int disable(const char *name)
{
    ltr_error err;
    if (ltr_byname_disable(name, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    static ltr_byname_list l;
    int left = ltr_byname_read(&l, &err) == 0 ? (int)l.n : -1;
    printf("%s: disabled (processes started before keep the dormant agent until they exit)%s\n", name,
           left == 0 ? "; no name is left: " LTR_BYNAME_PRELOAD " is as it was, " LTR_BYNAME_DIR
                       "'s files are removed" : "");
    return 0;
}

int cmd_heaptracingconfig(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return help(), 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1])
            return cli_fail("heaptracingconfig", "unknown option '%s'", argv[i]), cli_usage_error("heaptracingconfig", usage);
    if (argc > 3)
        return cli_usage_error("heaptracingconfig", usage);
    if (argc == 1)
        return list();
    ltr_error err;
    if (ltr_byname_check(argv[1], &err))
        return cli_fail("heaptracingconfig", "%s", err.msg), 2;
    if (argc == 2)
        return query(argv[1]);
    if (!strcmp(argv[2], "enable"))
        return enable(argv[1]);
    if (!strcmp(argv[2], "disable"))
        return disable(argv[1]);
    cli_fail("heaptracingconfig", "unknown verb '%s': say 'enable' or 'disable'", argv[2]);
    return cli_usage_error("heaptracingconfig", usage);
}
