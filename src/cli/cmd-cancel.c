/*
 * cli/cmd-cancel.c — `ltr cancel`: end a session without writing a trace.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <stdio.h>

static const char usage[] = "ltr cancel [--instance NAME]";

int cmd_cancel(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first;
    int rc = cli_session_args("cancel", argc, argv, usage,
                              "Ends a session and discards what it recorded.\n"
                              "\nexit status: 0 done, 1 no such session or it did not answer,\n"
                              "2 bad usage.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    rc = cli_session_request("cancel", instance, "cancel", NULL, NULL, NULL);
    if (!rc)
        printf("cancelled session '%s'\n", instance);
    return rc;
}
