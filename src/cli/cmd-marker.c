/* cli/cmd-marker.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_marker(int argc, char **argv)
{
    return cli_fail("marker", "not implemented yet");
}
