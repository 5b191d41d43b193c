/*
 * cli/cmd-marker.c — `ltr marker TEXT`: a marker event in every running session
 * (or one), to find a moment in the trace later (`ltr analyze --from TEXT`).
 */
#include "cli/cli.h"
#include "cli/session.h"

#include <stdio.h>

static const char usage[] = "ltr marker TEXT [--instance NAME]";

/* The marker into one session; a session that did not take it is named, the
 * others are marked all the same. */
static int mark(const char *session, const char *text)
{
    ltr_error err = {0};
    if (ltr_client_op(session, "marker", NULL, text, false, NULL, &err))
        return cli_fail("marker", "no marker in session '%s': %s", session, err.msg);
    return 0;
}

int cmd_marker(int argc, char **argv)
{
    const char *instance = NULL;
    int first;
    int rc = cli_session_args("marker", argc, argv, usage,
                              "Puts a marker event holding TEXT into every running session, or only into\n"
                              "NAME.\n"
                              "\nexit status: 0 done, 1 no session is running or one did not take the\n"
                              "marker, 2 bad usage.\n",
                              &instance, &first, 1, 1);
    if (rc >= 0)
        return rc;
    const char *text = argv[first];
    if (instance)
        return mark(instance, text);
    char names[64][64];
    ltr_error err;
    int n = ltr_client_sessions(names, 64, &err);
    if (n < 0)
        return cli_fail("marker", "%s", err.msg);
    if (n == 0)
        return cli_fail("marker", "no session is running");
    rc = 0;
    for (int i = 0; i < n; i++)
        rc |= mark(names[i], text);
    return rc;
}
