/*
 * recorder/reach.h — bringing the processes a session names (--pid, --name)
 * within its reach: each running one without the heap agent gets it through
 * the injector (inject/inject.h), one that carries it already is left as it
 * is. The results are typed, one per process, so that `ltr start` only
 * prints them and a test can check them in-process.
 */
#ifndef LTR_RECORDER_REACH_H
#define LTR_RECORDER_REACH_H

#include "inject/inject.h"
#include "recorder/recorder.h"

/* One process: state is LTR_ATTACH_ALREADY or LTR_ATTACH_INJECTED, or
 * -errno with why saying what stopped it. */
typedef struct ltr_reached {
    uint32_t pid;
    int state;
    ltr_inject_report rep;
    ltr_error why;
} ltr_reached;

/* Every --pid of cfg, in order, into out[cfg->npids]. Returns how many were
 * reached, or -errno with err when the agent cannot be found at all. */
int ltr_session_reach_pids(const ltr_session_config *cfg, const char *rundir, ltr_reached *out, ltr_error *err);

/* The running processes of name that lack the agent (at most
 * LTR_MAX_SESSION_PIDS of them), each attached now. */
typedef struct ltr_name_reached {
    bool listed;         /* /proc could be read */
    bool configured;     /* new processes of name start with the agent (heaptracingconfig) */
    bool have_agent;     /* the agent's file was found; else agent_err says why */
    ltr_error agent_err;
    unsigned without;    /* running processes of name without the agent */
    unsigned tried;      /* of which attached or tried: min(without, LTR_MAX_SESSION_PIDS) */
    ltr_reached procs[LTR_MAX_SESSION_PIDS];
} ltr_name_reached;
void ltr_session_reach_name(const char *name, const char *rundir, ltr_name_reached *out);

#endif
