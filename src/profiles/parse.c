/*
 * profiles/parse.c — turns a parsed .wprp document into catalog nodes.
 *
 * The walk follows the WPR schema: <WindowsPerformanceRecorder> holds
 * <Profiles> (then <TraceMergeProperties>, which ltr has no use for), and
 * <Profiles> holds collectors, then providers, then profiles, in that order.
 * Inside an element, a child with a Value attribute and no children is a
 * single value (<BufferSize Value="1024"/>); a known container, or any child
 * that has children, is a list whose items are its children's Values.
 */
#include "profiles/catalog.h"
#include "profiles/xmlsafe.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Element names of <Profiles> and the position the schema gives each; -1
 * means "anywhere among the providers" (HardwareCounter is newer than the
 * documented order). */
static const struct {
    const char *name;
    wprp_kind kind;
    int rank;
} top_elements[] = {
    {"SystemCollector", WPRP_SYSTEM_COLLECTOR, 0}, {"EventCollector", WPRP_EVENT_COLLECTOR, 1},
    {"HeapEventCollector", WPRP_HEAP_COLLECTOR, 2}, {"SystemProvider", WPRP_SYSTEM_PROVIDER, 3},
    {"EventProvider", WPRP_EVENT_PROVIDER, 4},     {"HeapEventProvider", WPRP_HEAP_PROVIDER, 5},
    {"HardwareCounter", WPRP_HARDWARE_COUNTER, -1}, {"Profile", WPRP_PROFILE, 6},
};

/* Containers that are lists even when empty (an empty Set clears a list). */
static const char *const list_names[] = {
    "Keywords", "Stacks", "CaptureStateOnStart", "CaptureStateOnSave", "CaptureStateOnStop",
    "HeapProcessIds", "HeapProcessNames", "EventFilters", "StackFilters", "EventNameFilters",
    "EventKeyFilters", "PoolTags", "ProblemCategories", "Counters", "Events", "SampledCounters",
    "TraceMergeProperties",
};

/* Single-value children the schema defines; anything else is reported. */
static const char *const value_names[] = {
    "BufferSize", "Buffers", "BuffersPerCpu", "MinimumBuffers", "MaximumBuffers",
    "StackCaching", "FlushTimer", "FlushThreshold", "MaximumFileSize", "FileMax", "ClockType",
    "LastBranch", "ProcessorTrace",
    "MemoryInfoInterval", /* ltr's: the system provider's memory counters, ms (docs/profiles.md) */
};

static bool in(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return true;
    return false;
}
#define IN(arr, s) in(arr, sizeof arr / sizeof arr[0], s)

typedef struct walk {
    wprp_catalog *cat;
    const char *file;
    bool builtin;
} walk;

static const char *name_of(xmlNodePtr n)
{
    return (const char *)n->name;
}

static int line_of(xmlNodePtr n)
{
    long l = xmlGetLineNo(n);
    return l > 0 && l < INT_MAX ? (int)l : 0;
}

static bool has_element_children(xmlNodePtr n)
{
    for (xmlNodePtr c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE)
            return true;
    return false;
}

/* The value of an attribute, owned by the caller (xmlFree). */
static char *attr(xmlNodePtr n, const char *name)
{
    return (char *)xmlGetProp(n, (const xmlChar *)name);
}

static void warn(walk *w, xmlNodePtr n, const char *id, const char *fmt, const char *a,
                 const char *b)
{
    ltr_diag_add(w->cat->diags, LTR_DIAG_WARNING, w->file, line_of(n), id, fmt, a, b);
}

static int parse_operation(walk *w, xmlNodePtr n, const char *id, wprp_op *op)
{
    char *text = attr(n, "Operation");
    int rc = wprp_parse_op(text, op);
    if (rc != 0)
        ltr_diag_add(w->cat->diags, LTR_DIAG_ERROR, w->file, line_of(n), id,
                     "Operation=\"%s\" on <%s>: expected Set, Add or Remove", text, name_of(n));
    xmlFree(text);
    return rc;
}

static bool parse_inline_provider(walk *w, wprp_list *l, xmlNodePtr c);

/* <Keywords Operation="Add"><Keyword Value="Loader"/>...</Keywords>; with
 * defs, <EventProviders> of a collector reference, whose items may be
 * providers defined there */
static void parse_list(walk *w, wprp_node *node, xmlNodePtr n, const char *key, bool defs)
{
    wprp_op op;
    if (parse_operation(w, n, node->id, &op) != 0)
        op = WPRP_OP_ADD; /* the error is reported; keep going to find more */
    wprp_list *l = wprp_node_add_list(node, key, op, line_of(n));
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || (defs && parse_inline_provider(w, l, c)))
            continue;
        char *v = attr(c, "Value");
        if (v || node->kind == WPRP_HARDWARE_COUNTER)
            wprp_list_add(l, name_of(c), v ? v : "", line_of(c));
        else
            warn(w, c, node->id, "<%s> in <%s> has no Value attribute and is ignored", name_of(c),
                 name_of(n));
        xmlFree(v);
    }
}

/* <Buffers Value="3" PercentageOfTotalMemory="true"/>: "Buffers" = "3" and
 * "Buffers.PercentageOfTotalMemory" = "true". */
static void parse_value(wprp_node *node, xmlNodePtr n)
{
    for (xmlAttrPtr a = n->properties; a; a = a->next) {
        char *v = (char *)xmlNodeGetContent((xmlNodePtr)a);
        char *key = strcmp((const char *)a->name, "Value") == 0
                        ? prof_strdup(name_of(n))
                        : prof_asprintf("%s.%s", name_of(n), (const char *)a->name);
        wprp_node_set_attr(node, key, v ? v : "", line_of(n));
        free(key);
        xmlFree(v);
    }
}

static void parse_attributes(wprp_node *node, xmlNodePtr n)
{
    for (xmlAttrPtr a = n->properties; a; a = a->next) {
        const char *k = (const char *)a->name;
        char *v = (char *)xmlNodeGetContent((xmlNodePtr)a);
        if (strcmp(k, "Id") == 0) {
            free(node->id);
            node->id = prof_strdup(v ? v : "");
        } else if (strcmp(k, "Base") == 0) {
            node->base = v && *v ? prof_strdup(v) : NULL;
        } else {
            wprp_node_set_attr(node, k, v ? v : "", line_of(n));
        }
        xmlFree(v);
    }
}

static void parse_child(walk *w, wprp_node *node, xmlNodePtr c)
{
    const char *cn = name_of(c);
    if (IN(list_names, cn) || has_element_children(c))
        parse_list(w, node, c, cn, false);
    else if (IN(value_names, cn) || node->kind == WPRP_HARDWARE_COUNTER)
        parse_value(node, c);
    else
        warn(w, c, node->id, "unknown element <%s> in %s is ignored", cn,
             wprp_kind_name(node->kind));
}

static void parse_element(walk *w, xmlNodePtr n, wprp_kind kind);

/* A provider defined where a profile uses it, as WPR's documentation shows
 * ("providers can be defined in, instead of before, the profile
 * definition": <EventProviders><EventProvider Id=... Name=...>): a catalog
 * element like one of <Profiles>, referred to by its Id. Was ignored, "has
 * no Value attribute", and the profile recorded none of them. */
static bool parse_inline_provider(walk *w, wprp_list *l, xmlNodePtr c)
{
    static const struct {
        const char *name, *ref;
        wprp_kind kind;
    } inline_kinds[] = {{"EventProvider", "EventProviderId", WPRP_EVENT_PROVIDER},
                        {"HeapEventProvider", "HeapEventProviderId", WPRP_HEAP_PROVIDER},
                        {"SystemProvider", "SystemProviderId", WPRP_SYSTEM_PROVIDER}};
    for (size_t i = 0; i < sizeof inline_kinds / sizeof inline_kinds[0]; i++) {
        if (strcmp(name_of(c), inline_kinds[i].name) != 0)
            continue;
        char *id = attr(c, "Id");
        if (id && *id)
            wprp_list_add(l, inline_kinds[i].ref, id, line_of(c));
        xmlFree(id);
        parse_element(w, c, inline_kinds[i].kind); /* one without an Id is its error */
        return true;
    }
    return false;
}

/* One <SystemCollectorId Value="..."> of a profile's <Collectors>. */
static void parse_ref(walk *w, wprp_node *prof, xmlNodePtr n, wprp_kind kind)
{
    wprp_node ref = {.kind = kind, .file = w->file, .line = line_of(n), .builtin = w->builtin};
    char *v = attr(n, "Value");
    ref.id = prof_strdup(v ? v : "");
    xmlFree(v);
    wprp_list *direct = NULL; /* SystemProviderId / EventProviderId written directly */
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *cn = name_of(c);
        if (strcmp(cn, "EventProviders") == 0 || strcmp(cn, "HeapEventProviders") == 0) {
            parse_list(w, &ref, c, "Providers", true);
        } else if (strcmp(cn, "SystemProvider") == 0) { /* defined in place of its SystemProviderId */
            if (!direct)
                direct = wprp_node_add_list(&ref, "Providers", WPRP_OP_ADD, line_of(c));
            parse_inline_provider(w, direct, c);
        } else if (strcmp(cn, "SystemProviderId") == 0 || strcmp(cn, "EventProviderId") == 0 ||
                   strcmp(cn, "HeapEventProviderId") == 0 || strcmp(cn, "HardwareCounterId") == 0) {
            if (!direct)
                direct = wprp_node_add_list(&ref, "Providers", WPRP_OP_ADD, line_of(c));
            char *pv = attr(c, "Value");
            wprp_list_add(direct, cn, pv ? pv : "", line_of(c));
            xmlFree(pv);
        } else if (IN(value_names, cn)) {
            parse_value(&ref, c);
        } else {
            warn(w, c, prof->id, "unknown element <%s> in <%s> is ignored", cn, name_of(n));
        }
    }
    size_t cap = prof->nrefs;
    prof->refs = prof_grow(prof->refs, &cap, prof->nrefs, sizeof *prof->refs);
    prof->refs[prof->nrefs++] = ref;
}

static void parse_collectors(walk *w, wprp_node *prof, xmlNodePtr n)
{
    if (parse_operation(w, n, prof->id, &prof->refs_op) != 0)
        prof->refs_op = WPRP_OP_ADD;
    prof->has_refs = true;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        const char *cn = name_of(c);
        if (strcmp(cn, "SystemCollectorId") == 0)
            parse_ref(w, prof, c, WPRP_SYSTEM_COLLECTOR);
        else if (strcmp(cn, "EventCollectorId") == 0)
            parse_ref(w, prof, c, WPRP_EVENT_COLLECTOR);
        else if (strcmp(cn, "HeapEventCollectorId") == 0)
            parse_ref(w, prof, c, WPRP_HEAP_COLLECTOR);
        else
            warn(w, c, prof->id, "unknown element <%s> in <%s> is ignored", cn, "Collectors");
    }
}

static void parse_element(walk *w, xmlNodePtr n, wprp_kind kind)
{
    wprp_node *node = calloc(1, sizeof *node);
    if (!node)
        abort();
    *node = (wprp_node){.kind = kind, .file = w->file, .line = line_of(n), .builtin = w->builtin};
    parse_attributes(node, n);
    if (!node->id || !*node->id) {
        ltr_diag_add(w->cat->diags, LTR_DIAG_ERROR, w->file, node->line, NULL,
                     "<%s> without an Id attribute", wprp_kind_name(kind));
        wprp_node_free(node);
        free(node);
        return;
    }
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (kind == WPRP_PROFILE && strcmp(name_of(c), "Collectors") == 0)
            parse_collectors(w, node, c);
        else
            parse_child(w, node, c);
    }
    wprp_catalog_add(w->cat, node);
}

static void parse_profiles(walk *w, xmlNodePtr profiles)
{
    int last_rank = 0;
    const char *last_name = NULL;
    for (xmlNodePtr c = profiles->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        size_t i = 0, n = sizeof top_elements / sizeof top_elements[0];
        while (i < n && strcmp(top_elements[i].name, name_of(c)) != 0)
            i++;
        if (i == n) {
            warn(w, c, NULL, "unknown element <%s> in <%s> is ignored", name_of(c), "Profiles");
            continue;
        }
        char *id = attr(c, "Id");
        int rank = top_elements[i].rank;
        if (rank >= 0 && rank < last_rank)
            ltr_diag_add(w->cat->diags, LTR_DIAG_WARNING, w->file, line_of(c), id,
                         "<%s> comes after <%s>: out of the schema's order (collectors, then "
                         "providers, then profiles); WPR refuses such a file",
                         name_of(c), last_name);
        xmlFree(id);
        if (rank >= last_rank) {
            last_rank = rank;
            last_name = top_elements[i].name;
        }
        parse_element(w, c, top_elements[i].kind);
    }
}

static void parse_root(walk *w, xmlNodePtr root)
{
    int seen_profiles = 0;
    bool seen_merge = false;
    for (xmlNodePtr c = root->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE)
            continue;
        if (strcmp(name_of(c), "Profiles") == 0) {
            if (seen_merge)
                warn(w, c, NULL, "<%s> comes after <%s>: out of the schema's order", "Profiles",
                     "TraceMergeProperties");
            if (seen_profiles++)
                warn(w, c, NULL, "a second <%s> in <%s>: the schema allows one", "Profiles",
                     "WindowsPerformanceRecorder");
            parse_profiles(w, c);
        } else if (strcmp(name_of(c), "TraceMergeProperties") == 0) {
            seen_merge = true; /* how WPR merges .etl files: nothing to do on Linux */
        } else {
            warn(w, c, NULL, "unknown element <%s> in <%s> is ignored", name_of(c),
                 "WindowsPerformanceRecorder");
        }
    }
    if (!seen_profiles)
        ltr_diag_add(w->cat->diags, LTR_DIAG_ERROR, w->file, line_of(root), NULL,
                     "no <Profiles> element: the file defines nothing");
}

/* Returns the catalog's copy of the name if that real path is loaded already. */
static const char *already_loaded(const wprp_catalog *c, const char *path)
{
    char want[PATH_MAX], have[PATH_MAX];
    if (!realpath(path, want))
        return NULL;
    for (size_t i = 0; i < c->nfiles; i++)
        if (realpath(c->files[i], have) && strcmp(want, have) == 0)
            return c->files[i];
    return NULL;
}

int wprp_catalog_load(wprp_catalog *c, const char *path, bool builtin, const char **file_out)
{
    const char *known = already_loaded(c, path);
    if (known) {
        if (file_out)
            *file_out = known;
        return 0;
    }
    size_t before = c->diags->errors;
    xmlDocPtr doc = wprp_xml_read(path, c->diags);
    if (!doc)
        return -1;
    size_t cap = c->nfiles;
    c->files = prof_grow(c->files, &cap, c->nfiles, sizeof *c->files);
    c->files[c->nfiles] = prof_strdup(path);
    walk w = {c, c->files[c->nfiles++], builtin};
    parse_root(&w, xmlDocGetRootElement(doc));
    wprp_catalog_tell_shadowed(c, w.file);
    xmlFreeDoc(doc);
    if (file_out)
        *file_out = w.file;
    return c->diags->errors > before ? -1 : 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_wprp(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".wprp") == 0;
}

int wprp_catalog_load_dir(wprp_catalog *c, const char *dir)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, is_wprp, by_name);
    if (n < 0) {
        ltr_diag_add(c->diags, LTR_DIAG_ERROR, dir, 0, NULL,
                     "cannot read the built-in profile directory");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char *path = prof_asprintf("%s/%s", dir, ents[i]->d_name);
        if (wprp_catalog_load(c, path, true, NULL) != 0)
            rc = -1;
        free(path);
        free(ents[i]);
    }
    free(ents);
    return rc;
}
