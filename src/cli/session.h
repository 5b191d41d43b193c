/*
 * cli/session.h — what the session subcommands (start, status, save, stop,
 * cancel, marker) share: the --instance option and sending one request.
 */
#ifndef LTR_CLI_SESSION_H
#define LTR_CLI_SESSION_H

#include "recorder/client.h"

#define LTR_DEFAULT_SESSION "ltr"

/* Sends {op, path, text} (path/text may be NULL) to a session; prints the error
 * under the command's name on failure. Returns the exit status (0 or 1). */
int cli_session_request(const char *cmd, const char *session, const char *op, const char *path,
                        const char *text, ltr_kvlist *resp);
/* The same for a request that writes path (save, stop): with force, the
 * recorder replaces a file already there (docs/control-protocol.md). resp
 * may be NULL. */
int cli_session_write_request(const char *cmd, const char *session, const char *op, const char *path,
                              const char *text, int force, ltr_kvlist *resp);
/* A trace's path of '-' is refused, said: other commands' -o - is standard
 * output, and a trace went into a file named '-' ("-: 2 traces merged"). */
int cli_trace_not_stdout(const char *cmd, const char *path);
/* Makes a trace's path absolute against the current directory (the
 * recorder runs in /); '-' is refused (cli_trace_not_stdout). */
int cli_absolute_path(const char *cmd, const char *path, char *out, size_t size);
/* A warning under cmd for each --pid of the session that is not attached
 * and, running, never joined (status.joined: one whose connection closed is traced),
 * with its reason (ltr_attach_explain). running_only: only those still
 * running, which never joined (`ltr stop`: one that joined and exited has
 * its events in the trace). */
void cli_warn_unattached(const char *cmd, const ltr_session_status *st, bool running_only);

#endif
