/*
 * cli/session.c — helpers of the session subcommands.
 */
#include "cli/session.h"
#include "cli/cli.h"
#include "inject/inject.h"
#include "prim/prim.h"

#include "recorder/heaprun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
    for (unsigned i = 0; st->heap && i < st->nwanted; i++) { /* no heap: no agent to join */
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

/* From the stop's answer: what the trace's last counters tell, what 'ltr
 * info' says of it. The session's status asked before the stop missed what
 * an attached process allocated until the stop ('10451 heap events' of a
 * trace of 10452); reading the trace again for them took 0.6 s for 3.6 M
 * events (cc1plus's), minutes for a day's service. */
cli_stop_counts cli_stop_counts_read(const ltr_kvlist *stopped)
{
    cli_stop_counts c = {0};
    char w[32], l[32], o[32];
    if (!ltr_kvlist_get(stopped, "events_written", w, sizeof w) || !ltr_kvlist_get(stopped, "events_lost", l, sizeof l) ||
        !ltr_kvlist_get(stopped, "events_overwritten", o, sizeof o)) {
        ltr_fail(&c.why, EPROTO, "the recorder's answer to the stop did not say them");
        return c;
    }
    c.kept = strtoull(w, NULL, 10);
    c.lost = strtoull(l, NULL, 10);
    c.overwritten = strtoull(o, NULL, 10);
    if (ltr_kvlist_get(stopped, "events_unattached", w, sizeof w)) /* a recorder before it: all lost for buffers */
        c.unattached = strtoull(w, NULL, 10);
    c.unattached = c.unattached < c.lost ? c.unattached : c.lost;
    if (ltr_kvlist_get(stopped, "events_unwritten", w, sizeof w)) /* a recorder before it: in lost alone */
        c.unwritten = strtoull(w, NULL, 10);
    c.unwritten = c.unwritten < c.lost - c.unattached ? c.unwritten : c.lost - c.unattached;
    if (ltr_kvlist_get(stopped, "attaches_refused", w, sizeof w))
        c.refused = strtoull(w, NULL, 10);
    if (ltr_kvlist_get(stopped, "attaches_pidless", w, sizeof w))
        c.pidless = strtoull(w, NULL, 10);
    c.recorded = c.kept + c.overwritten;
    c.emitted = c.recorded + c.lost;
    c.known = 1;
    return c;
}

unsigned long long cli_stop_counts_unbuffered(const cli_stop_counts *c)
{
    return c->lost - c->unattached - c->unwritten; /* read keeps unattached + unwritten <= lost */
}

void cli_warn_few_buffers(const char *cmd, uint32_t buffers)
{
    unsigned cpus = ltr_heap_cpus();
    uint64_t fewest = (uint64_t)LTR_HEAP_BUFFERS_FEWEST_PER_CPU * cpus;
    if (buffers >= fewest)
        return;
    cli_warn(cmd, "--buffers %u is likely to lose heap events on %u CPU(s): each thread that allocates holds a buffer "
             "while it fills it, and a full one waits for the recorder; with fewer than %u per CPU, runs of 1 to 8 "
             "threads lost events 3 times in 4 (docs/heap-tracing.md): give --buffers %llu or more", buffers, cpus,
             LTR_HEAP_BUFFERS_FEWEST_PER_CPU, (unsigned long long)fewest);
}
