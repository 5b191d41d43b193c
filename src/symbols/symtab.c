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

#include <assert.h>
#include <gelf.h>
#include <stdint.h>
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

/* The entries in address order, stably (equal addresses keep the symbol
 * table's order): a radix sort by the address's bytes, those that differ
 * among the entries only. glibc's qsort (a merge sort copying 32-byte
 * entries through a comparison call) took 28.6 M instructions for
 * cc1plus's 31 116 symbols, 73 % of opening the file, on the prewarm
 * thread while the report's lookups wait for it (callgrind, session 35). */
static int sort_by_addr(sym_entry *e, size_t n)
{
    sym_entry *tmp = n > 1 ? malloc(n * sizeof *tmp) : NULL;
    if (n > 1 && !tmp)
        return -1;
    static_assert(sizeof(GElf_Addr) == 8, "8 bytes of address");
    uint32_t count[8][256] = {{0}};
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            count[d][(e[i].addr >> (8 * d)) & 0xff]++;
    sym_entry *from = e, *to = tmp;
    for (int d = 0; d < 8 && n > 1; d++) {
        if (count[d][(e[0].addr >> (8 * d)) & 0xff] == n)
            continue; /* every entry has this byte: the order stays */
        uint32_t at = 0;
        for (int b = 0; b < 256; b++) {
            uint32_t c = count[d][b];
            count[d][b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[d][(from[i].addr >> (8 * d)) & 0xff]++] = from[i];
        sym_entry *x = from;
        from = to;
        to = x;
    }
    if (from != e)
        memcpy(e, from, n * sizeof *e);
    free(tmp);
    return 0;
}

/* Whether x is preferred to y at one address: a global symbol over a weak
 * or local one, then the one with a size (the larger); on a tie neither
 * (the caller keeps the earlier in the symbol table). */
static int preferred(const sym_entry *x, const sym_entry *y)
{
    return x->rank != y->rank ? x->rank > y->rank : x->end > y->end;
}

/* The same order by a comparison, where sort_by_addr had no memory for its
 * copy: the preferred entry first at an address, the earlier on a tie
 * (glibc's qsort is a stable merge sort while it has memory for one). */
static int by_addr(const void *a, const void *b)
{
    const sym_entry *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return preferred(y, x) - preferred(x, y);
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
    if (sort_by_addr(t->e, t->n) != 0)
        qsort(t->e, t->n, sizeof *t->e, by_addr);
    size_t k = 0; /* one entry per address: the preferred one, the first of those on a tie */
    for (size_t i = 0; i < t->n; i++)
        if (k == 0 || t->e[k - 1].addr != t->e[i].addr)
            t->e[k++] = t->e[i];
        else if (preferred(&t->e[i], &t->e[k - 1]))
            t->e[k - 1] = t->e[i];
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
