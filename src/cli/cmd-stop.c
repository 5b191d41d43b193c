/* cli/cmd-stop.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_stop(int argc, char **argv)
{
    return cli_fail("stop", "not implemented yet");
}
