/*
 * symbols/symtab.c — a module's function symbols sorted by address, for the
 * frames that DWARF does not name (stripped binaries, .symtab-only ones).
 *
 * Why not dwfl_module_addrinfo: libdwfl finds the symbol of an address by
 * walking the whole symbol table each time. On cc1plus (Debian's, no DWARF)
 * that walk was 15 % of `ltr analyze`'s time on bench/real's trace (perf,
 * session 6): one walk per distinct return address. Here the table is read
 * once (dwfl_module_getsym_info, so addresses are adjusted as libdwfl does)
 * and a lookup is a binary search. The choice follows libdwfl's: the symbol
 * whose [value, value + size) holds the address, else the nearest sizeless
 * one below it; a global symbol over a local or weak one at the same address.
 */
#include "symbols/symtab.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym_entry {
    GElf_Addr addr, end; /* end == addr: no size recorded */
    const char *name;    /* libdwfl's: lives as long as the module */
    int rank;            /* global 2, weak 1, local 0 */
} sym_entry;

struct sym_symtab {
    sym_entry *e;
    size_t n;
};

static int by_addr(const void *a, const void *b)
{
    const sym_entry *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank) /* the preferred one first at an address */
        return y->rank - x->rank;
    return (x->end < y->end) - (x->end > y->end); /* the one with a size first */
}

static int wanted(const GElf_Sym *s)
{
    int type = GELF_ST_TYPE(s->st_info);
    return (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE) && s->st_shndx != SHN_UNDEF &&
           s->st_value != 0;
}

sym_symtab *sym_symtab_new(Dwfl_Module *mod)
{
    int n = dwfl_module_getsymtab(mod);
    sym_symtab *t = calloc(1, sizeof *t);
    if (!t || n <= 0)
        return t;
    t->e = malloc((size_t)n * sizeof *t->e);
    if (!t->e)
        return t;
    for (int i = 1; i < n; i++) {
        GElf_Sym s;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, NULL, NULL, NULL);
        if (!name || !*name || !wanted(&s))
            continue;
        int bind = GELF_ST_BIND(s.st_info);
        t->e[t->n++] = (sym_entry){.addr = addr, .end = addr + s.st_size, .name = name,
                                   .rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0};
    }
    qsort(t->e, t->n, sizeof *t->e, by_addr);
    size_t k = 0; /* one entry per address: the preferred one */
    for (size_t i = 0; i < t->n; i++)
        if (k == 0 || t->e[k - 1].addr != t->e[i].addr)
            t->e[k++] = t->e[i];
    t->n = k;
    return t;
}

void sym_symtab_free(sym_symtab *t)
{
    if (t)
        free(t->e);
    free(t);
}

const char *sym_symtab_find(const sym_symtab *t, GElf_Addr addr)
{
    if (!t || t->n == 0 || addr < t->e[0].addr)
        return NULL;
    size_t lo = 0, hi = t->n; /* the last entry at or below addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    /* a sized symbol that holds addr, the nearest first (a few back: sized
     * symbols nest only in hand-written code) */
    for (size_t i = lo + 1, tries = 0; i-- > 0 && tries < 8; tries++)
        if (t->e[i].end > t->e[i].addr && addr < t->e[i].end)
            return t->e[i].name;
    return t->e[lo].end == t->e[lo].addr ? t->e[lo].name : NULL;
}
