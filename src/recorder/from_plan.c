/*
 * recorder/from_plan.c — turning a resolved recording profile (a session plan
 * from profiles/) into a session configuration: collectors that carry
 * something become buffer pools, event providers become ltr providers, and
 * what Linux or this ltr does not have yet becomes a note for the user.
 */
#include "recorder/recorder.h"
#include "recorder/heaprun.h"
#include "base/records.h"
#include "prim/prim.h"
#include "profiles/profiles.h"
#include "profiles/linuxmap.h"
#include "base/system_events.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void note(ltr_bytes *notes, const char *fmt, const char *a, const char *b)
{
    char line[1024];
    snprintf(line, sizeof line, fmt, a, b ? b : "");
    ltr_bytes_put_mem(notes, line, strlen(line));
    ltr_bytes_put_u8(notes, '\n');
}

uint64_t ltr_buffers_from_ram_share(uint64_t percent, uint32_t buffer_kb)
{
    return ltr_total_ram() / 100 * percent / ((uint64_t)buffer_kb * 1024);
}

static uint32_t buffer_count(const ltr_plan_collector *pc)
{
    if (!pc->buffers_percent)
        return pc->buffers;
    uint64_t n = ltr_buffers_from_ram_share(pc->buffers, pc->buffer_size_kb);
    return n < LTR_BUFFERS_MIN ? LTR_BUFFERS_MIN : n > LTR_BUFFERS_MAX ? LTR_BUFFERS_MAX : (uint32_t)n;
}

/* Text a .wprp file chose (a collector's Name, a profile's Id), as the
 * session keeps it: `ltr start`, `ltr status` and the recorder's log print
 * it, often on root's terminal, and XML carries a C1 control (&#x9b;, a CSI)
 * or a bidirectional one, which became '?' only where `ltr profiles` showed
 * them (prim's ltr_shown_text). */
static void shown_in_place(char *text)
{
    text[ltr_shown_text(text, strlen(text), text, false)] = 0;
}

/* The session collector for plan collector i, creating it on first use. */
static int collector_for(const ltr_plan *plan, size_t i, ltr_session_config *cfg, int *map,
                         ltr_error *err)
{
    if (map[i] >= 0)
        return map[i];
    if (cfg->ncollectors == LTR_MAX_COLLECTORS)
        return ltr_fail(err, E2BIG, "the profiles use more than %d collectors with something "
                                    "to record; ltr sessions have at most %d",
                        LTR_MAX_COLLECTORS, LTR_MAX_COLLECTORS);
    const ltr_plan_collector *pc = &plan->collectors[i];
    ltr_collector_spec *cs = &cfg->collectors[cfg->ncollectors];
    snprintf(cs->name, sizeof cs->name, "%s", pc->name);
    shown_in_place(cs->name);
    cs->buffer_kb = pc->buffer_size_kb;
    cs->buffers = buffer_count(pc);
    map[i] = (int)cfg->ncollectors++;
    return map[i];
}

static void join_profiles(const ltr_plan *plan, ltr_session_config *cfg)
{
    size_t used = 0;
    for (size_t i = 0; i < plan->nprofiles; i++) {
        int n = snprintf(cfg->profiles + used, sizeof cfg->profiles - used, "%s%s", i ? ";" : "",
                         plan->profiles[i]);
        if (n < 0 || (size_t)n >= sizeof cfg->profiles - used)
            break;
        used += (size_t)n;
    }
    shown_in_place(cfg->profiles);
}

/* One line naming each unavailable system keyword once: those that map to a
 * part of ltr not there yet (has_part), or those with no Linux meaning. */
static void list_syskw(const ltr_plan *plan, ltr_bytes *notes, bool has_part, const char *title)
{
    size_t start = notes->len, listed = 0;
    ltr_bytes_put_mem(notes, title, strlen(title));
    for (size_t i = 0; i < plan->nsyskw; i++) {
        const ltr_plan_syskw *k = &plan->syskw[i];
        /* an unknown keyword is not listed here: its own note says so */
        if (k->available || (k->linux_part != NULL) != has_part || (!has_part && !ltr_syskw_lookup(k->name)))
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(plan->syskw[j].name, k->name);
        if (seen)
            continue;
        if (listed++)
            ltr_bytes_put_mem(notes, ", ", 2);
        ltr_bytes_put_mem(notes, k->name, strlen(k->name));
    }
    if (listed)
        ltr_bytes_put_u8(notes, '\n');
    else
        notes->len = start;
}

/* A skipped "system keyword NAME" the line of list_syskw above already
 * names (a known Windows facility): said once, not twice. */
static bool listed_keyword(const char *what)
{
    static const char kw[] = "system keyword ";
    return !strncmp(what, kw, sizeof kw - 1) && ltr_syskw_lookup(what + sizeof kw - 1) != NULL;
}

/* One of the heap agent's providers, by name, in the plan's collector
 * (its index in cfg, or negative: err says why). */
static int add_agent_provider(const ltr_plan *plan, size_t collector, const char *name, ltr_session_config *cfg,
                              int *map, ltr_error *err)
{
    int c = collector_for(plan, collector, cfg, map, err);
    if (c < 0)
        return c;
    if (cfg->nproviders == LTR_MAX_SESSION_PROVIDERS)
        return ltr_fail(err, E2BIG, "the profiles enable more than %d providers",
                        LTR_MAX_SESSION_PROVIDERS);
    ltr_provider_spec *ps = &cfg->providers[cfg->nproviders++];
    memset(ps, 0, sizeof *ps);
    snprintf(ps->name, sizeof ps->name, "%s", name);
    ltr_guid_from_name(name, &ps->guid);
    ps->collector = (uint8_t)c;
    return c;
}

/* Heap tracing: the Ltr.Heap provider of the heap agent, in the profile's
 * heap collector, under its name as every other collector ('ltr status'
 * said "heap" where 'ltr profiles --details' said "ltr Heap Collector"). */
static int add_heap(const ltr_plan *plan, ltr_session_config *cfg, int *map, ltr_error *err)
{
    int c = add_agent_provider(plan, plan->heap.collector, LTR_HEAP_PROVIDER, cfg, map, err);
    if (c < 0)
        return c;
    /* HeapProcessIds: only these processes are heap-traced. */
    cfg->pid_collectors |= (uint8_t)(1u << c);
    for (size_t i = 0; i < plan->heap.npids; i++) {
        if (cfg->npids == LTR_MAX_SESSION_PIDS)
            return ltr_fail(err, E2BIG, "the profiles name more than %d heap process ids",
                            LTR_MAX_SESSION_PIDS);
        cfg->pids[cfg->npids++] = plan->heap.pids[i];
    }
    /* HeapProcessNames: and the processes of these executable names. */
    for (size_t i = 0; i < plan->heap.nprocess_names; i++) {
        if (cfg->nnames == LTR_MAX_SESSION_NAMES)
            return ltr_fail(err, E2BIG, "the profiles name more than %d heap process names",
                            LTR_MAX_SESSION_NAMES);
        snprintf(cfg->names[cfg->nnames++], sizeof cfg->names[0], "%s", plan->heap.process_names[i]);
    }
    return 0;
}

/* Heap snapshots: the Ltr.HeapSnapshot provider of the agent, for every
 * process whose snapshots are enabled (`ltr snapshotconfig`), not only the
 * heap collector's process ids. */
static int add_snapshot(const ltr_plan *plan, ltr_session_config *cfg, int *map, ltr_error *err)
{
    int c = add_agent_provider(plan, plan->heap.snapshot_collector, LTR_HEAP_SNAPSHOT_PROVIDER, cfg, map, err);
    return c < 0 ? c : 0;
}

/* The keyword bit of Ltr.System that a system part is recorded under. */
static uint64_t part_bit(const char *part)
{
    static const struct { const char *part; uint64_t bit; } bits[] = {
        {LTR_PART_PROCESSES, LTR_SYSKW_PROCESS}, {LTR_PART_MODULES, LTR_SYSKW_LOADER},
        {LTR_PART_MEMINFO, LTR_SYSKW_MEMINFO},   {LTR_PART_SAMPLES, LTR_SYSKW_SAMPLES},
        {LTR_PART_VMEM, LTR_SYSKW_VMEM},         {LTR_PART_FILEIO, LTR_SYSKW_FILEIO},
    };
    for (size_t i = 0; part && i < sizeof bits / sizeof bits[0]; i++)
        if (!strcmp(bits[i].part, part))
            return bits[i].bit;
    return 0;
}

/* The available system keywords: the Ltr.System provider with their parts'
 * keyword bits, in the system collector of the first of them that is in one
 * (else the collector of the first): a kernel provider named in an event
 * collector (Microsoft-Windows-ImageLoad, in WPRP_Network's NetworkFull) also
 * asks for a part, and being first it put every system event in the event
 * collector, leaving the profile's system collector out of the session
 * (docs/system-provider.md). */
static int add_system(const ltr_plan *plan, ltr_session_config *cfg, int *map, ltr_error *err)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < plan->nsyskw; i++)
        if (plan->syskw[i].available)
            mask |= part_bit(plan->syskw[i].linux_part);
    long collector = ltr_plan_system_collector(plan); /* as ltr profiles --details says */
    if (!mask || collector < 0)
        return 0;
    int c = collector_for(plan, (size_t)collector, cfg, map, err);
    if (c < 0)
        return c;
    if (cfg->nproviders == LTR_MAX_SESSION_PROVIDERS)
        return ltr_fail(err, E2BIG, "the profiles enable more than %d providers", LTR_MAX_SESSION_PROVIDERS);
    ltr_provider_spec *ps = &cfg->providers[cfg->nproviders++];
    memset(ps, 0, sizeof *ps);
    snprintf(ps->name, sizeof ps->name, "%s", LTR_SYSTEM_PROVIDER);
    ltr_guid_from_name(LTR_SYSTEM_PROVIDER, &ps->guid);
    ps->any = mask;
    ps->collector = (uint8_t)c;
    return 0;
}

int ltr_session_config_from_plan(const ltr_plan *plan, ltr_session_config *cfg, ltr_bytes *notes,
                                 ltr_error *err)
{
    int map[64];
    for (size_t i = 0; i < 64; i++)
        map[i] = -1;
    if (plan->ncollectors > 64)
        return ltr_fail(err, E2BIG, "the profiles name %zu collectors", plan->ncollectors);
    cfg->mode = plan->mode == LTR_PLAN_FILE ? LTR_MODE_FILE : LTR_MODE_MEMORY;
    if (!cfg->system_interval_ms) /* --memory-interval wins */
        cfg->system_interval_ms = plan->system_interval_ms;
    join_profiles(plan, cfg);
    unsigned stacks = 0;
    for (size_t i = 0; i < plan->nproviders; i++) {
        const ltr_plan_provider *pp = &plan->providers[i];
        if (cfg->nproviders == LTR_MAX_SESSION_PROVIDERS)
            return ltr_fail(err, E2BIG, "the profiles enable more than %d providers",
                            LTR_MAX_SESSION_PROVIDERS);
        int c = collector_for(plan, pp->collector, cfg, map, err);
        if (c < 0)
            return c;
        ltr_provider_spec *ps = &cfg->providers[cfg->nproviders++];
        memset(ps, 0, sizeof *ps);
        snprintf(ps->name, sizeof ps->name, "%s", pp->name);
        ps->guid = pp->guid;
        ps->any = pp->keywords == UINT64_MAX ? 0 : pp->keywords;
        ps->level = pp->level;
        ps->collector = (uint8_t)c;
        if (pp->stacks)
            stacks++;
    }
    if (stacks)
        note(notes, "call stacks of provider events (Stack=\"true\") are not recorded yet%s%s", "", NULL);
    list_syskw(plan, notes, true, "system keywords not available in this ltr yet: ");
    list_syskw(plan, notes, false, "system keywords with no Linux counterpart, skipped: ");
    if (plan->heap.enabled && add_heap(plan, cfg, map, err) != 0)
        return -err->code;
    if (plan->heap.snapshot && add_snapshot(plan, cfg, map, err) != 0)
        return -err->code;
    if (add_system(plan, cfg, map, err) != 0)
        return -err->code;
    for (size_t i = 0; i < plan->nskipped; i++)
        if (!listed_keyword(plan->skipped[i].what))
            note(notes, "skipped %s: %s", plan->skipped[i].what, plan->skipped[i].reason);
    return 0;
}

/* The collector a session has when nothing else gives it one. */
static void default_collector(ltr_session_config *cfg)
{
    cfg->ncollectors = 1;
    snprintf(cfg->collectors[0].name, sizeof cfg->collectors[0].name, "events");
    cfg->collectors[0].buffer_kb = LTR_BUFFER_KB_DEFAULT;
    cfg->collectors[0].buffers = LTR_BUFFERS_DEFAULT;
}

/* The registry holds one enablement per provider and session, so a provider
 * named twice (a profile's Ltr.System and --provider Ltr.System:0x20, or one
 * provider in two collectors) must become one spec: written as two, the last
 * replaced the first, and 'ltr start general --provider Ltr.System:0x20'
 * recorded no process, module, memory counter or CPU sample. As WPR combines
 * a provider enabled twice: the union of keywords and the higher level, in the
 * collector that named it first. */
static void merge_same_providers(ltr_session_config *cfg)
{
    for (unsigned i = 0; i < cfg->nproviders; i++) {
        ltr_provider_spec *a = &cfg->providers[i];
        for (unsigned j = i + 1; j < cfg->nproviders;) {
            const ltr_provider_spec *b = &cfg->providers[j];
            if (memcmp(a->guid.b, b->guid.b, sizeof a->guid.b) != 0) {
                j++;
                continue;
            }
            a->any = a->any && b->any ? a->any | b->any : 0;
            a->all &= b->all; /* an event either one wants must pass */
            a->level = a->level && b->level ? (a->level > b->level ? a->level : b->level) : 0;
            memmove(&cfg->providers[j], &cfg->providers[j + 1],
                    (cfg->nproviders - j - 1) * sizeof cfg->providers[0]);
            cfg->nproviders--;
        }
    }
}

int ltr_session_config_build(const ltr_plan *plan, const ltr_session_options *o,
                             ltr_session_config *cfg, ltr_bytes *notes, ltr_error *err)
{
    cfg->ncollectors = 0;
    cfg->nproviders = 0;
    if (plan && ltr_session_config_from_plan(plan, cfg, notes, err) != 0)
        return -err->code;
    if (cfg->ncollectors == 0) /* no plan, or nothing it names can be recorded: markers still can */
        default_collector(cfg);
    for (unsigned c = 0; c < cfg->ncollectors; c++) {
        if (o->buffer_kb)
            cfg->collectors[c].buffer_kb = o->buffer_kb;
        if (o->buffers)
            cfg->collectors[c].buffers = o->buffers;
    }
    if (cfg->nproviders + o->nproviders > LTR_MAX_SESSION_PROVIDERS)
        return ltr_fail(err, E2BIG, "the profiles and --provider options enable %u providers; a session "
                        "has at most %d", cfg->nproviders + o->nproviders, LTR_MAX_SESSION_PROVIDERS);
    for (unsigned i = 0; i < o->nproviders; i++) {
        cfg->providers[cfg->nproviders] = o->providers[i];
        cfg->providers[cfg->nproviders++].collector = 0;
    }
    merge_same_providers(cfg);
    return 0;
}
