/*
 * cli/session.c — helpers of the session subcommands.
 */
#include "cli/session.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int request(const char *cmd, const char *session, const char *op, const char *path,
                   const char *text, int force, ltr_kvlist *resp)
{
    ltr_bytes req = {0};
    ltr_bytes_put_kv(&req, "op", op);
    if (path)
        ltr_bytes_put_kv(&req, "path", path);
    if (text)
        ltr_bytes_put_kv(&req, "text", text);
    if (force)
        ltr_bytes_put_kv(&req, "force", "1");
    ltr_error err = {0};
    ltr_kvlist local;
    int rc = ltr_client_request(session, &req, resp ? resp : &local, &err);
    ltr_bytes_free(&req);
    if (!resp)
        ltr_kvlist_free(&local);
    if (rc)
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

int cli_absolute_path(const char *cmd, const char *path, char *out, size_t size)
{
    if (!*path)
        return cli_fail(cmd, "the file name is empty");
    if (path[0] == '/') {
        if (snprintf(out, size, "%s", path) >= (int)size)
            return cli_fail(cmd, "%s: path too long", path);
        return 0;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return cli_fail(cmd, "cannot tell the current directory");
    if (snprintf(out, size, "%s/%s", cwd, path) >= (int)size)
        return cli_fail(cmd, "%s: path too long", path);
    return 0;
}
