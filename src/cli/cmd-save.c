/*
 * cli/cmd-save.c — `ltr save FILE`: write a memory-mode session's content as a
 * complete trace; the session keeps recording.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <getopt.h>
#include <stdio.h>

static const char usage[] = "ltr save FILE [--instance NAME]";

int cmd_save(int argc, char **argv)
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
            return printf("usage: %s\n\nWrites what a memory-mode session holds now into FILE, as a "
                          "complete trace.\nThe session goes on recording, unchanged.\n", usage), 0;
        else
            return cli_usage_error("save", usage);
    }
    if (argc - optind != 1)
        return cli_usage_error("save", usage);
    char path[4096];
    if (cli_absolute_path("save", argv[optind], path, sizeof path))
        return 2;
    int rc = cli_session_request("save", instance, "save", path, NULL, NULL);
    if (!rc)
        printf("saved session '%s' to %s\n", instance, argv[optind]);
    return rc;
}
