/*
 * profiles/describe.c — a session plan as text: the profiles and their
 * variants, the logging mode, collectors, system keywords and what each
 * becomes on Linux, providers, heap tracing, and what was skipped. `ltr
 * profiles --details` prints it, and `ltr watch --support-bundle` keeps it
 * beside a saved trace, so both say the same.
 */
#include "profiles/profiles.h"

#include <inttypes.h>
#include <stdio.h>

static const char *kind_text(ltr_collector_kind k)
{
    return k == LTR_COLLECTOR_SYSTEM ? "system" : k == LTR_COLLECTOR_EVENT ? "event" : "heap";
}

long ltr_plan_system_collector(const ltr_plan *p)
{
    long first = -1;
    for (size_t i = 0; i < p->nsyskw; i++) {
        const ltr_plan_syskw *k = &p->syskw[i];
        if (!k->available || !k->linux_part)
            continue;
        if (p->collectors[k->collector].kind == LTR_COLLECTOR_SYSTEM)
            return (long)k->collector;
        if (first < 0)
            first = (long)k->collector;
    }
    return first;
}

bool ltr_plan_collector_used(const ltr_plan *p, size_t i)
{
    for (size_t k = 0; k < p->nproviders; k++)
        if (p->providers[k].collector == i)
            return true;
    return (p->heap.enabled && p->heap.collector == i) || (p->heap.snapshot && p->heap.snapshot_collector == i) ||
           ltr_plan_system_collector(p) == (long)i;
}

/* Whether collector i names a system keyword this ltr records. */
static bool names_syskw(const ltr_plan *p, size_t i)
{
    for (size_t k = 0; k < p->nsyskw; k++)
        if (p->syskw[k].available && p->syskw[k].linux_part && p->syskw[k].collector == i)
            return true;
    return false;
}

/* Every collector the profiles name; one a session would not create (all
 * it names is skipped, or its system keywords go to another) says so: it
 * was listed with its buffers as if it took memory. */
static void write_collectors(FILE *out, const ltr_plan *p)
{
    fprintf(out, "Collectors:\n");
    for (size_t i = 0; i < p->ncollectors; i++) {
        const ltr_plan_collector *c = &p->collectors[i];
        fprintf(out, "  %s (%s collector): ", c->name, kind_text(c->kind));
        if (ltr_plan_collector_used(p, i))
            fprintf(out, "buffers of %" PRIu32 " KB, %" PRIu32 "%s\n", c->buffer_size_kb, c->buffers,
                    c->buffers_percent ? "% of total memory" : " of them");
        else
            fprintf(out, "not created: nothing it names is recorded on Linux%s\n",
                    names_syskw(p, i) ? " of its own (its system keywords go to the collector of the "
                                        "others: the system provider is one)" : "");
    }
}

static void write_system(FILE *out, const ltr_plan *p)
{
    if (!p->nsyskw)
        return;
    fprintf(out, "System keywords:\n");
    for (size_t i = 0; i < p->nsyskw; i++) {
        const ltr_plan_syskw *k = &p->syskw[i];
        if (k->linux_part)
            fprintf(out, "  %-22s -> %s%s\n", k->name, k->linux_part,
                   k->available ? "" : " (not yet available in ltr)");
        else
            fprintf(out, "  %-22s -> nothing on Linux (skipped)\n", k->name);
    }
    if (p->system_interval_ms)
        fprintf(out, "Memory counters every %u ms (MemoryInfoInterval)\n", p->system_interval_ms);
    if (p->nsysstacks) {
        fprintf(out, "System stacks:");
        for (size_t i = 0; i < p->nsysstacks; i++)
            fprintf(out, "%s %s", i ? "," : "", p->sysstacks[i]);
        fprintf(out, "\n");
    }
}

static void write_providers(FILE *out, const ltr_plan *p)
{
    if (!p->nproviders)
        return;
    fprintf(out, "Providers:\n");
    for (size_t i = 0; i < p->nproviders; i++) {
        const ltr_plan_provider *v = &p->providers[i];
        char guid[37];
        ltr_guid_format(&v->guid, guid);
        fprintf(out, "  %s\n    keywords 0x%" PRIx64 ", level %u, stacks %s", v->name, v->keywords,
               (unsigned)v->level, v->stacks ? "yes" : "no");
        if (v->capture_state_on_save)
            fprintf(out, ", capture state on save 0x%" PRIx64, v->capture_state_on_save);
        fprintf(out, "\n    -> ltr provider {%s}%s in collector '%s'\n", guid,
               v->guid_given ? "" : " (GUID derived from the name)",
               p->collectors[v->collector].name);
    }
}

static void write_heap(FILE *out, const ltr_plan *p)
{
    const ltr_plan_heap *h = &p->heap;
    if (!h->enabled && !h->snapshot)
        return;
    fprintf(out, "Heap:\n");
    if (h->enabled) {
        fprintf(out, "  heap tracing in collector '%s' of ", p->collectors[h->collector].name);
        if (!h->npids && !h->nprocess_names)
            fprintf(out, "the processes set up with 'ltr heaptracingconfig' or launched with 'ltr run'");
        for (size_t i = 0; i < h->npids; i++)
            fprintf(out, "%spid %" PRIu32, i ? ", " : "", h->pids[i]);
        for (size_t i = 0; i < h->nprocess_names; i++)
            fprintf(out, "%s%s", i || h->npids ? ", " : "", h->process_names[i]);
        fprintf(out, "\n");
    }
    if (h->snapshot)
        fprintf(out, "  heap snapshots of the processes set up with 'ltr snapshotconfig'\n");
}

static void write_skipped(FILE *out, const ltr_plan *p)
{
    if (!p->nskipped)
        return;
    fprintf(out, "Skipped (no meaning on Linux):\n");
    for (size_t i = 0; i < p->nskipped; i++)
        fprintf(out, "  %s: %s\n", p->skipped[i].what, p->skipped[i].reason);
}

void ltr_plan_write_text(FILE *out, const ltr_plan *p)
{
    for (size_t i = 0; i < p->nprofiles; i++) {
        char have[128];
        ltr_profile_variants_text(p->variants[i], have, sizeof have);
        fprintf(out, "Profile: %s\n  variants of its name: %s\n", p->profiles[i], have);
    }
    fprintf(out, "Logging mode: %s%s\n", p->mode == LTR_PLAN_FILE ? "file" : "memory",
            p->strict ? " (strict)" : "");
    write_collectors(out, p);
    write_system(out, p);
    write_providers(out, p);
    write_heap(out, p);
    write_skipped(out, p);
}
