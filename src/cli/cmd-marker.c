/*
 * cli/cmd-marker.c — `ltr marker TEXT`: a marker event in every running session
 * (or one), to find a moment in the trace later (`ltr analyze --from TEXT`).
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr marker TEXT [--instance NAME]";

int cmd_marker(int argc, char **argv)
{
    static const struct option opts[] = {{"instance", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *instance = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'n')
            instance = optarg;
        else if (c == 'h')
            return printf("usage: %s\n\nPuts a marker event holding TEXT into every running "
                          "session, or only into NAME.\n", usage), 0;
        else
            return cli_usage_error("marker", usage);
    }
    if (argc - optind != 1)
        return cli_usage_error("marker", usage);
    const char *text = argv[optind];
    if (instance)
        return cli_session_request("marker", instance, "marker", NULL, text, NULL);
    char names[64][64];
    ltr_error err;
    int n = ltr_client_sessions(names, 64, &err);
    if (n < 0)
        return cli_fail("marker", "%s", err.msg);
    if (n == 0)
        return cli_fail("marker", "no session is running");
    int rc = 0;
    for (int i = 0; i < n; i++)
        rc |= cli_session_request("marker", names[i], "marker", NULL, text, NULL);
    return rc;
}
