/*
 * recorder/system.c — the recorder's side of the system provider: when the
 * session enables Ltr.System (a profile's system keywords, or --provider), it
 * runs src/system's thread with the parts the session's keywords name, the
 * --pid processes as first targets and every process that attaches after;
 * processes system-wide unless the session limits its system collector to
 * its targets (ltr watch does: pid_collectors).
 */
#include "recorder/internal.h"
#include "base/system_events.h"
#include "prim/prim.h"

#include <string.h>

static const ltr_provider_spec *system_spec(const ltr_session_config *cfg)
{
    ltr_guid g;
    ltr_guid_from_name(LTR_SYSTEM_PROVIDER, &g);
    for (unsigned i = 0; i < cfg->nproviders; i++)
        if (!memcmp(cfg->providers[i].guid.b, g.b, sizeof g.b))
            return &cfg->providers[i];
    return NULL;
}

bool ltr_session_records_system(const ltr_session_config *cfg)
{
    return system_spec(cfg) != NULL;
}

bool ltr_session_samples_cpu(const ltr_session_config *cfg)
{
    const ltr_provider_spec *ps = system_spec(cfg);
    return ps && (!ps->any || (ps->any & LTR_SYSKW_SAMPLES));
}

int ltr_session_cpu_samples_check(const ltr_session_config *cfg, char *why, size_t why_size)
{
    const ltr_provider_spec *ps = system_spec(cfg);
    if (!ps || (ps->any && !(ps->any & LTR_SYSKW_SAMPLES)))
        return 0;
    return ltr_system_cpu_probe(why, why_size);
}

void rec_system_start(recorder *r)
{
    const ltr_provider_spec *ps = system_spec(&r->cfg);
    if (!ps)
        return;
    ltr_system_config sc = {.session = r->cfg.name, .keywords = ps->any,
                            .interval_ms = r->cfg.system_interval_ms,
                            .pids = r->cfg.pids, .npids = r->cfg.npids,
                            .targets_only = (r->cfg.pid_collectors >> ps->collector) & 1};
    ltr_error err = {0};
    if (ltr_system_start(&sc, &r->system, &err) != 0) {
        r->system = NULL;
        rec_log("the system provider does not record: %s", err.msg);
    } else if (ltr_system_cpu_problem(r->system)) {
        rec_log("CPU samples (SampledProfile) are not recorded: %s; the rest records",
                ltr_system_cpu_problem(r->system));
    }
}

void rec_system_stop(recorder *r)
{
    if (!r->system)
        return;
    ltr_system_report rep;
    ltr_system_stop(r->system, &rep);
    r->system = NULL;
    if (rep.overruns)
        rec_log("the system provider missed process events %llu time(s): the kernel's process connector "
                "dropped them (its socket buffer was full)", (unsigned long long)rep.overruns);
}
