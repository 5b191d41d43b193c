/*
 * symbols/funcs.c — the function DIE and the inlined calls at an address,
 * and DIE names (see funcs.h for why not dwarf_getscopes).
 *
 * A compile unit is walked once, at its first lookup: every DW_TAG_subprogram
 * with code, wherever it sits (at the top level as C and C++ compilers put
 * them, inside namespaces and types as rustc does, inside units imported by
 * dwz), gives its address ranges to a table sorted by start. A lookup is a
 * binary search there, then a descent through the function's children that
 * hold the address (inlined calls, lexical blocks), which is short.
 */
#include "symbols/funcs.h"
#include "symbols/symbols.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 64 /* DIE nesting followed (namespaces, types, imported units) */

typedef struct fn_range {
    Dwarf_Addr low, high;
    Dwarf_Addr reach; /* the highest high of this range and all before it */
    Dwarf_Die die;
} fn_range;

typedef struct cu_funcs {
    Dwarf_Off cu;
    fn_range *r;
    size_t n, cap;
} cu_funcs;

struct sym_funcs {
    cu_funcs *cus; /* sorted by cu */
    size_t n, cap;
};

sym_funcs *sym_funcs_new(void) { return calloc(1, sizeof(sym_funcs)); }

void sym_funcs_free(sym_funcs *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        free(f->cus[i].r);
    free(f->cus);
    free(f);
}

/* DIEs without code of their own that may hold functions. */
static int holds_functions(int tag)
{
    switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_structure_type:
    case DW_TAG_class_type:
    case DW_TAG_union_type:
    case DW_TAG_enumeration_type:
    case DW_TAG_interface_type:
        return 1;
    default:
        return 0;
    }
}

static int add_range(cu_funcs *c, Dwarf_Die *die, Dwarf_Addr low, Dwarf_Addr high)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        fn_range *v = realloc(c->r, cap * sizeof *v);
        if (!v)
            return -1;
        c->r = v;
        c->cap = cap;
    }
    c->r[c->n++] = (fn_range){low, high, 0, *die};
    return 0;
}

static int add_function(cu_funcs *c, Dwarf_Die *die)
{
    Dwarf_Addr base, low, high;
    ptrdiff_t at = 0;
    while ((at = dwarf_ranges(die, at, &base, &low, &high)) > 0)
        if (low != 0 && low < high && add_range(c, die, low, high)) /* 0: dropped by the linker */
            return -1;
    return 0;
}

static int collect(cu_funcs *c, Dwarf_Die *parent, int depth)
{
    Dwarf_Die child, unit;
    Dwarf_Attribute attr;
    if (depth > MAX_NEST || dwarf_child(parent, &child) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&child), rc = 0;
        if (tag == DW_TAG_subprogram)
            rc = add_function(c, &child);
        else if (holds_functions(tag))
            rc = collect(c, &child, depth + 1);
        else if (tag == DW_TAG_imported_unit &&
                 dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit))
            rc = collect(c, &unit, depth + 1);
        if (rc)
            return rc;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static int by_low(const void *a, const void *b)
{
    const fn_range *x = a, *y = b;
    return x->low < y->low ? -1 : x->low > y->low;
}

/* Out of memory, the ranges found so far are kept: lookups in them still work. */
static void index_unit(cu_funcs *c, Dwarf_Die *cu)
{
    collect(c, cu, 0);
    if (c->n)
        qsort(c->r, c->n, sizeof *c->r, by_low);
    Dwarf_Addr reach = 0;
    for (size_t i = 0; i < c->n; i++)
        c->r[i].reach = reach = c->r[i].high > reach ? c->r[i].high : reach;
}

/* The index of compile unit cu, built at its first use; NULL without memory. */
static cu_funcs *unit_of(sym_funcs *f, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->cus[mid].cu == off)
            return &f->cus[mid];
        if (f->cus[mid].cu < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        cu_funcs *v = realloc(f->cus, cap * sizeof *v);
        if (!v)
            return NULL;
        f->cus = v;
        f->cap = cap;
    }
    cu_funcs *c = &f->cus[lo];
    memmove(c + 1, c, (f->n - lo) * sizeof *c);
    f->n++;
    *c = (cu_funcs){.cu = off};
    index_unit(c, cu);
    return c;
}

/* The function whose range holding pc starts last (the innermost, should
 * ranges nest); NULL when none holds it. */
static const Dwarf_Die *function_at(const cu_funcs *c, Dwarf_Addr pc)
{
    size_t lo = 0, hi = c->n; /* to the first range starting after pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->r[mid].low <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && c->r[i].reach > pc;)
        if (pc < c->r[i].high)
            return &c->r[i].die;
    return NULL;
}

/* The child of parent that holds pc among the scopes a function has. */
static int scope_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out)
{
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&child);
        if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
             tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
            dwarf_haspc(&child, pc) == 1) {
            *out = child;
            return 1;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

size_t sym_funcs_chain(sym_funcs *f, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain, size_t cap)
{
    cu_funcs *c = cap ? unit_of(f, cu) : NULL;
    const Dwarf_Die *fn = c ? function_at(c, pc) : NULL;
    if (!fn)
        return 0;
    Dwarf_Die scope = *fn, inner;
    size_t n = 0;
    chain[n++] = scope;
    while (n < cap && scope_at(&scope, pc, &inner)) {
        if (dwarf_tag(&inner) == DW_TAG_inlined_subroutine)
            chain[n++] = inner;
        scope = inner;
    }
    return n;
}

/* The DIE that carries die's DW_AT_name: die itself or the one its abstract
 * origin or specification leads to (maybe in another compile unit). */
static int named_die(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Die cur = *die;
    for (int i = 0; i < 8; i++) {
        Dwarf_Attribute attr;
        if (dwarf_hasattr(&cur, DW_AT_name)) {
            *out = cur;
            return 1;
        }
        if (!dwarf_attr(&cur, DW_AT_abstract_origin, &attr) &&
            !dwarf_attr(&cur, DW_AT_specification, &attr))
            return 0;
        if (!dwarf_formref_die(&attr, &cur))
            return 0;
    }
    return 0;
}

/* The names of the DIEs that hold target in its unit, outermost first: DIEs
 * are stored in preorder, so at each level the holder is the last child that
 * starts before target. Returns how many (at most cap). */
static size_t holders(Dwarf_Die *target, const char **names, size_t cap)
{
    Dwarf_Die scope, child, holder;
    size_t n = 0;
    Dwarf_Off want = dwarf_dieoffset(target);
    if (!dwarf_diecu(target, &scope, NULL, NULL))
        return 0;
    for (int depth = 0; depth < MAX_NEST && dwarf_child(&scope, &child) == 0; depth++) {
        int found = 0;
        do {
            Dwarf_Off off = dwarf_dieoffset(&child);
            if (off == want)
                return n;
            if (off > want)
                break;
            holder = child;
            found = 1;
        } while (dwarf_siblingof(&child, &child) == 0);
        if (!found)
            return n;
        int tag = dwarf_tag(&holder);
        const char *name = dwarf_diename(&holder);
        if (name && n < cap && (holds_functions(tag) || tag == DW_TAG_subprogram))
            names[n++] = name;
        scope = holder;
    }
    return n;
}

/* DW_AT_name of die behind the names of what holds it: "a::B::f". */
static char *qualified_name(Dwarf_Die *die)
{
    const char *names[MAX_NEST + 1];
    size_t n = holders(die, names, MAX_NEST), len = 1;
    names[n++] = dwarf_diename(die);
    if (!names[n - 1])
        return NULL;
    for (size_t i = 0; i < n; i++)
        len += strlen(names[i]) + 2;
    char *s = malloc(len), *p = s;
    for (size_t i = 0; s && i < n; i++)
        p = stpcpy(stpcpy(p, i ? "::" : ""), names[i]);
    return s;
}

char *sym_die_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    Dwarf_Die named;
    const char *link = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        link = dwarf_formstring(&attr);
    if (link) {
        char *d = ltr_demangle(link);
        return d ? d : strdup(link);
    }
    return named_die(die, &named) ? qualified_name(&named) : NULL;
}
