/*
 * cli/cmd-info.c — `ltr info TRACE [--format text|json]`: what a trace holds. One scan of
 * the file (format/info.h) collects the header, processes, providers with
 * event counts, the last counters and any damage, and writes them as text
 * for people or one JSON object for scripts; this file parses the options
 * and turns damage into warnings and exit status 3.
 */
#include "cli/cli.h"

#include "format/info.h"

#include <inttypes.h>
#include <stdio.h>

#define USAGE "ltr info TRACE [--format text|json]"

static void help(void)
{
    printf("usage: " USAGE "\n\n"
           "Shows what TRACE holds: the session settings (name, mode, buffers,\n"
           "providers, profiles), the host, start time and duration, the description,\n"
           "processes and providers with their event counts, the counters of events\n"
           "and buffers written, lost and overwritten per collector, events lost per\n"
           "process, damage found, and whether the trace is complete or cut short.\n\n"
           "options:\n"
           "  --format F  text (default) or json: one JSON object (--json: the same)\n"
           "  -h, --help  this text\n\n"
           "exit status:\n"
           "  0  done (a trace cut short without damage is not an error)\n"
           "  1  the trace could not be opened or read (missing, not an ltr trace, I/O error)\n"
           "  2  bad usage\n"
           "  3  the trace is damaged: what could be read is shown, the damage is listed\n");
}

static int info(ltr_trace *t, int json)
{
    ltr_trace_info in;
    ltr_error err = {0};
    if (ltr_trace_info_scan(t, &in, &err) < 0)
        return cli_fail("info", "%s", err.msg);
    if (json)
        ltr_trace_info_write_json(stdout, t, &in);
    else
        ltr_trace_info_write_text(stdout, t, &in);
    if (fflush(stdout) != 0)
        return cli_fail_output("info");
    if (in.shm_damage)
        cli_warn("info", "while recording, %" PRIu64 " place(s) of the session's shared memory were found "
                 "written over (by a traced program) and skipped: events may be missing", in.shm_damage);
    char why[200];
    uint64_t unwritten = ltr_trace_unwritten(t, why, sizeof why);
    if (unwritten) /* counted in the events lost, once said nowhere apart from those without a free buffer */
        cli_warn("info", "while recording, %" PRIu64 " event(s) could not be written to the trace: %s", unwritten,
                 why);
    if (in.metadata_lost)
        cli_warn("info", "while recording, %" PRIu64 " metadata record(s) (call stacks' frames, modules, layouts; "
                 "a process's own record only past twice what a flight recorder keeps) did not fit in the "
                 "session's metadata region, which the recorder had not read fast enough, or past what a flight "
                 "recorder keeps: stacks through them show as not recorded, a process without its record as "
                 "'(no process record)', an image its exec began as the program before it", in.metadata_lost);
    cli_warn_layout_lost("info", &in.summary);
    if (in.forged)
        cli_warn("info", "%" PRIu64 " record(s) about a process were another traced program's (listed under "
                 "damage): left out, the process's own shown", in.forged);
    if (in.summary.damage > in.forged) {
        cli_warn("info", "%s is damaged (%" PRIu64 " problem(s)); what could be read is shown",
                 ltr_trace_path(t), in.summary.damage - in.forged);
        return 3;
    }
    return 0;
}

int cmd_info(int argc, char **argv)
{
    const char *path;
    int json;
    int rc = cli_trace_args("info", argc, argv, USAGE, help, &path, &json);
    if (rc >= 0)
        return rc;
    ltr_trace *t;
    ltr_error err = {0};
    if (ltr_trace_open(path, &t, &err) < 0)
        return cli_fail("info", "%s", err.msg);
    int status = info(t, json);
    ltr_trace_close(t);
    return status;
}
