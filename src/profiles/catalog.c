/*
 * profiles/catalog.c — the generic element node and the catalog of every
 * element loaded: adding with duplicate-id checks, and lookup by kind and id.
 */
#include "profiles/catalog.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const kind_names[WPRP_KIND_COUNT] = {
    "SystemCollector", "EventCollector", "HeapEventCollector", "SystemProvider",
    "EventProvider",   "HeapEventProvider", "HardwareCounter",  "Profile",
};

const char *wprp_kind_name(wprp_kind k)
{
    return k < WPRP_KIND_COUNT ? kind_names[k] : "?";
}

wprp_family wprp_kind_family(wprp_kind k)
{
    if (k <= WPRP_HEAP_COLLECTOR)
        return WPRP_FAMILY_COLLECTOR;
    if (k == WPRP_PROFILE)
        return WPRP_FAMILY_PROFILE;
    return WPRP_FAMILY_PROVIDER;
}

int wprp_parse_op(const char *text, wprp_op *out)
{
    if (!text || strcasecmp(text, "Set") == 0)
        *out = WPRP_OP_SET;
    else if (strcasecmp(text, "Add") == 0)
        *out = WPRP_OP_ADD;
    else if (strcasecmp(text, "Remove") == 0)
        *out = WPRP_OP_REMOVE;
    else
        return -1;
    return 0;
}

/* ---- nodes ---------------------------------------------------------------- */

const wprp_attr *wprp_node_attr(const wprp_node *n, const char *key)
{
    for (size_t i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].key, key) == 0)
            return &n->attrs[i];
    return NULL;
}

const char *wprp_node_value(const wprp_node *n, const char *key)
{
    const wprp_attr *a = wprp_node_attr(n, key);
    return a ? a->value : NULL;
}

const wprp_list *wprp_node_list(const wprp_node *n, const char *key)
{
    for (size_t i = 0; i < n->nlists; i++)
        if (strcmp(n->lists[i].key, key) == 0)
            return &n->lists[i];
    return NULL;
}

void wprp_node_set_attr(wprp_node *n, const char *key, const char *value, int line)
{
    wprp_attr *a = (wprp_attr *)wprp_node_attr(n, key);
    if (a) {
        free(a->value);
        a->value = prof_strdup(value);
        a->line = line;
        return;
    }
    size_t cap = n->nattrs; /* arrays grow one at a time: nodes have few attributes */
    n->attrs = prof_grow(n->attrs, &cap, n->nattrs, sizeof *n->attrs);
    n->attrs[n->nattrs++] = (wprp_attr){prof_strdup(key), prof_strdup(value), line};
}

wprp_list *wprp_node_add_list(wprp_node *n, const char *key, wprp_op op, int line)
{
    size_t cap = n->nlists;
    n->lists = prof_grow(n->lists, &cap, n->nlists, sizeof *n->lists);
    n->lists[n->nlists] = (wprp_list){prof_strdup(key), op, NULL, 0, line};
    return &n->lists[n->nlists++];
}

void wprp_list_add(wprp_list *l, const char *elem, const char *value, int line)
{
    size_t cap = l->n;
    l->items = prof_grow(l->items, &cap, l->n, sizeof *l->items);
    l->items[l->n++] = (wprp_item){prof_strdup(elem), prof_strdup(value), line};
}

static void list_free(wprp_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].elem);
        free(l->items[i].value);
    }
    free(l->items);
    free(l->key);
}

void wprp_node_free(wprp_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nattrs; i++) {
        free(n->attrs[i].key);
        free(n->attrs[i].value);
    }
    free(n->attrs);
    for (size_t i = 0; i < n->nlists; i++)
        list_free(&n->lists[i]);
    free(n->lists);
    for (size_t i = 0; i < n->nrefs; i++)
        wprp_node_free(&n->refs[i]);
    free(n->refs);
    free(n->id);
    free(n->base);
    if (n->resolved) {
        wprp_node_free(n->resolved);
        free(n->resolved);
    }
    memset(n, 0, sizeof *n);
}

static void clone_into(wprp_node *d, const wprp_node *s)
{
    *d = (wprp_node){.kind = s->kind, .id = prof_strdup(s->id), .base = prof_strdup(s->base),
                     .file = s->file, .line = s->line, .builtin = s->builtin,
                     .has_refs = s->has_refs, .refs_op = s->refs_op};
    for (size_t i = 0; i < s->nattrs; i++)
        wprp_node_set_attr(d, s->attrs[i].key, s->attrs[i].value, s->attrs[i].line);
    for (size_t i = 0; i < s->nlists; i++) {
        const wprp_list *sl = &s->lists[i];
        wprp_list *dl = wprp_node_add_list(d, sl->key, sl->op, sl->line);
        for (size_t j = 0; j < sl->n; j++)
            wprp_list_add(dl, sl->items[j].elem, sl->items[j].value, sl->items[j].line);
    }
    if (s->nrefs) {
        d->refs = calloc(s->nrefs, sizeof *d->refs);
        if (!d->refs)
            abort();
        for (size_t i = 0; i < s->nrefs; i++)
            clone_into(&d->refs[i], &s->refs[i]);
        d->nrefs = s->nrefs;
    }
}

wprp_node *wprp_node_clone(const wprp_node *n)
{
    wprp_node *d = calloc(1, sizeof *d);
    if (!d)
        abort();
    clone_into(d, n);
    return d;
}

/* ---- catalog -------------------------------------------------------------- */

void wprp_catalog_init(wprp_catalog *c, ltr_diag_list *diags)
{
    memset(c, 0, sizeof *c);
    c->diags = diags;
}

void wprp_catalog_free(wprp_catalog *c)
{
    for (size_t i = 0; i < c->n; i++) {
        wprp_node_free(c->nodes[i]);
        free(c->nodes[i]);
    }
    free(c->nodes);
    for (size_t i = 0; i < c->nfiles; i++)
        free(c->files[i]);
    free(c->files);
    memset(c, 0, sizeof *c);
}

static wprp_node *find_in(const wprp_catalog *c, size_t end, wprp_kind kind, const char *id,
                          const wprp_node *skip, const char *file,
                          int (*cmp)(const char *, const char *))
{
    for (size_t i = end; i-- > 0;) {
        wprp_node *n = c->nodes[i];
        if (n != skip && n->kind == kind && (!file || n->file == file) && cmp(n->id, id) == 0)
            return n;
    }
    return NULL;
}

wprp_node *wprp_catalog_find(const wprp_catalog *c, wprp_kind kind, const char *id,
                             const wprp_node *from)
{
    size_t end = c->n;
    if (from && from->kind == kind && strcmp(from->id, id) == 0) {
        /* Base names the element's own id: it extends the definition it shadows. */
        for (end = 0; end < c->n && c->nodes[end] != from; end++)
            ;
    }
    /* The file the reference is written in first, then every file, exact
     * case before any case. */
    const char *files[2] = {from ? from->file : NULL, NULL};
    for (int f = from ? 0 : 1; f < 2; f++) {
        wprp_node *n = find_in(c, end, kind, id, from, files[f], strcmp);
        if (!n)
            n = find_in(c, end, kind, id, from, files[f], strcasecmp);
        if (n)
            return n;
    }
    return NULL;
}

/* A user file's element whose id a built-in profile defines too. */
static void shadowed(wprp_catalog *c, const wprp_node *n)
{
    size_t len = strlen(c->shadowed_ids);
    if (!c->nshadowed++)
        c->shadowed_line = n->line;
    if (len + strlen(n->id) + 8 < sizeof c->shadowed_ids)
        snprintf(c->shadowed_ids + len, sizeof c->shadowed_ids - len, "%s%s", len ? ", " : "", n->id);
    else if (!strstr(c->shadowed_ids, ", ..."))
        snprintf(c->shadowed_ids + len, sizeof c->shadowed_ids - len, ", ...");
}

void wprp_catalog_tell_shadowed(wprp_catalog *c, const char *file)
{
    if (c->nshadowed)
        ltr_diag_add(c->diags, LTR_DIAG_WARNING, file, c->shadowed_line, NULL,
                     "%zu id(s) also defined by the built-in profiles (%s): this file's definitions are used "
                     "by its own references",
                     c->nshadowed, c->shadowed_ids);
    c->nshadowed = 0;
    c->shadowed_ids[0] = 0;
}

/* Takes ownership of n. A second element of the same kind and id in the same
 * file is an error (which one was meant?); in a later file it is a warning,
 * and the later one is used, the way a user's file overrides a built-in. */
void wprp_catalog_add(wprp_catalog *c, wprp_node *n)
{
    for (size_t i = 0; i < c->n; i++) {
        const wprp_node *o = c->nodes[i];
        if (o->kind != n->kind || strcmp(o->id, n->id) != 0)
            continue;
        if (o->file == n->file) {
            ltr_diag_add(c->diags, LTR_DIAG_ERROR, n->file, n->line, n->id,
                         "duplicate %s id: already defined at line %d", wprp_kind_name(n->kind),
                         o->line);
            wprp_node_free(n);
            free(n);
            return;
        }
        if (o->builtin && !n->builtin) {
            shadowed(c, n);
            break;
        }
        ltr_diag_add(c->diags, LTR_DIAG_WARNING, n->file, n->line, n->id,
                     "%s id also defined in %s:%d; this definition is used",
                     wprp_kind_name(n->kind), o->file, o->line);
        break;
    }
    c->nodes = prof_grow(c->nodes, &c->cap, c->n, sizeof *c->nodes);
    c->nodes[c->n++] = n;
}
