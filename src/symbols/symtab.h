/*
 * symbols/symtab.h — a module's function symbols sorted by address, looked
 * up by binary search (symtab.c says why not libdwfl's own lookup).
 */
#ifndef LTR_SYMBOLS_SYMTAB_H
#define LTR_SYMBOLS_SYMTAB_H

#include <elfutils/libdwfl.h>

typedef struct sym_symtab sym_symtab;

/* Reads mod's symbol table (.symtab, else .dynsym); an empty table when it
 * has none, NULL only when out of memory. */
sym_symtab *sym_symtab_new(Dwfl_Module *mod);
void sym_symtab_free(sym_symtab *t);
/* The name of the function symbol at dwfl address addr, or NULL. */
const char *sym_symtab_find(const sym_symtab *t, GElf_Addr addr);

#endif
