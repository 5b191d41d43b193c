/*
 * cli/cmd-dump.c — `ltr dump TRACE [--format text|json]`: every event of a trace, one per
 * line, in file order, as text or JSON Lines. Reading and formatting are the
 * reader's (include/ltr/trace.h); this file parses options, streams, and turns
 * damage into exit status 3 so scripts can tell partial output from full.
 */
#include "cli/cli.h"
#include "format/blocks.h"
#include "format/info.h"

#include <ltr/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "ltr dump TRACE [--format text|json]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Prints every event of TRACE, one per line, in file order:\n"
           "  <seconds since trace start> <pid>/<tid> <provider>/<event> field=value ...\n"
           "Strings are quoted with C-style escapes, blobs are hex, pointers 0x...\n\n"
           "options:\n"
           "  --format F  text (default), or json: one JSON object per line (JSON Lines):\n"
           "              {\"t\":SECONDS,\"ts\":NS,\"pid\":..,\"tid\":..,\"collector\":..,\n"
           "               \"provider\":..,\"event\":..,\"id\":..,\"level\":..,\"fields\":{..}}\n"
           "              (--json: the same as --format json)\n"
           "  -h, --help  this text\n\n"
           "exit status:\n"
           "  0  every event printed (a trace cut short without damage, or one whose\n"
           "     counters say events were lost or overwritten, warns on stderr)\n"
           "  1  the trace could not be opened or read (missing, not an ltr trace, I/O error)\n"
           "  2  bad usage\n"
           "  3  the trace is damaged: every intact event was printed, the damage is\n"
           "     listed on stderr\n");
}

/* Events the session was sent that the trace does not hold (its counters):
 * a flight recorder's save is its newest events only, and a dump that said
 * nothing of the others read as the whole recording. */
static void warn_missing(const ltr_trace *t)
{
    unsigned long long lost = 0, overwritten = 0;
    char why[200];
    unsigned long long unwritten = ltr_trace_unwritten(t, why, sizeof why);
    for (size_t i = 0; i < ltr_trace_collector_count(t); i++) {
        lost += ltr_trace_collector_at(t, i)->events_lost;
        overwritten += ltr_trace_collector_at(t, i)->events_overwritten;
    }
    if (lost > unwritten || overwritten)
        cli_warn("dump", "the trace lacks events the session was sent: %llu lost while recording (no free "
                 "buffer) and %llu older ones overwritten in memory mode before it was written; every event it "
                 "holds was printed ('ltr info' counts them per collector and process)", lost - unwritten,
                 overwritten);
    if (unwritten) /* once said to have found no free buffer */
        cli_warn("dump", "the trace lacks %llu events the recorder could not write to it: %s; every event it "
                 "holds was printed", unwritten, why);
}

/* Lists damage on stderr; returns the exit status the trace's state asks for. */
static int report_state(const ltr_trace *t, const char *path)
{
    ltr_trace_summary s;
    ltr_trace_summarize(t, &s);
    warn_missing(t);
    cli_warn_layout_lost("dump", &s);
    uint64_t forged = ltr_trace_forged_count(t);
    if (forged)
        cli_warn("dump", "%llu record(s) about a process were another traced program's ('ltr info' lists them): "
                 "left out", (unsigned long long)forged);
    if (s.damage == forged) {
        if (!s.complete)
            cli_warn("dump", "%s was cut short (no END chunk): events up to its last chunk were printed",
                     path);
        return 0;
    }
    cli_warn("dump", "%s is damaged (%llu problem(s)); every intact event was printed", path,
             (unsigned long long)(s.damage - forged));
    for (size_t i = 0; i < ltr_trace_damage_count(t); i++) {
        char line[400];
        ltr_damage_format(ltr_trace_damage_at(t, i), line, sizeof line);
        fprintf(stderr, "  %s\n", line);
    }
    return 3;
}

static int dump(ltr_trace *t, int json)
{
    /* stdout's for the process's life; on the heap, not in the .bss that
     * LeakSanitizer reads whole at every exit of an ASan build's ltr */
    static char *outbuf;
    if (!outbuf && (outbuf = malloc(1 << 20)))
        setvbuf(stdout, outbuf, _IOFBF, 1 << 20);
    const ltr_event *ev;
    ltr_error err = {0};
    uint64_t origin = 0;
    int rc, first = 1;
    while ((rc = ltr_trace_next(t, &ev, &err)) > 0) {
        if (first)
            origin = ltr_trace_origin_ns(t);
        first = 0;
        if (json)
            ltr_event_print_json(stdout, ev, origin);
        else
            ltr_event_print_text(stdout, ev, origin);
        putchar('\n');
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        return cli_fail_output("dump");
    if (rc < 0)
        return cli_fail("dump", "%s", err.msg);
    return report_state(t, ltr_trace_path(t));
}

int cmd_dump(int argc, char **argv)
{
    const char *path;
    int json;
    int rc = cli_trace_args("dump", argc, argv, USAGE, help, &path, &json);
    if (rc >= 0)
        return rc;
    ltr_trace *t;
    ltr_error err = {0};
    if (ltr_trace_open(path, &t, &err) < 0)
        return cli_fail("dump", "%s", err.msg);
    int status = dump(t, json);
    ltr_trace_close(t);
    return status;
}
