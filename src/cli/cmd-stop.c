/*
 * cli/cmd-stop.c — `ltr stop FILE [DESCRIPTION]`: end a session and write its trace.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"

#include <stdio.h>

static const char usage[] = "ltr stop FILE [DESCRIPTION] [--force] [--no-symbols] [--instance NAME]";

int cmd_stop(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first, force = 0, no_symbols = 0;
    int rc = cli_session_file_args("stop", argc, argv, usage,
                                   "Ends a session and writes its trace to FILE: in file mode the trace written so\n"
                                   "far, completed; in memory mode what the buffers hold. DESCRIPTION goes into\n"
                                   "the trace. An existing FILE is not overwritten (the session goes on\n"
                                   "recording) unless --force is given. If FILE's directory cannot be written,\n"
                                   "or in memory mode the trace cannot be written whole (a full disk), the\n"
                                   "session keeps running and the exit status is 1. A write error in file\n"
                                   "mode (a full disk) is reported with the events it cost, exit status 1.\n\n"
                                   CLI_INSTANCE_HELP CLI_NO_SYMBOLS_HELP
                                   "\nexit status: 0 the trace was written, 1 it was not (no such session,\n"
                                   "FILE could not be written), 2 bad usage.\n",
                                   &instance, &first, 1, 2, &force, &no_symbols);
    if (rc >= 0)
        return rc;
    char path[4096];
    if (cli_absolute_path("stop", argv[first], path, sizeof path))
        return 2;
    if (ltr_path_taken(path)) {
        /* no session to stop says so first: not that the file is there, and
         * then, with --force, that the session is not (a review) */
        ltr_error err;
        int ours = ltr_client_is_session_output(instance, path, &err);
        if (ours < 0)
            return cli_fail("stop", "%s", err.msg);
        if (!ours && cli_refuse_existing("stop", path, force))
            return 1;
    }
    const char *description = first + 1 < argc ? argv[first + 1] : "";
    rc = cli_session_write_request("stop", instance, "stop", path, description, force, NULL);
    if (!rc) {
        printf("stopped session '%s'; trace written to %s\n", instance, argv[first]);
        cli_flush_stdout();
        if (!no_symbols)
            cli_add_symbols("stop", path, NULL, 0);
    }
    return rc;
}
