/*
 * cli/ltr.c — entry point of the ltr command: finds the subcommand and runs it.
 */
#include "cli/cli.h"
#include "prim/prim.h"
#include "recorder/recorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Grouped as WPR's users think of its command line: sessions (-start,
 * -stop, -flush...), the heap settings (-heaptracingconfig, -snapshotconfig,
 * -singlesnapshot...), traces (-merge, then WPA's side), profiles and
 * providers (-profiles, -exportprofile, -providers). */
#define RECORDING "recording (sessions and their traces)"
#define HEAP "heap settings (which processes, snapshots)"
#define TRACES "traces (read, analyze, merge)"
#define PROFILES "profiles and providers"
static const cli_command commands[] = {
    {"start", cmd_start, "start a recording session", RECORDING},
    {"status", cmd_status, "show running sessions: mode, buffers, events written and lost", RECORDING},
    {"marker", cmd_marker, "put a marker event into every running session", RECORDING},
    {"flush", cmd_flush, "write all a file-mode session holds into its trace now, to read it", RECORDING},
    {"capturestate", cmd_capturestate, "write again the processes, threads and modules a session knows", RECORDING},
    {"save", cmd_save, "write a memory-mode session's content to a trace, keep recording", RECORDING},
    {"stop", cmd_stop, "end a session and write its trace", RECORDING},
    {"cancel", cmd_cancel, "end a session without writing a trace", RECORDING},
    {"record", cmd_record, "heap-trace a command and what it starts, from launch to exit", RECORDING},
    {"run", cmd_run, "launch a command with the heap agent into the running sessions", RECORDING},
    {"watch", cmd_watch, "a flight recorder on one process that saves itself when its memory grows", RECORDING},
    {"boottrace", cmd_boottrace, "start a session at every boot (a systemd unit), or --disable it", RECORDING},
    {"heaptracingconfig", cmd_heaptracingconfig, "heap-trace new processes of a name (persistent, root)", HEAP},
    {"snapshotconfig", cmd_snapshotconfig, "keep a live-block table for heap snapshots (--pid, --name)", HEAP},
    {"singlesnapshot", cmd_singlesnapshot, "write a heap snapshot of processes now", HEAP},
    {"enableperiodicsnapshot", cmd_enableperiodicsnapshot, "write heap snapshots every N seconds", HEAP},
    {"disableperiodicsnapshot", cmd_disableperiodicsnapshot, "stop periodic heap snapshots", HEAP},
    {"info", cmd_info, "show what a trace holds: header, processes, providers, counters", TRACES},
    {"dump", cmd_dump, "print every event of a trace, one per line", TRACES},
    {"analyze", cmd_analyze, "which call stacks hold the memory, over a time window", TRACES},
    {"export", cmd_export, "write the heap analysis as pprof, folded stacks, JSON, CSV or Chrome trace", TRACES},
    {"report", cmd_report, "the analysis as one HTML page: memory over time, stacks, flame graph", TRACES},
    {"merge", cmd_merge, "merge traces of this machine and boot into one", TRACES},
    {"symbolize", cmd_symbolize, "add the names of its frames to a trace, to read it where its binaries are not", TRACES},
    {"profiles", cmd_profiles, "list recording profiles, built-in or of a .wprp file; --export one", PROFILES},
    {"providers", cmd_providers, "the providers programs named, and the sessions that enable each", PROFILES},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ltr COMMAND [OPTIONS] [ARGS]\n"
                 "       ltr help [COMMAND] | ltr --help | ltr --version\n\n"
                 "ltr, the Linux trace recorder: records events and heap allocations with\n"
                 "their call stacks, and finds what holds the memory.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!i || strcmp(commands[i].group, commands[i - 1].group))
            fprintf(out, "%s%s:\n", i ? "\n" : "", commands[i].group);
        fprintf(out, "  %-23s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\n'ltr help COMMAND' or 'ltr COMMAND --help' tells more about a command;\n"
                 "'ltr --version' prints the version.\n\n"
                 "exit status: each command's help lists its own; 0 done, 1 failed, 2 bad\n"
                 "usage, unless it says otherwise.\n");
}

static const cli_command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name))
            return &commands[i];
    return NULL;
}

static const cli_command *find(const char *name);

/* WPR's first-level options whose ltr command has another name or shape
 * ('wpr -help start' is 'ltr help start'): a WPR user typed them and was told
 * only "not an ltr command". */
static const struct {
    const char *wpr, *ltr;
} wpr_commands[] = {
    {"-help", "ltr help [COMMAND]"},
    {"-capturestateondemand", "ltr capturestate"},
    {"-exportprofile", "ltr profiles --export [FILE.wprp!]Name OUT.wprp"},
    {"-markerflush", "ltr marker TEXT"},
    {"-profiledetails", "ltr profiles [FILE.wprp!]Name --details"},
};

static int unknown(const char *name)
{
    fprintf(stderr, "ltr: '%s' is not an ltr command. See 'ltr --help'.\n", name);
    if (name[0] == '-' && find(name + 1)) /* WPR's spelling: wpr -start */
        fprintf(stderr, "ltr: ltr's commands take no dash, as WPR's do: 'ltr %s'\n", name + 1);
    for (size_t i = 0; i < sizeof wpr_commands / sizeof wpr_commands[0]; i++)
        if (!strcasecmp(name, wpr_commands[i].wpr))
            fprintf(stderr, "ltr: WPR's %s is '%s'\n", wpr_commands[i].wpr, wpr_commands[i].ltr);
    return 2;
}

/* WPR's options (any case: -instanceName) whose ltr option is named
 * otherwise: "two dashes: --instancename" named an option ltr does not have. */
static const struct {
    const char *wpr, *ltr;
} wpr_options[] = {
    {"-instancename", "--instance NAME"},
    {"-skippdbgen", "--no-symbols"},
    {"-recordtempto", "--output FILE (file mode), or TMPDIR=DIR before the command"},
};

static bool wpr_option_hint(const char *cmd, const char *a, bool text)
{
    for (size_t i = 0; i < sizeof wpr_options / sizeof wpr_options[0]; i++)
        if (!strcasecmp(a, wpr_options[i].wpr)) {
            fprintf(stderr, "ltr %s: WPR's %s is %s here\n", cmd, a, wpr_options[i].ltr);
            return true;
        }
    /* 'wpr -start heap -start CPU': a command again, as an option ("two
     * dashes: --start" named an option no command has); of a text ('ltr
     * marker -start'), only the command's own name */
    if (a[0] == '-' && a[1] != '-' && find(a + 1) && (!text || !strcmp(a + 1, cmd))) {
        fprintf(stderr, "ltr %s: %s is WPR's command, given once here and without a dash%s\n", cmd, a,
                !strcmp(a + 1, "start") ? ": every profile follows it ('ltr start heap general')" : "");
        return true;
    }
    return false;
}

/* After a usage error: WPR's options take one dash (-filemode), ltr's long
 * ones two; getopt said only "invalid option -- 'f'". */
static int dashes_hint(int rc, int argc, char **argv)
{
    /* the commands that run a program: its own arguments, and its exit status
     * (watch runs none: 'ltr watch -pid P' got no hint) */
    bool runs = !strcmp(argv[1], "record") || !strcmp(argv[1], "run");
    /* and those that take a text, which may start with a dash ('ltr marker -done'):
     * only WPR's own option names are said of them */
    bool text = !strcmp(argv[1], "marker") || !strcmp(argv[1], "stop") || !strcmp(argv[1], "save");
    for (int i = 2; rc == 2 && !runs && i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--") || wpr_option_hint(argv[1], a, text))
            break;
        if (!text && a[0] == '-' && a[1] >= 'a' && a[1] <= 'z' && a[2] >= 'a' && a[2] <= 'z' &&
            strspn(a + 1, "abcdefghijklmnopqrstuvwxyz-") == strlen(a + 1)) {
            fprintf(stderr, "ltr %s: long options take two dashes: --%s, not WPR's %s\n", argv[1], a + 1, a);
            break;
        }
    }
    return rc;
}

/* Runs c with argv[0] "ltr NAME": getopt begins its own messages with
 * argv[0], and they read "start: unrecognized option '--bogus'" beside
 * every other message's "ltr start: ...". */
static int run(const cli_command *c, int argc, char **argv)
{
    char shown[64];
    snprintf(shown, sizeof shown, "ltr %s", c->name);
    char *name = argv[0];
    argv[0] = shown;
    int rc = c->run(argc, argv);
    argv[0] = name;
    return rc;
}

/* `ltr help [COMMAND]`: the same text as `ltr COMMAND --help`. */
static int help(int argc, char **argv)
{
    if (argc < 3 || !strcmp(argv[2], "help")) {
        usage(stdout);
        return 0;
    }
    if (argc > 3) {
        fprintf(stderr, "ltr help: one COMMAND at most\nusage: ltr help [COMMAND]\n");
        return 2;
    }
    const cli_command *c = find(argv[2]);
    if (!c)
        return unknown(argv[2]);
    char *args[] = {argv[2], "--help", NULL};
    return run(c, 2, args);
}

/* What a command printed must have reached its reader for exit status 0:
 * 'ltr profiles >/dev/full' printed nothing and exited 0, as did status,
 * providers and every --help. Commands whose output is the product (info,
 * dump, analyze) check it themselves already, with their own words. */
static int output_written(const char *cmd, int rc)
{
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        int e = cli_stdout_errno() ? cli_stdout_errno() : errno ? errno : EIO; /* a flush before: its own */
        fprintf(stderr, "ltr%s%s: writing the output failed: %s\n", cmd ? " " : "", cmd ? cmd : "", strerror(e));
        return 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    ltr_ignore_sigxfsz(); /* past ulimit -f: EFBIG, said like a full disk, not a silent death */
    ltr_recorder_title_area(argc, argv); /* before getopt reorders argv */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help"))
        return output_written(NULL, help(argc, argv));
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return output_written(NULL, 0);
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ltr " LTR_VERSION "\n");
        return output_written(NULL, 0);
    }
    const cli_command *c = find(argv[1]);
    return c ? output_written(argv[1], dashes_hint(run(c, argc - 1, argv + 1), argc, argv)) : unknown(argv[1]);
}
