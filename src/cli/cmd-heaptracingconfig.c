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

static const char usage[] = "ltr heaptracingconfig [NAME [enable|disable]] | --disable-all";

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
           "Without a verb, says whether NAME is enabled; without NAME, lists the names.\n"
           "--disable-all removes the setting whatever its names file holds, as the\n"
           "disable of its last name does.\n\n"
           "NAME is UTF-8 text that ltr prints as it is: no space, no control character.\n"
           "In the names file (one a line; '#' starts a comment), the blanks around a name\n"
           "are not part of it ('foo\\r' is foo); a line that is still no name, one after\n"
           "the %d first, or a file larger than %u bytes or not root's alone enables\n"
           "nothing: the listing says so, and the next enable or disable writes the file\n"
           "anew, its names only.\n\n"
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
           "disable every name ('ltr heaptracingconfig' lists them) or use --disable-all;\n"
           "never remove %s by hand while %s names the shim: the\n"
           "loader would print an error in every process.\n"
           "docs/heap-tracing.md tells the trade-offs.\n\n"
           "exit status: 0 done (or the name is enabled, when asked), 1 failed, not root,\n"
           "or the name is not enabled (when asked, or to disable), 2 bad usage or a bad\n"
           "NAME.\n",
           usage, LTR_BYNAME_MAX_NAMES, (unsigned)LTR_BYNAME_FILE_MAX, LTR_BYNAME_SHIM, LTR_BYNAME_PRELOAD, LTR_BYNAME_AGENT, LTR_BYNAME_NAMES, LTR_BYNAME_PRELOAD,
           LTR_BYNAME_DIR, LTR_BYNAME_PRELOAD, LTR_BYNAME_DIR, LTR_BYNAME_PRELOAD);
}

/* What in the names file enables no process, one line each (a hand edit:
 * ltr writes names only); returns whether there was any. */
static bool say_inert(FILE *out, const ltr_byname_list *l, const char *prefix)
{
    char line[512];
    for (unsigned i = 0; i < l->n_strays; i++) {
        ltr_byname_stray_text(&l->strays[i], line, sizeof line);
        fprintf(out, "%s%s\n", prefix, line);
    }
    if (l->twice)
        fprintf(out, "%s%u lines repeat a name above\n", prefix, l->twice);
    if (l->more)
        fprintf(out, "%slines after the %d entries above: the shim reads no more, they match no process\n", prefix,
                LTR_BYNAME_MAX_NAMES);
    return l->n_strays || l->twice || l->more || l->inert[0];
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
        printf(l.inert[0] ? "%s: listed, not enabled\n" : "%s: enabled\n", l.names[i]);
    if (l.inert[0])
        printf("no name is enabled: %s\n", l.inert);
    if (say_inert(stdout, &l, "") || (!l.n && l.present))
        printf("the next 'enable' or 'disable' writes %s anew, its names only; 'ltr heaptracingconfig "
               "--disable-all' removes the setting\n", LTR_BYNAME_NAMES);
    return 0;
}

static int query(const char *name)
{
    static ltr_byname_list l;
    ltr_error err;
    if (ltr_byname_read(&l, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    if (ltr_byname_listed(&l, name))
        return printf("%s: enabled\n", name), 0;
    for (unsigned i = 0; i < l.n; i++)
        if (!strcmp(l.names[i], name))
            return printf("%s: listed, not enabled: %s\n", name, l.inert), 1;
    printf("%s: disabled\n", name);
    return 1;
}

/* After a change: what else it changed in a names file ltr did not write. */
static void say_rewritten(const ltr_byname_list *was, unsigned names_now)
{
    if (was->inert[0])
        printf("  %s, so no name was enabled: it is written anew, and its %u names are enabled now\n", was->inert,
               names_now);
    if (was->n_strays || was->twice || was->more) {
        printf("  written anew without what matched no process:\n");
        say_inert(stdout, was, "    ");
    }
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
    static ltr_byname_list was;
    ltr_error err;
    if (sources(agent, shim, sizeof shim, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    int rc = ltr_byname_enable(name, shim, agent, &was, &err);
    if (rc < 0)
        return cli_fail("heaptracingconfig", "%s", err.msg);
    bool had = false;
    for (unsigned i = 0; i < was.n; i++)
        had |= !strcmp(was.names[i], name);
    if (had)
        printf("%s: enabled already (the shim and agent in %s refreshed)\n", name, LTR_BYNAME_DIR);
    else
        printf("%s: enabled: new processes of this name start with the heap agent, dormant; "
               "'ltr start heap --name %s' traces them\n", name, name);
    say_rewritten(&was, was.n + !had);
    return 0;
}

static int disable(const char *name)
{
    static ltr_byname_list was;
    ltr_error err;
    if (ltr_byname_disable(name, &was, &err))
        return cli_fail("heaptracingconfig", "%s", err.msg);
    printf("%s: disabled (processes started before keep the dormant agent until they exit)%s\n", name,
           was.n == 1 ? "; no name is left: " LTR_BYNAME_PRELOAD " is as it was, " LTR_BYNAME_DIR
                        "'s files are removed" : "");
    if (was.n > 1)
        say_rewritten(&was, was.n - 1);
    return 0;
}

/* The way out whatever the names file holds (one ltr cannot read, or only
 * lines that match nothing): WPR has none but 'NAME disable'. */
static int disable_all(void)
{
    ltr_error err;
    int rc = ltr_byname_disable_all(&err);
    if (rc < 0)
        return cli_fail("heaptracingconfig", "%s", err.msg);
    if (rc)
        printf("heap tracing by name is off: no name is left, " LTR_BYNAME_PRELOAD " is as it was, "
               LTR_BYNAME_DIR "'s files are removed\n");
    else
        printf("heap tracing by name was off already: nothing changed\n");
    return 0;
}

int cmd_heaptracingconfig(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return help(), 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--disable-all") && argc != 2) /* was "unknown option '--disable-all'" */
            return cli_fail("heaptracingconfig", "--disable-all takes nothing else: '%s' too",
                            argv[i == 1 ? 2 : 1]),
                   cli_usage_error("heaptracingconfig", usage);
    if (argc == 2 && !strcmp(argv[1], "--disable-all"))
        return disable_all();
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
