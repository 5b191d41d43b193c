/*
 * recorder/reach.c — the processes a session names, attached: --pid's one
 * by one once the session runs (so that the agent finds it at once), and the
 * running processes of a --name (see reach.h).
 */
#include "recorder/reach.h"
#include "recorder/heaprun.h"

#include <string.h>

static void reach_one(uint32_t pid, const char *agent, const char *rundir, ltr_reached *r)
{
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->state = ltr_attach_agent((pid_t)pid, agent, rundir, LTR_INJECT_TIMEOUT_MS, &r->rep, &r->why);
}

int ltr_session_reach_pids(const ltr_session_config *cfg, const char *rundir, ltr_reached *out, ltr_error *err)
{
    char agent[4096];
    if (cfg->npids && ltr_heap_agent_path(agent, sizeof agent, err))
        return -err->code;
    int reached = 0;
    for (unsigned i = 0; i < cfg->npids; i++) {
        reach_one(cfg->pids[i], agent, rundir, &out[i]);
        reached += out[i].state >= 0;
    }
    return reached;
}

void ltr_session_reach_name(const char *name, const char *rundir, ltr_name_reached *out)
{
    memset(out, 0, sizeof *out);
    static ltr_heap_name_reach found;
    out->listed = ltr_heap_name_reach_of(name, &found) == 0;
    out->configured = found.configured;
    out->without = found.without;
    char agent[4096];
    out->have_agent = ltr_heap_agent_path(agent, sizeof agent, &out->agent_err) == 0;
    out->tried = found.without < LTR_MAX_SESSION_PIDS ? found.without : LTR_MAX_SESSION_PIDS;
    for (unsigned k = 0; k < out->tried && out->have_agent; k++)
        reach_one(found.pids_without[k], agent, rundir, &out->procs[k]);
}
