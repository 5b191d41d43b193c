/*
 * cli/session.c — helpers of the session subcommands.
 */
#include "cli/session.h"
#include "cli/cli.h"
#include "prim/prim.h"

#include <string.h>

static int request(const char *cmd, const char *session, const char *op, const char *path,
                   const char *text, int force, ltr_kvlist *resp)
{
    ltr_error err = {0};
    if (ltr_client_op(session, op, path, text, force, resp, &err))
        return cli_fail(cmd, "%s", err.msg);
    return 0;
}

int cli_session_request(const char *cmd, const char *session, const char *op, const char *path,
                        const char *text, ltr_kvlist *resp)
{
    return request(cmd, session, op, path, text, 0, resp);
}

int cli_session_write_request(const char *cmd, const char *session, const char *op, const char *path,
                              const char *text, int force, ltr_kvlist *resp)
{
    return request(cmd, session, op, path, text, force, resp);
}

int cli_trace_not_stdout(const char *cmd, const char *path)
{
    if (strcmp(path, "-") != 0)
        return 0;
    return cli_fail(cmd, "a trace cannot go to standard output ('-'): it is a file written whole, then named; "
                    "give a file name (./- for a file named '-')");
}

int cli_absolute_path(const char *cmd, const char *path, char *out, size_t size)
{
    ltr_error err;
    if (cli_trace_not_stdout(cmd, path))
        return 1;
    if (ltr_absolute_path(path, out, size, &err))
        return cli_fail(cmd, "%s", err.msg);
    return 0;
}
