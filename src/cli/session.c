/*
 * cli/session.c — helpers of the session subcommands.
 */
#include "cli/session.h"
#include "cli/cli.h"
#include "inject/inject.h"
#include "prim/prim.h"

#include <stdio.h>
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

void cli_warn_unattached(const char *cmd, const ltr_session_status *st, bool running_only)
{
    char rundir[4096] = "";
    ltr_error err;
    for (unsigned i = 0; i < st->nwanted; i++) {
        bool found = false;
        for (unsigned j = 0; j < st->nattached && !found; j++)
            found = st->attached[j] == st->wanted[i];
        bool joined = false; /* and running, its connection closed since: traced still */
        for (unsigned j = 0; j < st->njoined && !joined; j++)
            joined = st->joined[j] == st->wanted[i];
        bool alive = ltr_pid_alive((pid_t)st->wanted[i]);
        if (found || (joined && alive) || (running_only && !alive))
            continue;
        if (!rundir[0] && ltr_runtime_dir(rundir, sizeof rundir, &err))
            snprintf(rundir, sizeof rundir, "?");
        char why[600];
        ltr_attach_explain((pid_t)st->wanted[i], rundir, why, sizeof why);
        if (running_only)
            cli_warn(cmd, "session '%s': --pid %u never joined it, and none of its allocations is in the trace: "
                     "%s", st->name, st->wanted[i], why);
        else
            cli_warn(cmd, "session '%s': --pid %u is not attached: %s", st->name, st->wanted[i], why);
    }
}
