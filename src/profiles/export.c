/*
 * profiles/export.c — `ltr profiles --export NAME FILE.wprp` (WPR's
 * -exportprofile): every variant of a profile (Light and Verbose, File and
 * Memory) written as a stand-alone .wprp, with everything it inherits
 * resolved: each element is written flattened, without Base=, and the
 * collectors and providers its variants reference are written beside them.
 * So the file needs nothing else, ltr reads it back to the same plan
 * (tests/profiles/test_export.c round-trips every built-in profile), and it
 * keeps the schema's order (collectors, providers, profiles) for WPR.
 *
 * The generic node (catalog.h) is written back the way parse.c reads it:
 * attributes that parse.c takes from single-value children
 * (<BufferSize Value="1024"/>, "Buffers.PercentageOfTotalMemory") become
 * those children again, the others stay attributes; lists are written with
 * their final items and no Operation (Set). libxml2's text writer escapes.
 */
#include "profiles/profiles.h"

#include "profiles/xmllib.h"

#include <stdlib.h>
#include <string.h>

#include "profiles/catalog.h"
#include "profiles/diag.h"
#include "profiles/inherit.h"
#include "profiles/plan.h"

/* The single-value children of the schema (parse.c's value_names). */
static bool is_value_key(const char *key, const wprp_node *n)
{
    static const char *const values[] = {
        "BufferSize", "Buffers", "BuffersPerCpu", "MinimumBuffers", "MaximumBuffers", "StackCaching",
        "FlushTimer", "FlushThreshold", "MaximumFileSize", "FileMax", "ClockType", "LastBranch",
        "ProcessorTrace", "MemoryInfoInterval",
    };
    if (n->kind == WPRP_HARDWARE_COUNTER && strcmp(key, "Name") && strcmp(key, "Strict"))
        return true;
    size_t len = strcspn(key, ".");
    for (size_t i = 0; i < sizeof values / sizeof *values; i++)
        if (strlen(values[i]) == len && !strncmp(values[i], key, len))
            return true;
    return false;
}

#define X(s) ((const xmlChar *)(s))

typedef struct out {
    xmlTextWriterPtr w;
    int failed;
} out;

static void check(out *o, int rc)
{
    if (rc < 0)
        o->failed = 1;
}

static void start(out *o, const char *elem)
{
    check(o, xmlTextWriterStartElement(o->w, X(elem)));
}

static void end(out *o)
{
    check(o, xmlTextWriterEndElement(o->w));
}

static void attr(out *o, const char *key, const char *value)
{
    check(o, xmlTextWriterWriteAttribute(o->w, X(key), X(value)));
}

/* <Elem Value="v" More="..."/> from "Elem" and its "Elem.More" attributes. */
static void write_values(out *o, const wprp_node *n)
{
    for (size_t i = 0; i < n->nattrs; i++) {
        const char *key = n->attrs[i].key;
        if (!is_value_key(key, n) || strchr(key, '.'))
            continue;
        start(o, key);
        attr(o, "Value", n->attrs[i].value);
        size_t len = strlen(key);
        for (size_t j = 0; j < n->nattrs; j++)
            if (!strncmp(n->attrs[j].key, key, len) && n->attrs[j].key[len] == '.')
                attr(o, n->attrs[j].key + len + 1, n->attrs[j].value);
        end(o);
    }
}

static void write_list(out *o, const wprp_list *l)
{
    start(o, l->key);
    for (size_t i = 0; i < l->n; i++) {
        start(o, l->items[i].elem);
        if (l->items[i].value[0])
            attr(o, "Value", l->items[i].value);
        end(o);
    }
    end(o);
}

/* A collector, provider or profile, flattened: no Base. */
static void write_element(out *o, const wprp_node *r)
{
    start(o, wprp_kind_name(r->kind));
    attr(o, "Id", r->id);
    for (size_t i = 0; i < r->nattrs; i++)
        if (!is_value_key(r->attrs[i].key, r))
            attr(o, r->attrs[i].key, r->attrs[i].value);
    write_values(o, r);
    for (size_t i = 0; i < r->nlists; i++)
        write_list(o, &r->lists[i]);
}

/* A profile's <Collectors>: each reference with its own values and the
 * providers it enables. */
static void write_refs(out *o, const wprp_node *p)
{
    if (!p->has_refs)
        return;
    start(o, "Collectors");
    for (size_t i = 0; i < p->nrefs; i++) {
        const wprp_node *ref = &p->refs[i];
        char elem[64];
        snprintf(elem, sizeof elem, "%sId", wprp_kind_name(ref->kind));
        start(o, elem);
        attr(o, "Value", ref->id);
        write_values(o, ref);
        const wprp_list *pl = wprp_node_list(ref, "Providers");
        if (pl && pl->n) {
            bool wrapped = ref->kind != WPRP_SYSTEM_COLLECTOR; /* <EventProviders>, <HeapEventProviders> */
            if (wrapped)
                start(o, ref->kind == WPRP_HEAP_COLLECTOR ? "HeapEventProviders" : "EventProviders");
            for (size_t j = 0; j < pl->n; j++) {
                start(o, pl->items[j].elem);
                attr(o, "Value", pl->items[j].value);
                end(o);
            }
            if (wrapped)
                end(o);
        }
        end(o);
    }
    end(o);
}

/* ---- what to write ------------------------------------------------------------- */

typedef struct picked {
    const wprp_node *v[64]; /* resolved elements, each once */
    size_t n;
} picked;

static void pick(picked *p, const wprp_node *r)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i] == r)
            return;
    if (p->n < sizeof p->v / sizeof *p->v)
        p->v[p->n++] = r;
}

static wprp_kind provider_kind(const char *elem)
{
    return !strcmp(elem, "SystemProviderId")      ? WPRP_SYSTEM_PROVIDER
           : !strcmp(elem, "EventProviderId")     ? WPRP_EVENT_PROVIDER
           : !strcmp(elem, "HeapEventProviderId") ? WPRP_HEAP_PROVIDER
                                                  : WPRP_HARDWARE_COUNTER;
}

/* The collectors and providers a resolved profile references, resolved, as
 * the plan finds them (from each reference's own file). -1 when one is
 * missing or cannot be resolved (reported). */
static int pick_referenced(wprp_catalog *c, const wprp_node *p, picked *collectors, picked *providers)
{
    int rc = 0;
    for (size_t i = 0; i < p->nrefs; i++) {
        const wprp_node *ref = &p->refs[i];
        wprp_node *cn = wprp_catalog_find(c, ref->kind, ref->id, ref);
        const wprp_node *cr = cn ? wprp_resolve(c, cn) : NULL;
        if (!cr) {
            ltr_diag_add(c->diags, LTR_DIAG_ERROR, ref->file, ref->line, p->id, "%sId '%s' cannot be exported",
                         wprp_kind_name(ref->kind), ref->id);
            rc = -1;
            continue;
        }
        pick(collectors, cr);
        const wprp_list *pl = wprp_node_list(ref, "Providers");
        for (size_t j = 0; pl && j < pl->n; j++) {
            wprp_node *pn = wprp_catalog_find(c, provider_kind(pl->items[j].elem), pl->items[j].value, ref);
            const wprp_node *pr = pn ? wprp_resolve(c, pn) : NULL;
            if (!pr) {
                ltr_diag_add(c->diags, LTR_DIAG_ERROR, ref->file, pl->items[j].line, p->id,
                             "%s '%s' cannot be exported", pl->items[j].elem, pl->items[j].value);
                rc = -1;
                continue;
            }
            pick(providers, pr);
        }
    }
    return rc;
}

static void write_kind(out *o, const picked *p, wprp_kind kind)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i]->kind == kind) {
            write_element(o, p->v[i]);
            end(o);
        }
}

static int write_doc(out *o, const picked *collectors, const picked *providers,
                     const picked *profiles)
{
    check(o, xmlTextWriterSetIndent(o->w, 1));
    check(o, xmlTextWriterSetIndentString(o->w, X("  ")));
    check(o, xmlTextWriterStartDocument(o->w, "1.0", "utf-8", NULL));
    /* no name in it: a comment may not hold "--" */
    check(o, xmlTextWriterWriteComment(o->w, X(" written by ltr's profile export: every variant of one profile, "
                                               "with what it inherits resolved ")));
    start(o, "WindowsPerformanceRecorder");
    attr(o, "Version", "1.0");
    attr(o, "Author", "ltr");
    start(o, "Profiles");
    for (int k = WPRP_SYSTEM_COLLECTOR; k <= WPRP_HEAP_COLLECTOR; k++)
        write_kind(o, collectors, (wprp_kind)k);
    for (int k = WPRP_SYSTEM_PROVIDER; k <= WPRP_HARDWARE_COUNTER; k++)
        write_kind(o, providers, (wprp_kind)k);
    for (size_t i = 0; i < profiles->n; i++) {
        write_element(o, profiles->v[i]);
        write_refs(o, profiles->v[i]);
        end(o);
    }
    end(o);
    end(o);
    check(o, xmlTextWriterEndDocument(o->w));
    return o->failed ? -1 : 0;
}

char *ltr_profiles_export(const char *spec, const char *builtin_dir, ltr_diag_list *diags)
{
    wprp_catalog cat;
    wprp_catalog_init(&cat, diags);
    const char *bang = strrchr(spec, '!'), *file = NULL;
    char *path = bang ? strndup(spec, (size_t)(bang - spec)) : NULL;
    const char *name = bang ? bang + 1 : spec;
    int rc = wprp_catalog_load_dir(&cat, builtin_dir ? builtin_dir : ltr_profiles_builtin_dir());
    if (path && wprp_catalog_load(&cat, path, false, &file) != 0)
        rc = -1;
    wprp_node *v[4] = {0};
    if (rc == 0 && !prof_find_variants(&cat, file, name, v)) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, file, 0, name, "no profile of that name in %s",
                     file ? file : "the built-in profiles");
        rc = -1;
    }
    picked collectors = {0}, providers = {0}, profiles = {0};
    for (int i = 0; rc == 0 && i < 4; i++) {
        const wprp_node *r = v[i] ? wprp_resolve(&cat, v[i]) : NULL;
        if (r) {
            pick(&profiles, r);
            rc = pick_referenced(&cat, r, &collectors, &providers);
        }
    }
    xmlBufferPtr buf = rc == 0 ? xmlBufferCreate() : NULL;
    out o = {.w = buf ? xmlNewTextWriterMemory(buf, 0) : NULL};
    if (rc == 0 && (!o.w || write_doc(&o, &collectors, &providers, &profiles) != 0)) {
        ltr_diag_add(diags, LTR_DIAG_ERROR, NULL, 0, name, "the profile could not be written out (out of memory)");
        rc = -1;
    }
    if (o.w)
        xmlFreeTextWriter(o.w); /* flushes into buf */
    char *xml = rc == 0 ? prof_strdup((const char *)xmlBufferContent(buf)) : NULL;
    if (buf)
        xmlBufferFree(buf);
    free(path);
    wprp_catalog_free(&cat);
    return xml;
}
