/*
 * cli/cmd-stop.c — `ltr stop FILE [DESCRIPTION]`: end a session and write its trace.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr stop FILE [DESCRIPTION] [--instance NAME]";

int cmd_stop(int argc, char **argv)
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
            return printf("usage: %s\n\nEnds a session and writes its trace to FILE: in file mode the "
                          "trace written so far,\ncompleted; in memory mode what the buffers hold. "
                          "DESCRIPTION goes into the trace.\n", usage), 0;
        else
            return cli_usage_error("stop", usage);
    }
    if (argc - optind < 1 || argc - optind > 2)
        return cli_usage_error("stop", usage);
    char path[4096];
    if (cli_absolute_path("stop", argv[optind], path, sizeof path))
        return 2;
    const char *description = argc - optind == 2 ? argv[optind + 1] : "";
    int rc = cli_session_request("stop", instance, "stop", path, description, NULL);
    if (!rc)
        printf("stopped session '%s'; trace written to %s\n", instance, argv[optind]);
    return rc;
}
