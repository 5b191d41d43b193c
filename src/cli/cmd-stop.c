/*
 * cli/cmd-stop.c — `ltr stop FILE [DESCRIPTION]`: end a session and write its trace.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <stdio.h>

static const char usage[] = "ltr stop FILE [DESCRIPTION] [--instance NAME]";

int cmd_stop(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first;
    int rc = cli_session_args("stop", argc, argv, usage,
                              "Ends a session and writes its trace to FILE: in file mode the trace written so\n"
                              "far, completed; in memory mode what the buffers hold. DESCRIPTION goes into\n"
                              "the trace. If FILE's directory cannot be written, or in memory mode the\n"
                              "trace cannot be written whole (a full disk), the session keeps running and\n"
                              "the exit status is 1. A write error in file mode (a full disk) is reported\n"
                              "with the events it cost, exit status 1.\n",
                              &instance, &first, 1, 2);
    if (rc >= 0)
        return rc;
    char path[4096];
    if (cli_absolute_path("stop", argv[first], path, sizeof path))
        return 2;
    const char *description = first + 1 < argc ? argv[first + 1] : "";
    rc = cli_session_request("stop", instance, "stop", path, description, NULL);
    if (!rc)
        printf("stopped session '%s'; trace written to %s\n", instance, argv[first]);
    return rc;
}
