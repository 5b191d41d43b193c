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

/* What the session recorded and lost. */
typedef struct cli_stop_counts {
    unsigned long long recorded, lost, overwritten, kept, emitted;
    unsigned long long unattached; /* of lost: of processes that never joined the session */
    unsigned long long unwritten;  /* of lost: those the trace's file refused (a failed write) */
    unsigned long long refused, pidless; /* attaches the recorder refused; of them, claiming no pid */
    int known;
    ltr_error why; /* not known: why (said only if the stop went well: else the stop says it) */
} cli_stop_counts;

/* From the stop's answer: what the trace's last counters tell, what 'ltr
 * info' says of it. The session's status asked before the stop missed what
 * an attached process allocated until the stop ('10451 heap events' of a
 * trace of 10452); reading the trace again for them took 0.6 s for 3.6 M
 * events (cc1plus's), minutes for a day's service. */
cli_stop_counts cli_stop_counts_read(const ltr_kvlist *stopped);
/* Of the lost, those lost for want of a free buffer (or past a size limit). */
unsigned long long cli_stop_counts_unbuffered(const cli_stop_counts *c);
/* A warning under cmd when buffers, given by --buffers to a session that
 * heap-traces, are too few for this machine's CPUs
 * (LTR_HEAP_BUFFERS_FEWEST_PER_CPU): said before anything is lost. */
void cli_warn_few_buffers(const char *cmd, uint32_t buffers);

#endif
