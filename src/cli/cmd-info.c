/* cli/cmd-info.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_info(int argc, char **argv)
{
    return cli_fail("info", "not implemented yet");
}
