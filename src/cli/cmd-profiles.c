/* cli/cmd-profiles.c — placeholder until the command is written. */
#include "cli/cli.h"

int cmd_profiles(int argc, char **argv)
{
    return cli_fail("profiles", "not implemented yet");
}
