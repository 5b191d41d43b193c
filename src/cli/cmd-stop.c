/*
 * cli/cmd-stop.c — `ltr stop [FILE [DESCRIPTION]]`: end a session and write
 * its trace. A file-mode session started with -o FILE already knows where
 * its trace goes (as WPR's -filemode then -stop): FILE may be left out.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"

#include <stdio.h>
#include <string.h>

static const char usage[] = "ltr stop [FILE [DESCRIPTION]] [--force] [--no-symbols] [--instance NAME]";

/* Without FILE: the -o FILE the session grows its trace in; any other
 * session says what to give. Returns 0 or the exit status. */
static int own_output(const char *instance, const ltr_session_status *st, char *path, size_t size)
{
    if (!st->file_mode)
        return cli_fail("stop", "session '%s' is in memory mode: give the FILE to write its trace to",
                        instance), 2;
    if (st->output_temp || !st->has_output)
        return cli_fail("stop", "session '%s' grows its trace under a temporary name (%s, no -o FILE was "
                        "given to ltr start): give the FILE to keep it in", instance, st->output), 2;
    snprintf(path, size, "%s", st->output);
    return 0;
}

/* Events lost for want of a free buffer, with the options to raise: 'ltr
 * stop' said nothing of them, and the analysis "no free buffer, or a size
 * limit" (a review: 2 buffers of 4 KB, 8 threads, 159 813 events of 160 011
 * lost, unsaid until 'ltr analyze'). The collector named is the one that
 * had lost the most when asked before the stop. */
static void warn_lost(const ltr_session_status *st, const cli_stop_counts *c)
{
    unsigned long long n = c->known ? cli_stop_counts_unbuffered(c) : 0;
    if (!n)
        return;
    const ltr_collector_status *most = NULL;
    for (unsigned i = 0; i < st->ncollectors; i++)
        if (!most || st->collectors[i].events_lost > most->events_lost)
            most = &st->collectors[i];
    char now[160] = "";
    if (most)
        snprintf(now, sizeof now, " (%s had --buffers %llu --buffer-size %llu)", most->name,
                 (unsigned long long)most->buffers, (unsigned long long)most->buffer_size / 1024);
    cli_warn("stop", "%llu of %llu events were lost: no buffer was free while the programs wrote faster than the "
             "recorder took them%s; start the session again with more or larger buffers%s%s", n, c->emitted,
             st->max_file_size ? ", or the trace reached --max-file-size" : "", now,
             st->max_file_size ? ", or a larger --max-file-size" : "");
}

int cmd_stop(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first, force = 0, no_symbols = 0;
    int rc = cli_session_file_args("stop", argc, argv, usage,
                                   "Ends a session and writes its trace to FILE: in file mode the trace written so\n"
                                   "far, completed; in memory mode what the buffers hold. DESCRIPTION goes into\n"
                                   "the trace. A file-mode session started with -o FILE needs no FILE here: its\n"
                                   "trace is completed where it grows; a FILE given moves it there (said). An\n"
                                   "existing FILE is not overwritten (the session goes on\n"
                                   "recording) unless --force is given. If FILE's directory cannot be written,\n"
                                   "or in memory mode the trace cannot be written whole (a full disk), the\n"
                                   "session keeps running and the exit status is 1. A write error in file\n"
                                   "mode (a full disk) is reported with the events it cost, exit status 1.\n\n"
                                   CLI_INSTANCE_HELP CLI_NO_SYMBOLS_HELP
                                   "\nexit status: 0 the trace was written, 1 it was not (no such session,\n"
                                   "FILE could not be written), 2 bad usage (no FILE for a session that\n"
                                   "needs one).\n",
                                   &instance, &first, 0, 2, &force, &no_symbols);
    if (rc >= 0)
        return rc;
    /* no session to stop says so first: not that the file is there, and
     * then, with --force, that the session is not (a review) */
    static ltr_session_status st; /* 40 KB: not on the stack */
    ltr_error err;
    if (ltr_client_status(instance, &st, &err) < 0)
        return cli_fail("stop", "%s", err.msg);
    char path[4096];
    if (first == argc ? own_output(instance, &st, path, sizeof path) != 0
                      : cli_absolute_path("stop", argv[first], path, sizeof path) != 0)
        return 2;
    bool ours = st.has_output && !strcmp(st.output, path); /* stopping into it replaces nothing */
    if (!ours && ltr_path_taken(path) && cli_refuse_existing("stop", path, force))
        return 1;
    const char *description = first + 1 < argc ? argv[first + 1] : "";
    ltr_kvlist resp;
    rc = cli_session_write_request("stop", instance, "stop", path, description, force, &resp);
    if (rc && !no_symbols)
        cli_name_written("stop", &resp);
    char flag[4];
    bool taken = !rc && ltr_kvlist_get(&resp, "output_taken", flag, sizeof flag) && !strcmp(flag, "1");
    cli_stop_counts counts = {0};
    if (!rc)
        counts = cli_stop_counts_read(&resp);
    ltr_kvlist_free(&resp);
    cli_name_leftovers("stop", path); /* a save or stop killed while writing here left them */
    if (!rc) {
        printf("stopped session '%s'; trace written to %s", instance, first < argc ? argv[first] : path);
        if (taken) /* its -o FILE named another file by then: that one stays */
            printf(" (from the session's own file: %s, the -o FILE of ltr start, had become another file, "
                   "left as it is)", st.output);
        else if (st.has_output && !st.output_temp && !ours) /* the user named another file at the start */
            printf(" (moved from %s, the -o FILE of ltr start)", st.output);
        printf("\n");
        cli_flush_stdout();
        cli_warn_unattached("stop", &st, true);
        warn_lost(&st, &counts);
        if (!no_symbols)
            cli_add_symbols("stop", path, NULL, 0);
    }
    return rc;
}
