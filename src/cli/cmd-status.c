/*
 * cli/cmd-status.c — `ltr status`: each running session's mode, age,
 * buffers, and events recorded and lost per collector; and the sessions whose
 * recorder was killed, with their partial traces and how to recover them.
 */
#include "cli/cli.h"
#include "cli/session.h"
#include "prim/prim.h"

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] = "ltr status [--instance NAME]";

static int status_of(const char *session)
{
    static ltr_session_status st;
    ltr_error err;
    if (ltr_client_status(session, &st, &err))
        return cli_fail("status", "%s", err.msg);
    ltr_session_status_write(stdout, &st);
    cli_flush_stdout();
    cli_warn_unattached("status", &st, false);
    return 0;
}

static void print_dead(const ltr_dead_session *d)
{
    char when[32];
    cli_local_time(d->start_wall_ns, when, sizeof when);
    printf("session '%s' is dead: its recorder (pid %u, started %s) was killed or crashed\n", d->name,
           d->pid, when);
    if (d->has_partial) {
        cli_local_time(d->partial_mtime_ns, when, sizeof when);
        printf("  partial trace: %s (%.1f MB, last written %s)\n"
               "    it holds what was recorded up to the recorder's last flush (once a second):\n"
               "    read it as it is (ltr analyze %s), or rename it to keep it\n",
               d->output, (double)d->partial_size / 1048576.0, when, d->output);
    } else {
        printf("  memory mode: what it recorded was in the recorder's memory and is lost\n");
    }
    if (d->log_kept)
        printf("  the recorder's log: %s\n", d->log_path);
    printf("  'ltr cancel --instance %s' forgets this session%s\n", d->name,
           d->file_mode ? " (the partial trace stays)" : "");
}

/* Dead sessions, after removing what killed recorders left behind. */
static int print_dead_sessions(const char *only)
{
    enum { MAX_DEAD = 32 };
    ltr_error err;
    ltr_dead_session *dead = malloc(sizeof *dead * MAX_DEAD);
    if (!dead)
        return cli_fail("status", "out of memory");
    int n = ltr_client_dead_sessions(dead, MAX_DEAD, &err);
    if (n < 0) { /* what live sessions said stands: this part is only a warning */
        free(dead);
        cli_warn("status", "dead sessions cannot be listed: %s", err.msg);
        return 0;
    }
    for (int i = 0; i < n && i < MAX_DEAD; i++)
        if (!only || !strcmp(only, dead[i].name))
            print_dead(&dead[i]);
    if (n > MAX_DEAD && !only)
        printf("and %d more dead sessions\n", n - MAX_DEAD);
    free(dead);
    return 0;
}

int cmd_status(int argc, char **argv)
{
    const char *instance = NULL;
    int first;
    int rc = cli_session_args("status", argc, argv, usage,
                              "Shows every running session (or one): its mode, how long it has run, its\n"
                              "buffers, and the events recorded, lost and overwritten per collector.\n"
                              "Then the sessions whose recorder was killed: their partial traces and how\n"
                              "to recover them.\n\n"
                              "  --instance NAME      that session only\n"
                              "\nexit status: 0 done (also when no session is running), 1 a session\n"
                              "could not be asked, 2 bad usage.\n",
                              &instance, &first, 0, 0);
    if (rc >= 0)
        return rc;
    char dir[4096];
    ltr_error err;
    if (ltr_runtime_dir(dir, sizeof dir, &err) != 0)
        return cli_fail("status", "%s", err.msg);
    if (err.msg[0]) /* a fallback past a directory another user holds */
        cli_warn("status", "%s", err.msg);
    if (instance) {
        rc = status_of(instance);
        return print_dead_sessions(instance) | rc;
    }
    char names[64][64];
    int n = ltr_client_sessions(names, 64, &err);
    if (n < 0)
        return cli_fail("status", "%s", err.msg);
    if (n == 0)
        printf("no session is running\n");
    rc = 0;
    for (int i = 0; i < n; i++)
        rc |= status_of(names[i]);
    return print_dead_sessions(NULL) | rc;
}
