/*
 * profiles/plan.c — turns one resolved profile into additions to a session
 * plan: this is where WPR's elements get their Linux meaning.
 *
 * A profile's collector references name collectors; collectors of the same
 * kind and Name are one buffer pool (WPR merges them too), sized by the
 * largest request. Each provider id is looked up, resolved and mapped: a
 * SystemProvider to system keywords (linuxmap.c), an EventProvider to an ltr
 * provider unless it is a Windows component, a HeapEventProvider to heap
 * tracing. Values are checked here, where their meaning is known, and each
 * bad one is reported with the line it was written on.
 */
#include "profiles/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profiles/inherit.h"
#include "profiles/linuxmap.h"

typedef struct builder {
    wprp_catalog *cat;
    ltr_plan *plan;
    const wprp_node *profile; /* the profile being added, for messages */
    int errors;
    int started; /* things this profile starts on Linux (providers, heap, parts) */
} builder;

static void error_at(builder *b, const char *file, int line, const char *id, const char *fmt,
                     const char *a, const char *c)
{
    ltr_diag_add(b->cat->diags, LTR_DIAG_ERROR, file, line, id, fmt, a, c);
    b->errors++;
}

int plan_parse_bool(const char *text, bool *out)
{
    if (strcasecmp(text, "true") == 0 || strcmp(text, "1") == 0)
        *out = true;
    else if (strcasecmp(text, "false") == 0 || strcmp(text, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

/* Reads an unsigned attribute in [min, max]; absent leaves *out alone. */
static int attr_u64(builder *b, const wprp_node *n, const char *key, uint64_t min, uint64_t max,
                    uint64_t *out)
{
    const wprp_attr *a = wprp_node_attr(n, key);
    uint64_t v;
    if (!a)
        return 0;
    if (wprp_parse_u64(a->value, &v) != 0 || v < min || v > max) {
        char range[64];
        snprintf(range, sizeof range, "%llu..%llu", (unsigned long long)min,
                 (unsigned long long)max);
        char *msg = prof_asprintf("%s=\"%s\" is not valid: expected an integer in %s", key,
                                  a->value, range);
        error_at(b, n->file, a->line, n->id, "%s%s", msg, "");
        free(msg);
        return -1;
    }
    *out = v;
    return 0;
}

static int attr_bool(builder *b, const wprp_node *n, const char *key, bool *out)
{
    const wprp_attr *a = wprp_node_attr(n, key);
    if (a && plan_parse_bool(a->value, out) != 0) {
        error_at(b, n->file, a->line, n->id, "%s=\"%s\" is not valid: expected true or false",
                 key, a->value);
        return -1;
    }
    return 0;
}

static void add_skipped(builder *b, const char *what, const char *reason, const char *file,
                        int line)
{
    ltr_plan *p = b->plan;
    for (size_t i = 0; i < p->nskipped; i++)
        if (strcmp(p->skipped[i].what, what) == 0)
            return; /* reported once */
    size_t cap = p->nskipped;
    p->skipped = prof_grow(p->skipped, &cap, p->nskipped, sizeof *p->skipped);
    p->skipped[p->nskipped++] =
        (ltr_plan_skipped){prof_strdup(what), prof_strdup(reason), prof_strdup(file), line};
}

/* ---- collectors ----------------------------------------------------------- */

static const ltr_collector_kind collector_kind[] = {
    [WPRP_SYSTEM_COLLECTOR] = LTR_COLLECTOR_SYSTEM,
    [WPRP_EVENT_COLLECTOR] = LTR_COLLECTOR_EVENT,
    [WPRP_HEAP_COLLECTOR] = LTR_COLLECTOR_HEAP,
};

static size_t merge_collector(ltr_plan *p, const ltr_plan_collector *c)
{
    for (size_t i = 0; i < p->ncollectors; i++) {
        ltr_plan_collector *h = &p->collectors[i];
        if (h->kind != c->kind || strcmp(h->name, c->name) != 0)
            continue;
        if (c->buffer_size_kb > h->buffer_size_kb)
            h->buffer_size_kb = c->buffer_size_kb;
        if (c->buffers_percent != h->buffers_percent) { /* a share of RAM outranks a count */
            if (c->buffers_percent) {
                h->buffers_percent = true;
                h->buffers = c->buffers;
            }
        } else if (c->buffers > h->buffers) {
            h->buffers = c->buffers;
        }
        return i;
    }
    size_t cap = p->ncollectors;
    p->collectors = prof_grow(p->collectors, &cap, p->ncollectors, sizeof *p->collectors);
    p->collectors[p->ncollectors] = *c;
    p->collectors[p->ncollectors].name = prof_strdup(c->name);
    return p->ncollectors++;
}

/* The collector a reference names: same kind, else another collector kind
 * (a warning: the reference and the definition disagree on the kind). */
static wprp_node *find_collector(builder *b, const wprp_node *ref)
{
    wprp_node *n = wprp_catalog_find(b->cat, ref->kind, ref->id, ref);
    for (int k = WPRP_SYSTEM_COLLECTOR; !n && k <= WPRP_HEAP_COLLECTOR; k++) {
        n = wprp_catalog_find(b->cat, (wprp_kind)k, ref->id, ref);
        if (n)
            ltr_diag_add(b->cat->diags, LTR_DIAG_WARNING, ref->file, ref->line, b->profile->id,
                         "%sId '%s' names a %s (%s:%d): mixing object types is ambiguous; it is "
                         "used as a %s",
                         wprp_kind_name(ref->kind), ref->id, wprp_kind_name(n->kind), n->file,
                         n->line, wprp_kind_name(ref->kind));
    }
    if (!n)
        error_at(b, ref->file, ref->line, b->profile->id, "%sId '%s' names no collector of that id",
                 wprp_kind_name(ref->kind), ref->id);
    return n;
}

/* Buffer settings: the reference's own values win over the collector's. */
static int collector_buffers(builder *b, const wprp_node *ref, const wprp_node *c,
                             ltr_plan_collector *out)
{
    uint64_t size = LTR_PLAN_DEFAULT_BUFFER_KB, count = LTR_PLAN_DEFAULT_BUFFERS;
    bool percent = false;
    const wprp_node *src[2] = {c, ref};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        rc |= attr_u64(b, src[i], "BufferSize", LTR_PLAN_MIN_BUFFER_KB, LTR_PLAN_MAX_BUFFER_KB,
                       &size);
        rc |= attr_bool(b, src[i], "Buffers.PercentageOfTotalMemory", &percent);
    }
    for (int i = 0; i < 2; i++) /* the percentage, once known, bounds the value */
        rc |= attr_u64(b, src[i], "Buffers", 1, percent ? 100 : LTR_PLAN_MAX_BUFFERS, &count);
    out->buffer_size_kb = (uint32_t)size;
    out->buffers = (uint32_t)count;
    out->buffers_percent = percent;
    return rc ? -1 : 0;
}

/* ---- providers ------------------------------------------------------------ */

static void add_syskw(builder *b, const char *keyword, size_t collector, const wprp_node *sp,
                      int line)
{
    ltr_plan *p = b->plan;
    for (size_t i = 0; i < p->nsyskw; i++) {
        if (strcasecmp(p->syskw[i].name, keyword) == 0) {
            b->started += p->syskw[i].available;
            return;
        }
    }
    const ltr_syskw_map *m = ltr_syskw_lookup(keyword);
    b->started += m && m->available;
    size_t cap = p->nsyskw;
    p->syskw = prof_grow(p->syskw, &cap, p->nsyskw, sizeof *p->syskw);
    p->syskw[p->nsyskw++] = (ltr_plan_syskw){prof_strdup(keyword), m ? m->linux_part : NULL,
                                             m && m->available, collector};
    if (!m || !m->linux_part) {
        char *what = prof_asprintf("system keyword %s", keyword);
        add_skipped(b, what, m ? "a Windows kernel facility with no Linux counterpart in ltr"
                               : "not a system keyword ltr knows",
                    sp->file, line);
        free(what);
    }
}

static void add_sysstack(ltr_plan *p, const char *stack)
{
    for (size_t i = 0; i < p->nsysstacks; i++)
        if (strcasecmp(p->sysstacks[i], stack) == 0)
            return;
    size_t cap = p->nsysstacks;
    p->sysstacks = prof_grow(p->sysstacks, &cap, p->nsysstacks, sizeof *p->sysstacks);
    p->sysstacks[p->nsysstacks++] = prof_strdup(stack);
}

static void apply_system_provider(builder *b, const wprp_node *sp, size_t collector)
{
    uint64_t ms = 0; /* bounds: base/system_events.h's, which this part does not include */
    if (attr_u64(b, sp, "MemoryInfoInterval", 10, 3600000, &ms) == 0 && ms &&
        (!b->plan->system_interval_ms || ms < b->plan->system_interval_ms))
        b->plan->system_interval_ms = (uint32_t)ms;
    const wprp_list *kw = wprp_node_list(sp, "Keywords");
    for (size_t i = 0; kw && i < kw->n; i++) {
        if (strcmp(kw->items[i].elem, "CustomKeyword") == 0) {
            char *what = prof_asprintf("custom system keyword %s", kw->items[i].value);
            add_skipped(b, what, "a raw Windows kernel flag", sp->file, kw->items[i].line);
            free(what);
        } else {
            add_syskw(b, kw->items[i].value, collector, sp, kw->items[i].line);
        }
    }
    const wprp_list *st = wprp_node_list(sp, "Stacks");
    for (size_t i = 0; st && i < st->n; i++)
        if (strcmp(st->items[i].elem, "Stack") == 0)
            add_sysstack(b->plan, st->items[i].value);
}

/* ORs the values of a keyword list; all bits when `all_if_empty` and none. */
static int list_mask(builder *b, const wprp_node *n, const char *key, bool all_if_empty,
                     uint64_t *out)
{
    const wprp_list *l = wprp_node_list(n, key);
    uint64_t m = 0, v;
    int rc = 0;
    for (size_t i = 0; l && i < l->n; i++) {
        if (wprp_parse_u64(l->items[i].value, &v) == 0) {
            m |= v;
        } else {
            error_at(b, n->file, l->items[i].line, n->id,
                     "<%s Value=\"%s\"> is not a keyword mask: expected hex (0x...) or decimal",
                     l->items[i].elem, l->items[i].value);
            rc = -1;
        }
    }
    *out = (!l || !l->n) && all_if_empty ? UINT64_MAX : m;
    return rc;
}

static void merge_provider(ltr_plan *p, const ltr_plan_provider *pv)
{
    for (size_t i = 0; i < p->nproviders; i++) {
        ltr_plan_provider *h = &p->providers[i];
        if (h->collector != pv->collector || memcmp(&h->guid, &pv->guid, sizeof h->guid) != 0)
            continue;
        h->keywords |= pv->keywords;
        h->level = pv->level > h->level ? pv->level : h->level;
        h->stacks |= pv->stacks;
        h->capture_state_on_save |= pv->capture_state_on_save;
        return;
    }
    size_t cap = p->nproviders;
    p->providers = prof_grow(p->providers, &cap, p->nproviders, sizeof *p->providers);
    p->providers[p->nproviders] = *pv;
    p->providers[p->nproviders++].name = prof_strdup(pv->name);
}

/* A Windows component: mapped to its Linux counterpart, or skipped. */
static void apply_windows_provider(builder *b, const wprp_node *ep, const ltr_winprov *w,
                                   const ltr_guid *guid, size_t collector)
{
    char text[37];
    ltr_guid_format(guid, text);
    if (w->use == LTR_WINPROV_PROCESSES) {
        add_syskw(b, "ProcessThread", collector, ep, ep->line);
    } else if (w->use == LTR_WINPROV_MODULES) {
        add_syskw(b, "Loader", collector, ep, ep->line);
    } else if (w->use == LTR_WINPROV_HEAP_SNAPSHOT) {
        b->plan->heap.snapshot = true;
        b->plan->heap.snapshot_collector = collector;
        b->started++;
    } else {
        char *what = prof_asprintf("provider %s {%s}", w->name, text);
        add_skipped(b, what, "Windows-only: nothing on Linux emits these events", ep->file,
                    ep->line);
        free(what);
    }
}

static void apply_event_provider(builder *b, const wprp_node *ep, size_t collector)
{
    const char *name = wprp_node_value(ep, "Name");
    if (!name || !*name) {
        error_at(b, ep->file, ep->line, ep->id, "%s without a Name (a provider name or GUID)%s",
                 "EventProvider", "");
        return;
    }
    ltr_plan_provider pv = {.name = (char *)name, .level = LTR_LEVEL_VERBOSE, .collector = collector};
    pv.guid_given = ltr_guid_parse(name, &pv.guid) == 0;
    if (!pv.guid_given)
        ltr_guid_from_name(name, &pv.guid);
    ltr_winprov scratch;
    const ltr_winprov *w = ltr_winprov_lookup(name, &pv.guid, &scratch);
    if (w) {
        apply_windows_provider(b, ep, w, &pv.guid, collector);
        return;
    }
    uint64_t level = pv.level;
    int rc = attr_u64(b, ep, "Level", 0, 255, &level);
    rc |= attr_bool(b, ep, "Stack", &pv.stacks);
    rc |= list_mask(b, ep, "Keywords", true, &pv.keywords);
    rc |= list_mask(b, ep, "CaptureStateOnSave", false, &pv.capture_state_on_save);
    pv.level = (uint8_t)level;
    if (rc == 0) {
        merge_provider(b->plan, &pv);
        b->started++;
    }
}

static void add_pid(ltr_plan_heap *h, uint32_t pid)
{
    for (size_t i = 0; i < h->npids; i++)
        if (h->pids[i] == pid)
            return;
    uint32_t *v = realloc(h->pids, (h->npids + 1) * sizeof *v);
    if (!v)
        abort();
    h->pids = v;
    h->pids[h->npids++] = pid;
}

static void add_process_name(ltr_plan_heap *h, const char *name)
{
    for (size_t i = 0; i < h->nprocess_names; i++)
        if (strcmp(h->process_names[i], name) == 0)
            return;
    size_t cap = h->nprocess_names;
    h->process_names = prof_grow(h->process_names, &cap, h->nprocess_names, sizeof(char *));
    h->process_names[h->nprocess_names++] = prof_strdup(name);
}

static void apply_heap_provider(builder *b, const wprp_node *hp)
{
    ltr_plan_heap *h = &b->plan->heap;
    const wprp_list *ids = wprp_node_list(hp, "HeapProcessIds");
    for (size_t i = 0; ids && i < ids->n; i++) {
        uint64_t pid;
        if (wprp_parse_u64(ids->items[i].value, &pid) != 0 || pid == 0 || pid > 0x7fffffff)
            error_at(b, hp->file, ids->items[i].line, hp->id,
                     "<HeapProcessId Value=\"%s\"> is not a process id%s", ids->items[i].value, "");
        else
            add_pid(h, (uint32_t)pid);
    }
    const wprp_list *names = wprp_node_list(hp, "HeapProcessNames");
    for (size_t i = 0; names && i < names->n; i++)
        add_process_name(h, names->items[i].value);
}

/* ---- one collector reference ---------------------------------------------- */

static const struct {
    const char *elem;
    wprp_kind kind;
} provider_elems[] = {
    {"SystemProviderId", WPRP_SYSTEM_PROVIDER},
    {"EventProviderId", WPRP_EVENT_PROVIDER},
    {"HeapEventProviderId", WPRP_HEAP_PROVIDER},
    {"HardwareCounterId", WPRP_HARDWARE_COUNTER},
};

static void apply_provider_ref(builder *b, const wprp_node *ref, const wprp_item *it,
                               size_t collector)
{
    size_t k = 0, n = sizeof provider_elems / sizeof provider_elems[0];
    while (k < n && strcmp(provider_elems[k].elem, it->elem) != 0)
        k++;
    if (k == n) {
        ltr_diag_add(b->cat->diags, LTR_DIAG_WARNING, ref->file, it->line, b->profile->id,
                     "unknown element <%s> in a collector reference is ignored", it->elem);
        return;
    }
    wprp_kind kind = provider_elems[k].kind;
    if (kind == WPRP_HEAP_PROVIDER && ref->kind != WPRP_HEAP_COLLECTOR) {
        /* taken, it turned heap tracing on with no heap collector to record
         * it: the session started and recorded nothing, without a word */
        error_at(b, ref->file, it->line, b->profile->id,
                 "<%s Value=\"%s\"> is in an event or system collector: a heap provider goes in a "
                 "<HeapEventCollectorId>'s <HeapEventProviders>",
                 it->elem, it->value);
        return;
    }
    wprp_node *node = wprp_catalog_find(b->cat, kind, it->value, ref);
    if (!node) {
        error_at(b, ref->file, it->line, b->profile->id, "%s '%s' names nothing defined",
                 it->elem, it->value);
        return;
    }
    const wprp_node *r = wprp_resolve(b->cat, node);
    if (!r) {
        b->errors++;
        return;
    }
    if (kind == WPRP_SYSTEM_PROVIDER)
        apply_system_provider(b, r, collector);
    else if (kind == WPRP_EVENT_PROVIDER)
        apply_event_provider(b, r, collector);
    else if (kind == WPRP_HEAP_PROVIDER)
        apply_heap_provider(b, r);
    else {
        char *what = prof_asprintf("HardwareCounter %s", r->id);
        add_skipped(b, what, "CPU performance counters (PMU) are not supported yet", r->file,
                    r->line);
        free(what);
    }
}

static void apply_ref(builder *b, const wprp_node *ref)
{
    wprp_node *cn = find_collector(b, ref);
    const wprp_node *c = cn ? wprp_resolve(b->cat, cn) : NULL;
    if (!c) {
        if (cn)
            b->errors++;
        return;
    }
    const char *name = wprp_node_value(c, "Name");
    ltr_plan_collector pc = {.name = (char *)(name && *name ? name : c->id),
                             .kind = collector_kind[ref->kind]};
    collector_buffers(b, ref, c, &pc); /* on a bad value, go on to check the rest */
    size_t idx = merge_collector(b->plan, &pc);
    if (ref->kind == WPRP_HEAP_COLLECTOR) {
        if (!b->plan->heap.enabled)
            b->plan->heap.collector = idx;
        b->plan->heap.enabled = true;
        b->started++;
    }
    const wprp_list *pl = wprp_node_list(ref, "Providers");
    for (size_t i = 0; pl && i < pl->n; i++)
        apply_provider_ref(b, ref, &pl->items[i], idx);
}

/* ---- the profile ---------------------------------------------------------- */

static void add_label(ltr_plan *p, const char *label)
{
    size_t cap = p->nprofiles;
    p->profiles = prof_grow(p->profiles, &cap, p->nprofiles, sizeof *p->profiles);
    p->profiles[p->nprofiles++] = prof_strdup(label);
}

int plan_add_profile(wprp_catalog *cat, ltr_plan *plan, wprp_node *pn, const char *label,
                     plan_check check)
{
    builder b = {cat, plan, pn, 0, 0};
    const wprp_node *p = wprp_resolve(cat, pn);
    if (!p)
        return -1;
    b.profile = p;
    bool strict = false;
    attr_bool(&b, p, "Strict", &strict);
    plan->strict |= strict;
    for (size_t i = 0; i < p->nrefs; i++)
        apply_ref(&b, &p->refs[i]);
    add_label(plan, label);
    if (check != PLAN_CHECK_NONE && !b.errors && !b.started) {
        bool fail = strict && check == PLAN_CHECK_START;
        ltr_diag_add(cat->diags, fail ? LTR_DIAG_ERROR : LTR_DIAG_WARNING, p->file, p->line, p->id,
                     "the profile starts nothing on Linux: all it asks for is Windows-only or not "
                     "available in ltr yet%s",
                     !strict                       ? "; nothing of it will be recorded"
                     : check == PLAN_CHECK_START ? "; Strict=\"true\" makes that an error "
                                                   "('ltr profiles --details' lists what it asks for)"
                                                 : "; Strict=\"true\": starting it is an error");
        b.errors += fail;
    }
    return b.errors ? -1 : 0;
}
