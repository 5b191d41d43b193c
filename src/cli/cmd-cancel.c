/*
 * cli/cmd-cancel.c — `ltr cancel`: end a session without writing a trace.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr cancel [--instance NAME]";

int cmd_cancel(int argc, char **argv)
{
    static const struct option opts[] = {{"instance", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *instance = LTR_DEFAULT_SESSION;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'n')
            instance = optarg;
        else if (c == 'h')
            return printf("usage: %s\n\nEnds a session and discards what it recorded.\n", usage), 0;
        else
            return cli_usage_error("cancel", usage);
    }
    if (optind < argc)
        return cli_usage_error("cancel", usage);
    int rc = cli_session_request("cancel", instance, "cancel", NULL, NULL, NULL);
    if (!rc)
        printf("cancelled session '%s'\n", instance);
    return rc;
}
