/* cli/cmd-cancel.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_cancel(int argc, char **argv)
{
    return cli_fail("cancel", "not implemented yet");
}
