/*
 * symbols/funcs.h — the DWARF side of a lookup, for dwarf.c: which function
 * DIE holds an address and which inlined calls inside it do, and the names
 * of those DIEs. libdw's dwarf_getscopes is not used: it only looks for
 * functions among a compile unit's top-level DIEs and, past the innermost
 * inlined call, lists the scopes of its abstract definition, not the calls
 * around it. Rust (LLVM) puts function definitions inside namespace DIEs and
 * impl blocks inside structure DIEs, so with it Rust frames had no DWARF
 * function at all.
 */
#ifndef LTR_SYMBOLS_FUNCS_H
#define LTR_SYMBOLS_FUNCS_H

#include <elfutils/libdw.h>
#include <stddef.h>

/* The function address ranges of every compile unit looked at so far, each
 * unit walked once, at its first lookup. Not thread-safe. */
typedef struct sym_funcs sym_funcs;

sym_funcs *sym_funcs_new(void);
void sym_funcs_free(sym_funcs *f);

/* The DIEs holding pc (a DWARF address of compile unit cu): chain[0] the
 * function (DW_TAG_subprogram), then the inlined calls inside it, outermost
 * first. Returns how many (0 when no function DIE holds pc; at most cap,
 * deeper inlined calls are left out). */
size_t sym_funcs_chain(sym_funcs *f, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain, size_t cap);

/* The name of a function or inlined-call DIE, malloc'd: its linkage name
 * (through abstract origins and specifications, also into other compile
 * units) demangled; else that name as it is; else DW_AT_name behind the
 * names of the namespaces and types that hold it ("a::B::f"); NULL if none. */
char *sym_die_name(Dwarf_Die *die);

#endif
