/* cli/cmd-save.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_save(int argc, char **argv)
{
    return cli_fail("save", "not implemented yet");
}
