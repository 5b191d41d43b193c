/*
 * profiles/inherit.c — Base= inheritance, the same rules for every element.
 *
 * A derived element starts as a copy of its (resolved) base and then applies
 * what it writes itself: an attribute or single value it sets replaces the
 * base's; a list applies its Operation to the base's list (Set replaces, Add
 * unions, Remove takes away; no Operation means Set); a profile's
 * <Collectors> does the same with collector references, merging a reference
 * to a collector the base already uses. Bases are found in the same kind
 * first, then in a related kind (a warning: WPR calls that ambiguous).
 */
#include "profiles/inherit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int wprp_parse_u64(const char *text, uint64_t *out)
{
    if (!text || !*text || *text == '-' || *text == '+' || *text == ' ')
        return -1;
    char *end;
    errno = 0;
    bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned long long v = strtoull(hex ? text + 2 : text, &end, hex ? 16 : 10);
    if (errno || end == (hex ? text + 2 : text) || *end)
        return -1;
    *out = v;
    return 0;
}

/* Event keyword lists are bit masks: removing 0x10 from 0xFF leaves 0xEF. */
static bool is_mask_list(wprp_kind kind, const char *key)
{
    return kind == WPRP_EVENT_PROVIDER &&
           (strcmp(key, "Keywords") == 0 || strncmp(key, "CaptureStateOn", 14) == 0);
}

static bool same_value(const char *a, const char *b)
{
    uint64_t x, y;
    if (wprp_parse_u64(a, &x) == 0 && wprp_parse_u64(b, &y) == 0)
        return x == y;
    return strcasecmp(a, b) == 0;
}

static long find_item(const wprp_list *l, const char *value)
{
    for (size_t i = 0; i < l->n; i++)
        if (same_value(l->items[i].value, value))
            return (long)i;
    return -1;
}

static void drop_item(wprp_list *l, size_t i)
{
    free(l->items[i].elem);
    free(l->items[i].value);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *l->items);
    l->n--;
}

static void remove_mask(wprp_list *t, const wprp_list *l)
{
    uint64_t clear = 0, v;
    for (size_t i = 0; i < l->n; i++)
        if (wprp_parse_u64(l->items[i].value, &v) == 0)
            clear |= v;
    for (size_t i = t->n; i-- > 0;) {
        if (wprp_parse_u64(t->items[i].value, &v) != 0)
            continue; /* a bad value is reported when the plan reads it */
        if ((v & ~clear) == 0) {
            drop_item(t, i);
        } else {
            free(t->items[i].value);
            t->items[i].value = prof_asprintf("0x%llx", (unsigned long long)(v & ~clear));
        }
    }
}

/* Applies list l (with its op) onto the node's list of the same key. */
static void apply_list(wprp_node *n, const wprp_list *l)
{
    wprp_list *t = (wprp_list *)wprp_node_list(n, l->key);
    if (!t)
        t = wprp_node_add_list(n, l->key, WPRP_OP_SET, l->line);
    if (l->op == WPRP_OP_SET)
        while (t->n)
            drop_item(t, t->n - 1);
    if (l->op == WPRP_OP_REMOVE && is_mask_list(n->kind, l->key)) {
        remove_mask(t, l);
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        long at = find_item(t, l->items[i].value);
        if (l->op == WPRP_OP_REMOVE && at >= 0)
            drop_item(t, (size_t)at);
        else if (l->op != WPRP_OP_REMOVE && at < 0)
            wprp_list_add(t, l->items[i].elem, l->items[i].value, l->items[i].line);
    }
}

/* Applies what `own` writes onto `dst` (a copy of the base, or empty). */
static void apply_own(wprp_node *dst, const wprp_node *own);

static wprp_node *find_ref(wprp_node *n, const wprp_node *r)
{
    for (size_t i = 0; i < n->nrefs; i++)
        if (n->refs[i].kind == r->kind && strcmp(n->refs[i].id, r->id) == 0)
            return &n->refs[i];
    return NULL;
}

static void append_ref(wprp_node *n, const wprp_node *r)
{
    size_t cap = n->nrefs;
    n->refs = prof_grow(n->refs, &cap, n->nrefs, sizeof *n->refs);
    wprp_node *d = &n->refs[n->nrefs++];
    *d = (wprp_node){.kind = r->kind, .id = prof_strdup(r->id), .file = r->file, .line = r->line};
    apply_own(d, r);
}

static void remove_ref(wprp_node *n, wprp_node *have, const wprp_node *r)
{
    const wprp_list *p = wprp_node_list(r, "Providers");
    if (p && p->n) { /* Remove with providers listed: take those providers away */
        wprp_list l = *p;
        l.op = WPRP_OP_REMOVE;
        apply_list(have, &l);
        return;
    }
    size_t i = (size_t)(have - n->refs);
    wprp_node_free(have);
    memmove(&n->refs[i], &n->refs[i + 1], (n->nrefs - i - 1) * sizeof *n->refs);
    n->nrefs--;
}

static void apply_refs(wprp_node *dst, const wprp_node *own)
{
    if (own->refs_op == WPRP_OP_SET) {
        for (size_t i = 0; i < dst->nrefs; i++)
            wprp_node_free(&dst->refs[i]);
        dst->nrefs = 0;
    }
    for (size_t i = 0; i < own->nrefs; i++) {
        const wprp_node *r = &own->refs[i];
        wprp_node *have = find_ref(dst, r);
        if (own->refs_op == WPRP_OP_REMOVE) {
            if (have)
                remove_ref(dst, have, r);
        } else if (have) {
            apply_own(have, r);
        } else {
            append_ref(dst, r);
        }
    }
    dst->has_refs = true;
}

static void apply_own(wprp_node *dst, const wprp_node *own)
{
    for (size_t i = 0; i < own->nattrs; i++)
        wprp_node_set_attr(dst, own->attrs[i].key, own->attrs[i].value, own->attrs[i].line);
    for (size_t i = 0; i < own->nlists; i++)
        apply_list(dst, &own->lists[i]);
    if (own->has_refs)
        apply_refs(dst, own);
}

/* ---- finding the base ----------------------------------------------------- */

/* The elements being resolved, outermost first: a cycle is an element met
 * again while it is still on the chain (state 1); the chain only names it. */
typedef struct chain {
    const wprp_node **v;
    size_t n, cap;
} chain;

static void report_cycle(wprp_catalog *c, const chain *ch, const wprp_node *n)
{
    size_t from = 0;
    while (from < ch->n && ch->v[from] != n)
        from++; /* what leads into the cycle is not part of it */
    char path[1024] = "";
    size_t used = 0;
    for (size_t i = from; i < ch->n && used < sizeof path; i++)
        used += (size_t)snprintf(path + used, sizeof path - used, "%s -> ", ch->v[i]->id);
    if (used < sizeof path)
        snprintf(path + used, sizeof path - used, "%s", n->id);
    ltr_diag_add(c->diags, LTR_DIAG_ERROR, n->file, n->line, n->id,
                 "Base= inheritance forms a cycle: %s", path);
}

/* Resolving recurses once per Base=, so a chain's length is bounded to keep
 * the stack bounded; real chains are a few elements long. Reported on the
 * element whose resolution was asked for: the whole chain is the fault. */
static void report_too_deep(wprp_catalog *c, const chain *ch, const wprp_node *n)
{
    const wprp_node *top = ch->v[0];
    ltr_diag_add(c->diags, LTR_DIAG_ERROR, top->file, top->line, top->id,
                 "Base= chain deeper than %d elements (it still goes on at '%s'); ltr follows "
                 "at most %d",
                 WPRP_MAX_BASE_DEPTH, n->id, WPRP_MAX_BASE_DEPTH);
}

/* The base of n, looked up in n's kind, then the related kinds. */
static wprp_node *find_base(wprp_catalog *c, const wprp_node *n)
{
    wprp_node *b = wprp_catalog_find(c, n->kind, n->base, n);
    for (int k = 0; !b && k < WPRP_KIND_COUNT; k++)
        if (k != (int)n->kind && wprp_kind_family(k) == wprp_kind_family(n->kind))
            b = wprp_catalog_find(c, (wprp_kind)k, n->base, n);
    if (b && b->kind != n->kind)
        ltr_diag_add(c->diags, LTR_DIAG_WARNING, n->file, n->line, n->id,
                     "%s '%s' derives from %s '%s' (%s:%d): derivation across object types is "
                     "ambiguous; only its attributes and single values are inherited, not its lists",
                     wprp_kind_name(n->kind), n->id, wprp_kind_name(b->kind), b->id, b->file,
                     b->line);
    if (b)
        return b;
    for (int k = 0; k < WPRP_KIND_COUNT; k++) {
        wprp_node *other = wprp_catalog_find(c, (wprp_kind)k, n->base, n);
        if (other) {
            ltr_diag_add(c->diags, LTR_DIAG_ERROR, n->file, n->line, n->id,
                         "Base '%s' is a %s (%s:%d), which a %s cannot derive from", n->base,
                         wprp_kind_name(other->kind), other->file, other->line,
                         wprp_kind_name(n->kind));
            return NULL;
        }
    }
    ltr_diag_add(c->diags, LTR_DIAG_ERROR, n->file, n->line, n->id,
                 "Base '%s' not found: no %s of that id in this file, the files given with it, "
                 "or ltr's built-in profiles",
                 n->base, wprp_kind_name(n->kind));
    return NULL;
}

/* Lists mean different things in different kinds (system keyword names,
 * event keyword masks, heap process ids), so across kinds only attributes and
 * single values (Level, Stack, BufferSize, Buffers) are inherited. */
static void keep_shared(wprp_node *r, wprp_kind from)
{
    if (from == r->kind)
        return;
    for (size_t i = 0; i < r->nlists; i++) {
        wprp_list *l = &r->lists[i];
        for (size_t j = 0; j < l->n; j++) {
            free(l->items[j].elem);
            free(l->items[j].value);
        }
        free(l->items);
        free(l->key);
    }
    free(r->lists);
    r->lists = NULL;
    r->nlists = 0;
}

static void check_profile_id(wprp_catalog *c, const wprp_node *r)
{
    const char *name = wprp_node_value(r, "Name"), *level = wprp_node_value(r, "DetailLevel"),
               *mode = wprp_node_value(r, "LoggingMode");
    if (!name || !level || !mode)
        return; /* the plan reports what is missing when the profile is used */
    char *want = prof_asprintf("%s.%s.%s", name, level, mode);
    if (strcasecmp(want, r->id) != 0)
        ltr_diag_add(c->diags, LTR_DIAG_WARNING, r->file, r->line, r->id,
                     "profile id does not follow Name.DetailLevel.LoggingMode: expected '%s'",
                     want);
    free(want);
}

static const wprp_node *resolve(wprp_catalog *c, wprp_node *n, chain *ch)
{
    if (n->state == 2)
        return n->resolved;
    if (n->state == 3)
        return NULL;
    if (n->state == 1) {
        report_cycle(c, ch, n);
        return NULL;
    }
    if (ch->n == WPRP_MAX_BASE_DEPTH) {
        report_too_deep(c, ch, n);
        return NULL;
    }
    n->state = 1;
    ch->v = prof_grow(ch->v, &ch->cap, ch->n, sizeof *ch->v);
    ch->v[ch->n++] = n;
    wprp_node *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    const wprp_node *rb = NULL;
    wprp_node *b = n->base ? find_base(c, n) : NULL;
    if (b)
        rb = resolve(c, b, ch);
    ch->n--;
    if (n->base && !rb) {
        free(r);
        n->state = 3;
        return NULL;
    }
    if (rb) {
        wprp_node *copy = wprp_node_clone(rb);
        *r = *copy;
        free(copy);
        keep_shared(r, rb->kind);
        free(r->id);
        free(r->base);
    }
    r->kind = n->kind;
    r->id = prof_strdup(n->id);
    r->base = prof_strdup(n->base);
    r->file = n->file;
    r->line = n->line;
    r->builtin = n->builtin;
    apply_own(r, n);
    if (n->kind == WPRP_PROFILE)
        check_profile_id(c, r);
    n->resolved = r;
    n->state = 2;
    return r;
}

const wprp_node *wprp_resolve(wprp_catalog *c, wprp_node *n)
{
    chain ch = {.n = 0};
    const wprp_node *r = resolve(c, n, &ch);
    free(ch.v);
    return r;
}
