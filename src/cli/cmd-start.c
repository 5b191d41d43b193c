/* cli/cmd-start.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_start(int argc, char **argv)
{
    return cli_fail("start", "not implemented yet");
}
