/*
 * cli/cmd-flush.c — `ltr flush` (WPR's -flush): a file-mode session writes
 * everything committed so far into the trace it grows, so the file can be
 * read (ltr info, dump, analyze) while the session goes on.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "recorder/recorder.h"

#include <stdio.h>

static const char usage[] = "ltr flush [--instance NAME]";

int cmd_flush(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first;
    int rc = cli_session_args("flush", argc, argv, usage,
                              "Makes a file-mode session write every event its programs have committed so\n"
                              "far, the metadata they use and its counters into the trace it grows (the\n"
                              "file 'ltr status' names as output), and to the disk. When the command\n"
                              "returns, that file is a valid trace holding all of them (but those in\n"
                              "buffers behind one a thread has not finished handing in, preempted there\n"
                              "or killed: it says how many, written later): 'ltr info',\n"
                              "'ltr dump' and 'ltr analyze' read it, as a trace still being written (no\n"
                              "END chunk yet). The session goes on recording, unchanged; 'ltr stop FILE'\n"
                              "ends it as usual. A session flushes by itself about once a second; this\n"
                              "makes it happen now. A memory-mode session has no file: 'ltr save FILE'\n"
                              "writes what it holds.\n\n"
                              "  --instance NAME   the session (default: ltr)\n"
                              "\nexit status: 0 flushed, 1 not flushed (no such session, a memory-mode\n"
                              "session, a write to the trace failed: a full disk), 2 bad usage or a bad\n"
                              "session name.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    ltr_flush_result res;
    ltr_error err;
    if (ltr_session_name_check(instance, &err))
        return cli_fail("flush", "%s", err.msg), 2;
    rc = ltr_client_flush(instance, &res, &err);
    if (rc)
        return cli_fail("flush", "%s", err.msg);
    if (res.full)
        cli_warn("flush", "the trace reached its --max-file-size: later events are counted as lost");
    if (res.write_error[0])
        cli_warn("flush", "%llu events could not be written to the trace: %s", (unsigned long long)res.dropped,
                 res.write_error);
    if (res.held) /* a thread preempted between its two steps of handing one in, under load, or killed there */
        printf("flushed session '%s': %s holds what was recorded so far but %llu events, in buffers behind one "
               "a thread has not finished handing in: written later, at the stop at the latest (%llu bytes)\n",
               instance, res.output, (unsigned long long)res.held, (unsigned long long)res.file_size);
    else
        printf("flushed session '%s': %s holds everything recorded so far (%llu bytes)\n", instance, res.output,
               (unsigned long long)res.file_size);
    return 0;
}
