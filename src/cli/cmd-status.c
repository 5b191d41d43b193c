/* cli/cmd-status.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_status(int argc, char **argv)
{
    return cli_fail("status", "not implemented yet");
}
