/*
 * cli/cmd-cancel.c — `ltr cancel`: end a session without writing a trace.
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <errno.h>
#include <stdio.h>

static const char usage[] = "ltr cancel [--instance NAME]";

int cmd_cancel(int argc, char **argv)
{
    const char *instance = LTR_DEFAULT_SESSION;
    int first;
    int rc = cli_session_args("cancel", argc, argv, usage,
                              "Ends a session and discards what it recorded. A session whose recorder\n"
                              "was killed (see ltr status) is forgotten; its partial trace stays.\n\n"
                              CLI_INSTANCE_HELP
                              "\nexit status: 0 done, 1 no such session or it did not answer,\n"
                              "2 bad usage.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    ltr_error err;
    int dead = ltr_client_forget(instance, &err);
    if (dead < 0)
        return cli_fail("cancel", "%s", err.msg);
    if (dead > 0)
        printf("forgot dead session '%s' (any partial trace of it stays where it is)\n", instance);
    rc = ltr_client_op(instance, "cancel", NULL, NULL, false, NULL, &err);
    if (!rc)
        printf("cancelled session '%s'\n", instance);
    else if (!dead || err.code != ESRCH)
        return cli_fail("cancel", "%s", err.msg);
    return 0;
}
