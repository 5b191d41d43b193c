/*
 * cli/cmd-save.c — `ltr save FILE`: write a memory-mode session's content as a
 * complete trace; the session keeps recording.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <stdio.h>

static const char usage[] = "ltr save FILE [--force] [--no-symbols] [--instance NAME]";

int cmd_save(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first, force = 0, no_symbols = 0;
    int rc = cli_session_file_args("save", argc, argv, usage,
                                   "Writes what a memory-mode session holds now into FILE, as a complete trace.\n"
                                   "The session goes on recording, unchanged, also when FILE cannot be written.\n"
                                   "An existing FILE is not "
                                   "overwritten unless --force is given.\n\n"
                                   CLI_INSTANCE_HELP CLI_NO_SYMBOLS_HELP
                                   "\nexit status: 0 the trace was written, 1 it was not (no such session,\n"
                                   "not in memory mode, FILE could not be written), 2 bad usage.\n",
                                   &instance, &first, 1, 1, &force, &no_symbols);
    if (rc >= 0)
        return rc;
    char path[4096];
    if (cli_absolute_path("save", argv[first], path, sizeof path))
        return 2;
    if (cli_refuse_existing("save", path, force))
        return 1;
    rc = cli_session_write_request("save", instance, "save", path, NULL, force, NULL);
    cli_name_leftovers("save", path); /* a save or stop killed while writing here left them */
    if (!rc) {
        printf("saved session '%s' to %s\n", instance, argv[first]);
        cli_flush_stdout();
        if (!no_symbols)
            cli_add_symbols("save", path, NULL, 0);
    }
    return rc;
}
