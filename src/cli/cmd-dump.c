/* cli/cmd-dump.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_dump(int argc, char **argv)
{
    return cli_fail("dump", "not implemented yet");
}
